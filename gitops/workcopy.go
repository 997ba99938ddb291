package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// WorkingMerge is the result of merging a branch into a working copy.
type WorkingMerge struct {
	// Theirs is the merged commit; commit the resolution with
	// CommitOptions.MergeParent set to it.
	Theirs plumbing.Hash
	// UpToDate is true when there was nothing to merge.
	UpToDate bool
	// Commit is the merge commit, made when the merge was clean.
	Commit plumbing.Hash
	// Conflicts lists the files left with conflict markers (or, for
	// modify/delete and similar, the surviving version), sorted.
	Conflicts []string
}

// MergeRemoteIntoWorkingCopy merges the remote's current branch (usually
// the base) into the working copy's HEAD: it fetches the branch's tip from
// remote.URL into origin/<branch> and deepens the working copy's history
// until the merge base is in it (up to MaxHistoryDepth commits; past that
// the error wraps ErrShallowHistory), then merges. A clean merge is
// committed at once. Otherwise the merged files are written into the
// working copy with standard conflict markers labelled with the two
// branch names, and their list is returned; nothing is committed. The
// working copy must be clean.
func MergeRemoteIntoWorkingCopy(ctx context.Context, repo *git.Repository, remote Remote, branch string, author Identity) (*WorkingMerge, error) {
	w, err := dial(remote)
	if err != nil {
		return nil, fmt.Errorf("merge %s into working copy: %w", branch, err)
	}
	refs, err := w.refs(ctx)
	if err != nil {
		return nil, fmt.Errorf("merge %s into working copy: listing branches of %s: %w", branch, remote, remote.redactErr(err))
	}
	local, err := localOf(repo)
	if err != nil {
		return nil, fmt.Errorf("merge %s into working copy: %w", branch, err)
	}
	if err := fetchBranches(ctx, w, remote, local, refs, []string{branch}, 1); err != nil {
		return nil, fmt.Errorf("merge %s into working copy: %w", branch, err)
	}
	deepen := func(head *plumbing.Reference, theirs plumbing.Hash) error {
		tips := []plumbing.Hash{theirs}
		// The working copy's own branch, as the remote has it now: its
		// history is HEAD's below the commits made here.
		if h, ok := refs[head.Name()]; ok && head.Name().IsBranch() && h != theirs {
			tips = append(tips, h)
		}
		return deepenUntilDecided(ctx, w, remote, local, head.Hash(), theirs, tips, 1)
	}
	return mergeIntoWorkingCopy(ctx, repo, branch, author, deepen)
}

func mergeIntoWorkingCopy(ctx context.Context, repo *git.Repository, branch string, author Identity, deepen func(head *plumbing.Reference, theirs plumbing.Hash) error) (*WorkingMerge, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return nil, fmt.Errorf("merge into working copy: %w", err)
	}
	st, err := wt.Status()
	if err != nil {
		return nil, fmt.Errorf("merge into working copy: reading status: %w", err)
	}
	if !st.IsClean() {
		return nil, fmt.Errorf("merge %s into working copy: %w", branch, ErrDirtyWorkingCopy)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, fmt.Errorf("merge into working copy: reading HEAD: %w", err)
	}
	theirs, err := ResolveBranch(repo, branch)
	if err != nil {
		return nil, fmt.Errorf("merge %s into working copy: %w", branch, err)
	}
	// deepen fetches until the history at hand decides the merge, or
	// fails with ErrShallowHistory.
	if err := deepen(head, theirs); err != nil {
		return nil, fmt.Errorf("merge %s into working copy: %w", branch, err)
	}
	wm := &WorkingMerge{Theirs: theirs}
	done, err := IsMerged(repo, theirs, head.Hash())
	if err != nil {
		return nil, err
	}
	if done {
		wm.UpToDate = true
		return wm, nil
	}
	oursLabel := head.Name().Short()
	res, err := ThreeWayMergeWith(repo, head.Hash(), theirs, MergeOptions{OursLabel: oursLabel, TheirsLabel: branch})
	if err != nil {
		return nil, fmt.Errorf("merge %s into working copy: %w", branch, err)
	}
	root := wt.Filesystem.Root()
	for _, f := range res.Files {
		if err := writeMergedFile(repo, root, f); err != nil {
			return nil, fmt.Errorf("merge %s into working copy: %w", branch, err)
		}
	}
	wm.Conflicts = res.Conflicts
	if !res.Clean {
		return wm, nil
	}
	h, err := CommitAll(repo, CommitOptions{
		Author:      author,
		Message:     fmt.Sprintf("Merge branch '%s' into %s", branch, oursLabel),
		MergeParent: theirs,
	})
	if err != nil {
		return nil, fmt.Errorf("merge %s into working copy: %w", branch, err)
	}
	wm.Commit = h
	return wm, nil
}

func writeMergedFile(repo *git.Repository, root string, f MergedFile) error {
	full := filepath.Join(root, filepath.FromSlash(f.Path))
	if err := os.RemoveAll(full); err != nil {
		return fmt.Errorf("removing %s: %w", f.Path, err)
	}
	if f.Mode == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	if f.Mode == filemode.Submodule {
		return os.MkdirAll(full, 0o755)
	}
	data := f.Content
	if data == nil {
		d, err := newTreeReader(repo.Storer).blob(f.Hash)
		if err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
		data = d
	}
	if f.Mode == filemode.Symlink {
		if err := os.Symlink(string(data), full); err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
		return nil
	}
	perm := os.FileMode(0o644)
	if f.Mode == filemode.Executable {
		perm = 0o755
	}
	if err := os.WriteFile(full, data, perm); err != nil {
		return fmt.Errorf("writing %s: %w", f.Path, err)
	}
	return os.Chmod(full, perm)
}
