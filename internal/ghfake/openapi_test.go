package ghfake

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fake's endpoints and statuses, checked against GitHub's description
// (issue 22): every route the fake answers is an endpoint GitHub has, and
// the check catches an unknown endpoint and an undocumented status.
func TestOpenAPICheck(t *testing.T) {
	o, err := LoadOpenAPI("testdata/github-rest-trimmed.json")
	require.NoError(t, err)
	assert.Equal(t, "23.0.2", o.Version)
	problems := o.Check([]Call{
		{Method: "GET", Path: "/repos/acme/widgets/pulls/3", Status: 200},
		{Method: "GET", Path: "/repos/acme/widgets/git/ref/heads/bazinga/1-A", Status: 404},
		{Method: "GET", Path: "/repos/acme/widgets/commits/abc/check-runs", Status: 200},
		{Method: "POST", Path: "/repos/acme/widgets/actions/runs/9/approve", Status: 201},
		{Method: "GET", Path: "/repos/acme/widgets/pulls/3", Status: 304},
		{Method: "GET", Path: "/repos/acme/widgets/pulls/3", Status: 500, Fault: Fault500},
		{Method: "GET", Path: "/repos/acme/widgets/nonsense", Status: 200},
		{Method: "PUT", Path: "/repos/acme/widgets/pulls/3/merge", Status: 418},
	})
	assert.Equal(t, []string{
		"GET /repos/acme/widgets/nonsense: no such endpoint in GitHub's REST API 23.0.2",
		"PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge (/repos/acme/widgets/pulls/3/merge): status 418 is not documented (documented: 200, 403, 404, 405, 409, 422)",
	}, problems)
	f := Start(t, Options{})
	for _, r := range f.Routes() {
		method, path, _ := strings.Cut(r, " ")
		if path == "/settings/apps/new" || path == "/organizations/{org}/settings/apps/new" {
			continue // the App manifest flow's web pages, not the API
		}
		if path == "/graphql" || path == "/api/graphql" {
			continue // GraphQL's one endpoint, not REST (graphql.go)
		}
		_, ok := o.Endpoint(method, routeExample(path))
		assert.True(t, ok, "route %s is an endpoint of GitHub's", r)
	}
}

// routeExample is a concrete path of a route template.
func routeExample(tmpl string) string {
	var out []string
	for _, seg := range strings.Split(strings.Trim(tmpl, "/"), "/") {
		switch {
		case strings.HasSuffix(seg, "...}"):
			out = append(out, "heads", "main")
		case strings.HasPrefix(seg, "{"):
			out = append(out, "7")
		default:
			out = append(out, seg)
		}
	}
	return "/" + strings.Join(out, "/")
}
