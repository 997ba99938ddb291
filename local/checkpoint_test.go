package local

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// planAgent plans group A (hello.txt); asked again with the feedback "Also
// add bye.txt" it plans A and B; then it says BAZINGA.
const planAgent = `#!/bin/sh
set -e
count() { n=$(cat "$STATE/$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$STATE/$1"; echo $n; }
case "$BAZINGA_ROLE" in
pm)
  n=$(count pm)
  if [ "$n" = 1 ]; then
    echo '{"status":"PLANNING_COMPLETE","handoff":{"plan":{"groups":[{"id":"A","name":"hello","task":"add hello.txt"}],"success_criteria":["the files exist"]}}}'
  elif [ "$n" = 2 ] && grep -q 'Also add bye.txt' "$BAZINGA_PROMPT_FILE"; then
    echo '{"status":"PLANNING_COMPLETE","handoff":{"plan":{"groups":[{"id":"A","name":"hello","task":"add hello.txt"},{"id":"B","name":"bye","task":"add bye.txt","phase":2,"depends_on":["A"]}],"success_criteria":["the files exist"]}}}'
  else
    echo '{"status":"BAZINGA","handoff":{"criteria":[{"criterion":"the files exist","met":true,"evidence":"merged"}]}}'
  fi ;;
developer)
  if [ "$BAZINGA_GROUP" = B ]; then echo bye > bye.txt; else echo hello > hello.txt; fi
  echo 'Status: READY_FOR_REVIEW' ;;
tech_lead) echo 'Status: APPROVED' ;;
*) echo "unexpected role $BAZINGA_ROLE" >&2; exit 1 ;;
esac
`

func checkpointRepo(t *testing.T) (repo string, opts Options, out *bytes.Buffer) {
	t.Helper()
	repo = gitRepo(t, map[string]string{"README.md": "x\n", ".github/bazinga.yml": "checkpoints: [plan]\n"})
	agentCmd, state := writeAgent(t, planAgent)
	t.Setenv("STATE", state)
	test := "true"
	out = &bytes.Buffer{}
	return repo, Options{Repo: repo, Requirements: "greet", AgentCommand: agentCmd, TestCommand: &test,
		PassEnv: []string{"STATE"}, Out: out}, out
}

func passed(s pipeline.Session) []string {
	var out []string
	for _, cp := range s.PassedCheckpoints {
		out = append(out, cp.ID+" approved:"+cp.ApprovedBy+" revised:"+cp.RevisedBy+" "+cp.Feedback)
	}
	return out
}

func TestPlanCheckpointOnTheTerminal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		input  string
		status pipeline.SessionStatus
		passed []string
		groups int
		out    []string
	}{
		{"approve", "a\n", pipeline.SessionDone, []string{"plan-1 approved:terminal revised: "}, 1,
			[]string{"✋ plan-1 waits for approval before any work starts:\nPhase 1:\n  A hello (implementation, developer): add hello.txt\nSuccess criteria:\n  - the files exist",
				`Approve the plan? Type "a" to approve, "f <feedback>" to send it back to the pm, or "s" to stop:`,
				"plan-1 approved by terminal: the work starts."}},
		{"feedback, then approve the new plan", "looks odd\nf Also add bye.txt\nyes\n", pipeline.SessionDone,
			[]string{"plan-1 approved: revised:terminal Also add bye.txt", "plan-2 approved:terminal revised: "}, 2,
			[]string{`type "a" to approve, "f <feedback>" to send it back to the pm, or "s" to stop`,
				"terminal sent plan-1 back to the pm", "✋ plan-2 waits for approval", "  B bye (implementation, developer), after A: add bye.txt"}},
		{"stop", "s\n", pipeline.SessionStopped, nil, 1, []string{"✋ plan-1 waits for approval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, opts, out := checkpointRepo(t)
			opts.Terminal, opts.Input = true, strings.NewReader(tc.input)
			res, err := Run(context.Background(), opts)
			require.NoError(t, err, out.String())
			require.Equal(t, tc.status, res.Status, "%s\n%s", res.Reason, out.String())
			assert.Equal(t, tc.passed, passed(res.Session))
			assert.Len(t, res.Session.Groups, tc.groups)
			for _, want := range tc.out {
				assert.Contains(t, out.String(), want)
			}
			assert.NotContains(t, out.String(), "/bazinga approve", "GitHub's commands are not offered on the terminal")
			if tc.status == pipeline.SessionStopped {
				assert.NoFileExists(t, filepath.Join(repo, "hello.txt"))
				assert.Empty(t, gitCLI(t, repo, "branch", "--list", "bazinga/*"), "nothing started")
			}
		})
	}
}

