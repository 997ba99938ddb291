package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 12: sequences of ordinary events that broke the engine's promises.
// Each test replays one through Reconcile; the harness checks every property
// after every call.

func implInFlight(s Session) int {
	n := 0
	for _, st := range s.InFlight() {
		if st.Role.IsImplementer() {
			n++
		}
	}
	return n
}

// 1. A session-level developer diagnostic takes an implementation slot like
// any other implementation step.
func TestCapHoldsForSessionDiagnostics(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxParallel = 2
	h := newHarness(t, cfg)
	h.plan(pg("A", 1), pg("B", 1), pg("C", 1))
	require.Equal(t, WaitCap, h.group("C").Wait)
	h.reconcile(Event{Kind: EventPRClosed, Session: "s1", Group: "C", Actor: "carol"})
	h.report(LeadGroup, StatusInvestigationNeeded, "", "why did C fail?")
	require.Equal(t, RoleInvestigator, h.inFlight(LeadGroup).Role)
	h.report(LeadGroup, StatusNeedDeveloperDiagnostic, `{"diagnostic_request":"run the profiler"}`)
	assert.Equal(t, 2, implInFlight(h.s), "the cap holds")
	assert.Equal(t, WaitCap, h.s.Lead.Wait)
	assert.Equal(t, "2 of 2 implementation slots busy", h.s.Lead.WaitDetail)
	// A slot frees: the diagnostic runs.
	h.report("A", StatusReadyForQA, "")
	st := h.inFlight(LeadGroup)
	assert.Equal(t, RoleDeveloper, st.Role)
	assert.Equal(t, PurposeDiagnostic, st.Purpose)
	assert.Equal(t, "run the profiler", st.Feedback)
	assert.Equal(t, 2, implInFlight(h.s))
}

// 2. A human pause holds against a pm BAZINGA and a validation REJECT.
func TestPauseHoldsAgainstBazingaAndReject(t *testing.T) {
	pause := CommandEvent("s1", "alice", Command{Kind: CommandPause, Text: "label removed by alice"})
	resume := CommandEvent("s1", "alice", Command{Kind: CommandResume})
	t.Run("BAZINGA", func(t *testing.T) {
		h := atMerge.setup(t, DefaultConfig())
		h.report("A", StatusMergeSuccess, "")
		require.Equal(t, PurposeFinalCheck, h.inFlight(LeadGroup).Purpose)
		h.reconcile(pause)
		h.report(LeadGroup, StatusBazinga, "")
		assert.Equal(t, SessionPaused, h.s.Status)
		assert.Empty(t, h.s.InFlight(), "nothing runs while paused")
		assert.Equal(t, WaitPaused, h.s.Lead.Wait)
		h.reconcile(resume)
		assert.Equal(t, SessionValidating, h.s.Status)
		assert.Equal(t, RoleValidate, h.inFlight(LeadGroup).Role)
	})
	t.Run("REJECT", func(t *testing.T) {
		h := atMerge.setup(t, DefaultConfig())
		h.report("A", StatusMergeSuccess, "")
		h.report(LeadGroup, StatusBazinga, "")
		require.Equal(t, RoleValidate, h.inFlight(LeadGroup).Role)
		h.reconcile(pause)
		h.report(LeadGroup, StatusReject, "", "criterion 1 lacks evidence")
		assert.Equal(t, SessionPaused, h.s.Status)
		assert.Empty(t, h.s.InFlight())
		h.reconcile(resume)
		assert.Equal(t, SessionRunning, h.s.Status)
		pm := h.inFlight(LeadGroup)
		assert.Equal(t, RolePM, pm.Role)
		assert.Contains(t, pm.Notes[0].Text, "criterion 1 lacks evidence")
	})
}

