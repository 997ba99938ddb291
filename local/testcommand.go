package local

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/testcmd"
)

// The test command of a local session (issue 25): the flag, else the
// configuration file's tests.command, else the one detected from the base's
// files. Which one, and from where, is shown before anything is paid for; a
// command whose program is not installed stops the run there.

// TestsSource says where the test command came from.
type TestsSource struct {
	// Kind is "flag", "file", "detected" or "default".
	Kind string
	// Detail: the detection's reason, or the file's line.
	Detail string
}

func (s TestsSource) String() string {
	switch s.Kind {
	case "flag":
		return "--test-command"
	case "file":
		return ConfigPath + " " + s.Detail
	case "detected":
		return "detected: " + s.Detail
	}
	return "the default"
}

// treeFiles lists the files of a commit for detection.
func treeFiles(repo *git.Repository, head plumbing.Hash) (testcmd.Files, *object.Tree, error) {
	c, err := repo.CommitObject(head)
	if err != nil {
		return testcmd.Files{}, nil, fmt.Errorf("reading the base commit: %w", err)
	}
	tree, err := c.Tree()
	if err != nil {
		return testcmd.Files{}, nil, fmt.Errorf("reading the base tree: %w", err)
	}
	var paths []string
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return testcmd.Files{}, nil, fmt.Errorf("listing the base tree: %w", err)
		}
		if e.Mode.IsFile() || e.Mode == filemode.Symlink {
			paths = append(paths, name)
		}
	}
	read := func(p string) ([]byte, error) {
		f, err := tree.File(p)
		if err != nil {
			return nil, err
		}
		s, err := f.Contents()
		return []byte(s), err
	}
	return testcmd.Files{Paths: paths, Read: read}, tree, nil
}

// WorktreeFiles lists the files of a working tree for detection (`bazinga
// init`), leaving out .git, .bazinga and the directories dependency
// managers fill.
func WorktreeFiles(root string) (testcmd.Files, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", StoreDir, "node_modules", ".venv", "venv", "target", ".tox", ".nox", "__pycache__":
				if p != root {
					return filepath.SkipDir
				}
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return testcmd.Files{}, fmt.Errorf("listing %s: %w", root, err)
	}
	read := func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(root, filepath.FromSlash(p))) }
	return testcmd.Files{Paths: paths, Read: read}, nil
}

// chooseTests fills the test command (and the build command and JUnit glob
// that go with a detected one) where neither the flag nor the file sets it.
// noTests is the error to report when nothing says how the tests run.
func chooseTests(repo *git.Repository, head plumbing.Hash, fc fileConfig, flag *string) (cfg pipeline.Config, src TestsSource, noTests error, err error) {
	cfg = fc.cfg
	if flag != nil {
		return cfg, TestsSource{Kind: "flag"}, nil, nil
	}
	if line, set := fc.set["tests.command"]; set {
		return cfg, TestsSource{Kind: "file", Detail: fmt.Sprintf("line %d", line)}, nil, nil
	}
	files, _, err := treeFiles(repo, head)
	if err != nil {
		return cfg, src, nil, err
	}
	d := testcmd.Detect(files)
	if !d.Found() {
		return cfg, src, fmt.Errorf("no test command: %s does not set tests.command and nothing in the repository says how its tests run "+
			"(looked for %s). Write one with `bazinga init` or set tests.command in %s, or pass --test-command "+
			"(--test-command '' runs the session without a test gate)", ConfigPath, testcmd.Looked, ConfigPath), nil
	}
	cfg.Tests.Command = d.Command
	if _, set := fc.set["build.command"]; !set && d.Build != "" {
		cfg.Build.Command = d.Build
	}
	if _, set := fc.set["tests.junit"]; !set && d.JUnit != "" {
		cfg.Tests.JUnit = d.JUnit
	}
	return cfg, TestsSource{Kind: "detected", Detail: d.Reason}, nil, nil
}

// checkCommandsRun refuses, before anything is paid for, a build or test
// command whose program is not installed or not in the repository.
func checkCommandsRun(repo *git.Repository, head plumbing.Hash, cfg pipeline.Config) error {
	_, tree, err := treeFiles(repo, head)
	if err != nil {
		return err
	}
	has := func(p string) bool {
		_, err := tree.File(path.Clean(p))
		return err == nil
	}
	for _, c := range []struct{ what, cmd string }{{"build command", cfg.Build.Command}, {"test command", cfg.Tests.Command}} {
		if strings.TrimSpace(c.cmd) == "" {
			continue
		}
		if err := testcmd.CanRun(c.what, c.cmd, exec.LookPath, has); err != nil {
			key := "tests.command"
			if c.what == "build command" {
				key = "build.command"
			}
			return fmt.Errorf("%w; install it, or set %s in %s (or pass --test-command)", err, key, ConfigPath)
		}
	}
	return nil
}
