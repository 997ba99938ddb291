package pipeline

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func checkpointConfig(kinds ...CheckpointKind) Config {
	cfg := DefaultConfig()
	cfg.Checkpoints = kinds
	return cfg
}

func approveCmd(who, id string) Event {
	return CommandEvent("s1", who, Command{Kind: CommandApprove, Checkpoint: id})
}

func notices(acts []Action) string {
	var out []string
	for _, a := range acts {
		if a.Kind == ActionNotify {
			out = append(out, a.Text)
		}
	}
	return strings.Join(out, "\n")
}

// assertHeldAt asserts that the session waits at checkpoint id with nothing
// dispatched, every track naming the wait.
func assertHeldAt(t *testing.T, h *harness, id string) {
	t.Helper()
	require.NotNil(t, h.s.Checkpoint, "a checkpoint is open")
	assert.Equal(t, id, h.s.Checkpoint.ID)
	assert.Equal(t, SessionAwaitingInput, h.s.Status)
	assert.Empty(t, h.s.InFlight(), "nothing runs at the plan checkpoint")
	for _, g := range h.s.Groups {
		assert.Equal(t, WaitCheckpoint, g.Wait, "group %s", g.ID)
		assert.Contains(t, g.WaitDetail, id+" waits for approval", "group %s", g.ID)
		assert.False(t, g.Started, "group %s", g.ID)
	}
	assert.Equal(t, WaitCheckpoint, h.s.Lead.Wait)
}

func TestPlanCheckpointWaitsForApproval(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.plan(pg("A", 1), pg("B", 1), pg("C", 2, "A"))
	assertHeldAt(t, h, "plan-1")
	assert.Empty(t, h.dispatched())
	text := notices(h.actions)
	assert.Contains(t, text, "The plan (plan-1) waits for approval before any work starts: 3 group(s) in 2 phase(s), 1 success criteria.")
	assert.Contains(t, text, "send feedback to send the plan back to the pm")
	assert.Equal(t, "plan-1", h.s.Checkpoint.ID)
	assert.Equal(t, h.s.Lead.Last, h.s.Checkpoint.Step, "the checkpoint names the pm step whose plan waits")

	// Time passing, ticks and a human's retry of a group start nothing.
	h.now = h.now.Add(72 * time.Hour)
	h.reconcile(Tick("s1"), CommandEvent("s1", "bob", Command{Kind: CommandRetry, Group: "A"}))
	assertHeldAt(t, h, "plan-1")
	assert.Empty(t, h.dispatched())

	// A writer approves: phase 1 starts.
	h.reconcile(approveCmd("alice", "plan-1"))
	assert.Nil(t, h.s.Checkpoint)
	assert.Equal(t, SessionRunning, h.s.Status)
	assert.Contains(t, notices(h.actions), "plan-1 approved by alice: the work starts.")
	var started []string
	for _, a := range h.dispatched() {
		started = append(started, a.Group+"/"+a.Role.String())
	}
	assert.Equal(t, []string{"A/developer", "B/developer"}, started)
	require.Len(t, h.s.PassedCheckpoints, 1)
	assert.Equal(t, "alice", h.s.PassedCheckpoints[0].ApprovedBy)

	// A second approval of the same plan changes nothing but says so.
	h.reconcile(approveCmd("bob", "plan-1"))
	assert.Contains(t, notices(h.actions), "plan-1 was already approved by alice.")
	assert.Empty(t, h.dispatched())
}

