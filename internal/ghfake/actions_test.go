package ghfake

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDispatch(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.f.AddWorkflow(full, "bazinga-agent.yml", Workflow{
		Name:    "bazinga agent",
		RunName: "bazinga ${{ inputs.step }}",
		JobName: "step",
		Inputs: map[string]WorkflowInput{
			"step":  {Required: true},
			"debug": {Type: "boolean", Default: "false"},
		},
	}))
	runs := make(chan Run, 4)
	e.f.OnDispatch(func(r Run) { runs <- r })

	tests := []struct {
		name    string
		file    string
		ref     string
		inputs  map[string]any
		want    int
		wantMsg string
	}{
		{"unregistered workflow", "other.yml", "main", map[string]any{"step": "s"}, http.StatusNotFound, "Not Found"},
		{"missing required input", "bazinga-agent.yml", "main", nil, http.StatusUnprocessableEntity, "Required input 'step' not provided"},
		{"unexpected input", "bazinga-agent.yml", "main", map[string]any{"step": "s", "nope": "x"}, http.StatusUnprocessableEntity, `Unexpected inputs provided: ["nope"]`},
		{"bad boolean", "bazinga-agent.yml", "main", map[string]any{"step": "s", "debug": "maybe"}, http.StatusUnprocessableEntity, "Provided value 'maybe' for input 'debug' not in the list of allowed values"},
		{"unknown ref", "bazinga-agent.yml", "nope", map[string]any{"step": "s"}, http.StatusUnprocessableEntity, "No ref found for: nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.gh.Actions.CreateWorkflowDispatchEventByFileName(e.ctx, owner, repoName, tt.file, github.CreateWorkflowDispatchEventRequest{Ref: tt.ref, Inputs: tt.inputs})
			assert.Equal(t, tt.want, statusOf(err))
			assert.Equal(t, tt.wantMsg, messageOf(err))
		})
	}
	assert.Empty(t, e.f.Runs(), "refused dispatches create no run")

	e.hook.reset()
	resp, err := e.gh.Actions.CreateWorkflowDispatchEventByFileName(e.ctx, owner, repoName, "bazinga-agent.yml", github.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"step": "s-0001-pm", "debug": true}})
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)

	var r Run
	select {
	case r = <-runs:
	case <-time.After(5 * time.Second):
		t.Fatal("dispatch hook not called")
	}
	assert.Equal(t, map[string]string{"step": "s-0001-pm", "debug": "true"}, r.Inputs)
	assert.Equal(t, "bazinga s-0001-pm", r.DisplayTitle)
	assert.Equal(t, "bazinga agent", r.Name)
	assert.Equal(t, "queued", r.Status)
	assert.Equal(t, "main", r.Ref)
	assert.Equal(t, "bazinga[bot]", r.Actor)
	assert.Equal(t, []string{"workflow_run.requested", "workflow_job.queued"}, e.hook.kinds())

	got, _, err := e.gh.Actions.GetWorkflowRunByID(e.ctx, owner, repoName, r.ID)
	require.NoError(t, err)
	assert.Equal(t, "bazinga s-0001-pm", got.GetDisplayTitle())
	assert.Equal(t, "workflow_dispatch", got.GetEvent())

	require.NoError(t, e.f.StartRun(r.ID))
	e.hook.reset()
	require.NoError(t, e.f.CompleteRun(r.ID, "failure"))
	assert.Equal(t, []string{"workflow_job.completed", "workflow_run.completed"}, e.hook.kinds())
	we := e.hook.all()[1].payload.(*github.WorkflowRunEvent)
	assert.Equal(t, "failure", we.GetWorkflowRun().GetConclusion())
	assert.Equal(t, "bazinga s-0001-pm", we.GetWorkflowRun().GetDisplayTitle())
	je := e.hook.all()[0].payload.(*github.WorkflowJobEvent)
	assert.Equal(t, r.ID, je.GetWorkflowJob().GetRunID())
	assert.Equal(t, "step", je.GetWorkflowJob().GetName())
	assert.Error(t, e.f.CompleteRun(r.ID, "success"), "already completed")
	assert.Error(t, e.f.CompleteRun(r.ID+1000, "success"))

	assert.Equal(t, "completed", je.GetWorkflowJob().GetStatus())

	list, _, err := e.gh.Actions.ListWorkflowRunsByFileName(e.ctx, owner, repoName, "bazinga-agent.yml", &github.ListWorkflowRunsOptions{Status: "completed"})
	require.NoError(t, err)
	assert.Equal(t, 1, list.GetTotalCount())
	list, _, err = e.gh.Actions.ListWorkflowRunsByFileName(e.ctx, owner, repoName, "bazinga-agent.yml", &github.ListWorkflowRunsOptions{Status: "queued"})
	require.NoError(t, err)
	assert.Equal(t, 0, list.GetTotalCount())
}

