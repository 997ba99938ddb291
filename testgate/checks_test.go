package testgate

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
