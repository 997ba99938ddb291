package pipeline

import (
	"fmt"
	"strings"
	"time"
)

// StepGrace is how long past its timeout a step may stay silent before the
// engine declares it failed (a queued Actions job, a slow runner).
const StepGrace = 10 * time.Minute

// Reconcile is the engine: from the whole session, the events since the last
// call, the time and the configuration, it returns the next session and every
// action all tracks need. It is pure and deterministic: no I/O, no clock, no
// map iteration in what it produces, and the input session is not modified.
// A configuration with values the file would refuse (max_parallel 0, a limit
// out of range, a timeout that is not positive) is refused: the session comes
// back as it was, with one report action naming the values.
func Reconcile(in Session, events []Event, now time.Time, cfg Config) (Session, []Action) {
	if err := cfg.EngineError(); err != nil {
		// The file and the command line refuse such values; a hand-built
		// configuration is refused the same way, leaving the session as it was.
		r := &reconciler{s: in, rev: in.Rev + 1}
		r.report("refused to reconcile: %v", err)
		return in, r.actions
	}
	r := &reconciler{s: in.Clone(), now: now.UTC(), cfg: cfg, rev: in.Rev + 1}
	for _, ev := range events {
		r.apply(ev)
	}
	r.checkTimeouts()
	r.checkBudget()
	r.schedule()
	r.finish()
	return r.s, r.actions
}

type reconciler struct {
	s       Session
	now     time.Time
	cfg     Config
	rev     int
	actions []Action
	changed bool
	nActs   int
	// resend asks finish to send the steps in flight again (resume on a live
	// session); restart sends all of them, however recently they were sent.
	resend, restart bool
	// commit is the head the result being routed reported (Event.Commit).
	commit string
}

// pmLimit is how many pm steps may follow one another without a group
// merging before the session is declared failed.
func (r *reconciler) pmLimit() int {
	return 2*r.cfg.Limits.DeveloperIterations + len(r.s.Groups)
}

func (r *reconciler) add(a Action) {
	r.nActs++
	if a.ID == "" {
		a.ID = fmt.Sprintf("%s/%s/%d/%d", a.Kind, r.s.ID, r.rev, r.nActs)
	}
	r.actions = append(r.actions, a)
}

func (r *reconciler) report(format string, args ...any) {
	r.add(Action{Kind: ActionReport, Text: fmt.Sprintf(format, args...)})
}

func (r *reconciler) notify(kind NoticeKind, text string) {
	r.changed = true
	r.add(Action{Kind: ActionNotify, Notice: kind, Text: text})
}

func (r *reconciler) step(id string) *Step { return findStep(r.s.Steps, id) }

// track returns the track a step belongs to and its group (nil for the lead).
func (r *reconciler) track(st *Step) (*Track, *Group) {
	if st.Group == LeadGroup {
		return &r.s.Lead, nil
	}
	g := r.s.Group(st.Group)
	if g == nil {
		return nil, nil
	}
	return &g.Track, g
}

func (r *reconciler) apply(ev Event) {
	s := &r.s
	if ev.Kind == EventStarted {
		r.start(ev)
		return
	}
	if s.Status == SessionNew {
		r.report("ignored %s event: session %q has not started", ev.Kind, ev.Session)
		return
	}
	if ev.Session != s.ID {
		r.report("ignored %s event for session %q: this is session %q", ev.Kind, ev.Session, s.ID)
		return
	}
	switch ev.Kind {
	case EventStepResult:
		if ev.Result == nil {
			r.report("ignored result for step %s: it carries no result", ev.Step)
			r.metered(ev, false)
			return
		}
		// The usage counts whatever became of the step (issue 23): a result
		// that arrives after its step timed out, or from a job a retry
		// cancelled that ran on, was paid for all the same.
		r.metered(ev, r.result(ev))
	case EventStepFailed:
		applied := r.failed(ev.Step, ev.Reason, ev.Permanent)
		if applied {
			st := r.step(ev.Step)
			st.Took = Duration(measured(st, ev.StartedAt, ev.EndedAt, r.now))
		}
		r.metered(ev, applied)
	case EventCommand:
		r.command(ev)
	case EventHumanReview:
		r.humanReview(ev)
	case EventPRClosed:
		r.prClosed(ev)
	case EventChecks:
		r.checks(ev)
	case EventPushed:
		r.pushed(ev)
	case EventBranchDeleted:
		r.branchDeleted(ev)
	case EventPRReopened:
		r.prReopened(ev)
	case EventBaseRenamed:
		r.baseRenamed(ev)
	case EventHeld:
		r.held(ev)
	case EventTick:
		// Timeouts are checked on every reconcile.
	default:
		r.report("ignored event of unknown kind %q", string(ev.Kind))
	}
}

