package ghfake

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (e *env) branch(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	sha, err := e.repo.Push("alice", name, files, "work on "+name)
	require.NoError(t, err)
	return sha
}

func (e *env) createRef(t *testing.T, ref, sha string) error {
	t.Helper()
	_, _, err := e.gh.Git.CreateRef(e.ctx, owner, repoName, &github.Reference{Ref: github.String(ref), Object: &github.GitObject{SHA: github.String(sha)}})
	return err
}

func TestPullRequests(t *testing.T) {
	e := newEnv(t)
	main, _ := e.repo.Ref("refs/heads/main")
	// A branch with no commits beyond base: GitHub refuses the PR.
	require.NoError(t, e.createRef(t, "refs/heads/empty", main))
	_, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("t"), Head: github.String("empty"), Base: github.String("main")})
	require.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
	assert.Contains(t, err.Error(), "No commits between main and empty")

	n, err := e.f.CreateIssue("alice", "an issue first", "")
	require.NoError(t, err)
	head := e.branch(t, "bazinga/g1", map[string]string{"g1.txt": "g1\n"})
	e.hook.reset()
	pr, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{
		Title: github.String("Group 1"), Head: github.String(owner + ":bazinga/g1"), Base: github.String("main"),
		Body: github.String("refs #1"), Draft: github.Bool(true),
	})
	require.NoError(t, err)
	assert.Equal(t, n+1, pr.GetNumber(), "PRs share the issue number space")
	assert.True(t, pr.GetDraft())
	assert.Equal(t, head, pr.GetHead().GetSHA())
	assert.Equal(t, main, pr.GetBase().GetSHA())
	assert.Equal(t, []string{"pull_request.opened"}, e.hook.kinds())

	_, _, err = e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("dup"), Head: github.String("bazinga/g1"), Base: github.String("main")})
	require.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
	var er *github.ErrorResponse
	require.ErrorAs(t, err, &er)
	assert.Equal(t, "Validation Failed", er.Message)
	require.Len(t, er.Errors, 1)
	assert.Equal(t, "A pull request already exists for acme:bazinga/g1.", er.Errors[0].Message)
	_, _, err = e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("x"), Head: github.String("nope"), Base: github.String("main")})
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))

	// List filters.
	e.branch(t, "bazinga/g2", map[string]string{"g2.txt": "g2\n"})
	pr2, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("Group 2"), Head: github.String("bazinga/g2"), Base: github.String("main")})
	require.NoError(t, err)
	list, _, err := e.gh.PullRequests.List(e.ctx, owner, repoName, &github.PullRequestListOptions{Head: owner + ":bazinga/g2"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, pr2.GetNumber(), list[0].GetNumber())
	list, _, err = e.gh.PullRequests.List(e.ctx, owner, repoName, &github.PullRequestListOptions{Base: "main"})
	require.NoError(t, err)
	assert.Len(t, list, 2)
	issues, _, err := e.gh.Issues.ListByRepo(e.ctx, owner, repoName, nil)
	require.NoError(t, err)
	assert.Len(t, issues, 3, "the issues list includes pull requests, as on GitHub")
	assert.True(t, issues[0].IsPullRequest())

	// Get computes mergeability; edit.
	got, _, err := e.gh.PullRequests.Get(e.ctx, owner, repoName, pr.GetNumber())
	require.NoError(t, err)
	assert.True(t, got.GetMergeable())
	assert.Equal(t, "draft", got.GetMergeableState())
	got, _, err = e.gh.PullRequests.Edit(e.ctx, owner, repoName, pr.GetNumber(), &github.PullRequest{Title: github.String("Group 1 (renamed)")})
	require.NoError(t, err)
	assert.Equal(t, "Group 1 (renamed)", got.GetTitle())
	_, _, err = e.gh.PullRequests.Get(e.ctx, owner, repoName, n)
	assert.Equal(t, http.StatusNotFound, statusOf(err), "an issue is not a pull request")

	// Comments and labels on PRs go through the issues endpoints.
	e.hook.reset()
	_, _, err = e.gh.Issues.CreateComment(e.ctx, owner, repoName, pr.GetNumber(), &github.IssueComment{Body: github.String("result")})
	require.NoError(t, err)
	_, _, err = e.gh.Issues.ReplaceLabelsForIssue(e.ctx, owner, repoName, pr.GetNumber(), []string{"bazinga:dev"})
	require.NoError(t, err)
	assert.Equal(t, []string{"issue_comment.created", "pull_request.labeled"}, e.hook.kinds())
	ce := e.hook.all()[0].payload.(*github.IssueCommentEvent)
	assert.True(t, ce.GetIssue().IsPullRequest())

	// Reviews.
	e.hook.reset()
	_, err = e.f.SubmitReview("alice", pr.GetNumber(), "APPROVE", "lgtm")
	require.NoError(t, err)
	revs, _, err := e.gh.PullRequests.ListReviews(e.ctx, owner, repoName, pr.GetNumber(), nil)
	require.NoError(t, err)
	require.Len(t, revs, 1)
	assert.Equal(t, "APPROVED", revs[0].GetState())
	assert.Equal(t, head, revs[0].GetCommitID())
	assert.Equal(t, []string{"pull_request_review.submitted"}, e.hook.kinds())
	_, err = e.f.SubmitReview("alice", pr.GetNumber(), "REQUEST_CHANGES", "fix")
	require.NoError(t, err)
	revs, _, err = e.gh.PullRequests.ListReviews(e.ctx, owner, repoName, pr.GetNumber(), nil)
	require.NoError(t, err)
	require.Len(t, revs, 2)
	assert.Equal(t, "CHANGES_REQUESTED", revs[1].GetState())
	_, err = e.f.SubmitReview("bazinga[bot]", pr.GetNumber(), "APPROVE", "")
	assert.Error(t, err, "authors cannot approve their own PR")

	// Closing via the human helper emits pull_request.closed unmerged.
	e.hook.reset()
	require.NoError(t, e.f.ClosePR("alice", pr2.GetNumber()))
	assert.Equal(t, []string{"pull_request.closed"}, e.hook.kinds())
	pe := e.hook.all()[0].payload.(*github.PullRequestEvent)
	assert.False(t, pe.GetPullRequest().GetMerged())
	assert.Len(t, e.f.PRs(), 2)
}

