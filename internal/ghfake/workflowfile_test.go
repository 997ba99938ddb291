package ghfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTheExampleWorkflows(t *testing.T) {
	b, err := os.ReadFile("../../examples/workflows/bazinga.yml")
	require.NoError(t, err)
	wf, err := ParseWorkflowFile(b)
	require.NoError(t, err)
	assert.Equal(t, "bazinga", wf.Name)
	assert.True(t, wf.Triggers("issues", "labeled"))
	assert.False(t, wf.Triggers("issues", "opened"))
	assert.True(t, wf.Triggers("issue_comment", "created"))
	assert.True(t, wf.Triggers("workflow_dispatch", ""))
	assert.True(t, wf.Triggers("workflow_run", "completed"), "CI runs wake it (issue 22)")
	assert.Equal(t, []string{"CI"}, wf.RunOf)
	assert.Equal(t, map[string]WorkflowInput{"issue": {Type: "string"}}, wf.Inputs)
	assert.Empty(t, wf.Schedule, "the schedule has its own file (bazinga-sweep.yml)")
	b, err = os.ReadFile("../../examples/workflows/bazinga-sweep.yml")
	require.NoError(t, err)
	sweep, err := ParseWorkflowFile(b)
	require.NoError(t, err)
	assert.Len(t, sweep.Schedule, 1)
	require.NotNil(t, wf.Permissions)
	assert.Empty(t, *wf.Permissions, "permissions: {} grants nothing")
	assert.Nil(t, wf.Concurrency, "the group is per job, after the job's if")
	reconcile, ok := wf.Job("reconcile")
	require.True(t, ok)
	assert.Equal(t, []string{"route"}, reconcile.Needs)
	require.NotNil(t, reconcile.Concurrency)
	assert.Equal(t, "bazinga-session-${{ needs.route.outputs.session }}", reconcile.Concurrency.Group)
	assert.Equal(t, Permissions{"actions": "write", "contents": "write", "issues": "write", "pull-requests": "write",
		"checks": "read", "statuses": "read"}, wf.EffectivePermissions(reconcile))
	assert.Equal(t, map[string]string{"metadata": "read", "actions": "write", "contents": "write", "issues": "write", "pull_requests": "write",
		"checks": "read", "statuses": "read"},
		wf.EffectivePermissions(reconcile).TokenPermissions())

	b, err = os.ReadFile("../../examples/workflows/bazinga-agent.yml")
	require.NoError(t, err)
	agent, err := ParseWorkflowFile(b)
	require.NoError(t, err)
	assert.Equal(t, []string{"workflow_dispatch"}, agent.sortedEvents())
	require.NotNil(t, agent.Concurrency)
	var ids []string
	for _, j := range agent.Jobs {
		ids = append(ids, j.ID)
	}
	assert.Equal(t, []string{"agent", "publish", "harness", "land"}, ids, "file order")
}

func TestParseWorkflowFileDefaultsAndShorthands(t *testing.T) {
	wf, err := ParseWorkflowFile([]byte("on: [push, issues]\npermissions: read-all\nconcurrency: ci\njobs:\n  a:\n    runs-on: x\n  b:\n    needs: a\n    permissions: write-all\n  c:\n    permissions:\n      id-token: write\n"))
	require.NoError(t, err)
	assert.True(t, wf.Triggers("issues", "opened"), "no types: every activity")
	assert.Equal(t, &Concurrency{Group: "ci", CancelInProgress: "false", Queue: "single"}, wf.Concurrency)
	a, _ := wf.Job("a")
	assert.Equal(t, "read", wf.EffectivePermissions(a)["pull-requests"])
	assert.NotContains(t, wf.EffectivePermissions(a), "id-token", "read-all has no id-token")
	b, _ := wf.Job("b")
	assert.Equal(t, "write", wf.EffectivePermissions(b)["contents"])
	c, _ := wf.Job("c")
	assert.Equal(t, map[string]string{"metadata": "read"}, wf.EffectivePermissions(c).TokenPermissions(), "id-token is no API permission")

	none, err := ParseWorkflowFile([]byte("on: push\njobs:\n  a:\n    runs-on: x\n"))
	require.NoError(t, err)
	j, _ := none.Job("a")
	assert.Equal(t, DefaultPermissions, none.EffectivePermissions(j), "the restricted default")
}

func TestParseWorkflowFileErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"not yaml", "on: [", "workflow file"},
		{"no on", "jobs:\n  a: {}\n", "no on: triggers"},
		{"no jobs", "on: push\n", "no jobs"},
		{"unknown permission", "on: push\npermissions:\n  everything: write\njobs:\n  a: {}\n", `unknown permission "everything"`},
		{"bad level", "on: push\njobs:\n  a:\n    permissions:\n      issues: admin\n", `jobs.a.permissions.issues: "admin" is not read, write or none`},
		{"bad shorthand", "on: push\npermissions: all\njobs:\n  a: {}\n", `"all" is not read-all, write-all or a map`},
		{"needs unknown", "on: push\njobs:\n  a:\n    needs: b\n", `job a: needs unknown job "b"`},
		{"cycle", "on: push\njobs:\n  a:\n    needs: b\n  b:\n    needs: a\n", "needs form a cycle"},
		{"unsupported function", "on: push\njobs:\n  a:\n    if: ${{ hashFiles('x') != '' }}\n", "function hashFiles is not supported by the fake"},
		{"unknown context", "on: push\njobs:\n  a:\n    if: ${{ nope.x }}\n", `unknown context "nope"`},
		{"unclosed", "on: push\nrun-name: ${{ inputs.x\njobs:\n  a: {}\n", "no closing }}"},
		{"group without name", "on: push\nconcurrency:\n  cancel-in-progress: true\njobs:\n  a: {}\n", "concurrency: no group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseWorkflowFile([]byte(tt.yaml))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestExpressions(t *testing.T) {
	ctx := Contexts{
		"inputs": map[string]any{"step": "1/A/merge/3", "issue": ""},
		"github": map[string]any{"event_name": "issue_comment", "run_id": "42",
			"event": map[string]any{"comment": map[string]any{"body": "/Bazinga resume"}, "issue": map[string]any{"number": 7.0, "pull_request": nil},
				"branches": []any{map[string]any{"name": "bazinga/7-A"}, map[string]any{"name": "main"}, map[string]any{"protected": true}}}},
		"needs": map[string]any{"route": map[string]any{"result": "success", "outputs": map[string]any{"session": "7"}}},
	}
	tests := []struct {
		expr string
		want any
	}{
		{"inputs.step", "1/A/merge/3"},
		{"contains(inputs.step, '/MERGE/')", true}, // case-insensitive
		{"!contains(inputs.step, '/merge/') && !contains(inputs.step, '/validate/')", false},
		{"contains(inputs.step, '/merge/') && 'gate' || 'validate'", "gate"},
		{"contains(inputs.step, '/pm/') && 'gate' || 'validate'", "validate"},
		{"github.event.issue.number || inputs.issue", 7.0},
		{"inputs.issue || github.event.issue.number", 7.0},
		{"github.event.issue.pull_request != null", false},
		{"github.event.nothing.deeper", nil},
		{"startsWith(github.event.comment.body, '/bazinga')", true},
		{"github.event_name != 'issue_comment' || startsWith(github.event.comment.body, '/x')", false},
		{"format('bazinga-session-{0}-{1}', needs.route.outputs.session, github.run_id)", "bazinga-session-7-42"},
		{"format('{{literal}} {0}', 1)", "{literal} 1"},
		{"'7' == 7", true},
		{"'' == null", true},
		{"'abc' == 'ABC'", true},
		{"1 < 2 && 2 >= 2", true},
		{"needs['route'].result == 'success'", true},
		{"'it''s'", "it's"},
		{"(true || false) && !false", true},
		// Object filters map a property over the items (a status event's
		// branches); an item without it is dropped.
		{"join(github.event.branches.*.name, ' ')", "bazinga/7-A main"},
		{"join(github.event.branches.*.name)", "bazinga/7-A,main"},
		{"join(github.event.nothing.*.name, ' ')", ""},
		{"contains(github.event.branches.*.name, 'MAIN')", true},
		{"join(needs.*.result)", "success"},
		{"join('plain')", "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := EvalExpression(tt.expr, ctx, JobStatus{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	s, err := InterpolateString("bazinga ${{ inputs.step }} of ${{ github.event.issue.number }}", ctx, JobStatus{})
	require.NoError(t, err)
	assert.Equal(t, "bazinga 1/A/merge/3 of 7", s)

	// if: an implicit success() unless a status function is called.
	conds := []struct {
		cond   string
		status JobStatus
		want   bool
	}{
		{"", JobStatus{}, true},
		{"", JobStatus{Skipped: true}, false},
		{"${{ needs.route.result == 'success' }}", JobStatus{Failed: true}, false},
		{"${{ !cancelled() && needs.route.result != 'skipped' }}", JobStatus{Failed: true}, true},
		{"!cancelled()", JobStatus{Cancelled: true}, false},
		{"failure()", JobStatus{Failed: true}, true},
		{"always()", JobStatus{Cancelled: true}, true},
	}
	for _, c := range conds {
		got, err := EvalCondition(c.cond, ctx, c.status)
		require.NoError(t, err, c.cond)
		assert.Equal(t, c.want, got, "%q with %+v", c.cond, c.status)
	}
	for _, bad := range []string{"toJSON(github)", "github.event.*.1", "join(1, 2, 3)", "a +", "1 ==", "contains('a')", "'open"} {
		_, err := EvalExpression(bad, ctx, JobStatus{})
		assert.Error(t, err, bad)
	}
}

// fileEnv is a fake with workflow files and a recording job runner.
type fileEnv struct {
	*env
	mu   sync.Mutex
	jobs chan JobRun
}

func newFileEnv(t *testing.T, files map[string]string) *fileEnv {
	e := &fileEnv{env: newEnv(t), jobs: make(chan JobRun, 64)}
	for _, name := range sortedKeys(files) {
		require.NoError(t, e.f.AddWorkflowFile(full, ".github/workflows/"+name, []byte(files[name])))
	}
	e.f.OnJob(func(_ context.Context, j JobRun) { e.jobs <- j })
	return e
}

// next waits for the next job that may start.
func (e *fileEnv) next(t *testing.T) JobRun {
	t.Helper()
	select {
	case j := <-e.jobs:
		return j
	case <-time.After(5 * time.Second):
		t.Fatal("no job became ready")
	}
	return JobRun{}
}

func (e *fileEnv) none(t *testing.T) {
	t.Helper()
	select {
	case j := <-e.jobs:
		t.Fatalf("unexpected job %s of run %d", j.Spec.ID, j.RunID)
	case <-time.After(100 * time.Millisecond):
	}
}

func (e *fileEnv) run(t *testing.T, id int64) Run {
	for _, r := range e.f.Runs() {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("run %d not found", id)
	return Run{}
}

const stepWorkflow = `name: step
run-name: "step ${{ inputs.step }}"
on:
  workflow_dispatch:
    inputs:
      step: {required: true, type: string}
permissions: {}
jobs:
  agent:
    if: ${{ !contains(inputs.step, '/merge/') }}
    permissions: {contents: read, issues: read, pull-requests: read}
    steps: [{run: "true"}]
  publish:
    needs: agent
    if: ${{ !cancelled() && needs.agent.result != 'skipped' }}
    permissions: {issues: write, pull-requests: write, contents: write, actions: write}
    steps: [{run: "true"}]
  gate:
    if: ${{ contains(inputs.step, '/merge/') }}
    steps: [{run: "true"}]
`

func TestJobsTokensAndIfs(t *testing.T) {
	e := newFileEnv(t, map[string]string{"step.yml": stepWorkflow, "push.yml": "on: push\njobs:\n  a: {}\n"})
	n, err := e.f.CreateIssue("alice", "task", "")
	require.NoError(t, err)

	_, err = e.gh.Actions.CreateWorkflowDispatchEventByFileName(e.ctx, owner, repoName, "push.yml", github.CreateWorkflowDispatchEventRequest{Ref: "main"})
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
	assert.Equal(t, "Workflow does not have 'workflow_dispatch' trigger", messageOf(err))

	_, err = e.gh.Actions.CreateWorkflowDispatchEventByFileName(e.ctx, owner, repoName, "step.yml", github.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"step": "1/A/developer/2"}})
	require.NoError(t, err)
	agent := e.next(t)
	assert.Equal(t, "agent", agent.Spec.ID)
	assert.Equal(t, "step 1/A/developer/2", agent.Run.DisplayTitle)
	e.none(t) // publish waits for agent; gate is skipped

	started, err := e.f.StartJob(agent.ID)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(started.Token, "ghs_ro"), started.Token)
	assert.Equal(t, started.Token, started.Contexts["github"].(map[string]any)["token"])
	ro := e.f.Client(started.Token)
	_, _, err = ro.Issues.Get(e.ctx, owner, repoName, n)
	assert.NoError(t, err, "issues: read")
	_, resp, err := ro.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("x")})
	assert.Equal(t, http.StatusForbidden, statusOf(err))
	assert.Equal(t, "Resource not accessible by integration", messageOf(err))
	assert.Equal(t, "issues=write;pull_requests=write", resp.Header.Get("X-Accepted-GitHub-Permissions"))
	_, err = ro.Actions.CreateWorkflowDispatchEventByFileName(e.ctx, owner, repoName, "step.yml", github.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"step": "x"}})
	assert.Equal(t, http.StatusForbidden, statusOf(err), "no actions: write")
	require.NoError(t, e.f.CompleteJob(agent.ID, "success", nil))
	_, _, err = ro.Issues.Get(e.ctx, owner, repoName, n)
	assert.Equal(t, http.StatusUnauthorized, statusOf(err), "the token expires with its job")

	publish := e.next(t)
	assert.Equal(t, "publish", publish.Spec.ID)
	started, err = e.f.StartJob(publish.ID)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(started.Token, "ghs_rw"))
	_, _, err = e.f.Client(started.Token).Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("result")})
	require.NoError(t, err)
	require.NoError(t, e.f.CompleteJob(publish.ID, "failure", nil))
	run := e.run(t, publish.RunID)
	assert.Equal(t, "completed", run.Status)
	assert.Equal(t, "failure", run.Conclusion)
	jobs := e.f.Jobs(run.ID)
	require.Len(t, jobs, 3)
	assert.Equal(t, "skipped", jobs[2].Conclusion, "gate's if is false")

	// A merge step: only gate runs; publish is skipped with agent.
	_, err = e.gh.Actions.CreateWorkflowDispatchEventByFileName(e.ctx, owner, repoName, "step.yml", github.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"step": "1/A/merge/3"}})
	require.NoError(t, err)
	gate := e.next(t)
	assert.Equal(t, "gate", gate.Spec.ID)
	e.none(t)
	started, err = e.f.StartJob(gate.ID)
	require.NoError(t, err)
	assert.Equal(t, Permissions{}, started.Permissions, "no permissions: block for the job, {} for the workflow: {} applies")
	require.NoError(t, e.f.CompleteJob(gate.ID, "success", nil))
	run = e.run(t, gate.RunID)
	assert.Equal(t, "success", run.Conclusion)
	var concl []string
	for _, j := range e.f.Jobs(run.ID) {
		concl = append(concl, j.Conclusion)
	}
	assert.Equal(t, []string{"skipped", "skipped", "success"}, concl)
}

