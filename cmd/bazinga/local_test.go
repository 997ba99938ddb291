package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/local"
	"github.com/bazinga-bot/bazinga/pipeline"
)

const oneGroupAgent = `#!/bin/sh
case "$BAZINGA_ROLE" in
pm) if [ -f "$STATE/planned" ]; then echo '{"status":"BAZINGA","handoff":{"criteria":[]}}'; else touch "$STATE/planned"; echo '{"status":"PLANNING_COMPLETE","handoff":{"plan":{"groups":[{"id":"A","task":"x"}]}}}'; fi ;;
developer) echo ok > a.txt; echo 'Status: READY_FOR_REVIEW' ;;
tech_lead) echo 'Status: APPROVED' ;;
esac
`

func repoWithCommit(t *testing.T) string {
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	return dir
}

func TestRunThenStatus(t *testing.T) {
	repo := repoWithCommit(t)
	state := t.TempDir()
	agentPath := filepath.Join(t.TempDir(), "agent.sh")
	require.NoError(t, os.WriteFile(agentPath, []byte(oneGroupAgent), 0o755))
	t.Setenv("STATE", state)
	test := "test -f a.txt"
	// The gate is red on the base by design: no baseline.
	res, err := local.Run(context.Background(), local.Options{Repo: repo, Requirements: "write a.txt", AgentCommand: agentPath,
		TestCommand: &test, Baseline: pipeline.BaselineOff, PassEnv: []string{"STATE"}})
	require.NoError(t, err)
	require.True(t, res.Verified(), res.Reason)

	var out, errOut bytes.Buffer
	code := run([]string{"status", "--repo", repo}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	text := out.String()
	assert.Contains(t, text, "Session "+res.ID+" — done: BAZINGA verified")
	assert.Contains(t, text, "🏁 Session [validate/sonnet] ACCEPT")

	// From a subdirectory of the repository, as git works (issue 25).
	sub := filepath.Join(repo, "deep", "er")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	out.Reset()
	require.Equal(t, 0, run([]string{"status", "--repo", sub}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "Session "+res.ID+" — done: BAZINGA verified")

	out.Reset()
	assert.Equal(t, 0, run([]string{"status", "--repo", repo, "--json", res.ID}, &out, &errOut))
	assert.True(t, strings.HasPrefix(out.String(), `{"schema":2,`))

	// Flags after the id, and the Go flag package's single dash, still work.
	out.Reset()
	assert.Equal(t, 0, run([]string{"status", res.ID, "-repo", repo, "-json"}, &out, &errOut), errOut.String())
	assert.True(t, strings.HasPrefix(out.String(), `{"schema":2,`))

	errOut.Reset()
	assert.Equal(t, 2, run([]string{"status", "--repo", repo, "19990101-000000"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "no session 19990101-000000")
}

func TestRunFlagErrors(t *testing.T) {
	repo := repoWithCommit(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--repo", repo}, "bazinga run: no requirements: say what to build as an argument"},
		{[]string{"run", "--repo", repo}, "Usage: bazinga run"},
		{[]string{"status", "--repo", t.TempDir()}, "is not a git repository, nor inside one"},
		{[]string{"run", "--repo", repo, "--max-parallel", "0", "x"}, "--max-parallel must be at least 1"},
		{[]string{"run", "--repo", repo, "--agent", "no-such-agent-xyz", "do it"}, `agent command "no-such-agent-xyz"`},
		{[]string{"run", "--repo", repo, "--issue-file", filepath.Join(repo, "missing.md")}, "missing.md"},
		{[]string{"status", "--repo", repoWithCommit(t)}, "no sessions in"},
		// checkpoints (issue 13)
		{[]string{"run", "--repo", repo, "--feedback", "smaller", "x"}, "--feedback needs --resume ID and a text"},
		{[]string{"run", "--repo", repo, "--resume", "20200101-000000", "--feedback", " "}, "--feedback needs --resume ID and a text"},
		{[]string{"run", "--repo", repo, "--resume", "20200101-000000", "--approve", "--feedback", "x"}, "goes without --approve"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(tt.args, &out, &errOut)
		assert.NotEqual(t, 0, code, "%v", tt.args)
		assert.Contains(t, errOut.String(), tt.want, "%v", tt.args)
	}
}

// A run that cannot ask stops at the plan checkpoint and says how to go on;
// --resume --approve finishes it (issue 13).
func TestRunStopsAtCheckpointThenApproves(t *testing.T) {
	repo := repoWithCommit(t)
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".github"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".github", "bazinga.yml"), []byte("checkpoints: [plan]\nagent:\n  env: [STATE]\n"), 0o644))
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "checkpoints"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	agentPath := filepath.Join(t.TempDir(), "agent.sh")
	require.NoError(t, os.WriteFile(agentPath, []byte(oneGroupAgent), 0o755))
	t.Setenv("STATE", t.TempDir())
	var out, errOut bytes.Buffer
	code := run([]string{"run", "--repo", repo, "--agent", agentPath, "--test-command", "test -f a.txt", "--baseline", "off", "write a.txt"}, &out, &errOut)
	require.Equal(t, 1, code, errOut.String())
	ids, err := local.ListSessions(repo)
	require.NoError(t, err)
	require.Len(t, ids, 1)
	assert.Contains(t, errOut.String(), "bazinga: session "+ids[0]+" waits for approval of plan-1; approve with: bazinga run --repo "+repo+" --resume "+ids[0]+" --approve")
	assert.NoFileExists(t, filepath.Join(repo, "a.txt"))
	out.Reset()
	errOut.Reset()
	code = run([]string{"run", "--repo", repo, "--agent", agentPath, "--test-command", "test -f a.txt", "--resume", ids[0], "--approve"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String()+out.String())
	assert.FileExists(t, filepath.Join(repo, "a.txt"))
}
