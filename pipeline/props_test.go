package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The one property checker. The unit-test harness, the simulator and the
// fuzz target all call checkTransition after every Reconcile, so a promise
// is checked the same way whoever drives the engine.

// transition is one Reconcile call: what went in and what came out.
type transition struct {
	before Session
	events []Event
	now    time.Time
	cfg    Config
	after  Session
	acts   []Action
}

// checkTransition returns every promise the call broke:
//   - the liveness invariant (CheckLiveness), which includes the cap over
//     every implementation step in flight, the session lead's diagnostics too;
//   - no group starts before its phase is current, and no group step is
//     dispatched before the group's dependencies merged;
//   - a paused or ended session dispatches nothing and does not come back to
//     life until a human resumes (or retries) it;
//   - a group leaves the session only by a recorded decision that names it
//     (checkGroupsKept);
//   - stuck-detection counters grow only by results of the track's own steps;
//   - no step is dispatched past a limit: step attempts, implementation
//     iterations, QA attempts, reviews, guidance, investigations, pm rounds.
func checkTransition(tr transition) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if err := CheckLiveness(tr.after, tr.cfg); err != nil {
		errs = append(errs, err)
	}
	b, a, lim := &tr.before, &tr.after, tr.cfg.Limits

	humanRestart := false
	for _, ev := range tr.events {
		if ev.Kind == EventCommand && ev.Command != nil && (ev.Command.Kind == CommandResume || ev.Command.Kind == CommandRetry) {
			humanRestart = true
		}
	}
	live := func(s SessionStatus) bool { return s != SessionNew && s != SessionPaused && !s.Terminal() }
	if b.Status != SessionNew && !live(b.Status) && live(a.Status) && !humanRestart {
		fail("session went from %s to %s without a resume", b.Status, a.Status)
	}
	// A pause or stop holds against every later event of the same call but a resume.
	held := ""
	for _, ev := range tr.events {
		if ev.Kind != EventCommand || ev.Command == nil {
			continue
		}
		switch ev.Command.Kind {
		case CommandPause, CommandStop:
			held = ev.Command.Kind.String()
		case CommandResume, CommandRetry:
			held = ""
		}
	}
	if held != "" && b.Status != SessionNew && live(a.Status) {
		fail("session is %s after a %s with no resume after it", a.Status, held)
	}

	checkFindingsTransition(tr, fail)

	var dispatched []Step
	for _, act := range tr.acts {
		if act.Kind != ActionDispatch {
			continue
		}
		st := a.Step(act.Step)
		if st == nil {
			fail("dispatch of unknown step %s", act.Step)
			continue
		}
		dispatched = append(dispatched, *st)
	}
	if len(dispatched) > 0 && !live(a.Status) {
		fail("session %s dispatched %d step(s), e.g. %s", a.Status, len(dispatched), dispatched[0].ID)
	}

	errs = append(errs, checkCheckpoints(tr, dispatched)...)

	lowestOpen := 0 // the lowest phase with an unfinished group
	for _, g := range a.Groups {
		if !g.Stage.Finished() && (lowestOpen == 0 || g.Phase < lowestOpen) {
			lowestOpen = g.Phase
		}
	}
	for _, st := range dispatched {
		if st.Attempt > lim.StepAttempts {
			fail("step %s dispatched as attempt %d, limit %d", st.ID, st.Attempt, lim.StepAttempts)
		}
		var c Counters
		if st.Group == LeadGroup {
			c = a.Lead.Counters
		} else {
			g := a.Group(st.Group)
			if g == nil {
				fail("step %s dispatched for unknown group", st.ID)
				continue
			}
			c = g.Counters
			if st.Role == RoleMerge && g.ReviewedHead != g.Head {
				// Issue 28: only the head the tech lead approved merges.
				fail("merge %s of group %s sent at head %q, but the tech lead approved %q", st.ID, g.ID, g.Head, g.ReviewedHead)
			}
			if old := b.Group(g.ID); (old == nil || !old.Started) && g.Phase > lowestOpen {
				fail("group %s (phase %d) started while phase %d is open", g.ID, g.Phase, lowestOpen)
			}
			for _, d := range g.DependsOn {
				if dg := a.Group(d); dg == nil || dg.Stage != StageMerged {
					fail("group %s: step %s dispatched before its dependency %s merged", g.ID, st.ID, d)
				}
			}
		}
		switch {
		case st.Role.IsImplementer() && st.Purpose != PurposeDiagnostic && c.Iterations >= lim.DeveloperIterations:
			fail("step %s dispatched after %d implementation iterations, limit %d", st.ID, c.Iterations, lim.DeveloperIterations)
		case st.Role == RoleQA && c.QAAttempts >= lim.QAAttempts:
			fail("step %s dispatched after %d QA attempts, limit %d", st.ID, c.QAAttempts, lim.QAAttempts)
		case st.Role == RoleTechLead && st.Purpose == PurposeReview && c.ReviewAttempts >= lim.ReviewAttempts:
			fail("step %s dispatched after %d reviews, limit %d", st.ID, c.ReviewAttempts, lim.ReviewAttempts)
		case st.Role == RoleTechLead && st.Purpose != PurposeReview && c.GuidanceSteps >= lim.ReviewAttempts:
			fail("step %s dispatched after %d guidance steps, limit %d", st.ID, c.GuidanceSteps, lim.ReviewAttempts)
		case st.Role == RoleInvestigator && c.InvestigationIterations >= lim.InvestigationIterations:
			fail("step %s dispatched after %d investigation iterations, limit %d", st.ID, c.InvestigationIterations, lim.InvestigationIterations)
		case st.Role == RolePM && a.PMStreak > 2*lim.DeveloperIterations+len(a.Groups):
			fail("pm step %s dispatched at streak %d, limit %d", st.ID, a.PMStreak, 2*lim.DeveloperIterations+len(a.Groups))
		}
	}

	// The baseline (issue 13): once recorded it never changes but for its
	// acceptance, which only a resume or tests.baseline accept gives; no group
	// step goes out while a red baseline waits for a human; only a pm step
	// dispatched before anything merged is asked to take one.
	checkBaselineTransition(tr, dispatched, humanRestart, fail)

	checkGroupsKept(tr, fail)
	checkAnswersBound(tr, fail)
	checkMergeHeads(tr, dispatched, fail)
	checkRestartResends(tr, fail)
	checkNoFrontEndWords(tr, fail)

	// Counters grow only with results of the track's own steps.
	results := map[string]int{}
	for _, st := range a.Steps {
		if st.State == StepDone {
			if old := b.Step(st.ID); old == nil || old.State != StepDone {
				results[st.Group]++
			}
		}
	}
	checkCounters := func(group string, old, cur Counters) {
		grew := 0
		for _, p := range [][2]int{{old.Iterations, cur.Iterations}, {old.QAAttempts, cur.QAAttempts},
			{old.ReviewAttempts, cur.ReviewAttempts}, {old.GuidanceSteps, cur.GuidanceSteps},
			{old.InvestigationIterations, cur.InvestigationIterations}} {
			if p[1] > p[0] {
				grew += p[1] - p[0]
			}
		}
		if grew > results[group] {
			fail("track %s: counters grew by %d with %d result(s): %+v → %+v", group, grew, results[group], old, cur)
		}
	}
	if b.Status != SessionNew {
		checkCounters(LeadGroup, b.Lead.Counters, a.Lead.Counters)
	}
	for _, g := range a.Groups {
		if old := b.Group(g.ID); old != nil {
			checkCounters(g.ID, old.Counters, g.Counters)
		}
	}
	checkUsage(tr, fail)
	return errors.Join(errs...)
}

