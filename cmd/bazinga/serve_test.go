package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServeHelpListsEnvironment(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"serve", "--help"}, &out, &errOut)
	assert.Equal(t, 0, code)
	for _, v := range []string{server.EnvAppID, server.EnvPrivateKey, server.EnvPrivateKeyPath, server.EnvWebhookSecret,
		server.EnvGitHubURL, server.EnvListen, server.EnvWorkers, server.EnvQueueSize, server.EnvSweepInterval, server.EnvLogLevel} {
		assert.Contains(t, out.String(), v)
	}
}

func TestServeRefusesWithoutSecret(t *testing.T) {
	for _, k := range []string{server.EnvAppID, server.EnvPrivateKey, server.EnvPrivateKeyPath, server.EnvWebhookSecret, server.EnvGitHubURL} {
		t.Setenv(k, "")
	}
	var out, errOut bytes.Buffer
	code := run([]string{"serve"}, &out, &errOut)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut.String(), server.EnvWebhookSecret+" is required")
	assert.Contains(t, errOut.String(), server.EnvAppID+" is required")
}

func TestServeUnexpectedArgs(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"serve", "now"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "unexpected arguments")
}

func TestServeRunsAndStops(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	// The App is read from (and the sweep lists installations in) the fake GitHub.
	fake := ghfake.Start(t, ghfake.Options{})
	web, api, upload, err := ghapi.GitHubURLs(fake.URL())
	require.NoError(t, err)
	cfg := server.Config{
		AppID: 1, WebhookSecret: []byte("s"), Listen: "127.0.0.1:0",
		PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}),
		GitHubURL:  web, APIURL: api, UploadURL: upload,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	assert.NoError(t, serve(ctx, cfg, slog.New(slog.DiscardHandler)))
}

func TestServeReportsAnUnreachableApp(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	cfg := server.Config{
		AppID: 1, WebhookSecret: []byte("s"), Listen: "127.0.0.1:0",
		PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}),
		GitHubURL:  "http://127.0.0.1:1", APIURL: "http://127.0.0.1:1/api/v3/", UploadURL: "http://127.0.0.1:1/api/uploads/",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = serve(ctx, cfg, slog.New(slog.DiscardHandler))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "check BAZINGA_APP_ID and the private key")
}
