package stepjob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/stepexec"
)

// publish is the privileged half of a step (publish, land). It holds the
// write token and runs no repository code: it never checks out a branch,
// runs no test, build or hook, and reads the hand-over only as data. In
// order: the step must be in flight; the hand-over must pass readHandOver
// and name this step, its role and group; the branch it started from must
// still be where it was (else it is refused as stale); the commit is
// rebuilt from the data on that head (or the tested merge recomputed) and
// must give the tree the unprivileged job reported. Only then does it claim
// the step, push with compare-and-set and post the result. A refusal is an
// error naming the problem; nothing is pushed or posted and the job fails,
// so that the orchestrator retries the step.
func (j *job) publish(ctx context.Context) int {
	in := j.in
	ref, issue, ok := j.stepIssue()
	if !ok {
		return 1
	}
	st, step, ok, err := j.inFlight(ctx, issue, ref.Session)
	var ue *unreadableError
	if errors.As(err, &ue) {
		return j.failUnreadable(ctx, issue, ue, true)
	}
	if err != nil {
		return j.fail("reading the session from the tracking comment of #"+ref.Session, err)
	}
	if !ok {
		return 0
	}
	s := st.Session
	policy := gitops.PathPolicy{AllowWorkflowChanges: st.Config.AllowWorkflowChanges, Protected: []string{in.config}}
	j.gha.Group("bazinga: check the hand-over")
	h, files, err := readHandOver(in.handover, policy)
	if err == nil {
		err = checkIdentity(h, *step, in.command)
	}
	j.gha.EndGroup()
	if err != nil {
		return j.refused(err)
	}
	j.checkUsage(&h)
	switch h.Outcome {
	case OutcomeSkipped, OutcomeDuplicate:
		j.gha.Noticef("bazinga: the unprivileged job of %s reported %s; nothing to publish", in.step, h.Outcome)
		status := StatusSkipped
		if h.Outcome == OutcomeDuplicate {
			status = StatusDuplicate
		}
		j.out.set(in.step, status, []string{"the unprivileged job reported " + h.Outcome})
		return 0
	}

	work, err := os.MkdirTemp(in.workDir, "bazinga-publish-")
	if err != nil {
		return j.fail("making a working directory", err)
	}
	defer os.RemoveAll(work)
	// The remote is the harness's own URL and token, never a working copy's
	// configuration (there is no working copy here).
	p := &publisher{j: j, s: s, step: *step, h: h, files: files, policy: policy, dir: work,
		remote: gitops.Remote{URL: in.serverURL + "/" + in.repo.String() + ".git", Token: in.token}}
	api := ghapi.New(j.client)
	p.api = api
	if st.Config.Merge.Method == pipeline.MergePullRequest {
		p.prs = &prMerger{gh: api, repo: in.repo, base: s.Base, pref: st.Config.Merge.PRMethod,
			actionsOnly: strings.EqualFold(in.orchestrator, ActionsLogin),
			title:       func(branch string) string { return fmt.Sprintf("Merge %s (bazinga step %s)", branch, in.step) }}
	}
	if h.Outcome == OutcomeResult {
		j.gha.Group("bazinga: check the change against " + s.Base + " and the group branch")
		err = p.prepare(ctx)
		j.gha.EndGroup()
		if err != nil {
			var he *HandOverError
			if errors.As(err, &he) {
				return j.refused(err)
			}
			return j.fail("checking the hand-over of "+in.step, err)
		}
	}

	j.gha.Group("bazinga: claim " + in.step)
	groupBranch := ""
	if g := s.Group(step.Group); g != nil {
		groupBranch = g.Branch
	}
	err = j.claim(ctx, s.Base, groupBranch, j.in.refName)
	j.gha.EndGroup()
	switch {
	case errors.Is(err, ghapi.ErrExists):
		j.gha.Noticef("bazinga: step %s is a duplicate: another job claimed it (%s exists); nothing to do", in.step, ClaimRef(in.step))
		j.out.set(in.step, StatusDuplicate, []string{"claimed by another job"})
		return 0
	case err != nil:
		return j.fail("claiming step "+in.step, err)
	}

	if h.Outcome == OutcomeFailure {
		fr := *h.Failure
		fr.RunURL = in.runURL
		j.gha.WithFieldsMap(map[string]string{"title": "bazinga: step " + in.step + " ended without a result"}).
			Errorf("%s; %s", oneLine(fr.Reason), failureNext(fr.Permanent))
		j.out.set(in.step, StatusFailed, []string{fr.Reason})
		if _, err := j.postComment(ctx, issue, s, step.Group, codec.RenderFailureComment(fr)); err != nil {
			j.gha.Warningf("bazinga: could not post the failure of %s: %v", in.step, err)
		}
		j.wake(ctx, issue, s.Base)
		return 1
	}

	j.gha.Group("bazinga: push")
	rec, err := p.push(ctx)
	j.gha.EndGroup()
	if err != nil {
		return j.fail("publishing "+in.step, err)
	}
	j.gha.Group("bazinga: post the result")
	// The result may spend the requests the transport keeps in reserve:
	// losing it would redo the step's work.
	where, err := j.postResult(ghapi.WithReserve(ctx), issue, s, rec)
	j.gha.EndGroup()
	if err != nil {
		return j.fail("posting the result of "+in.step, err)
	}
	res := rec.Result
	j.gha.Infof("%s", pipeline.Capsule(pipeline.Step{ID: in.step, Group: step.Group, StepSpec: pipeline.StepSpec{Role: step.Role, Model: step.Model},
		State: pipeline.StepDone, Result: &res}))
	j.log.Info("result posted", "status", res.Status.String(), "on", where)
	j.out.set(in.step, res.Status.String(), res.Summary)
	rep := stepexec.Report{Files: stepexec.FilesChanged(res), Usage: rec.Usage, Harness: rec.Harness}
	if t, ok := strings.CutPrefix(rec.Note, "tests: "); ok {
		rep.Tests = t
	}
	j.out.summary(renderSummary(*step, rep, &res, rec.StartedAt, rec.EndedAt, in.runURL))
	j.wake(ctx, issue, s.Base)
	return 0
}

