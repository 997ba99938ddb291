package ghfake

import (
	"net/http"
	"sort"

	"github.com/google/go-github/v66/github"
)

// Narrowing an installation token, as GitHub documents it
// (https://docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app):
// "repositories" (names) and "repository_ids" limit the token to those
// repositories of the installation, up to 500; "permissions" to those
// permissions, each no more than the installation has. A repository the
// installation cannot reach, or a permission it does not hold, is a 422
// naming it as GitHub does; the narrowed token then reaches nothing else (a
// private repository outside it is a 404, a public one read-only, as for a
// GITHUB_TOKEN).

// maxTokenRepos is GitHub's limit on the repositories of one token.
const maxTokenRepos = 500

// narrowToken applies req to tok, or answers the 422. Caller holds f.mu.
func (f *Fake) narrowToken(c *rc, req tokenRequest, tok *token) bool {
	if len(req.Permissions) > 0 {
		have := installationPermissions()
		for name, level := range req.Permissions {
			if levelRank[level] == 0 || levelRank[have[name]] < levelRank[level] {
				c.fail(http.StatusUnprocessableEntity, "The permissions requested are not granted to this installation.")
				return false
			}
		}
		tok.perms = req.Permissions
	}
	if len(req.Repositories)+len(req.RepositoryIDs) == 0 {
		return true
	}
	if len(req.Repositories)+len(req.RepositoryIDs) > maxTokenRepos {
		c.fail(http.StatusUnprocessableEntity, "Too many repositories: a token can be limited to at most 500.")
		return false
	}
	tok.repos = map[int64]bool{}
	notReachable := func() bool {
		c.fail(http.StatusUnprocessableEntity, "There is at least one repository that does not exist or is not accessible to the parent installation.")
		return false
	}
	// The installation's account owns the repositories names refer to.
	owner := ""
	if len(f.repos) > 0 {
		owner = f.repos[0].owner
	}
	for _, name := range req.Repositories {
		r := f.lookupRepo(owner + "/" + name)
		if r == nil {
			return notReachable()
		}
		tok.repos[r.id] = true
	}
	for _, id := range req.RepositoryIDs {
		found := false
		for _, r := range f.repos {
			if r.id == id {
				tok.repos[id], found = true, true
			}
		}
		if !found {
			return notReachable()
		}
	}
	return true
}

// installationPermissions is what the fake's installation holds
// (allPermissions), by the names token requests use.
func installationPermissions() map[string]string {
	p := allPermissions()
	return map[string]string{
		"actions": p.GetActions(), "contents": p.GetContents(), "issues": p.GetIssues(),
		"pull_requests": p.GetPullRequests(), "metadata": p.GetMetadata(), "workflows": p.GetWorkflows(),
	}
}

// reaches reports whether the token may act on r beyond reading what is
// public. Caller holds f.mu.
func (t *token) reaches(r *Repo) bool {
	if t.repo != nil && t.repo != r {
		return false
	}
	return t.repos == nil || t.repos[r.id]
}

// tokenRepos lists a narrowed token's repositories, as the answer shows
// them (nil for a token of every repository). Caller holds f.mu.
func (f *Fake) tokenRepos(t *token) []*github.Repository {
	if t.repos == nil {
		return nil
	}
	var out []*github.Repository
	for _, r := range f.repos {
		if t.repos[r.id] {
			out = append(out, r.json())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetID() < out[j].GetID() })
	return out
}