const orchestratorWorkflow = `name: orch
on:
  issue_comment: {types: [created]}
  issues: {types: [labeled]}
  workflow_dispatch:
    inputs:
      issue: {type: string}
permissions: {}
jobs:
  route:
    if: ${{ github.event_name != 'issue_comment' || startsWith(github.event.comment.body, '/bazinga') }}
    outputs:
      session: ${{ steps.s.outputs.session }}
    steps: [{id: s, run: "echo"}]
  reconcile:
    needs: route
    concurrency:
      group: session-${{ needs.route.outputs.session }}
    permissions: {issues: write}
    steps: [{run: "true"}]
`

func TestEventsAndJobLevelConcurrency(t *testing.T) {
	e := newFileEnv(t, map[string]string{"orch.yml": orchestratorWorkflow})
	n, err := e.f.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	require.NoError(t, e.f.LabelIssue("alice", n, "bazinga"))

	play := func(kind string) JobRun {
		j := e.next(t)
		require.Equal(t, kind, j.Spec.ID)
		_, err := e.f.StartJob(j.ID)
		require.NoError(t, err)
		return j
	}
	route := play("route")
	require.NoError(t, e.f.CompleteJob(route.ID, "success", map[string]map[string]string{"s": {"session": "1"}}))
	first := play("reconcile")
	assert.Equal(t, map[string]any{"route": map[string]any{"result": "success", "outputs": map[string]any{"session": "1"}}}, first.Contexts["needs"])
	tok, err := e.f.JobToken(first.Run, "reconcile")
	require.NoError(t, err)

	// What the job's GITHUB_TOKEN does starts nothing.
	_, _, err = e.f.Client(tok).Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("/bazinga resume")})
	require.NoError(t, err)
	_, _, err = e.f.Client(tok).Issues.AddLabelsToIssue(e.ctx, owner, repoName, n, []string{"bazinga:running"})
	_ = err // the route may not exist; the point is no run
	e.none(t)
	before := len(e.f.Runs())

	// Two human commands while the first reconcile runs: the second's
	// reconcile replaces the first's pending one, which is cancelled.
	for range 2 {
		_, err := e.f.Comment("alice", n, "/bazinga resume")
		require.NoError(t, err)
		r := play("route")
		require.NoError(t, e.f.CompleteJob(r.ID, "success", map[string]map[string]string{"s": {"session": "1"}}))
	}
	e.none(t)
	runs := e.f.Runs()
	require.Len(t, runs, before+2)
	assert.Equal(t, "completed", runs[before].Status)
	assert.Equal(t, "cancelled", runs[before].Conclusion, "the older pending run is cancelled")
	pending := e.f.Jobs(runs[before+1].ID)
	assert.Equal(t, "pending", pending[1].Status)

	// An unrelated comment: route is skipped, so reconcile is too, and the
	// job-level group (taken after the if) cancels nothing.
	_, err = e.f.Comment("alice", n, "thanks!")
	require.NoError(t, err)
	e.none(t)
	runs = e.f.Runs()
	last := runs[len(runs)-1]
	assert.Equal(t, "success", last.Conclusion)
	assert.Equal(t, "pending", e.f.Jobs(runs[before+1].ID)[1].Status, "still pending")

	// The running one ends: the pending one starts.
	require.NoError(t, e.f.CompleteJob(first.ID, "success", nil))
	next := e.next(t)
	assert.Equal(t, runs[before+1].ID, next.RunID)
	assert.Equal(t, "reconcile", next.Spec.ID)
}

