package pipeline

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 13 items 1 and 4, as the engine sees them: the first pm step takes
// the baseline, a red one pauses (or is accepted), resume accepts it, and
// check outcomes are kept on the group.

func redBaseline() *Baseline {
	return &Baseline{Commit: "0123456789abcdef0123", Identity: IdentityGoTestJSON, Failed: []string{"calc.TestFlaky", "calc.TestOld"},
		Summary: "tests fail in 2s (exit 1)"}
}

// reportHarness sends a result with a harness report for the group's step in flight.
func (h *harness) reportHarness(group string, status Status, handoff string, hr *HarnessReport) Step {
	h.t.Helper()
	st := h.inFlight(group)
	ev := StepResult(h.s.ID, st.ID, Result{Status: status, Summary: []string{"done"}, Handoff: []byte(handoff)})
	if handoff == "" {
		ev.Result.Handoff = nil
	}
	ev.Harness = hr
	h.reconcile(ev)
	return *h.s.Step(st.ID)
}

func TestBaselineAskedOfTheFirstPMStepOnly(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(*Config)
		want bool
	}{
		{"default", func(*Config) {}, true},
		{"accept", func(c *Config) { c.Tests.Baseline = BaselineAccept }, true},
		{"off", func(c *Config) { c.Tests.Baseline = BaselineOff }, false},
		{"no test or build command", func(c *Config) { c.Tests.Command = "" }, false},
		{"build command only", func(c *Config) { c.Tests.Command = ""; c.Build.Command = "make" }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.cfg(&cfg)
			h := newHarness(t, cfg)
			h.start("build it")
			pm := h.inFlight(LeadGroup)
			assert.Equal(t, tc.want, pm.Baseline)
			if tc.want {
				// The step may run as long as the longer of the agent and the tests.
				h.now = h.now.Add(max(cfg.Agent.Timeout.D(), cfg.Tests.Timeout.D()) + StepGrace - time.Second)
				h.reconcile(Tick("s1"))
				assert.Equal(t, StepInFlight, h.s.Step(pm.ID).State)
			}
		})
	}
}

func TestBaselineLongTestsExtendThePMStepTimeout(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tests.Timeout = Duration(2 * time.Hour)
	h := newHarness(t, cfg)
	h.start("build it")
	pm := h.inFlight(LeadGroup)
	h.now = h.now.Add(cfg.Agent.Timeout.D() + StepGrace + time.Minute)
	h.reconcile(Tick("s1"))
	assert.Equal(t, StepInFlight, h.s.Step(pm.ID).State, "the baseline's 2h test timeout counts")
	h.now = t0.Add(2*time.Hour + StepGrace + time.Second)
	h.reconcile(Tick("s1"))
	assert.Equal(t, StepFailed, h.s.Step(pm.ID).State)
}