func TestMerge(t *testing.T) {
	e := newEnv(t)
	e.branch(t, "feature", map[string]string{"f.txt": "feature\n"})
	pr, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("Feature"), Head: github.String("feature"), Base: github.String("main"), Draft: github.Bool(true)})
	require.NoError(t, err)
	num := pr.GetNumber()

	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, num, "", &github.PullRequestOptions{SHA: pr.GetHead().GetSHA()})
	assert.Equal(t, http.StatusMethodNotAllowed, statusOf(err), "a draft cannot be merged")
	assert.Equal(t, "Pull Request is still a draft", messageOf(err))

	// Ready for review (GraphQL on GitHub; a helper here).
	e.hook.reset()
	require.NoError(t, e.repo.MarkReady("alice", num))
	assert.Equal(t, []string{"pull_request.ready_for_review"}, e.hook.kinds())

	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, num, "", &github.PullRequestOptions{SHA: strings.Repeat("a", 40)})
	assert.Equal(t, http.StatusConflict, statusOf(err), "head sha mismatch")
	assert.Equal(t, "Head branch was modified. Review and try the merge again.", messageOf(err))

	baseBefore, _ := e.repo.Ref("refs/heads/main")
	e.hook.reset()
	res, _, err := e.gh.PullRequests.Merge(e.ctx, owner, repoName, num, "", &github.PullRequestOptions{SHA: pr.GetHead().GetSHA()})
	require.NoError(t, err)
	assert.True(t, res.GetMerged())
	baseAfter, _ := e.repo.Ref("refs/heads/main")
	assert.Equal(t, res.GetSHA(), baseAfter)
	parents, err := e.repo.git("rev-list", "--parents", "-n", "1", baseAfter)
	require.NoError(t, err)
	assert.Equal(t, baseAfter+" "+baseBefore+" "+pr.GetHead().GetSHA(), parents, "a real merge commit in the bare repo")
	data, err := e.repo.ReadFile("main", "f.txt")
	require.NoError(t, err)
	assert.Equal(t, "feature\n", string(data))

	got, _, err := e.gh.PullRequests.Get(e.ctx, owner, repoName, num)
	require.NoError(t, err)
	assert.True(t, got.GetMerged())
	assert.Equal(t, "closed", got.GetState())
	assert.Equal(t, res.GetSHA(), got.GetMergeCommitSHA())
	assert.Equal(t, []string{"pull_request.closed", "push"}, e.hook.kinds())
	assert.True(t, e.hook.all()[0].payload.(*github.PullRequestEvent).GetPullRequest().GetMerged())

	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, num, "", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, statusOf(err), "already merged")

	// Conflicts: two branches editing the same line.
	e.branch(t, "left", map[string]string{"src/a.txt": "one\nLEFT\nthree\n"})
	e.branch(t, "right", map[string]string{"src/a.txt": "one\nRIGHT\nthree\n"})
	l, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("L"), Head: github.String("left"), Base: github.String("main")})
	require.NoError(t, err)
	r, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("R"), Head: github.String("right"), Base: github.String("main")})
	require.NoError(t, err)
	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, l.GetNumber(), "", &github.PullRequestOptions{MergeMethod: "squash"})
	require.NoError(t, err)
	squashed, _ := e.repo.Ref("refs/heads/main")
	msg, err := e.repo.git("log", "-1", "--format=%s%n%P", squashed)
	require.NoError(t, err)
	assert.Equal(t, "L (#"+strconv.Itoa(l.GetNumber())+")\n"+res.GetSHA(), msg, "squash: one parent, GitHub's title")
	got, _, err = e.gh.PullRequests.Get(e.ctx, owner, repoName, r.GetNumber())
	require.NoError(t, err)
	assert.False(t, got.GetMergeable())
	assert.Equal(t, "dirty", got.GetMergeableState())
	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, r.GetNumber(), "", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, statusOf(err))
	assert.Equal(t, "Pull Request is not mergeable", messageOf(err))

	// Rebase merge replays the commits, committed by GitHub.
	e.branch(t, "rb", map[string]string{"rb.txt": "rb\n"})
	rb, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("RB"), Head: github.String("rb"), Base: github.String("main")})
	require.NoError(t, err)
	e.branch(t, "main", map[string]string{"other.txt": "moved on\n"})
	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, rb.GetNumber(), "", &github.PullRequestOptions{MergeMethod: "rebase"})
	require.NoError(t, err)
	out, err := e.repo.git("log", "-1", "--format=%s|%cn|%P", "main")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "work on rb|GitHub|"), out)
}

