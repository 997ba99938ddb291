package server

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Secrets as GitHub's manifest flow and `openssl rand -hex 32` make them.
const (
	strongWebhookSecret = "8f3a61c0d2b94e7a5c1f0e9d8b7a6c5d4e3f2a1b"
	strongStateKey      = "5f0c8e1d9b7a4c3e2f6a8b0d1c3e5f7a9b2d4c6e8f0a1b3c5d7e9f2a4b6c8d0e"
)

func TestConfigFromEnvDefaults(t *testing.T) {
	key := testkey.PEM(t)
	c, err := ConfigFromEnv(envOf(map[string]string{
		EnvAppID: "123", EnvPrivateKey: string(key), EnvWebhookSecret: strongWebhookSecret, EnvStateKey: strongStateKey,
	}))
	require.NoError(t, err)
	assert.Equal(t, int64(123), c.AppID)
	assert.Equal(t, key, c.PrivateKey)
	assert.Equal(t, []byte(strongWebhookSecret), c.WebhookSecret)
	assert.Equal(t, []byte(strongStateKey), c.StateKey)
	assert.Equal(t, DefaultMaxConnsPerIP, c.MaxConnsPerIP)
	assert.Empty(t, c.WebhookSources)
	assert.Equal(t, "https://github.com", c.GitHubURL)
	assert.Equal(t, "https://api.github.com/", c.APIURL)
	assert.Equal(t, ":8080", c.Listen)
	assert.Equal(t, 4, c.Workers)
	assert.Equal(t, 1000, c.QueueSize)
	assert.Equal(t, 5*time.Minute, c.SweepInterval)
	assert.Equal(t, slog.LevelInfo, c.LogLevel)
	assert.Equal(t, 90*time.Second, c.RateLimitWait)
	assert.Equal(t, 20, c.RateLimitReserve)
}

func TestConfigFromEnvAll(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "app.pem")
	require.NoError(t, os.WriteFile(keyFile, testkey.PEM(t), 0o600))
	c, err := ConfigFromEnv(envOf(map[string]string{
		EnvAppID: "9", EnvPrivateKeyPath: keyFile, EnvWebhookSecret: strongWebhookSecret, EnvStateKey: strongStateKey,
		EnvGitHubURL: "https://ghe.example.com/", EnvListen: "127.0.0.1:9000",
		EnvWorkers: "16", EnvQueueSize: "50", EnvSweepInterval: "90s", EnvLogLevel: "debug",
		EnvRateLimitWait: "5m", EnvRateLimitReserve: "-1",
		EnvMaxConns: "100", EnvMaxConnsPerIP: "-1", EnvWebhookSources: "140.82.112.0/20,192.30.252.0/22",
		EnvStatePreviousKeys: "0Ws8IsO0IqgEHe0Ml0jVFOOe8xkRTpNFqWbPsJowSVs=",
	}))
	require.NoError(t, err)
	assert.Equal(t, "https://ghe.example.com/api/v3/", c.APIURL)
	assert.Equal(t, "https://ghe.example.com/api/uploads/", c.UploadURL)
	assert.Equal(t, "https://ghe.example.com", c.GitHubURL)
	assert.Equal(t, "127.0.0.1:9000", c.Listen)
	assert.Equal(t, 16, c.Workers)
	assert.Equal(t, 50, c.QueueSize)
	assert.Equal(t, 90*time.Second, c.SweepInterval)
	assert.Equal(t, slog.LevelDebug, c.LogLevel)
	assert.Equal(t, 5*time.Minute, c.RateLimitWait)
	assert.Equal(t, -1, c.RateLimitReserve)
	assert.Equal(t, 100, c.MaxConns)
	assert.Equal(t, -1, c.MaxConnsPerIP)
	assert.Equal(t, int64(-1), c.BodyBudgetPerIP, "no per-address limits behind a proxy")
	assert.Len(t, c.WebhookSources, 2)
	assert.Len(t, c.PreviousStateKeys, 1)
}

func TestConfigFromEnvEscapedNewlines(t *testing.T) {
	key := strings.ReplaceAll(string(testkey.PEM(t)), "\n", `\n`)
	c, err := ConfigFromEnv(envOf(map[string]string{EnvAppID: "1", EnvPrivateKey: key, EnvWebhookSecret: strongWebhookSecret, EnvStateKey: strongStateKey}))
	require.NoError(t, err)
	assert.NoError(t, ghapi.ValidatePrivateKey(c.PrivateKey))
}

