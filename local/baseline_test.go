package local

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// flakyTests fails TestFlaky on every tree (named by go test -json) and
// passes TestHello once hello.txt exists.
const flakyTests = `#!/bin/sh
echo '{"Action":"output","Package":"p","Test":"TestFlaky","Output":"flaky\n"}'
echo '{"Action":"fail","Package":"p","Test":"TestFlaky"}'
if [ -f hello.txt ]; then echo '{"Action":"pass","Package":"p","Test":"TestHello"}'; fi
exit 1
`

// redBaseRepo is a repository whose tests already fail on main: with
// test.sh printing go test -json events, or (exitStatus) a bare command
// whose failures have no names.
func redBaseRepo(t *testing.T, exitStatus bool) Options {
	t.Helper()
	repo := gitRepo(t, map[string]string{"README.md": "demo\n", "t.sh": flakyTests})
	require.NoError(t, os.Chmod(filepath.Join(repo, "t.sh"), 0o755))
	gitCLI(t, repo, "add", "-A")
	gitCLI(t, repo, "commit", "-q", "-m", "executable")
	agentCmd, state := writeAgent(t, scriptAgent)
	t.Setenv("STATE", state)
	test := "./t.sh"
	if exitStatus {
		test = "test -f hello.txt"
	}
	return Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd, TestCommand: &test, PassEnv: []string{"STATE"}}
}

const baselineQuestion = `Accept these failures as pre-existing (only failures the base does not have will count)? (a)ccept / (s)top:`

// On a terminal a red baseline is put to the person: accepting it is a
// resume (which accepts the baseline) and the session runs to BAZINGA;
// stopping leaves the session stopped and saved, and --resume accepts it.
func TestRedBaselineAskedOnTheTerminal(t *testing.T) {
	for _, tc := range []struct {
		name       string
		exitStatus bool
		input      string
		asked      int
		status     pipeline.SessionStatus
		out        []string
	}{
		{"accept", false, "a\n", 1, pipeline.SessionDone, []string{
			"🧱 The tests already fail on main@", " before any work (failing tests told apart by: go test -json).\nFailing tests:\n  - p.TestFlaky\nCommand: ./t.sh\n(",
			"Output (the end):\n  | {\"Action\":\"output\"",
			baselineQuestion, "Resumed by terminal. The baseline of main is accepted: only failures it does not have count."}},
		{"an unreadable answer is asked again", false, "later\naccept\n", 2, pipeline.SessionDone, []string{
			`type "a" to accept these failures as pre-existing, or "s" to stop`, "Resumed by terminal. The baseline of main is accepted"}},
		{"exit status only", true, "y\n", 1, pipeline.SessionDone, []string{
			"(failing tests told apart by: exit status).\nFailing tests: not named — exit status only", baselineQuestion}},
		{"stop", false, "s\n", 1, pipeline.SessionStopped, []string{
			"stopped at the red baseline; the session is saved. Accept the baseline and continue with:\n  bazinga run --repo "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := redBaseRepo(t, tc.exitStatus)
			var out bytes.Buffer
			opts.Out, opts.Terminal, opts.Input = &out, true, strings.NewReader(tc.input)
			res, err := Run(context.Background(), opts)
			require.NoError(t, err, out.String())
			require.Equal(t, tc.status, res.Status, "%s\n%s", res.Reason, out.String())
			for _, want := range tc.out {
				assert.Contains(t, out.String(), want)
			}
			assert.Equal(t, tc.asked, strings.Count(out.String(), "🧱 The tests already fail"), "asked again only after an unreadable answer")
			assert.NotContains(t, out.String(), "/bazinga", "GitHub's commands are not offered on the terminal")
			b := res.Session.Baseline
			require.NotNil(t, b)
			assert.False(t, b.Green)
			if tc.status != pipeline.SessionDone {
				assert.False(t, b.Accepted)
				assert.NoFileExists(t, filepath.Join(opts.Repo, "hello.txt"), "no work after a stop")
				// The session is saved: --resume accepts the baseline and goes on.
				out.Reset()
				res, err = Run(context.Background(), Options{Repo: opts.Repo, ResumeID: res.ID, PassEnv: []string{"STATE"}, Out: &out})
				require.NoError(t, err, out.String())
				require.True(t, res.Verified(), "%s: %s\n%s", res.Status, res.Reason, out.String())
				assert.Equal(t, "local", res.Session.Baseline.AcceptedBy)
				return
			}
			require.True(t, res.Verified(), "%s: %s\n%s", res.Status, res.Reason, out.String())
			assert.True(t, b.Accepted)
			assert.Equal(t, "terminal", b.AcceptedBy)
			assert.Equal(t, tc.exitStatus, b.Unnamed)
			if !tc.exitStatus {
				assert.Equal(t, []string{"p.TestFlaky"}, b.Failed)
			}
			assert.FileExists(t, filepath.Join(opts.Repo, "hello.txt"), "the work merged despite the pre-existing failure")
		})
	}
}

