package pipeline

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func stepUsage(micros, in, out int64) *Usage {
	u := &Usage{Steps: 1, Priced: 1, CostMicros: micros, InputTokens: in, OutputTokens: out}
	if micros == 0 {
		u.Priced = 0
	}
	return u
}

// reportUsage sends a result with usage (and a run) for the group's step in flight.
func (h *harness) reportUsage(group string, status Status, u *Usage, run string) Step {
	h.t.Helper()
	st := h.inFlight(group)
	ev := StepResult(h.s.ID, st.ID, Result{Status: status, Summary: []string{status.String()}})
	ev.Usage, ev.RunURL = u, run
	h.reconcile(ev)
	return *h.s.Step(st.ID)
}

func TestUsageTotals(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("build it")
	pm := h.inFlight(LeadGroup)
	ev := StepResult(h.s.ID, pm.ID, Result{Status: StatusPlanningComplete, Handoff: json.RawMessage(planJSON(pg("A", 1), pg("B", 1)))})
	ev.Usage = stepUsage(250_000, 1000, 200)
	h.reconcile(ev)

	a := h.reportUsage("A", StatusReadyForQA, stepUsage(120_000, 5000, 800), "https://github.com/o/r/actions/runs/7")
	assert.Equal(t, "https://github.com/o/r/actions/runs/7", a.RunURL)
	require.NotNil(t, a.Usage)
	h.reportUsage("B", StatusReadyForQA, stepUsage(0, 3000, 100), "") // tokens only (codex)

	// A failed step's usage counts too: the tokens were spent.
	qa := h.inFlight("A")
	fail := StepFailure(h.s.ID, qa.ID, "runner crashed")
	fail.Usage = stepUsage(30_000, 100, 10)
	h.reconcile(fail)

	s := h.s
	assert.Equal(t, Usage{CostMicros: 250_000, InputTokens: 1000, OutputTokens: 200, Steps: 1, Priced: 1}, s.Lead.Usage)
	assert.Equal(t, Usage{CostMicros: 150_000, InputTokens: 5100, OutputTokens: 810, Steps: 2, Priced: 2}, s.Group("A").Usage)
	assert.Equal(t, Usage{InputTokens: 3000, OutputTokens: 100, Steps: 1}, s.Group("B").Usage)
	assert.Equal(t, Usage{CostMicros: 400_000, InputTokens: 9100, OutputTokens: 1110, Steps: 4, Priced: 3}, s.Usage)
	assert.Equal(t, "$0.4000 · 10.2k tokens (cost of 3/4 steps)", s.Usage.String())

	// A duplicate delivery of a result counts nothing more.
	dup := StepResult(h.s.ID, a.ID, Result{Status: StatusReadyForQA})
	dup.Usage = stepUsage(120_000, 5000, 800)
	h.reconcile(dup)
	assert.Equal(t, s.Usage, h.s.Usage)

	// The totals survive a snapshot that drops the old steps, and a JSON round trip.
	snap := h.s.Snapshot(0)
	b, err := snap.Marshal()
	require.NoError(t, err)
	back, err := UnmarshalSession(b)
	require.NoError(t, err)
	assert.Equal(t, s.Usage, back.Usage)
	assert.Equal(t, s.Group("A").Usage, back.Group("A").Usage)
}

func TestUsageRefused(t *testing.T) {
	tests := []struct {
		name string
		u    Usage
	}{
		{"negative tokens", Usage{Steps: 1, InputTokens: -1}},
		{"negative cost", Usage{Steps: 1, Priced: 1, CostMicros: -5}},
		{"absurd cost", Usage{Steps: 1, Priced: 1, CostMicros: MaxStepCostMicros + 1}},
		{"absurd tokens", Usage{Steps: 1, OutputTokens: MaxStepTokens + 1}},
		{"claims many steps", Usage{Steps: 40, Priced: 40, CostMicros: 1}},
		{"cost without price", Usage{Steps: 1, CostMicros: 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, tc.u.Check())
			h := newHarness(t, DefaultConfig())
			h.start("build it")
			pm := h.inFlight(LeadGroup)
			ev := StepResult(h.s.ID, pm.ID, Result{Status: StatusPlanningComplete, Handoff: json.RawMessage(planJSON(pg("A", 1)))})
			u := tc.u
			ev.Usage = &u
			acts := h.reconcile(ev)
			// The result still routes; only the usage is dropped, with a report.
			assert.Equal(t, StepDone, h.s.Step(pm.ID).State)
			assert.Nil(t, h.s.Step(pm.ID).Usage)
			assert.True(t, h.s.Usage.IsZero())
			assert.Contains(t, reportTexts(acts), "usage refused")
		})
	}
}

