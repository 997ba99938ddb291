package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Effective is the configuration a local run would use, key by key, with
// where each value comes from (`bazinga config`, issue 25).
type Effective struct {
	Root, Base, Commit string
	Config             pipeline.Config
	// Sources names, by dotted key, where the value came from: "default",
	// "file line N", "flag --agent", "detected: …", "local mode: …".
	Sources map[string]string
	// Notes are things worth saying about the result (an uncommitted file, no test command).
	Notes []string
}

// EffectiveConfig works out what a run with opts would use, without
// starting anything: the base's committed .github/bazinga.yml, the test
// command detected when the file sets none, the flags, and what local mode
// fixes. No environment variable changes a local run's configuration.
func EffectiveConfig(opts Options) (Effective, error) {
	root, err := RepoRoot(opts.Repo)
	if err != nil {
		return Effective{}, err
	}
	repo, err := gitops.OpenWorktree(root)
	if err != nil {
		return Effective{}, err
	}
	base := opts.Base
	if base == "" {
		if base = currentBranch(repo); base == "" {
			return Effective{}, fmt.Errorf("HEAD is detached: say which branch a run works on with --base")
		}
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(base), true)
	if err != nil {
		return Effective{}, missingBranch(repo, root, base)
	}
	head := ref.Hash()
	fc, err := readConfigKeys(repo, head)
	if err != nil {
		return Effective{}, err
	}
	e := Effective{Root: root, Base: base, Commit: head.String(), Sources: map[string]string{}}
	for key, line := range fc.set {
		e.Sources[key] = fmt.Sprintf("file line %d", line)
	}
	cfg, src, noTests, err := chooseTests(repo, head, fc, opts.TestCommand)
	if err != nil {
		return Effective{}, err
	}
	if noTests != nil {
		e.Notes = append(e.Notes, noTests.Error())
	}
	if src.Kind == "detected" {
		e.Sources["tests.command"] = src.String()
		if _, set := fc.set["build.command"]; !set && cfg.Build.Command != "" {
			e.Sources["build.command"] = src.String()
		}
		if _, set := fc.set["tests.junit"]; !set && cfg.Tests.JUnit != "" {
			e.Sources["tests.junit"] = src.String()
		}
	}
	if opts.AgentCommand != "" {
		before := config.Entries(cfg)
		cfg = config.WithAgentCommand(cfg, opts.AgentCommand)
		e.Sources["agent.command"] = "flag --agent"
		// The models that followed the CLI the flag names.
		for i, en := range config.Entries(cfg) {
			if strings.HasPrefix(en.Key, "models.") && en.Value != before[i].Value {
				e.Sources[en.Key] = "default of " + string(config.AgentCLI(cfg)) + " (flag --agent)"
			}
		}
	}
	if opts.TestCommand != nil {
		cfg.Tests.Command = *opts.TestCommand
		e.Sources["tests.command"] = "flag --test-command"
	}
	if opts.MaxParallel != 0 {
		cfg.MaxParallel = opts.MaxParallel
		e.Sources["max_parallel"] = "flag --max-parallel"
	}
	if opts.Baseline != "" {
		cfg.Tests.Baseline = opts.Baseline
		e.Sources["tests.baseline"] = "flag --baseline"
	}
	if err := config.Validate(cfg); err != nil {
		return Effective{}, fmt.Errorf("configuration: %w", err)
	}
	// What local mode fixes whatever the file says (as Run does).
	cfg.Merge.Method = pipeline.MergePush
	e.Sources["merge.method"] = "local mode: merges land by push"
	cfg.ClarificationTimeout = pipeline.Duration(5 * time.Minute)
	e.Sources["clarification_timeout"] = "local mode: asked on the terminal for 5m (at once without one)"
	for _, en := range config.Entries(cfg) {
		if _, ok := e.Sources[en.Key]; !ok {
			e.Sources[en.Key] = "default"
		}
	}
	e.Config = cfg
	if uncommittedConfig(root, fc) {
		e.Notes = append(e.Notes, ConfigPath+" in the working tree differs from the one committed on "+base+
			": runs read the committed file, so commit it")
	}
	return e, nil
}

// uncommittedConfig reports whether the working tree's configuration file
// is not the one the base holds.
func uncommittedConfig(root string, fc fileConfig) bool {
	disk, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(ConfigPath)))
	if err != nil {
		return fc.found // committed, but deleted here
	}
	return !fc.found || string(disk) != fc.text
}