// A terminal whose input ends before an answer, like no terminal at all,
// leaves the session paused, saying how to continue.
func TestRedBaselineWithoutAnAnswer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		terminal bool
	}{{"no terminal", false}, {"input ended", true}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := redBaseRepo(t, false)
			var out bytes.Buffer
			opts.Out = &out
			if tc.terminal {
				opts.Terminal, opts.Input = true, strings.NewReader("")
			}
			res, err := Run(context.Background(), opts)
			require.NoError(t, err, out.String())
			require.Equal(t, pipeline.SessionPaused, res.Status, out.String())
			assert.False(t, res.Session.Baseline.Accepted)
			assert.Contains(t, out.String(), "Failing tests:\n  - p.TestFlaky\n")
			why := "this run cannot ask (no terminal)"
			if tc.terminal {
				why = "the input ended before an answer"
			}
			assert.Equal(t, 1, strings.Count(out.String(), "Failing tests:\n  - p.TestFlaky\n"), "shown once")
			assert.Contains(t, out.String(), why+"; the session is saved and paused. "+
				"Accept these failures as pre-existing and continue with:\n  bazinga run --repo "+opts.Repo+" --resume "+res.ID+
				"\nor let new sessions accept a red base without asking: --baseline accept (tests.baseline: accept).")
			assert.NotContains(t, out.String(), "/bazinga")
			assert.NotContains(t, res.Reason, "/bazinga")
			assert.Contains(t, res.Reason, "baseline: the tests already fail on main@")
			var summary bytes.Buffer
			WriteSummary(&summary, res.Session)
			assert.Contains(t, summary.String(), "— paused: baseline: the tests already fail on main@")
			assert.NotContains(t, summary.String(), "/bazinga")
			if tc.terminal {
				assert.Contains(t, out.String(), baselineQuestion, "asked, then the input ended")
			} else {
				assert.NotContains(t, out.String(), baselineQuestion, "nobody to ask")
			}
		})
	}
}

// --baseline accept: no question, no pause.
func TestRedBaselineAcceptedByFlag(t *testing.T) {
	opts := redBaseRepo(t, false)
	var out bytes.Buffer
	opts.Out, opts.Baseline = &out, pipeline.BaselineAccept
	res, err := Run(context.Background(), opts)
	require.NoError(t, err, out.String())
	require.True(t, res.Verified(), "%s: %s\n%s", res.Status, res.Reason, out.String())
	assert.Equal(t, "tests.baseline: accept", res.Session.Baseline.AcceptedBy)
	assert.NotContains(t, out.String(), baselineQuestion)
	assert.NotContains(t, out.String(), "cannot ask")
}

func TestParseBaselineReply(t *testing.T) {
	for _, tc := range []struct {
		line string
		want pipeline.CommandKind
		ok   bool
	}{
		{"a", pipeline.CommandResume, true},
		{" Accept ", pipeline.CommandResume, true},
		{"yes", pipeline.CommandResume, true},
		{"s", pipeline.CommandStop, true},
		{"STOP", pipeline.CommandStop, true},
		{"a please", pipeline.CommandUnknown, false},
		{"f fix it", pipeline.CommandUnknown, false},
		{"", pipeline.CommandUnknown, false},
	} {
		got, ok := parseBaselineReply(tc.line)
		assert.Equal(t, tc.ok, ok, "%q", tc.line)
		if ok {
			assert.Equal(t, pipeline.Command{Kind: tc.want}, got, "%q", tc.line)
		}
	}
}

// A red baseline and the plan checkpoint share the terminal: the baseline is
// asked first (the session is paused), then the plan, one line each.
func TestRedBaselineThenPlanCheckpoint(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README.md": "x\n", ".github/bazinga.yml": "checkpoints: [plan]\n"})
	agentCmd, state := writeAgent(t, planAgent)
	t.Setenv("STATE", state)
	test := "test -f hello.txt"
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Repo: repo, Requirements: "greet", AgentCommand: agentCmd, TestCommand: &test,
		PassEnv: []string{"STATE"}, Out: &out, Terminal: true, Input: strings.NewReader("a\na\n")})
	require.NoError(t, err, out.String())
	require.True(t, res.Verified(), "%s: %s\n%s", res.Status, res.Reason, out.String())
	assert.Equal(t, "terminal", res.Session.Baseline.AcceptedBy)
	assert.Equal(t, []string{"plan-1 approved:terminal revised: "}, passed(res.Session))
	text := out.String()
	bl, plan := strings.Index(text, baselineQuestion), strings.Index(text, `Approve the plan? Type "a"`)
	require.GreaterOrEqual(t, bl, 0, text)
	assert.Greater(t, plan, bl, "the baseline first, then the plan")
	assert.FileExists(t, filepath.Join(repo, "hello.txt"))
}
