package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/modelfake"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/server"
)

// serve with a provider key mounts the gateway: an agent step's job gets a gateway token for its OIDC token, the
// token buys model calls with the key the job never sees, is worth nothing at POST /token, and the spend shows in
// /metrics.
func TestServeMountsTheGateway(t *testing.T) {
	fake := ghfake.Start(t, ghfake.Options{WebhookMode: ghfake.Sync})
	repo, err := fake.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	_, err = repo.Push("acme", "main", map[string]string{"README.md": "hi\n"}, "init")
	require.NoError(t, err)
	require.NoError(t, fake.AddWorkflow("acme/widgets", "bazinga-agent.yml", ghfake.Workflow{RunName: "bazinga ${{ inputs.step }}",
		Inputs: map[string]ghfake.WorkflowInput{"step": {Required: true}}}))
	o := ghfake.StartOIDC(t, fake)
	web, api, upload, err := ghapi.GitHubURLs(fake.URL())
	require.NoError(t, err)
	model := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "hi", Usage: modelfake.Usage{InputTokens: 2000, OutputTokens: 100}}))

	env := map[string]string{server.EnvGatewayAnthropicKey: "sk-real", server.EnvGatewayAnthropicURL: model.URL, server.EnvGatewayStepLimit: "2"}
	gw, err := server.GatewayConfigFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "queue.db")
	cfg := server.Config{AppID: fake.AppID(), WebhookSecret: []byte("s"), StateKey: []byte(testStateKey), Listen: addr, PrivateKey: testkey.PEM(t),
		GitHubURL: web, APIURL: api, UploadURL: upload, DatabaseURL: dbURL,
		TokenExchange: server.TokenExchangeConfig{Issuer: o.URL(), Environment: "bazinga-privileged"}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var logs lockedBuffer
	go func() { done <- serveWith(ctx, cfg, gw, slog.New(slog.NewTextHandler(&logs, nil))) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
			for _, d := range fake.Deliveries() {
				t.Logf("delivery %s %s %d %s", d.Event, d.Action, d.Status, d.Err)
			}
		}
	})
	defer func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop")
		}
	}()
	post := func(path, auth, body string, hdr ...string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool {
		r, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			r.Body.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "serving")
	// A session starts: the orchestrator (the App, in serve) dispatches its pm step.
	fake.SetPermission("alice", "write")
	fake.SetWebhook("http://"+addr+"/webhook", "s")
	issue, err := repo.CreateIssue("alice", "Add Mul", "Please.")
	require.NoError(t, err)
	require.NoError(t, repo.LabelIssue("alice", issue, "bazinga"))
	var run ghfake.Run
	require.Eventually(t, func() bool {
		for _, r := range fake.Runs() {
			if r.Workflow == "bazinga-agent.yml" {
				run = r
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "the pm step is dispatched")
	require.NoError(t, fake.StartRun(run.ID))
	var status int
	var body string
	oidc := o.Mint(o.ClaimsFor(run, gateway.Audience))
	require.Eventually(t, func() bool {
		status, body = post(server.GatewayTokenPath, "Bearer "+oidc, "")
		return status != 0
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusCreated, status, body)
	var gt server.GatewayToken
	require.NoError(t, json.Unmarshal([]byte(body), &gt))
	assert.Equal(t, strconv.Itoa(issue)+"/_/pm/1", gt.Step, "bound to the step the session dispatched")
	assert.Equal(t, int64(2_000_000), gt.Limits.StepMicros, "the operator's cap")

	status, body = post(gt.BasePath+"/anthropic/v1/messages", "", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		"x-api-key", gt.Token, "anthropic-version", "2023-06-01")
	require.Equal(t, http.StatusOK, status, body)
	require.Len(t, model.Requests(), 1)
	assert.Equal(t, "sk-real", model.Requests()[0].Header.Get("x-api-key"))

	status, body = post(server.TokenPath, "Bearer "+gt.Token, "")
	assert.Equal(t, http.StatusUnauthorized, status, "a gateway token buys no GitHub token: %s", body)

	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// 2000×$3/M + 100×$15/M = $0.0075.
	assert.Contains(t, string(m), `bazinga_gateway_spend_usd_total{installation="`+itoa(fake.InstallationID())+`",repository="acme/widgets"} 0.0075`)

	// The spend is in the queue's database, where another replica (or this one restarted) reads it.
	st, err := jobq.Open(context.Background(), dbURL)
	require.NoError(t, err)
	defer st.Close()
	led, err := gateway.NewSQLLedger(context.Background(), st)
	require.NoError(t, err)
	sp, err := led.SessionSpend(context.Background(), gateway.SessionKey{Repository: "acme/widgets", Session: strconv.Itoa(issue)})
	require.NoError(t, err)
	assert.Equal(t, int64(7500), sp.ChargedMicros())
	// So is the job token's spend: another replica refuses it too.
	var spentRows int
	require.NoError(t, st.DB().QueryRow(`SELECT COUNT(*) FROM bazinga_spent_tokens`).Scan(&spentRows))
	assert.Equal(t, 1, spentRows, "the exchanged OIDC token is recorded in the shared database")

	// The step's job ends without a result: the orchestrator fails the step, and its token stops working.
	require.NoError(t, fake.CompleteRun(run.ID, "failure"))
	require.Eventually(t, func() bool {
		status, body = post(gt.BasePath+"/anthropic/v1/messages", "", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
			"x-api-key", gt.Token, "anthropic-version", "2023-06-01")
		return status == http.StatusUnauthorized
	}, 20*time.Second, 50*time.Millisecond, "the ended step's token is refused: %d %s", status, body)
	assert.Contains(t, body, "step "+gt.Step+" has ended")
	n := len(model.Requests())
	status, _ = post(gt.BasePath+"/anthropic/v1/messages", "", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		"x-api-key", gt.Token, "anthropic-version", "2023-06-01")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Len(t, model.Requests(), n, "nothing of an ended step goes upstream")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The gateway beside a POST /token that any job of its workflows may use is refused at start: the agent job has
// id-token: write for the gateway.
func TestServeRefusesGatewayWithoutTokenEnvironment(t *testing.T) {
	env := map[string]string{
		server.EnvAppID: "1", server.EnvPrivateKey: string(testkey.PEM(t)), server.EnvWebhookSecret: "8f3a61c0d2b94e7a5c1f0e9d8b7a6c5d4e3f2a1b",
		server.EnvStateKey: testStateKey, server.EnvGatewayAnthropicKey: "sk-real",
	}
	var out, errOut strings.Builder
	code := serveCommand(context.Background(), nil, func(k string) string { return env[k] }, &out, &errOut)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut.String(), server.EnvTokenEnvironment)
	assert.NotContains(t, errOut.String(), "sk-real")

	env[server.EnvGatewayAnthropicURL] = "ftp://nope"
	env[server.EnvGatewayStepLimit] = "-3"
	_, err := server.GatewayConfigFromEnv(func(k string) string { return env[k] })
	assert.ErrorContains(t, err, server.EnvGatewayStepLimit)
}

func TestServeHelpListsTheGateway(t *testing.T) {
	var out, errOut strings.Builder
	assert.Equal(t, 0, run([]string{"serve", "--help"}, &out, &errOut))
	for _, v := range []string{server.EnvGatewayAnthropicKey, server.EnvGatewayOpenAIKey, server.EnvGatewayGeminiKey, server.EnvGatewayPrices,
		server.EnvGatewayStepLimit, server.EnvGatewaySessionLimit, "/gateway/"} {
		assert.Contains(t, out.String(), v)
	}
}