// reportedFailure makes a privileged job that failed say so where the
// orchestrator reads it (issue 22): a 5xx, GitHub's transient 405 "Base
// branch was modified", a stale or refused hand-over, a refused push. It
// posts the failure on the issue as the step's failure record (the
// orchestrator sends the step again) and wakes the orchestrator; without
// it, in Action-only mode only the schedule would notice, since a run a
// GITHUB_TOKEN dispatched fires no workflow_run. Best effort: GitHub may be
// what failed.
func (j *job) reportedFailure(ctx context.Context, code int) int {
	if code == 0 || j.posted || j.in.orchestratorWorkflow == "" {
		// App mode: the bot hears of the failed run (workflow_run and
		// workflow_job webhooks) and sends the step again.
		return code
	}
	ref, ok := codec.ParseStepID(j.in.step)
	issue, err := strconv.Atoi(ref.Session)
	if !ok || err != nil || issue < 1 {
		return code
	}
	why := j.lastFail
	if why == "" {
		why = "it ended without publishing"
	}
	fr := codec.FailureRecord{Step: j.in.step, Role: ref.Role, Group: ref.Group, RunURL: j.in.runURL,
		Reason: "the " + j.in.command + " job failed: " + why}
	if _, err := j.gh.CreateComment(ghapi.WithReserve(ctx), j.in.repo, issue, codec.RenderFailureComment(fr)); err != nil {
		j.gha.Warningf("bazinga: could not post the failure of %s: %v", j.in.step, err)
	}
	j.wake(ctx, issue, j.in.refName)
	return code
}

