package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A failure that retrying cannot fix (the CLI's credentials refused, its
// command line rejected) pauses the session at once, spends no attempt and
// leaves the same work ready to run after resume.
func TestPermanentFailurePausesAtOnce(t *testing.T) {
	tests := []struct {
		name      string
		group     string
		transient int // failures before the permanent one
	}{
		{"first attempt of a group step", "A", 0},
		{"after a retry", "A", 1},
		{"the last attempt", "A", 2},
		{"the pm's step", LeadGroup, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, DefaultConfig())
			if tt.group == LeadGroup {
				h.start("build the thing")
			} else {
				h.plan(pg("A", 1), pg("B", 1))
			}
			for range tt.transient {
				h.reconcile(StepFailure("s1", h.inFlight(tt.group).ID, "runner lost"))
			}
			st := h.inFlight(tt.group)
			require.Equal(t, 1+tt.transient, st.Attempt)
			h.reconcile(StepFailurePermanent("s1", st.ID, "claude: invalid API key (401)"))

			assert.Equal(t, SessionPaused, h.s.Status)
			assert.Equal(t, "step "+st.ID+" failed and retrying will not fix it: claude: invalid API key (401); "+
				"fix the cause, then resume or retry", h.s.Reason)
			var pauses []Action
			for _, a := range h.actions {
				if a.Kind == ActionPause {
					pauses = append(pauses, a)
				}
			}
			require.Len(t, pauses, 1)
			assert.Equal(t, h.s.Reason, pauses[0].Text)
			assert.Empty(t, h.dispatched(), "nothing is sent while paused")
			done := h.s.Step(st.ID)
			assert.Equal(t, StepFailed, done.State)
			assert.Equal(t, "claude: invalid API key (401)", done.Note)
			assert.Equal(t, "paused", done.Routed)

			var tr Track
			if tt.group == LeadGroup {
				tr = h.s.Lead
			} else {
				tr = h.group(tt.group).Track
			}
			assert.Empty(t, tr.InFlight)
			require.NotNil(t, tr.Next)
			assert.Equal(t, st.StepSpec, *tr.Next, "the same work waits, no attempt spent")
			assert.Equal(t, StageBlocked, tr.Stage)

			h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
			again := h.inFlight(tt.group)
			assert.NotEqual(t, st.ID, again.ID)
			assert.Equal(t, st.Role, again.Role)
			assert.Equal(t, st.Purpose, again.Purpose)
			assert.Equal(t, st.Model, again.Model)
			assert.Equal(t, 1, again.Attempt)
			assert.NotEqual(t, SessionPaused, h.s.Status)
		})
	}
}

func TestPermanentFailureWhilePaused(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1))
	a, b := h.inFlight("A"), h.inFlight("B")
	h.reconcile(StepFailurePermanent("s1", a.ID, "bad key"), StepFailurePermanent("s1", b.ID, "bad key"))
	assert.Equal(t, SessionPaused, h.s.Status)
	assert.Contains(t, h.s.Reason, a.ID)
	assert.Contains(t, h.s.Reason, b.ID, "both steps are named")
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandRetry, Group: "B"}))
	h.inFlight("A")
	h.inFlight("B")
}

func TestPermanentFailureOfAStepNotInFlightIsIgnored(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	h.reconcile(StepFailurePermanent("s1", "s1/A/developer/99", "bad key"))
	assert.Equal(t, SessionRunning, h.s.Status)
	h.inFlight("A")
}

func TestEventPermanentJSON(t *testing.T) {
	b, err := json.Marshal(StepFailure("s1", "x", "crash"))
	require.NoError(t, err)
	assert.NotContains(t, string(b), "permanent", "omitted when false")
	b, err = json.Marshal(StepFailurePermanent("s1", "x", "bad key"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"permanent":true`)
	var ev Event
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"step_failed","session":"s1","step":"x","reason":"r"}`), &ev))
	assert.False(t, ev.Permanent, "an event written before the field is transient")
}
