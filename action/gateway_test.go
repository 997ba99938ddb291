package action_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/modelfake"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/bazinga-bot/bazinga/server"
)

const gatewayKey = "sk-ant-real-key-only-in-bazinga-serve"

// gatewayServer is bazinga serve's gateway and POST /gateway/token for the unit's fake, in front of a scripted
// model server that wants gatewayKey.
func gatewayServer(t *testing.T, u *unit, o *ghfake.OIDCIssuer) (url string, model *modelfake.Server, led *gateway.MemLedger) {
	t.Helper()
	model = modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "ok", Usage: modelfake.Usage{InputTokens: 1000, OutputTokens: 100}}))
	factory, err := ghapi.NewClientFactory(ghapi.App{ID: u.F.AppID(), PrivateKey: testkey.PEM(t), APIURL: u.F.APIURL()}, u.F.Transport(),
		ghapi.TransportOptions{MaxRetries: -1, MaxRateLimitRetries: -1})
	require.NoError(t, err)
	signer, err := gateway.NewSigner(nil)
	require.NoError(t, err)
	led = gateway.NewMemLedger()
	gw, err := gateway.New(gateway.Config{Anthropic: gateway.UpstreamConfig{BaseURL: model.URL, Key: gatewayKey}, Signer: signer, Ledger: led})
	require.NoError(t, err)
	x, err := server.NewGatewayExchange(server.GatewayExchangeConfig{Issuer: o.URL()}, server.GatewayExchangeOptions{
		GitHub: server.FactoryGitHub{F: factory}, Signer: signer, Login: u.F.BotLogin()})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(server.GatewayTokenPath, x)
	mux.Handle(server.GatewayPrefix+"/", http.StripPrefix(server.GatewayPrefix, gw))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + server.GatewayPrefix, model, led
}

// dumpingAgent wraps the scripted agent: first it writes its whole environment, every process environment it
// can read and every readable file under the job's directories to dump, and calls the model through whatever
// base URL and key it was given.
func dumpingAgent(t *testing.T, u *unit, dump string) string {
	script := fmt.Sprintf(`#!/bin/sh
{
  env
  for p in /proc/[0-9]*/environ; do tr '\0' '\n' < "$p" 2>/dev/null; done
  grep -rsI . %q "$HOME" "$PWD" "${TMPDIR:-/tmp}" 2>/dev/null | head -c 20000000
} > %q
curl -s -o /dev/null -w '%%{http_code}\n' "$ANTHROPIC_BASE_URL/v1/messages" -H "x-api-key: $ANTHROPIC_API_KEY" \
  -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' \
  -d '{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}' > %q.code
exec %s
`, u.dir, dump, dump, u.AgentCmd(t))
	p := filepath.Join(t.TempDir(), "agent.sh")
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// In App mode with the gateway, the agent job holds no provider key: the agent finds none in its environment,
// in any process's it can read or in any readable file of the job, yet its model calls work — with the key the
// gateway adds — and are metered against its step.
func TestAgentJobWithGatewayHoldsNoProviderKey(t *testing.T) {
	u := newUnit(t)
	o := ghfake.StartOIDC(t, u.F)
	url, model, led := gatewayServer(t, u, o)
	dump := filepath.Join(t.TempDir(), "dump")
	env := withJobOIDC(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(),
		"agent-command": dumpingAgent(t, u, dump), "gateway-url": url}), o, u.Run)
	r := u.action(env)
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, "model calls go through the gateway at "+url)

	b, err := os.ReadFile(dump)
	require.NoError(t, err)
	assert.NotContains(t, string(b), gatewayKey, "the provider key is nowhere the agent can read")
	assert.Contains(t, string(b), "ANTHROPIC_BASE_URL="+url+"/anthropic")
	code, err := os.ReadFile(dump + ".code")
	require.NoError(t, err)
	assert.Equal(t, "200", strings.TrimSpace(string(code)))
	require.Len(t, model.Requests(), 1)
	assert.Equal(t, gatewayKey, model.Requests()[0].Header.Get("x-api-key"))
	sp, err := led.StepSpend(t.Context(), gateway.Scope{Repository: E2eFull, Session: "1", Step: "1/_/pm/1", Installation: u.F.InstallationID()})
	require.NoError(t, err)
	assert.Equal(t, gateway.Tokens{Input: 1000, Output: 100}, sp.Tokens, "metered against the step the App dispatched")
}

// gateway-url goes only on agent jobs that hold no provider key and can request their OIDC token.
func TestGatewayInputRefusals(t *testing.T) {
	u := newUnit(t)
	o := ghfake.StartOIDC(t, u.F)
	url, model, _ := gatewayServer(t, u, o)
	base := func(extra map[string]string) map[string]string {
		in := map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(), "agent-command": u.AgentCmd(t), "gateway-url": url}
		for k, v := range extra {
			in[k] = v
		}
		return in
	}
	withKey := withJobOIDC(u.Env(base(nil)), o, u.Run)
	withKey["ANTHROPIC_API_KEY"] = "sk-leaked"
	r := u.action(withKey)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "this job's environment holds ANTHROPIC_API_KEY")
	assert.NotContains(t, r.stdout, "sk-leaked")

	r = u.action(u.Env(base(nil)))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "cannot request its OIDC token")

	r = u.action(withJobOIDC(u.Env(base(map[string]string{"command": "publish"})), o, u.Run))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "input `gateway-url` is set on a publish job")

	r = u.action(withJobOIDC(u.Env(base(map[string]string{"gateway-url": "http://bazinga.example.com/gateway"})), o, u.Run))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "must be https")
	assert.Empty(t, model.Requests())
}
