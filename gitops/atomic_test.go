package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Refs and the index of a repository opened with OpenWorktree are replaced
// through a rename, with temporary files outside refs/: a leftover from a
// kill must not read as a broken reference.
func TestOpenWorktreeWritesAtomically(t *testing.T) {
	f := newRemote(t)
	repo, err := OpenWorktree(f.work)
	require.NoError(t, err)
	head, err := repo.Head()
	require.NoError(t, err)
	ref := plumbing.NewHashReference(plumbing.NewBranchReferenceName("feature/x"), head.Hash())
	require.NoError(t, repo.Storer.SetReference(ref))
	got, err := repo.Reference(ref.Name(), true)
	require.NoError(t, err)
	assert.Equal(t, head.Hash(), got.Hash())
	assert.Equal(t, head.Hash().String(), strings.TrimSpace(runGit(t, f.work, "rev-parse", "feature/x")))

	// A temporary file a kill left behind is where no reference is read.
	require.NoError(t, os.WriteFile(filepath.Join(f.work, ".git", ".bazinga-tmp-123"), nil, 0o644))
	refs, err := repo.References()
	require.NoError(t, err)
	n := 0
	require.NoError(t, refs.ForEach(func(*plumbing.Reference) error { n++; return nil }))
	assert.Positive(t, n)

	// The index round-trips.
	idx, err := repo.Storer.Index()
	require.NoError(t, err)
	require.NoError(t, repo.Storer.SetIndex(idx))
	wt, err := repo.Worktree()
	require.NoError(t, err)
	st, err := wt.Status()
	require.NoError(t, err)
	assert.True(t, st.IsClean(), st.String())

	_, err = OpenWorktree(t.TempDir())
	assert.Error(t, err)
}
