package bot

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// dispatchGrace is how long a dispatch may stay invisible in the run list
// before a later reconcile sends it again: GitHub creates the run of a
// workflow_dispatch asynchronously, seconds after answering. A dispatch sent
// twice is harmless (the second job finds the step claimed), only wasteful.
const dispatchGrace = time.Minute

// executor carries out one reconcile against GitHub: it confirms the outbox
// of earlier reconciles, converges the views, writes the state with the
// outbox, then carries the outbox out.
type executor struct {
	b    *Bot
	gh   GitHub
	ref  sessionRef
	st   *codec.State
	in   input
	now  time.Time
	log  *slog.Logger
	errs []error
	// baseSHA caches the base head for branch creation.
	baseSHA string
	// issues caches issue reads; comments the comment lists read, by number.
	issues   map[int]ghapi.Issue
	comments map[int][]ghapi.Comment
	runs     []ghapi.Run
	runsRead bool
	// failed are the effects whose call failed in this reconcile.
	failed []string
}

func (x *executor) fail(err error) {
	x.errs = append(x.errs, err)
}

// enqueue adds an effect to the outbox; asked for again (a resume sends the
// steps in flight again), it is carried out again.
func (x *executor) enqueue(e codec.PendingEffect) {
	for i := range x.st.Pending {
		if x.st.Pending[i].ID == e.ID {
			x.st.Pending[i].At = x.now
			return
		}
	}
	if e.At.IsZero() {
		e.At = x.now
	}
	x.st.Pending = append(x.st.Pending, e)
}

// commentsOf lists the comments of an issue or PR once per reconcile.
func (x *executor) commentsOf(ctx context.Context, number int) ([]ghapi.Comment, error) {
	if cs, ok := x.comments[number]; ok {
		return cs, nil
	}
	cs, err := x.gh.ListComments(ctx, x.ref.repo, number)
	if err != nil {
		return nil, err
	}
	if x.comments == nil {
		x.comments = map[int][]ghapi.Comment{}
	}
	x.comments[number] = cs
	return cs, nil
}

// stepRuns lists the agent workflow's runs once per reconcile.
func (x *executor) stepRuns(ctx context.Context) ([]ghapi.Run, error) {
	if x.runsRead {
		return x.runs, nil
	}
	runs, err := x.gh.ListRuns(ctx, x.ref.repo, x.workflow())
	if err != nil {
		return nil, err
	}
	x.runs, x.runsRead = runs, true
	return runs, nil
}

func (x *executor) workflow() string { return agentWorkflow(x.st.Config) }

// runsOf returns the runs whose title carries step.
func runsOf(runs []ghapi.Run, step string) []ghapi.Run {
	var out []ghapi.Run
	for _, r := range runs {
		if id, _, ok := codec.StepInText(r.Title); ok && id == step {
			out = append(out, r)
		}
	}
	return out
}

// confirm drops the outbox's effects that GitHub shows done, or that no
// longer matter, and marks the ones to carry out again. It runs before the
// reconcile adds its own.
func (x *executor) confirm(ctx context.Context) {
	var keep []codec.PendingEffect
	for _, p := range x.st.Pending {
		done, err := x.isDone(ctx, p)
		if err != nil {
			// Unknown: keep it; carrying it out again is safe.
			x.log.Info("outbox: could not check an effect", "effect", p.ID, "err", err)
		}
		if !done {
			keep = append(keep, p)
		}
	}
	x.st.Pending = keep
}

