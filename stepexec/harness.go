package stepexec

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bazinga-bot/bazinga/agent"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/testgate"
)

// promptInput gathers what a step's prompt is built from: the session, the
// group, and the compact result of the step it follows.
func (e *Executor) promptInput(s pipeline.Session, st pipeline.Step, g *pipeline.Group) agent.PromptInput {
	in := agent.PromptInput{
		Role: st.Role, Model: st.Model, SessionID: s.ID, StepID: st.ID, Group: st.Group,
		BaseBranch: s.Base, PurposeKind: st.Purpose, Requirements: s.Requirements,
		SuccessCriteria: s.SuccessCriteria, Feedback: st.Feedback,
	}
	if st.Attempt > 1 {
		in.Purpose = fmt.Sprintf("This is attempt %d: the previous attempt ended without a result.", st.Attempt)
	}
	if g != nil {
		in.GroupName, in.Task, in.Branch = g.Name, g.Task, g.Branch
		c := s.Progress(g.Track)
		if st.Role.IsImplementer() && st.Purpose != pipeline.PurposeDiagnostic {
			in.Purpose = strings.TrimSpace(in.Purpose + fmt.Sprintf(" Implementation iteration %d of at most %d.", c.Iterations, e.Config.Limits.DeveloperIterations))
		}
	}
	// What the harness found (issue 13): the group's check outcomes and an
	// accepted red baseline.
	if g != nil {
		in.Checks = g.Checks
	}
	if b := s.Baseline; b.Red() && b.Accepted {
		in.Baseline = b.Describe(s.Base)
	}
	if prev := s.Step(st.From); prev != nil && prev.Result != nil {
		in.PrevRole, in.PrevStatus = prev.Role, prev.Result.Status
		in.PrevSummary, in.PrevHandoff = prev.Result.Summary, prev.Result.Handoff
	}
	if st.Role == pipeline.RolePM {
		for _, gr := range s.Groups {
			gs := agent.GroupState{ID: gr.ID, Name: gr.Name, Stage: gr.Stage.String()}
			if gr.Wait != pipeline.WaitNone {
				gs.Stage += " (" + gr.Wait.String() + ": " + gr.WaitDetail + ")"
			}
			if last := s.Step(gr.Last); last != nil {
				gs.Last = pipeline.Capsule(*last)
			}
			in.Groups = append(in.Groups, gs)
		}
		var notes []string
		for _, n := range st.Notes {
			notes = append(notes, "- "+n.Text)
		}
		if len(notes) > 0 {
			in.Feedback = strings.TrimSpace(in.Feedback + "\n" + strings.Join(notes, "\n"))
		}
		if st.Purpose == pipeline.PurposeAnswered {
			in.Answer = st.Feedback
		}
	}
	if e.Comments != nil {
		in.Comments = e.Comments(st.Group)
	}
	return in
}

