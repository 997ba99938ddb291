package stepexec

import (
	"fmt"

	"context"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// HandOver is GitHub mode's split of a step between a job that runs code an
// agent wrote, holding only a read-only token, and a job that holds the
// write token and runs no repository code. With Executor.HandOver set, the
// working copy is prepared without writing to the remote, an agent step's
// commit goes to Change instead of being pushed, and a merge whose gate
// passed goes to Tested instead of being pushed or merged.
type HandOver interface {
	// Change receives a group step's work, committed in the working copy.
	// An error wrapping gitops.ErrWorkflowChange, gitops.ErrForbiddenPath or
	// gitops.ErrSubmodule turns the step PARTIAL (the agent must undo it),
	// as a refused push does.
	Change(ctx context.Context, c Change) error
	// Tested receives the base and group heads whose merge passed the gate.
	Tested(ctx context.Context, base, head plumbing.Hash) (gitops.FinishResult, error)
}

// Change is a group step's work as committed in its working copy.
type Change struct {
	Repo *git.Repository
	// Branch is the group branch; Start the commit the step started from
	// (the branch head, or the base head when the branch did not exist).
	Branch        string
	Start         plumbing.Hash
	BranchExisted bool
	// Head is the working copy's HEAD after the step's commit.
	Head plumbing.Hash
	// MergeParent is the base commit merged in (PurposeFixMerge), if any.
	MergeParent plumbing.Hash
}

// CommitMessage is the message of an agent step's commit (without the
// Bazinga-Step trailer, which gitops adds).
func CommitMessage(st pipeline.Step, res pipeline.Result) string { return commitMessage(st, res) }

// FilesChanged is the files_changed list of a result's handoff (what the
// step's report shows).
func FilesChanged(res pipeline.Result) []string { return filesChanged(res) }

// handOverChange gives the working copy's commit to the HandOver.
func (e *Executor) handOverChange(ctx context.Context, repo *git.Repository, branch string, start plumbing.Hash, existed bool, merge *gitops.WorkingMerge) error {
	head, err := repo.Head()
	if err != nil {
		return fmt.Errorf("reading the working copy's HEAD: %w", err)
	}
	c := Change{Repo: repo, Branch: branch, Start: start, BranchExisted: existed, Head: head.Hash()}
	if merge != nil && !merge.UpToDate {
		c.MergeParent = merge.Theirs
	}
	return e.HandOver.Change(ctx, c)
}