const lockedWorkflow = `on:
  issue_comment: {types: [created]}
  workflow_dispatch: {}
concurrency:
  group: locked
  cancel-in-progress: ${{ github.event_name == 'workflow_dispatch' }}
jobs:
  work:
    if: ${{ github.event_name != 'issue_comment' || contains(github.event.comment.body, 'work') }}
    steps: [{run: "true"}]
`

func TestWorkflowLevelConcurrencyIsTakenBeforeTheIf(t *testing.T) {
	e := newFileEnv(t, map[string]string{"locked.yml": lockedWorkflow})
	n, err := e.f.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	_, err = e.f.Comment("alice", n, "work 1")
	require.NoError(t, err)
	running := e.next(t)
	_, err = e.f.StartJob(running.ID)
	require.NoError(t, err)
	_, err = e.f.Comment("alice", n, "work 2")
	require.NoError(t, err)
	e.none(t)
	runs := e.f.Runs()
	require.Len(t, runs, 2)
	assert.Equal(t, "pending", runs[1].Status)

	// A comment whose run the job's if would skip still takes the pending
	// place: the "work 2" run is cancelled.
	_, err = e.f.Comment("alice", n, "unrelated")
	require.NoError(t, err)
	runs = e.f.Runs()
	require.Len(t, runs, 3)
	assert.Equal(t, "cancelled", runs[1].Conclusion)
	assert.Equal(t, "pending", runs[2].Status)

	// cancel-in-progress (dispatches here) cancels the running one, and
	// the pending one.
	_, err = e.gh.Actions.CreateWorkflowDispatchEventByFileName(e.ctx, owner, repoName, "locked.yml", github.CreateWorkflowDispatchEventRequest{Ref: "main"})
	require.NoError(t, err)
	runs = e.f.Runs()
	require.Len(t, runs, 4)
	assert.Equal(t, "cancelled", runs[0].Conclusion)
	assert.Equal(t, "cancelled", runs[2].Conclusion)
	assert.Error(t, e.f.CompleteJob(running.ID, "success", nil), "a cancelled job cannot complete")
	j := e.next(t)
	assert.Equal(t, runs[3].ID, j.RunID)
	_, err = e.f.StartJob(j.ID)
	require.NoError(t, err)
	require.NoError(t, e.f.CompleteJob(j.ID, "success", nil))
	assert.Equal(t, "success", e.run(t, runs[3].ID).Conclusion)
}

