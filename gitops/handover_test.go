package gitops

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPathPolicy(t *testing.T) {
	cases := []struct {
		path   string
		policy PathPolicy
		want   error // nil: allowed
		why    string
	}{
		{"a.txt", PathPolicy{}, nil, ""},
		{"src/deep/file.go", PathPolicy{}, nil, ""},
		{".github/CODEOWNERS", PathPolicy{}, nil, ""},
		{".gitignore", PathPolicy{}, nil, ""},
		{"docs/.git-notes", PathPolicy{}, nil, ""},
		{".github/workflows/ci.yml", PathPolicy{AllowWorkflowChanges: true}, nil, ""},
		{"", PathPolicy{}, ErrForbiddenPath, "is empty"},
		{"/etc/passwd", PathPolicy{}, ErrForbiddenPath, "is absolute"},
		{"../x", PathPolicy{}, ErrForbiddenPath, ". or .. segment"},
		{"a/../../x", PathPolicy{}, ErrForbiddenPath, ". or .. segment"},
		{"./a", PathPolicy{}, ErrForbiddenPath, ". or .. segment"},
		{"a//b", PathPolicy{}, ErrForbiddenPath, "empty segment"},
		{"a/", PathPolicy{}, ErrForbiddenPath, "empty segment"},
		{`a\..\b`, PathPolicy{}, ErrForbiddenPath, "backslash"},
		{"a\x00b", PathPolicy{}, ErrForbiddenPath, "NUL"},
		{"bad\xffutf8", PathPolicy{}, ErrForbiddenPath, "UTF-8"},
		{".git/config", PathPolicy{}, ErrForbiddenPath, "reaches into .git"},
		{"sub/.GIT/hooks/pre-commit", PathPolicy{}, ErrForbiddenPath, "reaches into .git"},
		{".git./config", PathPolicy{}, ErrForbiddenPath, "reaches into .git"},
		{"GIT~1/config", PathPolicy{}, ErrForbiddenPath, "reaches into .git"},
		{".github/bazinga.yml", PathPolicy{AllowWorkflowChanges: true}, ErrForbiddenPath, "configuration"},
		{".GitHub/Bazinga.YML", PathPolicy{}, ErrForbiddenPath, "configuration"},
		{"ci/bazinga.yml", PathPolicy{Protected: []string{"./ci/bazinga.yml"}}, ErrForbiddenPath, "is protected"},
		{".github/workflows/ci.yml", PathPolicy{}, ErrWorkflowChange, ".github/workflows/ci.yml"},
		{".github/Workflows/ci.yml", PathPolicy{}, ErrWorkflowChange, ""},
		{strings.Repeat("a", 4097), PathPolicy{}, ErrForbiddenPath, "longer than 4096"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			err := c.policy.Check(c.path)
			if c.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, c.want)
			assert.ErrorContains(t, err, c.why)
		})
	}
}