// merge lands the group on the base through the test gate.
func (e *Executor) merge(ctx context.Context, s pipeline.Session, st pipeline.Step, rep *Report) (pipeline.Result, error) {
	g := s.Group(st.Group)
	if g == nil {
		return pipeline.Result{}, fmt.Errorf("merge step %s names no group", st.ID)
	}
	req := gitops.LandRequest{
		Remote: e.Remote, Base: s.Base, Branch: g.Branch, Gate: e.gate(s), Author: e.author(),
		// Only what the tech lead approved lands (issue 28).
		Head:                 reviewedHead(*g),
		Message:              fmt.Sprintf("Merge group %s (%s) into %s\n\nSession %s.", g.ID, g.Name, s.Base, s.ID),
		StepID:               st.ID,
		AllowWorkflowChanges: e.Config.AllowWorkflowChanges, TempDir: e.TempDir,
	}
	if e.HandOver != nil {
		// The gate runs here; the tested heads are landed by a job that
		// runs no repository code.
		req.Finish = e.HandOver.Tested
	}
	lr, err := gitops.Land(ctx, req)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("landing %s on %s: %w", g.Branch, s.Base, err)
	}
	h := map[string]any{"attempts": lr.Attempts}
	res := pipeline.Result{Summary: []string{lr.Summary()}}
	if lr.Gate != nil {
		rep.Tests = lr.Gate.Summary()
		rep.Harness = checkReport(*lr.Gate)
		if len(lr.Gate.Checks) > 0 {
			h["checks"] = checksHandoff(*lr.Gate)
		}
	}
	switch lr.Outcome {
	case gitops.MergeSuccess:
		res.Status = pipeline.StatusMergeSuccess
		if !lr.Commit.IsZero() {
			h["merge_commit"] = lr.Commit.String()
		}
		h["already_merged"] = lr.AlreadyMerged
	case gitops.MergeConflict:
		res.Status = pipeline.StatusMergeConflict
		h["conflicts"] = lr.Conflicts
	case gitops.MergeTestFailure:
		res.Status = pipeline.StatusMergeTestFailure
		if lr.Gate != nil {
			h["test_output"] = lr.Gate.Digest(maxFeedbackOutput)
			rep.Output = lr.Gate.Digest(maxFeedbackOutput)
		}
	case gitops.MergeHeadMoved:
		// A fact about the branch, not a failure: the engine sends the new
		// head through QA and review. Its handoff is the move alone.
		m := HeadMove(lr.Moved)
		res.Status = pipeline.StatusMergeHeadMoved
		res.Summary = []string{m.Sentence(g.ID) + "; nothing was merged"}
		res.Handoff = m.Handoff()
		rep.Head = m.Head
		return res, nil
	default:
		res.Status = pipeline.StatusMergeBlocked
		h["reason"] = lr.Reason
	}
	res.Handoff, _ = json.Marshal(h)
	return res, nil
}

// branchHead is the group branch's head in a step's working copy after its
// push: the commit the step pushed, or the one it worked on when it changed
// nothing (a push of a branch that moved meanwhile is refused, so the step
// fails and runs again rather than report a head it did not see).
func branchHead(repo *git.Repository, branch string) string {
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return ""
	}
	return ref.Hash().String()
}

// reviewedHead is the commit a group's merge may land: the head the tech
// lead approved; zero when the session recorded none (a session from before
// reviewed heads were kept merges its branch as it is).
func reviewedHead(g pipeline.Group) plumbing.Hash {
	if !plumbing.IsHash(g.ReviewedHead) {
		return plumbing.ZeroHash
	}
	return plumbing.NewHash(g.ReviewedHead)
}

// HeadMove is a branch move as the engine reads it from a MERGE_HEAD_MOVED
// result: both modes build it the same way (the land job from what it read
// of GitHub, local mode from the merge's own look at the branch).
func HeadMove(mv *gitops.BranchMove) pipeline.HeadMove {
	if mv == nil {
		return pipeline.HeadMove{}
	}
	m := pipeline.HeadMove{Reviewed: mv.Reviewed.String(), PushedBy: mv.Login}
	if !mv.Head.IsZero() {
		m.Head = mv.Head.String()
	}
	if m.PushedBy == "" {
		m.Author = mv.Author
	}
	return m
}

// criterion is one line of the pm's BAZINGA evidence.
type criterion struct {
	Criterion string `json:"criterion"`
	Met       bool   `json:"met"`
	Evidence  string `json:"evidence"`
}