func TestActionsMayCreatePullRequestsSetting(t *testing.T) {
	e := newFileEnv(t, nil)
	_, err := e.repo.Push(owner, "topic", map[string]string{"new.txt": "x\n"}, "topic")
	require.NoError(t, err)
	tok := "ghs_actions_pr"
	e.f.AddTokenWithPermissions(tok, ActionsLogin, Bot, map[string]string{"pull_requests": "write", "contents": "write"})
	pr := &github.NewPullRequest{Title: github.String("t"), Head: github.String("topic"), Base: github.String("main")}
	_, _, err = e.f.Client(tok).PullRequests.Create(e.ctx, owner, repoName, pr)
	assert.Equal(t, http.StatusForbidden, statusOf(err))
	assert.Equal(t, "GitHub Actions is not permitted to create or approve pull requests.", messageOf(err))
	_, _, err = e.gh.PullRequests.Create(e.ctx, owner, repoName, pr)
	require.NoError(t, err, "the App may")
	_, err = e.repo.Push(owner, "topic2", map[string]string{"new2.txt": "x\n"}, "topic2")
	require.NoError(t, err)
	require.NoError(t, e.f.SetActionsCanCreatePullRequests(full, true))
	pr.Head = github.String("topic2")
	_, _, err = e.f.Client(tok).PullRequests.Create(e.ctx, owner, repoName, pr)
	assert.NoError(t, err)
}