func (r *reconciler) start(ev Event) {
	s := &r.s
	if s.Status != SessionNew {
		if ev.Session != s.ID {
			r.report("ignored started event for session %q: this is session %q", ev.Session, s.ID)
		} else {
			r.report("ignored started event: session %s has already started", s.ID)
		}
		return
	}
	if !ValidSessionID(ev.Session) {
		r.report("refused to start session %q: ids are letters, digits, '.', '_' and '-', at most 64", ev.Session)
		return
	}
	r.changed = true
	*s = Session{Schema: SchemaVersion, ID: ev.Session, Requirements: BoundRequirements(ev.Requirements), Base: ev.Base,
		Status: SessionPlanning, StartedAt: r.now, Rev: s.Rev, RequirementsRef: startRef(ev)}
	switch {
	case strings.TrimSpace(ev.Requirements) == "":
		r.end(SessionFailed, "the session has no requirements")
	case strings.TrimSpace(ev.Base) == "":
		r.end(SessionFailed, "the session has no base branch")
	default:
		r.want(&s.Lead, nil, StepSpec{Role: RolePM, Purpose: PurposePlan})
	}
}

// startRef references a new session's full requirements (issue 27): the
// event's reference when it carries a bounded copy, else the text itself.
// A copy cut by an earlier version (no reference, the cut's note in it) is
// not the source text: such a session keeps its text, as it did.
func startRef(ev Event) *TextRef {
	switch {
	case ev.RequirementsRef != nil:
		ref := *ev.RequirementsRef
		ref.Step = ""
		return &ref
	case strings.TrimSpace(ev.Requirements) == "" || strings.Contains(ev.Requirements, RequirementsNote):
		return nil
	}
	return RefOf(ev.Requirements, "")
}

// inFlight finds a step in flight and its track, reporting (as "ignored
// <what> of step …") an event for any other step.
func (r *reconciler) inFlight(id, what string) (*Step, *Track, *Group, bool) {
	st := r.step(id)
	if st == nil {
		r.report("ignored %s of step %s: no such step", what, id)
		return nil, nil, nil, false
	}
	if st.State != StepInFlight {
		r.report("ignored %s of step %s: it is %s, not in flight", what, id, st.State)
		return nil, nil, nil, false
	}
	t, g := r.track(st)
	if t == nil {
		r.report("ignored %s of step %s: its group is gone", what, id)
		return nil, nil, nil, false
	}
	return st, t, g, true
}

