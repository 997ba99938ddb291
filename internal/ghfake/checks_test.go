package ghfake

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckRunsAPI(t *testing.T) {
	e := newEnv(t)
	sha := e.branch(t, "feature", map[string]string{"f.txt": "f"})
	e.hook.reset()

	cr, resp, err := e.gh.Checks.CreateCheckRun(e.ctx, owner, repoName, github.CreateCheckRunOptions{Name: "ci", HeadSHA: sha})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Location"))
	assert.Equal(t, "queued", cr.GetStatus())
	assert.Equal(t, "bazinga", cr.GetApp().GetSlug())
	assert.Equal(t, []string{"check_run.created"}, e.hook.kinds())

	_, _, err = e.gh.Checks.UpdateCheckRun(e.ctx, owner, repoName, cr.GetID(), github.UpdateCheckRunOptions{Name: "ci", Status: github.String("in_progress")})
	require.NoError(t, err)
	assert.Equal(t, []string{"check_run.created"}, e.hook.kinds(), "no event until completed")
	done, _, err := e.gh.Checks.UpdateCheckRun(e.ctx, owner, repoName, cr.GetID(), github.UpdateCheckRunOptions{Name: "ci", Conclusion: github.String("success")})
	require.NoError(t, err)
	assert.Equal(t, "completed", done.GetStatus())
	assert.Equal(t, []string{"check_run.created", "check_run.completed", "check_suite.completed"}, e.hook.kinds())
	suite := e.hook.all()[2].payload.(*github.CheckSuiteEvent)
	assert.Equal(t, "success", suite.GetCheckSuite().GetConclusion())
	assert.Empty(t, suite.GetCheckSuite().PullRequests, "no pull request has this head yet")
	assert.Equal(t, sha, suite.GetCheckSuite().GetHeadSHA())
	assert.Equal(t, "feature", suite.GetCheckSuite().GetHeadBranch())

	// A rerun: latest filter shows one run per name, all shows both.
	_, _, err = e.gh.Checks.CreateCheckRun(e.ctx, owner, repoName, github.CreateCheckRunOptions{Name: "ci", HeadSHA: sha, Conclusion: github.String("failure")})
	require.NoError(t, err)
	res, _, err := e.gh.Checks.ListCheckRunsForRef(e.ctx, owner, repoName, "feature", nil)
	require.NoError(t, err)
	require.Equal(t, 1, res.GetTotal())
	assert.Equal(t, "failure", res.CheckRuns[0].GetConclusion())
	res, _, err = e.gh.Checks.ListCheckRunsForRef(e.ctx, owner, repoName, sha, &github.ListCheckRunsOptions{Filter: github.String("all")})
	require.NoError(t, err)
	assert.Equal(t, 2, res.GetTotal())
	res, _, err = e.gh.Checks.ListCheckRunsForRef(e.ctx, owner, repoName, sha, &github.ListCheckRunsOptions{CheckName: github.String("lint")})
	require.NoError(t, err)
	assert.Equal(t, 0, res.GetTotal())
	got, _, err := e.gh.Checks.GetCheckRun(e.ctx, owner, repoName, cr.GetID())
	require.NoError(t, err)
	assert.Equal(t, "success", got.GetConclusion())
	// A run still queued is listed with its conclusion and completion null,
	// as GitHub's schema requires them (a fresh-clone CI run caught this).
	_, _, err = e.gh.Checks.CreateCheckRun(e.ctx, owner, repoName, github.CreateCheckRunOptions{Name: "pending", HeadSHA: sha})
	require.NoError(t, err)
	_, _, err = e.gh.Checks.ListCheckRunsForRef(e.ctx, owner, repoName, sha, &github.ListCheckRunsOptions{Filter: github.String("all")})
	require.NoError(t, err)
	o, err := LoadOpenAPI("testdata/github-rest-trimmed.json")
	require.NoError(t, err)
	assert.Empty(t, o.CheckBodies(e.f.Calls()))

	bad := []struct {
		name   string
		opts   github.CreateCheckRunOptions
		status int
	}{
		{"no name", github.CreateCheckRunOptions{HeadSHA: sha}, http.StatusUnprocessableEntity},
		{"unknown sha", github.CreateCheckRunOptions{Name: "ci", HeadSHA: "0123456789012345678901234567890123456789"}, http.StatusUnprocessableEntity},
		{"bad conclusion", github.CreateCheckRunOptions{Name: "ci", HeadSHA: sha, Conclusion: github.String("great")}, http.StatusUnprocessableEntity},
		{"conclusion while running", github.CreateCheckRunOptions{Name: "ci", HeadSHA: sha, Status: github.String("in_progress"), Conclusion: github.String("success")}, http.StatusUnprocessableEntity},
	}
	for _, tc := range bad {
		_, _, err := e.gh.Checks.CreateCheckRun(e.ctx, owner, repoName, tc.opts)
		assert.Equal(t, tc.status, statusOf(err), tc.name)
	}

	// Only GitHub Apps create check runs.
	_, _, err = e.f.Client(aliceTok).Checks.CreateCheckRun(e.ctx, owner, repoName, github.CreateCheckRunOptions{Name: "ci", HeadSHA: sha})
	assert.Equal(t, http.StatusForbidden, statusOf(err))
	// A token without checks permission; one with statuses only reads
	// statuses, not check runs.
	e.f.AddTokenWithPermissions("ghs_nochecks", e.f.BotLogin(), Bot, map[string]string{"contents": "write", "statuses": "read"})
	_, _, err = e.f.Client("ghs_nochecks").Checks.CreateCheckRun(e.ctx, owner, repoName, github.CreateCheckRunOptions{Name: "ci", HeadSHA: sha})
	assert.Equal(t, http.StatusForbidden, statusOf(err))
	_, resp, err = e.f.Client("ghs_nochecks").Checks.ListCheckRunsForRef(e.ctx, owner, repoName, sha, nil)
	assert.Equal(t, http.StatusForbidden, statusOf(err))
	assert.Equal(t, "checks=read", resp.Header.Get("X-Accepted-GitHub-Permissions"))
	_, _, err = e.f.Client("ghs_nochecks").Repositories.GetCombinedStatus(e.ctx, owner, repoName, sha, nil)
	assert.NoError(t, err)
}

