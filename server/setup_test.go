package server

import (
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// setupWorld is a setup page in front of a fake GitHub, and a browser.
type setupWorld struct {
	fake    *ghfake.Fake
	setup   *Setup
	srv     *httptest.Server
	browser *http.Client
	file    string
}

func newSetupWorld(t *testing.T, o SetupOptions) *setupWorld {
	t.Helper()
	fake := ghfake.Start(t, ghfake.Options{AppID: 77, AppSlug: "bazinga-e2e"})
	web, api, upload, err := ghapi.GitHubURLs(fake.URL())
	require.NoError(t, err)
	if o.Manifest == nil {
		o.Manifest = bazinga.AppManifest
	}
	o.GitHubURL, o.APIURL, o.UploadURL = web, api, upload
	if o.CredentialsFile == "" {
		o.CredentialsFile = filepath.Join(t.TempDir(), "bazinga-app.env")
	}
	s, err := NewSetup(o, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &setupWorld{fake: fake, setup: s, srv: srv, browser: &http.Client{Jar: jar, Timeout: 30 * time.Second}, file: o.CredentialsFile}
}

var (
	formAction   = regexp.MustCompile(`<form action="([^"]+)" method="post">`)
	formManifest = regexp.MustCompile(`<input type="hidden" name="manifest" value="([^"]+)">`)
)

// openSetup loads the setup page and returns the form's action and manifest.
func (w *setupWorld) openSetup(t *testing.T, query string) (action string, manifest map[string]any) {
	t.Helper()
	resp, err := w.browser.Get(w.setup.URL(w.srv.URL) + query)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	assert.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"), "the token must not leak in a Referer")
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "form-action 'self' "+w.fake.URL())
	a := formAction.FindStringSubmatch(string(body))
	m := formManifest.FindStringSubmatch(string(body))
	require.NotNil(t, a, string(body))
	require.NotNil(t, m, string(body))
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &manifest))
	return html.UnescapeString(a[1]), manifest
}