// result applies the result of a step in flight (or of a cancelled merge
// whose redo was not sent yet), and reports whether it did.
func (r *reconciler) result(ev Event) bool {
	res, commit := *ev.Result, ev.Commit
	st, t, g, ok := r.lateMerge(ev.Step)
	if !ok {
		st, t, g, ok = r.inFlight(ev.Step, "the result")
	}
	if !ok {
		return false
	}
	r.changed = true
	status, allowed := NormalizeStatus(st.Role, res.Status)
	if status != res.Status {
		st.Reported = res.Status
		if !allowed {
			st.Note = fmt.Sprintf("status %s is not allowed for %s; counted as PARTIAL", res.Status, st.Role)
		}
	}
	res.Status = status
	res.Summary = boundSummary(res.Summary)
	res.Findings = nil
	if st.Role.Reviews() {
		res.Findings = Bound(ev.Result.Findings) // issue 26: untrusted, bounded again here
	}
	st.Result = &res
	st.State = StepDone
	st.EndedAt = r.now
	st.Took = Duration(measured(st, ev.StartedAt, ev.EndedAt, r.now))
	t.InFlight = ""
	t.Last = st.ID
	countResult(&t.Counters, st.StepSpec)
	if g != nil {
		staleChecks(g, st.Role, commit)
		r.headAfter(g, st.Role, commit)
	}
	r.commit = commit
	st.Routed = r.route(t, g, st)
	r.commit = ""
	boundHandoff(st) // issue 27: routed; keep what a prompt can show
	r.harness(st, g, ev.Harness)
	return true
}

// countResult counts a result against the stuck-detection limits. Only
// results count: a step cancelled by stop or retry, or one that ended without
// a result, did no iteration; a diagnostic is not an implementation iteration.
func countResult(c *Counters, spec StepSpec) {
	switch {
	case spec.Role.IsImplementer():
		if spec.Purpose != PurposeDiagnostic {
			c.Iterations++
		}
	case spec.Role == RoleQA:
		c.QAAttempts++
	case spec.Role == RoleTechLead && spec.Purpose == PurposeReview:
		c.ReviewAttempts++
	case spec.Role == RoleTechLead:
		c.GuidanceSteps++
	case spec.Role == RoleInvestigator:
		c.InvestigationIterations++
	}
}

// headAfter keeps human approvals bound to the group's code: a result naming
// a new head, or an implementation result naming none (the code may have
// changed), makes earlier approvals stale.
func (r *reconciler) headAfter(g *Group, role Role, commit string) {
	if (commit != "" && commit != g.Head) || (commit == "" && role.IsImplementer()) {
		r.newHead(g, commit)
	}
}

// lateMerge finds a merge step cancelled (by stop or retry) whose redo has not
// been sent yet: its result is the truth about the base, so it is applied
// rather than dropped and the merge is not sent again.
func (r *reconciler) lateMerge(id string) (*Step, *Track, *Group, bool) {
	st := r.step(id)
	if st == nil || st.State != StepCancelled || st.Role != RoleMerge {
		return nil, nil, nil, false
	}
	t, g := r.track(st)
	if g == nil || g.Stage.Finished() || t.InFlight != "" || t.Next == nil || t.Next.Role != RoleMerge {
		return nil, nil, nil, false
	}
	t.Next = nil
	st.Note += "; its result arrived after the cancellation and was applied"
	return st, t, g, true
}

// failed ends a step in flight without a result. A failure is retried as a
// new attempt; a permanent one (retrying cannot fix it) pauses the session at
// once.
func (r *reconciler) failed(id, reason string, permanent bool) bool {
	st, t, _, ok := r.inFlight(id, "the failure")
	if !ok {
		return false
	}
	if reason == "" {
		reason = "ended without a result"
	}
	r.changed = true
	st.State = StepFailed
	st.EndedAt = r.now
	st.Note = reason
	t.InFlight = ""
	if permanent {
		st.Routed = r.holdForHuman(t, st, reason)
	} else {
		st.Routed = r.retry(t, st, reason)
	}
	return true
}

// holdForHuman pauses the session for a failure that retrying cannot fix,
// spending no attempt: the same work waits as the track's next step and runs
// again after resume (or retry), once a human fixed the cause.
func (r *reconciler) holdForHuman(t *Track, st *Step, reason string) string {
	spec := st.StepSpec
	t.Next = &spec
	t.Stage = StageBlocked
	r.pause(fmt.Sprintf("step %s failed and retrying will not fix it: %s; fix the cause, then resume or retry",
		st.ID, reason))
	return "paused"
}