func TestStatusesAPI(t *testing.T) {
	e := newEnv(t)
	sha := e.branch(t, "feature", map[string]string{"f.txt": "f"})
	combined := func() *github.CombinedStatus {
		t.Helper()
		cs, _, err := e.gh.Repositories.GetCombinedStatus(e.ctx, owner, repoName, "feature", nil)
		require.NoError(t, err)
		return cs
	}
	assert.Equal(t, "pending", combined().GetState(), "no statuses: pending")

	steps := []struct {
		context, state, want string
	}{
		{"ci", "pending", "pending"},
		{"lint", "success", "pending"},
		{"ci", "success", "success"},
		{"lint", "error", "failure"},
		{"lint", "success", "success"},
		{"deploy", "failure", "failure"},
	}
	for _, s := range steps {
		e.hook.reset()
		st, resp, err := e.f.Client(aliceTok).Repositories.CreateStatus(e.ctx, owner, repoName, sha, &github.RepoStatus{State: github.String(s.state), Context: github.String(s.context)})
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Equal(t, "alice", st.GetCreator().GetLogin())
		assert.Equal(t, s.want, combined().GetState(), "after %s=%s", s.context, s.state)
		require.Equal(t, []string{"status"}, e.hook.kinds())
		ev := e.hook.all()[0].payload.(*github.StatusEvent)
		assert.Equal(t, s.context, ev.GetContext())
		assert.Equal(t, sha, ev.GetSHA())
		require.Len(t, ev.Branches, 1)
		assert.Equal(t, "feature", ev.Branches[0].GetName())
	}
	cs := combined()
	assert.Equal(t, 3, cs.GetTotalCount(), "latest status per context")

	_, _, err := e.gh.Repositories.CreateStatus(e.ctx, owner, repoName, sha, &github.RepoStatus{State: github.String("green")})
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
	_, _, err = e.gh.Repositories.CreateStatus(e.ctx, owner, repoName, "0123456789012345678901234567890123456789", &github.RepoStatus{State: github.String("success")})
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
	e.f.AddToken("ghp_reader", "reader", User)
	e.f.SetPermission("reader", "read")
	_, _, err = e.f.Client("ghp_reader").Repositories.CreateStatus(e.ctx, owner, repoName, sha, &github.RepoStatus{State: github.String("success")})
	assert.Equal(t, http.StatusForbidden, statusOf(err))
}

