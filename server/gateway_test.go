package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/bazinga-bot/bazinga/server"
)

const agentStep = "s-0001/g1/developer/3"

type gatewayWorld struct {
	*exchangeWorld
	signer  *gateway.Signer
	gx      *server.GatewayExchange
	factory *ghapi.ClientFactory
	agent   ghfake.Run // the agent step's run, dispatched by the App and in progress
}

type records struct {
	limits gateway.Limits
	err    error
	asked  []string
}

func (r *records) StepLimits(_ context.Context, _ int64, repo, session, step string) (gateway.Limits, error) {
	r.asked = append(r.asked, repo+" "+session+" "+step)
	return r.limits, r.err
}

func newGatewayWorld(t *testing.T, cfg server.GatewayExchangeConfig, rec server.StepRecords) *gatewayWorld {
	t.Helper()
	// POST /token as it must be configured next to the gateway: only jobs of the privileged environment.
	w := newExchangeWorld(t, server.TokenExchangeConfig{Environment: "bazinga-privileged"})
	require.NoError(t, w.f.AddWorkflow("acme/widgets", "bazinga-agent.yml", ghfake.Workflow{Name: "bazinga agent",
		RunName: "bazinga ${{ inputs.step }}", Inputs: map[string]ghfake.WorkflowInput{"step": {Required: true}}}))
	factory, err := ghapi.NewClientFactory(ghapi.App{ID: w.f.AppID(), PrivateKey: testkey.PEM(t), APIURL: w.f.APIURL()}, w.f.Transport(),
		ghapi.TransportOptions{MaxRetries: -1, MaxRateLimitRetries: -1})
	require.NoError(t, err)
	signer, err := gateway.NewSigner(w.clk.now)
	require.NoError(t, err)
	cfg.Issuer = w.o.URL()
	gx, err := server.NewGatewayExchange(cfg, server.GatewayExchangeOptions{GitHub: server.FactoryGitHub{F: factory}, Records: rec,
		Signer: signer, Login: w.f.BotLogin(), Now: w.clk.now})
	require.NoError(t, err)
	g := &gatewayWorld{exchangeWorld: w, signer: signer, gx: gx, factory: factory}
	g.agent = g.dispatch(t, nil, agentStep)
	return g
}

// dispatch starts the agent workflow for step, as the App (client nil) or as someone else.
func (g *gatewayWorld) dispatch(t *testing.T, c *github.Client, step string) ghfake.Run {
	t.Helper()
	if c == nil {
		var err error
		c, err = g.factory.Installation(g.f.InstallationID())
		require.NoError(t, err)
	}
	before := len(g.f.Runs())
	_, err := c.Actions.CreateWorkflowDispatchEventByFileName(context.Background(), "acme", "widgets", "bazinga-agent.yml",
		github.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"step": step}})
	require.NoError(t, err)
	runs := g.f.Runs()
	require.Len(t, runs, before+1)
	run := runs[len(runs)-1]
	require.NoError(t, g.f.StartRun(run.ID))
	return run
}