// checkUsage holds the cost promises (issue 13 item 5):
//   - a step's usage, once recorded, never changes; the session's and each
//     track's totals grow by exactly the usage newly recorded on their steps;
//   - nothing is dispatched once the session's cost reached
//     limits.session_cost_usd;
//   - a step recorded over limits.step_cost_usd leaves the session paused (or
//     ended): never running on as if nothing happened.
func checkUsage(tr transition, fail func(string, ...any)) {
	b, a, lim := &tr.before, &tr.after, tr.cfg.Limits
	if b.Status == SessionNew {
		return
	}
	var total Usage
	tracks := map[string]Usage{}
	overStep := ""
	for _, st := range a.Steps {
		old := b.Step(st.ID)
		switch {
		case old != nil && old.Usage != nil:
			if st.Usage == nil || *st.Usage != *old.Usage {
				fail("step %s: its usage changed from %+v to %+v", st.ID, *old.Usage, st.Usage)
			}
		case st.Usage != nil:
			total.Add(*st.Usage)
			u := tracks[st.Group]
			u.Add(*st.Usage)
			tracks[st.Group] = u
			if l := USDMicros(lim.StepCostUSD); l > 0 && st.Usage.Priced > 0 && st.Usage.CostMicros > l {
				overStep = st.ID
			}
		}
	}
	// Every valid usage reported for a step of the session is recorded on
	// it, whatever became of the step (issue 23): the money was spent.
	for _, ev := range tr.events {
		if ev.Kind != EventStepResult && ev.Kind != EventStepFailed || ev.Usage == nil || ev.Usage.Check() != nil || ev.Session != a.ID {
			continue
		}
		if st := a.Step(ev.Step); st != nil && st.Usage == nil {
			fail("step %s (%s) reported usage %+v, which was not counted", st.ID, st.State, *ev.Usage)
		}
	}
	want := b.Usage
	want.Add(total)
	if a.Usage != want {
		fail("session usage %+v, want %+v (before %+v plus the steps' new usage)", a.Usage, want, b.Usage)
	}
	checkTrack := func(name string, before, after Usage) {
		w := before
		w.Add(tracks[name])
		if after != w {
			fail("track %s: usage %+v, want %+v", name, after, w)
		}
	}
	checkTrack(LeadGroup, b.Lead.Usage, a.Lead.Usage)
	for _, g := range a.Groups {
		var before Usage
		if old := b.Group(g.ID); old != nil {
			before = old.Usage
		}
		checkTrack(g.ID, before, g.Usage)
	}
	if l := USDMicros(lim.SessionCostUSD); l > 0 && a.Usage.CostMicros >= l {
		for _, act := range tr.acts {
			if act.Kind == ActionDispatch {
				fail("step %s dispatched with %s spent, limits.session_cost_usd %s", act.Step, FormatUSD(a.Usage.CostMicros), FormatUSD(l))
				break
			}
		}
	}
	resumed := false // a resume in the same call may lift the pause at once
	for _, ev := range tr.events {
		resumed = resumed || ev.Kind == EventCommand && ev.Command != nil &&
			(ev.Command.Kind == CommandResume || ev.Command.Kind == CommandRetry)
	}
	if overStep != "" && !resumed && a.Status != SessionPaused && !a.Status.Terminal() {
		fail("step %s cost more than limits.step_cost_usd but the session is %s", overStep, a.Status)
	}
}

