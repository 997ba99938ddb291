package gitops

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// The privileged job's own work on a hand-over: rebuild a 100-file change
// (the `ours` branch of the 10,000-file bench repository) on its parent as
// a commit. The go-git path (CommitFiles) against the git CLI doing the
// same (hash-object, read-tree into a private index, update-index,
// write-tree, commit-tree); both must give ours' tree.
func benchChange(b *testing.B) (benchRepo, *git.Repository, plumbing.Hash, []NewFile, string) {
	r := setupBenchRepo(b)
	repo, err := git.PlainOpen(r.dir)
	if err != nil {
		b.Fatal(err)
	}
	c, err := repo.CommitObject(r.ours)
	if err != nil {
		b.Fatal(err)
	}
	parent := c.ParentHashes[0]
	changes, err := TreeChanges(repo, parent, r.ours)
	if err != nil || len(changes) != 100 {
		b.Fatalf("changes: %v (%d)", err, len(changes))
	}
	var files []NewFile
	for _, ch := range changes {
		blob, err := repo.BlobObject(ch.Blob)
		if err != nil {
			b.Fatal(err)
		}
		rd, err := blob.Reader()
		if err != nil {
			b.Fatal(err)
		}
		data, err := io.ReadAll(rd)
		rd.Close()
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, NewFile{Path: ch.Path, Mode: ch.Mode, Data: data})
	}
	return r, repo, parent, files, c.TreeHash.String()
}

func BenchmarkHandOverCommit100GoGit(b *testing.B) {
	_, repo, parent, files, want := benchChange(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, tree, err := CommitFiles(repo, files, CommitSpec{Parents: []plumbing.Hash{parent}, Message: "m"})
		if err != nil || tree.String() != want {
			b.Fatalf("commit: %v %s", err, tree)
		}
	}
}

func BenchmarkHandOverCommit100GitCLI(b *testing.B) {
	r, _, parent, files, want := benchChange(b)
	scratch := b.TempDir()
	var paths []string
	for i, f := range files {
		p := filepath.Join(scratch, fmt.Sprint(i))
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	index := filepath.Join(scratch, "index")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		hashes := strings.Fields(runGitIn(b, r.dir, nil, strings.Join(paths, "\n")+"\n", "hash-object", "-w", "--stdin-paths"))
		var info strings.Builder
		for k, f := range files {
			fmt.Fprintf(&info, "100644 %s\t%s\n", hashes[k], f.Path)
		}
		env := []string{"GIT_INDEX_FILE=" + index}
		runGitIn(b, r.dir, env, "", "read-tree", parent.String())
		runGitIn(b, r.dir, env, info.String(), "update-index", "--index-info")
		tree := strings.TrimSpace(runGitIn(b, r.dir, env, "", "write-tree"))
		if tree != want {
			b.Fatalf("git tree %s, want %s", tree, want)
		}
		runGitIn(b, r.dir, env, "", "commit-tree", tree, "-p", parent.String(), "-m", "m")
	}
}

// runGitIn runs git in dir with extra environment and stdin.
func runGitIn(b *testing.B, dir string, env []string, stdin string, args ...string) string {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(dir), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}
