package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A front-end held off GitHub (a rate limit's wait) could neither read a
// step's result nor send its run: the step's deadline moves by the part of
// the hold it spent in flight, and only that.
func TestHeldMovesTheDeadlinesOfStepsInFlight(t *testing.T) {
	cfg := DefaultConfig()
	h := newHarness(t, cfg)
	h.start("build it")
	pm := h.inFlight(LeadGroup)
	limit := cfg.Agent.Timeout.D() + StepGrace
	from := t0.Add(5 * time.Minute)
	to := from.Add(90 * time.Minute)
	h.now = to
	h.reconcile(Held("s1", from, to))
	assert.Equal(t, StepInFlight, h.s.Step(pm.ID).State, "the hold does not count")
	assert.Equal(t, Duration(90*time.Minute), h.s.Step(pm.ID).Held)
	h.now = t0.Add(limit + 90*time.Minute - time.Second)
	h.reconcile(Tick("s1"))
	assert.Equal(t, StepInFlight, h.s.Step(pm.ID).State)
	h.now = t0.Add(limit + 90*time.Minute + time.Second)
	h.reconcile(Tick("s1"))
	assert.Equal(t, StepFailed, h.s.Step(pm.ID).State, "past the moved deadline")
}

func TestHeldIgnoresHoldsThatAreNot(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("build it")
	pm := h.inFlight(LeadGroup)
	h.now = t0.Add(time.Hour)
	for _, ev := range []Event{
		Held("s1", time.Time{}, t0.Add(time.Minute)),                 // no start
		Held("s1", t0.Add(time.Minute), t0),                          // backwards
		Held("s1", t0.Add(time.Minute), t0.Add(2*time.Hour)),         // in the future
		{Kind: EventHeld, Session: "s1", StartedAt: t0, EndedAt: t0}, // empty
	} {
		h.reconcile(ev)
		assert.Zero(t, h.s.Step(pm.ID).Held)
	}
}
