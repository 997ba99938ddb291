package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/bazinga-bot/bazinga/server"
)

// serve mounts the token exchange: a job of the App's repository gets a
// token for it; with BAZINGA_TOKEN_EXCHANGE=off the path is not served.
func TestServeExchangesJobTokens(t *testing.T) {
	fake := ghfake.Start(t, ghfake.Options{})
	repo, err := fake.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	_, err = repo.Push("acme", "main", map[string]string{"README.md": "hi\n"}, "init")
	require.NoError(t, err)
	o := ghfake.StartOIDC(t, fake)
	web, api, upload, err := ghapi.GitHubURLs(fake.URL())
	require.NoError(t, err)
	jobToken := o.Mint(o.ClaimsFor(ghfake.Run{ID: 7, Repo: "acme/widgets", Workflow: "bazinga-agent.yml", Ref: "main",
		Event: "workflow_dispatch", Actor: "bazinga[bot]"}, "bazinga"))

	for _, disabled := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		ln.Close()
		cfg := server.Config{
			AppID: 1, WebhookSecret: []byte("s"), StateKey: []byte(testStateKey), Listen: addr, PrivateKey: testkey.PEM(t),
			GitHubURL: web, APIURL: api, UploadURL: upload,
			TokenExchange: server.TokenExchangeConfig{Issuer: o.URL(), Disabled: disabled},
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- serve(ctx, cfg, slog.New(slog.DiscardHandler)) }()
		var resp *http.Response
		require.Eventually(t, func() bool {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+server.TokenPath, nil)
			req.Header.Set("Authorization", "Bearer "+jobToken)
			resp, err = http.DefaultClient.Do(req)
			return err == nil
		}, 10*time.Second, 20*time.Millisecond)
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if disabled {
			assert.Equal(t, http.StatusNotFound, resp.StatusCode)
		} else {
			require.Equal(t, http.StatusCreated, resp.StatusCode, body)
			assert.True(t, strings.HasPrefix(body["token"].(string), "ghs_"))
			assert.Equal(t, "bazinga[bot]", body["login"])
		}
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop")
		}
	}
}

func TestServeHelpListsTheTokenExchange(t *testing.T) {
	var out, errOut strings.Builder
	assert.Equal(t, 0, run([]string{"serve", "--help"}, &out, &errOut))
	assert.Contains(t, out.String(), "POST /token")
	for _, v := range []string{server.EnvTokenExchange, server.EnvOIDCIssuer, server.EnvOIDCAudience, server.EnvTokenWorkflows,
		server.EnvTokenPermissions, server.EnvTokenEnvironment} {
		assert.Contains(t, out.String(), v)
	}
}