func (x *executor) isDone(ctx context.Context, p codec.PendingEffect) (bool, error) {
	switch p.Kind {
	case codec.EffectDispatch:
		if st := x.st.Session.Step(p.Step); st == nil || st.State != pipeline.StepInFlight {
			return true, nil // its result came, or it was withdrawn
		}
		runs, err := x.stepRuns(ctx)
		if err != nil {
			return false, err
		}
		return len(runsOf(runs, p.Step)) > 0, nil
	case codec.EffectCancel:
		runs, err := x.stepRuns(ctx)
		if err != nil {
			return false, err
		}
		for _, r := range runsOf(runs, p.Step) {
			if r.Status != "completed" {
				return false, nil
			}
		}
		return true, nil
	case codec.EffectComment:
		cs, err := x.commentsOf(ctx, p.Number)
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			if x.b.own(c.Author) && codec.HasEffectMarker(c.Body, p.ID) {
				return true, nil
			}
		}
		return false, nil
	case codec.EffectReview:
		return x.reviewDone(ctx, p)
	case codec.EffectResolve:
		return x.resolveDone(ctx, p)
	case codec.EffectIssue:
		return x.followUpDone(ctx, p)
	case codec.EffectLabels:
		if p.Label != x.st.IssueLabel {
			return true, nil // superseded by a newer label
		}
		cur, err := x.labelsOf(ctx, x.ref.issue)
		if err != nil {
			return false, err
		}
		return hasOnlyLabel(cur, IssueLabels(), p.Label), nil
	case codec.EffectClose:
		is, err := x.issue(ctx, x.ref.issue)
		if err != nil {
			return false, err
		}
		return is.State == "closed", nil
	}
	return true, nil // a kind this bazinga does not know: drop it
}

