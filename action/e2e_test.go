package action_test

import (
	"net/http"
	"sort"
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

// The test binary doubles as the bazinga binary (e2eworld.Main): `action`
// and the scripted agent, run as subprocesses by the fake Actions runner.
func TestMain(m *testing.M) { Main(m) }

func TestE2EAppMode(t *testing.T) {
	t.Parallel()
	start := time.Now()
	w, s := PlayAppMode(t, E2eConfig)
	f := w.F
	t.Logf("App mode: %d steps, %d jobs, %d API calls (%d content-creating), %d webhooks, %s",
		len(s.Steps), len(w.JobsCopy()), f.Counts().Total, f.Counts().ContentCreating, len(f.Deliveries()), time.Since(start).Round(time.Millisecond))
}

// merge.method pull-request: the group PRs are opened ready for review and
// merged through the API at the tested head, not pushed.
func TestE2EAppModePullRequestMerges(t *testing.T) {
	t.Parallel()
	w, s := PlayAppMode(t, E2eConfig+"merge:\n  method: pull-request\n")
	merges := 0
	for _, c := range w.F.Calls() {
		if c.Method == http.MethodPut && strings.HasSuffix(c.Route, "/pulls/{number}/merge") && c.Status == http.StatusOK {
			merges++
		}
	}
	assert.Equal(t, 2, merges, "both groups merged through the API")
	for _, g := range s.Groups {
		assert.Equal(t, pipeline.StageMerged, g.Stage)
	}
	for _, pr := range w.F.PRs() {
		assert.True(t, pr.GetMerged(), "PR #%d", pr.GetNumber())
		assert.False(t, pr.GetDraft(), "PR #%d is opened ready for review", pr.GetNumber())
	}
}

func TestE2EActionOnlyMode(t *testing.T) {
	t.Parallel()
	start := time.Now()
	w := NewWorld(t)
	f := w.F
	// The orchestrator workflow (examples/workflows/bazinga.yml), read by
	// the fake: the events it runs on, and workflow_dispatch with the
	// issue, which every step's privileged job sends; GitHub fires no
	// workflow_run for runs a GITHUB_TOKEN dispatch started, and starts
	// nothing for what a GITHUB_TOKEN writes; no App, no webhook receiver.
	w.ActionOnly()
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))

	sweeps := 0
	label := w.Wait(issue, 60*time.Second, func() {
		sweeps++
		_, _ = f.TriggerSchedule(E2eFull, SweepWorkflow)
	})
	require.Equal(t, "bazinga:done", label)
	assert.Zero(t, sweeps, "the steps' dispatches drive the session; the schedule is not needed")
	w.Settle()
	// The tracking comment is github-actions[bot]'s, signed with the key
	// only the orchestrator's job holds.
	s := w.AssertVerified(issue, codec.StateTrust{PublicKey: E2eActionOnlyKey, Authors: []string{ghfake.ActionsLogin}})
	w.AssertJobs(s)
	reconciles := 0
	for _, j := range w.JobsCopy() {
		if j.Command == "reconcile" {
			reconciles++
			if !assert.Zero(t, j.Exit, "reconcile run %d (%s)", j.Run.ID, j.Run.Event) {
				t.Log(j.Output)
			}
		}
	}
	// The reconcile job's concurrency group (one session here): never two
	// at once, and the route job ran before each.
	var recs []JobRecord
	routes := map[int64]bool{}
	for _, j := range w.JobsCopy() {
		switch j.Job {
		case "reconcile":
			recs = append(recs, j)
		case "route":
			routes[j.Run.ID] = true
		}
	}
	sort.Slice(recs, func(i, k int) bool { return recs[i].Started.Before(recs[k].Started) })
	for i := 1; i < len(recs); i++ {
		prev := recs[i-1]
		assert.False(t, recs[i].Started.Before(prev.Started.Add(prev.Duration)), "reconcile of run %d started while run %d's ran", recs[i].Run.ID, prev.Run.ID)
	}
	for _, r := range recs {
		assert.True(t, routes[r.Run.ID], "run %d: route ran before reconcile", r.Run.ID)
	}
	assert.Empty(t, f.Deliveries(), "no App: no webhook deliveries")
	w.LogActionsUse(s)
	t.Logf("Action-only mode: %d steps, %d jobs (%d reconciles, %d sweeps), %d API calls (%d content-creating), %s",
		len(s.Steps), len(w.JobsCopy()), reconciles, sweeps, f.Counts().Total, f.Counts().ContentCreating, time.Since(start).Round(time.Millisecond))
}
