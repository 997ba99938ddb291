package gitops

import (
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5"
)

// DiscardChanges puts the working copy back at its HEAD commit, tracked and
// untracked files alike (ignored ones stay), and lists the paths that had
// changed. A step whose role may not change the code (QA, review) leaves
// nothing behind this way, whatever it wrote.
func DiscardChanges(repo *git.Repository) ([]string, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return nil, fmt.Errorf("discard: %w", err)
	}
	st, err := wt.Status()
	if err != nil {
		return nil, fmt.Errorf("discard: reading status: %w", err)
	}
	var changed []string
	for path, s := range st {
		if s.Worktree != git.Unmodified || s.Staging != git.Unmodified {
			changed = append(changed, path)
		}
	}
	if len(changed) == 0 {
		return nil, nil
	}
	sort.Strings(changed)
	head, err := repo.Head()
	if err != nil {
		return changed, fmt.Errorf("discard: reading HEAD: %w", err)
	}
	if err := wt.Reset(&git.ResetOptions{Mode: git.HardReset, Commit: head.Hash()}); err != nil {
		return changed, fmt.Errorf("discard: reset: %w", err)
	}
	if err := wt.Clean(&git.CleanOptions{Dir: true}); err != nil {
		return changed, fmt.Errorf("discard: removing untracked files: %w", err)
	}
	return changed, nil
}
