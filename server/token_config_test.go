package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/internal/testkey"
)

func TestTokenExchangeConfigFromEnv(t *testing.T) {
	creds := func(extra map[string]string) map[string]string {
		m := map[string]string{EnvAppID: "1", EnvPrivateKey: string(testkey.PEM(t)), EnvWebhookSecret: strongWebhookSecret, EnvStateKey: strongStateKey}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	c, err := ConfigFromEnv(envOf(creds(nil)))
	require.NoError(t, err)
	assert.False(t, c.TokenExchange.Disabled, "on by default")
	d := c.TokenExchange.withDefaults(c.GitHubURL)
	assert.Equal(t, DefaultOIDCIssuer, d.Issuer)
	assert.Equal(t, "bazinga", d.Audience)
	assert.Equal(t, DefaultTokenWorkflows, d.Workflows)

	c, err = ConfigFromEnv(envOf(creds(map[string]string{
		EnvGitHubURL: "https://ghe.example.com", EnvTokenExchange: "off", EnvOIDCAudience: "acme-bazinga",
		EnvTokenWorkflows: ".github/workflows/a.yml, acme/shared/.github/workflows/b.yml@refs/tags/v1", EnvTokenPermissions: "contents:write, issues:read",
	})))
	require.NoError(t, err)
	assert.True(t, c.TokenExchange.Disabled)
	d = c.TokenExchange.withDefaults(c.GitHubURL)
	assert.Equal(t, "https://ghe.example.com/_services/token", d.Issuer, "GHES's issuer by default")
	assert.Equal(t, "acme-bazinga", d.Audience)
	assert.Equal(t, map[string]string{"contents": "write", "issues": "read"}, d.Permissions)
	assert.Len(t, d.Workflows, 2)

	for _, bad := range []struct{ k, v, want string }{
		{EnvTokenExchange, "maybe", "BAZINGA_TOKEN_EXCHANGE must be on or off"},
		{EnvTokenWorkflows, "bazinga.yml", "BAZINGA_TOKEN_WORKFLOWS: workflow \"bazinga.yml\""},
		{EnvTokenWorkflows, ".github/workflows/x.yml@", "empty ref after @"},
		{EnvTokenPermissions, "contents:admin", "BAZINGA_TOKEN_PERMISSIONS"},
		{EnvOIDCIssuer, "ftp://x", "BAZINGA_OIDC_ISSUER/BAZINGA_OIDC_AUDIENCE"},
	} {
		_, err := ConfigFromEnv(envOf(creds(map[string]string{bad.k: bad.v})))
		assert.ErrorContains(t, err, bad.want, bad.k+"="+bad.v)
	}
}

func TestTokenExchangeIsCounted(t *testing.T) {
	s, err := NewServer(Config{WebhookSecret: []byte("s")}, noopProcessor{}, nil)
	require.NoError(t, err)
	defer s.Close()
	x, err := NewTokenExchange(TokenExchangeConfig{Issuer: "http://127.0.0.1:1"}, TokenExchangeOptions{GitHub: FactoryGitHub{}})
	require.NoError(t, err)
	s.MountTokenExchange(x)
	for range 2 {
		rr := httptest.NewRecorder()
		s.Handler().ServeHTTP(rr, httptest.NewRequest(http.MethodPost, TokenPath, nil))
		assert.Equal(t, http.StatusUnauthorized, rr.Code)
	}
	assert.Equal(t, 2.0, s.Metrics().value("bazinga_token_exchanges_total", map[string]string{"outcome": "bearer"}))
}