func TestBaselineRecorded(t *testing.T) {
	tests := []struct {
		name       string
		mode       BaselineMode
		baseline   *Baseline
		wantStatus SessionStatus
		wantAcc    bool
		wantReason []string
		dispatched int
	}{
		{"green", BaselinePause, &Baseline{Commit: "abc", Green: true, Identity: IdentityExitStatus}, SessionRunning, false, nil, 2},
		{"red pauses", BaselinePause, redBaseline(), SessionPaused, false,
			[]string{"baseline: the tests already fail on main@0123456789ab (go test -json)", "calc.TestFlaky, calc.TestOld", "resuming accepts them"}, 0},
		{"red accepted", BaselineAccept, redBaseline(), SessionRunning, true, nil, 2},
		{"red by exit status pauses", BaselinePause, &Baseline{Commit: "abc", Unnamed: true}, SessionPaused, false,
			[]string{"cannot be named from the exit status alone"}, 0},
		// issue 25: a command that cannot start is no red base to accept.
		{"cannot run pauses even in accept mode", BaselineAccept, &Baseline{Commit: "abc", Unnamed: true, CannotRun: true,
			Command: "npm test", Tail: "sh: 1: npm: not found\n"}, SessionPaused, false,
			[]string{"baseline: the test command `npm test` cannot run on main@abc: sh: 1: npm: not found — set tests.command"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Tests.Baseline = tc.mode
			h := newHarness(t, cfg)
			h.start("build it")
			h.reportHarness(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1), pg("B", 1)), &HarnessReport{Baseline: tc.baseline})
			require.NotNil(t, h.s.Baseline)
			assert.Equal(t, tc.baseline.Commit, h.s.Baseline.Commit)
			assert.Equal(t, tc.wantStatus, h.s.Status)
			assert.Equal(t, tc.wantAcc, h.s.Baseline.Accepted)
			for _, w := range tc.wantReason {
				assert.Contains(t, h.s.Reason, w)
			}
			assert.Len(t, h.dispatched(), tc.dispatched)
			assert.Len(t, h.s.Groups, 2, "the plan is kept while the session waits")
			if tc.mode == BaselineAccept && tc.wantAcc {
				assert.Equal(t, "tests.baseline: accept", h.s.Baseline.AcceptedBy)
				var notice string
				for _, a := range h.actions {
					if a.Kind == ActionNotify {
						notice = a.Text
					}
				}
				assert.Contains(t, notice, "calc.TestFlaky")
			}
		})
	}
}

func TestBaselineResumeAcceptsIt(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("build it")
	h.reportHarness(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1)), &HarnessReport{Baseline: redBaseline()})
	require.Equal(t, SessionPaused, h.s.Status)
	h.reconcile(Tick("s1"))
	assert.Empty(t, h.dispatched(), "a pause holds")
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
	assert.Equal(t, SessionRunning, h.s.Status)
	assert.True(t, h.s.Baseline.Accepted)
	assert.Equal(t, "alice", h.s.Baseline.AcceptedBy)
	require.Len(t, h.dispatched(), 1)
	assert.Equal(t, RoleDeveloper, h.dispatched()[0].Role)
	var said string
	for _, a := range h.actions {
		if a.Kind == ActionNotify {
			said = a.Text
		}
	}
	assert.Contains(t, said, "baseline of main is accepted")
}

func TestBaselineIgnoredWhenNotAskedOrTakenTwice(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tests.Baseline = BaselineOff
	h := newHarness(t, cfg)
	h.start("build it")
	h.reportHarness(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1)), &HarnessReport{Baseline: redBaseline()})
	assert.Nil(t, h.s.Baseline, "a step not asked for a baseline cannot set one")
	assert.Equal(t, SessionRunning, h.s.Status)

	h = newHarness(t, DefaultConfig())
	h.start("build it")
	// The pm asks a question first: the baseline comes with that result,
	// and the next pm step is not asked again.
	h.reportHarness(LeadGroup, StatusNeedsClarification, `{"question":"which?"}`, &HarnessReport{Baseline: &Baseline{Commit: "c1", Green: true}})
	require.NotNil(t, h.s.Baseline)
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "this"}))
	pm := h.inFlight(LeadGroup)
	assert.False(t, pm.Baseline)
	h.reportHarness(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1)), &HarnessReport{Baseline: redBaseline()})
	assert.Equal(t, "c1", h.s.Baseline.Commit)
	assert.True(t, h.s.Baseline.Green)
}

func TestBaselineNotAskedAfterAMerge(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("build it")
	h.reportHarness(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1)), nil) // the baseline could not be taken
	assert.Nil(t, h.s.Baseline)
	h.report("A", StatusReadyForQA, "")
	h.report("A", StatusPass, "")
	h.report("A", StatusApproved, "")
	h.report("A", StatusMergeSuccess, "")
	pm := h.inFlight(LeadGroup)
	assert.Equal(t, PurposeFinalCheck, pm.Purpose)
	assert.False(t, pm.Baseline, "the base now holds the session's own merge")
}