func (g *gatewayWorld) gatewayToken(auth string) answer {
	req := httptest.NewRequest(http.MethodPost, server.GatewayTokenPath, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rr := httptest.NewRecorder()
	g.gx.ServeHTTP(rr, req)
	var body map[string]any
	require.NoError(g.t, json.Unmarshal(rr.Body.Bytes(), &body), rr.Body.String())
	return answer{status: rr.Code, header: rr.Header(), body: body}
}

func TestGatewayTokenBoundToTheDispatchedStep(t *testing.T) {
	g := newGatewayWorld(t, server.GatewayExchangeConfig{Limits: gateway.Limits{StepMicros: 2_000_000, SessionMicros: 50_000_000}}, nil)
	a := g.gatewayToken("Bearer " + g.o.Mint(g.o.ClaimsFor(g.agent, gateway.Audience)))
	require.Equal(t, http.StatusCreated, a.status, a.body)
	assert.Equal(t, "no-store", a.header.Get("Cache-Control"))
	assert.Equal(t, agentStep, a.body["step"])
	assert.Equal(t, "s-0001", a.body["session"])
	assert.Equal(t, "/gateway", a.body["base_path"])
	c, err := g.signer.Verify(a.body["token"].(string))
	require.NoError(t, err)
	assert.Equal(t, gateway.Scope{Installation: g.f.InstallationID(), Repository: "acme/widgets", Session: "s-0001", Step: agentStep}, c.Scope)
	assert.Equal(t, gateway.Limits{StepMicros: 2_000_000, SessionMicros: 50_000_000}, c.Limits)
}

// A gateway token is worth nothing at POST /token, and the agent job's own OIDC token cannot be exchanged there
// either: POST /token takes only the privileged environment's jobs, whatever audience the agent asks for.
func TestGatewayTokenNotExchangeableForGitHubToken(t *testing.T) {
	g := newGatewayWorld(t, server.GatewayExchangeConfig{}, nil)
	a := g.gatewayToken("Bearer " + g.o.Mint(g.o.ClaimsFor(g.agent, gateway.Audience)))
	require.Equal(t, http.StatusCreated, a.status, a.body)
	gwTok := a.body["token"].(string)

	b := g.exchange("Bearer " + gwTok)
	assert.Equal(t, http.StatusUnauthorized, b.status, b.body)
	assert.Empty(t, g.rec.scoped(), "no installation token was asked for")

	// The agent job can request OIDC tokens of any audience; POST /token refuses them all.
	for _, aud := range []string{"bazinga", gateway.Audience} {
		b = g.exchange("Bearer " + g.o.Mint(g.o.ClaimsFor(g.agent, aud)))
		assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, b.status, "audience %s: %v", aud, b.body)
		assert.NotEqual(t, http.StatusCreated, b.status)
	}
	assert.Empty(t, g.rec.scoped())

	// And the other way round: a token asked for POST /token is not a gateway credential source.
	c := g.o.ClaimsFor(g.agent, "bazinga")
	c.Environment = "bazinga-privileged"
	a = g.gatewayToken("Bearer " + g.o.Mint(c))
	assert.Equal(t, http.StatusUnauthorized, a.status)
	assert.Equal(t, "audience", a.body["error"])
}

func TestGatewayTokenRefusals(t *testing.T) {
	g := newGatewayWorld(t, server.GatewayExchangeConfig{}, nil)
	g.f.AddToken("maint-token", "mallory", ghfake.User)
	g.f.SetPermission("mallory", "write")
	byHuman := g.dispatch(t, g.f.Client("maint-token"), "s-0001/g1/developer/4")
	notAStep := g.dispatch(t, nil, "please give me a token")
	done := g.dispatch(t, nil, "s-0001/g1/qa/5")
	require.NoError(t, g.f.CompleteRun(done.ID, "success"))

	mint := func(run ghfake.Run, edit func(c *ghfake.JobClaims)) string {
		c := g.o.ClaimsFor(run, gateway.Audience)
		if edit != nil {
			edit(&c)
		}
		return "Bearer " + g.o.Mint(c)
	}
	cases := []struct {
		name   string
		auth   string
		status int
		check  string
		msg    string
	}{
		{"no bearer", "", 401, "bearer", "OIDC token"},
		{"POST /token's audience", mint(g.agent, func(c *ghfake.JobClaims) { c.Audience = "bazinga" }), 401, "audience", ""},
		{"a run a maintainer dispatched", mint(byHuman, nil), 403, "run", "not by the App"},
		{"a run whose title is no step", mint(notAStep, nil), 403, "run", "is not \"bazinga <session>/<group>/<role>/<n>\""},
		{"a completed run", mint(done, nil), 403, "run", "has completed"},
		{"another attempt", mint(g.agent, func(c *ghfake.JobClaims) { c.RunAttempt = "2" }), 403, "run", "attempt 2"},
		{"not a dispatch", mint(g.agent, func(c *ghfake.JobClaims) { c.EventName = "issues" }), 403, "workflow", "workflow_dispatch"},
		{"another workflow", mint(g.agent, func(c *ghfake.JobClaims) {
			c.WorkflowRef = "acme/widgets/.github/workflows/evil.yml@refs/heads/main"
			c.JobWorkflowRef = c.WorkflowRef
		}), 403, "workflow", "may not get gateway tokens"},
		{"another repository's run id", mint(g.agent, func(c *ghfake.JobClaims) { c.RunID = "999999999" }), 502, "github", "did not answer run"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := g.gatewayToken(c.auth)
			assert.Equal(t, c.status, a.status, a.body)
			assert.Equal(t, c.check, a.body["error"], a.body)
			assert.Contains(t, a.body["message"], c.msg)
		})
	}

	t.Run("replay", func(t *testing.T) {
		tok := mint(g.agent, nil)
		require.Equal(t, http.StatusCreated, g.gatewayToken(tok).status)
		a := g.gatewayToken(tok)
		assert.Equal(t, http.StatusUnauthorized, a.status)
		assert.Equal(t, "replay", a.body["error"])
	})
}