// A change listed by TreeChanges and rebuilt by CommitFiles in another
// repository gives the very tree git committed (git is the oracle).
func TestTreeChangesRebuildTheCommit(t *testing.T) {
	requireGit(t)
	dir := initRepo(t)
	writeFiles(t, dir, map[string]string{"keep.txt": "k\n", "edit.txt": "old\n", "gone.txt": "x\n", "dir/nested/old.go": "package a\n", "run.sh": "#!/bin/sh\n"})
	base := commitAll(t, dir, "base")
	writeFiles(t, dir, map[string]string{"edit.txt": "new\n", "gone.txt": "\x00rm", "dir/nested/old.go": "\x00rm", "new/deep/file.txt": "n\n", "a-b": "sorts before a/\n", "a/x": "dir a\n"})
	require.NoError(t, os.Chmod(filepath.Join(dir, "run.sh"), 0o755))
	require.NoError(t, os.Symlink("keep.txt", filepath.Join(dir, "link")))
	head := commitAll(t, dir, "change")
	wantTree := strings.TrimSpace(runGit(t, dir, "rev-parse", head+"^{tree}"))

	src, err := OpenWorktree(dir)
	require.NoError(t, err)
	changes, err := TreeChanges(src, plumbing.NewHash(base), plumbing.NewHash(head))
	require.NoError(t, err)
	got := map[string]string{}
	for _, c := range changes {
		got[c.Path] = c.Mode.String()
	}
	assert.Equal(t, map[string]string{"edit.txt": "file", "gone.txt": "delete", "dir/nested/old.go": "delete", "new/deep/file.txt": "file",
		"a-b": "file", "a/x": "file", "run.sh": "executable", "link": "symlink"}, got)

	// The other side has only the base (as fetched) and the data.
	clone := t.TempDir()
	runGit(t, clone, "init", "-q", "--bare")
	runGit(t, dir, "push", "-q", clone, base+":refs/heads/main")
	dst, err := git.PlainOpen(clone)
	require.NoError(t, err)
	var files []NewFile
	for _, c := range changes {
		f := NewFile{Path: c.Path, Mode: c.Mode}
		if c.Mode != ChangeDelete {
			b, err := src.BlobObject(c.Blob)
			require.NoError(t, err)
			r, err := b.Reader()
			require.NoError(t, err)
			f.Data, err = io.ReadAll(r)
			require.NoError(t, err)
			r.Close()
			assert.Equal(t, c.Blob, BlobHash(f.Data))
		}
		files = append(files, f)
	}
	commit, tree, err := CommitFiles(dst, files, CommitSpec{Parents: []plumbing.Hash{plumbing.NewHash(base)}, Author: Identity{Name: "A", Email: "a@x"}, Message: "rebuilt", When: time.Unix(1700000000, 0)})
	require.NoError(t, err)
	assert.Equal(t, wantTree, tree.String())
	runGit(t, clone, "update-ref", "refs/heads/rebuilt", commit.String())
	runGit(t, clone, "fsck", "--strict", "--no-dangling")
	assert.Equal(t, base, strings.TrimSpace(runGit(t, clone, "rev-parse", "rebuilt^")))
	assert.Equal(t, BotIdentity.Name, strings.TrimSpace(runGit(t, clone, "log", "-1", "--format=%cn", "rebuilt")))

	// Deleting what is not there, or a file where a directory is, is an error.
	_, _, err = CommitFiles(dst, []NewFile{{Path: "nope.txt", Mode: ChangeDelete}}, CommitSpec{Parents: []plumbing.Hash{plumbing.NewHash(base)}})
	assert.ErrorContains(t, err, "nope.txt is deleted but is not in the parent")
	_, _, err = CommitFiles(dst, []NewFile{{Path: "dir", Mode: ChangeFile, Data: []byte("x")}}, CommitSpec{Parents: []plumbing.Hash{plumbing.NewHash(base)}})
	assert.ErrorContains(t, err, "dir is a file and a directory")
}

func TestTreeChangesRefusesASubmodule(t *testing.T) {
	requireGit(t)
	dir := initRepo(t)
	writeFiles(t, dir, map[string]string{"a.txt": "a\n"})
	base := commitAll(t, dir, "base")
	runGit(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+base+",vendor/sub")
	runGit(t, dir, "commit", "-q", "-m", "gitlink")
	head := strings.TrimSpace(runGit(t, dir, "rev-parse", "HEAD"))
	repo, err := OpenWorktree(dir)
	require.NoError(t, err)
	_, err = TreeChanges(repo, plumbing.NewHash(base), plumbing.NewHash(head))
	assert.ErrorIs(t, err, ErrSubmodule)
	assert.ErrorContains(t, err, "vendor/sub")
}