func TestChecksKeptOnTheGroup(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	long := strings.Repeat("x", 3*MaxCheckTail) + "é"
	h.reportHarness("A", StatusReadyForQA, "", &HarnessReport{Checks: []CheckOutcome{
		{Name: "lint", Required: true, Passed: true, Summary: "pass in 1s", Tail: "ok"},
		{Name: "security", Passed: false, Summary: "fail (exit 1)\nin 2s", Tail: long},
	}})
	g := h.group("A")
	require.Len(t, g.Checks, 2)
	assert.Empty(t, g.Checks[0].Tail, "passing checks keep no output")
	assert.LessOrEqual(t, len(g.Checks[1].Tail), MaxCheckTail+len("…"))
	assert.True(t, strings.HasSuffix(g.Checks[1].Tail, "é"))
	assert.Equal(t, "fail (exit 1) in 2s", g.Checks[1].Summary)
	assert.Equal(t, "lint ✓ (required), security ✗", ChecksLine(g.Checks))

	// Clone shares nothing: changing the copy leaves the session alone.
	c := h.s.Clone()
	c.Groups[0].Checks[0].Name = "changed"
	assert.Equal(t, "lint", h.group("A").Checks[0].Name)

	h.report("A", StatusPass, "")
	assert.Len(t, h.group("A").Checks, 2, "a step without checks leaves the last outcomes")
	h.report("A", StatusApproved, "")
	h.reportHarness("A", StatusMergeSuccess, "", &HarnessReport{Checks: []CheckOutcome{{Name: "lint", Required: true, Passed: true}}})
	assert.Equal(t, StageMerged, h.group("A").Stage)
	assert.Empty(t, h.group("A").Checks, "a merged group keeps no check outcomes")
}

func TestBaselineRoundTripsThroughJSON(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("build it")
	h.reportHarness(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1)), &HarnessReport{Baseline: redBaseline()})
	b, err := h.s.Marshal()
	require.NoError(t, err)
	back, err := UnmarshalSession(b)
	require.NoError(t, err)
	assert.Equal(t, h.s.Baseline, back.Baseline)
	assert.Contains(t, string(b), `"identity":"go test -json"`)
}

func TestBaselineDescribe(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = string(rune('a' + i))
	}
	tests := []struct {
		b    Baseline
		want string
	}{
		{Baseline{Commit: "abcdef0123456789", Green: true, Identity: IdentityJUnit}, "the tests pass on main@abcdef012345 (JUnit XML)"},
		{Baseline{Identity: IdentityGoTestJSON, Failed: many}, "the tests already fail on main (go test -json) — failing: a, b, c, d, e, f, g, h, i, j and 2 more"},
		{Baseline{Identity: IdentityGoTestJSON, Unnamed: true}, "the command failed without naming a test"},
		{Baseline{Identity: IdentityGoTestJSON, Failed: []string{"x"}, Unnamed: true}, "failing: x (and failures without a test name)"},
		{Baseline{Identity: IdentityGoTestJSON, Failed: []string{"x"}, Command: "go test -json ./..."}, "failing: x; command `go test -json ./...`"},
	}
	for _, tc := range tests {
		assert.Contains(t, tc.b.Describe("main"), tc.want)
	}
}

// What the harness reports of a baseline is bounded before it enters the
// state: the command and the output's tail (issue 25).
func TestBaselineCommandAndTailBounded(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("build it")
	long := strings.Repeat("é", MaxCheckTail)
	b := &Baseline{Commit: "abc", Unnamed: true, Command: strings.Repeat("x", 2*MaxBaselineCommand), Tail: long}
	h.reportHarness(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1)), &HarnessReport{Baseline: b})
	got := h.s.Baseline
	require.NotNil(t, got)
	assert.LessOrEqual(t, len(got.Command), MaxBaselineCommand+len("…"))
	assert.LessOrEqual(t, len(got.Tail), MaxCheckTail+len("…"))
	assert.True(t, utf8.ValidString(got.Tail), "cut on a character boundary")
	assert.True(t, strings.HasPrefix(got.Tail, "…é"))
}
