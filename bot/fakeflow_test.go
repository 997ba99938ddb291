package bot

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/stretchr/testify/require"
)

// fakeHarness drives the bot against the in-memory fakeGitHub: the test
// plays GitHub's side (the state, and the deliveries it would send).
type fakeHarness struct {
	t     *testing.T
	gh    *fakeGitHub
	bot   *Bot
	clock *coreClock
	seq   int
}

const fakeBotLogin = "bazinga[bot]"

func newFakeHarness(t *testing.T, config string) *fakeHarness {
	t.Helper()
	clock := &coreClock{t: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)}
	gh := newFakeGitHub(coreOwner, coreRepo, fakeBotLogin, clock.Now)
	if config != "" {
		gh.push("main", map[string]string{".github/bazinga.yml": config})
	}
	gh.setRole("alice", "write")
	gh.setRole("mallory", "read")
	gh.addWorkflow("bazinga-agent.yml")
	b, err := New(Options{
		Client:   func(context.Context, int64) (GitHub, error) { return gh, nil },
		Login:    fakeBotLogin,
		Now:      clock.Now,
		StateKey: coreStateKey,
	})
	require.NoError(t, err)
	return &fakeHarness{t: t, gh: gh, bot: b, clock: clock}
}

// deliver hands the bot one delivery built from a recorded payload with
// edits, as the server would; ignored deliveries are not errors.
func (h *fakeHarness) deliver(event, fixtureName string, edits map[string]any) error {
	h.t.Helper()
	h.seq++
	h.clock.Advance(time.Second)
	payload := fixture(h.t, fixtureName, edits)
	action, _ := edits["action"].(string)
	d := Delivery{ID: fmt.Sprintf("delivery-%d", h.seq), Event: event, Action: action, Installation: 1,
		Repo: coreOwner + "/" + coreRepo, Payload: payload, Received: h.clock.Now()}
	err := h.bot.Process(context.Background(), d)
	if isIgnored(err) {
		return nil
	}
	return err
}

// openAndLabel is GitHub's side of a user opening issue n and labelling
// it "bazinga": the issue exists, then two deliveries.
func (h *fakeHarness) openAndLabel(user string) int {
	h.t.Helper()
	n := h.gh.openIssue(user, "Add widgets", "Please add widget support.\n\n- [ ] criteria")
	issue := func(labels ...string) map[string]any {
		ls := []any{}
		for _, l := range labels {
			ls = append(ls, map[string]any{"name": l})
		}
		return map[string]any{"number": n, "title": "Add widgets", "body": "Please add widget support.\n\n- [ ] criteria",
			"state": "open", "user": map[string]any{"login": user, "type": "User"}, "labels": ls}
	}
	require.NoError(h.t, h.deliver("issues", "core_issues_labeled.json", map[string]any{
		"action": "opened", "issue": issue(), "sender.login": user, "label": nil}))
	require.NoError(h.t, h.gh.EditIssue(context.Background(), h.gh.repo, n, ghapi.IssueEdit{Labels: &[]string{"bazinga"}}))
	h.gh.mu.Lock()
	h.gh.calls = h.gh.calls[:len(h.gh.calls)-1] // GitHub's own change, not the bot's
	h.gh.mu.Unlock()
	require.NoError(h.t, h.deliver("issues", "core_issues_labeled.json", map[string]any{
		"action": "labeled", "issue": issue("bazinga"), "sender.login": user}))
	return n
}

func (h *fakeHarness) botComments(n int) []string {
	var out []string
	for _, c := range h.gh.commentsOn(n) {
		if c.Author == fakeBotLogin {
			out = append(out, c.Body)
		}
	}
	return out
}

func TestReadOnlyUserCannotStart(t *testing.T) {
	h := newFakeHarness(t, "")
	n := h.openAndLabel("mallory")
	require.Empty(t, h.botComments(n))
	require.Empty(t, h.gh.allRuns())
	require.Empty(t, h.gh.recorded(true), "no effect at all")
}

func TestBadConfigNamesKeyAndLine(t *testing.T) {
	h := newFakeHarness(t, "max_parallel: 4\nqa: maybe\n")
	n := h.openAndLabel("alice")
	got := h.botComments(n)
	require.Len(t, got, 1)
	require.Contains(t, got[0], "line 2")
	require.Contains(t, got[0], "qa")
	require.Empty(t, h.gh.allRuns())
}
