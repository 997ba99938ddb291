package action_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/internal/e2eworld"
)

// A hand-over whose usage is out of bounds is still published: the
// privileged job leaves the usage out with a warning (what a step cost is
// never a reason to throw its work away), and posts the result.
func TestPublishDropsMalformedUsage(t *testing.T) {
	u := newUnit(t)
	run, env := groupStep(t, u, u.AgentCmd(t))
	step := run.Inputs["step"]
	dir := env["RUNNER_TEMP"] + "/bazinga-handover"
	m := e2eworld.ReadManifest(t, dir)
	m["result"].(map[string]any)["usage"] = map[string]any{"steps": 1, "priced": 1, "cost_micros": -400, "input_tokens": 10}
	m.Write(t, dir)

	r := u.action(u.Env(map[string]string{"command": "publish", "step": step, "github-token": u.F.RunToken(run), "handover": dir}))
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::warning::bazinga: step "+step+": usage refused: cost -400 millionths of a dollar is outside")
	_, claimed, results := u.published(step)
	assert.True(t, claimed)
	assert.Equal(t, 1, results)
	for _, n := range append([]int{u.issue}, prNumbers(u.Repo)...) {
		for _, c := range u.Repo.Comments(n) {
			if rec, ok := codec.ParseResultComment(c.GetBody()); ok && rec.Step == step {
				assert.Nil(t, rec.Usage, "the posted record carries no usage")
			}
		}
	}
}