// retry asks for the same work again as a new attempt; past the limit the
// session pauses with a report naming the step.
func (r *reconciler) retry(t *Track, st *Step, reason string) string {
	spec := st.StepSpec
	spec.Attempt++
	t.Next = &spec
	if spec.Attempt > r.cfg.Limits.StepAttempts {
		t.Stage = StageBlocked
		r.pause(fmt.Sprintf("step %s failed %d times (last: %s); fix the cause, then resume or retry",
			st.ID, spec.Attempt-1, reason))
		return "paused"
	}
	return fmt.Sprintf("retry %d/%d", spec.Attempt, r.cfg.Limits.StepAttempts)
}

func (r *reconciler) pause(reason string) {
	s := &r.s
	if s.Status.Terminal() {
		return
	}
	r.changed = true
	if s.Status == SessionPaused {
		if !strings.Contains(s.Reason, reason) {
			s.Reason += "; " + reason
		}
	} else {
		s.Status = SessionPaused
		s.Reason = reason
	}
	r.add(Action{Kind: ActionPause, Text: reason})
}

// end finishes the session. In-flight steps of a stopped session are
// cancelled but remembered as the tracks' next steps, so resume can redo them.
func (r *reconciler) end(status SessionStatus, reason string) {
	s := &r.s
	r.changed = true
	s.Status = status
	s.Reason = reason
	s.CompletedAt = r.now
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.State != StepInFlight {
			continue
		}
		r.cancel(st, "session "+status.String())
	}
	r.add(Action{Kind: ActionComplete, Status: status, Text: reason})
}

// cancel withdraws a step in flight; its track will redo the same work.
func (r *reconciler) cancel(st *Step, why string) {
	st.State = StepCancelled
	st.EndedAt = r.now
	st.Note = why
	st.Routed = "cancelled"
	if t, _ := r.track(st); t != nil && t.InFlight == st.ID {
		t.InFlight = ""
		spec := st.StepSpec
		spec.Attempt = 1
		t.Next = &spec
	}
	r.add(Action{Kind: ActionCancel, ID: "cancel/" + st.ID, Step: st.ID, Group: st.Group, Role: st.Role, Text: why})
}

func (r *reconciler) command(ev Event) {
	s := &r.s
	c := ev.Command
	if c == nil {
		r.report("ignored command event without a command")
		return
	}
	who := ev.Actor
	if who == "" {
		who = "someone"
	}
	switch c.Kind {
	case CommandStop:
		if s.Status.Terminal() {
			r.notify(NoticeInfo, fmt.Sprintf("The session is already %s.", s.Status))
			return
		}
		r.end(SessionStopped, "stopped by "+who)
	case CommandPause:
		if s.Status.Terminal() || s.Status == SessionPaused {
			r.report("ignored pause: session is %s", s.Status)
			return
		}
		reason := c.Text
		if reason == "" {
			reason = "paused by " + who
		}
		r.pause(reason)
	case CommandResume:
		// Commands in one call compose (issue 23): a plain resume after a
		// restart does not take back that the steps in flight were lost.
		r.restart = r.restart || c.Restart
		// A resume that names the open checkpoint approves it (issue 13).
		if r.approve(who, c) && !s.Status.Terminal() && s.Status != SessionPaused {
			return
		}
		r.resume(who)
		if cp := s.Checkpoint; cp != nil && s.Status != SessionDone {
			r.notify(NoticeInfo, cp.ID+" still waits for approval.")
		}
	case CommandApprove:
		r.approve(who, c)
	case CommandRetry:
		r.retryCommand(who, c.Group)
	case CommandAnswer:
		if msg := AnswerTooLong(strings.TrimSpace(c.Text)); msg != "" && (s.Clarification != nil || s.Checkpoint != nil) {
			r.notify(NoticeInfo, msg) // issue 27: the text would enter the session
			return
		}
		r.answerCommand(who, c)
	default:
		r.report("ignored unknown command %q", string(c.Kind))
	}
}