// 3. Dependencies and phases are checked on every path that starts a group.
func TestDependenciesHoldOnEveryDispatchPath(t *testing.T) {
	t.Run("retry of a group waiting on its dependencies", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1), pg("B", 1, "A"), pg("C", 2))
		require.Equal(t, WaitDependencies, h.group("B").Wait)
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandRetry, Group: "B"}))
		_, running := h.maybeInFlight("B")
		assert.False(t, running, "B must wait for A")
		assert.Equal(t, WaitDependencies, h.group("B").Wait)
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandRetry, Group: "C"}))
		_, running = h.maybeInFlight("C")
		assert.False(t, running, "C must wait for phase 2")
		assert.Equal(t, WaitPhase, h.group("C").Wait)
		h.through("A", StatusReadyForReview, StatusApproved, StatusMergeSuccess)
		assert.Equal(t, RoleDeveloper, h.inFlight("B").Role)
	})
	t.Run("pm CONTINUE naming a group parked on an abandoned dependency", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1), pg("C", 1), pg("B", 1, "A", "C"))
		h.reconcile(Event{Kind: EventPRClosed, Session: "s1", Group: "A", Actor: "carol"})
		require.Equal(t, WaitPM, h.group("B").Wait)
		h.report(LeadGroup, StatusContinue, `{"groups":["B"],"feedback":{"B":"do without A"}}`)
		_, running := h.maybeInFlight("B")
		assert.False(t, running, "C is still in development")
		assert.Equal(t, WaitDependencies, h.group("B").Wait)
		assert.Equal(t, []string{"C"}, h.group("B").DependsOn)
		h.through("C", StatusReadyForReview, StatusApproved, StatusMergeSuccess)
		b := h.inFlight("B")
		assert.Equal(t, RoleDeveloper, b.Role)
		assert.Equal(t, "do without A", b.Feedback)
	})
}

// 4. Human approvals are for the code that merges.
func TestApprovalsBindToTheHeadThatMerges(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Merge.RequiredApprovals = 1
	approve := func(commit string) Event {
		return Event{Kind: EventHumanReview, Session: "s1", Group: "A", Actor: "alice", Review: ReviewApproved, Commit: commit}
	}
	t.Run("an approval before a merge-conflict fix does not count after it", func(t *testing.T) {
		h := atMerge.setup(t, cfg)
		require.Equal(t, WaitHumanReview, h.group("A").Wait)
		h.reconcile(approve(""))
		h.report("A", StatusMergeConflict, `{"conflicts":["a.go"]}`)
		h.through("A", StatusReadyForQA, StatusPass, StatusApproved)
		_, merging := h.maybeInFlight("A")
		assert.False(t, merging, "the approval was for the code before the fix")
		assert.Equal(t, WaitHumanReview, h.group("A").Wait)
		assert.Equal(t, "0 of 1 human approvals", h.group("A").WaitDetail)
		h.reconcile(approve(""))
		assert.Equal(t, RoleMerge, h.inFlight("A").Role)
	})
	t.Run("an approval of an older head arriving late does not count", func(t *testing.T) {
		h := newHarness(t, cfg)
		h.plan(pg("A", 1))
		dev := h.inFlight("A")
		ev := StepResult("s1", dev.ID, Result{Status: StatusReadyForReview})
		ev.Commit = "c1"
		h.reconcile(ev)
		assert.Equal(t, "c1", h.group("A").Head)
		h.report("A", StatusChangesRequested, "", "rename it")
		dev = h.inFlight("A")
		ev = StepResult("s1", dev.ID, Result{Status: StatusReadyForReview})
		ev.Commit = "c2"
		h.reconcile(ev)
		h.report("A", StatusApproved, "")
		h.reconcile(approve("c1"))
		assert.Empty(t, h.group("A").Approvals, "c1 is not the head")
		assert.Equal(t, WaitHumanReview, h.group("A").Wait)
		h.reconcile(approve("c2"))
		assert.Equal(t, []string{"alice"}, h.group("A").Approvals)
		assert.Equal(t, RoleMerge, h.inFlight("A").Role)
	})
	t.Run("a result that leaves the head unchanged keeps approvals", func(t *testing.T) {
		h := newHarness(t, cfg)
		h.plan(pg("A", 1))
		dev := h.inFlight("A")
		ev := StepResult("s1", dev.ID, Result{Status: StatusReadyForQA})
		ev.Commit = "c1"
		h.reconcile(ev)
		h.reconcile(approve("c1"))
		h.through("A", StatusPass, StatusApproved)
		assert.Equal(t, RoleMerge, h.inFlight("A").Role)
	})
}

