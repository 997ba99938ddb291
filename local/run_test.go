package local

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// gitRepo makes a real repository with one commit on main.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	gitCLI(t, dir, "init", "-q", "-b", "main")
	gitCLI(t, dir, "add", "-A")
	gitCLI(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// scriptAgent is a shell agent that plays every role of a one-group session.
const scriptAgent = `#!/bin/sh
set -e
count() { n=$(cat "$STATE/$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$STATE/$1"; echo $n; }
case "$BAZINGA_ROLE" in
pm)
  n=$(count pm)
  if [ "$n" = 1 ]; then
    printf '{"status":"PLANNING_COMPLETE","summary":["one group"],"handoff":{"plan":{"mode":"simple","groups":[{"id":"A","name":"hello","task":"add hello.txt"}],"success_criteria":["hello.txt exists"]}}}' > "$BAZINGA_RESULT_FILE"
  else
    printf '{"status":"BAZINGA","summary":["all done"],"handoff":{"criteria":[{"criterion":"hello.txt exists","met":true,"evidence":"merged in group A"}]}}' > "$BAZINGA_RESULT_FILE"
  fi ;;
developer) echo hello > hello.txt; echo '{"status":"READY_FOR_QA","summary":["added hello.txt"],"handoff":{"files_changed":["hello.txt"]}}' ;;
qa) echo 'Status: PASS' ;;
tech_lead) printf '{"status":"APPROVED","summary":["fine"]}' > "$BAZINGA_RESULT_FILE" ;;
*) echo "unexpected role $BAZINGA_ROLE" >&2; exit 1 ;;
esac
`

func writeAgent(t *testing.T, script string) (cmd, state string) {
	dir := t.TempDir()
	state = filepath.Join(dir, "state")
	require.NoError(t, os.Mkdir(state, 0o755))
	cmd = filepath.Join(dir, "agent.sh")
	require.NoError(t, os.WriteFile(cmd, []byte(script), 0o755))
	return cmd, state
}

func TestLocalSessionToBazinga(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README.md": "demo\n"})
	agentCmd, state := writeAgent(t, scriptAgent)
	t.Setenv("STATE", state)
	test := "test -f hello.txt"
	var out bytes.Buffer
	// The gate is red on the base by design (hello.txt comes with group A):
	// no baseline, so the gate's verdict is the command's.
	res, err := Run(context.Background(), Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd,
		TestCommand: &test, Baseline: pipeline.BaselineOff, PassEnv: []string{"STATE"}, Out: &out})
	require.NoError(t, err, out.String())
	assert.True(t, res.Verified(), "%s: %s\n%s", res.Status, res.Reason, out.String())
	text := out.String()
	assert.Contains(t, text, "🔨 Group A [developer/haiku] READY_FOR_QA | added hello.txt → qa")
	assert.Contains(t, text, "🔀 Group A [merge/harness] MERGE_SUCCESS")
	assert.Contains(t, text, "🏁 Session [validate/sonnet] ACCEPT")
	// The merge landed on main, the checkout followed, and the tree is clean.
	assert.FileExists(t, filepath.Join(repo, "hello.txt"))
	assert.Equal(t, "main", gitCLI(t, repo, "rev-parse", "--abbrev-ref", "HEAD"))
	assert.Empty(t, gitCLI(t, repo, "status", "--porcelain"))
	assert.Contains(t, gitCLI(t, repo, "log", "--format=%B", "-1"), "Bazinga-Step: "+res.ID+"/A/merge/")
	// The session directory holds the state and the log.
	assert.FileExists(t, filepath.Join(repo, ".bazinga", "sessions", res.ID, "state.json"))
	assert.FileExists(t, filepath.Join(repo, ".bazinga", "sessions", res.ID, "events.jsonl"))
}

func TestBadInputFailsBeforeAnythingRuns(t *testing.T) {
	agentCmd, _ := writeAgent(t, scriptAgent)
	notRepo := t.TempDir()
	dirty := gitRepo(t, map[string]string{"a.txt": "a\n"})
	require.NoError(t, os.WriteFile(filepath.Join(dirty, "a.txt"), []byte("changed\n"), 0o644))
	clean := gitRepo(t, map[string]string{"a.txt": "a\n"})
	badCfg := gitRepo(t, map[string]string{".github/bazinga.yml": "max_parallel: 0\n"})
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"not a git repository", Options{Repo: notRepo, Requirements: "x", AgentCommand: agentCmd}, "is not a git repository"},
		{"missing directory", Options{Repo: filepath.Join(notRepo, "nope"), Requirements: "x", AgentCommand: agentCmd}, "no such file"},
		{"dirty base", Options{Repo: dirty, Requirements: "x", AgentCommand: agentCmd}, "uncommitted changes (a.txt)"},
		{"missing base branch", Options{Repo: clean, Base: "develop", Requirements: "x", AgentCommand: agentCmd}, `base branch "develop" not found`},
		{"agent command not found", Options{Repo: clean, Requirements: "x", AgentCommand: "claudex -p"}, `agent command "claudex"`},
		{"no requirements", Options{Repo: clean, AgentCommand: agentCmd}, "no requirements"},
		{"bad configuration", Options{Repo: badCfg, Requirements: "x", AgentCommand: agentCmd}, "max_parallel"},
		{"bad flag", Options{Repo: clean, Requirements: "x", AgentCommand: agentCmd, MaxParallel: -1}, "max_parallel"},
		{"unknown session", Options{Repo: clean, ResumeID: "20200101-000000", AgentCommand: agentCmd}, "no session 20200101-000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), tt.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			_, statErr := os.Stat(filepath.Join(tt.opts.Repo, StoreDir))
			assert.True(t, os.IsNotExist(statErr), "nothing may be written before the checks pass")
		})
	}
}

