package config

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

func TestParseConfigCheckpoints(t *testing.T) {
	ok := []struct {
		in   string
		want []pipeline.CheckpointKind
	}{
		{"checkpoints: [plan]\n", []pipeline.CheckpointKind{pipeline.CheckpointPlan}},
		{"checkpoints: [phase, plan]\n", []pipeline.CheckpointKind{pipeline.CheckpointPhase, pipeline.CheckpointPlan}},
		{"checkpoints:\n  - plan\n  - phase\n", []pipeline.CheckpointKind{pipeline.CheckpointPlan, pipeline.CheckpointPhase}},
		{"checkpoints: []\n", nil},
		{"checkpoints:\n", nil},
	}
	for _, tt := range ok {
		t.Run(tt.in, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tt.in))
			require.NoError(t, err)
			want := pipeline.DefaultConfig()
			want.Checkpoints = tt.want
			assert.Equal(t, want, cfg)
			require.NoError(t, Validate(cfg))
			// Marshal writes it back to the same configuration.
			out, err := Marshal(cfg)
			require.NoError(t, err)
			back, err := ParseConfig(out)
			require.NoError(t, err, "%s", out)
			assert.Equal(t, cfg, back, "%s", out)
		})
	}
	bad := []struct {
		name, in string
		want     string
	}{
		{"scalar", "checkpoints: plan\n", `bazinga.yml line 1: checkpoints: want a list of checkpoints: plan, phase, got "plan" (write a list: [plan])`},
		{"unknown", "max_parallel: 2\ncheckpoints: [plan, review]\n", `bazinga.yml line 2: checkpoints: unknown checkpoint "review" (known: plan, phase)`},
		{"typo", "checkpoints: [phases]\n", `bazinga.yml line 1: checkpoints: unknown checkpoint "phases"; did you mean "phase"?`},
		{"upper case", "checkpoints: [Plan]\n", `unknown checkpoint "Plan"; did you mean "plan"?`},
		{"twice", "checkpoints:\n  - plan\n  - plan\n", `bazinga.yml line 3: checkpoints: "plan" is listed twice (lines 2 and 3)`},
		{"number", "checkpoints: [1]\n", `checkpoints: want a list of checkpoints: plan, phase, got 1`},
		{"mapping", "checkpoints: {plan: true}\n", `checkpoints: want a list of checkpoints: plan, phase, got a mapping`},
		{"nested", "agent:\n  checkpoints: [plan]\n", `unknown key "agent.checkpoints"; did you mean "checkpoints"?`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	cfg := pipeline.DefaultConfig()
	cfg.Checkpoints = []pipeline.CheckpointKind{pipeline.CheckpointPlan, pipeline.CheckpointKind("later"), pipeline.CheckpointPlan}
	err := Validate(cfg)
	require.Error(t, err)
	assert.Equal(t, "checkpoints: unknown checkpoint later (known: plan, phase)\ncheckpoints: \"plan\" is listed twice", err.Error())
}

func TestParseMergeKeys(t *testing.T) {
	cfg, err := ParseConfig([]byte("merge:\n  pr_method: rebase\n  checks_timeout: 45m\n"))
	require.NoError(t, err)
	assert.Equal(t, pipeline.PRMethodRebase, cfg.Merge.PRMethod)
	assert.Equal(t, 45*time.Minute, cfg.Merge.ChecksWait())

	for in, want := range map[string]string{
		"merge:\n  pr_method: fast-forward\n": `merge.pr_method: want "auto", "merge", "squash" or "rebase", got "fast-forward"`,
		"merge:\n  method: squash\n":          `got "squash" (squash is a merge.pr_method: how GitHub merges the group PR)`,
		"merge:\n  checks_timeout: 0s\n":      "merge.checks_timeout",
	} {
		_, err := ParseConfig([]byte(in))
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want)
	}
}

func TestCostLimitConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte("limits:\n  session_cost_usd: 20\n  step_cost_usd: 2.50\n"))
	require.NoError(t, err)
	assert.Equal(t, 20.0, cfg.Limits.SessionCostUSD)
	assert.Equal(t, 2.5, cfg.Limits.StepCostUSD)
	out, err := Marshal(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(out), "session_cost_usd: 20")
	assert.Contains(t, string(out), "step_cost_usd: 2.5")
	back, err := ParseConfig(out)
	require.NoError(t, err)
	assert.Equal(t, cfg, back)

	def, err := ParseConfig(nil)
	require.NoError(t, err)
	assert.Zero(t, def.Limits.SessionCostUSD, "no limit by default")

	for _, tc := range []struct{ name, yaml, want string }{
		{"negative", "limits:\n  session_cost_usd: -1\n", "line 2: limits.session_cost_usd: want an amount of US dollars"},
		{"dollar sign", "limits:\n  step_cost_usd: $5\n", "(write the number without the $)"},
		{"string", "limits:\n  step_cost_usd: \"5\"\n", `got "5"`},
		{"too big", "limits:\n  session_cost_usd: 2e6\n", "got 2e+06"},
		{"infinite", "limits:\n  session_cost_usd: .inf\n", "limits.session_cost_usd"},
		{"not a number", "limits:\n  session_cost_usd: .nan\n", "limits.session_cost_usd"},
		{"list", "limits:\n  session_cost_usd: [1]\n", "got a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml))
			require.Error(t, err)
			var ce *ConfigError
			require.True(t, errors.As(err, &ce))
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	bad := pipeline.DefaultConfig()
	bad.Limits.StepCostUSD = math.NaN()
	require.ErrorContains(t, Validate(bad), "limits.step_cost_usd")
}