func TestEventTriggeredWorkflows(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.f.AddWorkflow(full, "bazinga.yml", Workflow{
		Name:    "bazinga",
		RunName: "reconcile #${{ github.event.issue.number }}",
		On:      []string{"issues.labeled", "issue_comment", "workflow_run.completed"},
	}))
	require.NoError(t, e.f.AddWorkflow(full, "agent.yml", Workflow{Name: "agent", Inputs: map[string]WorkflowInput{"step": {Required: true}}}))
	n, err := e.f.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	assert.Empty(t, e.f.Runs(), "issues.opened is not a trigger")
	require.NoError(t, e.f.LabelIssue("alice", n, "bazinga"))
	runs := e.f.Runs()
	require.Len(t, runs, 1)
	assert.Equal(t, "issues", runs[0].Event)
	assert.Equal(t, "reconcile #1", runs[0].DisplayTitle)
	var ev github.IssuesEvent
	require.NoError(t, json.Unmarshal(runs[0].EventPayload, &ev))
	assert.Equal(t, "bazinga", ev.GetLabel().GetName())

	// What a GITHUB_TOKEN does triggers nothing; dispatches always run.
	tok := e.f.RunToken(runs[0])
	gh := e.f.Client(tok)
	_, _, err = gh.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("status")})
	require.NoError(t, err)
	assert.Len(t, e.f.Runs(), 1)
	_, err = gh.Actions.CreateWorkflowDispatchEventByFileName(e.ctx, owner, repoName, "agent.yml", github.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"step": "s1"}})
	require.NoError(t, err)
	runs = e.f.Runs()
	require.Len(t, runs, 2)
	assert.Equal(t, ActionsLogin, runs[1].Actor)

	// The completion of a run a GITHUB_TOKEN dispatched fires no
	// workflow_run; a run the App dispatched does, and the orchestrator
	// that starts does not trigger it again.
	require.NoError(t, e.f.CompleteRun(runs[1].ID, "success"))
	require.Len(t, e.f.Runs(), 2, "no workflow_run for a GITHUB_TOKEN-dispatched run")
	_, err = e.gh.Actions.CreateWorkflowDispatchEventByFileName(e.ctx, owner, repoName, "agent.yml", github.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"step": "s2"}})
	require.NoError(t, err)
	runs = e.f.Runs()
	require.Len(t, runs, 3)
	assert.Equal(t, e.f.BotLogin(), runs[2].Actor)
	require.NoError(t, e.f.CompleteRun(runs[2].ID, "success"))
	runs = e.f.Runs()
	require.Len(t, runs, 4)
	assert.Equal(t, "workflow_run", runs[3].Event)
	require.NoError(t, e.f.CompleteRun(runs[3].ID, "success"))
	assert.Len(t, e.f.Runs(), 4)

	sched, err := e.f.TriggerSchedule(full, "bazinga.yml")
	require.NoError(t, err)
	assert.Equal(t, "schedule", sched.Event)

	env, err := e.f.RunEnv(runs[1], t.TempDir())
	require.NoError(t, err)
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	assert.Equal(t, e.f.URL()+"/api/v3", m["GITHUB_API_URL"])
	assert.Equal(t, full, m["GITHUB_REPOSITORY"])
	assert.Equal(t, "workflow_dispatch", m["GITHUB_EVENT_NAME"])
	payload, err := os.ReadFile(m["GITHUB_EVENT_PATH"])
	require.NoError(t, err)
	var de github.WorkflowDispatchEvent
	require.NoError(t, json.Unmarshal(payload, &de))
	assert.JSONEq(t, `{"step":"s1"}`, string(de.Inputs))
	assert.FileExists(t, m["GITHUB_OUTPUT"])
}

func TestContentLimits(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	f := Start(t, Options{ContentLimits: true, Now: func() time.Time { return now }})
	_, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	f.AddToken(botTok, f.BotLogin(), Bot)
	gh := f.Client(botTok)
	n, err := f.CreateIssue("alice", "t", "")
	require.NoError(t, err)
	ctx := t.Context()
	for i := 0; i < 80; i++ {
		_, _, err := gh.Issues.CreateComment(ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("x")})
		require.NoError(t, err, i)
	}
	_, _, err = gh.Issues.CreateComment(ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("x")})
	var ae *github.AbuseRateLimitError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 60*time.Second, *ae.RetryAfter)
	_, _, err = f.Client(botTok).Issues.Get(ctx, "acme", "widgets", n)
	assert.NoError(t, err, "reads are not limited")
	now = now.Add(time.Minute)
	_, _, err = f.Client(botTok).Issues.CreateComment(ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("x")})
	assert.NoError(t, err)
}
