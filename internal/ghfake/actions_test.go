package ghfake

import (
	"net/http"
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

	list, _, err := e.gh.Actions.ListRepositoryWorkflowRuns(e.ctx, owner, repoName, &github.ListWorkflowRunsOptions{Status: "completed"})
	require.NoError(t, err)
	assert.Equal(t, 1, list.GetTotalCount())
	list, _, err = e.gh.Actions.ListWorkflowRunsByFileName(e.ctx, owner, repoName, "bazinga-agent.yml", &github.ListWorkflowRunsOptions{Status: "queued"})
	require.NoError(t, err)
	assert.Equal(t, 0, list.GetTotalCount())
	jobs, _, err := e.gh.Actions.ListWorkflowJobs(e.ctx, owner, repoName, r.ID, nil)
	require.NoError(t, err)
	require.Len(t, jobs.Jobs, 1)
	assert.Equal(t, "completed", jobs.Jobs[0].GetStatus())
}
