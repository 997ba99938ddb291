package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// Issue 28, first row, in local mode: someone pushes to a group branch
// between the tech lead's approval and the merge. Before the fix the merge
// landed the branch as it was, the unreviewed commit with it. Now the merge
// lands only the reviewed head: it reports that the branch moved (naming
// the new head and its author), the group goes back through QA and review
// on the new head, and that head merges through the normal route.
//
// The timing is made deterministic with the merge lane: A's QA waits until
// B's merge is in flight, so A is approved while B merges and its merge
// waits for the lane; B's test gate (the test command, in B's land working
// copy) waits until A is approved and then pushes alice's commit to A's
// branch, before A's merge starts.

// The test binary doubles as the helper the agent and the test command
// call: `forcepush-hook wait <repo> <group> <stage>...` and
// `forcepush-hook gate <repo> <marker>`. An init runs before TestMain.
func init() {
	if len(os.Args) > 2 && os.Args[1] == "forcepush-hook" {
		if err := forcePushHook(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "forcepush-hook:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
}

func forcePushHook(args []string) error {
	switch {
	case args[0] == "wait" && len(args) >= 4:
		_, err := waitStage(args[1], args[2], args[3:]...)
		return err
	case args[0] == "gate" && len(args) == 3:
		return gateHook(args[1], args[2])
	}
	return fmt.Errorf("usage: forcepush-hook wait <repo> <group> <stage>... | gate <repo> <marker>")
}

// loadSession reads the session the run saved in repo.
func loadSession(repo string) (pipeline.Session, error) {
	dirs, err := filepath.Glob(filepath.Join(repo, ".bazinga", "sessions", "*"))
	if err != nil || len(dirs) != 1 {
		return pipeline.Session{}, fmt.Errorf("one session directory in %s: %v %v", repo, dirs, err)
	}
	s, _, err := (&Store{Dir: dirs[0]}).Load()
	return s, err
}

// waitStage polls the saved session until group is at one of stages.
func waitStage(repo, group string, stages ...string) (pipeline.Session, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if s, err := loadSession(repo); err == nil {
			if g := s.Group(group); g != nil && slices.Contains(stages, g.Stage.String()) {
				return s, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return pipeline.Session{}, fmt.Errorf("group %s did not reach %v within 30s", group, stages)
}

// gateHook runs as part of the test command. In B's merge gate (its land
// working copy, while B's merge is the step in flight) it waits until A is
// approved and pushes alice's commit to A's branch, once.
func gateHook(repo, marker string) error {
	wd, err := os.Getwd()
	if err != nil || !strings.HasPrefix(filepath.Base(wd), "bazinga-land-") {
		return err
	}
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	s, err := loadSession(repo)
	if err != nil {
		return err
	}
	b := s.Group("B")
	if st := s.Step(b.InFlight); st == nil || st.Role != pipeline.RoleMerge {
		return nil // A's merge gate
	}
	s, err = waitStage(repo, "A", "approved")
	if err != nil {
		return err
	}
	a := s.Group("A")
	tmp, err := os.MkdirTemp("", "alice-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	git := func(dir string, args ...string) error {
		cmd := exec.Command("git", append([]string{"-c", "user.name=alice", "-c", "user.email=alice@example.com"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %w: %s", args, err, out)
		}
		return nil
	}
	if err := git(tmp, "clone", "-q", "-b", a.Branch, repo, "."); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "alice.txt"), []byte("ok\n"), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"add", "alice.txt"}, {"commit", "-q", "-m", "alice: one more file"}, {"push", "-q", "origin", a.Branch}} {
		if err := git(tmp, args...); err != nil {
			return err
		}
	}
	return os.WriteFile(marker, []byte("pushed\n"), 0o644)
}

// forcePushAgent plays a two-group session; A's QA waits for B's merge.
const forcePushAgent = `#!/bin/sh
set -e
case "$BAZINGA_ROLE" in
pm)
  if grep -q 'Every group is merged' "$BAZINGA_PROMPT_FILE"; then
    printf '{"status":"BAZINGA","summary":["done"],"handoff":{"criteria":[{"criterion":"files say ok","met":true,"evidence":"merged"}]}}' > "$BAZINGA_RESULT_FILE"
  else
    printf '{"status":"PLANNING_COMPLETE","summary":["two groups"],"handoff":{"plan":{"groups":[{"id":"A","task":"a.txt"},{"id":"B","task":"b.txt"}],"success_criteria":["files say ok"]}}}' > "$BAZINGA_RESULT_FILE"
  fi ;;
developer) echo ok > "$BAZINGA_GROUP.txt"; echo '{"status":"READY_FOR_QA","summary":["wrote a file"]}' ;;
qa)
  if [ "$BAZINGA_GROUP" = A ]; then "$HOOK" forcepush-hook wait "$REPO" B merging merged; fi
  echo 'Status: PASS' ;;
tech_lead) echo 'Status: APPROVED' ;;
esac
`

func TestLocalPushAfterApprovalIsReviewedBeforeItMerges(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README.md": "x\n"})
	agentCmd, _ := writeAgent(t, forcePushAgent)
	exe, err := os.Executable()
	require.NoError(t, err)
	t.Setenv("HOOK", exe)
	t.Setenv("REPO", repo)
	marker := filepath.Join(t.TempDir(), "pushed")
	// The test command reaches the helper by its path: the gate's
	// environment is an allowlist.
	test := fmt.Sprintf(`for f in *.txt; do grep -qx ok "$f" || exit 1; done; '%s' forcepush-hook gate '%s' '%s'`, exe, repo, marker)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, Options{Repo: repo, Requirements: "two files", AgentCommand: agentCmd, TestCommand: &test,
		Baseline: pipeline.BaselineOff, PassEnv: []string{"HOOK", "REPO"}, Out: &out, TickEvery: 100 * time.Millisecond})
	require.NoError(t, err, out.String())
	require.FileExists(t, marker, "alice pushed to A's branch while A waited to merge\n%s", out.String())
	assert.True(t, res.Verified(), "%s: %s\n%s", res.Status, res.Reason, out.String())

	// alice's commit is the one A's branch holds; it reached main only
	// after QA and the tech lead passed it.
	alice := gitCLI(t, repo, "log", "-1", "--format=%H", "--author=alice", "--all")
	require.NotEmpty(t, alice)
	a := res.Session.Group("A")
	require.NotNil(t, a)
	var route []string
	for _, st := range res.Session.Steps {
		if st.Group == "A" && st.State == pipeline.StepDone {
			route = append(route, st.Role.String()+":"+st.Result.Status.String())
		}
		assert.NotContains(t, st.Note, "no result within", "step %s waited out its timeout", st.ID)
	}
	assert.Equal(t, []string{"developer:READY_FOR_QA", "qa:PASS", "tech_lead:APPROVED", "merge:MERGE_HEAD_MOVED",
		"qa:PASS", "tech_lead:APPROVED", "merge:MERGE_SUCCESS"}, route, out.String())
	assert.Equal(t, alice, a.ReviewedHead, "the tech lead approved alice's commit before it merged")
	assert.Equal(t, "ok", strings.TrimSpace(gitCLI(t, repo, "show", "main:alice.txt")))
	// The one merge of A into main has alice's commit as its second parent.
	merges := gitCLI(t, repo, "log", "--merges", "--format=%H %P", "--grep=Merge group A", "main")
	require.Len(t, strings.Split(merges, "\n"), 1, merges)
	assert.Contains(t, merges, " "+alice, "A merged at alice's (reviewed) commit")
	text := out.String()
	assert.Contains(t, text, "A's branch moved from ")
	assert.Contains(t, text, " to "+alice[:7]+" (commit by alice <alice@example.com>) after review; sending it back through QA and review")
}