// Without a terminal the run stops at the checkpoint, saved; --resume with
// --feedback sends the plan back, --resume with --approve goes on.
func TestPlanCheckpointWithoutATerminal(t *testing.T) {
	repo, opts, out := checkpointRepo(t)
	res, err := Run(context.Background(), opts)
	require.NoError(t, err, out.String())
	require.Equal(t, pipeline.SessionAwaitingInput, res.Status, out.String())
	require.NotNil(t, res.Session.Checkpoint)
	assert.Equal(t, "plan-1", res.Session.Checkpoint.ID)
	assert.Contains(t, out.String(), "plan-1 waits for approval: this run cannot ask (no terminal); the session is saved and stops here.")
	assert.Contains(t, out.String(), "bazinga run --repo "+repo+" --resume "+res.ID+" --approve")
	assert.Contains(t, out.String(), `--resume `+res.ID+` --feedback "what to change"`)
	assert.NoFileExists(t, filepath.Join(repo, "hello.txt"))
	assert.Empty(t, gitCLI(t, repo, "branch", "--list", "bazinga/*"), "no developer ran")

	// The summary (and `bazinga status`) shows the plan to review.
	var summary bytes.Buffer
	WriteSummary(&summary, res.Session)
	assert.Contains(t, summary.String(), "✋ plan-1 waits for approval: bazinga run --resume "+res.ID+` --approve, or --feedback "what to change"`+
		"\nPhase 1:\n  A hello (implementation, developer): add hello.txt\n")

	// A plain resume without a terminal comes back to the same checkpoint.
	resume := opts
	resume.Requirements, resume.ResumeID = "", res.ID
	out.Reset()
	again, err := Run(context.Background(), resume)
	require.NoError(t, err, out.String())
	require.Equal(t, pipeline.SessionAwaitingInput, again.Status)
	assert.Equal(t, "plan-1", again.Session.Checkpoint.ID)

	// --feedback: the pm plans again; the new plan waits in its turn.
	withFeedback := resume
	withFeedback.Feedback = "Also add bye.txt"
	out.Reset()
	again, err = Run(context.Background(), withFeedback)
	require.NoError(t, err, out.String())
	require.Equal(t, pipeline.SessionAwaitingInput, again.Status, out.String())
	assert.Equal(t, "plan-2", again.Session.Checkpoint.ID)
	assert.Len(t, again.Session.Groups, 2)

	// --approve approves it (and any later checkpoint) and runs to the end.
	approve := resume
	approve.Approve = true
	out.Reset()
	done, err := Run(context.Background(), approve)
	require.NoError(t, err, out.String())
	require.True(t, done.Verified(), "%s: %s\n%s", done.Status, done.Reason, out.String())
	assert.Contains(t, out.String(), "approved with --approve")
	assert.Equal(t, []string{"plan-1 approved: revised:local Also add bye.txt", "plan-2 approved:--approve revised: "}, passed(done.Session))
	assert.FileExists(t, filepath.Join(repo, "hello.txt"))
	assert.FileExists(t, filepath.Join(repo, "bye.txt"))

	// --feedback on a session with no plan waiting is an error.
	_, err = Run(context.Background(), withFeedback)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--feedback: session "+res.ID+" has no plan or findings waiting for a decision")
}

func TestReviewerDecidesAtCheckpoints(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README.md": "x\n", ".github/bazinga.yml": "checkpoints: [plan, phase]\n"})
	agentCmd, state := writeAgent(t, planAgent)
	t.Setenv("STATE", state)
	test := "true"
	var out bytes.Buffer
	var seen []string
	res, err := Run(context.Background(), Options{Repo: repo, Requirements: "greet", AgentCommand: agentCmd, TestCommand: &test,
		PassEnv: []string{"STATE"}, Out: &out, Reviewer: func(s pipeline.Session) pipeline.Command {
			seen = append(seen, s.Checkpoint.ID)
			if s.Checkpoint.ID == "plan-1" {
				return pipeline.Command{Kind: pipeline.CommandAnswer, Text: "Also add bye.txt"}
			}
			return pipeline.Command{Kind: pipeline.CommandApprove}
		}})
	require.NoError(t, err, out.String())
	require.True(t, res.Verified(), "%s: %s\n%s", res.Status, res.Reason, out.String())
	assert.Equal(t, []string{"plan-1", "plan-2", "phase-2"}, seen)
	assert.Contains(t, out.String(), "✋ phase-2 waits for approval: phase 2 (B) starts next.")
	assert.Contains(t, out.String(), "phase-2 approved by reviewer: phase 2 starts.")
}

func TestParseCheckpointReply(t *testing.T) {
	for _, tc := range []struct {
		line string
		want pipeline.Command
		ok   bool
	}{
		{"a", pipeline.Command{Kind: pipeline.CommandApprove, Checkpoint: "plan-1"}, true},
		{" Approve ", pipeline.Command{Kind: pipeline.CommandApprove, Checkpoint: "plan-1"}, true},
		{"yes", pipeline.Command{Kind: pipeline.CommandApprove, Checkpoint: "plan-1"}, true},
		{"f split it", pipeline.Command{Kind: pipeline.CommandAnswer, Text: "split it", Checkpoint: "plan-1"}, true},
		{"feedback  two groups ", pipeline.Command{Kind: pipeline.CommandAnswer, Text: "two groups", Checkpoint: "plan-1"}, true},
		{"s", pipeline.Command{Kind: pipeline.CommandStop}, true},
		{"f", pipeline.Command{Kind: pipeline.CommandAnswer, Checkpoint: "plan-1"}, false},
		{"a because", pipeline.Command{Kind: pipeline.CommandApprove, Checkpoint: "plan-1"}, false},
		{"aprove", pipeline.Command{}, false},
		{"", pipeline.Command{}, false},
	} {
		got, ok := parseCheckpointReply(tc.line, "plan-1")
		assert.Equal(t, tc.ok, ok, "%q", tc.line)
		if ok {
			assert.Equal(t, tc.want, got, "%q", tc.line)
		}
	}
}
