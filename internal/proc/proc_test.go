package proc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sh returns a Cmd running a shell script.
func sh(t *testing.T, script string) Cmd {
	t.Helper()
	path, err := exec.LookPath("sh")
	require.NoError(t, err)
	return Cmd{Path: path, Args: []string{"sh", "-c", script}, Dir: t.TempDir(), Env: Environ([]string{"PATH"}, nil)}
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust kill
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	var b []byte
	require.Eventually(t, func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil && strings.HasSuffix(string(b), "\n")
	}, 5*time.Second, 10*time.Millisecond, "no pid in %s", path)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

func TestRunExitStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		code   int
		signal syscall.Signal
		out    string
	}{
		{"success", "echo hi", 0, 0, "hi\n"},
		{"exit code", "echo bad >&2; exit 7", 7, 0, "bad\n"},
		{"killed by a signal", "kill -9 $$", -1, syscall.SIGKILL, ""},
		{"stdin is empty", "cat; echo end", 0, 0, "end\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := NewTail(1 << 10)
			c := sh(t, tt.script)
			c.Stdout, c.Stderr = out, out
			res, err := Run(context.Background(), c)
			require.NoError(t, err)
			assert.Equal(t, tt.code, res.ExitCode)
			assert.Equal(t, tt.signal, res.Signal)
			assert.Equal(t, tt.out, out.String())
			assert.False(t, res.TimedOut)
			assert.False(t, res.Killed)
			assert.True(t, res.Supervised, "Linux runs commands under the subreaper supervisor")
		})
	}
}

// The environment is exactly what the caller builds; nil is empty, never the
// harness's own.
func TestRunEnvironmentIsExactlyTheGivenOne(t *testing.T) {
	t.Setenv("PROC_TEST_SECRET", "s3cr3t")
	envPath, err := exec.LookPath("env")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"nil is empty", nil, ""},
		{"given", []string{"A=1", "B=two words"}, "A=1\nB=two words\n"},
		{"from the allowlist", Environ([]string{"PROC_TEST_UNSET", "PROC_TEST_SECRET"}, map[string]string{"Z": "z"}), "PROC_TEST_SECRET=s3cr3t\nZ=z\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := NewTail(1 << 10)
			_, err := Run(context.Background(), Cmd{Path: envPath, Args: []string{"env"}, Env: tc.env, Stdout: out})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.String())
		})
	}
}

func TestEnvironSortedAndSetWins(t *testing.T) {
	t.Setenv("PROC_B", "from-harness")
	t.Setenv("PROC_A", "a")
	assert.Equal(t, []string{"PROC_A=a", "PROC_B=set", "TERM=dumb"},
		Environ([]string{"PROC_B", "PROC_A", "PROC_MISSING"}, map[string]string{"PROC_B": "set", "TERM": "dumb"}))
}

// At the timeout every process gets SIGTERM; one that traps it may save its
// work and exit within the grace.
func TestRunTimeoutIsGraceful(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	saved := filepath.Join(dir, "saved")
	childSaved := filepath.Join(dir, "child-saved")
	c := sh(t, `
(trap 'echo child > `+childSaved+`; exit 0' TERM; while :; do sleep 0.05; done) &
trap 'echo partial > `+saved+`; wait; exit 3' TERM
echo started
while :; do sleep 0.05; done`)
	out := NewTail(1 << 10)
	c.Stdout, c.Timeout, c.Grace = out, 300*time.Millisecond, 10*time.Second
	start := time.Now()
	res, err := Run(context.Background(), c)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "a process that exits on SIGTERM does not wait for the grace")
	assert.True(t, res.TimedOut)
	assert.False(t, res.Killed, "no SIGKILL was needed")
	assert.Equal(t, 3, res.ExitCode, "the script's own exit status after its trap")
	assert.FileExists(t, saved)
	assert.FileExists(t, childSaved, "children get SIGTERM too")
	assert.Equal(t, "started\n", out.String())
}

func TestRunTimeoutKillsAfterTheGrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	c := sh(t, `trap '' TERM; (trap '' TERM; exec sleep 300) & echo $! > `+pidFile+`; while :; do sleep 0.05; done`)
	c.Timeout, c.Grace = 300*time.Millisecond, 400*time.Millisecond
	start := time.Now()
	res, err := Run(context.Background(), c)
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.True(t, res.Killed)
	assert.Equal(t, -1, res.ExitCode)
	assert.Equal(t, syscall.SIGKILL, res.Signal)
	assert.GreaterOrEqual(t, elapsed, 700*time.Millisecond, "the grace is given")
	assert.Less(t, elapsed, 5*time.Second)
	assert.False(t, alive(readPid(t, pidFile)))
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	c := sh(t, "sleep 300")
	c.Grace = time.Second
	res, err := Run(ctx, c)
	require.NoError(t, err)
	assert.True(t, res.Cancelled)
	assert.False(t, res.TimedOut, "the caller's deadline is not the command's timeout")
	assert.Equal(t, syscall.SIGTERM, res.Signal)
}

