package action_test

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The example agent workflow has the boundary's shape: every job that runs
// code an agent wrote (agent, gate, validate) can only read and hands over;
// every job that can write (publish, land) needs one of those, runs only
// the artifact download and the action — no checkout, no setup, no cache,
// no script — and sees no secret.
func TestExampleWorkflowKeepsTheBoundary(t *testing.T) {
	b, err := os.ReadFile("../examples/workflows/bazinga-agent.yml")
	require.NoError(t, err)
	var wf struct {
		Permissions map[string]string `yaml:"permissions"`
		Jobs        map[string]struct {
			Needs       string            `yaml:"needs"`
			If          string            `yaml:"if"`
			Permissions map[string]string `yaml:"permissions"`
			Steps       []struct {
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				With map[string]string `yaml:"with"`
				Env  map[string]string `yaml:"env"`
				If   string            `yaml:"if"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal(b, &wf))
	assert.Empty(t, wf.Permissions, "the workflow grants nothing by default")
	var unpriv, priv []string
	for name, job := range wf.Jobs {
		commands := ""
		for _, st := range job.Steps {
			if strings.HasPrefix(st.Uses, "bazinga-bot/bazinga@") {
				commands += st.With["command"]
			}
		}
		writes := false
		for _, level := range job.Permissions {
			if level == "write" {
				writes = true
			}
		}
		runsAgentCode := strings.Contains(commands, "agent") || strings.Contains(commands, "gate") || strings.Contains(commands, "validate'")
		switch {
		case runsAgentCode:
			unpriv = append(unpriv, name)
			assert.False(t, writes, "job %s runs agent code: it may only read, has %v", name, job.Permissions)
			uploads := false
			for _, st := range job.Steps {
				if strings.HasPrefix(st.Uses, "actions/upload-artifact@") {
					uploads = true
					assert.Equal(t, "${{ runner.temp }}/bazinga-handover", st.With["path"])
					assert.Equal(t, "${{ !cancelled() }}", st.If, "a failure is handed over too")
				}
				if st.With["cache"] != "" {
					assert.Equal(t, "false", st.With["cache"], "job %s: %s saves no cache", name, st.Uses)
				}
			}
			assert.True(t, uploads, "job %s hands over", name)
		case strings.Contains(commands, "publish") || strings.Contains(commands, "land"):
			priv = append(priv, name)
			assert.True(t, writes, "job %s publishes", name)
			assert.NotEmpty(t, job.Needs, "job %s runs after the unprivileged job", name)
			assert.Contains(t, job.If, "!cancelled()")
			for _, st := range job.Steps {
				ok := strings.HasPrefix(st.Uses, "actions/download-artifact@") || strings.HasPrefix(st.Uses, "bazinga-bot/bazinga@")
				assert.True(t, ok, "job %s runs only the download and the action, not %q %q", name, st.Uses, st.Run)
				assert.Empty(t, st.Run, "job %s runs no script", name)
				assert.Empty(t, st.Env, "job %s sees no secret", name)
				assert.NotContains(t, st.With, "cache")
			}
		default:
			t.Errorf("job %s runs no bazinga command", name)
		}
	}
	sort.Strings(unpriv)
	sort.Strings(priv)
	assert.Equal(t, []string{"agent", "harness"}, unpriv)
	assert.Equal(t, []string{"land", "publish"}, priv)
	assert.NotContains(t, string(b), "actions/checkout", "no job checks the repository out")
}

// GitHub disables a public repository's scheduled workflows after 60 days
// without activity (issue 22): the orchestrator carries no schedule, so
// disabling the sweep cannot switch it off; the sweep is its own file and
// runs the orchestrator's reconcile.
func TestScheduleHasItsOwnWorkflow(t *testing.T) {
	type workflow struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	read := func(file string) workflow {
		b, err := os.ReadFile("../examples/workflows/" + file)
		require.NoError(t, err)
		var wf workflow
		require.NoError(t, yaml.Unmarshal(b, &wf))
		return wf
	}
	orch := read("bazinga.yml")
	assert.NotContains(t, orch.On, "schedule", "the orchestrator has no schedule")
	assert.Contains(t, orch.On, "workflow_run", "CI runs wake the orchestrator")
	sweep := read("bazinga-sweep.yml")
	assert.Contains(t, sweep.On, "schedule")
	reconciles := 0
	for _, j := range sweep.Jobs {
		for _, st := range j.Steps {
			if strings.HasPrefix(st.Uses, "bazinga-bot/bazinga@") && st.With["command"] == "reconcile" {
				reconciles++
			}
		}
	}
	assert.Equal(t, 1, reconciles, "the sweep runs the reconcile")
}
