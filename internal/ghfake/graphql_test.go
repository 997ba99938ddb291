package ghfake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gqlPost sends a GraphQL request as tok ("" for none) and returns the
// status, the decoded answer and the headers.
func gqlPost(t *testing.T, e *env, tok, path string, body any) (int, map[string]any, http.Header) {
	t.Helper()
	var raw []byte
	if s, ok := body.(string); ok {
		raw = []byte(s)
	} else {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(t, err)
	}
	req, err := http.NewRequestWithContext(e.ctx, http.MethodPost, e.f.URL()+path, bytes.NewReader(raw))
	require.NoError(t, err)
	if tok != "" {
		req.Header.Set("Authorization", "bearer "+tok)
	}
	resp, err := (&http.Client{Transport: e.f.Transport()}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return resp.StatusCode, out, resp.Header
}

func gqlErrType(ans map[string]any) string {
	errs, _ := ans["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	e := errs[0].(map[string]any)
	typ, _ := e["type"].(string)
	return typ + ": " + e["message"].(string)
}

// threadPR opens a bot PR with one review comment and returns its number
// and thread id.
func threadPR(t *testing.T, e *env) (int, string) {
	t.Helper()
	e.branch(t, "feature", map[string]string{"src/a.txt": "one\nTWO\nthree\n"})
	pr, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("t"), Head: github.String("feature"), Base: github.String("main")})
	require.NoError(t, err)
	_, _, err = e.gh.PullRequests.CreateReview(e.ctx, owner, repoName, pr.GetNumber(), &github.PullRequestReviewRequest{
		Event: github.String("COMMENT"), Comments: []*github.DraftReviewComment{{Path: github.String("src/a.txt"), Line: github.Int(2), Body: github.String("x")}}})
	require.NoError(t, err)
	threads := e.repo.ReviewThreads(pr.GetNumber())
	require.Len(t, threads, 1)
	return pr.GetNumber(), threads[0].ID
}