func TestRequiredCheckStates(t *testing.T) {
	cases := []struct {
		name  string
		setup func(r *Repo, sha string) error
		want  string
	}{
		{"nothing", func(*Repo, string) error { return nil }, `Required status check "ci" is expected.`},
		{"queued run", func(r *Repo, sha string) error { return r.SetCheck(sha, "ci", "queued", "") }, `Required status check "ci" is expected.`},
		{"success", func(r *Repo, sha string) error { return r.SetCheck(sha, "ci", "completed", "success") }, ""},
		{"neutral", func(r *Repo, sha string) error { return r.SetCheck(sha, "ci", "completed", "neutral") }, ""},
		{"skipped", func(r *Repo, sha string) error { return r.SetCheck(sha, "ci", "completed", "skipped") }, ""},
		{"failure", func(r *Repo, sha string) error { return r.SetCheck(sha, "ci", "completed", "failure") }, `Required status check "ci" is failing.`},
		{"cancelled", func(r *Repo, sha string) error { return r.SetCheck(sha, "ci", "completed", "cancelled") }, `Required status check "ci" is failing.`},
		{"rerun succeeded", func(r *Repo, sha string) error {
			if err := r.SetCheck(sha, "ci", "completed", "failure"); err != nil {
				return err
			}
			return r.SetCheck(sha, "ci", "completed", "success")
		}, ""},
		{"status success", func(r *Repo, sha string) error { return r.SetStatus(sha, "ci", "success") }, ""},
		{"status pending", func(r *Repo, sha string) error { return r.SetStatus(sha, "ci", "pending") }, `Required status check "ci" is expected.`},
		{"status error", func(r *Repo, sha string) error { return r.SetStatus(sha, "ci", "error") }, `Required status check "ci" is failing.`},
		{"check passes but the status of the same name fails", func(r *Repo, sha string) error {
			if err := r.SetCheck(sha, "ci", "completed", "success"); err != nil {
				return err
			}
			return r.SetStatus(sha, "ci", "failure")
		}, `Required status check "ci" is failing.`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			sha, _ := e.repo.Ref("refs/heads/main")
			require.NoError(t, tc.setup(e.repo, sha))
			e.f.mu.Lock()
			got := e.repo.checksMessage([]string{"ci"}, sha)
			e.f.mu.Unlock()
			assert.Equal(t, tc.want, got)
		})
	}

	e := newEnv(t)
	sha, _ := e.repo.Ref("refs/heads/main")
	require.NoError(t, e.repo.SetCheck(sha, "a", "completed", "failure"))
	require.NoError(t, e.repo.SetStatus(sha, "c", "success"))
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	assert.Equal(t, "2 of 3 required status checks have not succeeded: 1 expected and 1 failing.", e.repo.checksMessage([]string{"a", "b", "c"}, sha))
}

func TestCheckHelpersValidate(t *testing.T) {
	e := newEnv(t)
	sha, _ := e.repo.Ref("refs/heads/main")
	assert.Error(t, e.repo.SetCheck(sha, "", "completed", "success"))
	assert.Error(t, e.repo.SetCheck(sha, "ci", "done", ""))
	assert.Error(t, e.repo.SetCheck(sha, "ci", "completed", ""))
	assert.Error(t, e.repo.SetCheck(sha, "ci", "in_progress", "success"))
	assert.ErrorIs(t, e.repo.SetCheck("0123456789012345678901234567890123456789", "ci", "queued", ""), ErrNotFound)
	assert.Error(t, e.repo.SetStatus(sha, "ci", "green"))
	assert.ErrorIs(t, e.repo.SetStatus("0123456789012345678901234567890123456789", "ci", "success"), ErrNotFound)
}

func TestCheckEventsNamePullRequests(t *testing.T) {
	e := newEnv(t)
	sha := e.branch(t, "feature", map[string]string{"f.txt": "f"})
	n, err := e.repo.CreatePR("alice", "feature", "main", "F", "", false)
	require.NoError(t, err)
	e.hook.reset()
	require.NoError(t, e.repo.SetCheckAs("github-actions[bot]", sha, "ci", "in_progress", ""))
	require.NoError(t, e.repo.SetCheckAs("github-actions[bot]", sha, "ci", "completed", "failure"))
	require.NoError(t, e.repo.SetCheck(sha, "bazinga", "completed", "success"))
	assert.Equal(t, []string{"check_run.created", "check_run.completed", "check_suite.completed", "check_run.created", "check_run.completed", "check_suite.completed"}, e.hook.kinds(),
		"one suite per app")
	ev := e.hook.all()[2].payload.(*github.CheckSuiteEvent)
	assert.Equal(t, "failure", ev.GetCheckSuite().GetConclusion())
	assert.Equal(t, "github-actions", ev.GetCheckSuite().GetApp().GetSlug())
	require.Len(t, ev.GetCheckSuite().PullRequests, 1)
	assert.Equal(t, n, ev.GetCheckSuite().PullRequests[0].GetNumber())
	assert.Equal(t, "main", ev.GetCheckSuite().PullRequests[0].GetBase().GetRef())
	run := e.hook.all()[1].payload.(*github.CheckRunEvent)
	require.Len(t, run.GetCheckRun().PullRequests, 1)

	runs := e.repo.CheckRuns(sha)
	require.Len(t, runs, 2)
	assert.Equal(t, "ci", runs[0].GetName())
	assert.Equal(t, "failure", runs[0].GetConclusion())
	assert.ErrorContains(t, e.repo.SetCheckAs("alice", sha, "ci", "queued", ""), "not an App")
	require.NoError(t, e.repo.SetStatus(sha, "deploy", "pending"))
	sts := e.repo.Statuses(sha)
	require.Len(t, sts, 1)
	assert.Equal(t, "pending", sts[0].GetState())
}

