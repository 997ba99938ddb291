// Package demo runs `bazinga demo`: a scripted session on a copy of the demo
// repository, with real edits, merges, a real conflict and real tests.
package demo

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/bazinga-bot/bazinga"
	"github.com/bazinga-bot/bazinga/internal/scripted"
	"github.com/bazinga-bot/bazinga/local"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Options configure a demo run.
type Options struct {
	// Agent is the program that plays the scripted agent when run as
	// `<Agent> scripted-agent …` (the bazinga binary itself).
	Agent string
	// Dir is where the demo is set up (default: a new temporary directory).
	Dir      string
	Out      io.Writer
	JSON     bool
	Terminal bool
}

// Setup copies the demo repository into dir/repo, commits it on main, and
// writes the scenario to dir/scenario.json. It returns both paths.
func Setup(dir string) (repoDir, scenario string, err error) {
	repoDir = filepath.Join(dir, "repo")
	scenario = filepath.Join(dir, "scenario.json")
	err = fs.WalkDir(bazinga.DemoFS, "testdata/demo", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "testdata/demo"), "/")
		if rel == "go.mod.txt" {
			rel = "go.mod"
		}
		target := filepath.Join(repoDir, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := bazinga.DemoFS.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		return "", "", fmt.Errorf("copying the demo repository: %w", err)
	}
	b, err := bazinga.DemoFS.ReadFile(path.Join("testdata", "demo-scenario.json"))
	if err != nil {
		return "", "", fmt.Errorf("reading the demo scenario: %w", err)
	}
	if err := os.WriteFile(scenario, b, 0o644); err != nil {
		return "", "", err
	}
	repo, err := git.PlainInitWithOptions(repoDir, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		return "", "", fmt.Errorf("creating the demo repository: %w", err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", "", err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return "", "", fmt.Errorf("adding the demo files: %w", err)
	}
	sig := &object.Signature{Name: "bazinga demo", Email: "demo@bazinga.invalid", When: time.Now()}
	if _, err := wt.Commit("The demo calculator", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
		return "", "", fmt.Errorf("committing the demo files: %w", err)
	}
	return repoDir, scenario, nil
}

// Run sets the demo up and plays the session.
func Run(ctx context.Context, opts Options) (local.Outcome, string, error) {
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "bazinga-demo-")
		if err != nil {
			return local.Outcome{}, "", err
		}
		dir = d
	}
	repoDir, scenario, err := Setup(dir)
	if err != nil {
		return local.Outcome{}, dir, err
	}
	sc, err := scripted.Load(scenario)
	if err != nil {
		return local.Outcome{}, dir, err
	}
	cmd := fmt.Sprintf("%s scripted-agent --scenario %s --state %s", quote(opts.Agent), quote(scenario), quote(filepath.Join(dir, "agent-state")))
	out, err := local.Run(ctx, local.Options{Repo: repoDir, Base: "main", Requirements: sc.Requirements,
		AgentCommand: cmd, Out: opts.Out, JSON: opts.JSON, Terminal: opts.Terminal,
		Reviewer: scriptedHuman(opts.Out, opts.JSON)})
	return out, dir, err
}

// --- the plan checkpoint (issue 13) ------------------------------------------

// scriptedHuman plays the person who approves the plan at the demo's plan
// checkpoint (testdata/demo/.github/bazinga.yml has checkpoints: [plan]):
// it reads the plan the run just printed and approves that plan, by its id.
func scriptedHuman(out io.Writer, asJSON bool) func(pipeline.Session) pipeline.Command {
	return func(s pipeline.Session) pipeline.Command {
		cp := s.Checkpoint
		if out != nil && !asJSON {
			fmt.Fprintf(out, "🧑 (scripted human) reads %s: %d groups, %d success criteria; approves it.\n", cp.ID, len(s.Groups), len(s.SuccessCriteria))
		}
		return pipeline.Command{Kind: pipeline.CommandApprove, Checkpoint: cp.ID}
	}
}

// quote makes a path one word for the agent command's shell-like splitting.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