// checkCheckpoints checks the promises of checkpoints (issue 13):
//   - nothing a checkpoint holds is dispatched: at the plan checkpoint no
//     step at all, at a phase checkpoint no first step of its phase's groups;
//   - with a plan checkpoint configured no group starts before a human
//     approved the plan it belongs to (plan-<PlanRev>), and with a phase
//     checkpoint no later phase starts before its approval;
//   - only a human passes a checkpoint: an approval naming it (approve with
//     its id or none, resume with its id), or feedback sending the plan back;
//     a phase checkpoint may close by itself only when its phase has nothing
//     left to start.
func checkCheckpoints(tr transition, dispatched []Step) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	b, a := &tr.before, &tr.after
	if cp := a.Checkpoint; cp != nil {
		for _, st := range dispatched {
			if cp.Kind == CheckpointPlan {
				fail("step %s dispatched while %s waits for approval", st.ID, cp.ID)
				continue
			}
			if g, old := a.Group(st.Group), b.Group(st.Group); g != nil && g.Phase == cp.Phase && (old == nil || !old.Started) {
				fail("group %s (phase %d) started while %s waits for approval", g.ID, g.Phase, cp.ID)
			}
		}
	}
	first := 0
	for _, g := range a.Groups {
		if first == 0 || g.Phase < first {
			first = g.Phase
		}
	}
	for _, g := range a.Groups {
		if old := b.Group(g.ID); !g.Started || old != nil && old.Started {
			continue
		}
		if tr.cfg.HasCheckpoint(CheckpointPlan) && !a.approved(planCheckpointID(a.PlanRev)) {
			fail("group %s started, but %s was never approved", g.ID, planCheckpointID(a.PlanRev))
		}
		if tr.cfg.HasCheckpoint(CheckpointPhase) && g.Phase > first && !a.approved(phaseCheckpointID(g.Phase)) {
			fail("group %s started phase %d, but %s was never approved", g.ID, g.Phase, phaseCheckpointID(g.Phase))
		}
	}
	cp := b.Checkpoint
	if cp == nil || a.Checkpoint != nil && a.Checkpoint.ID == cp.ID {
		return errs
	}
	p := a.passed(cp.ID)
	if p == nil || p.Ended.IsZero() {
		switch cp.Kind {
		case CheckpointFindings:
			// Closes when its group got other work or ended (issue 26).
			if g := a.Group(cp.Group); g != nil && g.Held != nil && g.Held.Step == cp.Step && !g.Stage.Finished() {
				fail("%s closed without a human passing it while its group still waits", cp.ID)
			}
		case CheckpointPhase:
			if simStartable(a, cp.Phase) {
				fail("%s closed without a human passing it", cp.ID)
			}
		default:
			fail("%s closed without a human passing it", cp.ID)
		}
		return errs
	}
	by := false
	for _, ev := range tr.events {
		c := ev.Command
		if ev.Kind != EventCommand || c == nil || ev.Actor == "" && c.Kind != CommandApprove {
			continue
		}
		switch {
		case p.ApprovedBy != "" && c.Kind == CommandApprove && (c.Checkpoint == cp.ID || c.Checkpoint == ""):
			by = true
		case p.ApprovedBy != "" && c.Kind == CommandResume && c.Checkpoint == cp.ID:
			by = true
		case p.RevisedBy != "" && c.Kind == CommandAnswer && (cp.Kind == CheckpointPlan || cp.Kind == CheckpointFindings) && (c.Checkpoint == cp.ID || c.Checkpoint == ""):
			// Feedback sends back only the plan its author saw (issue 23).
			by = true
		}
	}
	if !by {
		fail("%s passed (approved by %q, revised by %q) without a command that names it", cp.ID, p.ApprovedBy, p.RevisedBy)
	}
	return errs
}

