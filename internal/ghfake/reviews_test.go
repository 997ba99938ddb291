package ghfake

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReviewsOnTheDiff: the bot opens a PR that changes src/a.txt; GitHub
// lists the file with its patch, refuses the bot's approval of its own PR
// and a review with a comment off the diff (posting nothing), and takes a
// COMMENT review whose comments are on the diff.
func TestReviewsOnTheDiff(t *testing.T) {
	e := newEnv(t)
	e.branch(t, "feature", map[string]string{"src/a.txt": "one\nTWO\nthree\n" + strings.Repeat("x\n", 10) + "last\n"})
	pr, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("t"), Head: github.String("feature"), Base: github.String("main")})
	require.NoError(t, err)
	n := pr.GetNumber()

	files, _, err := e.gh.PullRequests.ListFiles(e.ctx, owner, repoName, n, nil)
	require.NoError(t, err)
	require.Len(t, files, 1)
	assert.Equal(t, "src/a.txt", files[0].GetFilename())
	assert.Equal(t, "modified", files[0].GetStatus())
	assert.Equal(t, "@@ -1,3 +1,14 @@\n one\n-two\n+TWO\n three\n"+strings.Repeat("+x\n", 10)+"+last", files[0].GetPatch())

	refused := func(r *github.PullRequestReviewRequest, msg string) {
		t.Helper()
		_, _, err := e.gh.PullRequests.CreateReview(e.ctx, owner, repoName, n, r)
		require.Equal(t, http.StatusUnprocessableEntity, statusOf(err), "%v", err)
		assert.Contains(t, err.Error(), msg)
	}
	refused(&github.PullRequestReviewRequest{Event: github.String("APPROVE")}, "Can not approve your own pull request")
	refused(&github.PullRequestReviewRequest{Event: github.String("REQUEST_CHANGES"), Body: github.String("no")}, "Can not request changes on your own pull request")
	comment := func(line int, side string) *github.DraftReviewComment {
		return &github.DraftReviewComment{Path: github.String("src/a.txt"), Line: github.Int(line), Side: github.String(side), Body: github.String("here")}
	}
	refused(&github.PullRequestReviewRequest{Event: github.String("COMMENT"), Body: github.String("b"),
		Comments: []*github.DraftReviewComment{comment(2, "RIGHT"), comment(15, "RIGHT")}}, "pull_request_review_thread.line must be part of the diff")
	refused(&github.PullRequestReviewRequest{Event: github.String("COMMENT"), Body: github.String("b"),
		Comments: []*github.DraftReviewComment{comment(5, "LEFT")}}, "must be part of the diff")
	refused(&github.PullRequestReviewRequest{Event: github.String("COMMENT"), Body: github.String("b"),
		Comments: []*github.DraftReviewComment{{Path: github.String("README.md"), Line: github.Int(1), Body: github.String("x")}}}, "path could not be resolved")
	refused(&github.PullRequestReviewRequest{Event: github.String("COMMENT"), Body: github.String(strings.Repeat("x", maxBody+1))}, "body is too long")
	refused(&github.PullRequestReviewRequest{Event: github.String("COMMENT")}, "Review body is required for COMMENT")
	assert.Empty(t, e.repo.Reviews(n), "a refused review posts nothing")

	multi := comment(4, "RIGHT")
	multi.StartLine, multi.StartSide = github.Int(2), github.String("RIGHT")
	rv, _, err := e.gh.PullRequests.CreateReview(e.ctx, owner, repoName, n, &github.PullRequestReviewRequest{
		Event: github.String("COMMENT"), Comments: []*github.DraftReviewComment{multi, comment(2, "LEFT")}})
	require.NoError(t, err, "inline comments alone need no body")
	assert.Equal(t, "COMMENTED", rv.GetState())
	assert.Equal(t, []ReviewComment{
		{Review: rv.GetID(), Path: "src/a.txt", Line: 4, StartLine: 2, Side: "RIGHT", Body: "here"},
		{Review: rv.GetID(), Path: "src/a.txt", Line: 2, Side: "LEFT", Body: "here"},
	}, e.repo.ReviewComments(n))
	// Another person may approve it.
	_, err = e.repo.SubmitReview("alice", n, "APPROVE", "")
	require.NoError(t, err)
}
