package ghapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
)

func TestGraphQLURL(t *testing.T) {
	for base, want := range map[string]string{
		"https://api.github.com/":          "https://api.github.com/graphql",
		"https://ghe.example.com/api/v3/":  "https://ghe.example.com/api/graphql",
		"https://ghe.example.com/api/v3":   "https://ghe.example.com/api/graphql",
		"http://127.0.0.1:8080/":           "http://127.0.0.1:8080/graphql",
		"http://127.0.0.1:8080/github/v3x": "http://127.0.0.1:8080/github/v3x/graphql",
	} {
		u, err := url.Parse(base)
		require.NoError(t, err)
		assert.Equal(t, want, ghapi.GraphQLURLForTest(u), base)
	}
}

// threadWorld is a repository whose bot-opened PR changes a 120-line file.
func threadWorld(t *testing.T) (*ghfake.Fake, *ghfake.Repo, *ghapi.Client, int) {
	t.Helper()
	f := ghfake.Start(t, ghfake.Options{})
	repo, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	_, err = repo.Push("acme", "main", map[string]string{"README.md": "# w\n"}, "init")
	require.NoError(t, err)
	var b strings.Builder
	for i := 1; i <= 120; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	_, err = repo.Push("acme", "feature", map[string]string{"a.go": b.String()}, "feature")
	require.NoError(t, err)
	gh := tokenClient(t, f, "ghs_bot", f.BotLogin(), nil)
	pr, err := gh.CreatePR(context.Background(), ghapi.RepoRef{Owner: "acme", Name: "widgets"}, ghapi.NewPR{Title: "w", Head: "feature", Base: "main"})
	require.NoError(t, err)
	return f, repo, gh, pr.Number
}

func tokenClient(t *testing.T, f *ghfake.Fake, tok, login string, perms map[string]string) *ghapi.Client {
	t.Helper()
	f.AddTokenWithPermissions(tok, login, ghfake.Bot, perms)
	c, err := github.NewClient(&http.Client{Transport: f.Transport()}).WithAuthToken(tok).WithEnterpriseURLs(f.APIURL(), f.URL()+"/api/uploads/")
	require.NoError(t, err)
	return ghapi.New(c)
}

