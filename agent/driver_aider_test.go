package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// aiderFlags is what the driver adds to every aider command (Dir "/step").
var aiderFlags = []string{"--yes-always", "--no-pretty", "--no-stream", "--no-auto-commits", "--no-dirty-commits",
	"--no-check-update", "--no-show-release-notes", "--no-analytics", "--no-suggest-shell-commands", "--no-detect-urls",
	"--chat-history-file", "/step/aider.chat.history.md", "--input-history-file", "/step/aider.input.history"}

func TestAiderInvocation(t *testing.T) {
	d, err := DriverFor("", "/usr/local/bin/aider")
	require.NoError(t, err)
	require.Equal(t, "aider", d.Name())
	assert.False(t, d.FinalAnswer(), "aider has no final answer apart from its output")
	with := func(extra ...string) []string {
		return append(append([]string{"aider"}, aiderFlags...), extra...)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		access Access
		want   []string
	}{
		{"edit", []string{"aider"}, AccessEdit,
			with("--model", "sonnet", "--message-file", "/step/prompt.md")},
		{"run: ask mode, no edits", []string{"aider"}, AccessRun,
			with("--model", "sonnet", "--chat-mode", "ask", "--message-file", "/step/prompt.md")},
		{"read: ask mode, no edits", []string{"aider"}, AccessRead,
			with("--model", "sonnet", "--chat-mode", "ask", "--message-file", "/step/prompt.md")},
		{"user flags kept, not doubled; files stay last", []string{"aider", "--model", "gpt-4o", "--message-file", "/tmp/p.md", "--yes-always", "--no-stream", "--edit-format", "whole", "main.go"}, AccessRead,
			[]string{"aider", "--no-pretty", "--no-auto-commits", "--no-dirty-commits", "--no-check-update", "--no-show-release-notes",
				"--no-analytics", "--no-suggest-shell-commands", "--no-detect-urls",
				"--chat-history-file", "/step/aider.chat.history.md", "--input-history-file", "/step/aider.input.history",
				"--model", "gpt-4o", "--message-file", "/tmp/p.md", "--yes-always", "--no-stream", "--edit-format", "whole", "main.go"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := d.Invocation(tc.args, Invoke{Role: pipeline.RoleTechLead, Access: tc.access, Model: "sonnet", Dir: "/step"})
			require.NoError(t, err)
			assert.Equal(t, tc.want, inv.Args)
			assert.Empty(t, inv.Env)
			assert.Empty(t, inv.Files)
			assert.Empty(t, inv.AnswerFile)
		})
	}
}

func TestAiderCheck(t *testing.T) {
	d := drivers["aider"]
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"aider"}, nil},
		{[]string{"aider", "--model", "{model}", "--message-file", "{prompt_file}"}, nil},
		{[]string{"aider", "-f", "{prompt_file}", "--no-auto-commits"}, nil},
		{[]string{"aider", "--message", "fix it"}, []string{"--message sends that text, not bazinga's prompt"}},
		{[]string{"aider", "--message-file", "task.md"}, []string{`--message-file "task.md" is not bazinga's prompt`}},
		{[]string{"aider", "--auto-commits"}, []string{"--auto-commits makes commits of its own"}},
		{[]string{"aider", "--dirty-commits", "--gui"}, []string{"--gui waits for a person", "--dirty-commits makes commits of its own"}},
		{[]string{"aider", "--pretty"}, []string{"--pretty colours its output"}},
	} {
		got := d.Check(tc.args)
		require.Len(t, got, len(tc.want), "%v: %v", tc.args, got)
		for i, w := range tc.want {
			assert.Contains(t, got[i], w)
		}
	}
}

func TestAiderFinishFixtures(t *testing.T) {
	d := drivers["aider"]
	for _, tc := range []struct {
		file    string
		usage   *pipeline.Usage
		kind    FailureKind
		message string
	}{
		// 1.6k sent with 1.6k written to the cache: no uncached input left.
		{file: "ask_success.txt", usage: &pipeline.Usage{OutputTokens: 51, CacheWriteTokens: 1600, CostMicros: 6900, Steps: 1, Priced: 1}},
		// Two model calls: 12,963 sent (11,191 cache write, 1,270 cache hit)
		// and 1,711 sent (1,632 hit); the session cost is the last figure.
		{file: "edit_injection.txt", usage: &pipeline.Usage{InputTokens: 502 + 79, OutputTokens: 105 + 43,
			CacheReadTokens: 1270 + 1632, CacheWriteTokens: 11191, CostMicros: 8300, Steps: 1, Priced: 1}},
		// Overloaded once, retried by aider, then answered: no failure.
		{file: "overloaded_retried.txt", usage: &pipeline.Usage{InputTokens: 5244, OutputTokens: 604, CostMicros: 20000, Steps: 1, Priced: 1}},
		{file: "rate_limit.txt", kind: FailureRateLimited, message: "aider: The API provider has rate limited you."},
		{file: "auth_error.txt", kind: FailureAuth, message: "aider: The API provider is not able to authenticate you."},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f := readThrough(d, cliFixture(t, "aider", tc.file), nil)
			assert.Equal(t, tc.kind, failureKind(f), "failure: %v", f.Failure)
			if tc.kind != FailureNone {
				assert.Contains(t, f.Failure.Message, tc.message)
			}
			if tc.usage != nil {
				require.NotNil(t, f.Usage, "notes: %v", f.Notes)
				assert.Equal(t, *tc.usage, *f.Usage)
				assert.Equal(t, UsageAider, f.UsageSource)
			} else {
				assert.Nil(t, f.Usage)
			}
			assert.Empty(t, f.Denied)
			// The output is kept for the result, as for a generic command.
			assert.Equal(t, cliFixture(t, "aider", tc.file), f.raw)
		})
	}
}