func reportTexts(acts []Action) string {
	var s string
	for _, a := range acts {
		if a.Kind == ActionReport || a.Kind == ActionPause {
			s += a.Text + "\n"
		}
	}
	return s
}

func TestStepCostLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Limits.StepCostUSD = 1
	h := newHarness(t, cfg)
	h.plan(pg("A", 1), pg("B", 1))

	// Within the limit (exactly at it): nothing happens.
	h.reportUsage("B", StatusReadyForQA, stepUsage(1_000_000, 10, 10), "")
	assert.Equal(t, SessionRunning, h.s.Status)

	dev := h.reportUsage("A", StatusReadyForQA, stepUsage(1_300_000, 10, 10), "")
	// The result applied: routed to QA, but nothing new is dispatched.
	assert.Equal(t, "qa", dev.Routed)
	assert.Equal(t, SessionPaused, h.s.Status)
	assert.Empty(t, h.dispatched())
	require.NotNil(t, h.group("A").Next)
	assert.Equal(t, RoleQA, h.group("A").Next.Role)
	assert.Equal(t, WaitPaused, h.group("A").Wait)
	for _, want := range []string{"limits.step_cost_usd $1.00", "cost $1.30", dev.ID, "spent $2.30", "→ qa"} {
		assert.Contains(t, h.s.Reason, want)
	}
	assert.Contains(t, reportTexts(h.actions), "limits.step_cost_usd")

	// A resume continues from the applied result.
	h.reconcile(CommandEvent(h.s.ID, "alice", Command{Kind: CommandResume}))
	assert.Equal(t, SessionRunning, h.s.Status)
	assert.Equal(t, RoleQA, h.inFlight("A").Role)
}

func TestSessionCostLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Limits.SessionCostUSD = 2
	h := newHarness(t, cfg)
	h.plan(pg("A", 1), pg("B", 1))
	h.reportUsage("A", StatusReadyForQA, stepUsage(900_000, 10, 10), "")
	require.Equal(t, SessionRunning, h.s.Status)
	require.Len(t, h.dispatched(), 1) // A's qa

	// B's step brings the session to $2.10: its result applies, nothing more goes out.
	h.reportUsage("B", StatusReadyForQA, stepUsage(1_200_000, 10, 10), "")
	assert.Equal(t, SessionPaused, h.s.Status)
	assert.Empty(t, h.dispatched())
	for _, want := range []string{"limits.session_cost_usd $2.00", "spent $2.10", "2 step(s)"} {
		assert.Contains(t, h.s.Reason, want)
	}
	// A's qa, in flight, still reports while paused and is counted.
	h.reportUsage("A", StatusPass, stepUsage(100_000, 10, 10), "")
	assert.Equal(t, SessionPaused, h.s.Status)
	assert.Equal(t, int64(2_200_000), h.s.Usage.CostMicros)

	// Resuming without raising the limit pauses again at once, naming it.
	h.reconcile(CommandEvent(h.s.ID, "alice", Command{Kind: CommandResume}))
	assert.Equal(t, SessionPaused, h.s.Status)
	assert.Empty(t, h.dispatched())
	assert.Contains(t, h.s.Reason, "limits.session_cost_usd")

	// Raised: resume continues and dispatches the waiting steps.
	h.cfg.Limits.SessionCostUSD = 10
	h.reconcile(CommandEvent(h.s.ID, "alice", Command{Kind: CommandResume}))
	assert.Equal(t, SessionRunning, h.s.Status)
	assert.Len(t, h.dispatched(), 2)

	// No limit (0): spending never pauses.
	h.cfg.Limits.SessionCostUSD = 0
	h.reportUsage("A", StatusApproved, stepUsage(9_000_000, 10, 10), "")
	assert.Equal(t, SessionRunning, h.s.Status)
}

