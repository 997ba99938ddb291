package action_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Issue 28, "tracking comment deleted": someone deletes the tracking
// comment just as the job of the session's validation step starts (nothing
// else is in flight then, so the scripted team's answers stay as planned).
// The job cannot find its step: it fails (it used to skip with exit 0, and
// the step waited out its timeout), the privileged job records the failure
// on the issue and wakes the orchestrator, which rebuilds the session from
// its log and sends the step again at once.

// deleteTrackingOnJob deletes the issue's tracking comment once, when the
// harness job of the validation step starts. It returns the run it did it for.
func deleteTrackingOnJob(t *testing.T, w *world, issue int) (run func() int64) {
	t.Helper()
	var mu sync.Mutex
	var hit int64
	w.expectFail = map[int64]bool{}
	// One job at a time: no reconcile job puts the state back while the
	// agent job reads it.
	w.serial = true
	tracking := func() int64 {
		for _, c := range w.repo.Comments(issue) {
			if c.GetUser().GetLogin() == w.orchestrator && strings.Contains(c.GetBody(), codec.StateMarker) {
				return c.GetID()
			}
		}
		return 0
	}
	w.beforeJob = func(r ghfake.Run, job string) {
		if r.Workflow != "bazinga-agent.yml" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if hit == 0 && job == "harness" && strings.Contains(r.Inputs["step"], "/validate/") {
			require.NoError(t, w.repo.DeleteComment("alice", tracking()))
			hit = r.ID
		}
		// Any job of a run that starts while the state is gone may fail.
		if hit != 0 && tracking() == 0 {
			w.mu.Lock()
			w.expectFail[r.ID] = true
			w.mu.Unlock()
		}
	}
	return func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return hit
	}
}

// assertStepResent checks that the steps whose jobs started while the
// state was gone failed for it and were sent again at once, and that no step
// waited out a timeout.
func assertStepResent(t *testing.T, w *world, s pipeline.Session, run int64) {
	t.Helper()
	require.NotZero(t, run, "the tracking comment was deleted as a job started")
	failed := map[string]bool{}
	for _, st := range s.Steps {
		assert.NotContains(t, st.Note, "no result within", "step %s waited out its timeout", st.ID)
		if st.State == pipeline.StepFailed {
			// The App hears of the failed job first (workflow_job), before
			// the privileged job posts why; Action-only mode reads why.
			if !strings.Contains(st.Note, "ended failure without a result") {
				assert.Contains(t, st.Note, "could not read the session", "step %s", st.ID)
			}
			failed[st.ID] = true
		}
	}
	for _, j := range w.jobsCopy() {
		if j.run.ID == run && j.command == "validate" {
			assert.NotZero(t, j.exit, "%s job: a job that cannot read its session fails", j.command)
			assert.Contains(t, j.output, "the session cannot be read")
			assert.True(t, failed[j.run.Inputs["step"]], "step %s failed", j.run.Inputs["step"])
		}
	}
}

func TestE2ETrackingCommentDeletedAppMode(t *testing.T) {
	var run func() int64
	w, s := playAppModeWith(t, e2eConfig, func(w *world) { run = deleteTrackingOnJob(t, w, 1) })
	assertStepResent(t, w, s, run())
}

func TestE2ETrackingCommentDeletedActionOnlyMode(t *testing.T) {
	w := newWorld(t)
	w.actionOnly()
	run := deleteTrackingOnJob(t, w, 1)
	issue, err := w.repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.repo.LabelIssue("alice", issue, "bazinga"))
	defer func() {
		if t.Failed() {
			w.dump(issue)
		}
	}()
	sweeps := 0
	label := w.wait(issue, 60*time.Second, func() {
		sweeps++
		_, _ = w.f.TriggerSchedule(e2eFull, "bazinga.yml")
	})
	require.Equal(t, "bazinga:done", label)
	assert.Zero(t, sweeps, "the failed job woke the orchestrator; the schedule was not needed")
	w.settle()
	s := w.assertVerified(issue, codec.StateTrust{PublicKey: e2eActionOnlyKey, Authors: []string{ghfake.ActionsLogin}})
	w.assertJobs(s)
	assertStepResent(t, w, s, run())
}
