package bot

import (
	"net/http"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRateLimitedInstallationEndToEnd runs the reference session against a
// fake GitHub that allows the bot's installation 60 requests an hour — a
// fraction of what the session needs. Each time the installation runs out
// the session pauses, naming the limit and its reset, and resumes by itself
// after the reset; the session still ends in a verified BAZINGA, GitHub
// never has to refuse the bot (the transport stops at its reserve), and
// no request is sent while a limit is known to be spent.
func TestRateLimitedInstallationEndToEnd(t *testing.T) {
	const limit = 60
	h := newCoreHarness(t, coreOpts{groups: 3, rateLimit: limit})
	// The bot speaks as installation 1, as serve's client factory names it.
	h.tr = ghapi.NewTransport(h.f.Transport(), ghapi.TransportOptions{MaxRetries: 2, BaseBackoff: time.Millisecond,
		MaxBackoff: 2 * time.Millisecond, APIPrefix: "/api/v3", Identity: "installation/1", Now: h.clock.Now, Sleep: h.clock.Sleep})
	h.bot = h.newBot()
	h.start()
	require.Equal(t, pipeline.SessionDone, h.run(3000))
	h.assertVerifiedBazinga()
	final, _ := h.state()
	for _, s := range final.Session.Steps {
		assert.NotEqual(t, pipeline.StepFailed, s.State, "step %s failed (%s): results that waited in the log are not timeouts", s.ID, s.Note)
	}

	pauses := h.botNotices("⏸️ **Paused** | GitHub rate limit for installation 1 exhausted until ")
	resumes := h.botNotices("▶️ **Resumed** | the GitHub rate limit for installation 1 reset at ")
	total, _, _, _ := callsBy(h.f, h.f.BotLogin())
	t.Logf("%d bot requests under a limit of %d an hour: %d pauses, %d resumes; %d step runs", total, limit, len(pauses), len(resumes), len(h.f.Runs()))
	require.NotEmpty(t, pauses, "the session outgrew one hour's requests")
	assert.Len(t, resumes, len(pauses), "every pause resumed by itself")

	// Per fake hour window (the fake starts one at the first request after
	// the last reset), the bot stays within the limit, and GitHub refused
	// none of its requests.
	var windowStart time.Time
	inWindow := 0
	for _, c := range h.f.Calls() {
		if c.Login != h.f.BotLogin() {
			continue
		}
		assert.NotEqual(t, http.StatusForbidden, c.Status, "call %d %s refused", c.Seq, c.Route)
		if windowStart.IsZero() || !c.At.Before(windowStart.Add(time.Hour)) {
			windowStart, inWindow = c.At, 0
		}
		inWindow++
		assert.LessOrEqual(t, inWindow, limit, "requests in the window from %s", windowStart)
	}
	for _, err := range h.botErrs {
		assert.ErrorIs(t, err, ghapi.ErrRateLimited, "the bot's only errors are the waits")
	}
}