// wake dispatches the Action-only orchestrator for the step's issue: what
// this job posted with its GITHUB_TOKEN starts no workflow, a dispatch does
// (the job needs actions: write). Best effort: the orchestrator's schedule
// catches up without it, later.
func (j *job) wake(ctx context.Context, issue int, ref string) {
	j.posted = true
	wf := j.in.orchestratorWorkflow
	if wf == "" {
		return
	}
	in := map[string]string{"issue": strconv.Itoa(issue)}
	err := j.gh.DispatchWorkflow(ctx, j.in.repo, wf, ref, in)
	if err != nil {
		// The base may have been renamed or deleted since the step began
		// (GitHub answers 422 "No ref found"): the default branch carries
		// the orchestrator's workflow too.
		if def, derr := j.gh.DefaultBranch(ctx, j.in.repo); derr == nil && def != ref {
			j.gha.Warningf("bazinga: could not dispatch the orchestrator on %s (%v); dispatching it on the default branch %s", ref, err, def)
			err = j.gh.DispatchWorkflow(ctx, j.in.repo, wf, def, in)
		}
	}
	if err != nil {
		j.gha.Warningf("bazinga: could not dispatch the orchestrator (%s) for #%d: %v; its schedule will catch up", wf, issue, err)
		return
	}
	j.gha.Infof("dispatched the orchestrator (%s) for #%d", wf, issue)
}

// checkUsage drops a hand-over's usage that is out of bounds, with a
// warning: what a step cost is reported, never a reason to refuse its work.
func (j *job) checkUsage(h *HandOver) {
	for _, u := range []**pipeline.Usage{usageOf(h.Result), usageOfFailure(h.Failure)} {
		if u == nil || *u == nil {
			continue
		}
		if err := (*u).Check(); err != nil {
			j.gha.Warningf("bazinga: step %s: %v; the usage is left out", j.in.step, err)
			*u = nil
		}
	}
}

func usageOf(r *codec.ResultRecord) **pipeline.Usage {
	if r == nil {
		return nil
	}
	return &r.Usage
}

// failureNext says what follows a step's failure, for the job's log.
func failureNext(permanent bool) string {
	if permanent {
		return "retrying will not fix it: bazinga pauses the session until the cause is fixed"
	}
	return "the job fails so that bazinga retries the step"
}

func usageOfFailure(f *codec.FailureRecord) **pipeline.Usage {
	if f == nil {
		return nil
	}
	return &f.Usage
}

// refused reports a hand-over the job will not publish.
func (j *job) refused(err error) int {
	j.gha.WithFieldsMap(map[string]string{"title": "bazinga: hand-over refused"}).Errorf("step %s: %s; nothing was pushed or posted", j.in.step, err.Error())
	j.out.set(j.in.step, StatusFailed, []string{err.Error()})
	j.log.Error("hand-over refused", "err", err)
	j.lastFail = "the hand-over was refused: " + err.Error()
	return 1
}

// checkIdentity: the hand-over is for this step, from the command that runs
// it, and its record names the step's role and group.
func checkIdentity(h HandOver, step pipeline.Step, command string) error {
	ref, _ := codec.ParseStepID(step.ID)
	want := commandOf(ref)
	if privilegedOf(ref) != command {
		return refuse("step %s is published with `command: %s`, not %s", step.ID, privilegedOf(ref), command)
	}
	if h.Step != step.ID {
		return refuse("it is for step %q, not %s", h.Step, step.ID)
	}
	if h.Command != want {
		return refuse("it comes from command %q; step %s is run by %s", h.Command, step.ID, want)
	}
	var rs, rg string
	var rr pipeline.Role
	switch {
	case h.Result != nil:
		rs, rr, rg = h.Result.Step, h.Result.Role, h.Result.Group
	case h.Failure != nil:
		rs, rr, rg = h.Failure.Step, h.Failure.Role, h.Failure.Group
	default:
		return nil
	}
	if rs != step.ID || rr != step.Role || rg != step.Group {
		return refuse("its record is for step %q (%s, group %q), not %s (%s, group %q)", rs, rr, rg, step.ID, step.Role, step.Group)
	}
	if h.Result != nil {
		st := h.Result.Result.Status
		_, allowed := pipeline.NormalizeStatus(step.Role, st)
		if !allowed && !(st == pipeline.StatusPartial && step.Role != pipeline.RoleMerge && step.Role != pipeline.RoleValidate) {
			return refuse("status %s is not one a %s reports", st, step.Role)
		}
		if len(h.Result.Result.Summary) > pipeline.MaxSummaryLines {
			return refuse("the summary has %d lines, over %d", len(h.Result.Result.Summary), pipeline.MaxSummaryLines)
		}
		if hr := h.Result.Harness; hr != nil {
			// Only the step the engine asked for a baseline may carry one.
			if hr.Baseline != nil && !step.Baseline {
				return refuse("step %s was not asked to take a baseline", step.ID)
			}
			if len(hr.Checks) > pipeline.MaxChecks {
				return refuse("%d check outcomes, over %d", len(hr.Checks), pipeline.MaxChecks)
			}
		}
	}
	switch {
	case h.Merge != nil && step.Role != pipeline.RoleMerge:
		return refuse("a %s step hands over no merge", step.Role)
	case h.Commit != nil && (step.Role == pipeline.RoleMerge || step.Role == pipeline.RoleValidate || step.Group == pipeline.LeadGroup):
		return refuse("a %s step of group %q hands over no change", step.Role, step.Group)
	case h.Commit != nil && step.Purpose == pipeline.PurposeDiagnostic:
		return refuse("a diagnostic step hands over no change")
	}
	return nil
}

