package ghfake

import (
	"bytes"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func tokenAuth(tok string) *githttp.BasicAuth {
	return &githttp.BasicAuth{Username: "x-access-token", Password: tok}
}

// commitFile writes and commits a file in a go-git working copy.
func commitFile(t *testing.T, repo *git.Repository, name, content string) plumbing.Hash {
	t.Helper()
	wt, err := repo.Worktree()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(wt.Filesystem.Root(), name), []byte(content), 0o644))
	_, err = wt.Add(name)
	require.NoError(t, err)
	h, err := wt.Commit("add "+name, &git.CommitOptions{Author: &object.Signature{Name: "bot", Email: "bot@example.com", When: time.Unix(1700000000, 0)}})
	require.NoError(t, err)
	return h
}

func TestGoGitCloneAndPush(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()

	// Private: no or bad credentials are refused.
	_, err := git.PlainClone(filepath.Join(dir, "anon"), false, &git.CloneOptions{URL: e.repo.CloneURL()})
	assert.True(t, errors.Is(err, transport.ErrAuthenticationRequired), "%v", err)
	_, err = git.PlainClone(filepath.Join(dir, "bad"), false, &git.CloneOptions{URL: e.repo.CloneURL(), Auth: tokenAuth("ghp_wrong")})
	assert.Error(t, err)

	wc, err := git.PlainClone(filepath.Join(dir, "wc"), false, &git.CloneOptions{URL: e.repo.CloneURL(), Auth: tokenAuth(botTok)})
	require.NoError(t, err)
	head, err := wc.Head()
	require.NoError(t, err)
	main, _ := e.repo.Ref("refs/heads/main")
	assert.Equal(t, main, head.Hash().String())

	// Push a new branch, open a PR on it, push again: synchronize.
	c1 := commitFile(t, wc, "g1.txt", "one\n")
	push := func(refspec string, progress bool) error {
		opts := &git.PushOptions{Auth: tokenAuth(botTok), RefSpecs: []config.RefSpec{config.RefSpec(refspec)}}
		if progress {
			opts.Progress = &bytes.Buffer{} // asks for side-band
		}
		return wc.Push(opts)
	}
	require.NoError(t, push("refs/heads/main:refs/heads/bazinga/g1", false))
	sha, ok := e.repo.Ref("refs/heads/bazinga/g1")
	require.True(t, ok)
	assert.Equal(t, c1.String(), sha)
	assert.Contains(t, e.hook.kinds(), "push")

	pr, err := e.repo.CreatePR("bazinga[bot]", "bazinga/g1", "main", "G1", "", true)
	require.NoError(t, err)
	e.hook.reset()
	c2 := commitFile(t, wc, "g1b.txt", "two\n")
	require.NoError(t, push("refs/heads/main:refs/heads/bazinga/g1", true))
	assert.Equal(t, c2.String(), e.repo.PR(pr).GetHead().GetSHA())
	assert.Equal(t, []string{"push", "pull_request.synchronize"}, e.hook.kinds())
	sync := e.hook.all()[1].payload.(*github.PullRequestEvent)
	assert.Equal(t, c1.String(), sync.GetBefore())
	assert.Equal(t, c2.String(), sync.GetAfter())
	pe := e.hook.all()[0].payload.(*github.PushEvent)
	assert.Equal(t, "refs/heads/bazinga/g1", pe.GetRef())
	require.Len(t, pe.Commits, 1)
	assert.Equal(t, "add g1b.txt", pe.GetHeadCommit().GetMessage())

	// Protected branch: refused, with and without side-band.
	require.NoError(t, e.f.ProtectBranch(full, "main"))
	for _, progress := range []bool{false, true} {
		err = push("refs/heads/main:refs/heads/main", progress)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "protected branch hook declined")
	}
	after, _ := e.repo.Ref("refs/heads/main")
	assert.Equal(t, main, after, "the protected branch did not move")

	// Fetch sees what the API did.
	require.NoError(t, e.createRef(t, "refs/heads/api-made", main))
	err = wc.Fetch(&git.FetchOptions{Auth: tokenAuth(botTok), RefSpecs: []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*"}})
	require.NoError(t, err)
	ref, err := wc.Reference("refs/remotes/origin/api-made", true)
	require.NoError(t, err)
	assert.Equal(t, main, ref.Hash().String())

	// Push permissions: a read-only user can clone but not push.
	e.f.AddToken("ghp_reader", "reader", User)
	e.f.SetPermission("reader", "read")
	err = wc.Push(&git.PushOptions{Auth: tokenAuth("ghp_reader"), RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/reader"}})
	require.Error(t, err)
	_, ok = e.repo.Ref("refs/heads/reader")
	assert.False(t, ok)

	gc := e.f.GitCalls()
	require.NotEmpty(t, gc)
	assert.True(t, gc[0].Git)
}

func TestGitCLIPush(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	e := newEnv(t)
	u, err := url.Parse(e.repo.CloneURL())
	require.NoError(t, err)
	u.User = url.UserPassword("x-access-token", botTok)
	dir := t.TempDir()
	run := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(e.f.gitEnv(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("clone", "-q", u.String(), "wc")
	require.NoError(t, err, out)
	dir = filepath.Join(dir, "wc")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.txt"), []byte("hi\n"), 0o644))
	_, err = run("add", ".")
	require.NoError(t, err)
	out, err = run("commit", "-q", "-m", "cli commit")
	require.NoError(t, err, out)
	out, err = run("push", "-q", "origin", "refs/heads/main:refs/heads/cli")
	require.NoError(t, err, out)
	local, _ := run("rev-parse", "HEAD")
	remote, ok := e.repo.Ref("refs/heads/cli")
	require.True(t, ok)
	assert.Equal(t, strings.TrimSpace(local), remote)

	require.NoError(t, e.f.ProtectBranch(full, "main"))
	out, err = run("push", "origin", "HEAD:main")
	require.Error(t, err)
	assert.Contains(t, out, "protected branch hook declined")
	assert.Contains(t, out, "GH006: Protected branch update failed for refs/heads/main.")
}

func TestGitFaults(t *testing.T) {
	f := Start(t, Options{FaultsCountGit: true})
	r, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	_, err = r.Push("alice", "main", map[string]string{"a": "a\n"}, "first")
	require.NoError(t, err)
	f.AddToken(botTok, f.BotLogin(), Bot)
	f.FailCall(1, Fault{Kind: Fault502})
	dir := t.TempDir()
	_, err = git.PlainClone(filepath.Join(dir, "a"), false, &git.CloneOptions{URL: r.CloneURL(), Auth: tokenAuth(botTok)})
	require.Error(t, err)
	_, err = git.PlainClone(filepath.Join(dir, "b"), false, &git.CloneOptions{URL: r.CloneURL(), Auth: tokenAuth(botTok)})
	require.NoError(t, err)
	gc := f.GitCalls()
	require.NotEmpty(t, gc)
	assert.Equal(t, Fault502, gc[0].Fault)
}

// A push that creates or changes a workflow file needs the workflows
// permission: a workflow's GITHUB_TOKEN never has it, an App's installation
// token only when granted (issue 22).
func TestPushOfWorkflowFilesNeedsWorkflowsPermission(t *testing.T) {
	e := newEnv(t)
	e.f.AddToken("ghs_actions", ActionsLogin, Bot)
	e.f.AddTokenWithPermissions("ghs_app", "bazinga[bot]", Bot, map[string]string{"contents": "write"})
	e.f.AddTokenWithPermissions("ghs_app_wf", "bazinga[bot]", Bot, map[string]string{"contents": "write", "workflows": "write"})
	w := e.clone(t)
	w.commit("notes.txt", "n")
	err, progress := w.push("ghs_actions", "refs/heads/main:refs/heads/plain")
	require.NoError(t, err, progress)
	require.NoError(t, os.MkdirAll(filepath.Join(w.dir, ".github", "workflows"), 0o755))
	w.commit(".github/workflows/ci.yml", "on: push\n")
	for _, tok := range []string{"ghs_actions", "ghs_app"} {
		err, progress = w.push(tok, "refs/heads/main:refs/heads/wf-"+tok)
		require.Error(t, err, tok)
		assert.Contains(t, progress+err.Error(), "without `workflows` permission", tok)
		_, ok := e.repo.Ref("refs/heads/wf-" + tok)
		assert.False(t, ok, "%s: nothing was pushed", tok)
	}
	err, progress = w.push("ghs_app_wf", "refs/heads/main:refs/heads/wf-granted")
	require.NoError(t, err, progress)
	// Commits already in the repository are not the push's: the token may
	// push a branch at them.
	err, progress = w.push("ghs_actions", "refs/heads/main:refs/heads/same-commit")
	require.NoError(t, err, progress)
}
