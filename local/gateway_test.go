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

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/internal/modelfake"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// liarAgent plays the one-group session like claudeAgent, but each step first calls the model through
// $ANTHROPIC_BASE_URL ($CALLS times), keeps its environment for the test to read, and then reports a cost of
// $0.0001 whatever it spent.
const liarAgent = `#!/bin/sh
set -e
count() { n=$(cat "$STATE/$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$STATE/$1"; echo $n; }
wrap() { printf '{"type":"result","subtype":"success","is_error":false,"result":%s,"total_cost_usd":0.0001,"usage":{"input_tokens":1,"output_tokens":1}}\n' "$1"; }
env > "$STATE/env-$BAZINGA_ROLE"
i=0
while [ $i -lt "$CALLS" ]; do
  i=$((i+1))
  curl -s -o /dev/null -w '%{http_code}\n' "$ANTHROPIC_BASE_URL/v1/messages" -H "x-api-key: $ANTHROPIC_API_KEY" \
    -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' \
    -d '{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}' >> "$STATE/codes"
done
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

const realKey = "sk-ant-real-key-stays-with-bazinga"

func liarSetup(t *testing.T, calls string) (agentCmd, state string, srv *modelfake.Server) {
	srv = modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "ok", Usage: modelfake.Usage{InputTokens: 1000, OutputTokens: 200}}))
	agentCmd, state = writeAgent(t, liarAgent)
	t.Setenv("STATE", state)
	t.Setenv("CALLS", calls)
	t.Setenv("ANTHROPIC_API_KEY", realKey)
	return agentCmd, state, srv
}

// With the gateway, a session's cost is what the model server's answers said, whatever the agent reports, and
// the agent's environment holds a step token, never the provider key.
func TestLocalGatewayMetersWhatTheAgentSpent(t *testing.T) {
	agentCmd, state, srv := liarSetup(t, "1")
	repo := gitRepo(t, map[string]string{"README.md": "demo\n"})
	test := "test -f hello.txt"
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd,
		TestCommand: &test, Baseline: pipeline.BaselineOff, PassEnv: []string{"STATE", "CALLS", "ANTHROPIC_API_KEY"}, Out: &out,
		Gateway: &GatewayOptions{Anthropic: gateway.UpstreamConfig{BaseURL: srv.URL, Key: realKey}}})
	require.NoError(t, err, out.String())
	require.True(t, res.Verified(), out.String())

	// pm ×2, developer, qa, tech lead: five calls of 1000 in, 200 out at $3 and $15 per million = $0.006 each.
	assert.Equal(t, pipeline.Usage{CostMicros: 30_000, InputTokens: 5000, OutputTokens: 1000, Steps: 5, Priced: 5}, res.Session.Usage)
	assert.Contains(t, out.String(), "Usage: $0.0300")
	reqs := srv.Requests()
	require.Len(t, reqs, 5)
	for _, r := range reqs {
		assert.Equal(t, realKey, r.Header.Get("x-api-key"))
	}
	for _, role := range []string{"pm", "developer", "qa", "tech_lead"} {
		b, err := os.ReadFile(filepath.Join(state, "env-"+role))
		require.NoError(t, err)
		env := string(b)
		assert.NotContains(t, env, realKey, role)
		assert.Contains(t, env, "ANTHROPIC_BASE_URL=http://127.0.0.1:", role)
		assert.Regexp(t, `(?m)^ANTHROPIC_API_KEY=ey`, env, "a gateway token (a JWT) in the key's place")
	}
}

// Over the step limit the gateway refuses the next request in the provider's error shape, the step is charged
// what it metered, and the session pauses naming the limit.
func TestLocalGatewayStepLimit(t *testing.T) {
	agentCmd, state, srv := liarSetup(t, "3")
	repo := gitRepo(t, map[string]string{"README.md": "demo\n", ".github/bazinga.yml": "limits:\n  step_cost_usd: 0.005\n"})
	test := "test -f hello.txt"
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd,
		TestCommand: &test, Baseline: pipeline.BaselineOff, PassEnv: []string{"STATE", "CALLS"}, Out: &out,
		Gateway: &GatewayOptions{Anthropic: gateway.UpstreamConfig{BaseURL: srv.URL, Key: realKey}}})
	require.NoError(t, err, out.String())
	require.Equal(t, pipeline.SessionPaused, res.Status, out.String())
	assert.Contains(t, res.Reason, "over limits.step_cost_usd $0.0050")
	assert.Len(t, srv.Requests(), 1, "the second and third calls were refused before reaching the model")
	codes, err := os.ReadFile(filepath.Join(state, "codes"))
	require.NoError(t, err)
	assert.Equal(t, []string{"200", "402", "402"}, strings.Fields(string(codes)))
	assert.Equal(t, int64(6000), res.Session.Usage.CostMicros)
}

func TestGatewayFromEnv(t *testing.T) {
	env := map[string]string{"OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": "https://litellm.example/v1/"}
	o, err := GatewayFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, gateway.UpstreamConfig{Key: "sk-o", BaseURL: "https://litellm.example"}, o.OpenAI)
	assert.Empty(t, o.Anthropic.Key)
	_, err = GatewayFromEnv(func(string) string { return "" })
	assert.ErrorContains(t, err, "needs a provider key")
}

func TestAgentEnvWithoutCredentials(t *testing.T) {
	assert.Equal(t, []string{"GOCACHE", "STATE"},
		agentEnvWithoutCredentials([]string{"ANTHROPIC_API_KEY", "GOCACHE", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "STATE", "GEMINI_API_KEY"}))
}
