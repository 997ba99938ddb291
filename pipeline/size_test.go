package pipeline

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sized(id string, phase int, size string, deps ...string) PlanGroup {
	g := pg(id, phase, deps...)
	g.Size = size
	return g
}

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Size
		ok   bool
	}{{"", SizeUnknown, true}, {"S", SizeS, true}, {" m ", SizeM, true}, {"l", SizeL, true}, {"XL", SizeXL, true},
		{"XXL", SizeUnknown, false}, {"3", SizeUnknown, false}, {"medium", SizeUnknown, false}} {
		got, err := parseSize(c.in)
		assert.Equal(t, c.want, got, "%q", c.in)
		assert.Equal(t, c.ok, err == nil, "%q: %v", c.in, err)
	}
	// A size travels through JSON by name.
	b, err := json.Marshal(Group{ID: "A", Size: SizeXL})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"size":"XL"`)
	var g Group
	require.NoError(t, json.Unmarshal(b, &g))
	assert.Equal(t, SizeXL, g.Size)
}

func TestPlanSizes(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("x")
	h.report(LeadGroup, StatusPlanningComplete, planJSON(sized("A", 1, "huge"), sized("B", 1, "M")))
	assert.Empty(t, h.s.Groups, "a plan with a size the contract does not know is refused")
	assert.Contains(t, h.inFlight(LeadGroup).Feedback, `group "A": size "HUGE" is not S, M, L or XL`)
	h.report(LeadGroup, StatusPlanningComplete, planJSON(sized("A", 1, "xl"), sized("B", 1, "")))
	assert.Equal(t, SizeXL, h.group("A").Size)
	assert.Equal(t, SizeUnknown, h.group("B").Size)
	assert.Contains(t, PlanText(h.s), "A group A (implementation, developer, size XL)")
}

// The ready group with the longest chain of estimated work starts first:
// one XL group outweighs a chain of two small ones.
func TestLongestWeightedChainStartsFirst(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxParallel = 1
	h := newHarness(t, cfg)
	h.plan(sized("A", 1, "S"), sized("B", 1, "S", "A"), sized("C", 1, "XL"), sized("D", 1, "M"))
	assert.Equal(t, RoleDeveloper, h.inFlight("C").Role, "C (XL, 240 min) before A → B (2 × S, 60 min)")
	assert.Equal(t, WaitCap, h.group("D").Wait)
}

// Measured durations correct the estimates as the session runs: once an S
// group took four hours, an S is no longer taken for half an hour, and the
// chain of two S groups behind R outweighs Q's M.
func TestMeasuredDurationsCorrectTheEstimates(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxParallel = 1
	h := newHarness(t, cfg)
	h.plan(sized("P", 1, "S"), sized("Q", 2, "M"), sized("R", 2, "S"), sized("T", 2, "S", "R"))
	report := func(group string, status Status, took time.Duration) {
		t.Helper()
		st := h.inFlight(group)
		ev := StepResult("s1", st.ID, Result{Status: status})
		ev.StartedAt, ev.EndedAt = h.now, h.now.Add(took)
		h.reconcile(ev)
		assert.Equal(t, Duration(took), h.s.Step(st.ID).Took)
	}
	est := estimates(h.s.Groups, h.s.Steps)
	assert.Equal(t, []float64{30, 60, 30, 30}, est, "nominal sizes before anything is measured")
	// P, an S, takes four hours.
	report("P", StatusReadyForQA, 200*time.Minute)
	est = estimates(h.s.Groups, h.s.Steps)
	assert.InDelta(t, 30.0, est[2], 1e-9, "only merged groups calibrate a size")
	assert.InDelta(t, 3.0, est[0], 1e-9, "P has a tenth of its estimate left")
	report("P", StatusPass, 20*time.Minute)
	report("P", StatusApproved, 10*time.Minute)
	report("P", StatusMergeSuccess, 10*time.Minute)
	est = estimates(h.s.Groups, h.s.Steps)
	// S: (240 measured + 30 × global) / (30 nominal + 30) × 30, with global
	// (240 + 60) / (30 + 60): 170 minutes; M, never measured, scales by
	// global: 200 minutes.
	assert.InDelta(t, 170.0, est[2], 1e-9)
	assert.InDelta(t, 200.0, est[1], 1e-9)
	// So R → T (340) starts before Q (200), which plan order would start.
	assert.Equal(t, RoleDeveloper, h.inFlight("R").Role)
	assert.Equal(t, WaitCap, h.group("Q").Wait)

	// Garbage timings are not measurements.
	st := h.inFlight("R")
	ev := StepResult("s1", st.ID, Result{Status: StatusReadyForQA})
	ev.StartedAt, ev.EndedAt = h.now, h.now.Add(-time.Hour)
	h.now = h.now.Add(3 * time.Minute)
	h.reconcile(ev)
	assert.Equal(t, Duration(3*time.Minute), h.s.Step(st.ID).Took, "an end before the start falls back to dispatch → result")
}

// The estimate a group has left shrinks by the work measured on it.
func TestEstimatesSubtractWorkDone(t *testing.T) {
	gs := []Group{{ID: "A", Size: SizeL, Phase: 1}, {ID: "B", Size: SizeXL, Phase: 1}}
	steps := []Step{{ID: "s/A/developer/1", Group: "A", Took: Duration(100 * time.Minute)},
		{ID: "s/B/developer/2", Group: "B", Took: Duration(10 * time.Hour)}}
	est := estimates(gs, steps)
	assert.InDelta(t, 20.0, est[0], 1e-9)
	assert.InDelta(t, 24.0, est[1], 1e-9, "never below a tenth while unfinished")
	chain := remainingChains(gs, est)
	assert.Equal(t, est, chain, "independent groups: the chain is the group")
}