func simStartable(s *Session, phase int) bool {
	for _, g := range s.Groups {
		if g.Phase == phase && !g.Started && !g.Stage.Finished() {
			return true
		}
	}
	return false
}

// coverage counts what the simulator reached: routing rows, commands and
// other human events, limits and waits. A promise is only checked where the
// simulation goes, so a row never reached fails the simulator test.
type coverage struct {
	rows     []int
	commands map[string]int
	limits   map[string]int
}

func newCoverage() *coverage {
	return &coverage{rows: make([]int, len(RoutingTable)), commands: map[string]int{}, limits: map[string]int{}}
}

// limitMarks are the texts by which the engine says a limit was reached.
var limitMarks = []struct{ name, text string }{
	{"developer_iterations", "implementation iterations; split or simplify"},
	{"qa_attempts", "times without passing; help the implementer"},
	{"review_attempts", "reviews without approval"},
	{"guidance_steps", "needed tech lead guidance"},
	{"investigation_iterations", "The investigation used its"},
	{"investigation_disabled", "Investigation is disabled"},
	{"step_attempts", "times (last:"},
	{"pm_rounds", "the pm made no progress in"},
	{"changes_requested", "the tech lead requested changes"},
	{"merge_failures", "failed to merge"},
	{"escalation_repeated", "asked for escalation again"},
	{"clarification_timeout", "No answer came within"},
	{"stale_approvals", "they no longer count"},
	{"decision_refused", "Your decision was not applied"},
	{"stale_feedback", "; it does not change plan-"},
	{"stale_answer", "; it does not answer it"},
	{"merge_updated_no_head", "names no new head"},
	{"session_cost", "reaching limits.session_cost_usd"},
	{"step_cost", "over limits.step_cost_usd"},
	{"checks_failed", "required checks failed on"},
	{"checks_timeout", "(merge.checks_timeout"},
}

// commandNames are the human inputs the simulator must use.
var commandNames = []string{"stop", "pause", "resume", "retry", "retry_group", "answer",
	"review_approved", "review_approved_stale", "review_changes_requested", "review_dismissed",
	"pr_closed", "pr_merged", "lead_diagnostic", "paused_bazinga", "paused_reject", "budget_raised",
	// checkpoints (issue 13)
	"approve_plan", "approve_phase", "approve_stale", "resume_approves", "plan_feedback", "phase_feedback",
	// issue 23: a pm's drop by name, a late report's usage, a restart beside a resume
	"pm_drop", "late_usage", "restart_resume",
	// issue 26: a human at a findings checkpoint
	"approve_findings", "findings_direction"}

