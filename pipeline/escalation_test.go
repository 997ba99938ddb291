package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One case per escalation threshold: a path of results from the start of
// group A, and where the work must be after it.
func TestEscalationThresholds(t *testing.T) {
	tests := []struct {
		name    string
		at      reach
		path    []Status
		role    Role // 0: the group waits on the pm
		purpose Purpose
		cfg     func(*Config)
	}{
		{name: "developer PARTIAL, 1st revision → developer", path: []Status{StatusPartial}, role: RoleDeveloper, purpose: PurposeRevise},
		{name: "developer PARTIAL, 2nd revision → senior", path: []Status{StatusPartial, StatusPartial}, role: RoleSenior, purpose: PurposeRevise},
		{name: "senior PARTIAL, 1st senior revision → senior", at: atSenior, path: []Status{StatusPartial}, role: RoleSenior, purpose: PurposeRevise},
		{name: "senior PARTIAL, 2nd senior revision → tech_lead guidance", at: atSenior, path: []Status{StatusPartial, StatusPartial}, role: RoleTechLead, purpose: PurposeGuidance},
		{name: "qa FAIL on a group with no revision → developer", path: []Status{StatusReadyForQA, StatusFail}, role: RoleDeveloper, purpose: PurposeFixQA},
		{name: "qa FAIL after a revision → senior", path: []Status{StatusPartial, StatusReadyForQA, StatusFail}, role: RoleSenior, purpose: PurposeFixQA},
		{name: "CHANGES_REQUESTED round 1 → developer", path: []Status{StatusReadyForReview, StatusChangesRequested}, role: RoleDeveloper, purpose: PurposeFixReview},
		{name: "CHANGES_REQUESTED round 2 → senior", path: []Status{StatusReadyForReview, StatusChangesRequested, StatusReadyForReview, StatusChangesRequested},
			role: RoleSenior, purpose: PurposeFixReview},
		{name: "CHANGES_REQUESTED round 3 → tech_lead guidance", path: []Status{StatusReadyForReview, StatusChangesRequested, StatusReadyForReview,
			StatusChangesRequested, StatusReadyForReview, StatusChangesRequested}, role: RoleTechLead, purpose: PurposeGuidance},
		{name: "4th review → pm (review attempts > 3)", path: []Status{StatusReadyForReview, StatusChangesRequested, StatusReadyForReview,
			StatusChangesRequested, StatusReadyForReview, StatusChangesRequested, StatusUnblockingGuidance, StatusReadyForReview}},
		{name: "merge failure 1 → developer", at: atMerge, path: []Status{StatusMergeConflict}, role: RoleDeveloper, purpose: PurposeFixMerge},
		{name: "merge failure 2 → senior", at: atMerge, path: []Status{StatusMergeConflict, StatusReadyForReview, StatusApproved, StatusMergeTestFailure},
			role: RoleSenior, purpose: PurposeFixMerge},
		{name: "merge failure 3 → tech_lead", at: atMerge, path: []Status{StatusMergeConflict, StatusReadyForReview, StatusApproved, StatusMergeTestFailure,
			StatusReadyForReview, StatusApproved, StatusMergeConflict}, role: RoleTechLead, purpose: PurposeGuidance},
		{name: "merge failure 4 → pm", at: atMerge, path: []Status{StatusMergeConflict, StatusReadyForReview, StatusApproved, StatusMergeTestFailure,
			StatusReadyForReview, StatusApproved, StatusMergeConflict, StatusUnblockingGuidance, StatusReadyForReview, StatusApproved, StatusMergeConflict},
			cfg: func(c *Config) { c.Limits.ReviewAttempts = 10 }},
		{name: "reviews after merge failures count: 4th review → pm", at: atMerge, path: []Status{StatusMergeConflict, StatusReadyForReview, StatusApproved,
			StatusMergeTestFailure, StatusReadyForReview, StatusApproved, StatusMergeConflict, StatusUnblockingGuidance, StatusReadyForReview}},
		{name: "developer iterations > 5 → pm", path: []Status{StatusPartial, StatusPartial, StatusPartial, StatusPartial, StatusUnblockingGuidance, StatusPartial}},
		{name: "QA attempts > 3 → tech_lead", path: []Status{StatusReadyForQA, StatusFlaky, StatusApproved, StatusMergeTestFailure, StatusReadyForQA,
			StatusFail, StatusReadyForQA, StatusFail, StatusReadyForQA}, role: RoleTechLead, purpose: PurposeGuidance},
		{name: "investigation: 4 more iterations continue", at: atInvestigator, path: []Status{StatusNeedMoreAnalysis, StatusNeedMoreAnalysis, StatusHypothesisEliminated, StatusNeedMoreAnalysis},
			role: RoleInvestigator, purpose: PurposeInvestigate},
		{name: "investigation: 5 iterations → tech_lead with partial findings", at: atInvestigator, path: []Status{StatusNeedMoreAnalysis, StatusNeedMoreAnalysis,
			StatusHypothesisEliminated, StatusNeedMoreAnalysis, StatusNeedMoreAnalysis}, role: RoleTechLead, purpose: PurposeValidateFindings},
		{name: "ESCALATE_TO_OPUS twice → pm", at: atReview, path: []Status{StatusEscalateToOpus, StatusEscalateToOpus}},
		{name: "tech_lead guidance exhausted → pm", at: atGuidance, path: []Status{StatusUnblockingGuidance, StatusBlocked, StatusUnblockingGuidance, StatusBlocked, StatusUnblockingGuidance, StatusBlocked}},
		{name: "limits come from the configuration", path: []Status{StatusPartial, StatusPartial},
			cfg: func(c *Config) { c.Limits.DeveloperIterations = 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			h := tt.at.setup(t, cfg)
			h.through("A", tt.path...)
			if tt.role == RoleUnknown {
				a := h.group("A")
				assert.Equal(t, WaitPM, a.Wait, "group A should wait on the pm")
				assert.Equal(t, StageBlocked, a.Stage)
				assert.Equal(t, RolePM, h.inFlight(LeadGroup).Role)
				return
			}
			st := h.inFlight("A")
			assert.Equal(t, tt.role, st.Role)
			assert.Equal(t, tt.purpose, st.Purpose)
		})
	}
}

