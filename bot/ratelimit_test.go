package bot

import (
	"strings"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// botCalls counts the API requests the bot sent (refused ones included).
func (h *coreHarness) botCalls() int {
	n, _, _, _ := callsBy(h.f, h.f.BotLogin())
	return n
}

// botNotices returns the bot's comments on the issue that contain s.
func (h *coreHarness) botNotices(s string) []string {
	var out []string
	for _, c := range h.repo.Comments(h.issue) {
		if c.GetUser().GetLogin() == h.f.BotLogin() && strings.Contains(c.GetBody(), s) {
			out = append(out, c.GetBody())
		}
	}
	return out
}

// TestRateLimitMidSessionPausesAndResumes: the bot's identity runs out of
// requests while a session runs. The session waits — the wait recorded in
// its state and said on the issue, naming the limit and its reset — the
// bot sends nothing more until the reset, a restarted bot finds the wait in
// the state, and the first sweep after the reset resumes the session, which
// then ends in a verified BAZINGA with no step lost or doubled.
func TestRateLimitMidSessionPausesAndResumes(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 2})
	h.start()
	h.drain()
	pm, ok := h.nextRun()
	require.True(t, ok, "the pm is dispatched")
	h.job(pm)
	h.drain()
	st, ok := h.state()
	require.True(t, ok)
	require.Len(t, st.Session.Groups, 2, "the plan is applied")
	require.Nil(t, st.Waiting)

	// 22 requests left: one for reading the reset here, one ordinary call
	// of the bot, then only the transport's reserve (20) is left.
	require.NoError(t, h.f.SetRateRemaining(coreBotTok, 22))
	_, resp, err := h.f.Client(coreBotTok).Issues.Get(h.ctx, coreOwner, coreRepo, h.issue)
	require.NoError(t, err)
	reset := resp.Rate.Reset.Time.UTC()
	require.Greater(t, reset.Sub(h.clock.Now()), 30*time.Minute, "the reset is far off")

	// A developer's result arrives: the bot reads the session once, then
	// stops and says why.
	dev, ok := h.nextRun()
	require.True(t, ok)
	h.job(dev)
	before := len(h.botErrs)
	h.drain()
	require.Greater(t, len(h.botErrs), before)
	for _, err := range h.botErrs[before:] {
		assert.ErrorIs(t, err, ghapi.ErrRateLimited)
	}
	want := "⏸️ **Paused** | GitHub rate limit for core-bot exhausted until " + clockTime(reset) + "; resuming after it"
	require.Len(t, h.botNotices(want), 1, "the pause names the limit and its reset")
	st, _ = h.state()
	require.NotNil(t, st.Waiting, "the wait is recorded with the session")
	since := st.Waiting.Since
	assert.False(t, since.IsZero() || since.After(h.clock.Now()) || !since.Before(reset),
		"the wait began when the limit was met (steps in flight do not time out for it): %s", since)
	assert.Equal(t, codec.RateLimitWait{Who: "core-bot", Resource: "core", Until: reset, Since: since}, *st.Waiting)
	assert.Equal(t, pipeline.SessionRunning, st.Session.Status, "the engine's session is not paused")
	tracking, _ := h.trackingState()
	assert.NotNil(t, tracking.Waiting)
	for _, c := range h.repo.Comments(h.issue) {
		if strings.Contains(c.GetBody(), codec.StateMarker) {
			assert.Contains(t, c.GetBody(), "> ⏸️ GitHub rate limit for core-bot", "the tracking comment shows the wait")
		}
	}

	// Until the reset the bot sends nothing: the other developer's result,
	// the deliveries it causes and sweeps cost no request.
	calls := h.botCalls()
	if dev2, ok := h.nextRun(); ok {
		h.job(dev2)
	}
	h.drain()
	h.clock.Advance(10 * time.Minute)
	require.NoError(t, h.bot.Sweep(h.ctx))
	assert.Equal(t, calls, h.botCalls(), "no request while the limit is exhausted")

	// A restarted bot (no memory, a new transport) learns of the wait from
	// GitHub at the cost of the requests that tell it, and does nothing.
	h.tr = ghapi.NewTransport(h.f.Transport(), ghapi.TransportOptions{APIPrefix: "/api/v3", Identity: "core-bot",
		Now: h.clock.Now, Sleep: h.clock.Sleep})
	h.bot = h.newBot()
	repo := ghapi.RepoRef{Owner: coreOwner, Name: coreRepo}
	err = h.bot.ReconcileIssue(h.ctx, 0, repo, h.issue)
	require.ErrorIs(t, err, ghapi.ErrRateLimited)
	assert.LessOrEqual(t, h.botCalls()-calls, 2, "a restarted bot spends at most what tells it the limit is spent")
	calls = h.botCalls()
	require.NoError(t, h.bot.ReconcileIssue(h.ctx, 0, repo, h.issue), "then it remembers")
	require.NoError(t, h.bot.Sweep(h.ctx))
	assert.Equal(t, calls, h.botCalls())
	require.Len(t, h.botNotices("⏸️ **Paused**"), 1, "told once")

	// After the reset the first sweep resumes the session by itself.
	h.clock.Advance(reset.Sub(h.clock.Now()) + time.Second)
	require.NoError(t, h.bot.Sweep(h.ctx))
	st, _ = h.state()
	assert.Nil(t, st.Waiting, "resumed")
	require.Len(t, h.botNotices("▶️ **Resumed** | the GitHub rate limit for core-bot reset at "+clockTime(reset)), 1)
	require.Equal(t, pipeline.SessionDone, h.run(500))
	h.assertVerifiedBazinga()
	final, _ := h.state()
	for _, s := range final.Session.Steps {
		assert.NotEqual(t, pipeline.StepFailed, s.State, "step %s failed (%s): results that waited in the log are not timeouts", s.ID, s.Note)
	}
	require.Len(t, h.botNotices("⏸️ **Paused**"), 1)
}

func TestClockTimeRoundsUp(t *testing.T) {
	tests := []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 3, 2, 15, 42, 0, 0, time.UTC), "15:42 UTC"},
		{time.Date(2026, 3, 2, 15, 41, 1, 0, time.UTC), "15:42 UTC"},
		{time.Date(2026, 3, 2, 17, 41, 59, 0, time.FixedZone("CEST", 2*3600)), "15:42 UTC"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, clockTime(tc.at))
	}
}
