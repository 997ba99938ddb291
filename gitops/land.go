package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/bazinga-bot/bazinga/testgate"
)

// LandOutcome is the user-facing result of landing a group.
type LandOutcome int

const (
	MergeSuccess LandOutcome = iota + 1
	MergeConflict
	MergeTestFailure
	MergeBlocked
	// MergeHeadMoved: the group branch is not at the reviewed head
	// (LandRequest.Head); nothing was merged. A fact, not a failure.
	MergeHeadMoved
)

func (o LandOutcome) String() string {
	switch o {
	case MergeSuccess:
		return "MERGE_SUCCESS"
	case MergeConflict:
		return "MERGE_CONFLICT"
	case MergeTestFailure:
		return "MERGE_TEST_FAILURE"
	case MergeBlocked:
		return "MERGE_BLOCKED"
	case MergeHeadMoved:
		return "MERGE_HEAD_MOVED"
	}
	return fmt.Sprintf("LandOutcome(%d)", int(o))
}

// DefaultLandAttempts is how often landing re-merges after the base moved.
const DefaultLandAttempts = 3

// LandRequest says what to land where.
type LandRequest struct {
	Remote Remote
	Base   string // branch to land on
	Branch string // group branch
	// Head is the commit of Branch that was reviewed: Land merges exactly
	// it, and when the branch is elsewhere (someone pushed after review)
	// reports MergeHeadMoved instead. Zero merges the branch as it is (a
	// session that recorded no reviewed head).
	Head plumbing.Hash
	Gate testgate.GateConfig
	// Author of the merge commit; the committer is BotIdentity.
	Author  Identity
	Message string // default "Merge branch '<branch>' into <base>"
	StepID  string // adds a Bazinga-Step trailer
	// AllowWorkflowChanges lets the merge change .github/workflows/.
	AllowWorkflowChanges bool
	// TempDir is where working copies are made; empty means os.TempDir.
	TempDir  string
	Attempts int // default DefaultLandAttempts
	// Finish, when set, lands the tested merge instead of the push: it gets
	// the base and branch heads whose merge passed the gate (e.g. to merge
	// the group's pull request through the API at exactly that head).
	Finish func(ctx context.Context, base, branch plumbing.Hash) (FinishResult, error)
}

// FinishResult is what a LandRequest.Finish reports.
type FinishResult struct {
	Outcome LandOutcome
	// Commit is the merge commit now at the head of the base.
	Commit plumbing.Hash
	Reason string
	// Retry asks for another attempt: the base or the branch moved after
	// the test, so what would be merged is not what was tested.
	Retry bool
}

// LandResult is the outcome of Land.
type LandResult struct {
	Outcome LandOutcome
	// Commit is the merge commit now at the head of the base; zero when
	// the group was already merged.
	Commit        plumbing.Hash
	AlreadyMerged bool
	Conflicts     []string
	Gate          *testgate.GateResult
	Attempts      int
	// Reason explains MERGE_BLOCKED and MERGE_TEST_FAILURE.
	Reason string
	// Moved says where the branch is, for MergeHeadMoved.
	Moved *BranchMove
}

// Summary is one line for humans.
func (r LandResult) Summary() string {
	switch r.Outcome {
	case MergeSuccess:
		if r.AlreadyMerged {
			return "already merged"
		}
		s := "merged as " + r.Commit.String()[:12]
		if r.Gate != nil {
			s += "; " + r.Gate.Summary()
		}
		return s
	case MergeHeadMoved:
		if r.Moved != nil {
			return fmt.Sprintf("the branch moved from %s to %s after review; nothing was merged", short(r.Moved.Reviewed), short(r.Moved.Head))
		}
		return "the branch moved after review; nothing was merged"
	case MergeConflict:
		if len(r.Conflicts) == 0 {
			// git reports some directory-rename conflicts without a path.
			return "conflicts (a directory rename that cannot be followed)"
		}
		return "conflicts in " + strings.Join(r.Conflicts, ", ")
	}
	return r.Reason
}

