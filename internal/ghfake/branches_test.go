package ghfake

import (
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Deleting a pull request's head branch closes the pull request; it cannot
// be reopened until the branch is restored (recreated at its head).
func TestDeletingAHeadBranchClosesItsPR(t *testing.T) {
	for _, via := range []string{"button", "api"} {
		t.Run(via, func(t *testing.T) {
			e := newEnv(t)
			e.branch(t, "feature", map[string]string{"f.txt": "feature\n"})
			pr, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("Feature"), Head: github.String("feature"), Base: github.String("main")})
			require.NoError(t, err)
			head := pr.GetHead().GetSHA()
			e.hook.reset()
			if via == "button" {
				require.NoError(t, e.repo.DeleteBranch("alice", "feature"))
			} else {
				resp, err := e.gh.Git.DeleteRef(e.ctx, owner, repoName, "heads/feature")
				require.NoError(t, err)
				assert.Equal(t, http.StatusNoContent, resp.StatusCode)
			}
			_, ok := e.repo.Ref("refs/heads/feature")
			assert.False(t, ok)
			assert.Equal(t, []string{"push", "pull_request.closed"}, e.hook.kinds())
			closed := e.hook.all()[1].payload.(*github.PullRequestEvent)
			assert.False(t, closed.GetPullRequest().GetMerged())
			got, _, err := e.gh.PullRequests.Get(e.ctx, owner, repoName, pr.GetNumber())
			require.NoError(t, err)
			assert.Equal(t, "closed", got.GetState())

			// Reopening waits for the branch.
			_, _, err = e.gh.PullRequests.Edit(e.ctx, owner, repoName, pr.GetNumber(), &github.PullRequest{State: github.String("open")})
			assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
			assert.ErrorContains(t, e.repo.ReopenPR("alice", pr.GetNumber()), "has been deleted")
			_, _, err = e.gh.Git.CreateRef(e.ctx, owner, repoName, &github.Reference{Ref: github.String("refs/heads/feature"), Object: &github.GitObject{SHA: github.String(head)}})
			require.NoError(t, err)
			e.hook.reset()
			got, _, err = e.gh.PullRequests.Edit(e.ctx, owner, repoName, pr.GetNumber(), &github.PullRequest{State: github.String("open")})
			require.NoError(t, err)
			assert.Equal(t, "open", got.GetState())
			assert.Equal(t, []string{"pull_request.reopened"}, e.hook.kinds())

			// Errors: a missing ref; the default branch.
			_, err = e.gh.Git.DeleteRef(e.ctx, owner, repoName, "heads/no-such")
			assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
			assert.Equal(t, "Reference does not exist", messageOf(err))
			_, err = e.gh.Git.DeleteRef(e.ctx, owner, repoName, "heads/main")
			assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
			assert.Error(t, e.repo.DeleteBranch("alice", "main"))
		})
	}
}

// A renamed repository keeps its id; its former name answers 301 with its
// address by id, which a client following redirects reads through; a write
// under the former name followed as net/http does (as a GET) does not
// happen. A `repository` event says it was renamed.
func TestRenamedRepositoryRedirects(t *testing.T) {
	e := newEnv(t)
	e.hook.reset()
	id := e.repo.id
	require.NoError(t, e.repo.Rename("alice", "gadgets"))
	assert.Equal(t, owner+"/gadgets", e.repo.FullName())
	require.Equal(t, []string{"repository.renamed"}, e.hook.kinds())
	ev := e.hook.all()[0].payload.(*github.RepositoryEvent)
	assert.Equal(t, id, ev.GetRepo().GetID())
	assert.Equal(t, owner+"/gadgets", ev.GetRepo().GetFullName())

	// A read under the former name: 301, then the repository.
	r, _, err := e.gh.Repositories.Get(e.ctx, owner, repoName)
	require.NoError(t, err)
	assert.Equal(t, owner+"/gadgets", r.GetFullName())
	assert.Equal(t, id, r.GetID())
	var moved *Call
	for _, c := range e.f.Calls() {
		if c.Status == http.StatusMovedPermanently {
			moved = &c
		}
	}
	require.NotNil(t, moved)
	assert.Equal(t, "/repos/"+owner+"/"+repoName, moved.Path)
	byID, _, err := e.gh.Repositories.GetByID(e.ctx, id)
	require.NoError(t, err)
	assert.Equal(t, "gadgets", byID.GetName())

	// A write under the former name is turned into a read by the client's
	// redirect: nothing is created.
	n, err := e.repo.CreateIssue("alice", "Widgets", "")
	require.NoError(t, err)
	_, _, err = e.gh.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("lost")})
	assert.Error(t, err)
	assert.Empty(t, e.repo.Comments(n))
	// Under the new name it works.
	_, _, err = e.gh.Issues.CreateComment(e.ctx, owner, "gadgets", n, &github.IssueComment{Body: github.String("kept")})
	require.NoError(t, err)
	assert.Len(t, e.repo.Comments(n), 1)
	assert.Error(t, e.repo.Rename("alice", "bad name"))
}