func TestPlanCheckpointFeedbackReplansAndApprovalBindsToTheRevision(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.plan(pg("A", 1), pg("B", 1))
	first := h.s.Checkpoint.Step
	assertHeldAt(t, h, "plan-1")

	// Feedback sends the plan back to the pm with the text.
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "Split B into two groups."}))
	assert.Nil(t, h.s.Checkpoint)
	assert.Empty(t, h.s.Groups, "the old plan is gone; nothing of it started")
	assert.Equal(t, SessionPlanning, h.s.Status)
	assert.Contains(t, notices(h.actions), "alice sent plan-1 back to the pm")
	pm := h.inFlight(LeadGroup)
	assert.Equal(t, RolePM, pm.Role)
	assert.Equal(t, PurposePlan, pm.Purpose)
	assert.Equal(t, first, pm.From, "the pm sees its previous plan")
	assert.Contains(t, pm.Feedback, "Split B into two groups.")
	assert.Contains(t, pm.Feedback, "alice reviewed your plan (plan-1)")

	// The new plan reaches the checkpoint again, as plan-2.
	h.report(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1), pg("B1", 1), pg("B2", 2, "B1")), "replanned")
	assertHeldAt(t, h, "plan-2")
	require.Len(t, h.s.PassedCheckpoints, 1)
	assert.Equal(t, "alice", h.s.PassedCheckpoints[0].RevisedBy)
	assert.Equal(t, "Split B into two groups.", h.s.PassedCheckpoints[0].Feedback)

	// An approval written for plan-1 does not approve plan-2 unseen.
	h.reconcile(approveCmd("bob", "plan-1"))
	assertHeldAt(t, h, "plan-2")
	assert.Contains(t, notices(h.actions), "The approval by bob is for plan-1, which was sent back to the pm; it does not approve plan-2.")
	// Nor does one written before any plan was shown.
	h.reconcile(approveCmd("bob", NoCheckpoint))
	assertHeldAt(t, h, "plan-2")
	assert.Contains(t, notices(h.actions), "was written before plan-2 was shown")

	h.reconcile(approveCmd("bob", "plan-2"))
	assert.Nil(t, h.s.Checkpoint)
	assert.Len(t, h.dispatched(), 2, "A and B1 start")
	assert.True(t, h.s.approved("plan-2"))
	assert.False(t, h.s.approved("plan-1"))
}

func TestResumeApprovesOnlyTheCheckpointItNames(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.plan(pg("A", 1))
	// A resume that names nothing (the label put back) does not approve.
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
	assertHeldAt(t, h, "plan-1")
	assert.Contains(t, notices(h.actions), "plan-1 still waits for approval")
	// One written about the checkpoint does.
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume, Checkpoint: "plan-1"}))
	assert.Nil(t, h.s.Checkpoint)
	assert.Len(t, h.dispatched(), 1)
}

func TestStopAndPauseAtACheckpoint(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.plan(pg("A", 1))
	// Stop still stops; the checkpoint survives for a later resume.
	h.reconcile(CommandEvent("s1", "bob", Command{Kind: CommandStop}))
	assert.Equal(t, SessionStopped, h.s.Status)
	require.NotNil(t, h.s.Checkpoint)
	// An approval of a stopped session is kept but does not restart it.
	h.reconcile(approveCmd("alice", "plan-1"))
	assert.Equal(t, SessionStopped, h.s.Status)
	assert.Empty(t, h.dispatched())
	assert.True(t, h.s.approved("plan-1"))
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
	assert.Equal(t, SessionRunning, h.s.Status)
	assert.Len(t, h.dispatched(), 1)

	// A pause at a checkpoint: the resume comes back to the checkpoint.
	h2 := newHarness(t, checkpointConfig(CheckpointPlan))
	h2.plan(pg("A", 1))
	h2.reconcile(CommandEvent("s1", "bob", Command{Kind: CommandPause, Text: "label removed by bob"}))
	assert.Equal(t, SessionPaused, h2.s.Status)
	assert.Equal(t, WaitPaused, h2.s.Groups[0].Wait)
	h2.reconcile(CommandEvent("s1", "bob", Command{Kind: CommandResume}))
	assertHeldAt(t, h2, "plan-1")
}