// Land merges the group branch into the base behind the test gate: it
// fetches both, merges them three-way, runs the gate on the merged tree
// and pushes the merge commit to the base without force. If the base
// moved meanwhile, it starts over, up to Attempts times. An untested tree
// is never pushed.
//
// Like `git merge --no-ff`, Land always records a merge commit, even when
// the base is an ancestor of the branch, so that each group stays visible
// as one unit in the base's history. A group already contained in the
// base is a success without a new commit.
//
// Outcomes are values; an error means broken input or infrastructure
// (a missing branch, unrelated histories, an unreachable remote, a
// cancelled context).
func Land(ctx context.Context, req LandRequest) (LandResult, error) {
	if req.Base == "" || req.Branch == "" {
		return LandResult{}, errors.New("land: base and branch are required")
	}
	attempts := req.Attempts
	if attempts <= 0 {
		attempts = DefaultLandAttempts
	}
	var res LandResult
	for i := 1; i <= attempts; i++ {
		var retry bool
		var err error
		res, retry, err = landOnce(ctx, req)
		res.Attempts = i
		if err != nil {
			return res, fmt.Errorf("land %s into %s: %w", req.Branch, req.Base, err)
		}
		if !retry {
			return res, nil
		}
	}
	res.Outcome = MergeBlocked
	res.Reason = fmt.Sprintf("the base branch %s moved during each of %d attempts", req.Base, attempts)
	return res, nil
}

