package e2eactiononly_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A repository that does not allow GitHub Actions to create pull requests
// (the default of a new personal repository): the Action-only
// orchestrator, acting as github-actions[bot], cannot open the group PRs.
// bazinga says so once, naming the setting and where it is, and tries a
// group's PR again only at the group's next step (no retry loop). With
// merge.method push the session still ends verified; with pull-request the
// merge pauses naming the setting, and once an admin turns it on,
// `/bazinga resume` opens the PRs and the session ends verified.
func TestE2EActionOnlyForbiddenPRs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		method string
		paused bool
	}{
		{"push", false},
		{"pull-request", true},
	} {
		t.Run(tt.method, func(t *testing.T) {
			w := NewWorldWith(t, E2eConfig+"merge:\n  method: "+tt.method+"\n")
			w.ActionOnly()
			require.NoError(t, w.F.SetActionsCanCreatePullRequests(E2eFull, false))
			issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
			require.NoError(t, err)
			require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))

			label := w.Wait(issue, 60*time.Second, nil)
			w.Settle()
			var said []string
			for _, c := range w.Repo.Comments(issue) {
				if strings.Contains(c.GetBody(), "could not open the group pull requests") {
					said = append(said, c.GetBody())
				}
			}
			require.Len(t, said, 1, "one notice")
			assert.Contains(t, said[0], "Allow GitHub Actions to create and approve pull requests", "it names the setting")
			assert.Contains(t, said[0], "Settings → Actions → General → Workflow permissions")
			assert.Contains(t, said[0], "GitHub Actions is not permitted to create or approve pull requests.")
			assert.Empty(t, w.Repo.PRs(), "no PR could be opened")
			// No retry loop: a group's PR is tried once per step of the
			// group, not on every reconcile.
			refused, groupSteps := 0, 0
			for _, c := range w.F.Calls() {
				if c.Route == "POST /repos/{owner}/{repo}/pulls" {
					assert.Equal(t, 403, c.Status)
					refused++
				}
			}
			for _, j := range w.JobsCopy() {
				if j.Command == "reconcile" {
					assert.Zero(t, j.Exit, "the refused PR does not fail the orchestrator: run %d\n%s", j.Run.ID, j.Output)
				}
				if (j.Command == "agent" || j.Command == "gate") && !strings.Contains(j.Run.Inputs["step"], "/_/") {
					groupSteps++
				}
			}
			assert.Positive(t, refused)
			assert.LessOrEqual(t, refused, groupSteps, "at most one try per group step")

			if !tt.paused {
				if !assert.Equal(t, "bazinga:done", label, "push needs no PR") {
					w.Dump(issue)
				}
				return
			}
			require.Equal(t, "bazinga:paused", label)
			pause := ""
			for _, c := range w.Repo.Comments(issue) {
				if strings.Contains(c.GetBody(), "**Paused**") {
					pause = c.GetBody()
				}
			}
			assert.Contains(t, pause, "no open pull request")
			assert.Contains(t, pause, "Allow GitHub Actions to create and approve pull requests", "the pause names the setting")
			assert.Contains(t, pause, "Settings → Actions → General → Workflow permissions")

			// The admin turns the setting on; alice resumes.
			require.NoError(t, w.F.SetActionsCanCreatePullRequests(E2eFull, true))
			_, err = w.Repo.Comment("alice", issue, "/bazinga resume")
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				ended, _ := w.Ended(issue)
				return !ended
			}, 10*time.Second, 20*time.Millisecond, "the session resumes")
			label = w.Wait(issue, 60*time.Second, nil)
			w.Settle()
			if !assert.Equal(t, "bazinga:done", label) {
				w.Dump(issue)
			}
			assert.Len(t, w.Repo.PRs(), 2, "both group PRs opened after the resume")
			for _, pr := range w.Repo.PRs() {
				assert.True(t, pr.GetMerged(), "PR #%d merged", pr.GetNumber())
			}
		})
	}
}
