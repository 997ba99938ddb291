package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

func TestConfigEntriesCoverEveryKey(t *testing.T) {
	cfg := pipeline.DefaultConfig()
	cfg.Checkpoints = []pipeline.CheckpointKind{pipeline.CheckpointPlan}
	cfg.Checks = []pipeline.CheckConfig{{Name: "lint", Command: "golangci-lint run", Required: true}}
	entries := Entries(cfg)
	require.Len(t, entries, len(cfgKeys))
	byKey := map[string]string{}
	for _, e := range entries {
		byKey[e.Key] = e.Value
	}
	assert.Equal(t, "claude -p --model {model}", byKey["agent.command"])
	assert.Equal(t, "30m", byKey["agent.timeout"])
	assert.Equal(t, "[]", byKey["agent.env"])
	assert.Equal(t, "[plan]", byKey["checkpoints"])
	assert.Equal(t, "{lint: {command: golangci-lint run, required: true}}", byKey["checks"])
	assert.Equal(t, "4", byKey["max_parallel"])
}

// The commented file sets exactly the keys asked for; everything else is a
// comment showing the value, and the file reads back to the configuration.
func TestCommentedFileReadsBack(t *testing.T) {
	cfg := WithAgentCommand(pipeline.DefaultConfig(), "codex exec")
	cfg.Tests.Command = "npm test"
	cfg.Build.Command = "npm ci"
	cfg.Agent.Env = []string{"CODEX_API_KEY"}
	set := map[string]string{"agent.command": "found on PATH", "agent.env": "", "tests.command": "detected: package.json", "build.command": "detected"}
	text := string(CommentedFile(cfg, "Written by a test.\nTwo lines.", set))
	assert.True(t, strings.HasPrefix(text, "# Written by a test.\n# Two lines.\nagent:\n  command: codex exec  # found on PATH\n"), text)
	assert.Contains(t, text, "\n  # timeout: 30m\n")
	assert.Contains(t, text, "\n  env: [CODEX_API_KEY]  # names of environment variables passed through to the agent\n")
	assert.Contains(t, text, "\n# models:\n#   pm: gpt-6-astra\n")
	assert.Contains(t, text, "\ntests:\n  command: npm test  # detected: package.json\n")
	assert.Contains(t, text, "\n# max_parallel: 4  # developer/senior steps in flight\n")
	got, keys, err := ParseConfigFileKeys("bazinga.yml", []byte(text))
	require.NoError(t, err, text)
	assert.Equal(t, cfg, got)
	var setKeys []string
	for k := range keys {
		setKeys = append(setKeys, k)
	}
	assert.ElementsMatch(t, []string{"agent.command", "agent.env", "tests.command", "build.command"}, setKeys)

	// Nothing set: the defaults, every key a comment.
	def, keys, err := ParseConfigFileKeys("bazinga.yml", CommentedFile(pipeline.DefaultConfig(), "x", nil))
	require.NoError(t, err)
	assert.Equal(t, pipeline.DefaultConfig(), def)
	assert.Empty(t, keys)
}
