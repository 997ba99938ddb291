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

	"github.com/bazinga-bot/bazinga/bot"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServeHelpListsEnvironment(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"serve", "--help"}, &out, &errOut)
	assert.Equal(t, 0, code)
	for _, v := range []string{bot.EnvAppID, bot.EnvPrivateKey, bot.EnvPrivateKeyPath, bot.EnvWebhookSecret,
		bot.EnvGitHubURL, bot.EnvListen, bot.EnvWorkers, bot.EnvQueueSize, bot.EnvSweepInterval, bot.EnvLogLevel} {
		assert.Contains(t, out.String(), v)
	}
}

func TestServeRefusesWithoutSecret(t *testing.T) {
	for _, k := range []string{bot.EnvAppID, bot.EnvPrivateKey, bot.EnvPrivateKeyPath, bot.EnvWebhookSecret, bot.EnvGitHubURL} {
		t.Setenv(k, "")
	}
	var out, errOut bytes.Buffer
	code := run([]string{"serve"}, &out, &errOut)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut.String(), bot.EnvWebhookSecret+" is required")
	assert.Contains(t, errOut.String(), bot.EnvAppID+" is required")
}

func TestServeUnexpectedArgs(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"serve", "now"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "unexpected arguments")
}

func TestServeRunsAndStops(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	cfg := bot.Config{
		AppID: 1, WebhookSecret: []byte("s"), Listen: "127.0.0.1:0",
		PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.NoError(t, serve(ctx, cfg, slog.New(slog.DiscardHandler)))
}
