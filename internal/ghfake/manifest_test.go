package ghfake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// postManifest submits the registration form as a browser would and
// returns the response without following a redirect.
func postManifest(t *testing.T, f *Fake, path string, manifest any) *http.Response {
	t.Helper()
	raw, err := json.Marshal(manifest)
	require.NoError(t, err)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(f.URL()+path, url.Values{"manifest": {string(raw)}})
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestManifestFlow(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := Start(t, Options{AppID: 99, AppSlug: "bazinga-test", Now: func() time.Time { return now }})
	manifest := map[string]any{
		"name": "bazinga", "url": "https://example.com",
		"hook_attributes":     map[string]any{"url": "https://example.com/webhook"},
		"redirect_url":        "https://example.com/setup/callback?keep=1",
		"default_permissions": map[string]string{"issues": "write"},
	}
	resp := postManifest(t, f, "/organizations/acme/settings/apps/new?state=xyz", manifest)
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, "example.com", loc.Host)
	assert.Equal(t, "/setup/callback", loc.Path)
	assert.Equal(t, "xyz", loc.Query().Get("state"))
	assert.Equal(t, "1", loc.Query().Get("keep"), "the redirect_url's own query is kept")
	code := loc.Query().Get("code")
	require.NotEmpty(t, code)
	assert.Equal(t, 1, f.ManifestRegistrations())

	// The exchange needs no authentication.
	gh, err := github.NewClient(nil).WithEnterpriseURLs(f.APIURL(), f.APIURL())
	require.NoError(t, err)
	cfg, resp2, err := gh.Apps.CompleteAppManifest(t.Context(), code)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp2.StatusCode)
	assert.Equal(t, int64(99), cfg.GetID())
	assert.Equal(t, "bazinga-test", cfg.GetSlug())
	assert.Equal(t, "acme", cfg.GetOwner().GetLogin())
	assert.Equal(t, "https://example.com", cfg.GetExternalURL())
	assert.True(t, strings.HasPrefix(cfg.GetClientID(), "Iv1."))
	assert.NotEmpty(t, cfg.GetClientSecret())
	assert.Len(t, cfg.GetWebhookSecret(), 40)
	assert.Equal(t, now, cfg.GetCreatedAt().Time)
	block, _ := pem.Decode([]byte(cfg.GetPEM()))
	require.NotNil(t, block)
	_, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	require.NoError(t, err, "the PEM is an RSA key")
	// The fake's webhook now goes where the manifest said, signed with the
	// new secret.
	f.mu.Lock()
	assert.Equal(t, "https://example.com/webhook", f.hookURL)
	assert.Equal(t, cfg.GetWebhookSecret(), f.hookSecret)
	f.mu.Unlock()

	// A code is good once.
	_, resp3, err := gh.Apps.CompleteAppManifest(t.Context(), code)
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp3.StatusCode)
	assert.Equal(t, 0, f.ManifestRegistrations())
}

func TestManifestCodeExpires(t *testing.T) {
	now := time.Now()
	f := Start(t, Options{Now: func() time.Time { return now }})
	resp := postManifest(t, f, "/settings/apps/new", map[string]any{"url": "https://example.com", "redirect_url": "http://127.0.0.1:1/cb"})
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	assert.Empty(t, loc.Query().Get("state"), "no state asked, none given")
	now = now.Add(manifestTTL)
	gh, err := github.NewClient(nil).WithEnterpriseURLs(f.APIURL(), f.APIURL())
	require.NoError(t, err)
	_, r, err := gh.Apps.CompleteAppManifest(t.Context(), loc.Query().Get("code"))
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, r.StatusCode)
}

func TestManifestFormErrors(t *testing.T) {
	f := Start(t, Options{})
	tests := []struct {
		name     string
		manifest any
		want     string
	}{
		{"no url", map[string]any{"redirect_url": "https://x/cb"}, "url is required"},
		{"hook without url", map[string]any{"url": "https://x", "hook_attributes": map[string]any{"active": true}}, "hook_attributes.url is required"},
		{"relative redirect", map[string]any{"url": "https://x", "redirect_url": "/setup/callback"}, "not an absolute http(s) URL"},
		{"not an object", "just text", "not JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := postManifest(t, f, "/settings/apps/new", tc.manifest)
			assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			b, _ := io.ReadAll(resp.Body)
			assert.Contains(t, string(b), tc.want)
		})
	}
	assert.Equal(t, 0, f.ManifestRegistrations())
}

func TestInstallationRepositories(t *testing.T) {
	f := Start(t, Options{AppID: 5, InstallationID: 8})
	for _, name := range []string{"one", "two", "three"} {
		_, err := f.CreateRepo("acme", name, "main")
		require.NoError(t, err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, 5, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	require.NoError(t, err)
	atr.BaseURL = f.URL() + "/api/v3"
	itr := ghinstallation.NewFromAppsTransport(atr, 8)
	gh, err := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(f.APIURL(), f.APIURL())
	require.NoError(t, err)

	var names []string
	opts := &github.ListOptions{PerPage: 2}
	for {
		repos, resp, err := gh.Apps.ListRepos(t.Context(), opts)
		require.NoError(t, err)
		assert.Equal(t, 3, repos.GetTotalCount())
		for _, r := range repos.Repositories {
			names = append(names, r.GetFullName())
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	assert.Equal(t, []string{"acme/one", "acme/two", "acme/three"}, names)

	// A user's token is not an installation's.
	f.AddToken("ghp_user", "alice", User)
	_, resp, err := f.Client("ghp_user").Apps.ListRepos(t.Context(), nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}
