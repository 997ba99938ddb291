package bot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/require"
)

func (h *coreHarness) botComments(n int) []string {
	var out []string
	for _, c := range h.repo.Comments(n) {
		if c.GetUser().GetLogin() == h.f.BotLogin() {
			out = append(out, c.GetBody())
		}
	}
	return out
}

func TestCommandAuthorisation(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 2})
	h.start()
	h.steps(6)
	runs := len(h.f.Runs())
	before := len(h.botComments(h.issue))
	// A bot and the bot itself are ignored without a reply.
	for _, who := range []string{"dependabot[bot]", h.f.BotLogin()} {
		_, err := h.repo.Comment(who, h.issue, "/bazinga stop")
		require.NoError(t, err)
		h.drain()
	}
	require.Len(t, h.botComments(h.issue), before+1, "only the bot's own comment was added") // the one the bot "wrote"
	// A read-only user gets a short refusal and no effect.
	_, err := h.repo.Comment("mallory", h.issue, "/bazinga stop")
	require.NoError(t, err)
	h.drain()
	got := h.botComments(h.issue)
	require.Contains(t, got[len(got)-1], "@mallory only people with write")
	st, _ := h.state()
	require.False(t, st.Session.Status.Terminal())
	require.Len(t, h.f.Runs(), runs)
	// alice may stop it.
	_, err = h.repo.Comment("alice", h.issue, "/bazinga stop")
	require.NoError(t, err)
	h.drain()
	st, _ = h.state()
	require.Equal(t, pipeline.SessionStopped, st.Session.Status)
	require.Contains(t, h.repo.Labels(h.issue), "bazinga:stopped")
	// help and unknown commands answer with the help text.
	_, err = h.repo.Comment("alice", h.issue, "/bazinga frobnicate")
	require.NoError(t, err)
	h.drain()
	got = h.botComments(h.issue)
	require.Contains(t, got[len(got)-1], "bazinga commands")
	// status replies with the visible status; resume resumes.
	_, err = h.repo.Comment("alice", h.issue, "/bazinga status\n/bazinga resume")
	require.NoError(t, err)
	h.drain()
	got = h.botComments(h.issue)
	require.Contains(t, strings.Join(got, "\n"), "Resumed by alice")
	require.Equal(t, pipeline.SessionDone, h.run(500))
}

func TestSameDeliveryTwiceOneEffect(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 2})
	h.start()
	h.steps(30)
	h.drain()
	// Every delivery so far, again (as GitHub's redelivery would): nothing new.
	runs, comments := len(h.f.Runs()), len(h.repo.Comments(h.issue))
	prs := len(h.repo.PRs())
	h.mu.Lock()
	again := append([]Delivery(nil), h.all...)
	h.mu.Unlock()
	for _, d := range again {
		_ = h.process(d)
	}
	h.drain()
	require.Equal(t, runs, len(h.f.Runs()), "no dispatch repeated")
	require.Equal(t, comments, len(h.repo.Comments(h.issue)), "no comment repeated")
	require.Equal(t, prs, len(h.repo.PRs()), "no PR repeated")
	// A restarted bot (nothing in memory) does not repeat them either.
	h.bot = h.newBot()
	for _, d := range again {
		_ = h.process(d)
	}
	h.drain()
	require.Equal(t, runs, len(h.f.Runs()))
	require.Equal(t, pipeline.SessionDone, h.run(500))
	h.assertVerifiedBazinga()
}

func TestEventsOutOfOrder(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 3})
	h.start()
	// Plan, then let every queued job run before the bot hears of any.
	for i := 0; i < 200; i++ {
		if d, ok := h.pop(); ok {
			_ = h.process(d)
			if st, _ := h.state(); len(st.Session.InFlight()) >= 3 {
				break
			}
			continue
		}
		if r, ok := h.nextRun(); ok {
			h.job(r)
		}
	}
	h.drain()
	for {
		r, ok := h.nextRun()
		if !ok {
			break
		}
		h.job(r)
	}
	// Deliver what queued in reverse order.
	h.mu.Lock()
	q := h.queue
	h.queue = nil
	h.mu.Unlock()
	for i := len(q) - 1; i >= 0; i-- {
		_ = h.process(q[i])
	}
	require.Equal(t, pipeline.SessionDone, h.run(500))
	h.assertVerifiedBazinga()
}