// submit posts the manifest form to GitHub (the fake) and follows the
// redirect back to the callback, as a browser does.
func (w *setupWorld) submit(t *testing.T, action string, manifest map[string]any) (*http.Response, string) {
	t.Helper()
	raw, err := json.Marshal(manifest)
	require.NoError(t, err)
	resp, err := w.browser.PostForm(action, url.Values{"manifest": {string(raw)}})
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestSetupRegistersTheApp(t *testing.T) {
	w := newSetupWorld(t, SetupOptions{})
	action, manifest := w.openSetup(t, "")
	act, err := url.Parse(action)
	require.NoError(t, err)
	assert.Equal(t, "/settings/apps/new", act.Path)
	state := act.Query().Get("state")
	assert.Len(t, state, 40)

	// app.yml, with this server's addresses.
	assert.Equal(t, w.srv.URL+"/setup/callback", manifest["redirect_url"])
	assert.Equal(t, map[string]any{"url": w.srv.URL + "/webhook", "active": true}, manifest["hook_attributes"])
	assert.Equal(t, "https://github.com/bazinga-bot/bazinga", manifest["url"])
	assert.Equal(t, "write", manifest["default_permissions"].(map[string]any)["contents"])
	assert.Contains(t, manifest["default_events"], "issue_comment")

	resp, body := w.submit(t, action, manifest)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Equal(t, "/setup/callback", resp.Request.URL.Path, "GitHub sent the browser back")
	assert.Contains(t, body, "The GitHub App bazinga-e2e is registered")
	assert.Contains(t, body, "/apps/bazinga-e2e/installations/new")
	select {
	case <-w.setup.Done():
	default:
		t.Fatal("Done not closed after the credentials were written")
	}

	st, err := os.Stat(w.file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	creds := w.setup.Credentials()
	assert.Equal(t, int64(77), creds.AppID)

	// The next start reads them.
	cfg, err := ConfigFromEnv(envOf(map[string]string{EnvCredentialsFile: w.file}))
	require.NoError(t, err)
	assert.Equal(t, int64(77), cfg.AppID)
	assert.Equal(t, creds.WebhookSecret, string(cfg.WebhookSecret))
	// The state key is generated here, random, and not the webhook secret.
	assert.Len(t, creds.StateKey, 64)
	assert.Equal(t, creds.StateKey, string(cfg.StateKey))
	assert.NotEqual(t, creds.WebhookSecret, creds.StateKey)
	assert.Equal(t, creds.PrivateKey, string(cfg.PrivateKey))
	require.NoError(t, ghapi.ValidatePrivateKey(cfg.PrivateKey))
	vals, err := readCredentialsFile(w.file)
	require.NoError(t, err)
	assert.Equal(t, "bazinga-e2e", vals[EnvAppSlug])
	assert.Equal(t, creds.ClientID, vals[EnvClientID])
	assert.Equal(t, creds.ClientSecret, vals[EnvClientSecret])

	// The state was single-use, and the page is closed now.
	resp2, err := w.browser.Get(w.srv.URL + "/setup/callback?code=abc&state=" + state)
	require.NoError(t, err)
	resp2.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp2.StatusCode)
	resp3, err := w.browser.Get(w.setup.URL(w.srv.URL))
	require.NoError(t, err)
	resp3.Body.Close()
	assert.Equal(t, http.StatusConflict, resp3.StatusCode)
}

func TestSetupForAnOrganisation(t *testing.T) {
	w := newSetupWorld(t, SetupOptions{PublicURL: "https://bazinga.example.com/"})
	action, manifest := w.openSetup(t, "&org=acme-corp")
	act, err := url.Parse(action)
	require.NoError(t, err)
	assert.Equal(t, "/organizations/acme-corp/settings/apps/new", act.Path)
	assert.Equal(t, "https://bazinga.example.com/setup/callback", manifest["redirect_url"])
	assert.Equal(t, "https://bazinga.example.com/webhook", manifest["hook_attributes"].(map[string]any)["url"])

	resp, err := w.browser.Get(w.setup.URL(w.srv.URL) + "&org=" + url.QueryEscape("../../evil"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

func TestSetupRefusals(t *testing.T) {
	w := newSetupWorld(t, SetupOptions{})
	get := func(c *http.Client, u string) int {
		resp, err := c.Get(u)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	plain := &http.Client{} // another browser: no cookie
	assert.Equal(t, http.StatusForbidden, get(plain, w.srv.URL+"/setup"), "no token")
	assert.Equal(t, http.StatusForbidden, get(plain, w.srv.URL+"/setup?token=wrong"), "wrong token")

	action, _ := w.openSetup(t, "")
	act, _ := url.Parse(action)
	state := act.Query().Get("state")
	assert.Equal(t, http.StatusForbidden, get(w.browser, w.srv.URL+"/setup/callback?code=abc&state=forged"), "unknown state")
	assert.Equal(t, http.StatusForbidden, get(plain, w.srv.URL+"/setup/callback?code=abc&state="+state), "state without its cookie")
	assert.Equal(t, http.StatusForbidden, get(w.browser, w.srv.URL+"/setup/callback?code=abc"), "no state")

	// A well-formed callback whose code GitHub does not know: 502, and the
	// state is spent.
	assert.Equal(t, http.StatusBadGateway, get(w.browser, w.srv.URL+"/setup/callback?code=0123abcd&state="+state))
	assert.Equal(t, http.StatusForbidden, get(w.browser, w.srv.URL+"/setup/callback?code=0123abcd&state="+state))

	w.openSetup(t, "")
	action2, _ := w.openSetup(t, "")
	act2, _ := url.Parse(action2)
	assert.Equal(t, http.StatusBadRequest, get(w.browser, w.srv.URL+"/setup/callback?code=../x&state="+act2.Query().Get("state")), "malformed code")
	_, err := os.Stat(w.file)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing written")

	// The webhook endpoint says it is not configured yet.
	resp, err := http.Post(w.srv.URL+"/webhook", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

func TestSetupStateExpires(t *testing.T) {
	now := time.Now()
	w := newSetupWorld(t, SetupOptions{Now: func() time.Time { return now }})
	action, manifest := w.openSetup(t, "")
	now = now.Add(setupStateTTL + time.Second)
	resp, body := w.submit(t, action, manifest)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, body)
	assert.Contains(t, body, "expired")
}

func TestSetupRefusesToOverwriteCredentials(t *testing.T) {
	file := filepath.Join(t.TempDir(), "creds.env")
	_, err := NewSetup(SetupOptions{Manifest: bazinga.AppManifest, CredentialsFile: filepath.Join(t.TempDir(), "no-such-dir", "x.env")}, nil)
	require.Error(t, err, "a directory that cannot take the file is refused before anything is registered")
	assert.Contains(t, err.Error(), EnvCredentialsFile)

	w := newSetupWorld(t, SetupOptions{CredentialsFile: file})
	action, manifest := w.openSetup(t, "")
	// The file appears while the browser is on GitHub (another start?).
	require.NoError(t, os.WriteFile(file, []byte("BAZINGA_APP_ID=1\n"), 0o600))
	_, err = NewSetup(SetupOptions{Manifest: bazinga.AppManifest, CredentialsFile: file}, nil)
	require.ErrorIs(t, err, ErrCredentialsExist, "an existing file is refused at start too")
	resp, body := w.submit(t, action, manifest)
	assert.Equal(t, http.StatusConflict, resp.StatusCode, body)
	assert.Contains(t, body, "already exists")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "BAZINGA_APP_ID=1\n", string(b), "left as it was")
}

// TestAppManifestMatchesServer keeps app.yml's URLs on paths serve has.
func TestAppManifestMatchesServer(t *testing.T) {
	var m struct {
		RedirectURL    string `yaml:"redirect_url"`
		HookAttributes struct {
			URL string `yaml:"url"`
		} `yaml:"hook_attributes"`
	}
	require.NoError(t, yaml.Unmarshal(bazinga.AppManifest, &m))
	r, err := url.Parse(m.RedirectURL)
	require.NoError(t, err)
	assert.Equal(t, SetupCallbackPath, r.Path)
	h, err := url.Parse(m.HookAttributes.URL)
	require.NoError(t, err)
	assert.Equal(t, WebhookPath, h.Path)
	s := newTestServer(t, Config{}, &fakeProcessor{})
	assert.NotEqual(t, http.StatusNotFound, serve(s, httptest.NewRequest(http.MethodPost, WebhookPath, nil)).Code)
}

func TestNewSetupErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    SetupOptions
		want string
	}{
		{"not yaml", SetupOptions{Manifest: []byte("a: [")}, "not YAML"},
		{"empty", SetupOptions{Manifest: []byte("")}, "empty"},
		{"no url", SetupOptions{Manifest: []byte("name: x\n")}, "no url"},
		{"bad public url", SetupOptions{Manifest: []byte("url: https://x\n"), PublicURL: "bazinga.example.com"}, EnvPublicURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSetup(tc.o, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