// Children that leave the process group and the session (setsid, double
// fork) end with the command, whether it exits or times out.
func TestRunEndsEscapedDescendants(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid (util-linux) is not installed")
	}
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
	}{
		{"setsid child, command exits", `setsid -f sh -c 'echo $$ > "$PIDFILE"; exec sleep 300'; WAIT; exit 0`, 0},
		{"double fork into a new session", `( setsid sh -c 'sleep 300 & echo $! > "$PIDFILE"' & ); WAIT; exit 0`, 0},
		{"setsid child ignoring SIGTERM, command times out", `setsid -f sh -c 'trap "" TERM; echo $$ > "$PIDFILE"; while :; do sleep 0.05; done'; WAIT; while :; do sleep 0.05; done`, 1500 * time.Millisecond},
		{"setsid child holding stdout", `setsid -f sh -c 'echo $$ > "$PIDFILE"; exec sleep 300'; WAIT; echo done`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pid")
			// The command waits until its child has written its pid, so the
			// child is known to exist when the command ends.
			c := sh(t, strings.Replace(tt.script, "WAIT", `while [ ! -s "$PIDFILE" ]; do sleep 0.01; done`, 1))
			c.Env = append(c.Env, "PIDFILE="+pidFile)
			c.Stdout = NewTail(1 << 10)
			c.Timeout, c.Grace = tt.timeout, 300*time.Millisecond
			start := time.Now()
			res, err := Run(context.Background(), c)
			require.NoError(t, err)
			for _, n := range res.Notes {
				if strings.Contains(n, "cannot become a child subreaper") {
					t.Skip("this kernel or sandbox refuses PR_SET_CHILD_SUBREAPER: " + n)
				}
			}
			assert.Less(t, time.Since(start), 5*time.Second, "Run must not wait for the escaped child")
			pid := readPid(t, pidFile)
			assert.False(t, alive(pid), "escaped child %d outlived the command", pid)
			if tt.timeout == 0 {
				assert.Equal(t, 0, res.ExitCode)
				assert.GreaterOrEqual(t, res.Strays, 1, "the escaped child is counted")
			} else {
				assert.True(t, res.TimedOut)
				assert.True(t, res.Killed)
			}
		})
	}
}

func TestRunStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644))
	for _, tc := range []struct {
		name string
		cmd  Cmd
		want string
	}{
		{"missing program", Cmd{Path: filepath.Join(dir, "missing"), Args: []string{"missing"}}, "no such file"},
		{"not executable", Cmd{Path: plain, Args: []string{"plain"}}, "permission denied"},
		{"no program", Cmd{}, "no program"},
		{"negative grace", Cmd{Path: "/bin/true", Args: []string{"true"}, Grace: -1}, "negative"},
		{"missing directory", Cmd{Path: "/bin/true", Args: []string{"true"}, Dir: filepath.Join(dir, "nope")}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.cmd)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Without the supervisor (BAZINGA_PROC_DIRECT=1, or systems without it)
// commands still get a session, the graceful stop and a group kill.
func TestRunDirect(t *testing.T) {
	t.Setenv("BAZINGA_PROC_DIRECT", "1")
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	saved := filepath.Join(dir, "saved")
	c := sh(t, `sleep 300 & echo $! > `+pidFile+`; trap 'echo x > `+saved+`; exit 0' TERM; while :; do sleep 0.05; done`)
	c.Timeout, c.Grace = 300*time.Millisecond, 5*time.Second
	res, err := Run(context.Background(), c)
	require.NoError(t, err)
	assert.False(t, res.Supervised)
	assert.True(t, res.TimedOut)
	assert.False(t, res.Killed)
	assert.FileExists(t, saved)
	pid := readPid(t, pidFile)
	assert.Eventually(t, func() bool { return !alive(pid) }, 3*time.Second, 20*time.Millisecond)

	c = sh(t, `trap '' TERM; while :; do sleep 0.05; done`)
	c.Timeout, c.Grace = 200*time.Millisecond, 200*time.Millisecond
	res, err = Run(context.Background(), c)
	require.NoError(t, err)
	assert.True(t, res.Killed)
	assert.Equal(t, syscall.SIGKILL, res.Signal)

	_, err = Run(context.Background(), Cmd{Path: filepath.Join(dir, "missing"), Args: []string{"missing"}})
	assert.ErrorContains(t, err, "no such file")
}

func TestTail(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		writes    []string
		want      string
		truncated bool
	}{
		{"under", 10, []string{"abc", "de"}, "abcde", false},
		{"exact", 5, []string{"abc", "de"}, "abcde", false},
		{"wraps", 5, []string{"abc", "def", "gh"}, "defgh", true},
		{"one big write", 4, []string{"a", "0123456789"}, "6789", true},
		{"many small", 3, []string{"a", "b", "c", "d", "e"}, "cde", true},
		{"zero keeps nothing", 0, []string{"abc"}, "", true},
		{"nothing written", 3, nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewTail(tt.max)
			total := 0
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				require.NoError(t, err)
				assert.Equal(t, len(w), n)
				total += len(w)
			}
			assert.Equal(t, tt.want, string(b.Bytes()))
			assert.Equal(t, tt.want, b.String())
			assert.Equal(t, int64(total), b.Total())
			assert.Equal(t, tt.truncated, b.Truncated())
		})
	}
}

// TestHarnessDies: when the harness process dies mid-step (killed, OOM), the
// supervisor stops the command rather than leaving it running unattended.
func TestHarnessDies(t *testing.T) {
	if os.Getenv("PROC_TEST_HARNESS") != "" {
		// The child: a harness that runs a long command, then is killed.
		c := sh(t, `echo $$ > "$PIDFILE"; sleep 300`)
		c.Env = append(c.Env, "PIDFILE="+os.Getenv("PROC_TEST_HARNESS"))
		c.Grace = 200 * time.Millisecond
		_, _ = Run(context.Background(), c)
		return
	}
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	harness := exec.Command(os.Args[0], "-test.run=^TestHarnessDies$", "-test.count=1")
	harness.Env = append(os.Environ(), "PROC_TEST_HARNESS="+pidFile)
	require.NoError(t, harness.Start())
	pid := readPid(t, pidFile)
	require.True(t, alive(pid))
	require.NoError(t, harness.Process.Kill())
	_ = harness.Wait()
	assert.Eventually(t, func() bool { return !alive(pid) }, 5*time.Second, 20*time.Millisecond,
		"the command %d outlived its harness", pid)
}