func TestJSONOutput(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README.md": "demo\n"})
	// The gate fails on the base after the merge: validation must reject BAZINGA.
	agentCmd, state := writeAgent(t, scriptAgent)
	t.Setenv("STATE", state)
	test := `test -f hello.txt && ! test -f .bazinga-never`
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd,
		TestCommand: &test, Baseline: pipeline.BaselineOff, PassEnv: []string{"STATE"}, Out: &out, JSON: true})
	require.NoError(t, err)
	assert.True(t, res.Verified())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var kinds []string
	for _, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		kinds = append(kinds, m["type"].(string))
	}
	assert.Equal(t, "started", kinds[0])
	assert.Contains(t, kinds, "event")
	assert.Contains(t, kinds, "action")
	assert.Contains(t, kinds, "capsule")
	assert.Equal(t, "end", kinds[len(kinds)-1])
}

// askingAgent's pm asks which database to use before planning.
const askingAgent = `#!/bin/sh
set -e
count() { n=$(cat "$STATE/$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$STATE/$1"; echo $n; }
case "$BAZINGA_ROLE" in
pm)
  n=$(count pm)
  if [ "$n" = 1 ]; then
    echo '{"status":"NEEDS_CLARIFICATION","summary":["which database?"],"handoff":{"question":"Postgres or SQLite?","options":["Postgres","SQLite"],"fallback":"SQLite"}}'
  elif [ "$n" = 2 ]; then
    db=sqlite; if grep -q 'Answer from terminal: Postgres' "$BAZINGA_PROMPT_FILE"; then db=postgres; fi
    echo "{\"status\":\"PLANNING_COMPLETE\",\"handoff\":{\"plan\":{\"groups\":[{\"id\":\"$db\",\"task\":\"use $db\"}]}}}"
  else
    echo '{"status":"BAZINGA","handoff":{"criteria":[]}}'
  fi ;;
developer) echo x > x.txt; echo 'Status: READY_FOR_REVIEW' ;;
tech_lead) echo 'Status: APPROVED' ;;
esac
`

func TestClarificationOnTheTerminal(t *testing.T) {
	for _, tc := range []struct {
		name     string
		terminal bool
		input    string
		group    string
	}{
		{"no terminal: the fallback at once", false, "", "sqlite"},
		{"terminal: the answer", true, "Postgres\n", "postgres"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := gitRepo(t, map[string]string{"README.md": "x\n"})
			agentCmd, state := writeAgent(t, askingAgent)
			t.Setenv("STATE", state)
			test := "true"
			var out bytes.Buffer
			res, err := Run(context.Background(), Options{Repo: repo, Requirements: "store things", AgentCommand: agentCmd,
				TestCommand: &test, PassEnv: []string{"STATE"}, Out: &out, Terminal: tc.terminal, Input: strings.NewReader(tc.input)})
			require.NoError(t, err)
			require.True(t, res.Verified(), out.String())
			require.Len(t, res.Session.Groups, 1)
			assert.Equal(t, tc.group, res.Session.Groups[0].ID)
			if tc.terminal {
				assert.Contains(t, out.String(), "❓ The pm asks:\nPostgres or SQLite?")
			}
		})
	}
}

// A base whose tests already fail pauses the session with the failure named;
// resuming accepts the baseline and the session runs to BAZINGA. The tests
// name failures (go test -json): one fails on the base and keeps failing,
// which the gate no longer holds against the group.
func TestRedBaselinePausesThenResumeAccepts(t *testing.T) {
	script := `#!/bin/sh
echo '{"Action":"output","Package":"p","Test":"TestFlaky","Output":"flaky\n"}'
echo '{"Action":"fail","Package":"p","Test":"TestFlaky"}'
if [ -f hello.txt ]; then echo '{"Action":"pass","Package":"p","Test":"TestHello"}'; fi
exit 1
`
	repo := gitRepo(t, map[string]string{"README.md": "demo\n", "t.sh": script})
	require.NoError(t, os.Chmod(filepath.Join(repo, "t.sh"), 0o755))
	gitCLI(t, repo, "add", "-A")
	gitCLI(t, repo, "commit", "-q", "-m", "executable")
	agentCmd, state := writeAgent(t, scriptAgent)
	t.Setenv("STATE", state)
	test := "./t.sh"
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd,
		TestCommand: &test, PassEnv: []string{"STATE"}, Out: &out})
	require.NoError(t, err, out.String())
	require.Equal(t, pipeline.SessionPaused, res.Status, out.String())
	assert.Contains(t, res.Reason, "the tests already fail on main@")
	assert.Contains(t, res.Reason, "(go test -json) — failing: p.TestFlaky")
	assert.Contains(t, out.String(), "↳ baseline: the tests already fail")
	require.NotNil(t, res.Session.Baseline)
	assert.False(t, res.Session.Baseline.Accepted)

	out.Reset()
	res, err = Run(context.Background(), Options{Repo: repo, ResumeID: res.ID, PassEnv: []string{"STATE"}, Out: &out})
	require.NoError(t, err, out.String())
	assert.True(t, res.Verified(), "%s: %s\n%s", res.Status, res.Reason, out.String())
	assert.True(t, res.Session.Baseline.Accepted)
	assert.Contains(t, out.String(), "baseline of main is accepted")
}