func TestFakeCI(t *testing.T) {
	e := newEnv(t)
	// Long enough that the asserts made while CI runs still see it
	// running on a loaded machine.
	require.NoError(t, e.repo.AddCI(CI{Name: "ci", Duration: 2 * time.Second, Conclude: func(sha string) string {
		if data, err := e.repo.ReadFile(sha, "broken"); err == nil && len(data) > 0 {
			return "failure"
		}
		return "success"
	}}))
	require.NoError(t, e.repo.Protect("main", Protection{RequiredChecks: []string{"ci"}}))
	assert.ErrorContains(t, e.repo.AddCI(CI{}), "empty name")

	// A push by a person runs CI: queued at the push, concluded later (as
	// on GitHub), as a run of the CI workflow on the pushed branch.
	good := e.branch(t, "good", map[string]string{"g.txt": "g"})
	bad := e.branch(t, "bad", map[string]string{"broken": "yes"})
	runs := e.repo.CheckRuns(good)
	require.Len(t, runs, 1)
	assert.Equal(t, "queued", runs[0].GetStatus(), "CI does not conclude at push time")
	assert.Equal(t, "github-actions", runs[0].GetApp().GetSlug())
	waitCI(t, e, good)
	waitCI(t, e, bad)
	assert.Equal(t, "success", e.repo.CheckRuns(good)[0].GetConclusion())
	assert.Equal(t, "failure", e.repo.CheckRuns(bad)[0].GetConclusion())
	var ciRuns []Run
	for _, r := range e.f.Runs() {
		if r.Name == "CI" {
			ciRuns = append(ciRuns, r)
		}
	}
	require.Len(t, ciRuns, 2)
	assert.Equal(t, "good", ciRuns[0].Ref)
	assert.Equal(t, "push", ciRuns[0].Event)
	assert.Equal(t, good, ciRuns[0].HeadSHA)
	assert.Equal(t, "success", ciRuns[0].Conclusion)
	assert.Equal(t, "failure", ciRuns[1].Conclusion)

	// A push made with GITHUB_TOKEN does not; nor does a pull request it
	// opens. A pull request the App opens does.
	e.f.AddToken("ghs_actions", ActionsLogin, Bot)
	require.NoError(t, e.f.SetActionsCanCreatePullRequests(owner+"/"+repoName, true))
	w := e.clone(t)
	sha := w.commit("x.txt", "x")
	err, progress := w.push("ghs_actions", "refs/heads/main:refs/heads/by-actions")
	require.NoError(t, err, progress)
	assert.Empty(t, e.repo.CheckRuns(sha), "GITHUB_TOKEN pushes start no CI")
	actions := e.f.Client("ghs_actions")
	pr, _, err := actions.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("A"), Head: github.String("by-actions"), Base: github.String("main")})
	require.NoError(t, err)
	assert.Empty(t, e.repo.CheckRuns(sha))
	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, pr.GetNumber(), "", nil)
	assert.Equal(t, `Required status check "ci" is expected.`, messageOf(err), "the required check never comes")

	// A person's push to a pull request's head: the check run names it.
	e.hook.reset()
	head := e.branch(t, "good", map[string]string{"g2.txt": "g"})
	n, err := e.repo.CreatePR("alice", "good", "main", "G", "", false)
	require.NoError(t, err)
	head = e.branch(t, "good", map[string]string{"g3.txt": "g"})
	var created *github.CheckRunEvent
	for _, ev := range e.hook.all() {
		if c, ok := ev.payload.(*github.CheckRunEvent); ok && c.GetCheckRun().GetHeadSHA() == head && c.GetAction() == "created" {
			created = c
		}
	}
	require.NotNil(t, created)
	require.Len(t, created.GetCheckRun().PullRequests, 1)
	assert.Equal(t, n, created.GetCheckRun().PullRequests[0].GetNumber())

	sha2 := w.commit("y.txt", "y")
	err, progress = w.push("ghs_actions", "refs/heads/main:refs/heads/by-actions-2")
	require.NoError(t, err, progress)
	pr2, _, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("B"), Head: github.String("by-actions-2"), Base: github.String("main")})
	require.NoError(t, err)
	require.Len(t, e.repo.CheckRuns(sha2), 1, "the App's pull request starts CI on its head")
	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, pr2.GetNumber(), "", nil)
	assert.Equal(t, `Required status check "ci" is expected.`, messageOf(err), "CI has not concluded yet")
	waitCI(t, e, sha2)
	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, pr2.GetNumber(), "", nil)
	require.NoError(t, err)
}

