package action_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A repository that does not allow GitHub Actions to create pull requests
// (the default of a new personal repository): the Action-only
// orchestrator, acting as github-actions[bot], cannot open a group PR.
// The session pauses once, saying which setting to turn on and where,
// instead of retrying on every event.
func TestE2EActionOnlyForbiddenPRs(t *testing.T) {
	w := newWorld(t)
	w.actionOnly()
	require.NoError(t, w.f.SetActionsCanCreatePullRequests(e2eFull, false))
	issue, err := w.repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.repo.LabelIssue("alice", issue, "bazinga"))

	label := w.wait(issue, 60*time.Second, nil)
	w.settle()
	// merge.method push needs no PR: the session still ends verified.
	if !assert.Equal(t, "bazinga:done", label) {
		w.dump(issue)
	}
	var said []string
	for _, c := range w.repo.Comments(issue) {
		if strings.Contains(c.GetBody(), "Allow GitHub Actions to create and approve pull requests") {
			said = append(said, c.GetBody())
		}
	}
	require.Len(t, said, 1, "one comment names the setting")
	assert.Contains(t, said[0], "Settings → Actions → General → Workflow permissions")
	assert.Contains(t, said[0], "GitHub Actions is not permitted to create or approve pull requests.")
	assert.Empty(t, w.repo.PRs(), "no PR could be opened")
	// No retry loop: a group's PR is tried once per step of the group,
	// not on every reconcile.
	refused, groupSteps, reconciles := 0, 0, 0
	for _, c := range w.f.Calls() {
		if c.Route == "POST /repos/{owner}/{repo}/pulls" {
			assert.Equal(t, 403, c.Status)
			refused++
		}
	}
	for _, j := range w.jobsCopy() {
		switch {
		case j.command == "reconcile":
			reconciles++
		case j.command == "agent" && !strings.Contains(j.run.Inputs["step"], "/_/"):
			groupSteps++
		}
	}
	assert.Positive(t, refused)
	assert.LessOrEqual(t, refused, groupSteps, "at most one try per group step (%d reconciles)", reconciles)
	for _, j := range w.jobsCopy() {
		if j.command == "reconcile" {
			assert.Zero(t, j.exit, "the refused PR does not fail the orchestrator: run %d\n%s", j.run.ID, j.output)
		}
	}
}