func TestConfigFromEnvErrors(t *testing.T) {
	key := string(testkey.PEM(t))
	valid := map[string]string{EnvAppID: "1", EnvPrivateKey: key, EnvWebhookSecret: strongWebhookSecret, EnvStateKey: strongStateKey}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range valid {
			m[a] = b
		}
		if v == "<unset>" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name string
		env  map[string]string
		want string // the variable the error must name
	}{
		{"no secret", with(EnvWebhookSecret, "<unset>"), EnvWebhookSecret},
		{"no app id", with(EnvAppID, "<unset>"), EnvAppID},
		{"bad app id", with(EnvAppID, "abc"), EnvAppID},
		{"negative app id", with(EnvAppID, "-4"), EnvAppID},
		{"no key", with(EnvPrivateKey, "<unset>"), EnvPrivateKey},
		{"key not PEM", with(EnvPrivateKey, "not a key"), EnvPrivateKey},
		{"key path missing", func() map[string]string {
			m := with(EnvPrivateKey, "<unset>")
			m[EnvPrivateKeyPath] = "/nonexistent/key.pem"
			return m
		}(), EnvPrivateKeyPath},
		{"both keys", func() map[string]string { m := with(EnvAppID, "1"); m[EnvPrivateKeyPath] = "/x"; return m }(), EnvPrivateKeyPath},
		{"bad url", with(EnvGitHubURL, "ftp://ghe"), EnvGitHubURL},
		{"url without host", with(EnvGitHubURL, "https://"), EnvGitHubURL},
		{"bad listen", with(EnvListen, "8080"), EnvListen},
		{"bad workers", with(EnvWorkers, "0"), EnvWorkers},
		{"workers not int", with(EnvWorkers, "four"), EnvWorkers},
		{"bad queue", with(EnvQueueSize, "-1"), EnvQueueSize},
		{"bad sweep", with(EnvSweepInterval, "soon"), EnvSweepInterval},
		{"sweep too short", with(EnvSweepInterval, "1ms"), EnvSweepInterval},
		{"bad rate-limit wait", with(EnvRateLimitWait, "forever"), EnvRateLimitWait},
		{"rate-limit wait too long", with(EnvRateLimitWait, "1h"), EnvRateLimitWait},
		{"bad reserve", with(EnvRateLimitReserve, "-5"), EnvRateLimitReserve},
		{"bad level", with(EnvLogLevel, "chatty"), EnvLogLevel},
		{"bad max conns", with(EnvMaxConns, "3"), EnvMaxConns},
		{"zero conns per address", with(EnvMaxConnsPerIP, "0"), EnvMaxConnsPerIP},
		{"bad sources", with(EnvWebhookSources, "github"), EnvWebhookSources},
		// Issue 21: weak secrets are offline oracles.
		{"weak webhook secret", with(EnvWebhookSecret, "development"), EnvWebhookSecret + " is weak"},
		{"dictionary webhook secret", with(EnvWebhookSecret, "development-development-2024!!!!"), EnvWebhookSecret + " is weak"},
		{"no state key", with(EnvStateKey, "<unset>"), EnvStateKey + " is required"},
		{"weak state key", with(EnvStateKey, "hunter2"), EnvStateKey + " is weak"},
		{"state key is the webhook secret", with(EnvStateKey, strongWebhookSecret), "must not be the webhook secret"},
		{"bad previous key", with(EnvStatePreviousKeys, "not-a-key"), EnvStatePreviousKeys},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ConfigFromEnv(envOf(tc.env))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), strongWebhookSecret)
			assert.NotContains(t, err.Error(), strongStateKey)
			assert.NotContains(t, err.Error(), "hunter2")
			if strings.Contains(tc.want, "is weak") || strings.Contains(tc.want, "is required") && tc.want != EnvWebhookSecret {
				assert.Contains(t, err.Error(), "openssl rand -hex 32", "a refusal says how to make a good secret")
			}
			assert.NotContains(t, err.Error(), "PRIVATE KEY-----\nMII")
		})
	}
}

func TestConfigNeverPrintsSecrets(t *testing.T) {
	c := Config{AppID: 1, PrivateKey: testkey.PEM(t), WebhookSecret: []byte("topsecret-value"), StateKey: []byte(strongStateKey)}
	for _, s := range []string{c.String(), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), c.LogValue().String()} {
		assert.NotContains(t, s, "topsecret-value")
		assert.NotContains(t, s, strongStateKey)
		assert.NotContains(t, s, "PRIVATE KEY")
	}
}

