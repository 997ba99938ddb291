package ghapi_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// IssueMoved against the fake's 301s: a transferred issue is reported with
// its new repository and number; an issue still here, and one read under
// its repository's former name (a rename redirects too), are not moved.
func TestIssueMoved(t *testing.T) {
	f, repo, gh := protectWorld(t)
	ctx := context.Background()
	f.SetPermission("alice", "write")
	other, err := f.CreateRepo("acme", "gadgets", "main")
	require.NoError(t, err)
	stays, err := repo.CreateIssue("alice", "stays", "")
	require.NoError(t, err)
	goes, err := repo.CreateIssue("alice", "goes", "")
	require.NoError(t, err)
	m, err := repo.TransferIssue("alice", goes, other)
	require.NoError(t, err)

	ref := ghapi.RepoRef{Owner: "acme", Name: "widgets", ID: repo.ID()}
	_, moved, err := gh.IssueMoved(ctx, ref, stays)
	require.NoError(t, err)
	assert.False(t, moved)
	to, moved, err := gh.IssueMoved(ctx, ref, goes)
	require.NoError(t, err)
	require.True(t, moved)
	assert.Equal(t, "acme/gadgets", to.Repo.String())
	assert.Equal(t, m, to.Number)

	require.NoError(t, repo.Rename("alice", "widgets2"))
	_, moved, err = gh.IssueMoved(ctx, ref, stays) // ref still has the former name
	require.NoError(t, err)
	assert.False(t, moved, "a renamed repository is not a transfer")
	_, moved, err = gh.IssueMoved(ctx, ghapi.RepoRef{Owner: "acme", Name: "widgets"}, stays)
	require.NoError(t, err)
	assert.False(t, moved, "without the id, the former name is looked up")
	_, _, err = gh.IssueMoved(ctx, ref, 99)
	assert.ErrorIs(t, err, ghapi.ErrNotFound)
}

// BranchMoved: a renamed branch's former name answers 301 with the new
// name (renames chain); a branch still there, or deleted, is not moved.
func TestBranchMoved(t *testing.T) {
	_, repo, gh := protectWorld(t)
	ctx := context.Background()
	ref := ghapi.RepoRef{Owner: "acme", Name: "widgets", ID: repo.ID()}
	_, moved, err := gh.BranchMoved(ctx, ref, "main")
	require.NoError(t, err)
	assert.False(t, moved)
	require.NoError(t, repo.RenameBranch("acme", "main", "trunk"))
	to, moved, err := gh.BranchMoved(ctx, ref, "main")
	require.NoError(t, err)
	assert.True(t, moved)
	assert.Equal(t, "trunk", to)
	require.NoError(t, repo.RenameBranch("acme", "trunk", "stem"))
	to, _, err = gh.BranchMoved(ctx, ref, "main")
	require.NoError(t, err)
	assert.Equal(t, "stem", to, "renames chain")
	_, _, err = gh.BranchMoved(ctx, ref, "never")
	assert.ErrorIs(t, err, ghapi.ErrNotFound)
}