// Responses carry what GitHub's schemas require: the user's *_url fields,
// the repository's URL templates, a PR's _links, and a Location on 201.
func TestResponsesAreSchemaComplete(t *testing.T) {
	e := newEnv(t)
	_, err := e.repo.Push(owner, "topic", map[string]string{"new.txt": "x\n"}, "topic")
	require.NoError(t, err)
	pr, resp, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, &github.NewPullRequest{Title: github.String("t"), Head: github.String("topic"), Base: github.String("main")})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, pr.GetURL(), resp.Header.Get("Location"))
	assert.NotEmpty(t, pr.GetLinks().GetSelf().GetHRef())
	assert.NotEmpty(t, pr.GetLinks().GetStatuses().GetHRef())
	assert.NotEmpty(t, pr.GetUser().GetFollowersURL())
	assert.NotNil(t, pr.GetUser().GravatarID)
	assert.NotEmpty(t, pr.GetHead().GetRepo().GetPullsURL())
	assert.NotEmpty(t, pr.GetBase().GetRepo().GetOwner().GetReposURL())
	c, resp, err := e.gh.Issues.CreateComment(e.ctx, owner, repoName, pr.GetNumber(), &github.IssueComment{Body: github.String("hi")})
	require.NoError(t, err)
	assert.Equal(t, c.GetURL(), resp.Header.Get("Location"))
}

