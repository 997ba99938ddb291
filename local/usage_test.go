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

// claudeAgent plays the one-group session the way claude -p --output-format
// json prints: one result object whose text holds the result, with
// total_cost_usd and usage (each step costs $0.25).
const claudeAgent = `#!/bin/sh
set -e
count() { n=$(cat "$STATE/$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$STATE/$1"; echo $n; }
wrap() { printf '{"type":"result","subtype":"success","is_error":false,"result":%s,"total_cost_usd":0.25,"usage":{"input_tokens":1000,"cache_creation_input_tokens":0,"cache_read_input_tokens":4000,"output_tokens":200}}\n' "$1"; }
case "$BAZINGA_ROLE" in
pm)
  n=$(count pm)
  if [ "$n" = 1 ]; then
    wrap '"{\"status\":\"PLANNING_COMPLETE\",\"handoff\":{\"plan\":{\"mode\":\"simple\",\"groups\":[{\"id\":\"A\",\"name\":\"hello\",\"task\":\"add hello.txt\"}],\"success_criteria\":[\"hello.txt exists\"]}}}"'
  else
    wrap '"{\"status\":\"BAZINGA\",\"handoff\":{\"criteria\":[{\"criterion\":\"hello.txt exists\",\"met\":true,\"evidence\":\"merged\"}]}}"'
  fi ;;
developer) echo hello > hello.txt; wrap '"Status: READY_FOR_QA"' ;;
qa) wrap '"Status: PASS"' ;;
tech_lead) wrap '"Status: APPROVED"' ;;
esac
`

func TestLocalUsageSummary(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README.md": "demo\n"})
	agentCmd, state := writeAgent(t, claudeAgent)
	t.Setenv("STATE", state)
	test := "test -f hello.txt"
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd,
		TestCommand: &test, Baseline: pipeline.BaselineOff, PassEnv: []string{"STATE"}, Out: &out})
	require.NoError(t, err, out.String())
	require.True(t, res.Verified(), out.String())
	// pm ×2, developer, qa, tech lead: five agent steps at $0.25.
	assert.Equal(t, pipeline.Usage{CostMicros: 1_250_000, InputTokens: 5000, OutputTokens: 1000, CacheReadTokens: 20000, Steps: 5, Priced: 5},
		res.Session.Usage)
	text := out.String()
	assert.Contains(t, text, "🔨 Group A [developer/haiku] READY_FOR_QA | $0.2500 · 5.2k tokens → qa")
	assert.Contains(t, text, "USAGE")
	assert.Regexp(t, `(?m)^A +hello +merged +\d+ +\$0\.7500 · 15\.6k tokens +`, text)
	assert.Regexp(t, `(?m)^_ +session +done +\d+ +\$0\.5000 · 10\.4k tokens`, text)
	assert.Contains(t, text, "Usage: $1.25 · 26.0k tokens (in 5.0k, out 1.0k, cache read 20.0k).")

	var plain bytes.Buffer
	WriteSummary(&plain, pipeline.Session{ID: "x", Status: pipeline.SessionDone})
	assert.NotContains(t, plain.String(), "USAGE", "no usage column when nothing reported usage")
}

// A session limit pauses the local session; raising it in the base's
// configuration and resuming finishes the session.
func TestLocalSessionCostLimit(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README.md": "demo\n", ".github/bazinga.yml": "limits:\n  session_cost_usd: 0.5\n"})
	agentCmd, state := writeAgent(t, claudeAgent)
	t.Setenv("STATE", state)
	test := "test -f hello.txt"
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd,
		TestCommand: &test, Baseline: pipeline.BaselineOff, PassEnv: []string{"STATE"}, Out: &out})
	require.NoError(t, err, out.String())
	require.Equal(t, pipeline.SessionPaused, res.Status, out.String())
	assert.Contains(t, res.Reason, "reaching limits.session_cost_usd $0.5000")
	assert.Contains(t, out.String(), "⏸️  paused: the session has spent $0.5000")
	// The terminal says how to go on in its own words (issue 23).
	assert.Contains(t, out.String(), "continue with:\n  bazinga run --repo "+repo+" --resume "+res.ID)
	assert.NotContains(t, out.String(), "/bazinga")

	// Resuming without raising it pauses again, naming the limit.
	out.Reset()
	res2, err := Run(context.Background(), Options{Repo: repo, ResumeID: res.ID, AgentCommand: agentCmd, TestCommand: &test,
		PassEnv: []string{"STATE"}, Out: &out})
	require.NoError(t, err, out.String())
	require.Equal(t, pipeline.SessionPaused, res2.Status)

	require.NoError(t, writeFile(repo, ".github/bazinga.yml", "limits:\n  session_cost_usd: 5\n"))
	gitCLI(t, repo, "commit", "-q", "-am", "raise the budget")
	out.Reset()
	res3, err := Run(context.Background(), Options{Repo: repo, ResumeID: res.ID, AgentCommand: agentCmd, TestCommand: &test,
		PassEnv: []string{"STATE"}, Out: &out})
	require.NoError(t, err, out.String())
	assert.True(t, res3.Verified(), out.String())
	assert.True(t, strings.Contains(out.String(), "Usage: $1.25"), out.String())
}

func writeFile(dir, name, body string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
}