// TestReplayedPayloads replays every event type the fake emitted during a
// session (and a few a human causes) through a fresh bot, checking the
// session key and the outcome; the payloads are kept in testdata/webhooks.
func TestReplayedPayloads(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 1})
	h.start()
	require.Equal(t, pipeline.SessionDone, h.run(300))
	h.f.Ping()
	h.f.SendInstallation("created", "alice")
	h.mu.Lock()
	all := append([]Delivery(nil), h.all...)
	h.mu.Unlock()
	seen := map[string]Delivery{}
	for _, d := range all {
		k := d.Event + "." + d.Action
		if _, ok := seen[k]; !ok {
			seen[k] = d
		}
	}
	for _, want := range []string{"issues.labeled", "issue_comment.created", "pull_request.closed", "workflow_run.completed",
		"workflow_job.completed", "ping.", "installation.created"} {
		require.Contains(t, seen, want)
	}
	dir := filepath.Join("..", "testdata", "webhooks")
	for _, k := range sortedKeys(seen) {
		d := seen[k]
		// The recorded fixture must still be what the fake emits.
		if fx, err := os.ReadFile(filepath.Join(dir, "core_"+strings.ReplaceAll(strings.TrimSuffix(k, "."), ".", "_")+".json")); err == nil && !*updateGolden {
			require.Equal(t, h.bot.Key(Delivery{Event: d.Event, Payload: fx}), h.bot.Key(d), k)
		}
		key := h.bot.Key(d)
		switch d.Event {
		case "issues", "issue_comment", "pull_request":
			require.Equal(t, "acme/widgets#1", key, k)
		case "ping", "installation":
			require.Empty(t, key, k)
			require.NoError(t, h.bot.Process(context.Background(), d), k)
		}
		handled := map[string]bool{"issues.labeled": true, "issue_comment.created": true, "pull_request.closed": true,
			"workflow_run.completed": true, "workflow_job.completed": true, "ping.": true, "installation.created": true}
		if *updateGolden && handled[k] {
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "core_"+strings.ReplaceAll(strings.TrimSuffix(k, "."), ".", "_")+".json"), d.Payload, 0o644))
		}
	}
}

func TestUnlabelPausesAndReviewsAndClosures(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 2, config: "merge:\n  required_approvals: 1\n"})
	h.start()
	h.steps(40)
	require.NoError(t, h.repo.UnlabelIssue("alice", h.issue, "bazinga"))
	h.drain()
	st, _ := h.state()
	require.Equal(t, pipeline.SessionPaused, st.Session.Status)
	require.Contains(t, h.repo.Labels(h.issue), "bazinga:paused")
	require.NoError(t, h.repo.LabelIssue("alice", h.issue, "bazinga"))
	h.drain()
	st, _ = h.state()
	require.False(t, st.Session.Status == pipeline.SessionPaused)
	// Groups wait for a human approval; alice approves both PRs.
	for i := 0; i < 200; i++ {
		h.steps(1)
		st, _ = h.state()
		waiting := 0
		for _, g := range st.Session.Groups {
			if g.Wait == pipeline.WaitHumanReview {
				waiting++
			}
		}
		if waiting == 2 {
			break
		}
	}
	for _, pr := range h.repo.PRs() {
		_, err := h.repo.SubmitReview("alice", pr.GetNumber(), "APPROVE", "")
		require.NoError(t, err)
	}
	require.Equal(t, pipeline.SessionDone, h.run(500))
	h.assertVerifiedBazinga()
}

func (h *coreHarness) botCommentsJoined() string { return strings.Join(h.botComments(h.issue), "\n") }