func (cv *coverage) record(tr transition) {
	cv.recordIssue23(tr)
	for _, st := range tr.after.Steps {
		old := tr.before.Step(st.ID)
		if st.State == StepDone && st.Result != nil && (old == nil || old.State != StepDone) {
			if i := lookupIndex(st.Role, st.Result.Status, st.Purpose, Worst(st.Result.Findings)); i >= 0 {
				cv.rows[i]++
			}
		}
	}
	// Results that arrived while a human pause held (before this call or
	// earlier in its events).
	paused := tr.before.Status == SessionPaused
	for _, ev := range tr.events {
		switch {
		case ev.Kind == EventCommand && ev.Command != nil && ev.Command.Kind == CommandPause:
			paused = true
		case ev.Kind == EventCommand && ev.Command != nil && (ev.Command.Kind == CommandResume || ev.Command.Kind == CommandRetry):
			paused = false
		case ev.Kind == EventStepResult && paused:
			if st := tr.after.Step(ev.Step); st != nil && st.Result != nil {
				switch st.Result.Status {
				case StatusBazinga:
					cv.commands["paused_bazinga"]++
				case StatusReject:
					cv.commands["paused_reject"]++
				}
			}
		}
	}
	// A human raised the session's cost limit and resumed: it runs again.
	if tr.before.Status == SessionPaused && strings.Contains(tr.before.Reason, "limits.session_cost_usd") &&
		tr.after.Status != SessionPaused && !tr.after.Status.Terminal() {
		cv.commands["budget_raised"]++
	}
	for _, ev := range tr.events {
		switch {
		case ev.Kind == EventCommand && ev.Command != nil:
			name := ev.Command.Kind.String()
			if ev.Command.Kind == CommandRetry && ev.Command.Group != "" {
				name = "retry_group"
			}
			cv.commands[name]++
		case ev.Kind == EventHumanReview:
			name := "review_" + ev.Review.String()
			if g := tr.before.Group(ev.Group); ev.Review == ReviewApproved && g != nil && ev.Commit != "" && g.Head != "" && ev.Commit != g.Head {
				name = "review_approved_stale"
			}
			cv.commands[name]++
		case ev.Kind == EventPRClosed && ev.Merged:
			cv.commands["pr_merged"]++
		case ev.Kind == EventPRClosed:
			cv.commands["pr_closed"]++
		}
	}
	cv.recordCheckpoints(tr)
	var texts []string
	texts = append(texts, tr.after.Reason)
	for _, n := range tr.after.Inbox {
		texts = append(texts, n.Text)
	}
	for _, act := range tr.acts {
		texts = append(texts, act.Text)
		if act.Kind != ActionDispatch {
			continue
		}
		if st := tr.after.Step(act.Step); st != nil {
			texts = append(texts, st.Feedback)
			for _, n := range st.Notes {
				texts = append(texts, n.Text)
			}
			if st.Group == LeadGroup && st.Role == RoleDeveloper {
				cv.commands["lead_diagnostic"]++
			}
		}
	}
	all := strings.Join(texts, "\n")
	for _, m := range limitMarks {
		if strings.Contains(all, m.text) {
			cv.limits[m.name]++
		}
	}
	waits := func(t Track) {
		switch t.Wait {
		case WaitCap:
			if strings.Contains(t.WaitDetail, "research") {
				cv.limits["research_cap"]++
			} else {
				cv.limits["cap"]++
			}
		case WaitMergeLane:
			cv.limits["merge_lane"]++
		case WaitHumanReview:
			cv.limits["human_review"]++
		case WaitChecks:
			cv.limits["checks"]++
		case WaitDependencies:
			cv.limits["dependencies"]++
		case WaitPhase:
			cv.limits["phase"]++
		}
	}
	waits(tr.after.Lead)
	if tr.after.Lead.Wait == WaitCap {
		cv.limits["lead_cap"]++
	}
	for _, g := range tr.after.Groups {
		waits(g.Track)
	}
}

// recordCheckpoints counts how checkpoints were passed or refused.
// recordIssue23 counts what issue 23's promises need the simulation to reach.
func (cv *coverage) recordIssue23(tr transition) {
	for _, g := range tr.after.Groups {
		if old := tr.before.Group(g.ID); g.Abandoned != nil && g.Abandoned.Step != "" && old != nil && old.Abandoned == nil {
			cv.commands["pm_drop"]++
		}
	}
	restart, resume := false, false
	for _, ev := range tr.events {
		if c := ev.Command; ev.Kind == EventCommand && c != nil && c.Kind == CommandResume {
			restart = restart || c.Restart
			resume = resume || !c.Restart
		}
		if ev.Usage != nil && (ev.Kind == EventStepResult || ev.Kind == EventStepFailed) {
			if old := tr.before.Step(ev.Step); old != nil && old.State != StepInFlight && old.Usage == nil {
				if st := tr.after.Step(ev.Step); st != nil && st.Usage != nil {
					cv.commands["late_usage"]++
				}
			}
		}
	}
	if restart && resume {
		cv.commands["restart_resume"]++
	}
}

func (cv *coverage) recordCheckpoints(tr transition) {
	if len(tr.after.FollowUps) > len(tr.before.FollowUps) {
		cv.limits["follow_ups"]++
	}
	if tr.after.FollowUpsDropped > tr.before.FollowUpsDropped {
		cv.limits["follow_ups_dropped"]++
	}
	if cp := tr.after.Checkpoint; cp != nil {
		cv.limits["checkpoint_"+cp.Kind.String()]++
	}
	for _, p := range tr.after.PassedCheckpoints[len(tr.before.PassedCheckpoints):] {
		switch {
		case p.RevisedBy != "" && p.Kind == CheckpointFindings:
			cv.commands["findings_direction"]++
		case p.RevisedBy != "":
			cv.commands["plan_feedback"]++
		case p.ApprovedBy != "":
			cv.commands["approve_"+p.Kind.String()]++
			for _, ev := range tr.events {
				if ev.Kind == EventCommand && ev.Command != nil && ev.Command.Kind == CommandResume && ev.Command.Checkpoint == p.ID {
					cv.commands["resume_approves"]++
				}
			}
		}
	}
	cp := tr.before.Checkpoint
	if cp == nil {
		return
	}
	for _, ev := range tr.events {
		c := ev.Command
		switch {
		case ev.Kind != EventCommand || c == nil:
		case c.Kind == CommandApprove && c.Checkpoint != "" && c.Checkpoint != cp.ID:
			cv.commands["approve_stale"]++
		case c.Kind == CommandAnswer && cp.Kind == CheckpointPhase && tr.before.Clarification == nil:
			cv.commands["phase_feedback"]++
		}
	}
}