// validate checks a BAZINGA claim: every group not abandoned is merged into
// the base, the tests pass on the base head, and every success criterion is
// claimed met with evidence. It trusts nothing the pm says about the first two.
func (e *Executor) validate(ctx context.Context, s pipeline.Session, st pipeline.Step, rep *Report) (pipeline.Result, error) {
	dir, cleanup, err := e.workdir("bazinga-validate-")
	if err != nil {
		return pipeline.Result{}, err
	}
	defer cleanup()
	repo, err := gitops.Clone(ctx, e.Remote, dir, gitops.CloneOptions{Branch: s.Base})
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("cloning %s for validation: %w", s.Base, err)
	}
	base, err := gitops.ResolveBranch(repo, s.Base)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("reading the head of %s: %w", s.Base, err)
	}
	var failed, passed []string
	merged := 0
	for _, g := range s.Groups {
		if g.Stage == pipeline.StageAbandoned {
			continue
		}
		if g.MergeCommit != "" {
			// A squash or rebase merge (merge.pr_method) leaves the branch
			// out of the base: the commit GitHub made must be in it.
			ok, err := gitops.IsMerged(repo, plumbing.NewHash(g.MergeCommit), base)
			if err == nil && ok {
				merged++
				continue
			}
		}
		head, err := gitops.ResolveBranch(repo, g.Branch)
		if err != nil {
			failed = append(failed, fmt.Sprintf("group %s: branch %s is missing", g.ID, g.Branch))
			continue
		}
		ok, err := gitops.IsMerged(repo, head, base)
		if err != nil {
			return pipeline.Result{}, fmt.Errorf("checking whether %s is merged: %w", g.Branch, err)
		}
		if !ok {
			failed = append(failed, fmt.Sprintf("group %s: %s is not merged into %s", g.ID, g.Branch, s.Base))
			continue
		}
		merged++
	}
	passed = append(passed, fmt.Sprintf("%d group(s) merged into %s", merged, s.Base))

	// Validation runs the tests (compared with the accepted baseline), not
	// the checks: those ran on every group's code before it merged.
	if gate := e.testGate(); gate.Command != "" {
		gate.Known = knownFailures(s)
		gr, err := testgate.RunGate(ctx, dir, gate)
		if err != nil {
			return pipeline.Result{}, fmt.Errorf("running the tests on %s: %w", s.Base, err)
		}
		rep.Tests = gr.Summary()
		switch {
		case gr.TestsOutcome == testgate.GatePass:
			passed = append(passed, "tests pass on "+s.Base+" ("+base.String()[:12]+")")
		case gr.Outcome == testgate.GatePass:
			passed = append(passed, "tests on "+s.Base+" ("+base.String()[:12]+"): "+gr.Compared)
		default:
			failed = append(failed, "tests on "+s.Base+": "+gr.Summary())
			rep.Output = gr.Digest(maxFeedbackOutput)
		}
	}

	var claimed struct {
		Criteria []criterion `json:"criteria"`
	}
	if pm := s.Step(st.From); pm != nil && pm.Result != nil && len(pm.Result.Handoff) > 0 {
		_ = json.Unmarshal(pm.Result.Handoff, &claimed)
	}
	for _, want := range s.SuccessCriteria {
		c, ok := findCriterion(claimed.Criteria, want)
		switch {
		case !ok:
			failed = append(failed, fmt.Sprintf("criterion %q: no evidence given", want))
		case !c.Met:
			failed = append(failed, fmt.Sprintf("criterion %q: the pm says it is not met", want))
		case strings.TrimSpace(c.Evidence) == "":
			failed = append(failed, fmt.Sprintf("criterion %q: claimed met without evidence", want))
		}
	}
	if n := len(s.SuccessCriteria); n > 0 && len(failed) == 0 {
		passed = append(passed, fmt.Sprintf("%d criteria met with evidence", n))
	}
	h, _ := json.Marshal(map[string]any{"failed": failed, "passed": passed})
	if len(failed) > 0 {
		summary := append([]string{fmt.Sprintf("%d check(s) failed", len(failed))}, failed...)
		if len(summary) > pipeline.MaxSummaryLines {
			summary = summary[:pipeline.MaxSummaryLines]
		}
		return pipeline.Result{Status: pipeline.StatusReject, Summary: summary, Handoff: h}, nil
	}
	return pipeline.Result{Status: pipeline.StatusAccept, Summary: passed, Handoff: h}, nil
}

func findCriterion(list []criterion, want string) (criterion, bool) {
	norm := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
	for _, c := range list {
		if norm(c.Criterion) == norm(want) {
			return c, true
		}
	}
	return criterion{}, false
}
