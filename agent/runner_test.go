package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// script writes a shell script into dir and returns a command running it
// through sh (executing a just-written file directly can hit ETXTBSY when
// tests run in parallel).
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	require.NoError(t, os.WriteFile(path, []byte("set -e\n"+body), 0o644))
	return "sh " + path
}

func newRunner(t *testing.T, cfg RunnerConfig) *Runner {
	t.Helper()
	r, err := NewRunner(cfg)
	require.NoError(t, err)
	return r
}

func spec(t *testing.T, role pipeline.Role) StepSpec {
	return StepSpec{
		Role: role, Group: "A", StepID: "s1/A/" + role.String() + "/1", Model: "haiku",
		Prompt: "# prompt\nDo the task.\n", WorkDir: t.TempDir(),
	}
}

func TestRunEditsFilesAndWritesResult(t *testing.T) {
	t.Parallel()
	cmd := script(t, `
cat > main.go <<'EOF'
package main
EOF
echo "progress..." 
echo "warning" >&2
printf '{"status":"READY_FOR_QA","summary":["Added main.go","1 file","ok"],"handoff":{"files_changed":["main.go"]}}' > "$BAZINGA_RESULT_FILE"
`)
	r := newRunner(t, RunnerConfig{Command: cmd, Timeout: 10 * time.Second})
	sp := spec(t, pipeline.RoleDeveloper)
	out, err := r.Run(context.Background(), sp)
	require.NoError(t, err)
	assert.Equal(t, 0, out.ExitCode)
	assert.False(t, out.TimedOut)
	assert.False(t, out.NoResult)
	assert.Equal(t, SourceFile, out.Parsed.Source)
	assert.Equal(t, pipeline.StatusReadyForQA, out.Parsed.Result.Status)
	assert.Equal(t, []string{"Added main.go", "1 file", "ok"}, out.Parsed.Result.Summary)
	assert.JSONEq(t, `{"files_changed":["main.go"]}`, string(out.Parsed.Result.Handoff))
	assert.Contains(t, string(out.ResultFile), "READY_FOR_QA")
	assert.Equal(t, "progress...\n", string(out.Stdout))
	assert.Equal(t, "warning\n", string(out.Stderr))
	assert.Greater(t, out.Duration, time.Duration(0))
	b, err := os.ReadFile(filepath.Join(sp.WorkDir, "main.go"))
	require.NoError(t, err)
	assert.Equal(t, "package main\n", string(b))
	// Nothing but the agent's own edits lands in the working copy.
	entries, err := os.ReadDir(sp.WorkDir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}

func TestRunResultOnStdout(t *testing.T) {
	t.Parallel()
	cmd := script(t, `
echo 'thinking {"status":"FAIL"}'
printf '%s\n' '{"type":"result","result":"Done.\n`+"```"+`json\n{\"status\": \"PASS\", \"summary\": [\"16/16\"]}\n`+"```"+`"}'
`)
	r := newRunner(t, RunnerConfig{Command: cmd})
	out, err := r.Run(context.Background(), spec(t, pipeline.RoleQA))
	require.NoError(t, err)
	assert.Equal(t, SourceStdoutJSON, out.Parsed.Source)
	assert.Equal(t, pipeline.StatusPass, out.Parsed.Result.Status)
	assert.Equal(t, []string{"16/16"}, out.Parsed.Result.Summary)
	assert.Empty(t, out.ResultFile)
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
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}

func TestRunTimeoutKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
	}{
		// A child keeps stdout open after the agent is gone.
		{"child holds stdout", `sleep 300 & echo $! > "$PIDFILE"; echo started; wait`},
		// SIGTERM is ignored by the agent and its child: SIGKILL after the grace.
		{"ignores SIGTERM", `trap '' TERM; sleep 300 & echo $! > "$PIDFILE"; while :; do sleep 1; done`},
		// The agent wrote a result, then hung.
		{"result then hang", `echo '{"status":"READY_FOR_REVIEW"}' > "$BAZINGA_RESULT_FILE"; sleep 300 & echo $! > "$PIDFILE"; wait`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pid")
			cmd := script(t, "PIDFILE="+pidFile+"\n"+tt.body)
			r := newRunner(t, RunnerConfig{Command: cmd, Timeout: 500 * time.Millisecond, KillGrace: 300 * time.Millisecond})
			start := time.Now()
			out, err := r.Run(context.Background(), spec(t, pipeline.RoleDeveloper))
			require.NoError(t, err)
			assert.Less(t, time.Since(start), 5*time.Second, "Run must not hang")
			assert.True(t, out.TimedOut)
			assert.Equal(t, -1, out.ExitCode, "killed by a signal")
			assert.Contains(t, strings.Join(out.Parsed.Notes, "\n"), "timed out")
			if strings.Contains(tt.body, "BAZINGA_RESULT_FILE") {
				assert.False(t, out.NoResult, "a result written before the timeout counts")
				assert.Equal(t, pipeline.StatusReadyForReview, out.Parsed.Result.Status)
			} else {
				assert.True(t, out.NoResult)
				assert.Equal(t, pipeline.StatusPartial, out.Parsed.Result.Status)
			}
			b, err := os.ReadFile(pidFile)
			require.NoError(t, err)
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			require.NoError(t, err)
			assert.Eventually(t, func() bool { return !alive(pid) }, 3*time.Second, 20*time.Millisecond, "child %d survived", pid)
		})
	}
}