// publisher checks and carries out one hand-over.
type publisher struct {
	j      *job
	s      pipeline.Session
	step   pipeline.Step
	h      HandOver
	files  []gitops.NewFile
	policy gitops.PathPolicy
	remote gitops.Remote
	dir    string
	// prs lands through the pull request (merge.method pull-request); api
	// reads the base's rules before a push (merge.method push).
	prs *prMerger
	api landAPI

	repo *git.Repository
	// branch, old, commit: what push sets (commit zero: nothing to push).
	branch      string
	old, commit plumbing.Hash
	// tested: a merge to land (base, head).
	tested *HandOverMerge
	// moved: the group branch is not at the reviewed head (issue 28);
	// nothing lands, the move is the result.
	moved *pipeline.HeadMove
}

// prepare checks the hand-over against the branches as they are now and
// builds what push will push.
func (p *publisher) prepare(ctx context.Context) error {
	h, s, st := p.h, p.s, p.step
	g := s.Group(st.Group)
	switch {
	case st.Role == pipeline.RoleValidate:
		// An ACCEPT is about the base as it was: it must still be so.
		cur, err := p.j.gh.GetRef(ctx, p.j.in.repo, "heads/"+s.Base)
		if err != nil {
			return fmt.Errorf("reading %s: %w", s.Base, err)
		}
		if h.Base != cur {
			return refuse("stale: validation ran on %s at %s, but %s is now at %s", s.Base, short(h.Base), s.Base, short(cur))
		}
		return nil
	case st.Role == pipeline.RoleMerge:
		return p.prepareLand(ctx, g)
	case g == nil || st.Group == pipeline.LeadGroup || st.Purpose == pipeline.PurposeDiagnostic:
		return nil // session-level and diagnostic steps change nothing
	}
	if h.Base == "" {
		return refuse("it names no base commit for group %s", g.ID)
	}
	repo, heads, err := gitops.FetchBare(ctx, p.remote, filepath.Join(p.dir, "repo"), s.Base, g.Branch)
	if err != nil {
		return err
	}
	p.repo, p.branch = repo, g.Branch
	base := plumbing.NewHash(h.Base)
	cur, exists := heads[g.Branch]
	switch {
	case exists && cur != base:
		return refuse("stale: the step started from %s at %s, but %s is now at %s", g.Branch, short(h.Base), g.Branch, short(cur.String()))
	case !exists && h.BranchExisted:
		return refuse("stale: %s was at %s when the step started and is gone now", g.Branch, short(h.Base))
	case !exists:
		// A new group branch starts on the base: its start must be a commit of the base.
		if ok, err := onBranch(repo, base, heads[s.Base]); err != nil || !ok {
			return refuse("the step started from %s, which is not a commit of %s", short(h.Base), s.Base)
		}
	}
	p.old = cur
	if h.Commit == nil {
		return nil
	}
	parents := []plumbing.Hash{base}
	if mp := h.Commit.MergeParent; mp != "" {
		ok, err := onBranch(repo, plumbing.NewHash(mp), heads[s.Base])
		if err != nil || !ok {
			return refuse("the merge parent %s is not a commit of %s", short(mp), s.Base)
		}
		parents = append(parents, plumbing.NewHash(mp))
		// Protected paths in the change must be exactly the base's (what the
		// merge brought in), never the agent's.
		for _, f := range p.files {
			if !p.policy.IsProtected(f.Path) {
				continue
			}
			ch := gitops.Change{Path: f.Path, Mode: f.Mode}
			if f.Mode != gitops.ChangeDelete {
				ch.Blob = gitops.BlobHash(f.Data)
			}
			if same, err := gitops.SameAs(repo, plumbing.NewHash(mp), ch); err != nil || !same {
				return refuse("%v", p.policy.Check(f.Path))
			}
		}
	}
	msg := stepexec.CommitMessage(st, h.Result.Result) + "\n\nBazinga-Step: " + st.ID
	commit, tree, err := gitops.CommitFiles(repo, p.files, gitops.CommitSpec{Parents: parents, Author: gitops.BotIdentity, Message: msg, When: p.j.d.Now()})
	if err != nil {
		return refuse("the change does not apply to %s at %s: %v", g.Branch, short(h.Base), err)
	}
	if tree.String() != h.Commit.Tree {
		return refuse("the change rebuilt on %s gives tree %s, not the %s the step committed", short(h.Base), short(tree.String()), short(h.Commit.Tree))
	}
	p.commit = commit
	return nil
}