// missing lists what was never reached.
func (cv *coverage) missing() []string {
	var out []string
	for i, n := range cv.rows {
		if n == 0 {
			row := RoutingTable[i]
			out = append(out, fmt.Sprintf("row %d (%v %v %v %v → %s)", i, row.Roles, row.Statuses, row.Purposes, row.Worst, row.Route))
		}
	}
	for _, c := range commandNames {
		if cv.commands[c] == 0 {
			out = append(out, "command "+c)
		}
	}
	names := []string{"cap", "research_cap", "lead_cap", "merge_lane", "human_review", "checks", "dependencies", "phase",
		"checkpoint_plan", "checkpoint_phase", "checkpoint_findings", "follow_ups"}
	for _, m := range limitMarks {
		names = append(names, m.name)
	}
	for _, l := range names {
		if cv.limits[l] == 0 {
			out = append(out, "limit "+l)
		}
	}
	return out
}

// report is the per-row coverage table the simulator test logs.
func (cv *coverage) report() string {
	var b strings.Builder
	for i, n := range cv.rows {
		row := RoutingTable[i]
		fmt.Fprintf(&b, "\n  row %2d %-28s %7d  %v %v", i, row.Route, n, row.Roles, row.Statuses)
		if row.Purposes != nil {
			fmt.Fprintf(&b, " %v", row.Purposes)
		}
		if row.Worst != nil {
			fmt.Fprintf(&b, " worst %v", row.Worst)
		}
	}
	cmds := slices.Sorted(maps.Keys(cv.commands))
	b.WriteString("\n  human:")
	for _, k := range cmds {
		fmt.Fprintf(&b, " %s=%d", k, cv.commands[k])
	}
	lims := slices.Sorted(maps.Keys(cv.limits))
	b.WriteString("\n  limits and waits:")
	for _, k := range lims {
		fmt.Fprintf(&b, " %s=%d", k, cv.limits[k])
	}
	return b.String()
}

func checkBaselineTransition(tr transition, dispatched []Step, humanRestart bool, fail func(string, ...any)) {
	b, a := tr.before.Baseline, tr.after.Baseline
	switch {
	case b != nil && a == nil:
		fail("the baseline of %s was dropped", b.Commit)
	case b != nil:
		same := *a
		same.Accepted, same.AcceptedBy = b.Accepted, b.AcceptedBy
		if !slices.Equal(same.Failed, b.Failed) || same.Commit != b.Commit || same.Green != b.Green || same.Unnamed != b.Unnamed || same.Identity != b.Identity || same.CannotRun != b.CannotRun {
			fail("the baseline of %s changed to %+v", b.Commit, *a)
		}
		if b.Accepted && !a.Accepted {
			fail("the baseline's acceptance was withdrawn")
		}
		if !b.Accepted && a.Accepted && !humanRestart {
			fail("the baseline was accepted without a resume")
		}
	// A command that could not run is never accepted without a human (issue 25).
	case a != nil && a.Red() && a.Accepted != (tr.cfg.Tests.Baseline == BaselineAccept && !a.CannotRun):
		fail("a new red baseline is accepted=%v under tests.baseline %q", a.Accepted, tr.cfg.Tests.Baseline)
	}
	if a.Red() && !a.Accepted {
		for _, st := range dispatched {
			if st.Group != LeadGroup {
				fail("step %s dispatched while the red baseline waits for a human", st.ID)
			}
		}
	}
	merged := false
	for _, g := range tr.before.Groups {
		merged = merged || g.Stage == StageMerged
	}
	for _, st := range dispatched {
		if st.Baseline && (st.Role != RolePM || merged || tr.before.Baseline != nil || tr.cfg.Tests.Baseline == BaselineOff) {
			fail("step %s asked to take a baseline (role %s, a group merged %v, baseline already %v, tests.baseline %q)",
				st.ID, st.Role, merged, tr.before.Baseline != nil, tr.cfg.Tests.Baseline)
		}
	}
}