func TestQAFailHardChallengeGoesToSenior(t *testing.T) {
	h := atQA.setup(t, DefaultConfig())
	h.report("A", StatusFail, `{"challenge_level":4,"failures":["race in cache"]}`, "race in cache")
	st := h.inFlight("A")
	assert.Equal(t, RoleSenior, st.Role)
	assert.Equal(t, "race in cache", st.Feedback)
}

func TestStepWithoutResultIsRetriedThenPauses(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	first := h.inFlight("A")
	h.reconcile(StepFailure("s1", first.ID, "job cancelled"))
	second := h.inFlight("A")
	assert.Equal(t, 2, second.Attempt)
	assert.Equal(t, first.Purpose, second.Purpose)
	assert.Equal(t, 0, h.group("A").Counters.Iterations, "a retry is not another iteration (only results count)")
	// The third attempt never reports: the tick after its deadline fails it.
	h.reconcile(StepFailure("s1", second.ID, "runner lost"))
	third := h.inFlight("A")
	assert.Equal(t, 3, third.Attempt)
	h.now = h.now.Add(DefaultConfig().Agent.Timeout.D() + StepGrace + time.Second)
	h.reconcile(Tick("s1"))
	assert.Equal(t, SessionPaused, h.s.Status)
	assert.Contains(t, h.s.Reason, third.ID)
	assert.Contains(t, h.s.Reason, "failed 3 times")
	assert.Equal(t, WaitPaused, h.group("A").Wait)
	// A human resumes: the work gets fresh attempts.
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
	fourth := h.inFlight("A")
	assert.Equal(t, 1, fourth.Attempt)
	assert.Equal(t, SessionRunning, h.s.Status)
}