// PushCommit sets a branch only where the pusher saw it: it creates a
// missing branch, advances one still at old, and reports ErrStale when the
// branch moved or appeared meanwhile. The remote URL is the caller's: the
// repository it pushes from has no remote configured at all.
func TestPushCommitCompareAndSet(t *testing.T) {
	requireGit(t)
	origin := initRepo(t)
	writeFiles(t, origin, map[string]string{"a.txt": "a\n"})
	base := plumbing.NewHash(commitAll(t, origin, "base"))
	runGit(t, origin, "checkout", "-q", "--detach")
	remote := Remote{URL: origin}
	ctx := context.Background()

	repo, heads, err := FetchBare(ctx, remote, filepath.Join(t.TempDir(), "bare"), "main", "missing")
	require.NoError(t, err)
	assert.Equal(t, map[string]plumbing.Hash{"main": base}, heads)
	rems, err := repo.Remotes()
	require.NoError(t, err)
	assert.Empty(t, rems, "no remote in the configuration")

	c1, _, err := CommitFiles(repo, []NewFile{{Path: "b.txt", Mode: ChangeFile, Data: []byte("b\n")}}, CommitSpec{Parents: []plumbing.Hash{base}, Message: "one"})
	require.NoError(t, err)
	require.NoError(t, PushCommit(ctx, repo, remote, c1, "feature", plumbing.ZeroHash), "creates")
	assert.Equal(t, c1.String(), strings.TrimSpace(runGit(t, origin, "rev-parse", "feature")))
	assert.ErrorIs(t, PushCommit(ctx, repo, remote, c1, "feature", plumbing.ZeroHash), ErrStale, "it exists now")

	require.NoError(t, PushCommit(ctx, repo, remote, c1, "main", base), "advances")
	// Someone else moves main; a push expecting the old head is refused.
	writeFiles(t, origin, map[string]string{"c.txt": "c\n"})
	runGit(t, origin, "checkout", "-q", "main")
	other := commitAll(t, origin, "someone else")
	c2, _, err := CommitFiles(repo, []NewFile{{Path: "d.txt", Mode: ChangeFile, Data: []byte("d\n")}}, CommitSpec{Parents: []plumbing.Hash{c1}, Message: "two"})
	require.NoError(t, err)
	err = PushCommit(ctx, repo, remote, c2, "main", c1)
	assert.ErrorIs(t, err, ErrStale)
	assert.Equal(t, other, strings.TrimSpace(runGit(t, origin, "rev-parse", "main")), "their commit stays")
}

// PrepareReadOnly clones without writing to the remote: a missing group
// branch is made locally at the base head.
func TestPrepareReadOnly(t *testing.T) {
	requireGit(t)
	origin := initRepo(t)
	writeFiles(t, origin, map[string]string{"a.txt": "a\n"})
	base := commitAll(t, origin, "base")
	runGit(t, origin, "checkout", "-q", "--detach")
	ctx := context.Background()
	repo, start, existed, err := PrepareReadOnly(ctx, Remote{URL: origin}, "main", "bazinga/1-A", filepath.Join(t.TempDir(), "wc"))
	require.NoError(t, err)
	assert.False(t, existed)
	assert.Equal(t, base, start.String())
	head, err := repo.Head()
	require.NoError(t, err)
	assert.Equal(t, "refs/heads/bazinga/1-A", head.Name().String())
	_, code, _ := runGitCode(t, origin, "rev-parse", "--verify", "-q", "refs/heads/bazinga/1-A")
	assert.NotZero(t, code, "nothing was created on the remote")

	runGit(t, origin, "branch", "bazinga/1-B", base)
	repo, start, existed, err = PrepareReadOnly(ctx, Remote{URL: origin}, "main", "bazinga/1-B", filepath.Join(t.TempDir(), "wc2"))
	require.NoError(t, err)
	assert.True(t, existed)
	assert.Equal(t, base, start.String())
	_, err = ResolveBranch(repo, "main")
	assert.NoError(t, err, "the base is there to merge")
}