// Pushes and pull request events caused by github-actions[bot] start no
// workflow; a person's do.
func TestGitHubTokenPushesStartNothing(t *testing.T) {
	e := newFileEnv(t, map[string]string{"ci.yml": "on:\n  push: {}\n  pull_request: {types: [opened, synchronize]}\njobs:\n  test: {}\n"})
	_, err := e.repo.Push(ActionsLogin, "topic", map[string]string{"a.txt": "a\n"}, "by a job")
	require.NoError(t, err)
	e.none(t)
	assert.Empty(t, e.f.Runs())
	_, err = e.repo.Push("alice", "topic", map[string]string{"b.txt": "b\n"}, "by alice")
	require.NoError(t, err)
	j := e.next(t)
	assert.Equal(t, "push", j.Run.Event)
	assert.Equal(t, "alice", j.Run.Actor)
}

func TestRequiredNullFieldsArePresent(t *testing.T) {
	e := newEnv(t)
	n, err := e.f.CreateIssue("alice", "t", "")
	require.NoError(t, err)
	_, body := rawGet(t, e.f.APIURL()+"repos/"+full+"/issues/"+strconv.Itoa(n), botTok, nil)
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	for _, k := range []string{"assignee", "milestone", "closed_at", "active_lock_reason"} {
		v, ok := m[k]
		assert.True(t, ok, "%s present", k)
		assert.Nil(t, v, k)
	}
	_, body = rawGet(t, e.f.APIURL()+"repos/"+full+"/issues", botTok, nil)
	var ms []map[string]any
	require.NoError(t, json.Unmarshal(body, &ms))
	require.Len(t, ms, 1)
	assert.Contains(t, ms[0], "milestone")
	// go-github still reads them.
	is, _, err := e.gh.Issues.Get(e.ctx, owner, repoName, n)
	require.NoError(t, err)
	assert.Nil(t, is.Milestone)
}

// workflow_run starts only for the named workflows' runs, and not for runs
// a GITHUB_TOKEN dispatched.
func TestWorkflowRunTrigger(t *testing.T) {
	e := newFileEnv(t, map[string]string{
		"build.yml": "name: build\non: workflow_dispatch\njobs:\n  b: {}\n",
		"other.yml": "name: other\non: workflow_dispatch\njobs:\n  o: {}\n",
		"after.yml": "name: after\non:\n  workflow_run:\n    workflows: [build]\n    types: [completed]\njobs:\n  a: {}\n",
	})
	finish := func(file string, gh *github.Client) JobRun {
		_, err := gh.Actions.CreateWorkflowDispatchEventByFileName(e.ctx, owner, repoName, file, github.CreateWorkflowDispatchEventRequest{Ref: "main"})
		require.NoError(t, err)
		j := e.next(t)
		_, err = e.f.StartJob(j.ID)
		require.NoError(t, err)
		require.NoError(t, e.f.CompleteJob(j.ID, "success", nil))
		return j
	}
	finish("other.yml", e.gh)
	e.none(t)
	b := finish("build.yml", e.gh)
	after := e.next(t)
	assert.Equal(t, "workflow_run", after.Run.Event)
	assert.Equal(t, "a", after.Spec.ID)
	_, err := e.f.StartJob(after.ID)
	require.NoError(t, err)
	_, err = e.f.JobToken(b.Run, "b")
	assert.ErrorContains(t, err, "its GITHUB_TOKEN has expired")
	// A GITHUB_TOKEN dispatch: its run's completion starts nothing.
	actionsTok := "ghs_actions_dispatch"
	e.f.AddTokenWithPermissions(actionsTok, ActionsLogin, Bot, map[string]string{"actions": "write"})
	finish("build.yml", e.f.Client(actionsTok))
	e.none(t)
}