// waitCI waits for the check runs on sha to complete.
func waitCI(t *testing.T, e *env, sha string) {
	t.Helper()
	require.Eventually(t, func() bool {
		runs := e.repo.CheckRuns(sha)
		for _, r := range runs {
			if r.GetStatus() != "completed" {
				return false
			}
		}
		return len(runs) > 0
	}, 10*time.Second, 10*time.Millisecond, "CI on %s concludes", sha)
}

// Since 2026-06-11 (GitHub changelog: pull requests created by
// github-actions[bot] can run workflows once approved), a pull request a
// GITHUB_TOKEN opens or updates gets its pull_request CI run, which waits
// for a person with write access to approve it; a workflow's token cannot.
func TestFakeCIAwaitsApprovalForGitHubTokenPRs(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.repo.AddCI(CI{Name: "ci", Duration: 50 * time.Millisecond}))
	e.f.AddToken("ghs_actions", ActionsLogin, Bot)
	e.f.SetPermission("alice", "write")
	e.f.SetPermission("eve", "read")
	require.NoError(t, e.f.SetActionsCanCreatePullRequests(full, true))
	w := e.clone(t)
	sha := w.commit("x.txt", "x")
	err, progress := w.push("ghs_actions", "refs/heads/main:refs/heads/by-actions")
	require.NoError(t, err, progress)
	require.Empty(t, e.f.Runs(), "a plain GITHUB_TOKEN push starts nothing")
	actions := e.f.Client("ghs_actions")
	_, _, err = actions.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("A"), Head: github.String("by-actions"), Base: github.String("main")})
	require.NoError(t, err)
	runs := e.f.Runs()
	require.Len(t, runs, 1)
	ru := runs[0]
	assert.Equal(t, "pull_request", ru.Event)
	assert.Equal(t, "completed", ru.Status)
	assert.Equal(t, "action_required", ru.Conclusion)
	assert.Empty(t, e.repo.CheckRuns(sha), "no check run until approved")
	listed, _, err := e.gh.Actions.ListRepositoryWorkflowRuns(e.ctx, owner, repoName, &github.ListWorkflowRunsOptions{HeadSHA: sha})
	require.NoError(t, err)
	require.Equal(t, 1, listed.GetTotalCount())
	assert.Equal(t, "action_required", listed.WorkflowRuns[0].GetConclusion())

	approve := func(c *github.Client) (*github.Response, error) {
		req, err := c.NewRequest("POST", fmt.Sprintf("repos/%s/actions/runs/%d/approve", full, ru.ID), nil)
		require.NoError(t, err)
		return c.Do(e.ctx, req, nil)
	}
	resp, err := approve(actions)
	require.Error(t, err, "a workflow's token cannot approve")
	assert.Equal(t, 403, resp.StatusCode)
	assert.ErrorContains(t, e.repo.ApproveRun("eve", ru.ID), "admin rights", "a reader cannot approve")
	require.NoError(t, e.repo.ApproveRun("alice", ru.ID))
	assert.ErrorContains(t, e.repo.ApproveRun("alice", ru.ID), "not waiting for approval")
	require.Len(t, e.repo.CheckRuns(sha), 1, "approved: CI runs")
	waitCI(t, e, sha)
	runs = e.f.Runs()
	require.Len(t, runs, 1)
	assert.Equal(t, "success", runs[0].Conclusion)
	assert.Equal(t, "alice", runs[0].Actor, "the approver triggers the run")
	assert.Equal(t, "success", e.repo.CheckRuns(sha)[0].GetConclusion())
}