func TestRunExitLeavesChildHoldingStdout(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := script(t, `sleep 300 & echo $! > `+pidFile+`
echo '{"status":"PASS","summary":["done"]}'`)
	r := newRunner(t, RunnerConfig{Command: cmd, Timeout: time.Minute, KillGrace: 300 * time.Millisecond})
	start := time.Now()
	out, err := r.Run(context.Background(), spec(t, pipeline.RoleQA))
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "an orphan holding stdout must not hold up Run")
	assert.False(t, out.TimedOut)
	assert.Equal(t, 0, out.ExitCode)
	assert.Equal(t, pipeline.StatusPass, out.Parsed.Result.Status)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return !alive(pid) }, 3*time.Second, 20*time.Millisecond, "orphan %d survived", pid)
}

func TestRunCallerCancel(t *testing.T) {
	t.Parallel()
	r := newRunner(t, RunnerConfig{Command: script(t, "sleep 300"), KillGrace: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	out, err := r.Run(ctx, spec(t, pipeline.RoleQA))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.False(t, out.TimedOut, "the caller's deadline is not the step's timeout")
}

func TestRunHugeOutputKeepsTheTail(t *testing.T) {
	// Not parallel: it measures allocations.
	cmd := script(t, `
head -c 104857600 /dev/zero | tr '\0' 'x'
echo
echo '{"status":"READY_FOR_QA","summary":["survived 100 MiB"]}'
head -c 10000000 /dev/zero | tr '\0' 'e' >&2
`)
	const capBytes = 1 << 20
	r := newRunner(t, RunnerConfig{Command: cmd, Timeout: 30 * time.Second})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	out, err := r.Run(context.Background(), spec(t, pipeline.RoleDeveloper))
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Less(t, elapsed, 20*time.Second)
	assert.Len(t, out.Stdout, capBytes)
	assert.Len(t, out.Stderr, capBytes)
	assert.Equal(t, int64(100<<20+1+len(`{"status":"READY_FOR_QA","summary":["survived 100 MiB"]}`)+1), out.StdoutBytes)
	assert.Equal(t, int64(10000000), out.StderrBytes)
	assert.True(t, strings.HasSuffix(string(out.Stdout), "\"survived 100 MiB\"]}\n"))
	assert.Equal(t, pipeline.StatusReadyForQA, out.Parsed.Result.Status)
	assert.Equal(t, SourceStdoutJSON, out.Parsed.Source)
	assert.Contains(t, strings.Join(out.Parsed.Notes, "\n"), "read the last")
	// 110 MB went through; what is allocated must be a small multiple of
	// the window read for the result and the kept tails, not of the output.
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(12*GenericOutputBytes), "allocations must not grow with the output")
}

func TestRunNonZeroExit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		wantStatus pipeline.Status
		wantNoRes  bool
	}{
		{"result file before crash", `echo '{"status":"BLOCKED","summary":["db down"]}' > "$BAZINGA_RESULT_FILE"; echo boom >&2; exit 3`, pipeline.StatusBlocked, false},
		{"status line before crash", `echo 'Status: PARTIAL'; exit 3`, pipeline.StatusPartial, false},
		{"crash with noise only", `echo 'panic: nil map' >&2; echo 'goroutine 1'; exit 3`, pipeline.StatusPartial, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, RunnerConfig{Command: script(t, "set +e\n"+tt.body)})
			out, err := r.Run(context.Background(), spec(t, pipeline.RoleDeveloper))
			require.NoError(t, err)
			assert.Equal(t, 3, out.ExitCode)
			assert.False(t, out.TimedOut)
			assert.Equal(t, tt.wantStatus, out.Parsed.Result.Status)
			assert.Equal(t, tt.wantNoRes, out.NoResult)
		})
	}
}

func TestRunNoResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		wantNoRes bool
	}{
		{"silent", `true`, true},
		{"blank lines", `echo; echo "   "`, true},
		{"prose without a result", `echo "I refactored everything, trust me."`, false},
		{"empty result file", `: > "$BAZINGA_RESULT_FILE"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, RunnerConfig{Command: script(t, tt.body)})
			out, err := r.Run(context.Background(), spec(t, pipeline.RoleDeveloper))
			require.NoError(t, err)
			assert.Equal(t, 0, out.ExitCode)
			assert.Equal(t, SourceMalformed, out.Parsed.Source)
			assert.Equal(t, pipeline.StatusPartial, out.Parsed.Result.Status)
			assert.Equal(t, []string{MalformedSummary}, out.Parsed.Result.Summary)
			assert.Equal(t, tt.wantNoRes, out.NoResult, "garbage output is a PARTIAL; nothing at all is a failed step")
		})
	}
}

func TestRunEnvironmentIsExactly(t *testing.T) {
	t.Setenv("BAZINGA_FAKE_SECRET", "s3cr3t-harness")
	t.Setenv("GITHUB_TOKEN", "ghs_secret")
	t.Setenv("ANTHROPIC_API_KEY", "sk-passed")
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("LANG", "C.UTF-8")
	r := newRunner(t, RunnerConfig{Command: "env", PassEnv: []string{"ANTHROPIC_API_KEY", "UNSET_VAR_XYZ"}})
	sp := spec(t, pipeline.RoleTechLead)
	out, err := r.Run(context.Background(), sp)
	require.NoError(t, err)
	env := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out.Stdout)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	var names []string
	for k := range env {
		names = append(names, k)
	}
	slices.Sort(names)
	want := []string{"ANTHROPIC_API_KEY", EnvGroup, EnvModel, EnvPromptFile, EnvResultFile, EnvRole, EnvStep, "LANG", "TERM"}
	for _, n := range []string{"HOME", "PATH", "TMPDIR", "USER"} {
		if _, ok := os.LookupEnv(n); ok {
			want = append(want, n)
		}
	}
	slices.Sort(want)
	assert.Equal(t, want, names)
	assert.NotContains(t, string(out.Stdout), "s3cr3t-harness")
	assert.NotContains(t, string(out.Stdout), "ghs_secret")
	assert.Equal(t, "sk-passed", env["ANTHROPIC_API_KEY"])
	assert.Equal(t, "dumb", env["TERM"])
	assert.Equal(t, "tech_lead", env[EnvRole])
	assert.Equal(t, "A", env[EnvGroup])
	assert.Equal(t, sp.StepID, env[EnvStep])
	assert.Equal(t, "haiku", env[EnvModel])
	// The prompt lives outside the working copy, so it is never committed;
	// the result file is where any agent may write, and is removed after.
	assert.False(t, strings.HasPrefix(env[EnvPromptFile], sp.WorkDir))
	assert.Equal(t, filepath.Join(sp.WorkDir, ResultFileName), env[EnvResultFile])
	_, err = os.Stat(env[EnvResultFile])
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(filepath.Dir(env[EnvPromptFile]))
	assert.ErrorIs(t, err, os.ErrNotExist, "the step's temp dir is removed")
}

func TestRunPromptOnStdinAndInFile(t *testing.T) {
	t.Parallel()
	prompt := "# Role: qa\n\nline two with 'quotes' and \"more\"\n"
	for _, cmd := range []string{"cat", "cat {prompt_file}", `sh -c 'cat "$BAZINGA_PROMPT_FILE"'`} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, RunnerConfig{Command: cmd})
			sp := spec(t, pipeline.RoleQA)
			sp.Prompt = prompt
			out, err := r.Run(context.Background(), sp)
			require.NoError(t, err)
			assert.Equal(t, prompt, string(out.Stdout))
		})
	}
}

func TestRunPlaceholdersAndWorkDir(t *testing.T) {
	t.Parallel()
	r := newRunner(t, RunnerConfig{Command: `sh -c 'printf "%s|" "$@"; pwd' agent --model={model} "role {role}" {prompt_file} '{}' "{model}-{role}"`})
	sp := spec(t, pipeline.RoleInvestigator)
	sp.Model = "claude opus"
	out, err := r.Run(context.Background(), sp)
	require.NoError(t, err)
	parts := strings.Split(strings.TrimSpace(string(out.Stdout)), "|")
	require.Len(t, parts, 6, string(out.Stdout))
	assert.Equal(t, "--model=claude opus", parts[0], "a value with spaces stays one argument")
	assert.Equal(t, "role investigator", parts[1])
	assert.True(t, strings.HasSuffix(parts[2], "prompt.md"))
	assert.Equal(t, "{}", parts[3], "other braces are left alone")
	assert.Equal(t, "claude opus-investigator", parts[4])
	wd, _ := filepath.EvalSymlinks(sp.WorkDir)
	got, _ := filepath.EvalSymlinks(parts[5])
	assert.Equal(t, wd, got)
	assert.Equal(t, []string{"sh", "-c", `printf "%s|" "$@"; pwd`, "agent", "--model=claude opus", "role investigator", parts[2], "{}", "claude opus-investigator"}, out.Args)
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	r := newRunner(t, RunnerConfig{Command: "true"})
	sp := spec(t, pipeline.RoleQA)
	sp.WorkDir = filepath.Join(t.TempDir(), "missing")
	_, err := r.Run(context.Background(), sp)
	assert.ErrorContains(t, err, "working copy")

	wd := t.TempDir()
	r = newRunner(t, RunnerConfig{Command: "true", TempDir: filepath.Join(wd, ".")})
	sp = spec(t, pipeline.RoleQA)
	sp.WorkDir = wd
	_, err = r.Run(context.Background(), sp)
	assert.ErrorContains(t, err, "inside the working copy")
	entries, _ := os.ReadDir(wd)
	assert.Empty(t, entries, "nothing left behind")

	r = newRunner(t, RunnerConfig{Command: "definitely-not-an-agent-xyz -p"})
	_, err = r.Run(context.Background(), spec(t, pipeline.RoleQA))
	assert.ErrorContains(t, err, `agent command "definitely-not-an-agent-xyz": executable file not found in $PATH`)
}

func TestRunResultFileOddities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		wantNote string
	}{
		{"fifo", `mkfifo "$BAZINGA_RESULT_FILE"`, "not a regular file"},
		{"symlink", `ln -s /etc/passwd "$BAZINGA_RESULT_FILE"`, "not a regular file"},
		{"huge", `head -c 2000000 /dev/zero > "$BAZINGA_RESULT_FILE"`, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, RunnerConfig{Command: script(t, tt.body+"\necho 'Status: PASS'")})
			out, err := r.Run(context.Background(), spec(t, pipeline.RoleQA))
			require.NoError(t, err)
			assert.Equal(t, pipeline.StatusPass, out.Parsed.Result.Status)
			assert.Equal(t, SourceStatusLine, out.Parsed.Source)
			assert.Contains(t, strings.Join(out.Parsed.Notes, "\n"), tt.wantNote)
		})
	}
}

func TestNewRunnerValidates(t *testing.T) {
	tests := []struct {
		name    string
		cfg     RunnerConfig
		wantErr string
	}{
		{"empty", RunnerConfig{Command: "  "}, "empty"},
		{"unbalanced", RunnerConfig{Command: `claude -p "oops`}, "unbalanced double quote"},
		{"unknown placeholder", RunnerConfig{Command: "claude --model {modle}"}, "unknown placeholder {modle}"},
		{"bad env name", RunnerConfig{Command: "x", PassEnv: []string{"A=B"}}, "invalid variable name"},
		{"harness env name", RunnerConfig{Command: "x", PassEnv: []string{EnvResultFile}}, "set by the harness"},
		{"negative", RunnerConfig{Command: "x", Timeout: -1}, "negative"},
		{"credential", RunnerConfig{Command: "x", PassEnv: []string{"GITHUB_TOKEN"}}, `agent env: "GITHUB_TOKEN" cannot be passed through`},
		{"action input", RunnerConfig{Command: "x", PassEnv: []string{"INPUT_GITHUB-TOKEN"}}, "invalid variable name"},
		{"runner token", RunnerConfig{Command: "x", PassEnv: []string{"ACTIONS_RUNTIME_TOKEN"}}, "ACTIONS_*"},
		{"ok", RunnerConfig{Command: "claude -p --model {model}", PassEnv: []string{"B", "A", "B"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRunner(tt.cfg)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{"A", "B"}, r.passEnv)
			assert.Equal(t, DefaultTimeout, r.cfg.Timeout)
			assert.Equal(t, DefaultOutputCap, r.cfg.OutputCap)
		})
	}
}

