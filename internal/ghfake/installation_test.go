package ghfake

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// GET /installation/repositories answers an installation token with every
// repository, paged, and refuses other tokens as GitHub does.
func TestListInstallationRepositories(t *testing.T) {
	f := Start(t, Options{})
	for _, name := range []string{"widgets", "gadgets", "gizmos"} {
		_, err := f.CreateRepo("acme", name, "main")
		require.NoError(t, err)
	}
	f.AddToken("ghp_alice", "alice", User)
	// An installation token, as ghinstallation gets one (see TestGhinstallation).
	f.mu.Lock()
	f.tokens["ghs_install"] = &token{value: "ghs_install", login: f.BotLogin(), kind: Bot, install: true}
	f.mu.Unlock()

	gh := f.Client("ghs_install")
	list, resp, err := gh.Apps.ListRepos(t.Context(), &github.ListOptions{PerPage: 2})
	require.NoError(t, err)
	assert.Equal(t, 3, list.GetTotalCount())
	require.Len(t, list.Repositories, 2)
	assert.Equal(t, "acme/widgets", list.Repositories[0].GetFullName())
	assert.Equal(t, "acme/gadgets", list.Repositories[1].GetFullName())
	require.Equal(t, 2, resp.NextPage)
	list, _, err = gh.Apps.ListRepos(t.Context(), &github.ListOptions{PerPage: 2, Page: 2})
	require.NoError(t, err)
	require.Len(t, list.Repositories, 1)
	assert.Equal(t, "acme/gizmos", list.Repositories[0].GetFullName())

	_, resp, err = f.Client("ghp_alice").Apps.ListRepos(t.Context(), nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// TestAppPermissionsFromTheManifest: the App's token carries exactly the
// manifest's default_permissions, and a bad manifest is a clear error.
func TestAppPermissionsFromTheManifest(t *testing.T) {
	perms, err := AppPermissions("../../app.yml")
	require.NoError(t, err)
	assert.Equal(t, "write", perms["actions"])
	assert.Equal(t, "read", perms["checks"])
	_, hasAdmin := perms["administration"]
	assert.False(t, hasAdmin, "the App asks for no administration")

	dir := t.TempDir()
	for name, body := range map[string]string{
		"none.yml":  "name: x\n",
		"level.yml": "default_permissions:\n  contents: everything\n",
		"yaml.yml":  "default_permissions: [\n",
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		_, err := AppPermissions(p)
		assert.Error(t, err, name)
	}
	_, err = AppPermissions(filepath.Join(dir, "missing.yml"))
	assert.ErrorContains(t, err, "reading the App manifest")
}