// checkGroupsKept holds issue 23's promise: a group leaves the session
// only through an explicit decision that names it.
//   - A group abandoned in this call records the decision, and the decision
//     is in this call: a pm step that ended now whose CONTINUE lists the
//     group under drop (exactly, as written), or a closure of its PR.
//   - Every abandoned group has its record, and it never changes while the
//     group stays abandoned.
//   - A group disappears from the session only when a human sent the plan
//     back at its checkpoint (feedback) in this call, and never once started.
func checkGroupsKept(tr transition, fail func(string, ...any)) {
	b, a := &tr.before, &tr.after
	for _, g := range a.Groups {
		if g.Stage != StageAbandoned {
			continue
		}
		if g.Abandoned == nil {
			fail("group %s is abandoned without a recorded decision", g.ID)
			continue
		}
		old := b.Group(g.ID)
		if old != nil && old.Stage == StageAbandoned {
			if old.Abandoned == nil || *old.Abandoned != *g.Abandoned {
				fail("group %s: its abandonment record changed from %+v to %+v", g.ID, old.Abandoned, *g.Abandoned)
			}
			continue
		}
		switch rec := g.Abandoned; {
		case rec.Step != "":
			st := a.Step(rec.Step)
			if st == nil || st.Role != RolePM || st.State != StepDone || st.Result == nil {
				fail("group %s abandoned by %s, which is no pm step with a result", g.ID, rec.Step)
				break
			}
			if old := b.Step(rec.Step); old == nil || old.State == StepDone {
				fail("group %s abandoned by pm step %s, whose result did not arrive in this call", g.ID, rec.Step)
			}
			var h struct {
				Drop []string `json:"drop"`
			}
			if st.Result.Status != StatusContinue || json.Unmarshal(st.Result.Handoff, &h) != nil || !slices.Contains(h.Drop, g.ID) {
				fail("group %s abandoned by pm step %s, whose result (%s %s) does not drop it by name", g.ID, rec.Step, st.Result.Status, st.Result.Handoff)
			}
		default:
			closed := false
			for _, ev := range tr.events {
				closed = closed || ev.Kind == EventPRClosed && ev.Group == g.ID && !ev.Merged
			}
			if !closed {
				fail("group %s abandoned by %q without a closure of its PR in this call", g.ID, rec.By)
			}
		}
	}
	sentBack := false
	if cp := b.Checkpoint; cp != nil && cp.Kind == CheckpointPlan {
		if p := a.passed(cp.ID); p != nil && p.RevisedBy != "" {
			for _, ev := range tr.events {
				sentBack = sentBack || ev.Kind == EventCommand && ev.Command != nil && ev.Command.Kind == CommandAnswer
			}
		}
	}
	for _, g := range b.Groups {
		if a.Group(g.ID) != nil {
			continue
		}
		if !sentBack || g.Started {
			fail("group %s (%s) left the session without a decision naming it", g.ID, g.Stage)
		}
	}
}

// checkAnswersBound holds issue 23's promise for answers: an open question
// is answered only by an answer bound to it (or unbound, from a terminal
// that shows the one open), or by its fallback once its deadline passed.
func checkAnswersBound(tr transition, fail func(string, ...any)) {
	cl := tr.before.Clarification
	if cl == nil {
		return
	}
	if a := tr.after.Clarification; a != nil && a.Step == cl.Step {
		return
	}
	if !tr.now.Before(cl.Deadline) {
		return
	}
	for _, ev := range tr.events {
		if c := ev.Command; ev.Kind == EventCommand && c != nil && c.Kind == CommandAnswer && (c.Question == "" || c.Question == cl.Step) {
			return
		}
	}
	fail("the question of %s was closed without an answer bound to it", cl.Step)
}

// checkMergeHeads holds issue 23's promise for merge results: a merge step
// that says it brought the branch up to date (MERGE_UPDATED) but names no
// new head (on the event or in its handoff) is refused: no merge of its
// group goes out in the call, and the session waits for a human.
func checkMergeHeads(tr transition, dispatched []Step, fail func(string, ...any)) {
	b, a := &tr.before, &tr.after
	for _, ev := range tr.events {
		if ev.Kind != EventStepResult || ev.Result == nil || ev.Result.Status != StatusMergeUpdated {
			continue
		}
		old, st := b.Step(ev.Step), a.Step(ev.Step)
		if old == nil || old.State == StepDone || st == nil || st.State != StepDone || st.Role != RoleMerge {
			continue // not applied
		}
		g := b.Group(st.Group)
		if g == nil {
			continue
		}
		head := ev.Commit
		if head == "" {
			head = handoffField(ev.Result.Handoff, "updated_head")
		}
		if head != "" && head != g.ReviewedHead {
			continue
		}
		for _, d := range dispatched {
			if d.Group == g.ID && d.Role == RoleMerge {
				fail("merge %s of group %s sent after a MERGE_UPDATED that named no new head", d.ID, g.ID)
			}
		}
		if a.Status != SessionPaused && !a.Status.Terminal() {
			fail("group %s: a MERGE_UPDATED without a new head left the session %s", g.ID, a.Status)
		}
	}
}

