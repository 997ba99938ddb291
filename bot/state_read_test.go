package bot

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Action-only mode: a result comment written with a GITHUB_TOKEN starts no
// workflow, and the reconcile that would have read it may be cancelled. The
// next run or the sweep reads the log and applies it.
func TestLoggedResultsAreAppliedWithoutTheirEvents(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 1})
	h.start()
	h.drain()
	r, ok := h.nextRun()
	require.True(t, ok, "the pm step was dispatched")
	h.job(r) // posts the pm's PLANNING_COMPLETE as github-actions[bot]
	h.mu.Lock()
	h.queue = nil // every delivery about it is lost
	h.mu.Unlock()

	before, ok := h.state()
	require.True(t, ok)
	require.Empty(t, before.Session.Groups)

	ref, _ := ghapi.ParseRepo(coreOwner + "/" + coreRepo)
	n, err := h.bot.ApplyLoggedResults(h.ctx, h.f.InstallationID(), ref, h.issue)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "one logged result applied")
	after, _ := h.state()
	require.Len(t, after.Session.Groups, 1)
	assert.Equal(t, pipeline.RoleDeveloper, after.Session.Step(after.Session.Groups[0].InFlight).Role)

	// Applying again finds nothing new.
	n, err = h.bot.ApplyLoggedResults(h.ctx, h.f.InstallationID(), ref, h.issue)
	require.NoError(t, err)
	assert.Zero(t, n)
	// And the session still runs to a verified BAZINGA.
	assert.Equal(t, pipeline.SessionDone, h.run(400))
	h.assertVerifiedBazinga()
}