func TestPhaseCheckpointHoldsTheNextPhase(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPhase))
	h.plan(pg("A", 1), pg("B", 2, "A"), pg("C", 2))
	assert.Nil(t, h.s.Checkpoint, "the first phase starts with the plan")
	h.through("A", StatusReadyForQA, StatusPass, StatusApproved, StatusMergeSuccess)
	require.NotNil(t, h.s.Checkpoint)
	assert.Equal(t, "phase-2", h.s.Checkpoint.ID)
	assert.Equal(t, SessionAwaitingInput, h.s.Status)
	assert.Contains(t, notices(h.actions), "Phase 1 is done; phase 2 (B, C) waits for approval before it starts.")
	for _, id := range []string{"B", "C"} {
		assert.Equal(t, WaitCheckpoint, h.group(id).Wait, id)
	}
	assert.Empty(t, h.dispatched())

	// Feedback at a phase checkpoint goes to the pm; the checkpoint stays.
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "Do C before B."}))
	require.NotNil(t, h.s.Checkpoint)
	pm := h.inFlight(LeadGroup)
	assert.Equal(t, PurposeCoordinate, pm.Purpose)
	require.NotEmpty(t, pm.Notes)
	assert.Contains(t, pm.Notes[0].Text, "Before phase 2 starts, alice says: Do C before B.")
	h.report(LeadGroup, StatusContinue, `{"groups":[],"feedback":{"C":"first"}}`, "noted")
	require.NotNil(t, h.s.Checkpoint, "the pm does not pass a checkpoint")
	assert.Equal(t, WaitCheckpoint, h.s.Lead.Wait)

	h.reconcile(approveCmd("alice", ""))
	assert.Nil(t, h.s.Checkpoint)
	assert.Contains(t, notices(h.actions), "phase-2 approved by alice: phase 2 starts.")
	assert.Len(t, h.dispatched(), 2)
}

func TestPhaseCheckpointWithNothingLeftClosesItself(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPhase))
	h.plan(pg("A", 1), pg("B", 2))
	h.through("A", StatusReadyForQA, StatusPass, StatusApproved, StatusMergeSuccess)
	require.NotNil(t, h.s.Checkpoint)
	// B's PR never existed, but a human can still close the group out.
	h.reconcile(Event{Kind: EventPRClosed, Session: "s1", Group: "B", Actor: "carol"})
	assert.Nil(t, h.s.Checkpoint, "phase 2 has nothing left to start")
	assert.NotEqual(t, SessionAwaitingInput, h.s.Status)
}

func TestBothCheckpoints(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan, CheckpointPhase))
	h.plan(pg("A", 1), pg("B", 2))
	assertHeldAt(t, h, "plan-1")
	h.reconcile(approveCmd("alice", "plan-1"))
	h.through("A", StatusReadyForQA, StatusPass, StatusApproved, StatusMergeSuccess)
	require.NotNil(t, h.s.Checkpoint)
	assert.Equal(t, "phase-2", h.s.Checkpoint.ID)
	// The plan approval does not approve the phase.
	h.reconcile(approveCmd("alice", "plan-1"))
	assert.Equal(t, "phase-2", h.s.Checkpoint.ID)
	h.reconcile(approveCmd("alice", "phase-2"))
	assert.Nil(t, h.s.Checkpoint)
	assert.Len(t, h.dispatched(), 1)
}

func TestContinueFromNothingReachesThePlanCheckpoint(t *testing.T) {
	// A pm that answers its planning step with CONTINUE and groups plans too:
	// the checkpoint holds those groups as it holds a PLANNING_COMPLETE's.
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.start("build it")
	h.report(LeadGroup, StatusContinue, `{"groups":[{"id":"A","task":"a"}]}`, "continue")
	assertHeldAt(t, h, "plan-1")
}

func TestClarificationDuringAPhaseCheckpoint(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPhase))
	h.plan(pg("A", 1), pg("B", 2))
	h.through("A", StatusReadyForQA, StatusPass, StatusApproved, StatusMergeSuccess)
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "one more check"}))
	h.report(LeadGroup, StatusNeedsClarification, `{"question":"Which API?","fallback":"v2"}`, "asks")
	require.NotNil(t, h.s.Clarification)
	// The answer goes to the question, not to the checkpoint.
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "v3"}))
	assert.Nil(t, h.s.Clarification)
	require.NotNil(t, h.s.Checkpoint)
	assert.Equal(t, SessionAwaitingInput, h.s.Status, "still waiting for the phase approval")
	assert.Contains(t, h.inFlight(LeadGroup).Feedback, "v3")
}

