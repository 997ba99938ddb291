package gitops

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/testgate"
)

// gitServer serves the bare repositories of one directory over git's smart
// HTTP protocol (git http-backend, as a real server would), optionally
// behind basic auth, and records every request it gets.
type gitServer struct {
	URL  string
	mu   sync.Mutex
	reqs []recordedRequest
}

type recordedRequest struct {
	Method, Path, Auth string
}

func (s *gitServer) requests() []recordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recordedRequest(nil), s.reqs...)
}

func newGitServer(t *testing.T, root, token string) *gitServer {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	require.NoError(t, err)
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root},
	}
	s := &gitServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, recordedRequest{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization")})
		s.mu.Unlock()
		if token != "" {
			if u, p, ok := r.BasicAuth(); !ok || u != "x-access-token" || p != token {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// historyFixture is a bare remote whose main has grown well past the
// point where the group branch left it: the merge base is deep in history.
type historyFixture struct {
	*remoteFixture
	branch string
	url    string
	server *gitServer
}

func newHistoryFixture(t *testing.T, token string, baseCommits, branchCommits int) *historyFixture {
	t.Helper()
	f := newRemote(t)
	runGit(t, f.bare, "config", "http.receivepack", "true")
	h := &historyFixture{remoteFixture: f, branch: "bazinga/s1-A"}
	// git fast-import writes the whole history in one process.
	var s strings.Builder
	when := 1700000000
	mark := 0
	commit := func(ref, from, msg string, files map[string]string) string {
		mark++
		when += 60
		fmt.Fprintf(&s, "commit %s\nmark :%d\ncommitter T <t@example.com> %d +0000\ndata %d\n%s\n", ref, mark, when, len(msg), msg)
		if from != "" {
			fmt.Fprintf(&s, "from %s\n", from)
		}
		paths := make([]string, 0, len(files))
		for p := range files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			fmt.Fprintf(&s, "M 100644 inline %s\ndata %d\n%s\n", p, len(files[p]), files[p])
		}
		return ":" + strconv.Itoa(mark)
	}
	var hist strings.Builder
	from := f.head(t, "main")
	for i := 1; i <= 150; i++ { // history below the fork, which no merge needs
		fmt.Fprintf(&hist, "base %d\n", i)
		from = commit("refs/heads/main", from, fmt.Sprintf("base %d", i), map[string]string{"history.txt": hist.String()})
	}
	fork := from
	fmt.Fprintf(&s, "reset refs/tags/v1\nfrom %s\n\n", fork)
	commit("refs/heads/other", fork, "other", map[string]string{"other.txt": "other\n"})
	var group strings.Builder
	from = fork
	for i := 1; i <= branchCommits; i++ {
		fmt.Fprintf(&group, "group %d\n", i)
		from = commit("refs/heads/"+h.branch, from, fmt.Sprintf("group %d", i), map[string]string{"group.txt": group.String()})
	}
	commit("refs/heads/"+h.branch, from, "group edits a", map[string]string{"a.txt": "group edit\n"})
	var later strings.Builder
	from = fork
	for i := 1; i <= baseCommits; i++ {
		fmt.Fprintf(&later, "later %d\n", i)
		from = commit("refs/heads/main", from, fmt.Sprintf("later %d", i), map[string]string{"later.txt": later.String()})
	}
	commit("refs/heads/main", from, "base edits b", map[string]string{"b.txt": "one\ntwo\nthree\nbase edit\n"})
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = f.bare
	cmd.Env = gitEnv(f.bare)
	cmd.Stdin = strings.NewReader(s.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	h.server = newGitServer(t, filepath.Dir(f.bare), token)
	h.url = h.server.URL + "/" + filepath.Base(f.bare)
	return h
}

// localRefs lists a working copy's refs with the git CLI.
func localRefs(t *testing.T, dir string) []string {
	out := strings.Fields(runGit(t, dir, "for-each-ref", "--format=%(refname)"))
	sort.Strings(out)
	return out
}

// A step's working copy over HTTP is the branch and the base, one commit
// deep, without tags or other branches; a merge of the base deepens it just
// enough and merges exactly as git does; the push sends a complete set of
// objects.
func TestShallowWorkingCopyOverHTTP(t *testing.T) {
	f := newHistoryFixture(t, "s3cr3t", 40, 5)
	ctx := context.Background()
	remote := Remote{URL: f.url, Token: "s3cr3t"}
	dir := filepath.Join(t.TempDir(), "wc")
	repo, err := PrepareWorkingCopy(ctx, remote, "main", f.branch, dir)
	require.NoError(t, err)

	assert.Equal(t, []string{"refs/heads/" + f.branch, "refs/remotes/origin/" + f.branch, "refs/remotes/origin/main"}, localRefs(t, dir))
	assert.Equal(t, "1\n", runGit(t, dir, "rev-list", "--count", "HEAD"), "one commit deep")
	assert.Equal(t, "1\n", runGit(t, dir, "rev-list", "--count", "origin/main"))
	assert.Equal(t, "true\n", runGit(t, dir, "rev-parse", "--is-shallow-repository"))
	assert.Equal(t, "group edit\n", readFile(t, filepath.Join(dir, "a.txt")))
	assert.Empty(t, runGit(t, dir, "status", "--porcelain"), "the checkout matches HEAD")

	// Without more history there is no merge base to merge with.
	old := historyDepthLimit
	historyDepthLimit = 1
	_, err = MergeRemoteIntoWorkingCopy(ctx, repo, remote, "main", Identity{})
	historyDepthLimit = old
	require.ErrorIs(t, err, ErrShallowHistory)

	wm, err := MergeRemoteIntoWorkingCopy(ctx, repo, remote, "main", Identity{Name: "Dev", Email: "dev@example.com"})
	require.NoError(t, err)
	require.Empty(t, wm.Conflicts)
	require.False(t, wm.Commit.IsZero())
	wantTree, clean, _ := gitMergeTree(t, f.bare, f.head(t, f.branch), f.head(t, "main"))
	require.True(t, clean)
	assert.Equal(t, wantTree+"\n", runGit(t, dir, "rev-parse", "HEAD^{tree}"), "same merge as git")
	depth, err := strconv.Atoi(strings.TrimSpace(runGit(t, dir, "rev-list", "--count", "origin/main")))
	require.NoError(t, err)
	total, err := strconv.Atoi(strings.TrimSpace(runGit(t, f.bare, "rev-list", "--count", "main")))
	require.NoError(t, err)
	assert.Less(t, depth, total, "deepened as far as the merge base, not the whole history")
	assert.Greater(t, depth, 40, "deep enough to reach the merge base")
	assert.Empty(t, runGit(t, dir, "status", "--porcelain"))

	require.NoError(t, Push(ctx, repo, remote, "main", f.branch, PushOptions{}))
	assert.Equal(t, wm.Commit.String(), f.head(t, f.branch))
	runGit(t, f.bare, "fsck", "--no-progress", "--connectivity-only")
	for _, r := range f.server.requests() {
		assert.NotEmpty(t, r.Auth, "%s %s", r.Method, r.Path)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// Landing over HTTP fetches the two branches only, deepens to the merge
// base, merges as git does and pushes a commit the remote can read whole.
func TestLandOverHTTPDeepensToTheMergeBase(t *testing.T) {
	f := newHistoryFixture(t, "", 60, 12)
	wantTree, clean, _ := gitMergeTree(t, f.bare, f.head(t, "main"), f.head(t, f.branch))
	require.True(t, clean)
	before := f.head(t, "main")
	res, err := Land(context.Background(), LandRequest{Remote: Remote{URL: f.url}, Base: "main", Branch: f.branch,
		Gate: testgate.GateConfig{Command: "test -f group.txt && test -f later.txt", Timeout: time.Minute}})
	require.NoError(t, err)
	require.Equal(t, MergeSuccess, res.Outcome, res.Reason)
	assert.Equal(t, wantTree+"\n", runGit(t, f.bare, "rev-parse", "main^{tree}"))
	assert.Equal(t, before+" "+f.head(t, f.branch)+"\n", runGit(t, f.bare, "log", "-1", "--format=%P", "main"))
	runGit(t, f.bare, "fsck", "--no-progress")

	// Landed: a second landing finds it merged.
	res, err = Land(context.Background(), LandRequest{Remote: Remote{URL: f.url}, Base: "main", Branch: f.branch})
	require.NoError(t, err)
	assert.True(t, res.AlreadyMerged)
}

// Past the depth bound, the error says so instead of fetching everything.
func TestDeepeningStopsAtTheBound(t *testing.T) {
	f := newHistoryFixture(t, "", 60, 3)
	old := historyDepthLimit
	historyDepthLimit = 16
	t.Cleanup(func() { historyDepthLimit = old })
	_, err := Land(context.Background(), LandRequest{Remote: Remote{URL: f.url}, Base: "main", Branch: f.branch})
	require.ErrorIs(t, err, ErrShallowHistory)
	assert.Contains(t, err.Error(), "within 16 commits")
}

// Unrelated histories are found out over HTTP too (once the whole of both
// histories is at hand), not mistaken for a boundary.
func TestLandOverHTTPUnrelated(t *testing.T) {
	f := newRemote(t)
	runGit(t, f.work, "checkout", "-q", "--orphan", "bazinga/s1-U")
	writeFiles(t, f.work, map[string]string{"z.txt": "z\n"})
	commitAll(t, f.work, "orphan")
	runGit(t, f.work, "push", "-q", "origin", "bazinga/s1-U")
	url := serveGitHTTP(t, f.bare)
	_, err := Land(context.Background(), LandRequest{Remote: Remote{URL: url}, Base: "main", Branch: "bazinga/s1-U"})
	require.ErrorIs(t, err, ErrUnrelatedHistories)
}

// An agent may rewrite its working copy's git configuration: the harness
// fetches from and pushes to the URL it was given, and its credential goes
// nowhere else — not to a pushurl, a rewritten url, an insteadOf, nor
// another remote.
func TestHostileWorkingCopyConfigGetsNoCredential(t *testing.T) {
	f := newHistoryFixture(t, "s3cr3t", 3, 2)
	evilRoot := t.TempDir()
	runGit(t, evilRoot, "init", "-q", "--bare", filepath.Join(evilRoot, "x.git"))
	evil := newGitServer(t, evilRoot, "")
	evilURL := evil.URL + "/x.git"

	ctx := context.Background()
	remote := Remote{URL: f.url, Token: "s3cr3t"}
	dir := filepath.Join(t.TempDir(), "wc")
	repo, err := PrepareWorkingCopy(ctx, remote, "main", f.branch, dir)
	require.NoError(t, err)

	// What a malicious agent does in its working copy.
	runGit(t, dir, "config", "remote.origin.pushurl", evilURL)
	runGit(t, dir, "config", "remote.origin.url", evilURL)
	runGit(t, dir, "config", "url."+evil.URL+"/.insteadOf", f.server.URL+"/")
	runGit(t, dir, "config", "url."+evil.URL+"/.pushInsteadOf", f.server.URL+"/")
	runGit(t, dir, "remote", "add", "upstream", evilURL)
	runGit(t, dir, "config", "branch."+f.branch+".pushRemote", "upstream")
	runGit(t, dir, "config", "remote.pushDefault", "upstream")
	writeFiles(t, dir, map[string]string{"agent.txt": "work\n"})
	h, err := CommitAll(repo, CommitOptions{StepID: "s1/A/developer/1"})
	require.NoError(t, err)

	_, err = MergeRemoteIntoWorkingCopy(ctx, repo, remote, "main", Identity{})
	require.NoError(t, err)
	require.NoError(t, Push(ctx, repo, remote, "main", f.branch, PushOptions{}))
	head, err := ResolveBranch(repo, f.branch)
	require.NoError(t, err)
	assert.Equal(t, head.String(), f.head(t, f.branch), "pushed to the harness's remote")
	assert.Contains(t, runGit(t, f.bare, "log", "--format=%H", f.branch), h.String())

	assert.Empty(t, evil.requests(), "nothing at all reached the agent's URL")
	var authed int
	for _, r := range f.server.requests() {
		if r.Auth != "" {
			authed++
		}
	}
	assert.NotZero(t, authed)
}

// A redirect is not followed: the credential stays with the URL given.
func TestRedirectIsNotFollowedWithTheToken(t *testing.T) {
	f := newRemote(t)
	evil := newGitServer(t, filepath.Dir(f.bare), "")
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, evil.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	remote := Remote{URL: redirect.URL + "/" + filepath.Base(f.bare), Token: "s3cr3t"}
	_, err := Clone(context.Background(), remote, filepath.Join(t.TempDir(), "c"), CloneOptions{Branch: "main", Shallow: true})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cr3t")
	_, err = PrepareWorkingCopy(context.Background(), remote, "main", "bazinga/s1-A", filepath.Join(t.TempDir(), "wc"))
	require.Error(t, err)
	assert.Empty(t, evil.requests())
}

// Clone: shallow is one branch one commit deep; the full clone has every
// branch with its history (validation reads them all) and no tags.
func TestCloneOverHTTP(t *testing.T) {
	f := newHistoryFixture(t, "", 3, 2)
	dir := filepath.Join(t.TempDir(), "shallow")
	_, err := Clone(context.Background(), Remote{URL: f.url}, dir, CloneOptions{Branch: "main", Shallow: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"refs/heads/main", "refs/remotes/origin/main"}, localRefs(t, dir))
	assert.Equal(t, "1\n", runGit(t, dir, "rev-list", "--count", "HEAD"))

	dir = filepath.Join(t.TempDir(), "full")
	repo, err := Clone(context.Background(), Remote{URL: f.url}, dir, CloneOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"refs/heads/main", "refs/remotes/origin/" + f.branch, "refs/remotes/origin/main", "refs/remotes/origin/other"}, localRefs(t, dir))
	assert.Equal(t, strings.TrimSpace(runGit(t, f.bare, "rev-list", "--count", "main"))+"\n", runGit(t, dir, "rev-list", "--count", "HEAD"))
	merged, err := IsMerged(repo, plumbing.NewHash(f.head(t, "other")), plumbing.NewHash(f.head(t, "main")))
	require.NoError(t, err)
	assert.False(t, merged)

	_, err = Clone(context.Background(), Remote{URL: f.url}, filepath.Join(t.TempDir(), "x"), CloneOptions{Branch: "nope"})
	require.ErrorIs(t, err, ErrBranchNotFound)
}

// Criss-cross history deep below both tips: landing deepens until both
// merge bases and the base of those are at hand, and merges as git does
// (a virtual base made of the two).
func TestLandOverHTTPCrissCross(t *testing.T) {
	f := newRemote(t)
	runGit(t, f.bare, "config", "http.receivepack", "true")
	var s strings.Builder
	mark, when := 0, 1700000000
	commit := func(ref string, parents []string, files map[string]string) string {
		mark++
		when += 60
		fmt.Fprintf(&s, "commit %s\nmark :%d\ncommitter T <t@example.com> %d +0000\ndata 1\nc\n", ref, mark, when)
		for i, p := range parents {
			if i == 0 {
				fmt.Fprintf(&s, "from %s\n", p)
			} else {
				fmt.Fprintf(&s, "merge %s\n", p)
			}
		}
		paths := make([]string, 0, len(files))
		for p := range files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			fmt.Fprintf(&s, "M 100644 inline %s\ndata %d\n%s\n", p, len(files[p]), files[p])
		}
		return ":" + strconv.Itoa(mark)
	}
	text := func(a, b, c string) string {
		return "1\n2\n" + a + "\n4\n5\n6\n7\n" + b + "\n9\n10\n11\n12\n" + c + "\n14\n"
	}
	root := commit("refs/heads/main", []string{f.head(t, "main")}, map[string]string{"m.txt": text("3", "8", "13")})
	x1 := commit("refs/heads/main", []string{root}, map[string]string{"m.txt": text("3x", "8", "13")})
	y1 := commit("refs/heads/bazinga/s1-A", []string{root}, map[string]string{"m.txt": text("3", "8", "13y")})
	// Each side merges the other's first commit: two merge bases, x1 and y1.
	x2 := commit("refs/heads/main", []string{x1, y1}, map[string]string{"m.txt": text("3x", "8", "13y")})
	y2 := commit("refs/heads/bazinga/s1-A", []string{y1, x1}, map[string]string{"m.txt": text("3x", "8", "13y"), "y.txt": "y\n"})
	tipX, tipY := x2, y2
	for i := 0; i < 40; i++ {
		tipX = commit("refs/heads/main", []string{tipX}, map[string]string{"x.txt": strings.Repeat("x\n", i+1)})
	}
	for i := 0; i < 12; i++ {
		tipY = commit("refs/heads/bazinga/s1-A", []string{tipY}, map[string]string{"m.txt": text("3x", "8y"+strconv.Itoa(i), "13y")})
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = f.bare
	cmd.Env = gitEnv(f.bare)
	cmd.Stdin = strings.NewReader(s.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	bases := strings.Fields(runGit(t, f.bare, "merge-base", "--all", "main", "bazinga/s1-A"))
	require.Len(t, bases, 2, "criss-cross")
	wantTree, clean, _ := gitMergeTree(t, f.bare, f.head(t, "main"), f.head(t, "bazinga/s1-A"))
	require.True(t, clean)

	srv := newGitServer(t, filepath.Dir(f.bare), "")
	res, err := Land(context.Background(), LandRequest{Remote: Remote{URL: srv.URL + "/" + filepath.Base(f.bare)}, Base: "main", Branch: "bazinga/s1-A"})
	require.NoError(t, err)
	require.Equal(t, MergeSuccess, res.Outcome, res.Reason)
	assert.Equal(t, wantTree+"\n", runGit(t, f.bare, "rev-parse", "main^{tree}"))
	runGit(t, f.bare, "fsck", "--no-progress")
}
