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

func (h *coreHarness) botCommentsJoined() string { return strings.Join(h.botComments(h.issue), "\n") }