// A wait on a checkpoint is a named wait only while one is open: the same
// session with the checkpoint taken away is silently idle.
func TestLivenessNeedsTheCheckpointItWaitsOn(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.plan(pg("A", 1), pg("B", 1))
	require.NoError(t, CheckLiveness(h.s, h.cfg))

	s := h.s.Clone()
	s.Checkpoint = nil
	err := CheckLiveness(s, h.cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "group A waits on a checkpoint, but none is open")
	assert.Contains(t, err.Error(), "the session lead waits on a checkpoint, but none is open")
	assert.Contains(t, err.Error(), "nothing in flight and waits on no human")

	s.Status = SessionRunning // even with a consistent status
	err = CheckLiveness(s, h.cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "waits on a checkpoint, but none is open")

	// A checkpoint nothing waits on does not make an idle session a human wait.
	s = h.s.Clone()
	s.Lead.Wait, s.Lead.WaitDetail = WaitGroups, "1 group(s) at work"
	for i := range s.Groups {
		s.Groups[i].Wait, s.Groups[i].WaitDetail = WaitDependencies, "waits for Z to merge"
	}
	err = CheckLiveness(s, h.cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plan-1 is open, but nothing waits on it")

	// A phase checkpoint does not hold another phase's groups.
	s = h.s.Clone()
	s.Checkpoint = &Checkpoint{ID: "phase-2", Kind: CheckpointPhase, Phase: 2}
	err = CheckLiveness(s, h.cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "group A waits on a checkpoint, but phase-2 does not hold it")
}

// The transition checker refuses what the engine must never do at a checkpoint.
func TestCheckerCatchesCheckpointViolations(t *testing.T) {
	cfg := checkpointConfig(CheckpointPlan)
	h := newHarness(t, cfg)
	h.plan(pg("A", 1))
	before := h.s

	// Passing the checkpoint without a human.
	after := before.Clone()
	done := *after.Checkpoint
	done.ApprovedBy, done.Ended = "nobody", h.now
	after.PassedCheckpoints = append(after.PassedCheckpoints, done)
	after.Checkpoint = nil
	after.Status = SessionRunning
	err := checkTransition(transition{before: before, events: []Event{Tick("s1")}, cfg: cfg, after: after})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plan-1 passed")

	// A stale approval passing it.
	err = checkTransition(transition{before: before, events: []Event{approveCmd("bob", "plan-0")}, cfg: cfg, after: after})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "without a command that names it")

	// Starting a group at the checkpoint.
	s2, acts := Reconcile(before, []Event{approveCmd("bob", "plan-1")}, h.now, cfg)
	require.NoError(t, checkTransition(transition{before: before, events: []Event{approveCmd("bob", "plan-1")}, cfg: cfg, after: s2, acts: acts}))
	forged := s2.Clone()
	forged.Checkpoint = before.Checkpoint
	forged.PassedCheckpoints = nil
	err = checkTransition(transition{before: before, events: []Event{Tick("s1")}, cfg: cfg, after: forged, acts: acts})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dispatched while plan-1 waits for approval")
	assert.Contains(t, err.Error(), "group A started, but plan-1 was never approved")
}

func TestCheckpointAt(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.plan(pg("A", 1))
	opened := h.now
	h.now = h.now.Add(time.Hour)
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "smaller"}))
	revised := h.now
	h.now = h.now.Add(time.Hour)
	h.report(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1)), "again")
	second := h.now

	s := h.s
	assert.Equal(t, NoCheckpoint, s.CheckpointAt(opened.Add(-time.Second)), "before any plan")
	assert.Equal(t, "plan-1", s.CheckpointAt(opened))
	assert.Equal(t, "plan-1", s.CheckpointAt(revised.Add(-time.Second)))
	assert.Equal(t, NoCheckpoint, s.CheckpointAt(revised.Add(time.Second)), "while the pm re-planned")
	assert.Equal(t, "plan-2", s.CheckpointAt(second))
	assert.Equal(t, "plan-2", s.CheckpointAt(second.Add(time.Hour)))
}