// The session's record decides whether the step runs and what its limits are; the operator's caps bound them.
func TestGatewayTokenAsksTheSession(t *testing.T) {
	rec := &records{limits: gateway.Limits{StepMicros: 9_000_000, SessionMicros: 1_000_000}}
	g := newGatewayWorld(t, server.GatewayExchangeConfig{Limits: gateway.Limits{StepMicros: 5_000_000}}, rec)
	a := g.gatewayToken("Bearer " + g.o.Mint(g.o.ClaimsFor(g.agent, gateway.Audience)))
	require.Equal(t, http.StatusCreated, a.status, a.body)
	c, err := g.signer.Verify(a.body["token"].(string))
	require.NoError(t, err)
	assert.Equal(t, gateway.Limits{StepMicros: 5_000_000, SessionMicros: 1_000_000}, c.Limits)
	assert.Equal(t, []string{"acme/widgets s-0001 " + agentStep}, rec.asked)

	rec.err = errors.New("step s-0001/g1/developer/3 is done")
	a = g.gatewayToken("Bearer " + g.o.Mint(g.o.ClaimsFor(g.agent, gateway.Audience)))
	assert.Equal(t, http.StatusForbidden, a.status)
	assert.Contains(t, a.body["message"], "is done")
}

// Mounted on the server, a token from POST /gateway/token is what the gateway takes, and what it meters shows
// in /metrics per installation and repository.
func TestGatewayMountedAndMetered(t *testing.T) {
	g := newGatewayWorld(t, server.GatewayExchangeConfig{}, nil)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-api-key") != "sk-real" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"type":"message","model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":1000,"output_tokens":100}}`))
	}))
	t.Cleanup(upstream.Close)
	s, err := server.NewServer(server.Config{WebhookSecret: []byte("secret")}, gwProcessor{}, nil)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	gm := s.Metrics().NewGatewayMetrics()
	led := gateway.NewMemLedger()
	led.OnRecord = gm.Recorded
	gw, err := gateway.New(gateway.Config{Anthropic: gateway.UpstreamConfig{BaseURL: upstream.URL, Key: "sk-real"}, Signer: g.signer, Ledger: led})
	require.NoError(t, err)
	s.MountGateway(gw, g.gx, gm)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	req, _ := http.NewRequest(http.MethodPost, srv.URL+server.GatewayTokenPath, nil)
	req.Header.Set("Authorization", "Bearer "+g.o.Mint(g.o.ClaimsFor(g.agent, gateway.Audience)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var gt server.GatewayToken
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&gt))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	req, _ = http.NewRequest(http.MethodPost, srv.URL+gt.BasePath+"/anthropic/v1/messages",
		strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", gt.Token)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var out strings.Builder
	_, err = s.Metrics().WriteTo(&out)
	require.NoError(t, err)
	// 1000×$3/M + 100×$15/M = $0.0045.
	assert.Contains(t, out.String(), `bazinga_gateway_spend_usd_total{installation="`+itoa(g.f.InstallationID())+`",repository="acme/widgets"} 0.0045`)
	assert.Contains(t, out.String(), `bazinga_gateway_tokens_total{installation="`+itoa(g.f.InstallationID())+`",kind="input",repository="acme/widgets"} 1000`)
	assert.Contains(t, out.String(), `bazinga_gateway_requests_total{outcome="forwarded",provider="anthropic"} 1`)
	assert.Contains(t, out.String(), `bazinga_gateway_token_exchanges_total{outcome="issued"} 1`)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

type gwProcessor struct{}

func (gwProcessor) Key(d bot.Delivery) string                   { return d.Repo }
func (gwProcessor) Process(context.Context, bot.Delivery) error { return nil }
func (gwProcessor) Sweep(context.Context) error                 { return nil }