func TestRunURLCleaned(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://github.com/o/r/actions/runs/123", "https://github.com/o/r/actions/runs/123"},
		{"https://ghe.example.com:8443/org/repo/actions/runs/9/attempts/2", "https://ghe.example.com:8443/org/repo/actions/runs/9/attempts/2"},
		{"http://127.0.0.1:4000/api/v3/repos/o/r/actions/runs/5", "http://127.0.0.1:4000/api/v3/repos/o/r/actions/runs/5"},
		{"javascript:alert(1)//actions/runs/1", ""},
		{"https://github.com/o/r/actions/runs/1) [x](https://evil", ""},
		{"https://github.com/o/r/pull/1", ""},
		{"", ""},
	} {
		assert.Equal(t, tc.want, CleanRunURL(tc.in), tc.in)
	}
	h := newHarness(t, DefaultConfig())
	h.start("x")
	pm := h.inFlight(LeadGroup)
	ev := StepResult(h.s.ID, pm.ID, Result{Status: StatusPlanningComplete, Handoff: json.RawMessage(planJSON(pg("A", 1)))})
	ev.RunURL = "https://github.com/o/r/actions/runs/1\n<script>"
	h.reconcile(ev)
	assert.Empty(t, h.s.Step(pm.ID).RunURL)
}

func TestUsageFormat(t *testing.T) {
	assert.Equal(t, "$0.0000", FormatUSD(0))
	assert.Equal(t, "$0.0123", FormatUSD(12_345))
	assert.Equal(t, "$0.9999", FormatUSD(999_900))
	assert.Equal(t, "$1.00", FormatUSD(1_000_000))
	assert.Equal(t, "$12.35", FormatUSD(12_345_678))
	assert.Equal(t, "950", FormatTokens(950))
	assert.Equal(t, "15.2k", FormatTokens(15_240))
	assert.Equal(t, "3.4M", FormatTokens(3_400_000))
	assert.Equal(t, "", Usage{}.String())
	assert.Equal(t, "3.1k tokens", Usage{Steps: 1, InputTokens: 3000, OutputTokens: 100}.String())
	u := Usage{Steps: 1, Priced: 1, CostMicros: 421_300, InputTokens: 12_000, OutputTokens: 3_200, CacheReadTokens: 40_000}
	assert.Equal(t, "$0.4213 · 55.2k tokens (in 12.0k, out 3.2k, cache read 40.0k)", u.Detail())
	assert.Equal(t, int64(2_500_000), USDMicros(2.5))
	assert.Equal(t, int64(0), USDMicros(math.NaN()))
	var big Usage
	big.Add(Usage{CostMicros: math.MaxInt64 - 1})
	big.Add(Usage{CostMicros: 5})
	assert.Equal(t, int64(math.MaxInt64), big.CostMicros, "sums saturate")
}

func TestCostLimitConfigRefusedByTheEngine(t *testing.T) {
	// The engine refuses a hand-built configuration the file would refuse.
	bad := DefaultConfig()
	bad.Limits.SessionCostUSD = -3
	_, acts := Reconcile(Session{}, []Event{Started("s1", "x", "main")}, t0, bad)
	assert.Contains(t, reportTexts(acts), "limits.session_cost_usd is -3")
}

