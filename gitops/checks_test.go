package gitops

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunGateChecks(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghs_secret")
	tests := []struct {
		name     string
		tests    string
		checks   []Check
		want     GateOutcome
		outcomes []GateOutcome
		summary  string
	}{
		{name: "all pass", tests: "true", checks: []Check{{Name: "lint", Command: "echo clean", Required: true}},
			want: GatePass, outcomes: []GateOutcome{GatePass}, summary: "tests pass in"},
		{name: "required check fails the gate", tests: "true",
			checks: []Check{{Name: "lint", Command: "echo 'x.go:1: unused'; exit 1", Required: true}, {Name: "vet", Command: "true", Required: true}},
			want:   GateFail, outcomes: []GateOutcome{GateFail, GatePass}, summary: "checks: lint fail (required), vet pass"},
		{name: "optional check failing does not", tests: "true", checks: []Check{{Name: "security", Command: "exit 4"}},
			want: GatePass, outcomes: []GateOutcome{GateFail}, summary: "checks: security fail"},
		{name: "checks run without a test command", tests: "", checks: []Check{{Name: "lint", Command: "exit 1", Required: true}},
			want: GateFail, outcomes: []GateOutcome{GateFail}},
		{name: "checks run when the tests fail", tests: "exit 1", checks: []Check{{Name: "lint", Command: "true", Required: true}},
			want: GateFail, outcomes: []GateOutcome{GatePass}},
		{name: "a check's own timeout", tests: "true", checks: []Check{{Name: "slow", Command: "sleep 30", Required: true, Timeout: 200 * time.Millisecond}},
			want: GateFail, outcomes: []GateOutcome{GateTimeout}, summary: "slow timeout (required)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunGate(context.Background(), t.TempDir(), GateConfig{Command: tc.tests, Checks: tc.checks, Timeout: time.Minute})
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Outcome, res.Summary())
			require.Len(t, res.Checks, len(tc.outcomes))
			for i, o := range tc.outcomes {
				assert.Equal(t, o, res.Checks[i].Outcome, res.Checks[i].Name)
				assert.Equal(t, tc.checks[i].Required, res.Checks[i].Required)
			}
			assert.Contains(t, res.Summary(), tc.summary)
		})
	}
}

func TestRunCheckOutputAndEnvironment(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghs_secret")
	t.Setenv("BAZINGA_PRIVATE_KEY", "pk")
	res, err := RunCheck(context.Background(), t.TempDir(), Check{Name: "env", Command: "env; echo done >&2; exit 3", Required: true}, time.Minute, 0)
	require.NoError(t, err)
	assert.Equal(t, GateFail, res.Outcome)
	assert.Equal(t, 3, res.ExitCode)
	assert.Contains(t, res.Output, "done")
	assert.NotContains(t, res.Output, "ghs_secret", "checks run agent code: no credentials")
	assert.NotContains(t, res.Output, "BAZINGA_")
	assert.Contains(t, res.Summary(), "fail (exit 3) in")

	res, err = RunCheck(context.Background(), t.TempDir(), Check{Name: "loud", Command: "yes 0123456789 | head -c 100000"}, time.Minute, 0)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(res.Output), MaxCheckOutput+8)

	_, err = RunCheck(context.Background(), "/nonexistent-dir", Check{Name: "x", Command: "true"}, time.Minute, 0)
	assert.Error(t, err)
}

// A required check that fails keeps the group off the base, as failing tests do.
func TestLandRunsChecks(t *testing.T) {
	tests := []struct {
		name   string
		checks []Check
		want   LandOutcome
	}{
		{"required check fails", []Check{{Name: "nofixme", Command: "! grep -rq FIXME .", Required: true}}, MergeTestFailure},
		{"optional check fails", []Check{{Name: "nofixme", Command: "! grep -rq FIXME .", Required: false}}, MergeSuccess},
		{"check passes", []Check{{Name: "hasc", Command: "test -f c.txt", Required: true}}, MergeSuccess},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newRemote(t)
			f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "FIXME later\n"})
			before := f.head(t, "main")
			res, err := Land(context.Background(), LandRequest{Remote: Remote{URL: f.bare}, Base: "main", Branch: "bazinga/s1-A",
				Gate: GateConfig{Checks: tc.checks, Timeout: time.Minute}, TempDir: t.TempDir()})
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Outcome, res.Reason)
			require.NotNil(t, res.Gate)
			require.Len(t, res.Gate.Checks, 1)
			if tc.want == MergeTestFailure {
				assert.Equal(t, before, f.head(t, "main"), "nothing lands")
				assert.Contains(t, res.Reason, "checks: nofixme fail (required)")
			} else {
				assert.NotEqual(t, before, f.head(t, "main"))
			}
		})
	}
}

// With a baseline, failures the base already has do not keep a group off it.
func TestLandComparesWithTheBaseline(t *testing.T) {
	f := newRemote(t)
	f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
	cmd := gotestCmd(t)
	req := LandRequest{Remote: Remote{URL: f.bare}, Base: "main", Branch: "bazinga/s1-A", TempDir: t.TempDir(),
		Gate: GateConfig{Command: cmd, Timeout: time.Minute, Known: &KnownFailures{Identity: IdentityGoTestJSON, Tests: goTestFailures[:3]}}}
	res, err := Land(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, MergeTestFailure, res.Outcome)
	assert.Contains(t, res.Reason, "new failures")
	assert.Contains(t, res.Reason, "--- FAIL example.com/gj/calc.TestTable/bad")

	req.Gate.Known.Tests = goTestFailures
	res, err = Land(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, MergeSuccess, res.Outcome, res.Reason)
	assert.Equal(t, GateFail, res.Gate.TestsOutcome)
	assert.Equal(t, goTestFailures, res.Gate.PreExisting)
}