// redispatch sends again the steps a rebuild found in flight that no run
// is working on: the replay starts steps but the dispatches of the
// reconciles it replays are not in the log, and a job that ran while the
// state was missing ended without a result. A step whose run failed is
// left to that failure, and one with a run queued or running to its run.
func (x *executor) redispatch(ctx context.Context, prev pipeline.Session) {
	var ids []string
	for _, s := range x.st.Session.Steps {
		if old := prev.Step(s.ID); s.State == pipeline.StepInFlight && old != nil && old.State == pipeline.StepInFlight {
			ids = append(ids, s.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	runs, err := x.stepRuns(ctx)
	if err != nil {
		x.log.Info("rebuild: could not list runs; the steps in flight wait for theirs", "err", err)
		return
	}
	for _, id := range ids {
		busy := false
		for _, r := range runsOf(runs, id) {
			if r.Status != "completed" || (r.Conclusion != "success" && r.Conclusion != "skipped") {
				busy = true
			}
		}
		if busy {
			continue
		}
		// A claimed step was published by a job (its result or failure is
		// posted, or was deleted since): sent again, its job would only
		// find the claim. Its result comes, or its timeout decides.
		if _, err := x.gh.GetRef(ctx, x.ref.repo, codec.ClaimRefPrefix+id); err == nil {
			continue
		}
		ref, _ := codec.ParseStepID(id)
		x.log.Warn("rebuild: sending a step in flight again, no run works on it", "step", id)
		x.enqueue(codec.PendingEffect{ID: "dispatch/" + id, Kind: codec.EffectDispatch, Step: id, Group: ref.Group})
	}
}

// carryOut does the outbox's effects in order. Dispatches, cancels and
// comments are independent; the issue's label and closing wait for all of
// them, so a session with an effect left undone keeps its old label.
func (x *executor) carryOut(ctx context.Context) {
	blocked := false
	for _, p := range x.st.Pending {
		var err error
		switch p.Kind {
		case codec.EffectDispatch:
			if st := x.st.Session.Step(p.Step); st == nil || st.State != pipeline.StepInFlight {
				continue
			}
			if !p.Failed && p.At.Before(x.now) && x.now.Sub(p.At) < dispatchGrace {
				continue // sent by an earlier reconcile moments ago; its run may not show yet
			}
			err = x.gh.DispatchWorkflow(ctx, x.ref.repo, x.workflow(), x.st.Session.Base, map[string]string{"step": p.Step})
			if err == nil {
				x.log.Info("dispatched", "step", p.Step)
			}
		case codec.EffectCancel:
			x.cancel(ctx, p.Step)
		case codec.EffectComment:
			_, err = x.gh.CreateComment(ctx, x.ref.repo, p.Number, p.Text+"\n"+codec.EffectMarker(p.ID))
		case codec.EffectReview:
			err = x.postReview(ctx, p)
		case codec.EffectResolve:
			err = x.resolveThreads(ctx, p)
		case codec.EffectIssue:
			err = x.openFollowUp(ctx, p)
		case codec.EffectLabels:
			if blocked || p.Label != x.st.IssueLabel {
				continue
			}
			var cur []string
			if cur, err = x.labelsOf(ctx, x.ref.issue); err == nil {
				err = x.gh.ReplaceLabels(ctx, x.ref.repo, x.ref.issue, withLabel(cur, IssueLabels(), p.Label))
			}
		case codec.EffectClose:
			if blocked {
				continue
			}
			err = x.gh.CloseIssue(ctx, x.ref.repo, x.ref.issue)
		}
		if err != nil {
			x.fail(fmt.Errorf("%s %s: %w", p.Kind, p.ID, err))
			x.failed = append(x.failed, p.ID)
			blocked = true
		}
	}
}

// recordFailures writes the state again when effects failed, marking them,
// so the next reconcile does them again at once. Best effort: without it
// they are done again once GitHub shows them missing.
func (x *executor) recordFailures(ctx context.Context, commentID int64, key ed25519.PrivateKey) {
	if len(x.failed) == 0 || commentID == 0 {
		return
	}
	for i := range x.st.Pending {
		if slices.Contains(x.failed, x.st.Pending[i].ID) {
			x.st.Pending[i].Failed = true
		}
	}
	body, err := fitTracking(*x.st, x.st.RepoURL, key)
	if err == nil {
		_, err = x.gh.EditComment(ctx, x.ref.repo, commentID, body)
	}
	if err != nil {
		x.log.Info("outbox: could not record failed effects", "err", err)
	}
}

// cancel withdraws a step's run, best effort: its result is ignored anyway.
func (x *executor) cancel(ctx context.Context, step string) {
	runs, err := x.stepRuns(ctx)
	if err != nil {
		x.log.Info("cancel: listing runs failed", "step", step, "err", err)
		return
	}
	for _, r := range runsOf(runs, step) {
		if r.Status != "completed" {
			if err := x.gh.CancelRun(ctx, x.ref.repo, r.ID); err != nil {
				x.log.Info("cancel failed", "step", step, "run", r.ID, "err", err)
			}
		}
	}
}

// write writes the tracking comment when its body changed: an edit of the
// comment load found, else a new comment. An edit is sent again once when
// it fails (the same body twice is harmless); a failed create is checked
// against the issue's comments before it is tried again, so there is never
// a second tracking comment.
func (x *executor) write(ctx context.Context, ld loaded, body string) (int64, error) {
	id := ld.commentID
	if body == ld.body && id != 0 {
		return id, nil
	}
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if id != 0 {
			_, err = x.gh.EditComment(ctx, x.ref.repo, id, body)
			if errors.Is(err, ghapi.ErrNotFound) {
				id = 0 // deleted: write it again
			} else if err == nil {
				return id, nil
			}
			continue
		}
		if attempt > 0 {
			cs, lerr := x.gh.ListComments(ctx, x.ref.repo, x.ref.issue)
			if lerr != nil {
				return 0, fmt.Errorf("write tracking comment: %w (then: %w)", err, lerr)
			}
			for _, c := range cs {
				if x.b.own(c.Author) && c.Body == body {
					return c.ID, nil // the failed create went through
				}
			}
		}
		var c ghapi.Comment
		c, err = x.gh.CreateComment(ctx, x.ref.repo, x.ref.issue, body)
		if err == nil {
			return c.ID, nil
		}
	}
	return 0, fmt.Errorf("write tracking comment: %w", err)
}