// prepareLand checks a merge hand-over: only the head the tech lead
// approved may land, so a group branch found elsewhere makes the move the
// result (whatever the gate said); a tested merge must be of the reviewed
// head, still between the same two heads, and give the tested tree; a
// success without a merge (already merged) must be true now.
func (p *publisher) prepareLand(ctx context.Context, g *pipeline.Group) error {
	h, s := p.h, p.s
	if g == nil {
		return refuse("merge step %s names no group", p.step.ID)
	}
	status := h.Result.Result.Status
	success, moved := status == pipeline.StatusMergeSuccess, status == pipeline.StatusMergeHeadMoved
	if h.Merge == nil && !success && !moved {
		return nil // conflict, test failure, blocked: a result to post, nothing to land
	}
	if h.Merge != nil && !success {
		return refuse("a tested merge comes with status %s, not MERGE_SUCCESS", status)
	}
	repo, heads, err := gitops.FetchBare(ctx, p.remote, filepath.Join(p.dir, "repo"), s.Base, g.Branch)
	if err != nil {
		return err
	}
	p.repo = repo
	baseHead, head := heads[s.Base], heads[g.Branch]
	if head.IsZero() {
		return refuse("%s is gone", g.Branch)
	}
	if rh := g.ReviewedHead; rh != "" && head.String() != rh {
		// Someone pushed after review (before the gate, or between the gate
		// and this job): a fact to report, never a merge of what is there
		// now and never a retry of the same merge (issue 28). The move is
		// what this job reads of GitHub, not what the gate job says.
		mv := stepexec.HeadMove(ptr(gitops.DescribeMove(repo, plumbing.NewHash(rh), head)))
		p.moved = &mv
		return nil
	}
	if moved {
		return refuse("it says %s moved after review, but it is at the reviewed head %s", g.Branch, short(head.String()))
	}
	if h.Merge == nil {
		if ok, err := onBranch(repo, head, baseHead); err != nil || !ok || head.IsZero() {
			return refuse("it says %s is already merged, but %s is not contained in %s", g.Branch, short(head.String()), s.Base)
		}
		return nil
	}
	m := h.Merge
	if rh := g.ReviewedHead; rh != "" && m.Head != rh {
		return refuse("the gate tested %s at %s, not at the head the tech lead approved (%s)", g.Branch, short(m.Head), short(rh))
	}
	if baseHead.String() != m.Base || head.String() != m.Head {
		return refuse("stale: the gate tested %s at %s with %s at %s; they are now at %s and %s",
			s.Base, short(m.Base), g.Branch, short(m.Head), short(baseHead.String()), short(head.String()))
	}
	tree, err := mergedTree(repo, baseHead, head, s.Base, g.Branch, p.policy)
	if err != nil {
		return refuse("%v", err)
	}
	if tree.String() != m.Tree {
		return refuse("merging %s into %s gives tree %s, not the tested %s", g.Branch, s.Base, short(tree.String()), short(m.Tree))
	}
	p.tested = m
	if p.prs != nil {
		return nil // merged through the pull request at push time
	}
	msg := fmt.Sprintf("Merge group %s (%s) into %s\n\nSession %s.\n\nBazinga-Step: %s", g.ID, g.Name, s.Base, s.ID, p.step.ID)
	c, err := gitops.WriteCommit(repo, tree, []plumbing.Hash{baseHead, head}, gitops.BotIdentity, msg, p.j.d.Now())
	if err != nil {
		return err
	}
	p.branch, p.old, p.commit = s.Base, baseHead, c
	return nil
}

