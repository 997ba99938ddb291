package stepjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/stepexec"
)

// recorder is the unprivileged job's stepexec.HandOver: it keeps what the
// step would have pushed, as data for the hand-over.
type recorder struct {
	remote  gitops.Remote
	tempDir string
	base    string // the session's base branch
	branch  string // the group branch, if any
	policy  gitops.PathPolicy

	// start and existed: the commit a group step started from.
	start   string
	existed bool
	data    [][]byte
	commit  *HandOverCommit
	tested  *HandOverMerge
}

var _ stepexec.HandOver = (*recorder)(nil)

// Change lists the step's change against the commit it started from and
// checks it as the publishing job will, so that a refused change reaches
// the agent as PARTIAL (with the reason) rather than failing later.
func (r *recorder) Change(ctx context.Context, c stepexec.Change) error {
	r.start, r.existed = c.Start.String(), c.BranchExisted
	changes, err := gitops.TreeChanges(c.Repo, c.Start, c.Head)
	if err != nil {
		return err
	}
	if len(changes) == 0 && c.MergeParent.IsZero() {
		return nil
	}
	if len(changes) > MaxHandOverFiles {
		return fmt.Errorf("%w: the change has %d files, over the limit of %d", gitops.ErrForbiddenPath, len(changes), MaxHandOverFiles)
	}
	var total int64
	files := make([]HandOverFile, 0, len(changes))
	for _, ch := range changes {
		if err := r.policy.Check(ch.Path); err != nil {
			// What a merged base commit brings in (a maintainer's workflow
			// or configuration change) is not the agent's.
			same := false
			if r.policy.IsProtected(ch.Path) && !c.MergeParent.IsZero() {
				same, _ = gitops.SameAs(c.Repo, c.MergeParent, ch)
			}
			if !same {
				return err
			}
		}
		if ch.Size > MaxHandOverFileSize {
			return fmt.Errorf("%w: %s is %d bytes, over the limit of %d", gitops.ErrForbiddenPath, ch.Path, ch.Size, MaxHandOverFileSize)
		}
		if total += ch.Size; total > MaxHandOverTotal {
			return fmt.Errorf("%w: the change is over the limit of %d bytes in all", gitops.ErrForbiddenPath, MaxHandOverTotal)
		}
		f := HandOverFile{Path: ch.Path, Mode: ch.Mode.String(), Size: ch.Size}
		if ch.Mode != gitops.ChangeDelete {
			f.Blob = ch.Blob.String()
		}
		files = append(files, f)
	}
	head, err := c.Repo.CommitObject(c.Head)
	if err != nil {
		return fmt.Errorf("reading the step's commit: %w", err)
	}
	// The working copy is gone once the step ends: keep the contents now.
	data := make([][]byte, len(changes))
	for i, ch := range changes {
		if ch.Mode == gitops.ChangeDelete {
			continue
		}
		if data[i], err = readBlob(c.Repo, ch.Blob); err != nil {
			return fmt.Errorf("reading %s: %w", ch.Path, err)
		}
	}
	r.data = data
	r.commit = &HandOverCommit{Files: files, Tree: head.TreeHash.String()}
	if !c.MergeParent.IsZero() {
		r.commit.MergeParent = c.MergeParent.String()
	}
	return nil
}

// content is the i-th changed file's content.
func (r *recorder) content(i int) ([]byte, error) {
	if i >= len(r.data) {
		return nil, errors.New("no such change")
	}
	return r.data[i], nil
}

func readBlob(repo *git.Repository, h plumbing.Hash) ([]byte, error) {
	b, err := repo.BlobObject(h)
	if err != nil {
		return nil, err
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(io.LimitReader(rd, MaxHandOverFileSize+1))
}

// Tested records the heads whose merge passed the gate and the tree of
// that merge, which the land job must arrive at again. It pushes nothing:
// the outcome is MERGE_SUCCESS, completed by the land job with its commit.
func (r *recorder) Tested(ctx context.Context, base, head plumbing.Hash) (gitops.FinishResult, error) {
	dir, err := os.MkdirTemp(r.tempDir, "bazinga-tested-")
	if err != nil {
		return gitops.FinishResult{}, err
	}
	defer os.RemoveAll(dir)
	repo, _, err := gitops.FetchBare(ctx, r.remote, dir, r.base, r.branch)
	if err != nil {
		return gitops.FinishResult{}, err
	}
	tree, err := mergedTree(repo, base, head, r.base, r.branch, r.policy)
	var blocked *mergeBlocked
	if errors.As(err, &blocked) {
		return gitops.FinishResult{Outcome: gitops.MergeBlocked, Reason: blocked.reason}, nil
	}
	if err != nil {
		return gitops.FinishResult{}, err
	}
	r.tested = &HandOverMerge{Base: base.String(), Head: head.String(), Tree: tree.String()}
	return gitops.FinishResult{Outcome: gitops.MergeSuccess}, nil
}

// mergeBlocked is a merge that may not land (it changes protected paths).
type mergeBlocked struct{ reason string }

func (m *mergeBlocked) Error() string { return m.reason }

// mergedTree merges head into base in repo (both must be there) and
// returns the merged tree: an error when the merge has conflicts, a
// *mergeBlocked when it changes a path the policy refuses.
func mergedTree(repo *git.Repository, base, head plumbing.Hash, baseName, branch string, policy gitops.PathPolicy) (plumbing.Hash, error) {
	for _, h := range []plumbing.Hash{base, head} {
		if _, err := repo.CommitObject(h); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("commit %s is not on %s or %s: %w", h, baseName, branch, err)
		}
	}
	mr, err := gitops.ThreeWayMergeWith(repo, base, head, gitops.MergeOptions{OursLabel: baseName, TheirsLabel: branch})
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("merging %s into %s: %w", branch, baseName, err)
	}
	if !mr.Clean {
		return plumbing.ZeroHash, fmt.Errorf("merging %s (%s) into %s (%s) has conflicts", branch, head, baseName, base)
	}
	// The paths the merge changes on the base, checked as a step's change is.
	probe, err := gitops.WriteCommit(repo, mr.Tree, []plumbing.Hash{base, head}, gitops.BotIdentity, "probe", timeZero)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	changes, err := gitops.TreeChanges(repo, base, probe)
	if err != nil {
		if errors.Is(err, gitops.ErrSubmodule) {
			return plumbing.ZeroHash, &mergeBlocked{reason: err.Error()}
		}
		return plumbing.ZeroHash, err
	}
	for _, ch := range changes {
		if err := policy.Check(ch.Path); err != nil {
			return plumbing.ZeroHash, &mergeBlocked{reason: err.Error()}
		}
	}
	return mr.Tree, nil
}

// timeZero dates the probe commit, which is never stored anywhere but a
// temporary repository: its hash must not depend on the clock.
var timeZero = time.Unix(0, 0).UTC()
