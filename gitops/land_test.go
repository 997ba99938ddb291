package gitops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/testgate"
)

// remoteFixture is a bare "remote" with main and a group branch, plus a
// working clone used to make commits with the git CLI.
type remoteFixture struct {
	bare, work string
}

func newRemote(t *testing.T) *remoteFixture {
	t.Helper()
	requireGit(t)
	f := &remoteFixture{bare: filepath.Join(t.TempDir(), "remote.git"), work: t.TempDir()}
	runGit(t, t.TempDir(), "init", "-q", "--bare", "-b", "main", f.bare)
	runGit(t, f.work, "clone", "-q", f.bare, ".")
	runGit(t, f.work, "checkout", "-q", "-b", "main")
	writeFiles(t, f.work, map[string]string{"a.txt": "one\ntwo\nthree\n", "b.txt": "b\n"})
	commitAll(t, f.work, "base")
	runGit(t, f.work, "push", "-q", "origin", "main")
	return f
}

// commitOn commits files on branch (created from main when new) and pushes.
func (f *remoteFixture) commitOn(t *testing.T, branch string, files map[string]string) string {
	t.Helper()
	runGit(t, f.work, "fetch", "-q", "origin")
	if _, code, _ := runGitCode(t, f.work, "rev-parse", "--verify", "-q", "origin/"+branch); code == 0 {
		runGit(t, f.work, "checkout", "-q", "-B", branch, "origin/"+branch)
	} else {
		runGit(t, f.work, "checkout", "-q", "-B", branch, "origin/main")
	}
	writeFiles(t, f.work, files)
	h := commitAll(t, f.work, "change on "+branch)
	runGit(t, f.work, "push", "-q", "origin", branch)
	return h
}

func (f *remoteFixture) head(t *testing.T, branch string) string {
	t.Helper()
	return strings.TrimSpace(runGit(t, f.bare, "rev-parse", branch))
}

func TestLandOutcomes(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(t *testing.T, f *remoteFixture)
		gate      string
		allowWF   bool
		overHTTP  bool
		want      LandOutcome
		newCommit bool
		check     func(t *testing.T, f *remoteFixture, res LandResult)
	}{
		{
			name: "clean merge passes the gate and lands",
			setup: func(t *testing.T, f *remoteFixture) {
				f.commitOn(t, "bazinga/s1-A", map[string]string{"a.txt": "one\ntwo\nthree\nfour\n"})
				f.commitOn(t, "main", map[string]string{"a.txt": "zero\none\ntwo\nthree\n"})
			},
			gate: "grep -q zero a.txt && grep -q four a.txt", want: MergeSuccess, newCommit: true,
			check: func(t *testing.T, f *remoteFixture, res LandResult) {
				assert.Equal(t, "zero\none\ntwo\nthree\nfour\n", runGit(t, f.bare, "show", "main:a.txt"))
				parents := strings.Fields(runGit(t, f.bare, "log", "-1", "--format=%P", "main"))
				assert.Len(t, parents, 2)
				assert.Equal(t, testgate.GatePass, res.Gate.Outcome)
				assert.Contains(t, runGit(t, f.bare, "log", "-1", "--format=%cn", "main"), "bazinga[bot]")
			},
		},
		{
			name: "base is an ancestor: still a merge commit (--no-ff)",
			setup: func(t *testing.T, f *remoteFixture) {
				f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
			},
			want: MergeSuccess, newCommit: true,
			check: func(t *testing.T, f *remoteFixture, res LandResult) {
				parents := strings.Fields(runGit(t, f.bare, "log", "-1", "--format=%P", "main"))
				assert.Len(t, parents, 2)
				assert.Equal(t, "no test command configured", res.Gate.Note)
			},
		},
		{
			name: "conflict",
			setup: func(t *testing.T, f *remoteFixture) {
				f.commitOn(t, "bazinga/s1-A", map[string]string{"a.txt": "one\nTWO-group\nthree\n"})
				f.commitOn(t, "main", map[string]string{"a.txt": "one\nTWO-base\nthree\n"})
			},
			want: MergeConflict,
			check: func(t *testing.T, f *remoteFixture, res LandResult) {
				assert.Equal(t, []string{"a.txt"}, res.Conflicts)
			},
		},
		{
			name: "failing tests are not pushed",
			setup: func(t *testing.T, f *remoteFixture) {
				f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
			},
			gate: "echo boom; exit 3", want: MergeTestFailure,
			check: func(t *testing.T, f *remoteFixture, res LandResult) {
				assert.Equal(t, testgate.GateFail, res.Gate.Outcome)
				assert.Equal(t, 3, res.Gate.ExitCode)
				assert.Contains(t, res.Reason, "boom")
			},
		},
		{
			name: "already merged: success without a commit",
			setup: func(t *testing.T, f *remoteFixture) {
				f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
				runGit(t, f.work, "push", "-q", "origin", "bazinga/s1-A:main")
			},
			want: MergeSuccess,
			check: func(t *testing.T, f *remoteFixture, res LandResult) {
				assert.True(t, res.AlreadyMerged)
				assert.True(t, res.Commit.IsZero())
			},
		},
		{
			name: "protected base: a pre-receive hook refuses",
			setup: func(t *testing.T, f *remoteFixture) {
				f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
				hook := filepath.Join(f.bare, "hooks", "pre-receive")
				require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\necho 'main is protected' >&2\nexit 1\n"), 0o755))
			},
			overHTTP: true, // hooks run in git's receive-pack, as on a real server
			want:     MergeBlocked,
			check: func(t *testing.T, f *remoteFixture, res LandResult) {
				assert.Contains(t, res.Reason, "refused")
			},
		},
		{
			name: "workflow changes are refused",
			setup: func(t *testing.T, f *remoteFixture) {
				f.commitOn(t, "bazinga/s1-A", map[string]string{".github/workflows/ci.yml": "on: push\n"})
			},
			want: MergeBlocked,
			check: func(t *testing.T, f *remoteFixture, res LandResult) {
				assert.Contains(t, res.Reason, ".github/workflows/ci.yml")
			},
		},
		{
			name: "workflow changes allowed by configuration",
			setup: func(t *testing.T, f *remoteFixture) {
				f.commitOn(t, "bazinga/s1-A", map[string]string{".github/workflows/ci.yml": "on: push\n"})
			},
			allowWF: true, want: MergeSuccess, newCommit: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newRemote(t)
			tc.setup(t, f)
			before := f.head(t, "main")
			url := f.bare
			if tc.overHTTP {
				url = serveGitHTTP(t, f.bare)
			}
			res, err := Land(context.Background(), LandRequest{
				Remote: Remote{URL: url}, Base: "main", Branch: "bazinga/s1-A",
				Gate:   testgate.GateConfig{Command: tc.gate, Timeout: time.Minute},
				Author: Identity{Name: "Dev", Email: "dev@example.com"}, StepID: "s1/A/merge/1",
				AllowWorkflowChanges: tc.allowWF,
			})
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Outcome, res.Reason)
			after := f.head(t, "main")
			if tc.newCommit {
				assert.Equal(t, res.Commit.String(), after)
				assert.NotEqual(t, before, after)
			} else {
				assert.Equal(t, before, after, "base must not move")
			}
			if tc.check != nil {
				tc.check(t, f, res)
			}
		})
	}
}

