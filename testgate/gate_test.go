package testgate

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	assert.Equal(t, "timeout", GateTimeout.String())
}

// The test command's environment is exactly the allowlist (GateEnv), with the
// harness's values; nothing else reaches code an agent wrote.
func TestRunGateEnvironmentIsTheAllowlist(t *testing.T) {
	t.Setenv("GOCACHE", "/tmp/gocache-test")
	t.Setenv("CI", "true")
	t.Setenv("INPUT_GITHUB-TOKEN", "ghs_input")
	t.Setenv("ACTIONS_RUNTIME_TOKEN", "runtime-tok")
	t.Setenv("GOPROXY", "https://user:pw@proxy.example")
	res, err := RunGate(context.Background(), t.TempDir(), GateConfig{Command: "env"})
	require.NoError(t, err)
	require.Equal(t, GatePass, res.Outcome)
	var names []string
	for line := range strings.SplitSeq(strings.TrimSpace(res.Output), "\n") {
		k, _, _ := strings.Cut(line, "=")
		names = append(names, k)
	}
	var want []string
	for _, n := range GateEnv {
		if _, ok := os.LookupEnv(n); ok {
			want = append(want, n)
		}
	}
	// sh itself exports PWD (and some shells SHLVL and _).
	names = slices.DeleteFunc(names, func(n string) bool { return n == "PWD" || n == "SHLVL" || n == "_" || n == "OLDPWD" })
	slices.Sort(names)
	slices.Sort(want)
	assert.Equal(t, want, names)
	assert.Contains(t, res.Output, "GOCACHE=/tmp/gocache-test\n")
	assert.Contains(t, res.Output, "CI=true\n")
	for _, secret := range []string{"ghs_input", "runtime-tok", "pw@proxy"} {
		assert.NotContains(t, res.Output, secret)
	}
}

// At the timeout the tests get SIGTERM first (a test runner may clean up).
func TestRunGateTimeoutIsGraceful(t *testing.T) {
	dir := t.TempDir()
	res, err := RunGate(context.Background(), dir, GateConfig{
		Command: `trap 'echo cleaned > cleaned; exit 1' TERM; while :; do sleep 0.05; done`,
		Timeout: 300 * time.Millisecond, Grace: 10 * time.Second,
	})
	require.NoError(t, err)
	assert.Equal(t, GateTimeout, res.Outcome)
	assert.Less(t, res.Duration, 5*time.Second)
	assert.FileExists(t, filepath.Join(dir, "cleaned"))
}

// A daemon the tests start in a new session does not outlive the gate.
func TestRunGateEndsSetsidChildren(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid (util-linux) is not installed")
	}
	dir := t.TempDir()
	res, err := RunGate(context.Background(), dir, GateConfig{
		Command: `setsid -f sh -c 'echo $$ > pid; exec sleep 300'; while [ ! -s pid ]; do sleep 0.01; done; echo ok`,
		Timeout: time.Minute,
	})
	require.NoError(t, err)
	assert.Equal(t, GatePass, res.Outcome)
	assert.Less(t, res.Duration, 5*time.Second)
	data, err := os.ReadFile(filepath.Join(dir, "pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	assert.Error(t, syscall.Kill(pid, 0), "setsid'd child %d outlived the gate", pid)
}