func TestGraphQLEndpointRules(t *testing.T) {
	e := newEnv(t)
	n, thread := threadPR(t, e)
	list := map[string]any{"query": gqlThreadsQuery, "variables": map[string]any{"owner": owner, "name": repoName, "number": n}}
	resolve := map[string]any{"query": gqlResolveMutation, "variables": map[string]any{"threadId": thread}}

	status, _, _ := gqlPost(t, e, "", "/graphql", list)
	assert.Equal(t, http.StatusUnauthorized, status, "GraphQL needs credentials")
	status, _, _ = gqlPost(t, e, botTok, "/graphql", "{not json")
	assert.Equal(t, http.StatusBadRequest, status)

	// The document is compared token by token: layout and commas do not matter.
	squashed := strings.Join(strings.Fields(strings.ReplaceAll(gqlThreadsQuery, "$owner: String!,", "$owner: String!")), " ")
	status, ans, hdr := gqlPost(t, e, botTok, "/api/graphql", map[string]any{"query": squashed, "variables": list["variables"]})
	require.Equal(t, http.StatusOK, status)
	assert.Empty(t, gqlErrType(ans))
	assert.Equal(t, "graphql", hdr.Get("X-RateLimit-Resource"))
	nodes := ans["data"].(map[string]any)["repository"].(map[string]any)["pullRequest"].(map[string]any)["reviewThreads"].(map[string]any)["nodes"].([]any)
	require.Len(t, nodes, 1)
	node := nodes[0].(map[string]any)
	assert.Equal(t, thread, node["id"])
	assert.Equal(t, true, node["viewerCanResolve"])
	first := node["comments"].(map[string]any)["nodes"].([]any)[0].(map[string]any)
	assert.IsType(t, "", first["fullDatabaseId"], "a BigInt is sent as a string")

	for name, tc := range map[string]struct {
		body any
		want string
	}{
		"another document":   {map[string]any{"query": "query { viewer { login } }"}, "ghfake: this GraphQL document is not one the fake models"},
		"no query":           {map[string]any{"variables": map[string]any{}}, "A query attribute must be specified"},
		"a missing variable": {map[string]any{"query": gqlThreadsQuery, "variables": map[string]any{"owner": owner, "name": repoName}}, "Variable $number of type Int! was provided invalid value"},
		"a variable's type":  {map[string]any{"query": gqlResolveMutation, "variables": map[string]any{"threadId": 7}}, "Variable $threadId of type ID! was provided invalid value"},
		"an unknown repository": {map[string]any{"query": gqlThreadsQuery, "variables": map[string]any{"owner": owner, "name": "nope", "number": n}},
			"NOT_FOUND: Could not resolve to a Repository with the name 'acme/nope'."},
		"not a pull request": {map[string]any{"query": gqlThreadsQuery, "variables": map[string]any{"owner": owner, "name": repoName, "number": 999}},
			"NOT_FOUND: Could not resolve to a PullRequest with the number of 999."},
		"a bad cursor": {map[string]any{"query": gqlThreadsQuery, "variables": map[string]any{"owner": owner, "name": repoName, "number": n, "after": "zz"}},
			"INVALID_CURSOR_ARGUMENTS"},
		"an unknown thread": {map[string]any{"query": gqlResolveMutation, "variables": map[string]any{"threadId": "PRRT_nope"}},
			"NOT_FOUND: Could not resolve to a node with the global id of 'PRRT_nope'"},
	} {
		t.Run(name, func(t *testing.T) {
			status, ans, _ := gqlPost(t, e, botTok, "/graphql", tc.body)
			assert.Equal(t, http.StatusOK, status, "GraphQL errors come with HTTP 200")
			assert.Contains(t, gqlErrType(ans), tc.want)
		})
	}

	// Who may resolve: a token with pull_requests write, a person with
	// write access or the PR's author; a GITHUB_TOKEN only in its repository.
	e.f.AddTokenWithPermissions("ghs_ro", "ro[bot]", Bot, map[string]string{"pull_requests": "read"})
	_, ans, _ = gqlPost(t, e, "ghs_ro", "/graphql", list)
	node = ans["data"].(map[string]any)["repository"].(map[string]any)["pullRequest"].(map[string]any)["reviewThreads"].(map[string]any)["nodes"].([]any)[0].(map[string]any)
	assert.Equal(t, false, node["viewerCanResolve"])
	_, ans, _ = gqlPost(t, e, "ghs_ro", "/graphql", resolve)
	assert.Equal(t, "FORBIDDEN: Resource not accessible by integration", gqlErrType(ans))
	e.f.AddToken("ghp_bob", "bob", User)
	e.f.SetPermission("bob", "read")
	_, ans, _ = gqlPost(t, e, "ghp_bob", "/graphql", resolve)
	assert.Equal(t, "FORBIDDEN: bob does not have permission to resolve this thread.", gqlErrType(ans))
	other, err := e.f.CreateRepo(owner, "other", "main")
	require.NoError(t, err)
	e.f.mu.Lock()
	e.f.tokens["ghs_actions"] = &token{value: "ghs_actions", login: ActionsLogin, kind: Bot, perms: map[string]string{"pull_requests": "write"}, repo: other}
	e.f.mu.Unlock()
	_, ans, _ = gqlPost(t, e, "ghs_actions", "/graphql", resolve)
	assert.Equal(t, "FORBIDDEN: Resource not accessible by integration", gqlErrType(ans))
	assert.False(t, e.repo.ReviewThreads(n)[0].Resolved)

	_, ans, _ = gqlPost(t, e, aliceTok, "/graphql", resolve)
	assert.Empty(t, gqlErrType(ans), "alice has write access")
	assert.Equal(t, map[string]any{"resolveReviewThread": map[string]any{"thread": map[string]any{"id": thread, "isResolved": true}}}, ans["data"])
	assert.Equal(t, "alice", e.repo.ReviewThreads(n)[0].ResolvedBy)

	// GraphQL's own limit: HTTP 200, RATE_LIMITED, remaining 0; REST unaffected.
	require.NoError(t, e.f.SetGraphQLRateRemaining(botTok, 0))
	status, ans, hdr = gqlPost(t, e, botTok, "/graphql", list)
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, gqlErrType(ans), "RATE_LIMITED: API rate limit exceeded for")
	assert.Equal(t, "0", hdr.Get("X-RateLimit-Remaining"))
	_, _, err = e.gh.PullRequests.Get(e.ctx, owner, repoName, n)
	require.NoError(t, err)

	for _, c := range e.f.Calls() {
		if strings.HasSuffix(c.Path, "graphql") {
			assert.True(t, c.GraphQL, "GraphQL calls are marked: the OpenAPI check skips them")
		}
	}
}