// The base moves while the gate runs: the push is refused as not a fast
// forward, and landing merges and tests again.
func TestLandRetriesWhenBaseMoves(t *testing.T) {
	f := newRemote(t)
	f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
	mark := filepath.Join(t.TempDir(), "moved")
	other := t.TempDir()
	runGit(t, other, "clone", "-q", f.bare, ".")
	gate := fmt.Sprintf(`if [ ! -f %[1]s ]; then touch %[1]s; cd %[2]s && echo moved > d.txt && git add d.txt && `+
		`git -c user.name=x -c user.email=x@example.com commit -qm moved && git push -q origin HEAD:main; fi`, mark, other)
	res, err := Land(context.Background(), LandRequest{
		Remote: Remote{URL: f.bare}, Base: "main", Branch: "bazinga/s1-A", Gate: testgate.GateConfig{Command: gate, Timeout: time.Minute},
	})
	require.NoError(t, err)
	assert.Equal(t, MergeSuccess, res.Outcome, res.Reason)
	assert.Equal(t, 2, res.Attempts)
	assert.Equal(t, "moved\n", runGit(t, f.bare, "show", "main:d.txt"))
	assert.Equal(t, "new\n", runGit(t, f.bare, "show", "main:c.txt"))
}

func TestLandBadInput(t *testing.T) {
	f := newRemote(t)
	_, err := Land(context.Background(), LandRequest{Remote: Remote{URL: f.bare}, Base: "main", Branch: "bazinga/missing"})
	require.ErrorIs(t, err, ErrBranchNotFound)
	_, err = Land(context.Background(), LandRequest{Remote: Remote{URL: f.bare}, Base: "main"})
	require.Error(t, err)

	// Unrelated histories.
	runGit(t, f.work, "checkout", "-q", "--orphan", "bazinga/s1-U")
	writeFiles(t, f.work, map[string]string{"z.txt": "z\n"})
	commitAll(t, f.work, "orphan")
	runGit(t, f.work, "push", "-q", "origin", "bazinga/s1-U")
	before := f.head(t, "main")
	_, err = Land(context.Background(), LandRequest{Remote: Remote{URL: f.bare}, Base: "main", Branch: "bazinga/s1-U"})
	require.ErrorIs(t, err, ErrUnrelatedHistories)
	assert.Equal(t, before, f.head(t, "main"))
}