// ResendAfter is how long a step must have been in flight before a plain
// resume sends it again: a step sent a moment ago is most likely still
// starting, and every copy sent starts a job.
const ResendAfter = time.Minute

// resume restarts a paused, stopped or failed session; on a live session it
// re-sends the steps in flight that were sent at least ResendAfter ago, or
// all of them on a restart (their ids make duplicates harmless).
func (r *reconciler) resume(who string) {
	s := &r.s
	switch s.Status {
	case SessionDone:
		r.notify(NoticeInfo, "The session is done; there is nothing to resume.")
		return
	case SessionPaused, SessionStopped, SessionFailed:
		r.changed = true
		s.Status = r.liveStatus()
		s.Reason = ""
		s.CompletedAt = time.Time{}
		s.PMStreak = 0
		r.freshAttempts()
		r.restartChecksClocks()
		r.notify(NoticeInfo, "Resumed by "+who+"."+r.acceptBaseline(who))
	default:
		// finish sends the steps still in flight again.
		r.resend = true
		var recent []string
		for _, st := range s.Steps {
			if st.State == StepInFlight && !r.restart && r.now.Sub(st.DispatchedAt) < ResendAfter {
				recent = append(recent, st.ID)
			}
		}
		if len(recent) == 0 {
			r.notify(NoticeInfo, fmt.Sprintf("Resumed by %s: the steps in flight are sent again.", who))
			return
		}
		r.notify(NoticeInfo, fmt.Sprintf("Resumed by %s: the steps in flight for at least %s are sent again; %s were sent less than %s ago and are left to run.",
			who, ResendAfter, strings.Join(recent, ", "), ResendAfter))
	}
}

// liveStatus is the status a session returns to when it runs again.
func (r *reconciler) liveStatus() SessionStatus {
	s := &r.s
	switch {
	case s.Clarification != nil, s.Checkpoint != nil:
		return SessionAwaitingInput
	case len(s.Groups) == 0:
		return SessionPlanning
	case s.Lead.Next != nil && s.Lead.Next.Role == RoleValidate:
		return SessionValidating
	}
	for _, st := range s.Steps {
		if st.State == StepInFlight && st.Role == RoleValidate {
			return SessionValidating
		}
	}
	return SessionRunning
}

// freshAttempts gives every waiting step its attempts back after a human
// intervened.
func (r *reconciler) freshAttempts() {
	reset := func(t *Track) {
		if t.Next != nil && t.Next.Attempt > 1 {
			t.Next.Attempt = 1
		}
	}
	reset(&r.s.Lead)
	for i := range r.s.Groups {
		reset(&r.s.Groups[i].Track)
	}
}

func (r *reconciler) retryCommand(who, group string) {
	s := &r.s
	if group == "" {
		r.resume(who)
		return
	}
	g := s.Group(group)
	if g == nil {
		r.notify(NoticeInfo, fmt.Sprintf("There is no group %q in this session.", group))
		return
	}
	if r.branchRestored(g, who) {
		return
	}
	r.changed = true
	switch {
	case g.Stage == StageMerged:
		r.notify(NoticeInfo, fmt.Sprintf("Group %s is already merged.", g.ID))
		return
	case g.Stage == StageAbandoned:
		g.Counters = Counters{}
		g.Stage = StagePending
		g.Abandoned = nil
		r.want(&g.Track, g, StepSpec{Role: r.implementer(g), Purpose: PurposeImplement,
			Feedback: "The group was abandoned and " + who + " asked to retry it."})
	case g.InFlight != "":
		if st := r.step(g.InFlight); st != nil {
			r.cancel(st, "retried by "+who)
		}
	case g.Next != nil:
		g.Next.Attempt = 1
	default:
		// Waiting on the pm, its phase or its dependencies. A human overrides the
		// pm (the counters restart, abandoned dependencies are dropped as the pm
		// would), never the order: schedule starts the group in its turn.
		if g.Wait == WaitPM {
			g.Counters = Counters{}
		}
		g.DependsOn = r.liveDeps(g)
		purpose := PurposeRevise
		if !g.Started {
			purpose = PurposeImplement
		}
		r.want(&g.Track, g, StepSpec{Role: r.implementer(g), Purpose: purpose,
			Feedback: who + " asked to retry the group."})
	}
	if s.Status == SessionPaused || s.Status == SessionStopped || s.Status == SessionFailed {
		r.resume(who)
		return
	}
	r.notify(NoticeInfo, fmt.Sprintf("Retrying group %s (asked by %s).", g.ID, who))
}