func TestConfigFromCredentialsFile(t *testing.T) {
	key := string(testkey.PEM(t))
	file := filepath.Join(t.TempDir(), "app.env")
	require.NoError(t, WriteCredentials(file, Credentials{AppID: 31, Slug: "my-bazinga", PrivateKey: key,
		WebhookSecret: `we"ird #secret\` + strongWebhookSecret, StateKey: strongStateKey, ClientID: "Iv1.abc", ClientSecret: "cs"}, time.Unix(0, 0)))
	st, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	c, err := ConfigFromEnv(envOf(map[string]string{EnvCredentialsFile: file}))
	require.NoError(t, err)
	assert.Equal(t, int64(31), c.AppID)
	assert.Equal(t, key, string(c.PrivateKey))
	assert.Equal(t, `we"ird #secret\`+strongWebhookSecret, string(c.WebhookSecret))
	assert.Equal(t, strongStateKey, string(c.StateKey), "the state key is kept with the App's credentials")
	assert.Equal(t, file, c.CredentialsFile)

	// The environment wins, variable by variable.
	keyFile := filepath.Join(t.TempDir(), "other.pem")
	require.NoError(t, os.WriteFile(keyFile, testkey.PEM(t), 0o600))
	c, err = ConfigFromEnv(envOf(map[string]string{EnvCredentialsFile: file, EnvAppID: "32", EnvWebhookSecret: "from-env-" + strongStateKey, EnvPrivateKeyPath: keyFile}))
	require.NoError(t, err, "a key path in the environment replaces the file's key rather than clashing with it")
	assert.Equal(t, int64(32), c.AppID)
	assert.Equal(t, "from-env-"+strongStateKey, string(c.WebhookSecret))

	// Setup never overwrites.
	err = WriteCredentials(file, Credentials{AppID: 1}, time.Now())
	require.ErrorIs(t, err, ErrCredentialsExist)
	c, err = ConfigFromEnv(envOf(map[string]string{EnvCredentialsFile: file}))
	require.NoError(t, err)
	assert.Equal(t, int64(31), c.AppID)
}

func TestConfigCredentialsFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	tests := []struct {
		name, body, want string
	}{
		{"no equals", "# c\nBAZINGA_APP_ID\n", "bad1.env:2: expected KEY=value"},
		{"unterminated quote", "BAZINGA_PRIVATE_KEY=\"abc\n", "bad2.env:1: BAZINGA_PRIVATE_KEY: unterminated double quote"},
		{"bad escape", "BAZINGA_WEBHOOK_SECRET=\"a\\qb\"\n", `unknown escape \q`},
		{"twice", "BAZINGA_APP_ID=1\nBAZINGA_APP_ID=2\n", "bad4.env:2: BAZINGA_APP_ID is set twice"},
		{"bad id names the file", "BAZINGA_APP_ID=abc\nBAZINGA_WEBHOOK_SECRET=s\n", "BAZINGA_APP_ID (from "},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := write(fmt.Sprintf("bad%d.env", i+1), tc.body)
			_, err := ConfigFromEnv(envOf(map[string]string{EnvCredentialsFile: p}))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotErrorIs(t, err, ErrNoAppCredentials)
		})
	}
}

func TestConfigNoCredentialsOffersSetup(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "not-yet.env")
	c, err := ConfigFromEnv(envOf(map[string]string{EnvCredentialsFile: missing, EnvListen: "127.0.0.1:9999", EnvPublicURL: "https://b.example.com"}))
	require.ErrorIs(t, err, ErrNoAppCredentials)
	assert.Contains(t, err.Error(), EnvAppID+" is required")
	// Everything but the App is there for the setup page.
	assert.Equal(t, "127.0.0.1:9999", c.Listen)
	assert.Equal(t, missing, c.CredentialsFile)
	assert.Equal(t, "https://b.example.com", c.PublicURL)
	assert.Equal(t, "https://api.github.com/", c.APIURL)

	// Some credentials but not all is a configuration error, not setup.
	_, err = ConfigFromEnv(envOf(map[string]string{EnvCredentialsFile: missing, EnvAppID: "5"}))
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNoAppCredentials)
	// Another error besides: not setup either.
	_, err = ConfigFromEnv(envOf(map[string]string{EnvCredentialsFile: missing, EnvWorkers: "0"}))
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNoAppCredentials)
}
