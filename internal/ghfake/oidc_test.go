package ghfake

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func getJSON(t *testing.T, url, bearer string, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	return resp.StatusCode
}

// The issuer publishes its discovery document and keys, and hands a job its
// token (with the run's claims and the audience asked for) only for the
// job's request token.
func TestOIDCIssuer(t *testing.T) {
	f := Start(t, Options{})
	_, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	o := StartOIDC(t, f)

	var doc map[string]any
	require.Equal(t, 200, getJSON(t, o.URL()+OIDCDiscoveryPath, "", &doc))
	assert.Equal(t, o.URL(), doc["issuer"])
	assert.Equal(t, o.URL()+OIDCJWKSPath, doc["jwks_uri"])
	var set jose.JSONWebKeySet
	require.Equal(t, 200, getJSON(t, o.URL()+OIDCJWKSPath, "", &set))
	require.Len(t, set.Keys, 1)
	assert.Equal(t, o.SigningKeyID(), set.Keys[0].KeyID)
	assert.Equal(t, 1, o.JWKSFetches())

	run := Run{ID: 42, Repo: "acme/widgets", Workflow: "bazinga-agent.yml", Name: "bazinga agent", Ref: "main",
		HeadSHA: strings.Repeat("b", 40), Event: "workflow_dispatch", Actor: "alice", RunNumber: 3}
	env := map[string]string{}
	for _, kv := range o.JobEnv(run) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	var bad map[string]any
	assert.Equal(t, 401, getJSON(t, env["ACTIONS_ID_TOKEN_REQUEST_URL"], "wrong", &bad))
	var got struct{ Value string }
	require.Equal(t, 200, getJSON(t, env["ACTIONS_ID_TOKEN_REQUEST_URL"]+"&audience=bazinga", env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"], &got))

	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(got.Value, claims, func(tk *jwt.Token) (any, error) {
		assert.Equal(t, o.SigningKeyID(), tk.Header["kid"])
		return set.Keys[0].Key, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(o.URL()), jwt.WithAudience("bazinga"))
	require.NoError(t, err)
	require.True(t, tok.Valid)
	for k, want := range map[string]string{
		"sub": "repo:acme/widgets:ref:refs/heads/main", "repository": "acme/widgets", "repository_owner": "acme",
		"workflow_ref": "acme/widgets/.github/workflows/bazinga-agent.yml@refs/heads/main", "job_workflow_ref": "acme/widgets/.github/workflows/bazinga-agent.yml@refs/heads/main",
		"ref": "refs/heads/main", "sha": strings.Repeat("b", 40), "run_id": "42", "event_name": "workflow_dispatch", "actor": "alice",
	} {
		assert.Equal(t, want, claims[k], k)
	}
	assert.NotEmpty(t, claims["repository_id"])
	assert.NotEmpty(t, claims["jti"])

	// Without an audience, GitHub's default: the owner's URL.
	require.Equal(t, 200, getJSON(t, env["ACTIONS_ID_TOKEN_REQUEST_URL"], env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"], &got))
	p, _, err := jwt.NewParser().ParseUnverified(got.Value, jwt.MapClaims{})
	require.NoError(t, err)
	aud, _ := p.Claims.GetAudience()
	assert.Equal(t, jwt.ClaimStrings{"https://github.com/acme"}, aud)

	// Rotation publishes the new key beside the old; retiring removes it.
	old := o.SigningKeyID()
	kid, err := o.RotateKey()
	require.NoError(t, err)
	assert.Error(t, o.RetireKey(kid), "the signing key stays")
	require.NoError(t, o.RetireKey(old))
	require.Equal(t, 200, getJSON(t, o.URL()+OIDCJWKSPath, "", &set))
	require.Len(t, set.Keys, 1)
	assert.Equal(t, kid, set.Keys[0].KeyID)
}

// GET /repos/{owner}/{repo}/installation answers the App (JWT) for a
// repository of the fake, 404 otherwise.
func TestRepoInstallation(t *testing.T) {
	f := Start(t, Options{})
	_, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	jwtTok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": "1"})
	s, err := jwtTok.SignedString([]byte("k"))
	require.NoError(t, err)
	c := f.Client(s)
	in, _, err := c.Apps.FindRepositoryInstallation(context.Background(), "acme", "widgets")
	require.NoError(t, err)
	assert.Equal(t, f.InstallationID(), in.GetID())
	_, resp, err := c.Apps.FindRepositoryInstallation(context.Background(), "acme", "nope")
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}