// answerCommand applies a human's answer to what its author saw (issue 23):
// the open question, or feedback on the open checkpoint. An answer bound
// to something that no longer waits is refused, saying why, and changes
// nothing.
func (r *reconciler) answerCommand(who string, c *Command) {
	s := &r.s
	cl, cp := s.Clarification, s.Checkpoint
	if cl != nil && (c.Question == "" || c.Question == cl.Step) {
		if strings.TrimSpace(c.Text) == "" {
			r.notify(NoticeInfo, "The answer is empty; nothing was sent to the pm.")
			return
		}
		r.answer(fmt.Sprintf("Answer from %s: %s", who, strings.TrimSpace(c.Text)))
		return
	}
	if cp != nil && (c.Checkpoint == "" && cl == nil || c.Checkpoint == cp.ID) {
		r.feedback(who, c.Text) // issue 13: feedback on the plan or phase waiting
		return
	}
	switch {
	case cl != nil:
		r.notify(NoticeInfo, fmt.Sprintf("The answer by %s was written before the pm asked %q; it does not answer it. Read the question, then answer again.",
			who, foldLine(cl.Question, 120)))
	case cp != nil:
		r.notify(NoticeInfo, r.staleFeedback(who, c.Checkpoint, cp))
	default:
		r.notify(NoticeInfo, "No question is waiting for an answer.")
	}
}

// answer resolves the open clarification: the pm continues with the text.
func (r *reconciler) answer(text string) {
	s := &r.s
	cl := s.Clarification
	r.changed = true
	s.Clarification = nil
	if s.Status == SessionAwaitingInput && s.Checkpoint == nil {
		s.Status = cl.Resume
	}
	r.want(&s.Lead, nil, StepSpec{Role: RolePM, Purpose: PurposeAnswered, From: cl.Step,
		Feedback: "You asked: " + cl.Question + "\n" + text})
}

func (r *reconciler) humanReview(ev Event) {
	g := r.s.Group(ev.Group)
	if g == nil {
		r.report("ignored review of unknown group %q", ev.Group)
		return
	}
	if ev.Actor == "" {
		r.report("ignored review of group %s without a reviewer", g.ID)
		return
	}
	r.changed = true
	g.Approvals = removeString(g.Approvals, ev.Actor)
	switch ev.Review {
	case ReviewApproved:
		if ev.Commit != "" && g.Head != "" && ev.Commit != g.Head {
			r.report("approval of group %s by %s not counted: it is for commit %s, the head is %s", g.ID, ev.Actor, ev.Commit, g.Head)
			return
		}
		g.Approvals = insertSorted(g.Approvals, ev.Actor)
	case ReviewChangesRequested:
		if g.Stage.Finished() || g.InFlight != "" {
			return
		}
		if g.Next != nil && g.Next.Role == RoleMerge {
			g.Counters.Revisions++
			r.want(&g.Track, g, StepSpec{Role: r.implementer(g), Purpose: PurposeFixReview,
				Feedback: "Changes requested by " + ev.Actor + ": " + BoundReviewBody(ev.Body)})
		}
	}
}

