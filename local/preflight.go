package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// ConfigPath is the configuration file inside a repository.
const ConfigPath = ".github/bazinga.yml"

// checkRepo verifies, before any session work, that dir is a git repository
// with the base branch and a clean working tree, and returns the repository
// and the base head.
func checkRepo(dir, base string) (*git.Repository, plumbing.Hash, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("repository %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, plumbing.ZeroHash, fmt.Errorf("repository %s is not a directory", dir)
	}
	repo, err := gitops.OpenWorktree(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, plumbing.ZeroHash, fmt.Errorf("%s is not a git repository (run `git init` and commit your code first)", dir)
	}
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("opening the repository %s: %w", dir, err)
	}
	head, err := repo.Reference(plumbing.NewBranchReferenceName(base), true)
	if err != nil {
		return nil, plumbing.ZeroHash, missingBranch(repo, dir, base)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("%s has no working tree: %w", dir, err)
	}
	if err := requireClean(wt); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	return repo, head.Hash(), nil
}

func requireClean(wt *git.Worktree) error {
	st, err := wt.Status()
	if err != nil {
		return fmt.Errorf("reading the working tree status: %w", err)
	}
	var dirty []string
	for path, s := range st {
		if s.Worktree == git.Unmodified && s.Staging == git.Unmodified {
			continue
		}
		if strings.HasPrefix(path, StoreDir+"/") {
			continue
		}
		dirty = append(dirty, path)
	}
	if len(dirty) == 0 {
		return nil
	}
	sort.Strings(dirty)
	more := ""
	if len(dirty) > 10 {
		more = fmt.Sprintf(" and %d more", len(dirty)-10)
		dirty = dirty[:10]
	}
	return fmt.Errorf("the working tree has uncommitted changes (%s%s); commit or stash them first", strings.Join(dirty, ", "), more)
}

// currentBranch returns the branch HEAD points at ("" when detached).
func currentBranch(repo *git.Repository) string {
	ref, err := repo.Reference(plumbing.HEAD, false)
	if err != nil || ref.Type() != plumbing.SymbolicReference {
		return ""
	}
	return ref.Target().Short()
}

// missingBranch says why the base branch is not there: a repository with
// no commit yet has no branch at all, and bazinga works on a branch's head.
func missingBranch(repo *git.Repository, dir, base string) error {
	var branches []string
	if iter, err := repo.Branches(); err == nil {
		_ = iter.ForEach(func(r *plumbing.Reference) error {
			if name := r.Name().Short(); !strings.HasPrefix(name, "bazinga/") { // groups' branches are no base
				branches = append(branches, name)
			}
			return nil
		})
	}
	if len(branches) == 0 {
		return fmt.Errorf("%s has no commits yet: bazinga works on the head of a branch, so commit your code first "+
			"(git add -A && git commit -m \"initial commit\")", dir)
	}
	sort.Strings(branches)
	return fmt.Errorf("base branch %q not found in %s (its branches: %s; say which with --base)", base, dir, strings.Join(branches, ", "))
}

// RepoRoot returns the root of the git working tree that holds dir, looking
// upward from it as git does, so bazinga runs from any directory of a
// repository. A directory in no repository is an error saying so.
func RepoRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("repository path %q: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("repository %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("repository %s is not a directory", dir)
	}
	repo, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return "", fmt.Errorf("%s is not a git repository, nor inside one (run `git init` there and commit your code first)", abs)
	}
	if err != nil {
		return "", fmt.Errorf("opening the repository at %s: %w", abs, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("the repository at %s has no working tree (a bare repository): %w", abs, err)
	}
	return wt.Filesystem.Root(), nil
}

// fileConfig is the configuration file as a session reads it: the
// configuration and where each key it sets is (line by dotted path).
type fileConfig struct {
	cfg pipeline.Config
	set map[string]int
	// found: the base holds the file; text is what it holds.
	found bool
	text  string
}

// readConfig reads .github/bazinga.yml from the base branch's head, so the
// session runs with the configuration that is committed.
func readConfig(repo *git.Repository, head plumbing.Hash) (pipeline.Config, error) {
	fc, err := readConfigKeys(repo, head)
	return fc.cfg, err
}

// readConfigKeys is readConfig saying which keys the file sets.
func readConfigKeys(repo *git.Repository, head plumbing.Hash) (fileConfig, error) {
	commit, err := repo.CommitObject(head)
	if err != nil {
		return fileConfig{}, fmt.Errorf("reading the base commit: %w", err)
	}
	f, err := commit.File(ConfigPath)
	if errors.Is(err, object.ErrFileNotFound) {
		return fileConfig{cfg: pipeline.DefaultConfig(), set: map[string]int{}}, nil
	}
	if err != nil {
		return fileConfig{}, fmt.Errorf("reading %s: %w", ConfigPath, err)
	}
	text, err := f.Contents()
	if err != nil {
		return fileConfig{}, fmt.Errorf("reading %s: %w", ConfigPath, err)
	}
	cfg, set, err := config.ParseConfigFileKeys(ConfigPath, []byte(text))
	if err != nil {
		return fileConfig{}, err
	}
	return fileConfig{cfg: cfg, set: set, found: true, text: text}, nil
}

