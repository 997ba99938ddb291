package ghfake

import (
	"net/http"

	"github.com/google/go-github/v66/github"
)

// GET /installation/repositories lists the repositories an installation
// token can reach (`serve`'s installation sweep calls it, through
// go-github's Apps.ListRepos). The app is installed on every repository of
// the fake, in creation order. GitHub answers only installation access
// tokens: "You must authenticate with an installation access token"
// (https://docs.github.com/en/rest/apps/installations#list-repositories-accessible-to-the-app-installation).
func (f *Fake) listInstallationRepos(c *rc) {
	if c.tok == nil || !c.tok.install {
		c.fail(http.StatusForbidden, "You must authenticate with an installation access token in order to list repositories for an installation.")
		return
	}
	var reach []*Repo // a narrowed token lists only its repositories
	for _, r := range f.repos {
		if c.tok.reaches(r) {
			reach = append(reach, r)
		}
	}
	start, end := c.page(len(reach))
	out := []*github.Repository{}
	for _, r := range reach[start:end] {
		out = append(out, r.json())
	}
	c.json(http.StatusOK, &github.ListRepositories{TotalCount: github.Int(len(reach)), Repositories: out})
}