func (r *reconciler) prClosed(ev Event) {
	g := r.s.Group(ev.Group)
	if g == nil {
		r.report("ignored closure of the PR of unknown group %q", ev.Group)
		return
	}
	if g.Stage.Finished() {
		return
	}
	r.changed = true
	if g.InFlight != "" {
		if st := r.step(g.InFlight); st != nil {
			r.cancel(st, "group PR closed")
		}
	}
	g.Next = nil
	if ev.Merged {
		r.merged(g)
		g.MergeCommit = ev.Commit
		return
	}
	who := ev.Actor
	if who == "" {
		who = "a human"
	}
	g.Stage = StageAbandoned
	g.Abandoned = &Abandonment{By: who}
	r.s.Inbox = append(r.s.Inbox, Note{Group: g.ID, Urgent: true,
		Text: fmt.Sprintf("Group %s was abandoned: its PR was closed without merging by %s.", g.ID, who)})
}

func (r *reconciler) merged(g *Group) {
	g.Stage = StageMerged
	g.Checks = nil // merged code is the base's now; keep the state small
	g.Pushed = nil
	g.Next = nil
	g.Wait = WaitNone
	g.WaitDetail = ""
	r.s.PMStreak = 0
}

// checkTimeouts fails steps silent past their deadline and answers an
// expired clarification with the pm's fallback.
func (r *reconciler) checkTimeouts() {
	s := &r.s
	if s.Status == SessionNew || s.Status.Terminal() {
		return
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.State != StepInFlight {
			continue
		}
		limit := r.stepTimeout(st.StepSpec)
		if r.now.Sub(st.DispatchedAt) > limit+st.Held.D() {
			r.failed(st.ID, fmt.Sprintf("no result within %s", limit), false)
		}
	}
	r.checksTimeouts()
	if cl := s.Clarification; cl != nil && !r.now.Before(cl.Deadline) {
		fallback := cl.Fallback
		if fallback == "" {
			fallback = "the safest reasonable choice"
		}
		r.answer(fmt.Sprintf("No answer came within %s. Use your safe fallback: %s", cl.Deadline.Sub(cl.AskedAt), fallback))
	}
}

func (r *reconciler) stepTimeout(spec StepSpec) time.Duration {
	switch spec.Role {
	case RoleMerge:
		// Landing may test up to three times when the base moves.
		return 3*r.cfg.Tests.Timeout.D() + StepGrace
	case RoleValidate:
		return r.cfg.Tests.Timeout.D() + r.cfg.Agent.Timeout.D() + StepGrace
	}
	if spec.Baseline {
		// The baseline runs beside the agent; the step ends when both have.
		return max(r.cfg.Agent.Timeout.D(), r.cfg.Tests.Timeout.D()) + StepGrace
	}
	return r.cfg.Agent.Timeout.D() + StepGrace
}

func removeString(list []string, s string) []string {
	out := list[:0:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func insertSorted(list []string, s string) []string {
	for i, x := range list {
		if x == s {
			return list
		}
		if x > s {
			out := append(append(append([]string(nil), list[:i]...), s), list[i:]...)
			return out
		}
	}
	return append(list, s)
}

// Held is the event of a front-end held off GitHub from from to to (a rate
// limit's wait): nothing could be read or dispatched then.
func Held(session string, from, to time.Time) Event {
	return Event{Kind: EventHeld, Session: session, StartedAt: from, EndedAt: to}
}

// held moves the deadlines of the steps in flight by the part of the hold
// they spent in flight: a step is not silent while its result cannot be
// read or its run was never sent.
func (r *reconciler) held(ev Event) {
	if ev.StartedAt.IsZero() || !ev.EndedAt.After(ev.StartedAt) || ev.EndedAt.After(r.now) {
		r.report("ignored a hold from %s to %s", ev.StartedAt.Format(time.RFC3339), ev.EndedAt.Format(time.RFC3339))
		return
	}
	for i := range r.s.Steps {
		st := &r.s.Steps[i]
		if st.State != StepInFlight {
			continue
		}
		from := ev.StartedAt
		if st.DispatchedAt.After(from) {
			from = st.DispatchedAt
		}
		if d := ev.EndedAt.Sub(from); d > 0 {
			st.Held += Duration(d)
			r.changed = true
		}
	}
}
