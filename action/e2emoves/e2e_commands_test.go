package e2emoves_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Issue 22, "a command in a cancelled pending run": the plan waits for
// approval; a held reconcile keeps the session's group busy; alice's
// `/bazinga approve` queues as pending and her `/bazinga status` a moment
// later cancels it (GitHub keeps one pending run per group). The approval
// is not lost, and each of the three commands takes effect exactly once:
// one approval, two status replies.
func TestE2EActionOnlyCommandInCancelledRun(t *testing.T) {
	t.Parallel()
	w := NewWorldWith(t, E2eConfig+"checkpoints: [plan]\n")
	w.ActionOnly()
	pc := NewPendingCanceller(w)
	w.BeforeJob = pc.BeforeJob
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))
	defer func() {
		if t.Failed() {
			w.Dump(issue)
		}
	}()
	require.True(t, w.WaitSession(issue, func(s pipeline.Session) bool { return s.Checkpoint != nil }), "the plan waits for approval")

	release := pc.HoldGroup(issue)
	started := time.Now()
	_, err = w.Repo.Comment("alice", issue, "Looks right.\n/bazinga approve")
	require.NoError(t, err)
	cancelled := pc.CancelPending(issue, "/bazinga status", func(r ghfake.Run) bool {
		return r.Event == "issue_comment" && !r.CreatedAt.Before(started) && strings.Contains(string(r.EventPayload), "Looks right.")
	})
	release()
	require.NotZero(t, cancelled)
	// Waiting at the checkpoint is labelled bazinga:needs-input, which
	// ends w.Wait: wait for the approval first.
	require.Eventually(t, func() bool {
		s, ok := w.SessionNow(issue)
		return ok && s.Checkpoint == nil && !slices.Contains(w.Repo.Labels(issue), "bazinga:needs-input")
	}, 2*time.Minute, 50*time.Millisecond, "the approval is applied")

	sweeps := 0
	label := w.Wait(issue, 60*time.Second, func() {
		sweeps++
		_, _ = w.F.TriggerSchedule(E2eFull, SweepWorkflow)
	})
	require.Equal(t, "bazinga:done", label)
	assert.Zero(t, sweeps, "the schedule was not needed")
	w.Settle()
	s := w.AssertVerified(issue, codec.StateTrust{PublicKey: E2eActionOnlyKey, Authors: []string{ghfake.ActionsLogin}})
	w.AssertJobs(s)
	require.Len(t, s.PassedCheckpoints, 1, "one checkpoint passed, once")
	assert.Equal(t, "alice", s.PassedCheckpoints[0].ApprovedBy)
	statusReplies := 0
	for _, c := range w.Repo.Comments(issue) {
		if c.GetUser().GetLogin() == w.Orchestrator && !strings.Contains(c.GetBody(), codec.StateMarker) &&
			strings.Contains(c.GetBody(), "### 🤖 bazinga") {
			statusReplies++
		}
	}
	assert.Equal(t, 2, statusReplies, "each /bazinga status answered once")
}
