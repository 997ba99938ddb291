package ghfake

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An issue transferred to another repository of the same owner keeps its
// comments (with their ids) under a new number; labels the target lacks are
// dropped; the former address answers 301 with the new one; the source
// repository gets issues.transferred naming both.
func TestTransferredIssueMovesWithItsComments(t *testing.T) {
	e := newEnv(t)
	other, err := e.f.CreateRepo(owner, "gadgets", "main")
	require.NoError(t, err)
	_, err = other.CreateIssue("alice", "first", "") // the moved issue is not #1 there
	require.NoError(t, err)
	require.NoError(t, other.LabelIssue("alice", 1, "bug"))
	n, err := e.repo.CreateIssue("alice", "Widgets", "body", "bazinga", "bug")
	require.NoError(t, err)
	cid, err := e.repo.Comment("alice", n, "hello")
	require.NoError(t, err)
	e.hook.reset()

	m, err := e.repo.TransferIssue("alice", n, other)
	require.NoError(t, err)
	assert.Equal(t, 2, m)
	require.Equal(t, []string{"issues.transferred"}, e.hook.kinds())
	ev := e.hook.all()[0].payload.(*github.IssuesEvent)
	assert.Equal(t, n, ev.GetIssue().GetNumber())
	assert.Equal(t, full, ev.GetRepo().GetFullName())
	var raw struct {
		Changes struct {
			NewIssue struct {
				Number int `json:"number"`
			} `json:"new_issue"`
			NewRepository struct {
				FullName string `json:"full_name"`
			} `json:"new_repository"`
		} `json:"changes"`
	}
	require.NoError(t, json.Unmarshal(e.hook.all()[0].raw, &raw))
	assert.Equal(t, m, raw.Changes.NewIssue.Number)
	assert.Equal(t, owner+"/gadgets", raw.Changes.NewRepository.FullName)

	// Read through the redirect, as a client following 301s does.
	is, _, err := e.gh.Issues.Get(e.ctx, owner, repoName, n)
	require.NoError(t, err)
	assert.Equal(t, m, is.GetNumber())
	assert.Equal(t, "Widgets", is.GetTitle())
	var labels []string
	for _, l := range is.Labels {
		labels = append(labels, l.GetName())
	}
	assert.Equal(t, []string{"bug"}, labels, "bazinga does not exist in the target")
	cs, _, err := e.gh.Issues.ListComments(e.ctx, owner, repoName, n, nil)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Equal(t, cid, cs[0].GetID())
	assert.Contains(t, cs[0].GetIssueURL(), "/repos/"+owner+"/gadgets/issues/2")
	moved := 0
	for _, c := range e.f.Calls() {
		if c.Status == http.StatusMovedPermanently {
			moved++
		}
	}
	assert.Equal(t, 2, moved)
	// Gone from the source's lists.
	list, _, err := e.gh.Issues.ListByRepo(e.ctx, owner, repoName, &github.IssueListByRepoOptions{State: "all"})
	require.NoError(t, err)
	assert.Empty(t, list)
}

func TestIssueTransferRules(t *testing.T) {
	e := newEnv(t)
	n, err := e.repo.CreateIssue("alice", "Widgets", "")
	require.NoError(t, err)
	elsewhere, err := e.f.CreateRepo("someone-else", "gadgets", "main")
	require.NoError(t, err)
	_, err = e.repo.TransferIssue("alice", n, elsewhere)
	assert.ErrorContains(t, err, "same owner")
	private, err := e.f.CreateRepo(owner, "secret", "main")
	require.NoError(t, err)
	priv := DefaultSettings()
	priv.Private = true
	require.NoError(t, private.SetSettings(priv))
	require.NoError(t, e.repo.SetSettings(priv))
	public, err := e.f.CreateRepo(owner, "public", "main")
	require.NoError(t, err)
	_, err = e.repo.TransferIssue("alice", n, public)
	assert.ErrorContains(t, err, "private")
	_, err = e.repo.TransferIssue("mallory", n, private)
	assert.ErrorContains(t, err, "write access")
	_, err = e.repo.TransferIssue("alice", 99, private)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = e.repo.TransferIssue("alice", n, private)
	require.NoError(t, err)
	_, err = e.repo.TransferIssue("alice", n, private)
	assert.ErrorIs(t, err, ErrNotFound, "a moved issue is no longer here")
}
