package ghfake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGhinstallation authenticates the way the bot does: a JWT signed with
// the app key, exchanged by ghinstallation for an installation token.
func TestGhinstallation(t *testing.T) {
	f := Start(t, Options{AppID: 42, InstallationID: 7})
	_, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})

	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, 42, keyPEM)
	require.NoError(t, err)
	atr.BaseURL = f.URL() + "/api/v3"
	app, err := github.NewClient(&http.Client{Transport: atr}).WithEnterpriseURLs(f.APIURL(), f.APIURL())
	require.NoError(t, err)
	insts, _, err := app.Apps.ListInstallations(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, insts, 1)
	inst := insts[0]
	assert.Equal(t, int64(7), inst.GetID())

	itr := ghinstallation.NewFromAppsTransport(atr, inst.GetID())
	gh, err := github.NewClient(&http.Client{Transport: itr}).WithEnterpriseURLs(f.APIURL(), f.APIURL())
	require.NoError(t, err)
	n, err := f.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	c, _, err := gh.Issues.CreateComment(t.Context(), "acme", "widgets", n, &github.IssueComment{Body: github.String("from the app")})
	require.NoError(t, err)
	assert.Equal(t, "bazinga[bot]", c.GetUser().GetLogin())
	tok, err := itr.Token(t.Context())
	require.NoError(t, err)
	// The same token clones over git smart HTTP (x-access-token).
	f.mu.Lock()
	_, known := f.tokens[tok]
	f.mu.Unlock()
	assert.True(t, known)
}
