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

// An installation token narrowed by repositories and permissions, as
// GitHub documents POST /app/installations/{id}/access_tokens (issue 22).
func TestInstallationTokenNarrowed(t *testing.T) {
	f := Start(t, Options{AppID: 42, InstallationID: 7})
	widgets, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	gadgets, err := f.CreateRepo("acme", "gadgets", "main")
	require.NoError(t, err)
	private := gadgets.Settings()
	private.Private = true
	require.NoError(t, gadgets.SetSettings(private))
	pub, err := f.CreateRepo("acme", "gizmos", "main")
	require.NoError(t, err)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, 42, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	require.NoError(t, err)
	app, err := github.NewClient(&http.Client{Transport: atr}).WithEnterpriseURLs(f.APIURL(), f.APIURL())
	require.NoError(t, err)
	ctx := t.Context()

	tok, _, err := app.Apps.CreateInstallationToken(ctx, 7, &github.InstallationTokenOptions{
		Repositories: []string{"widgets"}, Permissions: &github.InstallationPermissions{Issues: github.String("write")}})
	require.NoError(t, err)
	require.Len(t, tok.Repositories, 1)
	assert.Equal(t, "acme/widgets", tok.Repositories[0].GetFullName())
	assert.Equal(t, "write", tok.GetPermissions().GetIssues())
	assert.Nil(t, tok.GetPermissions().Contents)
	gh := f.Client(tok.GetToken())

	n, err := widgets.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	_, _, err = gh.Issues.CreateComment(ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("in scope")})
	require.NoError(t, err, "its repository, its permission")
	_, _, err = gh.Git.GetRef(ctx, "acme", "widgets", "heads/main")
	assert.Equal(t, http.StatusForbidden, statusOf(err), "a permission it was not given")
	assert.Equal(t, "Resource not accessible by integration", messageOf(err))
	_, _, err = gh.Repositories.Get(ctx, "acme", "gadgets")
	assert.Equal(t, http.StatusNotFound, statusOf(err), "a private repository outside it is invisible")
	m, err := pub.CreateIssue("alice", "other", "")
	require.NoError(t, err)
	_, _, err = gh.Issues.CreateComment(ctx, "acme", "gizmos", m, &github.IssueComment{Body: github.String("out of scope")})
	assert.Equal(t, http.StatusForbidden, statusOf(err), "a public one outside it is read-only")
	list, _, err := gh.Apps.ListRepos(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, list.GetTotalCount(), "the installation's repositories, as the token sees them")

	byID, _, err := app.Apps.CreateInstallationToken(ctx, 7, &github.InstallationTokenOptions{RepositoryIDs: []int64{pub.ID()}})
	require.NoError(t, err)
	_, _, err = f.Client(byID.GetToken()).Issues.CreateComment(ctx, "acme", "gizmos", m, &github.IssueComment{Body: github.String("by id")})
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		opts *github.InstallationTokenOptions
		msg  string
	}{
		{"a permission the installation lacks", &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Checks: github.String("write")}},
			"The permissions requested are not granted to this installation."},
		{"more than the installation has", &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Metadata: github.String("write")}},
			"The permissions requested are not granted to this installation."},
		{"no such repository", &github.InstallationTokenOptions{Repositories: []string{"nope"}},
			"There is at least one repository that does not exist or is not accessible to the parent installation."},
		{"no such repository id", &github.InstallationTokenOptions{RepositoryIDs: []int64{999999}},
			"There is at least one repository that does not exist or is not accessible to the parent installation."},
	} {
		_, _, err := app.Apps.CreateInstallationToken(ctx, 7, tc.opts)
		assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err), tc.name)
		assert.Equal(t, tc.msg, messageOf(err), tc.name)
	}
}