// The preflight's first checks: the command splits, its placeholders are
// known, its program exists and can run.
func TestPreflightCommand(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "agent.sh")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	plain := filepath.Join(dir, "plain.sh")
	require.NoError(t, os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644))
	tests := []struct {
		command string
		wantErr string
	}{
		{"sh -c 'echo hi'", ""},
		{exe + " --role {role}", ""},
		{"'" + exe + "'", ""},
		{"{model}-agent", ""}, // only known at run time
		{"claudex -p", `agent command "claudex": executable file not found in $PATH`},
		{filepath.Join(dir, "missing.sh"), "no such file or directory"},
		{plain, "not executable"},
		{dir, "is a directory"},
		{"claude 'unterminated", "unbalanced single quote"},
		{`claude \`, "lone backslash"},
		{"claude {prompt}", "unknown placeholder {prompt}"},
		{"", "agent command is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			cfg := pipeline.DefaultConfig()
			cfg.Agent.Command = tt.command
			_, err := Preflight(context.Background(), cfg)
			if tt.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tt.wantErr)
			}
		})
	}
}

// TestParseCommand pins the splitting the runner relies on.
func TestParseCommand(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"claude -p --model {model} --output-format json", []string{"claude", "-p", "--model", "{model}", "--output-format", "json"}, false},
		{`a 'b c' "d e" f\ g`, []string{"a", "b c", "d e", "f g"}, false},
		{`a "x\"y\\z\$\n"`, []string{"a", `x"y\z$\n`}, false},
		{`a 'it''s' "" ''`, []string{"a", "its", "", ""}, false},
		{"a \\\n b", []string{"a", "b"}, false},
		{`a'b'"c"d`, []string{"abcd"}, false},
		{"  \t\n ", nil, true},
		{"claude {model}", []string{"claude", "{model}"}, false},
		{"claude {nope}", nil, true},
		{`"unterminated`, nil, true},
		{`'unterminated`, nil, true},
		{`trailing\`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseCommand(tt.in)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// At the timeout the agent gets SIGTERM and a grace to save its work: what it
// writes then (files, a result) is kept.
func TestRunTimeoutIsGraceful(t *testing.T) {
	t.Parallel()
	cmd := script(t, `
trap 'echo "half done" > progress.txt; echo "{\"status\":\"PARTIAL\",\"summary\":[\"saved progress\"]}" > "$BAZINGA_RESULT_FILE"; exit 0' TERM
echo working
while :; do sleep 0.05; done
`)
	r := newRunner(t, RunnerConfig{Command: cmd, Timeout: 300 * time.Millisecond, KillGrace: 10 * time.Second})
	sp := spec(t, pipeline.RoleDeveloper)
	start := time.Now()
	out, err := r.Run(context.Background(), sp)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "an agent that exits on SIGTERM does not wait for the whole grace")
	assert.True(t, out.TimedOut)
	assert.False(t, out.Killed)
	assert.Equal(t, 0, out.ExitCode)
	assert.False(t, out.NoResult)
	assert.Equal(t, pipeline.StatusPartial, out.Parsed.Result.Status)
	assert.Equal(t, []string{"saved progress"}, out.Parsed.Result.Summary)
	assert.Contains(t, strings.Join(out.Parsed.Notes, "\n"), "timed out after 300ms")
	b, err := os.ReadFile(filepath.Join(sp.WorkDir, "progress.txt"))
	require.NoError(t, err)
	assert.Equal(t, "half done\n", string(b))
}

// A child that leaves the agent's process group and session (setsid, then
// fork) does not outlive the step.
func TestRunEndsSetsidChildren(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid (util-linux) is not installed")
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := script(t, `PIDFILE=`+pidFile+`
setsid -f sh -c 'echo $$ > "$0"; exec sleep 300' "$PIDFILE"
while [ ! -s "$PIDFILE" ]; do sleep 0.01; done
echo '{"status":"PASS","summary":["done"]}'`)
	r := newRunner(t, RunnerConfig{Command: cmd})
	start := time.Now()
	out, err := r.Run(context.Background(), spec(t, pipeline.RoleQA))
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, pipeline.StatusPass, out.Parsed.Result.Status)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	assert.False(t, alive(pid), "setsid child %d outlived the step", pid)
	assert.Contains(t, strings.Join(out.Parsed.Notes, "\n"), "killed 1 process(es) the agent left running")
}