func TestCommands(t *testing.T) {
	t.Run("stop cancels steps; resume redoes them", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1), pg("B", 1))
		a := h.inFlight("A")
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandStop}))
		assert.Equal(t, SessionStopped, h.s.Status)
		assert.Equal(t, "stopped by alice", h.s.Reason)
		assert.Equal(t, StepCancelled, h.s.Step(a.ID).State)
		assert.Empty(t, h.s.InFlight())
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
		assert.Equal(t, SessionRunning, h.s.Status)
		again := h.inFlight("A")
		assert.NotEqual(t, a.ID, again.ID)
		assert.Equal(t, a.Purpose, again.Purpose)
	})
	t.Run("resume on a live session sends the steps in flight again", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1))
		a := h.inFlight("A")
		// Sent a moment ago: left to run, and the reply says so.
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
		assert.Empty(t, h.dispatched(), "a step sent less than ResendAfter ago is not sent again")
		require.NotEmpty(t, h.notices())
		assert.Contains(t, h.notices()[0].Text, a.ID+" were sent less than 1m0s ago")
		// A minute later it is sent again, under the same id.
		h.now = h.now.Add(ResendAfter)
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
		require.Len(t, h.dispatched(), 1)
		assert.Equal(t, "dispatch/"+a.ID, h.dispatched()[0].ID, "same id: executing it again is a no-op")
		assert.Equal(t, a.ID, h.inFlight("A").ID)
		// Repeated resumes do not start a job each.
		for range 5 {
			h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
			assert.Empty(t, h.dispatched())
		}
		// A restart (a local runner that was killed) knows the step is lost.
		h.reconcile(CommandEvent("s1", "local", Command{Kind: CommandResume, Restart: true}))
		require.Len(t, h.dispatched(), 1)
		assert.Equal(t, "dispatch/"+a.ID, h.dispatched()[0].ID)
	})
	t.Run("retry group cancels its step and dispatches it afresh", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1))
		a := h.inFlight("A")
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandRetry, Group: "A"}))
		assert.Equal(t, StepCancelled, h.s.Step(a.ID).State)
		b := h.inFlight("A")
		assert.NotEqual(t, a.ID, b.ID)
		assert.Equal(t, RoleDeveloper, b.Role)
	})
	t.Run("retry of an unknown or merged group is refused with a message", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1))
		acts := h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandRetry, Group: "Z"}))
		assert.Contains(t, acts[0].Text, `no group "Z"`)
		h.through("A", StatusReadyForReview, StatusApproved, StatusMergeSuccess)
		acts = h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandRetry, Group: "A"}))
		assert.Contains(t, acts[0].Text, "already merged")
	})
	t.Run("retry revives an abandoned group", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1), pg("B", 1))
		h.reconcile(Event{Kind: EventPRClosed, Session: "s1", Group: "A", Actor: "carol"})
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandRetry, Group: "A"}))
		assert.Equal(t, RoleDeveloper, h.inFlight("A").Role)
	})
	t.Run("answer without a question is refused", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1))
		acts := h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "yes"}))
		assert.Equal(t, NoticeInfo, acts[0].Notice)
		assert.Contains(t, acts[0].Text, "No question")
	})
	t.Run("pause and resume", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1))
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandPause, Text: "label removed by alice"}))
		assert.Equal(t, SessionPaused, h.s.Status)
		// The step in flight may still report; its successor waits for the resume.
		h.report("A", StatusReadyForQA, "")
		assert.Equal(t, WaitPaused, h.group("A").Wait)
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
		assert.Equal(t, RoleQA, h.inFlight("A").Role)
	})
	t.Run("the pm making no progress fails the session; resume gives it more rounds", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.start("x")
		for i := 0; i < 20 && h.s.Status == SessionPlanning; i++ {
			h.report(LeadGroup, StatusPartial, "", "malformed output")
		}
		assert.Equal(t, SessionFailed, h.s.Status)
		assert.Contains(t, h.s.Reason, "no progress")
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
		assert.Equal(t, RolePM, h.inFlight(LeadGroup).Role)
	})
}