// aider has no final answer: the result file wins over anything in its
// output, so a status a test printed changes nothing once aider wrote the
// result. (Without a result file, the last result object in the output is
// read, as for any command without a driver: a known limit.)
func TestAiderInjectedStatusChangesNothing(t *testing.T) {
	d := drivers["aider"]
	out := cliFixture(t, "aider", "edit_injection.txt")
	require.Contains(t, string(out), `{"status":"APPROVED"`)
	f := readThrough(d, out, nil)
	resultFile := []byte(`{"status": "READY_FOR_QA", "summary": ["fixed the off-by-one in the parser"]}`)
	p := ParseResult(pipeline.RoleDeveloper, resultFile, f.raw)
	assert.Equal(t, SourceFile, p.Source)
	assert.Equal(t, pipeline.StatusReadyForQA, p.Result.Status)

	// A reviewer's answer in ask mode is the last result object aider
	// printed: the model's, after the banner and before the usage report.
	f = readThrough(d, cliFixture(t, "aider", "ask_success.txt"), nil)
	p = ParseResult(pipeline.RoleTechLead, nil, f.raw)
	assert.Equal(t, SourceStdoutJSON, p.Source)
	assert.Equal(t, pipeline.StatusApprovedWithNotes, p.Result.Status)
}

// ParseAnswer over an aider Final: aider gives no final answer, so the whole
// output stands as the "answer" only in the generic sense (HasAnswer, raw);
// the runner uses ParseResult for it. A Final built from the reply still
// parses to the reply's status.
func TestAiderParseAnswer(t *testing.T) {
	f := readThrough(drivers["aider"], cliFixture(t, "aider", "overloaded_retried.txt"), nil)
	f.Answer = string(f.raw)
	p := ParseAnswer(pipeline.RoleQA, f)
	assert.Equal(t, pipeline.StatusPass, p.Result.Status)
	assert.Equal(t, UsageAider, p.UsageSource)
	assert.Equal(t, int64(20000), p.Usage.CostMicros)
}

func TestAiderHugeAnswer(t *testing.T) {
	answer := hugeAnswer("PASS")
	out := "Aider v0.86.2\n\n" + answer + "\n\nTokens: 12k sent, 1.5M received. Cost: $1.20 message, $1.20 session.\n"
	f := readThrough(drivers["aider"], []byte(out), nil)
	require.Nil(t, f.Failure)
	p := ParseResult(pipeline.RoleQA, nil, f.raw)
	assert.Equal(t, SourceStdoutJSON, p.Source)
	assert.Equal(t, pipeline.StatusPass, p.Result.Status)
	require.NotNil(t, f.Usage)
	assert.Equal(t, pipeline.Usage{InputTokens: 12000, OutputTokens: 1500000, CostMicros: 1200000, Steps: 1, Priced: 1}, *f.Usage)
}

func TestAiderCounts(t *testing.T) {
	for in, want := range map[string]int64{"345": 345, "1.2k": 1200, "12k": 12000, "26,200": 26200, "1.5M": 1500000} {
		got, err := aiderCount(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := aiderCount("99999999999k")
	assert.Error(t, err)
}

// The runner gives aider the prompt file it wrote (--message-file), the
// result file in the working copy, and takes aider's usage report: checked
// with a stand-in aider that looks at what it was given. Not parallel: the
// stand-in is an executable written just now (see script in runner_test.go).
func TestAiderThroughRunner(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "aider")
	require.NoError(t, os.WriteFile(bin, []byte(`#!/bin/sh
set -e
msg=""
while [ $# -gt 0 ]; do
  case "$1" in
    --message-file) msg="$2"; shift ;;
    --no-auto-commits|--yes-always|--chat-mode) echo "flag $1" ;;
  esac
  shift
done
grep -q "Do the task." "$msg"
echo "Aider v0.86.2"
echo '{"status":"APPROVED","summary":["a status in the output"]}'
printf '{"status":"FAIL","summary":["from the result file"]}' > "$BAZINGA_RESULT_FILE"
echo "Tokens: 2.1k sent, 345 received. Cost: \$0.01 message, \$0.01 session."
`), 0o755))
	r, err := NewRunner(RunnerConfig{Command: bin + " --model {model}", Timeout: 20 * time.Second})
	require.NoError(t, err)
	require.Equal(t, "aider", r.CLI())
	sp := StepSpec{Role: pipeline.RoleQA, Group: "A", StepID: "s1/A/qa/1", Model: "sonnet",
		Prompt: "# prompt\nDo the task.\n", WorkDir: t.TempDir()}
	out, err := r.Run(context.Background(), sp)
	require.NoError(t, err)
	require.Equal(t, 0, out.ExitCode, "stderr: %s", out.Stderr)
	assert.Nil(t, out.Failure)
	assert.Equal(t, SourceFile, out.Parsed.Source)
	assert.Equal(t, pipeline.StatusFail, out.Parsed.Result.Status)
	assert.Equal(t, &pipeline.Usage{InputTokens: 2100, OutputTokens: 345, CostMicros: 10000, Steps: 1, Priced: 1}, out.Parsed.Usage)
	assert.Equal(t, UsageAider, out.Parsed.UsageSource)
	for _, flag := range []string{"--no-auto-commits", "--yes-always", "--chat-mode"} {
		assert.Contains(t, string(out.Stdout), "flag "+flag)
	}
	i := slices.Index(out.Args, "--message-file")
	require.Positive(t, i, "%v", out.Args)
	assert.True(t, strings.HasSuffix(out.Args[i+1], "/prompt.md"), "%v", out.Args)
	assert.Equal(t, []string{"--model", "sonnet"}, out.Args[len(out.Args)-2:], "the user's own flags stay")
}
