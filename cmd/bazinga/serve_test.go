package main

import (
	"bytes"
	"context"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/testkey"
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

// testStateKey is a state key as `openssl rand -hex 32` prints one.
const testStateKey = "5f0c8e1d9b7a4c3e2f6a8b0d1c3e5f7a9b2d4c6e8f0a1b3c5d7e9f2a4b6c8d0e"

// TestServeRefusesWeakSecrets: the secrets of issue 21's offline attack
// stop serve at start, with how to make good ones.
func TestServeRefusesWeakSecrets(t *testing.T) {
	t.Setenv(server.EnvCredentialsFile, filepath.Join(t.TempDir(), "none.env"))
	t.Setenv(server.EnvAppID, "1")
	t.Setenv(server.EnvPrivateKey, string(testkey.PEM(t)))
	t.Setenv(server.EnvPrivateKeyPath, "")
	t.Setenv(server.EnvListen, "")
	t.Setenv(server.EnvWebhookSecret, "development")
	t.Setenv(server.EnvStateKey, "hunter2")
	var out, errOut bytes.Buffer
	code := run([]string{"serve"}, &out, &errOut)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut.String(), server.EnvWebhookSecret+" is weak")
	assert.Contains(t, errOut.String(), server.EnvStateKey+" is weak")
	assert.Contains(t, errOut.String(), "openssl rand -hex 32")
	assert.NotContains(t, errOut.String(), "hunter2", "a refusal never quotes the secret")
	assert.NotContains(t, errOut.String(), "development")
}

func TestServeRefusesWithoutSecret(t *testing.T) {
	for _, k := range []string{server.EnvAppID, server.EnvPrivateKey, server.EnvPrivateKeyPath, server.EnvWebhookSecret, server.EnvGitHubURL, server.EnvListen} {
		t.Setenv(k, "")
	}
	t.Setenv(server.EnvCredentialsFile, filepath.Join(t.TempDir(), "none.env"))
	var out, errOut bytes.Buffer
	code := run([]string{"serve"}, &out, &errOut)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut.String(), server.EnvWebhookSecret+" is required")
	assert.Contains(t, errOut.String(), server.EnvAppID+" is required")
	// Without a listen address there is no setup page; the error says how
	// to get one.
	assert.Contains(t, errOut.String(), "register the App from the setup page")
}

// newBrowser is an HTTP client that keeps cookies and follows redirects,
// as a browser does.
func newBrowser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

// TestServeSetupThenServes is the one-step App setup end to end against the
// fake GitHub: serve starts without credentials, prints the setup URL; the
// browser posts the manifest to GitHub, comes back with a code; serve writes
// the credentials and starts serving the App on the same address, and the
// fake's webhooks, signed with the new secret, are accepted.
func TestServeSetupThenServes(t *testing.T) {
	fake := ghfake.Start(t, ghfake.Options{WebhookMode: ghfake.Sync})
	repo, err := fake.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "bazinga-app.env")
	env := map[string]string{server.EnvGitHubURL: fake.URL(), server.EnvCredentialsFile: file, server.EnvListen: "127.0.0.1:0"}
	getenv := func(k string) string { return env[k] }
	cfg, err := server.ConfigFromEnv(getenv)
	require.ErrorIs(t, err, server.ErrNoAppCredentials)
	ln, err := net.Listen("tcp", cfg.Listen)
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()

	var announce lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- setupThenServe(ctx, getenv, cfg, ln, slog.New(slog.DiscardHandler), &announce) }()

	setupURL := regexp.MustCompile(`http://\S+/setup\?token=[0-9a-f]+`)
	require.Eventually(t, func() bool { return setupURL.MatchString(announce.String()) }, 5*time.Second, 5*time.Millisecond)
	pageURL := setupURL.FindString(announce.String())
	assert.True(t, strings.HasPrefix(pageURL, base), "%s on %s", pageURL, base)

	browser := newBrowser(t)
	resp, err := browser.Get(pageURL)
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(page))
	action := html.UnescapeString(regexp.MustCompile(`<form action="([^"]+)" method="post">`).FindStringSubmatch(string(page))[1])
	manifest := html.UnescapeString(regexp.MustCompile(`name="manifest" value="([^"]+)"`).FindStringSubmatch(string(page))[1])
	assert.True(t, strings.HasPrefix(action, fake.URL()+"/settings/apps/new?state="), action)
	assert.Contains(t, manifest, `"redirect_url":"`+base+`/setup/callback"`)

	resp, err = browser.PostForm(action, url.Values{"manifest": {manifest}})
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Contains(t, string(body), "is registered")

	// The App now serves on the same address.
	require.Eventually(t, func() bool {
		r, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		return strings.Contains(string(b), `"status":"ok"`)
	}, 10*time.Second, 20*time.Millisecond, "serving after setup")
	assert.Contains(t, announce.String(), "registered; credentials in "+file)
	st, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// GitHub's deliveries, signed with the secret the setup received, are
	// accepted by the App.
	_, err = repo.CreateIssue("alice", "hello", "a first issue")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(fake.Deliveries()) > 0 }, 5*time.Second, 10*time.Millisecond)
	for _, d := range fake.Deliveries() {
		assert.Equal(t, http.StatusAccepted, d.Status, "delivery %s %s", d.Event, d.ID)
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeListenFlagStartsSetup(t *testing.T) {
	for _, k := range []string{server.EnvAppID, server.EnvPrivateKey, server.EnvPrivateKeyPath, server.EnvWebhookSecret, server.EnvListen} {
		t.Setenv(k, "")
	}
	t.Setenv(server.EnvCredentialsFile, filepath.Join(t.TempDir(), "none.env"))
	// An address that cannot be bound shows that --listen reached the
	// setup path (exit 1, a listen error) rather than the missing-config
	// error (exit 2).
	var out, errOut bytes.Buffer
	code := run([]string{"serve", "--listen", "256.0.0.1:1"}, &out, &errOut)
	assert.Equal(t, 1, code, errOut.String())
	assert.Contains(t, errOut.String(), "listen 256.0.0.1:1")
	assert.NotContains(t, errOut.String(), "is required")
}

func TestServeUnexpectedArgs(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"serve", "now"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "unexpected arguments")
}