func TestPushToBaseMarksPRMerged(t *testing.T) {
	e := newEnv(t)
	head := e.branch(t, "g1", map[string]string{"g1.txt": "x\n"})
	pr, err := e.repo.CreatePR("bazinga[bot]", "g1", "main", "G1", "", false)
	require.NoError(t, err)
	// Landing the branch by pushing base over git smart HTTP (as gitops
	// does), not via the API.
	e.hook.reset()
	require.NoError(t, e.gitPush(t, "refs/remotes/origin/g1:refs/heads/main"))
	main, _ := e.repo.Ref("refs/heads/main")
	assert.Equal(t, head, main)
	got := e.repo.PR(pr)
	assert.True(t, got.GetMerged(), "GitHub marks a PR merged when its head lands on base")
	assert.Equal(t, []string{"push", "pull_request.closed"}, e.hook.kinds())

	// Deleting the head branch of an open PR closes it.
	e.branch(t, "g2", map[string]string{"g2.txt": "x\n"})
	pr2, err := e.repo.CreatePR("bazinga[bot]", "g2", "main", "G2", "", false)
	require.NoError(t, err)
	require.NoError(t, e.gitPush(t, ":refs/heads/g2"))
	_, ok := e.repo.Ref("refs/heads/g2")
	assert.False(t, ok)
	assert.Equal(t, "closed", e.repo.PR(pr2).GetState())
	assert.False(t, e.repo.PR(pr2).GetMerged())
}

func TestRefs(t *testing.T) {
	e := newEnv(t)
	main, _ := e.repo.Ref("refs/heads/main")

	_, _, err := e.gh.Git.GetRef(e.ctx, owner, repoName, "refs/bazinga/claims/s1")
	assert.Equal(t, http.StatusNotFound, statusOf(err))

	// Claiming a step: the second create answers 422.
	require.NoError(t, e.createRef(t, "refs/bazinga/claims/s1", main))
	err = e.createRef(t, "refs/bazinga/claims/s1", main)
	require.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
	assert.Equal(t, "Reference already exists", messageOf(err))
	sha, ok := e.f.Ref(full, "refs/bazinga/claims/s1")
	require.True(t, ok)
	assert.Equal(t, main, sha)

	ref, _, err := e.gh.Git.GetRef(e.ctx, owner, repoName, "bazinga/claims/s1")
	require.NoError(t, err)
	assert.Equal(t, "refs/bazinga/claims/s1", ref.GetRef())
	assert.Equal(t, main, ref.GetObject().GetSHA())
	assert.Equal(t, "commit", ref.GetObject().GetType())

	err = e.createRef(t, "refs/heads/bad", strings.Repeat("b", 40))
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
	assert.Equal(t, "Object does not exist", messageOf(err))
}