func TestReviewThreadsListAndResolve(t *testing.T) {
	ctx := context.Background()
	f, repo, gh, n := threadWorld(t)
	ref := ghapi.RepoRef{Owner: "acme", Name: "widgets"}
	rv, err := gh.CreateReview(ctx, ref, n, ghapi.NewReview{Event: "COMMENT", Body: "b", Comments: []ghapi.ReviewComment{
		{Path: "a.go", StartLine: 3, Line: 5, Body: "range"}, {Path: "a.go", Line: 9, Body: "one"}}})
	require.NoError(t, err)

	threads, err := gh.ListReviewThreads(ctx, ref, n)
	require.NoError(t, err)
	require.Len(t, threads, 2)
	fake := repo.ReviewThreads(n)
	assert.Equal(t, []ghapi.ReviewThread{
		{ID: fake[0].ID, CanResolve: true, Path: "a.go", StartLine: 3, Line: 5, CommentID: fake[0].Comment, ReviewID: rv.ID},
		{ID: fake[1].ID, CanResolve: true, Path: "a.go", Line: 9, CommentID: fake[1].Comment, ReviewID: rv.ID},
	}, threads)
	assert.True(t, strings.HasPrefix(threads[0].ID, "PRRT_"), "a node id")

	require.NoError(t, gh.ResolveReviewThread(ctx, threads[1].ID))
	require.NoError(t, gh.ResolveReviewThread(ctx, threads[1].ID), "resolving a resolved thread is no error")
	fake = repo.ReviewThreads(n)
	assert.False(t, fake[0].Resolved)
	assert.True(t, fake[1].Resolved)
	assert.Equal(t, f.BotLogin(), fake[1].ResolvedBy)
	threads, err = gh.ListReviewThreads(ctx, ref, n)
	require.NoError(t, err)
	assert.Equal(t, []bool{false, true}, []bool{threads[0].Resolved, threads[1].Resolved})

	// GitHub's errors come with HTTP 200, typed.
	err = gh.ResolveReviewThread(ctx, "PRRT_fake999999")
	require.ErrorIs(t, err, ghapi.ErrNotFound)
	_, err = gh.ListReviewThreads(ctx, ghapi.RepoRef{Owner: "acme", Name: "gone"}, n)
	require.ErrorIs(t, err, ghapi.ErrNotFound)
	assert.Contains(t, err.Error(), "Could not resolve to a Repository with the name 'acme/gone'.")
	_, err = gh.ListReviewThreads(ctx, ref, 999)
	require.ErrorIs(t, err, ghapi.ErrNotFound)

	// A token without pull_requests write lists but does not resolve.
	ro := tokenClient(t, f, "ghs_ro", "reader[bot]", map[string]string{"pull_requests": "read"})
	roThreads, err := ro.ListReviewThreads(ctx, ref, n)
	require.NoError(t, err)
	assert.False(t, roThreads[0].CanResolve, "viewerCanResolve says so before any attempt")
	err = ro.ResolveReviewThread(ctx, threads[0].ID)
	require.Error(t, err)
	assert.True(t, ghapi.IsGraphQLForbidden(err), "%v", err)
	assert.NotErrorIs(t, err, ghapi.ErrNotFound)
	none := tokenClient(t, f, "ghs_none", "none[bot]", map[string]string{"contents": "read"})
	_, err = none.ListReviewThreads(ctx, ref, n)
	assert.True(t, ghapi.IsGraphQLForbidden(err), "%v", err)
	assert.False(t, repo.ReviewThreads(n)[0].Resolved)

	// The calls are GraphQL's, not REST's.
	var gql int
	for _, c := range f.Calls() {
		if c.GraphQL {
			gql++
			assert.Equal(t, "/api/graphql", c.Path, "GitHub Enterprise Server's endpoint beside /api/v3")
		}
	}
	assert.Equal(t, 10, gql)
}

func TestReviewThreadsPages(t *testing.T) {
	ctx := context.Background()
	_, repo, gh, n := threadWorld(t)
	ref := ghapi.RepoRef{Owner: "acme", Name: "widgets"}
	var cs []ghapi.ReviewComment
	for i := 1; i <= 101; i++ {
		cs = append(cs, ghapi.ReviewComment{Path: "a.go", Line: i, Body: fmt.Sprint(i)})
	}
	_, err := gh.CreateReview(ctx, ref, n, ghapi.NewReview{Event: "COMMENT", Body: "b", Comments: cs})
	require.NoError(t, err)
	threads, err := gh.ListReviewThreads(ctx, ref, n)
	require.NoError(t, err)
	require.Len(t, threads, 101, "two pages of at most 100")
	assert.Equal(t, 101, threads[100].Line)
	assert.Equal(t, repo.ReviewThreads(n)[100].ID, threads[100].ID)
}

func TestGraphQLRateLimitIsItsOwn(t *testing.T) {
	ctx := context.Background()
	f, _, gh, n := threadWorld(t)
	ref := ghapi.RepoRef{Owner: "acme", Name: "widgets"}
	require.NoError(t, f.SetGraphQLRateRemaining("ghs_bot", 0))
	_, err := gh.ListReviewThreads(ctx, ref, n)
	require.ErrorIs(t, err, ghapi.ErrRateLimited)
	var rl *ghapi.RateLimitedError
	require.True(t, errors.As(err, &rl))
	assert.Equal(t, "graphql", rl.Resource)
	assert.False(t, rl.Reset.IsZero())
	_, err = gh.GetPR(ctx, ref, n)
	require.NoError(t, err, "REST's core limit is another bucket")
}