// push carries out what prepare checked and returns the record to post.
func (p *publisher) push(ctx context.Context) (codec.ResultRecord, error) {
	rec := *p.h.Result
	rec.Model, rec.RunURL = p.step.Model, p.j.in.runURL
	if p.moved != nil {
		return movedRecord(rec, p.step.Group, *p.moved), nil
	}
	if p.tested != nil && p.prs != nil {
		g := p.s.Group(p.step.Group)
		m := *p.prs
		base, head := plumbing.NewHash(p.tested.Base), plumbing.NewHash(p.tested.Head)
		if in, err := onBranch(p.repo, base, head); err == nil && !in {
			m.behind, m.update = true, func(ctx context.Context) (string, error) { return p.bringUpToDate(ctx, g, base, head) }
		}
		fr, updated, err := m.land(ctx, g.Branch, p.tested.Base, p.tested.Head)
		if err != nil {
			return rec, err
		}
		if updated != "" {
			return upToDate(rec, g.Branch, p.s.Base, updated), nil
		}
		if fr.Outcome == gitops.MergeHeadMoved {
			// GitHub refused the merge at the tested head (409): the pull
			// request's head moved after this job looked.
			mv, err := p.movedNow(ctx, g, head)
			if err != nil {
				return rec, err
			}
			return movedRecord(rec, g.ID, mv), nil
		}
		if fr.Retry {
			return rec, fmt.Errorf("%w: the base or the pull request moved after the gate; not merged", gitops.ErrStale)
		}
		return landed(rec, fr.Outcome, fr.Commit, fr.Reason), nil
	}
	if p.commit.IsZero() {
		if !p.old.IsZero() && p.tested == nil {
			rec.Head = p.old.String() // the step changed nothing: the head stays
		}
		return rec, nil
	}
	if p.tested != nil {
		// merge.method push: a base whose rules refuse a pushed merge commit
		// pauses with the rule named, rather than failing the push again
		// and again.
		if rules, err := p.api.BranchRules(ctx, p.j.in.repo, p.s.Base); err != nil {
			p.j.gha.Warningf("bazinga: could not read the rules of %s (%v); pushing", p.s.Base, err)
		} else if which := pushRulesOf(rules); which != "" {
			return landed(rec, gitops.MergeBlocked, plumbing.ZeroHash, pushRefusal(p.s.Base, which)), nil
		}
	}
	if err := gitops.PushCommit(ctx, p.repo, p.remote, p.commit, p.branch, p.old); err != nil {
		if msg, ok := protectedPush(err); ok && p.tested != nil {
			return landed(rec, gitops.MergeBlocked, plumbing.ZeroHash, pushRefusal(p.s.Base, msg)), nil
		}
		return rec, err
	}
	p.j.gha.Infof("pushed %s to %s", p.commit, p.branch)
	if p.tested != nil {
		return landed(rec, gitops.MergeSuccess, p.commit, ""), nil
	}
	rec.Head = p.commit.String()
	return rec, nil
}

