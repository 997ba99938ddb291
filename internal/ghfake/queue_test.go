package ghfake

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// concurrency.queue (GitHub docs, "Control the concurrency of workflows
// and jobs"; changelog 2026-05-07): with queue: max the pending runs of a
// group wait in order instead of replacing each other, up to 100, and one
// more is cancelled; with cancel-in-progress: true it is a validation
// error; group names are case insensitive.
const queuedWorkflow = `on:
  issue_comment: {types: [created]}
concurrency:
  group: ${{ contains(github.event.comment.body, 'loud') && 'DEPLOY' || 'deploy' }}
  queue: max
jobs:
  work:
    steps: [{run: "true"}]
`

func TestConcurrencyQueueMax(t *testing.T) {
	e := newFileEnv(t, map[string]string{"queued.yml": queuedWorkflow})
	n, err := e.f.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	_, err = e.f.Comment("alice", n, "first")
	require.NoError(t, err)
	running := e.next(t)
	_, err = e.f.StartJob(running.ID)
	require.NoError(t, err)
	// 100 wait (one in a group named in capitals: the same group).
	for i := range queueMaxPending {
		body := fmt.Sprintf("waiting %d", i)
		if i == 1 {
			body = "loud " + body
		}
		_, err = e.f.Comment("alice", n, body)
		require.NoError(t, err)
	}
	e.none(t)
	runs := e.f.Runs()
	require.Len(t, runs, 1+queueMaxPending)
	for _, r := range runs[1:] {
		assert.Equal(t, "pending", r.Status, "run %d waits, none replaced", r.ID)
	}
	// The 101st is cancelled: the queue is full.
	_, err = e.f.Comment("alice", n, "one too many")
	require.NoError(t, err)
	runs = e.f.Runs()
	last := runs[len(runs)-1]
	assert.Equal(t, "completed", last.Status)
	assert.Equal(t, "cancelled", last.Conclusion)
	// They run in the order they began to wait.
	require.NoError(t, e.f.CompleteJob(running.ID, "success", nil))
	for i := 1; i <= 3; i++ {
		j := e.next(t)
		assert.Equal(t, runs[i].ID, j.RunID, "the %d-th waiting run is next", i)
		_, err := e.f.StartJob(j.ID)
		require.NoError(t, err)
		require.NoError(t, e.f.CompleteJob(j.ID, "success", nil))
	}
	assert.Equal(t, "success", e.run(t, runs[2].ID).Conclusion, "the capitalised group's run ran in its turn")
}

func TestConcurrencyQueueSyntax(t *testing.T) {
	for _, tc := range []struct {
		block, err string
		queue      string
	}{
		{block: "group: g", queue: "single"},
		{block: "group: g\n  queue: single", queue: "single"},
		{block: "group: g\n  queue: max\n  cancel-in-progress: false", queue: "max"},
		{block: "group: g\n  queue: max\n  cancel-in-progress: true", err: "queue: max cannot be combined with cancel-in-progress: true"},
		{block: "group: g\n  queue: all", err: `queue: "all" is not single or max`},
	} {
		wf := "on: push\nconcurrency:\n  " + tc.block + "\njobs:\n  a:\n    steps: [{run: x}]\n"
		spec, err := ParseWorkflowFile([]byte(wf))
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.block)
			continue
		}
		require.NoError(t, err, tc.block)
		assert.Equal(t, tc.queue, spec.Concurrency.Queue, tc.block)
	}
	// An expression cancel-in-progress that comes out true beside queue:
	// max fails the run.
	_, pol, err := evalConcurrency(&Concurrency{Group: "g", CancelInProgress: "${{ true }}", Queue: queueMax}, Contexts{})
	assert.ErrorContains(t, err, "queue: max cannot be combined")
	assert.Equal(t, concPolicy{}, pol)
}