func TestParseWorkflowRunNeedsWorkflows(t *testing.T) {
	_, err := ParseWorkflowFile([]byte("on:\n  workflow_run:\n    types: [completed]\njobs:\n  a: {}\n"))
	assert.ErrorContains(t, err, "on.workflow_run: no workflows")
}

// pull_request and pull_request_review runs are on the pull request's merge
// ref (issue 22): GITHUB_REF refs/pull/N/merge, and so the OIDC token's ref
// and subject; pull_request_target runs on the base branch.
func TestPullRequestRunsOnTheMergeRef(t *testing.T) {
	e := newFileEnv(t, map[string]string{
		"review.yml": "on:\n  pull_request_review:\n    types: [submitted]\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n      - run: true\n",
	})
	e.f.SetPermission("alice", "write")
	e.f.SetPermission("bob", "write")
	head := e.branch(t, "feature", map[string]string{"f.txt": "f"})
	n, err := e.repo.CreatePR("alice", "feature", "main", "F", "", false)
	require.NoError(t, err)
	_, err = e.repo.SubmitReview("bob", n, "APPROVE", "ok")
	require.NoError(t, err)
	review := e.next(t)
	assert.Equal(t, "pull_request_review", review.Run.Event)
	assert.Equal(t, fmt.Sprintf("%d/merge", n), review.Run.Ref)
	assert.Equal(t, head, review.Run.HeadSHA)
	gh := review.Contexts["github"].(map[string]any)
	assert.Equal(t, fmt.Sprintf("refs/pull/%d/merge", n), gh["ref"])
	o := StartOIDC(t, e.f)
	c := o.ClaimsFor(review.Run, "bazinga")
	assert.Equal(t, fmt.Sprintf("refs/pull/%d/merge", n), c.Ref)
	assert.Equal(t, "repo:"+full+":pull_request", c.Subject)
	assert.Equal(t, full+"/.github/workflows/review.yml@refs/pull/"+strconv.Itoa(n)+"/merge", c.WorkflowRef)
}

// check_suite starts no workflow for a suite on a commit a GITHUB_TOKEN
// pushed, whoever reports it (issue 22; GitHub's docs on check_suite).
func TestCheckSuiteOnGitHubTokenHeadsStartsNothing(t *testing.T) {
	e := newFileEnv(t, map[string]string{
		"suite.yml": "on:\n  check_suite:\n    types: [completed]\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n      - run: true\n",
	})
	e.f.AddToken("ghs_actions", ActionsLogin, Bot)
	w := e.clone(t)
	sha := w.commit("x.txt", "x")
	err, progress := w.push("ghs_actions", "refs/heads/main:refs/heads/by-actions")
	require.NoError(t, err, progress)
	require.NoError(t, e.repo.SetCheckAs("other-ci[bot]", sha, "lint", "completed", "success"))
	e.none(t)
	mine := e.branch(t, "by-alice", map[string]string{"y.txt": "y"})
	require.NoError(t, e.repo.SetCheckAs("other-ci[bot]", mine, "lint", "completed", "success"))
	j := e.next(t)
	assert.Equal(t, "check_suite", j.Run.Event)
}