// 5. A bare CONTINUE does not abandon the groups waiting on the pm.
func TestBareContinueKeepsWaitingGroups(t *testing.T) {
	for _, handoff := range []string{"", `{}`, `{"groups":[]}`, `{"feedback":{"A":"go on"}}`} {
		t.Run(handoff, func(t *testing.T) {
			h := stuckGroup(t)
			h.report(LeadGroup, StatusContinue, handoff)
			assert.Equal(t, StageBlocked, h.group("A").Stage)
			assert.Equal(t, WaitPM, h.group("A").Wait)
			pm := h.inFlight(LeadGroup)
			assert.Equal(t, RolePM, pm.Role)
			assert.Contains(t, pm.Feedback, "A")
			require.NotEmpty(t, pm.Notes, "the pm hears about A again")
			assert.Equal(t, "A", pm.Notes[0].Group)
		})
	}
}

// 6. Only results count as iterations: not stop/resume, not retry, and a
// diagnostic is not an implementation iteration.
func TestOnlyResultsCountAsIterations(t *testing.T) {
	stop := CommandEvent("s1", "alice", Command{Kind: CommandStop})
	resume := CommandEvent("s1", "alice", Command{Kind: CommandResume})
	t.Run("stop and resume during development", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1))
		for i := 0; i < 4; i++ {
			h.reconcile(stop)
			h.reconcile(resume)
		}
		assert.Equal(t, 0, h.group("A").Counters.Iterations)
		h.report("A", StatusPartial, "", "half done")
		st := h.inFlight("A")
		assert.Equal(t, RoleDeveloper, st.Role, "one PARTIAL is one revision, not stuck")
		assert.Equal(t, 1, h.group("A").Counters.Iterations)
	})
	t.Run("stop and resume during QA", func(t *testing.T) {
		h := atQA.setup(t, DefaultConfig())
		for i := 0; i < 3; i++ {
			h.reconcile(stop)
			h.reconcile(resume)
		}
		assert.Equal(t, 0, h.group("A").Counters.QAAttempts)
		assert.Equal(t, RoleQA, h.inFlight("A").Role)
		progress := h.s.Progress(h.group("A").Track)
		assert.Equal(t, 1, progress.QAAttempts, "views count the QA step that runs")
		assert.Equal(t, 1, progress.Iterations)
		h.report("A", StatusFail, "")
		h.report("A", StatusReadyForQA, "")
		assert.Equal(t, RoleQA, h.inFlight("A").Role, "one QA failure is far from the limit")
		assert.Equal(t, 1, h.group("A").Counters.QAAttempts)
	})
	t.Run("retry", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1))
		for i := 0; i < 6; i++ {
			h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandRetry, Group: "A"}))
		}
		assert.Equal(t, 0, h.group("A").Counters.Iterations)
		h.report("A", StatusPartial, "")
		assert.Equal(t, RoleDeveloper, h.inFlight("A").Role)
	})
	t.Run("diagnostics", func(t *testing.T) {
		h := atDiagnostic.setup(t, DefaultConfig())
		for i := 0; i < 3; i++ {
			require.Equal(t, PurposeDiagnostic, h.inFlight("A").Purpose)
			h.report("A", StatusReadyForReview, "", "profile attached")
			h.report("A", StatusNeedDeveloperDiagnostic, "")
		}
		assert.Equal(t, 1, h.group("A").Counters.Iterations, "only the first developer step implemented anything")
	})
}