func landOnce(ctx context.Context, req LandRequest) (res LandResult, retry bool, err error) {
	dir, err := os.MkdirTemp(req.TempDir, "bazinga-land-")
	if err != nil {
		return res, false, err
	}
	defer os.RemoveAll(dir)
	w, err := dial(req.Remote)
	if err != nil {
		return res, false, err
	}
	all, err := w.refs(ctx)
	if err != nil {
		return res, false, fmt.Errorf("listing branches of %s: %w", req.Remote, req.Remote.redactErr(err))
	}
	repo, local, err := initWorkingCopy(dir, req.Remote)
	if err != nil {
		return res, false, err
	}
	// Only the two branches, shallow at first: deepened below as far as
	// the merge base needs. A few commits of each usually reach it.
	const firstDepth = 8
	if err := fetchBranches(ctx, w, req.Remote, local, all, []string{req.Base, req.Branch}, firstDepth); err != nil {
		return res, false, err
	}
	baseHash, err := ResolveBranch(repo, req.Base)
	if err != nil {
		return res, false, err
	}
	branchHash, err := ResolveBranch(repo, req.Branch)
	if err != nil {
		return res, false, err
	}
	if !req.Head.IsZero() && branchHash != req.Head {
		// Someone pushed after review: what is there was not reviewed, and
		// what was reviewed is no longer what the branch holds. Neither is
		// merged; the engine sends the new head through review.
		mv := DescribeMove(repo, req.Head, branchHash)
		return LandResult{Outcome: MergeHeadMoved, Moved: &mv}, false, nil
	}
	if err := deepenUntilDecided(ctx, w, req.Remote, local, baseHash, branchHash, []plumbing.Hash{baseHash, branchHash}, firstDepth); err != nil {
		return res, false, err
	}
	merged, err := IsMerged(repo, branchHash, baseHash)
	if err != nil {
		return res, false, err
	}
	if merged {
		return LandResult{Outcome: MergeSuccess, AlreadyMerged: true}, false, nil
	}
	mr, err := ThreeWayMergeWith(repo, baseHash, branchHash, MergeOptions{OursLabel: req.Base, TheirsLabel: req.Branch})
	if err != nil {
		return res, false, err
	}
	if !mr.Clean {
		return LandResult{Outcome: MergeConflict, Conflicts: mr.Conflicts}, false, nil
	}
	now := time.Now()
	author := req.Author
	if author.Name == "" {
		author = BotIdentity
	}
	msg := req.Message
	if msg == "" {
		msg = fmt.Sprintf("Merge branch '%s' into %s", req.Branch, req.Base)
	}
	if req.StepID != "" {
		msg += "\n\nBazinga-Step: " + req.StepID
	}
	commit := &object.Commit{
		Author:       *author.signature(now),
		Committer:    *BotIdentity.signature(now),
		Message:      msg + "\n",
		TreeHash:     mr.Tree,
		ParentHashes: []plumbing.Hash{baseHash, branchHash},
	}
	obj := repo.Storer.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return res, false, fmt.Errorf("encoding merge commit: %w", err)
	}
	mergeHash, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return res, false, fmt.Errorf("writing merge commit: %w", err)
	}
	if !req.AllowWorkflowChanges {
		paths, err := WorkflowChanges(repo, baseHash, mergeHash)
		if err != nil {
			return res, false, err
		}
		if len(paths) > 0 {
			return LandResult{Outcome: MergeBlocked, Reason: workflowError(paths).Error()}, false, nil
		}
	}
	// The gate runs on a checkout of exactly the tree that will be pushed.
	landRef := plumbing.NewBranchReferenceName("bazinga-land")
	if err := repo.Storer.SetReference(plumbing.NewHashReference(landRef, mergeHash)); err != nil {
		return res, false, fmt.Errorf("recording merge commit: %w", err)
	}
	// Without a test command there is nothing to run, so no checkout.
	if strings.TrimSpace(req.Gate.Command) != "" || len(req.Gate.Checks) > 0 {
		wt, err := repo.Worktree()
		if err != nil {
			return res, false, err
		}
		if err := wt.Checkout(&git.CheckoutOptions{Branch: landRef, Force: true}); err != nil {
			return res, false, fmt.Errorf("checking out merge commit: %w", err)
		}
	}
	gate, err := testgate.RunGate(ctx, dir, req.Gate)
	if err != nil {
		return res, false, err
	}
	if ctx.Err() != nil {
		return res, false, ctx.Err()
	}
	res = LandResult{Gate: &gate}
	if gate.Outcome != testgate.GatePass {
		res.Outcome = MergeTestFailure
		res.Reason = gate.Summary() + "\n" + gate.Digest(testgate.MaxGateOutput)
		return res, false, nil
	}
	if req.Finish != nil {
		fr, err := req.Finish(ctx, baseHash, branchHash)
		if err != nil {
			return res, false, err
		}
		if fr.Retry {
			return res, true, nil
		}
		res.Outcome, res.Commit, res.Reason = fr.Outcome, fr.Commit, fr.Reason
		return res, false, nil
	}
	// A push to the group branch while the gate ran: the merge commit holds
	// only the reviewed head, but the branch now says otherwise; report it
	// rather than land a merge that leaves the pushed work silently behind.
	if !req.Head.IsZero() {
		if mv, err := branchMovedSince(ctx, w, req.Remote, local, repo, req.Branch, branchHash); err != nil || mv != nil {
			return LandResult{Outcome: MergeHeadMoved, Moved: mv, Gate: &gate}, false, err
		}
	}
	// Only the tested commit, and only if the base is still where it was
	// tested: the update names the old value, and the remote refuses it
	// when the base moved.
	objects, err := objectsToSend(repo.Storer, []plumbing.Hash{mergeHash}, []plumbing.Hash{baseHash, branchHash})
	if err != nil {
		return res, false, fmt.Errorf("listing objects to send: %w", err)
	}
	upd := refUpdate{Name: plumbing.NewBranchReferenceName(req.Base), Old: baseHash, New: mergeHash}
	err = w.push(ctx, repo.Storer, objects, []refUpdate{upd})
	if err != nil {
		if ctx.Err() != nil {
			return res, false, ctx.Err()
		}
		msg := err.Error()
		switch {
		case errors.Is(err, errRefMoved) || strings.Contains(msg, "non-fast-forward") ||
			strings.Contains(msg, "fetch first") || strings.Contains(msg, "cannot lock ref") ||
			strings.Contains(msg, "failed to lock"):
			return res, true, nil
		case strings.Contains(msg, "command error on") || strings.Contains(msg, "declined") ||
			strings.Contains(msg, "protected") || strings.Contains(msg, "rejected"):
			res.Outcome = MergeBlocked
			res.Reason = "the remote refused the push: " + req.Remote.redactErr(err).Error()
			return res, false, nil
		}
		return res, false, fmt.Errorf("pushing to %s: %w", req.Remote, req.Remote.redactErr(err))
	}
	res.Outcome = MergeSuccess
	res.Commit = mergeHash
	return res, false, nil
}

// branchMovedSince lists the remote's branches again and reports a group
// branch that is no longer at head, with its new head fetched and described.
// The window between this look and the push to the base is git's: the base
// push cannot also name the group branch's old value.
func branchMovedSince(ctx context.Context, w wire, remote Remote, local *localRepo, repo *git.Repository, branch string, head plumbing.Hash) (*BranchMove, error) {
	all, err := w.refs(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing branches of %s: %w", remote, remote.redactErr(err))
	}
	cur, ok := all[plumbing.NewBranchReferenceName(branch)]
	if ok && cur == head {
		return nil, nil
	}
	if !ok {
		// Deleted meanwhile: as for a branch missing at the start, an error
		// (the step fails and is retried; past its attempts the session pauses).
		return nil, fmt.Errorf("%s: %w", branch, ErrBranchNotFound)
	}
	if err := fetchBranches(ctx, w, remote, local, all, []string{branch}, 1); err != nil {
		return nil, err
	}
	mv := DescribeMove(repo, head, cur)
	return &mv, nil
}

// short is a commit's first 12 hex digits, as results show them.
func short(h plumbing.Hash) string { return h.String()[:12] }
