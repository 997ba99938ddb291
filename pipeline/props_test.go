package pipeline

import (
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
//   - a group is abandoned only by a closed PR or a pm result that decided
//     something (a bare CONTINUE decides nothing);
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

	// A group is given up only by a human closing its PR or by a pm result
	// that decided something; never by a CONTINUE that names nothing.
	decided := false
	for _, st := range a.Steps {
		if st.Role != RolePM || st.State != StepDone || st.Result == nil {
			continue
		}
		if old := b.Step(st.ID); old != nil && old.State == StepDone {
			continue
		}
		switch st.Result.Status {
		case StatusPlanningComplete:
			decided = true
		case StatusContinue:
			d, err := parseContinue(st.Result.Handoff)
			decided = decided || err == nil && !d.bare()
		}
	}
	for _, g := range a.Groups {
		old := b.Group(g.ID)
		if g.Stage != StageAbandoned || old == nil || old.Stage == StageAbandoned || decided {
			continue
		}
		closed := false
		for _, ev := range tr.events {
			closed = closed || ev.Kind == EventPRClosed && ev.Group == g.ID
		}
		if !closed {
			fail("group %s abandoned without a PR closure or a pm decision", g.ID)
		}
	}

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
	return errors.Join(errs...)
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
	{"bare_continue", "CONTINUE named no group"},
	{"checks_failed", "required checks failed on"},
	{"checks_timeout", "(merge.checks_timeout"},
}

// commandNames are the human inputs the simulator must use.
var commandNames = []string{"stop", "pause", "resume", "retry", "retry_group", "answer",
	"review_approved", "review_approved_stale", "review_changes_requested", "review_dismissed",
	"pr_closed", "pr_merged", "lead_diagnostic", "paused_bazinga", "paused_reject"}

func (cv *coverage) record(tr transition) {
	for _, st := range tr.after.Steps {
		old := tr.before.Step(st.ID)
		if st.State == StepDone && st.Result != nil && (old == nil || old.State != StepDone) {
			if i := lookupIndex(st.Role, st.Result.Status, st.Purpose); i >= 0 {
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

// missing lists what was never reached.
func (cv *coverage) missing() []string {
	var out []string
	for i, n := range cv.rows {
		if n == 0 {
			row := RoutingTable[i]
			out = append(out, fmt.Sprintf("row %d (%v %v %v → %s)", i, row.Roles, row.Statuses, row.Purposes, row.Route))
		}
	}
	for _, c := range commandNames {
		if cv.commands[c] == 0 {
			out = append(out, "command "+c)
		}
	}
	names := []string{"cap", "research_cap", "lead_cap", "merge_lane", "human_review", "checks", "dependencies", "phase"}
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