func TestMergeClosesLinkedIssues(t *testing.T) {
	e := newEnv(t)
	n, err := e.f.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	other, err := e.f.CreateIssue("alice", "other", "")
	require.NoError(t, err)
	e.branch(t, "g1", map[string]string{"g1.txt": "x\n"})
	e.branch(t, "g2", map[string]string{"g2.txt": "x\n"})
	p1, err := e.repo.CreatePR("bazinga[bot]", "g1", "main", "G1", "Part of #1, refs #2", false)
	require.NoError(t, err)
	p2, err := e.repo.CreatePR("bazinga[bot]", "g2", "main", "G2", "Fixes #"+strconv.Itoa(n), false)
	require.NoError(t, err)
	_, err = e.f.MergePR("alice", p1)
	require.NoError(t, err)
	assert.Equal(t, "open", e.f.Issue(n).GetState(), "no closing keyword")
	e.hook.reset()
	_, err = e.f.MergePR("alice", p2)
	require.NoError(t, err)
	assert.Equal(t, "closed", e.f.Issue(n).GetState(), "GitHub closes issues named with a closing keyword")
	assert.Equal(t, "open", e.f.Issue(other).GetState())
	assert.Equal(t, []string{"pull_request.closed", "issues.closed", "push"}, e.hook.kinds())
}

func TestConcurrentClaims(t *testing.T) {
	e := newEnv(t)
	main, _ := e.repo.Ref("refs/heads/main")
	const n = 16
	results := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			results <- e.createRef(t, "refs/bazinga/claims/s-race", main)
		}()
	}
	won, lost := 0, 0
	for i := 0; i < n; i++ {
		if err := <-results; err == nil {
			won++
		} else if statusOf(err) == http.StatusUnprocessableEntity {
			lost++
		}
	}
	assert.Equal(t, 1, won, "exactly one claim wins")
	assert.Equal(t, n-1, lost)
}

// gitPush clones the repository as the bot over git smart HTTP and pushes
// refspec, as gitops lands and deletes branches.
func (e *env) gitPush(t *testing.T, refspec string) error {
	t.Helper()
	wc, err := git.PlainClone(t.TempDir(), true, &git.CloneOptions{URL: e.repo.CloneURL(), Auth: tokenAuth(botTok)})
	require.NoError(t, err)
	return wc.Push(&git.PushOptions{RemoteName: "origin", Auth: tokenAuth(botTok), RefSpecs: []config.RefSpec{config.RefSpec(refspec)}})
}

// A writer force-pushes a pull request's branch (an amended head): a forced
// push event and a synchronize naming the pusher and the new head; a merge
// at the head that was there before answers 409, as GitHub documents for a
// sha that is not the head ("Head branch was modified").
func TestForcePushAndMergeAtTheOldHead(t *testing.T) {
	e := newEnv(t)
	e.branch(t, "feature", map[string]string{"f.txt": "feature\n"})
	pr, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("Feature"), Head: github.String("feature"), Base: github.String("main")})
	require.NoError(t, err)
	old := pr.GetHead().GetSHA()
	e.hook.reset()
	sha, err := e.repo.ForcePush("alice", "feature", old+"^", map[string]string{"f.txt": "amended\n"}, "feature, amended")
	require.NoError(t, err)
	head, _ := e.repo.Ref("refs/heads/feature")
	assert.Equal(t, sha, head)
	parent, _ := e.repo.resolve(old + "^")
	newParent, _ := e.repo.resolve(sha + "^")
	assert.Equal(t, parent, newParent, "the new head replaces the old one, it does not follow it")
	assert.Equal(t, []string{"push", "pull_request.synchronize"}, e.hook.kinds())
	evs := e.hook.all()
	push := evs[0].payload.(*github.PushEvent)
	assert.True(t, push.GetForced())
	assert.Equal(t, "alice", push.GetSender().GetLogin())
	sync := evs[1].payload.(*github.PullRequestEvent)
	assert.Equal(t, "alice", sync.GetSender().GetLogin())
	assert.Equal(t, sha, sync.GetAfter())
	assert.Equal(t, sha, sync.GetPullRequest().GetHead().GetSHA())

	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, pr.GetNumber(), "", &github.PullRequestOptions{SHA: old})
	assert.Equal(t, http.StatusConflict, statusOf(err))
	assert.Equal(t, "Head branch was modified. Review and try the merge again.", messageOf(err))
	got, err := e.repo.ReadFile("main", "f.txt")
	assert.Error(t, err, "nothing merged: %s", got)

	_, err = e.repo.ForcePush("alice", "feature", "no-such-rev", nil, "x")
	assert.ErrorIs(t, err, ErrNotFound)
}