// Minor: a merge result that arrives after a stop is applied.
func TestMergeResultAfterStopIsApplied(t *testing.T) {
	h := atMerge.setup(t, DefaultConfig())
	merge := h.inFlight("A")
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandStop}))
	require.Equal(t, StepCancelled, h.s.Step(merge.ID).State)
	h.reconcile(StepResult("s1", merge.ID, Result{Status: StatusMergeSuccess}))
	assert.Equal(t, StageMerged, h.group("A").Stage)
	assert.Equal(t, SessionStopped, h.s.Status)
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
	for _, a := range h.dispatched() {
		assert.NotEqual(t, RoleMerge, a.Role, "the merge is not sent again")
	}
	assert.Equal(t, PurposeFinalCheck, h.inFlight(LeadGroup).Purpose)
}

// Minor: a hand-built configuration with max_parallel 0 is refused, as the
// file and the command line refuse it.
func TestInvalidConfigurationIsRefused(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxParallel = 0
	s, acts := Reconcile(Session{}, []Event{Started("s1", "x", "main")}, t0, cfg)
	assert.Equal(t, SessionNew, s.Status, "nothing happens")
	require.Len(t, acts, 1)
	assert.Equal(t, ActionReport, acts[0].Kind)
	assert.Contains(t, acts[0].Text, "max_parallel")
	err := CheckLiveness(s, cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "max_parallel")

	// A running session is left as it is.
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	bad := DefaultConfig()
	bad.Limits.DeveloperIterations = 0
	s2, acts := Reconcile(h.s, []Event{StepResult("s1", h.inFlight("A").ID, Result{Status: StatusReadyForQA})}, t0, bad)
	assert.Equal(t, h.s, s2)
	require.Len(t, acts, 1)
	assert.Contains(t, acts[0].Text, "limits.developer_iterations")
}

// Found by the shared checker: a pm out of rounds ended the session after
// group steps of the same call had been sent (and cancelled at once).
func TestSessionEndingInACallSendsNothing(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1))
	h.s.PMStreak = 2*DefaultConfig().Limits.DeveloperIterations + 2 // the pm's rounds are used up
	a := h.inFlight("A")
	acts := h.reconcile(
		StepResult("s1", a.ID, Result{Status: StatusReadyForQA}),
		Event{Kind: EventPRClosed, Session: "s1", Group: "B", Actor: "carol"}, // the pm must hear of it
	)
	assert.Equal(t, SessionFailed, h.s.Status)
	for _, act := range acts {
		assert.NotEqual(t, ActionDispatch, act.Kind, "nothing is sent by a call that ends the session: %+v", act)
	}
	assert.Equal(t, WaitEnded, h.group("A").Wait)
	require.NotNil(t, h.group("A").Next, "resume redoes A's QA")
	assert.Equal(t, RoleQA, h.group("A").Next.Role)
}

// Found by the shared checker: a resume on a live session followed by a pause
// in the same call re-sent the steps in flight.
func TestResumeThenPauseInOneCallSendsNothing(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	acts := h.reconcile(
		CommandEvent("s1", "alice", Command{Kind: CommandResume}),
		CommandEvent("s1", "bob", Command{Kind: CommandPause, Text: "label removed by bob"}),
	)
	assert.Equal(t, SessionPaused, h.s.Status)
	for _, act := range acts {
		assert.NotEqual(t, ActionDispatch, act.Kind)
	}
}

// Issue 23: commands in one call compose. A restart resume followed by a
// plain resume (a local runner restarted, and a human typed resume) still
// sends every step in flight again: they were lost.
func TestRestartThenResumeInOneCallResends(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1))
	acts := h.reconcile(
		CommandEvent("s1", "local", Command{Kind: CommandResume, Restart: true}),
		CommandEvent("s1", "alice", Command{Kind: CommandResume}),
	)
	var sent []string
	for _, a := range acts {
		if a.Kind == ActionDispatch {
			sent = append(sent, a.Step)
		}
	}
	assert.ElementsMatch(t, []string{h.inFlight("A").ID, h.inFlight("B").ID}, sent)
}
