package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 23: every human input is bound to what its author saw.

// Feedback written about plan-1 and delivered after plan-2 opened does not
// send plan-2 back; feedback bound to plan-2 does.
func TestFeedbackBindsToThePlanItsAuthorSaw(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.plan(pg("A", 1), pg("B", 1))
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "split B", Checkpoint: "plan-1"}))
	h.report(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1), pg("B1", 1), pg("B2", 1)), "replanned")
	assertHeldAt(t, h, "plan-2")
	before := h.s.Clone()

	for _, c := range []struct{ id, says string }{
		{"plan-1", "The feedback by bob is about plan-1, which no longer waits; it does not change plan-2."},
		{NoCheckpoint, "The feedback by bob was written before plan-2 was shown; it does not change plan-2."},
	} {
		h.reconcile(CommandEvent("s1", "bob", Command{Kind: CommandAnswer, Text: "split B", Checkpoint: c.id}))
		assertHeldAt(t, h, "plan-2")
		assert.Equal(t, before.Groups, h.s.Groups, "plan-2 stays as it was")
		assert.Len(t, h.s.PassedCheckpoints, 1)
		assert.Contains(t, notices(h.actions), c.says)
	}

	h.reconcile(CommandEvent("s1", "bob", Command{Kind: CommandAnswer, Text: "merge B1 and B2", Checkpoint: "plan-2"}))
	assert.Nil(t, h.s.Checkpoint)
	require.Len(t, h.s.PassedCheckpoints, 2)
	assert.Equal(t, "bob", h.s.PassedCheckpoints[1].RevisedBy)
	assert.Contains(t, h.inFlight(LeadGroup).Feedback, "merge B1 and B2")
}

// An answer written before the pm asked its question answers nothing; one
// bound to the question, or unbound (a terminal), answers it.
func TestAnswerBindsToTheQuestionItsAuthorSaw(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("x")
	pm := h.report(LeadGroup, StatusNeedsClarification, `{"question":"Postgres or SQLite?","fallback":"SQLite"}`)
	require.NotNil(t, h.s.Clarification)
	assert.Equal(t, pm.ID, h.s.QuestionAt(h.now))
	assert.Equal(t, NoQuestion, h.s.QuestionAt(h.now.Add(-time.Second)))

	for _, q := range []string{NoQuestion, "s1/_/pm/0"} {
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "Postgres", Question: q}))
		require.NotNil(t, h.s.Clarification, "question %q is not this one", q)
		assert.Contains(t, notices(h.actions), `The answer by alice was written before the pm asked "Postgres or SQLite?"`)
		_, running := h.maybeInFlight(LeadGroup)
		assert.False(t, running)
	}
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "Postgres", Question: pm.ID}))
	assert.Nil(t, h.s.Clarification)
	assert.Contains(t, h.inFlight(LeadGroup).Feedback, "Answer from alice: Postgres")

	// Unbound, from a terminal that shows the open question.
	h2 := newHarness(t, DefaultConfig())
	h2.start("x")
	h2.report(LeadGroup, StatusNeedsClarification, `{"question":"Which?"}`)
	h2.reconcile(CommandEvent("s1", "t", Command{Kind: CommandAnswer, Text: "this"}))
	assert.Nil(t, h2.s.Clarification)
}

// A resume names the checkpoint its author saw: one written about plan-1
// resumes a paused session but does not approve plan-2.
func TestResumeAtACheckpointBindsToIt(t *testing.T) {
	h := newHarness(t, checkpointConfig(CheckpointPlan))
	h.plan(pg("A", 1))
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "smaller", Checkpoint: "plan-1"}))
	h.report(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1)), "replanned")
	assertHeldAt(t, h, "plan-2")
	h.reconcile(CommandEvent("s1", "bob", Command{Kind: CommandResume, Checkpoint: "plan-1"}))
	assertHeldAt(t, h, "plan-2")
	h.reconcile(CommandEvent("s1", "bob", Command{Kind: CommandResume, Checkpoint: "plan-2"}))
	assert.Nil(t, h.s.Checkpoint)
	assert.True(t, h.s.approved("plan-2"))
}
