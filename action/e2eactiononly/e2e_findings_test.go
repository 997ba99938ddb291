package e2eactiononly_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"
	"github.com/google/go-github/v66/github"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// widgetFile is a 20-line file the developer writes; rev marks its revision.
func widgetFile(rev int) string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	fmt.Fprintf(&b, "// revision %d\n", rev)
	return b.String()
}

// findingsScenario: one group; the tech lead finds a HIGH issue (and a LOW
// one) twice, so it survives its revision and waits for a human.
func findingsScenario() string {
	js := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	w1, w2 := js(widgetFile(1)), js(widgetFile(2))
	return `{
 "requirements": "Write a.txt and widget.go.",
 "steps": {
  "_/pm": [
   {"status": "PLANNING_COMPLETE", "summary": ["1 group"],
    "handoff": {"plan": {"mode": "simple", "groups": [{"id": "A", "name": "widget", "task": "Write a.txt saying ok and widget.go.", "phase": 1}],
     "success_criteria": ["a.txt says ok"]}}},
   {"status": "BAZINGA", "summary": ["merged"],
    "handoff": {"criteria": [{"criterion": "a.txt says ok", "met": true, "evidence": "group A merged; the gate checks every .txt"}]}}
  ],
  "A/developer": [
   {"status": "READY_FOR_QA", "summary": ["written"], "write": {"a.txt": "ok\n", "widget.go": ` + w1 + `}},
   {"status": "READY_FOR_QA", "summary": ["lock handled"], "write": {"widget.go": ` + w2 + `}}
  ],
  "A/senior": [
   {"status": "READY_FOR_QA", "summary": ["lock handled"], "write": {"widget.go": ` + w2 + `}}
  ],
  "A/qa": [{"status": "PASS", "summary": ["1/1 checks pass"]}],
  "A/tech_lead": [
   {"status": "APPROVED", "summary": ["one blocker"], "findings": [
     {"severity": "high", "file": "widget.go", "line": 5, "end_line": 6, "problem": "the lock is never released", "fix": "defer the unlock"},
     {"severity": "low", "file": "widget.go", "line": 2, "problem": "naming"}]},
   {"status": "CHANGES_REQUESTED", "summary": ["still blocked"], "findings": [
     {"severity": "high", "file": "widget.go", "line": 5, "problem": "the lock is still never released"}]},
   {"status": "APPROVED", "summary": ["clean"]}
  ]
 }
}`
}

// Issue 26 in Action-only mode: the orchestrator (github-actions[bot],
// the PR's author) posts the tech lead's findings as COMMENT reviews with
// inline comments through the real API client against the fake's rules; a
// HIGH finding that survives its revision waits for a human, whose
// approval lets the group merge.
func TestE2EFindingsActionOnlyMode(t *testing.T) {
	t.Parallel()
	w := NewWorldWith(t, E2eConfig+"github:\n  followup_label: bazinga-followup\n")
	require.NoError(t, os.WriteFile(filepath.Join(w.Root, "scenario.json"), []byte(findingsScenario()), 0o644))
	w.ActionOnly()
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and widget.go", "a.txt must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))
	defer func() {
		if t.Failed() {
			w.Dump(issue)
		}
	}()
	sweep := func() { _, _ = w.F.TriggerSchedule(E2eFull, "bazinga.yml") }
	require.Equal(t, "bazinga:needs-input", w.Wait(issue, 60*time.Second, sweep))
	w.Settle()

	n := w.PrOf("bazinga/1-A")
	require.NotZero(t, n)
	reviews := w.Repo.Reviews(n)
	require.Len(t, reviews, 2, "one review per tech lead result with findings")
	for _, rv := range reviews {
		assert.Equal(t, ghfake.ActionsLogin, rv.GetUser().GetLogin())
		assert.Equal(t, "COMMENTED", rv.GetState(), "the PR's author can only comment")
	}
	assert.Contains(t, reviews[0].GetBody(), "sent back: a HIGH finding must be fixed")
	assert.Contains(t, reviews[1].GetBody(), "a HIGH finding survived its revision: a human decides")
	var at []string
	for _, c := range w.Repo.ReviewComments(n) {
		at = append(at, fmt.Sprintf("%s:%d-%d", c.Path, c.StartLine, c.Line))
	}
	assert.Equal(t, []string{"widget.go:5-6", "widget.go:0-2", "widget.go:0-5"}, at)

	// GitHub's timestamps are whole seconds: a command dated the second
	// the checkpoint opened counts as written before it, so alice reads
	// the findings for a moment first, as a person would.
	time.Sleep(1100 * time.Millisecond)
	_, err = w.Repo.Comment("alice", issue, "/bazinga approve")
	require.NoError(t, err)
	// The approval's reconcile passes the checkpoint first.
	require.True(t, w.WaitSession(issue, func(s pipeline.Session) bool { return s.Checkpoint == nil }), "the approval passed the checkpoint")
	require.Eventually(t, func() bool { return !slices.Contains(w.Repo.Labels(issue), "bazinga:needs-input") }, 60*time.Second, 30*time.Millisecond,
		"the label follows the state")
	require.Equal(t, "bazinga:done", w.Wait(issue, 60*time.Second, sweep))
	w.Settle()
	s, ok := w.SessionNow(issue)
	require.True(t, ok)
	assert.Equal(t, pipeline.SessionDone, s.Status)
	assert.True(t, w.Repo.PR(n).GetMerged(), "the group merged once alice accepted the finding")
	require.Len(t, s.PassedCheckpoints, 1)
	assert.Equal(t, pipeline.CheckpointFindings, s.PassedCheckpoints[0].Kind)
	assert.Equal(t, "alice", s.PassedCheckpoints[0].ApprovedBy)
	require.Len(t, s.FollowUps, 1, "the accepted HIGH finding is a follow-up")

	// The second review still reports a HIGH in widget.go: the first
	// review's threads stay open. The orchestrator read them through
	// GraphQL with its GITHUB_TOKEN to decide so.
	threads := w.Repo.ReviewThreads(n)
	require.Len(t, threads, 3)
	for _, th := range threads {
		assert.False(t, th.Resolved, "%s:%d", th.Path, th.Line)
	}
	gql := 0
	for _, c := range w.F.Calls() {
		if c.GraphQL && c.Login == ghfake.ActionsLogin {
			require.Equal(t, 200, c.Status)
			gql++
		}
	}
	assert.Positive(t, gql, "the threads were read with the GITHUB_TOKEN")

	// github.followup_label: the accepted finding was opened once as an
	// issue for a later session, by the orchestrator, through the REST
	// API, linked to the session and the group PR.
	var opened []*github.Issue
	for _, is := range w.Repo.Issues() {
		if slices.Contains(w.Repo.Labels(is.GetNumber()), "bazinga-followup") {
			opened = append(opened, is)
		}
	}
	require.Len(t, opened, 1, "one follow-up, opened once")
	assert.Equal(t, ghfake.ActionsLogin, opened[0].GetUser().GetLogin())
	assert.Equal(t, "Follow-up: (HIGH, accepted by alice) the lock is still never released", opened[0].GetTitle())
	assert.Contains(t, opened[0].GetBody(), fmt.Sprintf("bazinga session #%d", issue))
	assert.Contains(t, opened[0].GetBody(), fmt.Sprintf("PR #%d", n))
	assert.NotContains(t, w.Repo.Labels(opened[0].GetNumber()), "bazinga", "a follow-up does not start a session")
}