// refreshCostLimits takes limits.session_cost_usd and limits.step_cost_usd
// from the base's configuration file into a resumed session's configuration
// (nothing else: the session keeps the rest as it started).
func refreshCostLimits(repo *git.Repository, head plumbing.Hash, cfg pipeline.Config) (pipeline.Config, error) {
	fresh, err := readConfig(repo, head)
	if err != nil {
		return cfg, err
	}
	cfg.Limits.SessionCostUSD = fresh.Limits.SessionCostUSD
	cfg.Limits.StepCostUSD = fresh.Limits.StepCostUSD
	return cfg, nil
}

// syncWorktree brings the repository's working tree up to a base that moved
// under it (merges are pushed into the repository), but only when every
// difference is exactly the old checkout: a person's edits are never lost.
func syncWorktree(dir, base string, old plumbing.Hash) (plumbing.Hash, error) {
	// The reset below rewrites the base branch with the value read here:
	// hold off local pushes (a merge landing meanwhile) until it is done.
	unlock, err := gitops.LockRefs(context.Background(), dir)
	if err != nil {
		return old, fmt.Errorf("locking the refs of %s: %w", dir, err)
	}
	defer unlock()
	repo, err := gitops.OpenWorktree(dir)
	if err != nil {
		return old, err
	}
	if currentBranch(repo) != base {
		return old, nil
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(base), true)
	if err != nil {
		return old, fmt.Errorf("reading %s: %w", base, err)
	}
	if ref.Hash() == old {
		return old, nil
	}
	wt, err := repo.Worktree()
	if err != nil {
		return old, err
	}
	st, err := wt.Status()
	if err != nil {
		// An index an older tool left torn: rebuild it from the trees below.
		if rerr := os.Remove(filepath.Join(dir, ".git", "index")); rerr != nil {
			return old, fmt.Errorf("reading the working tree status: %w", err)
		}
		if st, err = wt.Status(); err != nil {
			return old, fmt.Errorf("reading the working tree status: %w", err)
		}
	}
	oldTree, err := treeOf(repo, old)
	if err != nil {
		return old, err
	}
	newTree, err := treeOf(repo, ref.Hash())
	if err != nil {
		return old, err
	}
	for path, s := range st {
		if s.Worktree == git.Unmodified && s.Staging == git.Unmodified || strings.HasPrefix(path, StoreDir+"/") {
			continue
		}
		// Each difference must be the old checkout, or already the new one
		// (a kill in the middle of an earlier update).
		disk, derr := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
		if !sameContent(oldTree, path, disk, derr) && !sameContent(newTree, path, disk, derr) {
			return old, fmt.Errorf("%s changed in the working tree during the session; not updating it to the new %s", path, base)
		}
	}
	// Write exactly the files the merges changed (a hard reset would also
	// sweep away untracked files such as the session directory), then move
	// the index.
	changes, err := object.DiffTree(oldTree, newTree)
	if err != nil {
		return old, fmt.Errorf("comparing %s with %s: %w", old, ref.Hash(), err)
	}
	for _, ch := range changes {
		if ch.From.Name != "" && ch.From.Name != ch.To.Name {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(ch.From.Name))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return old, fmt.Errorf("updating the working tree: %w", err)
			}
		}
		if ch.To.Name == "" {
			continue
		}
		f, err := newTree.File(ch.To.Name)
		if err != nil {
			return old, fmt.Errorf("reading %s: %w", ch.To.Name, err)
		}
		body, err := f.Contents()
		if err != nil {
			return old, fmt.Errorf("reading %s: %w", ch.To.Name, err)
		}
		mode, err := f.Mode.ToOSFileMode()
		if err != nil {
			mode = 0o644
		}
		path := filepath.Join(dir, filepath.FromSlash(ch.To.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return old, fmt.Errorf("updating the working tree: %w", err)
		}
		// Through the .git directory: a kill leaves the old content or the new.
		if err := gitops.WriteFileAtomic(filepath.Join(dir, ".git"), path, []byte(body), mode.Perm()); err != nil {
			return old, fmt.Errorf("updating the working tree: %w", err)
		}
	}
	if err := wt.Reset(&git.ResetOptions{Mode: git.MixedReset, Commit: ref.Hash()}); err != nil {
		return old, fmt.Errorf("updating the index to %s: %w", ref.Hash(), err)
	}
	return ref.Hash(), nil
}

func treeOf(repo *git.Repository, h plumbing.Hash) (*object.Tree, error) {
	c, err := repo.CommitObject(h)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", h, err)
	}
	return c.Tree()
}

// sameContent reports whether the file on disk (or its absence) is what tree
// holds at path.
func sameContent(tree *object.Tree, path string, disk []byte, diskErr error) bool {
	f, err := tree.File(path)
	if err != nil {
		return errors.Is(diskErr, os.ErrNotExist)
	}
	if diskErr != nil {
		return false
	}
	want, err := f.Contents()
	return err == nil && want == string(disk)
}