// A remote that accepts connections and never answers must not hang us.
func TestRemoteThatHangsTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = Clone(ctx, Remote{URL: "http://" + ln.Addr().String() + "/repo.git", Token: "s3cr3t-token"}, filepath.Join(t.TempDir(), "c"), CloneOptions{})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.NotContains(t, err.Error(), "s3cr3t-token")
	_, err = Land(ctx, LandRequest{Remote: Remote{URL: "http://" + ln.Addr().String() + "/repo.git"}, Base: "main", Branch: "x"})
	require.Error(t, err)
}

func TestWorkingCopyCommitPushAndMergeBase(t *testing.T) {
	f := newRemote(t)
	ctx := context.Background()
	branch := pipeline.BranchName("s1", "A")
	assert.Equal(t, "bazinga/s1-A", branch)

	dir := filepath.Join(t.TempDir(), "wc")
	repo, err := PrepareWorkingCopy(ctx, Remote{URL: f.bare}, "main", branch, dir)
	require.NoError(t, err)
	assert.Equal(t, f.head(t, "main"), f.head(t, branch), "branch created from the base")

	_, err = CommitAll(repo, CommitOptions{StepID: "s1/A/developer/1"})
	require.ErrorIs(t, err, ErrNothingToCommit)

	writeFiles(t, dir, map[string]string{"a.txt": "one\ntwo\nthree\nmine\n", "b.txt": "\x00rm", "n/new.txt": "x\n"})
	h, err := CommitAll(repo, CommitOptions{Author: Identity{Name: "Dev", Email: "dev@example.com"}, Message: "Add mine", StepID: "s1/A/developer/1"})
	require.NoError(t, err)
	c, err := repo.CommitObject(h)
	require.NoError(t, err)
	assert.Equal(t, "Dev", c.Author.Name)
	assert.Equal(t, BotIdentity.Name, c.Committer.Name)
	assert.Contains(t, c.Message, "\n\nBazinga-Step: s1/A/developer/1\n")
	require.NoError(t, Push(ctx, repo, Remote{URL: f.bare}, "main", branch, PushOptions{}))
	assert.Equal(t, h.String(), f.head(t, branch))

	merged, err := IsMerged(repo, h, plumbing.NewHash(f.head(t, "main")))
	require.NoError(t, err)
	assert.False(t, merged)

	// Workflow protection on a step's push.
	writeFiles(t, dir, map[string]string{".github/workflows/x.yml": "x\n", ".github/workflows/y.yml": "y\n"})
	_, err = CommitAll(repo, CommitOptions{StepID: "s1/A/developer/2"})
	require.NoError(t, err)
	err = Push(ctx, repo, Remote{URL: f.bare}, "main", branch, PushOptions{})
	require.ErrorIs(t, err, ErrWorkflowChange)
	assert.Contains(t, err.Error(), ".github/workflows/x.yml, .github/workflows/y.yml")
	assert.Equal(t, h.String(), f.head(t, branch), "nothing pushed")
	require.NoError(t, Push(ctx, repo, Remote{URL: f.bare}, "main", branch, PushOptions{AllowWorkflowChanges: true}))

	// The base changes the same line: merging it in leaves markers.
	f.commitOn(t, "main", map[string]string{"a.txt": "one\ntwo\nthree\nbase\n"})
	writeFiles(t, dir, map[string]string{"dirty.txt": "x\n"})
	_, err = MergeRemoteIntoWorkingCopy(ctx, repo, Remote{URL: f.bare}, "main", Identity{})
	require.ErrorIs(t, err, ErrDirtyWorkingCopy)
	require.NoError(t, os.Remove(filepath.Join(dir, "dirty.txt")))

	wm, err := MergeRemoteIntoWorkingCopy(ctx, repo, Remote{URL: f.bare}, "main", Identity{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt"}, wm.Conflicts)
	data, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\nthree\n<<<<<<< bazinga/s1-A\nmine\n=======\nbase\n>>>>>>> main\n", string(data))
	writeFiles(t, dir, map[string]string{"a.txt": "one\ntwo\nthree\nmine\nbase\n"})
	mh, err := CommitAll(repo, CommitOptions{StepID: "s1/A/developer/3", MergeParent: wm.Theirs})
	require.NoError(t, err)
	mc, err := repo.CommitObject(mh)
	require.NoError(t, err)
	assert.Len(t, mc.ParentHashes, 2)
	merged, err = IsMerged(repo, wm.Theirs, mh)
	require.NoError(t, err)
	assert.True(t, merged)
}

func TestThreeWayMergeBadInput(t *testing.T) {
	requireGit(t)
	dir := initRepo(t)
	writeFiles(t, dir, map[string]string{"a.txt": "a\n"})
	a := commitAll(t, dir, "a")
	runGit(t, dir, "checkout", "-q", "--orphan", "other")
	writeFiles(t, dir, map[string]string{"b.txt": "b\n"})
	b := commitAll(t, dir, "b")
	repo, err := git.PlainOpen(dir)
	require.NoError(t, err)

	_, err = ThreeWayMergeWith(repo, plumbing.NewHash(a), plumbing.NewHash(b), MergeOptions{})
	require.ErrorIs(t, err, ErrUnrelatedHistories)
	_, err = ThreeWayMergeWith(repo, plumbing.NewHash(a), plumbing.NewHash(strings.Repeat("1", 40)), MergeOptions{})
	require.ErrorIs(t, err, plumbing.ErrObjectNotFound)
	_, err = ThreeWayMergeWith(nil, plumbing.ZeroHash, plumbing.ZeroHash, MergeOptions{})
	require.Error(t, err)

	// A corrupt object: overwrite the loose blob of a.txt with garbage.
	runGit(t, dir, "checkout", "-q", "main")
	writeFiles(t, dir, map[string]string{"a.txt": "a\nours\n"})
	o := commitAll(t, dir, "ours")
	runGit(t, dir, "checkout", "-q", "-b", "theirs", a)
	writeFiles(t, dir, map[string]string{"a.txt": "theirs\na\n"})
	th := commitAll(t, dir, "theirs")
	blob := strings.TrimSpace(runGit(t, dir, "rev-parse", th+":a.txt"))
	obj := filepath.Join(dir, ".git", "objects", blob[:2], blob[2:])
	require.NoError(t, os.Chmod(obj, 0o644))
	require.NoError(t, os.WriteFile(obj, []byte("not zlib at all"), 0o644))
	repo, err = git.PlainOpen(dir)
	require.NoError(t, err)
	_, err = ThreeWayMergeWith(repo, plumbing.NewHash(o), plumbing.NewHash(th), MergeOptions{})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), blob) || errors.Is(err, plumbing.ErrObjectNotFound), err.Error())
}

