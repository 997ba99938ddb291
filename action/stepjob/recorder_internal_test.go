package stepjob

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/stepexec"
)

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir string, files map[string]string) {
	for p, c := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644))
	}
}

// A conflict fix merges the base into the group: a maintainer's workflow or
// configuration change on the base comes along and is not the agent's; the
// same path changed by the agent is refused. readHandOver lets a protected
// path through only when a merge parent is named (prepare then checks it
// against that commit).
func TestProtectedPathsFromTheMergedBase(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	write(t, dir, map[string]string{"a.txt": "a\n", ".github/workflows/ci.yml": "v1\n", ".github/bazinga.yml": "x: 1\n"})
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-q", "-m", "base")
	runGit(t, dir, "checkout", "-q", "-b", "group")
	write(t, dir, map[string]string{"a.txt": "group\n"})
	runGit(t, dir, "commit", "-q", "-am", "group work")
	start := runGit(t, dir, "rev-parse", "HEAD")
	runGit(t, dir, "checkout", "-q", "main")
	write(t, dir, map[string]string{".github/workflows/ci.yml": "v2\n", ".github/bazinga.yml": "x: 2\n"})
	runGit(t, dir, "commit", "-q", "-am", "maintainer")
	base := runGit(t, dir, "rev-parse", "HEAD")
	runGit(t, dir, "checkout", "-q", "group")
	runGit(t, dir, "merge", "-q", "--no-edit", "main")
	merged := runGit(t, dir, "rev-parse", "HEAD")
	repo, err := gitops.OpenWorktree(dir)
	require.NoError(t, err)
	policy := gitops.PathPolicy{}

	r := &recorder{policy: policy}
	require.NoError(t, r.Change(context.Background(), stepexec.Change{Repo: repo, Start: plumbing.NewHash(start), Head: plumbing.NewHash(merged), MergeParent: plumbing.NewHash(base)}))
	var paths []string
	for _, f := range r.commit.Files {
		paths = append(paths, f.Path)
	}
	assert.Equal(t, []string{".github/bazinga.yml", ".github/workflows/ci.yml"}, paths, "the base's changes come along")

	// The agent changes the workflow on top: refused, even with a merge.
	write(t, dir, map[string]string{".github/workflows/ci.yml": "pwned\n"})
	runGit(t, dir, "commit", "-q", "-am", "agent")
	head := runGit(t, dir, "rev-parse", "HEAD")
	r = &recorder{policy: policy}
	err = r.Change(context.Background(), stepexec.Change{Repo: repo, Start: plumbing.NewHash(start), Head: plumbing.NewHash(head), MergeParent: plumbing.NewHash(base)})
	assert.True(t, errors.Is(err, gitops.ErrWorkflowChange), "%v", err)
	// Without a merge the base's content is no excuse either.
	r = &recorder{policy: policy}
	err = r.Change(context.Background(), stepexec.Change{Repo: repo, Start: plumbing.NewHash(start), Head: plumbing.NewHash(merged)})
	assert.Error(t, err)

	// The privileged side: a protected path passes readHandOver only with a merge parent.
	ho := t.TempDir()
	data := []byte("v2\n")
	h := HandOver{Step: "1/A/developer/2", Command: CommandAgent, Outcome: OutcomeResult,
		Commit: &HandOverCommit{Tree: strings.Repeat("a", 40), Files: []HandOverFile{{Path: ".github/workflows/ci.yml", Mode: "file", Size: 3, Blob: gitops.BlobHash(data).String()}}}}
	content := func(int) ([]byte, error) { return data, nil }
	require.NoError(t, writeHandOver(ho, withResult(h), content))
	_, _, err = readHandOver(ho, policy)
	assert.ErrorContains(t, err, "changes under .github/workflows/ are not allowed")
	h.Commit.MergeParent = base
	require.NoError(t, writeHandOver(ho, withResult(h), content))
	_, files, err := readHandOver(ho, policy)
	require.NoError(t, err)
	require.Len(t, files, 1)
	// …where prepare holds it to the merge parent's content.
	same, err := gitops.SameAs(repo, plumbing.NewHash(base), gitops.Change{Path: files[0].Path, Mode: files[0].Mode, Blob: gitops.BlobHash(files[0].Data)})
	require.NoError(t, err)
	assert.True(t, same)
	same, err = gitops.SameAs(repo, plumbing.NewHash(base), gitops.Change{Path: files[0].Path, Mode: files[0].Mode, Blob: gitops.BlobHash([]byte("pwned\n"))})
	require.NoError(t, err)
	assert.False(t, same)
}

func withResult(h HandOver) HandOver {
	h.Result = &codecResult
	return h
}

var codecResult = func() codec.ResultRecord {
	return codec.ResultRecord{Step: "1/A/developer/2", Role: pipeline.RoleDeveloper, Group: "A", Result: pipeline.Result{Status: pipeline.StatusReadyForQA}}
}()
