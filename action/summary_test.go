package action_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/internal/ghfake"
)

// The job summary of a step shows the baseline the step took (the pm's
// first step: commit, red or green, failing tests by name, the identity)
// and the checks the harness ran (a developer's READY claim: each check's
// verdict and whether it is required), in the agent job and in publish.
func TestJobSummaryShowsBaselineAndChecks(t *testing.T) {
	// The base has no a.txt: TestFlaky fails there, named by go test -json.
	config := `agent:
  command: x
  timeout: 1m
tests:
  command: 'test -f a.txt && exit 0; echo "{\"Action\":\"fail\",\"Package\":\"p\",\"Test\":\"TestFlaky\"}"; exit 1'
  timeout: 1m
  baseline: accept
checks:
  lint: 'true'
  cover: {command: 'echo too low; exit 3', required: false}
`
	u := newUnitWith(t, config)
	dir := t.TempDir()
	scenario := `{"requirements": "x", "steps": {
 "_/pm": [{"status": "PLANNING_COMPLETE", "summary": ["1 group"], "handoff": {"plan": {"mode": "simple", "groups": [
   {"id": "A", "name": "a", "task": "t", "phase": 1}], "success_criteria": ["ok"]}}}],
 "A/developer": [{"status": "READY_FOR_QA", "summary": ["a.txt"], "write": {"a.txt": "ok\n"}}]}}`
	sc := filepath.Join(dir, "scenario.json")
	require.NoError(t, os.WriteFile(sc, []byte(scenario), 0o644))
	exe, err := os.Executable()
	require.NoError(t, err)
	agentCmd := "'" + exe + "' scripted-agent --scenario '" + sc + "' --state '" + filepath.Join(dir, "state") + "'"
	main, _ := u.Repo.Ref("refs/heads/main")
	require.Len(t, main, 40)

	// The pm step took the baseline: red, with the failing test named.
	tok := u.writeToken(u.Run)
	r := u.action(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(), "agent-command": agentCmd}))
	require.Equal(t, 0, r.code, r.stdout)
	wantBaseline := "| Baseline | **red** at `" + main[:12] + "` (go test -json) — failing: `p.TestFlaky` |"
	assert.Contains(t, r.summary, wantBaseline)
	assert.NotContains(t, r.summary, "| Checks |", "the pm step ran no checks")
	r = u.action(u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "github-token": tok}))
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.summary, wantBaseline, "the baseline crossed the hand-over")

	// The developer's READY claim: the harness ran both checks.
	require.NoError(t, u.F.WaitWebhooks(10*time.Second))
	var run ghfake.Run
	for _, x := range u.F.Runs() {
		if strings.HasPrefix(x.Inputs["step"], "1/A/developer/") {
			run = x
		}
	}
	require.NotZero(t, run.ID, "group A's developer step is dispatched")
	u.Run = run
	env := u.Env(map[string]string{"command": "agent", "step": run.Inputs["step"], "github-token": u.readToken(), "agent-command": agentCmd})
	r = u.action(env)
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.summary, "| Status | **READY_FOR_QA** |", "an optional check that fails blocks nothing")
	checks := checksRow(t, r.summary)
	assert.Contains(t, checks, "`lint` ✓ pass (required)")
	assert.Contains(t, checks, "`cover` ✗ **fail** (optional) — fail (exit 3)")
	assert.NotContains(t, r.summary, "| Baseline |", "only the pm's first step takes the baseline")

	r = u.action(u.Env(map[string]string{"command": "publish", "step": run.Inputs["step"], "github-token": u.writeToken(run),
		"handover": env["RUNNER_TEMP"] + "/bazinga-handover"}))
	require.Equal(t, 0, r.code, r.stdout)
	assert.Equal(t, checks, checksRow(t, r.summary), "publish shows the same checks")
}

// checksRow returns the Checks row's cell of a job summary.
func checksRow(t *testing.T, summary string) string {
	t.Helper()
	for _, l := range strings.Split(summary, "\n") {
		if c, ok := strings.CutPrefix(l, "| Checks | "); ok {
			return strings.TrimSuffix(c, " |")
		}
	}
	t.Fatalf("no Checks row in the summary:\n%s", summary)
	return ""
}