// serveGitHTTP serves a bare repository over git's smart HTTP protocol with
// git http-backend (the test's oracle server), so pushes run its hooks.
func serveGitHTTP(t *testing.T, bare string) string {
	t.Helper()
	runGit(t, bare, "config", "http.receivepack", "true")
	gitPath, err := exec.LookPath("git")
	require.NoError(t, err)
	h := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + filepath.Dir(bare), "GIT_HTTP_EXPORT_ALL=1"},
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/" + filepath.Base(bare)
}

func TestLandFinishReplacesThePush(t *testing.T) {
	f := newRemote(t)
	f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
	before := f.head(t, "main")
	branchHead := f.head(t, "bazinga/s1-A")
	calls := 0
	finish := func(_ context.Context, base, branch plumbing.Hash) (FinishResult, error) {
		calls++
		assert.Equal(t, before, base.String(), "the tested base")
		assert.Equal(t, branchHead, branch.String(), "the tested branch head")
		if calls == 1 {
			return FinishResult{Retry: true}, nil // e.g. the base moved before the API merge
		}
		return FinishResult{Outcome: MergeSuccess, Commit: plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")}, nil
	}
	res, err := Land(context.Background(), LandRequest{Remote: Remote{URL: f.bare}, Base: "main", Branch: "bazinga/s1-A",
		Gate: testgate.GateConfig{Command: "test -f c.txt", Timeout: time.Minute}, Finish: finish})
	require.NoError(t, err)
	assert.Equal(t, MergeSuccess, res.Outcome)
	assert.Equal(t, 2, calls)
	assert.Equal(t, 2, res.Attempts)
	assert.Equal(t, "0123456789abcdef0123456789abcdef01234567", res.Commit.String())
	assert.Equal(t, before, f.head(t, "main"), "nothing was pushed")

	// A failing gate never reaches Finish.
	calls = 0
	res, err = Land(context.Background(), LandRequest{Remote: Remote{URL: f.bare}, Base: "main", Branch: "bazinga/s1-A",
		Gate: testgate.GateConfig{Command: "exit 1", Timeout: time.Minute}, Finish: finish})
	require.NoError(t, err)
	assert.Equal(t, MergeTestFailure, res.Outcome)
	assert.Zero(t, calls)
}