// TestCheckerCatchesCostPromises: the property checker fails a transition
// that breaks a cost promise, so the simulator's silence means something.
func TestCheckerCatchesCostPromises(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Limits.SessionCostUSD = 1
	cfg.Limits.StepCostUSD = 0.5
	h := newHarness(t, cfg)
	h.plan(pg("A", 1))
	dev := h.inFlight("A")
	ev := StepResult(h.s.ID, dev.ID, Result{Status: StatusReadyForQA})
	ev.Usage = stepUsage(400_000, 10, 10)
	before := h.s
	after, acts := Reconcile(before, []Event{ev}, h.now, cfg)
	require.NoError(t, checkTransition(transition{before: before, events: []Event{ev}, now: h.now, cfg: cfg, after: after, acts: acts}))

	for _, tc := range []struct {
		name   string
		mutate func(s *Session)
		want   string
	}{
		{"total not summed", func(s *Session) { s.Usage = Usage{} }, "session usage"},
		{"group total off", func(s *Session) { s.Groups[0].Usage.CostMicros++ }, "track A"},
		{"usage rewritten", func(s *Session) {
			st := s.Step(dev.ID)
			u := *st.Usage
			u.CostMicros = 1
			st.Usage = &u
		}, "session usage"},
		{"dispatch over the session limit", func(s *Session) {
			u := *s.Step(dev.ID).Usage
			u.CostMicros = 2_000_000
			s.Step(dev.ID).Usage = &u // a copy: the pointer is shared with the real session
			s.Usage.CostMicros, s.Groups[0].Usage.CostMicros = 2_000_000, 2_000_000
		}, "dispatched with"},
		{"over the step limit, running on", func(s *Session) {
			u := *s.Step(dev.ID).Usage
			u.CostMicros = 900_000
			s.Step(dev.ID).Usage = &u
			s.Usage.CostMicros, s.Groups[0].Usage.CostMicros = 900_000, 900_000
		}, "more than limits.step_cost_usd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := after.Clone()
			tc.mutate(&bad)
			err := checkTransition(transition{before: before, events: []Event{ev}, now: h.now, cfg: cfg, after: bad, acts: acts})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Issue 23: every reported usage counts, whatever became of its step. The
// money was spent; the limits see it and pause.
func TestLateUsageCountsAndPauses(t *testing.T) {
	t.Run("a result after its step timed out", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Limits.SessionCostUSD = 2
		h := newHarness(t, cfg)
		h.plan(pg("A", 1))
		dev := h.inFlight("A")
		h.now = h.now.Add(cfg.Agent.Timeout.D() + StepGrace + time.Minute)
		h.reconcile(Tick("s1"))
		require.Equal(t, StepFailed, h.s.Step(dev.ID).State, "timed out")
		retry := h.inFlight("A")

		ev := StepResult("s1", dev.ID, Result{Status: StatusReadyForQA})
		ev.Usage = stepUsage(2_500_000, 9000, 900)
		h.reconcile(ev)
		assert.Equal(t, ev.Usage, h.s.Step(dev.ID).Usage, "counted on the step that ran")
		assert.Equal(t, int64(2_500_000), h.s.Usage.CostMicros)
		assert.Equal(t, int64(2_500_000), h.group("A").Usage.CostMicros)
		assert.Equal(t, StepFailed, h.s.Step(dev.ID).State, "the late result is not applied")
		assert.Equal(t, SessionPaused, h.s.Status, "the session limit saw it")
		assert.Contains(t, h.s.Reason, "reaching limits.session_cost_usd")
		assert.Equal(t, StepInFlight, h.s.Step(retry.ID).State, "the retry runs on; nothing new is sent")

		// Delivered again: counted once.
		h.reconcile(ev)
		assert.Equal(t, int64(2_500_000), h.s.Usage.CostMicros)
	})
	t.Run("a job a retry cancelled that ran on", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Limits.StepCostUSD = 1
		h := newHarness(t, cfg)
		h.plan(pg("A", 1))
		dev := h.inFlight("A")
		h.reconcile(CommandEvent("s1", "bob", Command{Kind: CommandRetry, Group: "A"}))
		require.Equal(t, StepCancelled, h.s.Step(dev.ID).State)
		ev := StepFailure("s1", dev.ID, "ran to the end")
		ev.Usage = stepUsage(1_500_000, 9000, 900)
		h.reconcile(ev)
		assert.Equal(t, int64(1_500_000), h.s.Usage.CostMicros)
		assert.Equal(t, SessionPaused, h.s.Status, "over the step limit")
		assert.Contains(t, h.s.Reason, "over limits.step_cost_usd")
		assert.Contains(t, h.s.Reason, "it reported after it had been cancelled (retried by bob)")
	})
	t.Run("a stopped session's job", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1))
		dev := h.inFlight("A")
		h.reconcile(CommandEvent("s1", "bob", Command{Kind: CommandStop}))
		ev := StepResult("s1", dev.ID, Result{Status: StatusReadyForQA})
		ev.Usage = stepUsage(300_000, 10, 10)
		h.reconcile(ev)
		assert.Equal(t, SessionStopped, h.s.Status)
		assert.Equal(t, int64(300_000), h.s.Usage.CostMicros)
	})
}