func TestCheckpointSessionRoundTripsAndSnapshots(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.plan(pg("A", 1))
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "smaller"}))
	h.report(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1)), "again")
	b, err := h.s.Marshal()
	require.NoError(t, err)
	back, err := UnmarshalSession(b)
	require.NoError(t, err)
	assert.Equal(t, h.s, back)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	assert.Equal(t, "plan", raw["checkpoint"].(map[string]any)["kind"])
	snap := h.s.Snapshot(0)
	assert.NotNil(t, snap.Step(h.s.Checkpoint.Step), "the step whose plan waits is kept")
	// The clone shares nothing with the original.
	c := h.s.Clone()
	c.Checkpoint.ID = "changed"
	c.PassedCheckpoints[0].ID = "changed"
	assert.Equal(t, "plan-2", h.s.Checkpoint.ID)
	assert.Equal(t, "plan-1", h.s.PassedCheckpoints[0].ID)
}

func TestPlanText(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.plan(pg("A", 1), pg("B", 2, "A"))
	assert.Equal(t, "Phase 1:\n  A group A (implementation, developer): do A\n"+
		"Phase 2:\n  B group B (implementation, developer), after A: do B\n"+
		"Success criteria:\n  - it works\n", PlanText(h.s))
}

func TestRefusedCheckpointConfiguration(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Checkpoints = []CheckpointKind{CheckpointKind("later")}
	s, acts := Reconcile(Session{}, []Event{Started("s1", "x", "main")}, t0, cfg)
	assert.Equal(t, SessionNew, s.Status)
	require.Len(t, acts, 1)
	assert.Contains(t, acts[0].Text, "checkpoints names later; it must be plan or phase")
}

func TestHasCheckpoint(t *testing.T) {
	assert.True(t, checkpointConfig(CheckpointPhase).HasCheckpoint(CheckpointPhase))
	assert.False(t, checkpointConfig(CheckpointPhase).HasCheckpoint(CheckpointPlan))
}

// Found by FuzzReconcile: feedback on a plan must not drop a group whose
// PR a human merged while the plan waited — its work is on the base; only
// the plan under review goes back to the pm, and the new plan adds to what
// stays (and waits for approval as a new revision).
func TestPlanFeedbackKeepsGroupsThatEnded(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.plan(pg("A", 1), pg("B", 1))
	assertHeldAt(t, h, "plan-1")
	h.reconcile(Event{Kind: EventPRClosed, Session: "s1", Group: "A", Actor: "carol", Merged: true, Commit: "byhand"})
	require.Equal(t, StageMerged, h.group("A").Stage)

	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "Drop B."}))
	require.Len(t, h.s.Groups, 1, "B (never started) goes back with the plan; merged A stays")
	assert.Equal(t, StageMerged, h.group("A").Stage)
	pm := h.inFlight(LeadGroup)
	assert.Equal(t, RolePM, pm.Role)
	assert.False(t, pm.Baseline, "a base with merged work is not the session's starting base")

	// The new plan adds to merged A and waits, as plan-2, for approval.
	h.report(LeadGroup, StatusPlanningComplete, planJSON(pg("C", 1)), "replanned")
	require.NotNil(t, h.s.Checkpoint)
	assert.Equal(t, "plan-2", h.s.Checkpoint.ID)
	assert.Equal(t, SessionAwaitingInput, h.s.Status)
	assert.Empty(t, h.s.InFlight())
	assert.Equal(t, WaitCheckpoint, h.group("C").Wait)
	h.reconcile(approveCmd("bob", ""))
	assert.Equal(t, RoleDeveloper, h.inFlight("C").Role)
	assert.Equal(t, StageMerged, h.group("A").Stage)
}