// checkRestartResends holds issue 23's promise that commands in one call
// compose: after a resume that knows the steps in flight were lost
// (Restart), every step still in flight on a live session is sent again in
// the call, whatever other resumes came after it.
func checkRestartResends(tr transition, fail func(string, ...any)) {
	restart := false
	for _, ev := range tr.events {
		restart = restart || ev.Kind == EventCommand && ev.Command != nil && ev.Command.Kind == CommandResume && ev.Command.Restart
	}
	a := &tr.after
	if !restart || a.Status == SessionPaused || a.Status.Terminal() || tr.before.Status == SessionNew {
		return
	}
	sent := map[string]bool{}
	for _, act := range tr.acts {
		if act.Kind == ActionDispatch {
			sent[act.Step] = true
		}
	}
	for _, st := range a.Steps {
		if st.State == StepInFlight && !sent[st.ID] {
			fail("step %s is in flight after a restart, but was not sent again", st.ID)
		}
	}
}

// checkNoFrontEndWords holds issue 23's promise that the engine's words
// name no front-end's command: a pause reason, a notice or a wait is read
// on GitHub and on a terminal alike, and each front-end says how to go on
// in its own words.
func checkNoFrontEndWords(tr transition, fail func(string, ...any)) {
	a := &tr.after
	texts := []string{a.Reason, a.Lead.WaitDetail}
	for _, g := range a.Groups {
		texts = append(texts, g.WaitDetail)
	}
	for _, act := range tr.acts {
		texts = append(texts, act.Text)
	}
	for _, t := range texts {
		for _, cmd := range []string{"/bazinga", "--resume", "--approve", "bazinga run"} {
			if strings.Contains(t, cmd) {
				fail("the engine names the front-end command %q: %s", cmd, t)
			}
		}
	}
}

// checkFindingsTransition checks the findings properties (issue 26): a
// review whose worst finding is HIGH never sends its group on to the next
// reviewer or the merge; a group held for its findings has nothing queued
// or in flight and waits on an open checkpoint; a findings checkpoint's
// group is held; follow-ups stay within their budget and only come from
// results that had MEDIUM findings or from a human accepting.
func checkFindingsTransition(tr transition, fail func(string, ...any)) {
	b, a := &tr.before, &tr.after
	for _, st := range a.Steps {
		old := b.Step(st.ID)
		if st.State != StepDone || st.Result == nil || old == nil || old.State == StepDone {
			continue
		}
		if len(st.Result.Findings) > MaxFindings {
			fail("step %s kept %d findings, limit %d", st.ID, len(st.Result.Findings), MaxFindings)
		}
		if !st.Role.Reviews() && len(st.Result.Findings) > 0 {
			fail("step %s (%s) kept findings", st.ID, st.Role)
		}
		// A HIGH finding on a result QA or the tech lead could not finish
		// (BLOCKED, PARTIAL…) goes where such results go: to the tech lead,
		// who reads the findings.
		if row, ok := LookupFindings(st.Role, st.Result.Status, st.Purpose, Worst(st.Result.Findings)); !ok || row.Route != RouteHighFinding {
			continue
		}
		switch st.Routed {
		case "merge":
			fail("step %s had a HIGH finding but routed to the merge", st.ID)
		case "tech_lead":
			if g := a.Group(st.Group); st.Role == RoleQA && g != nil && g.Next != nil && g.Next.Purpose == PurposeReview {
				fail("step %s (qa) had a HIGH finding but the group went on to review", st.ID)
			}
		case "checkpoint":
			if g := a.Group(st.Group); g != nil && !g.Stage.Finished() && (g.Held == nil || g.Held.Step != st.ID) && g.Next == nil {
				fail("step %s routed to a checkpoint but group %s is not held for it", st.ID, st.Group)
			}
		}
	}
	for _, g := range a.Groups {
		if g.Held == nil || g.Stage.Finished() {
			continue
		}
		if g.Next != nil || g.InFlight != "" {
			fail("group %s is held for its findings but has work queued or in flight", g.ID)
		}
		if a.Checkpoint == nil && a.Status != SessionPaused && !a.Status.Terminal() {
			fail("group %s is held for its findings but no checkpoint is open", g.ID)
		}
	}
	if cp := a.Checkpoint; cp != nil && cp.Kind == CheckpointFindings {
		if g := a.Group(cp.Group); g == nil || g.Held == nil || g.Held.Step != cp.Step {
			fail("%s is open but group %s is not held for step %s", cp.ID, cp.Group, cp.Step)
		}
	}
	if len(a.FollowUps) > MaxFollowUps {
		fail("%d follow-ups kept, limit %d", len(a.FollowUps), MaxFollowUps)
	}
	if a.FollowUpsDropped < b.FollowUpsDropped || len(a.FollowUps) < len(b.FollowUps) {
		fail("follow-ups were lost: %d+%d → %d+%d", len(b.FollowUps), b.FollowUpsDropped, len(a.FollowUps), a.FollowUpsDropped)
	}
}
