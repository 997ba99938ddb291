package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// The test binary doubles as a `bazinga run` process that the kill test can
// SIGKILL: with BAZINGA_TEST_CHILD set, it runs the session described there.
func TestMain(m *testing.M) {
	if spec := os.Getenv("LOCAL_TEST_CHILD"); spec != "" {
		var c childSpec
		if err := json.Unmarshal([]byte(spec), &c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		o := Options{Repo: c.Repo, Requirements: c.Requirements, AgentCommand: c.Agent, TestCommand: &c.Test, PassEnv: c.PassEnv, Out: os.Stdout}
		if _, err := Run(context.Background(), o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childSpec is the session a child process runs.
type childSpec struct {
	Repo, Requirements, Agent, Test string
	PassEnv                         []string
}

// slowAgent is the one-group agent, two groups wide, recording every run.
const slowAgent = `#!/bin/sh
set -e
echo "$BAZINGA_STEP" >> "$STATE/runs"
sleep 0.15
count() { n=$(cat "$STATE/$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$STATE/$1"; echo $n; }
case "$BAZINGA_ROLE" in
pm)
  if grep -q '"final_check"\|final check\|Every group is merged' "$BAZINGA_PROMPT_FILE"; then
    printf '{"status":"BAZINGA","summary":["done"],"handoff":{"criteria":[{"criterion":"files exist","met":true,"evidence":"merged"}]}}' > "$BAZINGA_RESULT_FILE"
  else
    printf '{"status":"PLANNING_COMPLETE","summary":["two groups"],"handoff":{"plan":{"groups":[{"id":"A","task":"a.txt"},{"id":"B","task":"b.txt"}],"success_criteria":["files exist"]}}}' > "$BAZINGA_RESULT_FILE"
  fi ;;
developer) echo "$BAZINGA_GROUP" > "$BAZINGA_GROUP.txt"; echo '{"status":"READY_FOR_QA","summary":["wrote a file"]}' ;;
qa) echo 'Status: PASS' ;;
tech_lead) echo 'Status: APPROVED' ;;
esac
`

// Killed at any moment, a resumed session completes with no step lost and
// none run twice except the ones that were interrupted.
func TestKillAndResume(t *testing.T) {
	for _, killAfter := range []int{1, 2, 4, 6, 8, 9, 10, 12} {
		t.Run(fmt.Sprintf("kill after %d log entries", killAfter), func(t *testing.T) {
			repo := gitRepo(t, map[string]string{"README.md": "x\n"})
			agentCmd, state := writeAgent(t, slowAgent)
			t.Setenv("STATE", state)
			spec, err := json.Marshal(childSpec{Repo: repo, Requirements: "two files", Agent: agentCmd, Test: "true", PassEnv: []string{"STATE"}})
			require.NoError(t, err)
			exe, err := os.Executable()

			require.NoError(t, err)
			child := exec.Command(exe, "-test.run=^$")
			// A killed process cannot remove its working copies: its
			// temporary directory is the test's, removed with it (issue 25).
			child.Env = append(os.Environ(), "LOCAL_TEST_CHILD="+string(spec), "TMPDIR="+t.TempDir())
			child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var childOut bytes.Buffer
			child.Stdout, child.Stderr = &childOut, &childOut
			require.NoError(t, child.Start())

			id := waitForEntries(t, repo, killAfter)
			// SIGKILL the whole process group: the session and its agents.
			require.NoError(t, syscall.Kill(-child.Process.Pid, syscall.SIGKILL))
			_ = child.Wait()

			// What was in flight when it died: the saved state plus the log replayed.
			st, err := OpenStore(repo, id)
			require.NoError(t, err)
			require.NoError(t, st.Repair())
			cfg, err := st.Config()
			require.NoError(t, err)
			s, _, err := st.Replay(cfg)
			require.NoError(t, err)
			interrupted := map[string]bool{}
			for _, step := range s.InFlight() {
				interrupted[step.ID] = true
			}

			var out bytes.Buffer
			res, err := Run(context.Background(), Options{Repo: repo, ResumeID: id, PassEnv: []string{"STATE"}, Out: &out})
			require.NoError(t, err, out.String())
			if !res.Verified() {
				fsck, _ := exec.Command("git", "-C", repo, "fsck", "--full").CombinedOutput()
				ls, _ := exec.Command("sh", "-c", "cd "+repo+"/.git && find . -newer HEAD -type f | xargs ls -la").CombinedOutput()
				t.Logf("fsck: %s\nfiles: %s", fsck, ls)
			}
			require.True(t, res.Verified(), "%s: %s\nchild: %s\nresume: %s", res.Status, res.Reason, childOut.String(), out.String())

			runs, err := os.ReadFile(filepath.Join(state, "runs"))
			require.NoError(t, err)
			seen := map[string]int{}
			for _, line := range strings.Fields(string(runs)) {
				seen[line]++
			}
			for step, n := range seen {
				if n > 1 {
					assert.True(t, interrupted[step], "step %s ran %d times but was not interrupted", step, n)
				}
				assert.LessOrEqual(t, n, 2, "step %s", step)
			}
			// Every agent step of the final session ran.
			for _, step := range res.Session.Steps {
				if step.Role.IsAgent() && step.State == pipeline.StepDone {
					assert.Positive(t, seen[step.ID], "step %s never ran", step.ID)
				}
			}
			assert.Empty(t, gitCLI(t, repo, "status", "--porcelain"))
		})
	}
}

// waitForEntries waits until the child's session log has n entries and
// returns the session id.
func waitForEntries(t *testing.T, repo string, n int) string {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ids, _ := ListSessions(repo)
		if len(ids) == 1 {
			if st, err := OpenStore(repo, ids[0]); err == nil {
				if log, err := st.Log(); err == nil && len(log) >= n {
					return ids[0]
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the child session never reached %d log entries", n)
	return ""
}
