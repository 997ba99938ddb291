package gitops

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunGate(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghs_secret")
	t.Setenv("BAZINGA_PRIVATE_KEY", "pk")
	t.Setenv("OTHER_API_KEY", "k")
	t.Setenv("GOFLAGS", "-mod=mod")
	tests := []struct {
		name     string
		cmd      string
		timeout  time.Duration
		want     GateOutcome
		exit     int
		contains string
		absent   []string
	}{
		{name: "pass", cmd: "echo ok", want: GatePass, contains: "ok"},
		{name: "shell syntax", cmd: `X="a b"; test "$X" = "a b" && echo quoted`, want: GatePass, contains: "quoted"},
		{name: "fail keeps exit code", cmd: "echo bad >&2; exit 7", want: GateFail, exit: 7, contains: "bad"},
		{name: "empty command passes", cmd: "  ", want: GatePass},
		{name: "timeout", cmd: "sleep 30", timeout: 300 * time.Millisecond, want: GateTimeout, exit: -1},
		{name: "secrets are not passed", cmd: "env", want: GatePass, contains: "GOFLAGS=-mod=mod",
			absent: []string{"ghs_secret", "BAZINGA_", "OTHER_API_KEY"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunGate(context.Background(), t.TempDir(), GateConfig{Command: tc.cmd, Timeout: tc.timeout})
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Outcome)
			assert.Equal(t, tc.exit, res.ExitCode)
			assert.Contains(t, res.Output, tc.contains)
			for _, a := range tc.absent {
				assert.NotContains(t, res.Output, a)
			}
		})
	}
}

// On timeout the whole process group goes, grandchildren included.
func TestRunGateKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	res, err := RunGate(context.Background(), dir, GateConfig{
		Command: "sleep 60 & echo $! > " + pidFile + "; wait",
		Timeout: 500 * time.Millisecond,
	})
	require.NoError(t, err)
	assert.Equal(t, GateTimeout, res.Outcome)
	assert.Less(t, res.Duration, 10*time.Second)
	data, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return syscall.Kill(pid, 0) != nil
	}, 5*time.Second, 50*time.Millisecond, "grandchild %d still alive", pid)
}

func TestRunGateKeepsOutputTail(t *testing.T) {
	res, err := RunGate(context.Background(), t.TempDir(), GateConfig{
		Command: "i=0; while [ $i -lt 3000 ]; do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done",
	})
	require.NoError(t, err)
	assert.Equal(t, GatePass, res.Outcome)
	assert.True(t, res.Truncated)
	assert.Len(t, res.Output, MaxGateOutput)
	assert.True(t, strings.HasSuffix(res.Output, "line-2999-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"))
}

func TestRunGateBadDir(t *testing.T) {
	_, err := RunGate(context.Background(), filepath.Join(t.TempDir(), "missing"), GateConfig{Command: "true"})
	require.Error(t, err)
}

func TestOutcomeStrings(t *testing.T) {
	assert.Equal(t, "MERGE_SUCCESS", MergeSuccess.String())
	assert.Equal(t, "MERGE_CONFLICT", MergeConflict.String())
	assert.Equal(t, "MERGE_TEST_FAILURE", MergeTestFailure.String())
	assert.Equal(t, "MERGE_BLOCKED", MergeBlocked.String())
	assert.Equal(t, "timeout", GateTimeout.String())
}