// bringUpToDate pushes the tested merge of base and head (parents: the
// group head, then the base; the tree the gate tested) to the group branch,
// with compare-and-set on its head: a base that requires up-to-date heads
// merges only a head that contains it.
func (p *publisher) bringUpToDate(ctx context.Context, g *pipeline.Group, base, head plumbing.Hash) (string, error) {
	msg := fmt.Sprintf("Merge %s into %s\n\nThe base requires branches to be up to date before merging; this is the merge\nbazinga tested (session %s).\n\nBazinga-Step: %s", p.s.Base, g.Branch, p.s.ID, p.step.ID)
	c, err := gitops.WriteCommit(p.repo, plumbing.NewHash(p.tested.Tree), []plumbing.Hash{head, base}, gitops.BotIdentity, msg, p.j.d.Now())
	if err != nil {
		return "", err
	}
	if err := gitops.PushCommit(ctx, p.repo, p.remote, c, g.Branch, head); err != nil {
		return "", err
	}
	p.j.gha.Infof("pushed %s to %s: the base requires an up-to-date head", c, g.Branch)
	return c.String(), nil
}

// movedNow reads where the group branch is after GitHub said its head was
// modified, and who made that commit.
func (p *publisher) movedNow(ctx context.Context, g *pipeline.Group, tested plumbing.Hash) (pipeline.HeadMove, error) {
	repo, heads, err := gitops.FetchBare(ctx, p.remote, filepath.Join(p.dir, "moved"), p.s.Base, g.Branch)
	if err != nil {
		return pipeline.HeadMove{}, err
	}
	head := heads[g.Branch]
	if head.IsZero() {
		return pipeline.HeadMove{}, fmt.Errorf("%s is gone after GitHub refused its merge: %w", g.Branch, gitops.ErrBranchNotFound)
	}
	if head == tested {
		// The branch is where it was tested: GitHub's view of the pull
		// request lags its branch. The merge runs again.
		return pipeline.HeadMove{}, fmt.Errorf("%w: GitHub says the head of %s was modified, but it is at %s; not merged", gitops.ErrStale, g.Branch, short(head.String()))
	}
	return stepexec.HeadMove(ptr(gitops.DescribeMove(repo, tested, head))), nil
}

// movedRecord is a merge step's record when the group branch is not at the
// reviewed head: nothing was merged, and the move is the result.
func movedRecord(rec codec.ResultRecord, group string, m pipeline.HeadMove) codec.ResultRecord {
	rec.Result.Status = pipeline.StatusMergeHeadMoved
	rec.Result.Summary = []string{m.Sentence(group) + "; nothing was merged"}
	rec.Result.Handoff = m.Handoff()
	rec.Head = m.Head
	rec.Note = "" // the gate's tests were of the reviewed head's merge, which did not land
	return rec
}

func ptr[T any](v T) *T { return &v }

// upToDate is a merge step's record when the land job brought the group
// branch up to date instead of merging: the new head merges after its checks.
func upToDate(rec codec.ResultRecord, branch, base, head string) codec.ResultRecord {
	rec.Result.Status = pipeline.StatusMergeUpdated
	rec.Result.Summary = []string{fmt.Sprintf("%s brought up to date with %s at %s (the tested merge); it merges once its required checks pass", branch, base, short(head))}
	rec.Result.Handoff, _ = json.Marshal(map[string]any{"updated_head": head})
	rec.Head = head
	return rec
}

// landed is a merge step's record once the land job landed it (or GitHub
// refused): the gate could not know the merge commit.
func landed(rec codec.ResultRecord, outcome gitops.LandOutcome, commit plumbing.Hash, reason string) codec.ResultRecord {
	tests, _ := strings.CutPrefix(rec.Note, "tests: ")
	h := map[string]any{"attempts": 1}
	switch outcome {
	case gitops.MergeSuccess:
		rec.Result.Status = pipeline.StatusMergeSuccess
		sum := "merged as " + short(commit.String())
		if tests != "" {
			sum += "; " + tests
		}
		rec.Result.Summary = []string{sum}
		h["merge_commit"] = commit.String()
		h["already_merged"] = false
	default:
		rec.Result.Status = pipeline.StatusMergeBlocked
		rec.Result.Summary = []string{reason}
		h["reason"] = reason
	}
	rec.Result.Handoff, _ = json.Marshal(h)
	return rec
}

// onBranch tells whether commit is contained in head (both fetched).
func onBranch(repo *git.Repository, commit, head plumbing.Hash) (bool, error) {
	if commit.IsZero() || head.IsZero() {
		return false, nil
	}
	if _, err := repo.CommitObject(commit); err != nil {
		return false, err
	}
	return gitops.IsMerged(repo, commit, head)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