func TestServeRunsAndStops(t *testing.T) {
	// The App is read from (and the sweep lists installations in) the fake GitHub.
	fake := ghfake.Start(t, ghfake.Options{})
	web, api, upload, err := ghapi.GitHubURLs(fake.URL())
	require.NoError(t, err)
	cfg := server.Config{
		AppID: 1, WebhookSecret: []byte("s"), StateKey: []byte(testStateKey), Listen: "127.0.0.1:0",
		PrivateKey: testkey.PEM(t),
		GitHubURL:  web, APIURL: api, UploadURL: upload,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	assert.NoError(t, serve(ctx, cfg, slog.New(slog.DiscardHandler)))
}

func TestServeReportsAnUnreachableApp(t *testing.T) {
	cfg := server.Config{
		AppID: 1, WebhookSecret: []byte("s"), StateKey: []byte(testStateKey), Listen: "127.0.0.1:0",
		PrivateKey: testkey.PEM(t),
		GitHubURL:  "http://127.0.0.1:1", APIURL: "http://127.0.0.1:1/api/v3/", UploadURL: "http://127.0.0.1:1/api/uploads/",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := serve(ctx, cfg, slog.New(slog.DiscardHandler))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "check BAZINGA_APP_ID and the private key")
}

func TestServeSetupStopsOnCancel(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bazinga-app.env")
	env := map[string]string{server.EnvCredentialsFile: file, server.EnvListen: "127.0.0.1:0"}
	getenv := func(k string) string { return env[k] }
	cfg, err := server.ConfigFromEnv(getenv)
	require.ErrorIs(t, err, server.ErrNoAppCredentials)
	ln, err := net.Listen("tcp", cfg.Listen)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var announce lockedBuffer
	go func() { done <- setupThenServe(ctx, getenv, cfg, ln, slog.New(slog.DiscardHandler), &announce) }()
	require.Eventually(t, func() bool { return strings.Contains(announce.String(), "/setup?token=") }, 5*time.Second, 5*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "an interrupted setup is a clean stop")
	case <-time.After(15 * time.Second):
		t.Fatal("setup did not stop")
	}
	_, err = os.Stat(file)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestServeCommandSetupInterruptedExitsZero(t *testing.T) {
	env := map[string]string{server.EnvCredentialsFile: filepath.Join(t.TempDir(), "c.env")}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- serveCommand(ctx, []string{"--listen", "127.0.0.1:0"}, func(k string) string { return env[k] }, &out, &errOut)
	}()
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), "/setup?token=") }, 10*time.Second, 5*time.Millisecond)
	cancel()
	select {
	case c := <-code:
		assert.Equal(t, 0, c, errOut.String())
		assert.NotContains(t, errOut.String(), "serve failed")
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}
