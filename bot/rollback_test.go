package bot

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// TestRollbackDetectedOnGroupPRs is issue 21 item 6: an admin puts an older
// signed tracking comment back and deletes the issue's newer comments, so
// that the only proof of the newer progress is the log on the group PRs.
// The old state is detected, the session rebuilt from its whole log, and
// the old state is never written back.
func TestRollbackDetectedOnGroupPRs(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 2})
	h.start()
	var oldState codec.State
	for i := 0; i < 60; i++ {
		h.steps(1)
		st, _ := h.state()
		if len(st.PRs) > 0 && st.PRs[0].Number > 0 {
			oldState = st
			break
		}
	}
	require.NotEmpty(t, oldState.PRs, "the session opened a group PR")
	id, oldBody := h.trackingComment()
	before := map[int64]bool{}
	for _, c := range h.repo.Comments(h.issue) {
		before[c.GetID()] = true
	}
	h.steps(25)
	now, _ := h.state()
	require.Greater(t, now.Session.StepSeq, oldState.Session.StepSeq)

	// The attack: the old body back, and every newer comment on the issue
	// gone (an admin can delete any comment).
	require.NoError(t, h.repo.EditComment(h.f.BotLogin(), id, oldBody))
	for _, c := range h.repo.Comments(h.issue) {
		if !before[c.GetID()] {
			require.NoError(t, h.repo.DeleteComment(coreOwner, c.GetID()))
		}
	}
	// The session's key is the repository's id, as deliveries name it.
	gr, _, err := h.botClient().Repositories.Get(h.ctx, coreOwner, coreRepo)
	require.NoError(t, err)
	ref := sessionRef{inst: 1, repo: ghapi.RepoRef{Owner: coreOwner, Name: coreRepo, ID: gr.GetID()}, issue: h.issue}
	var issueComments []ghapi.Comment
	gh := ghapi.New(h.botClient())
	issueComments, err = gh.ListComments(h.ctx, ref.repo, ref.issue)
	require.NoError(t, err)
	rev, seq := h.bot.logFloor(issueComments, ref)
	require.False(t, oldState.Session.Rev < rev || oldState.Session.StepSeq < seq,
		"precondition: the issue alone does not show the rollback (rev %d/%d, step %d/%d)", oldState.Session.Rev, rev, oldState.Session.StepSeq, seq)

	// The bot that wrote the newer states knows, at no cost.
	calls := h.botCalls()
	old, _, _, err := h.bot.rolledBack(h.ctx, gh, ref, oldState, issueComments)
	require.NoError(t, err)
	assert.True(t, old, "older than a revision this process verified")
	assert.Equal(t, calls, h.botCalls(), "no request")

	// A restarted bot reads the group PRs' logs.
	h.bot = h.newBot()
	old, _, prSeq, err := h.bot.rolledBack(h.ctx, gh, ref, oldState, issueComments)
	require.NoError(t, err)
	assert.True(t, old, "the group PRs' log shows the newer progress")
	assert.Greater(t, prSeq, oldState.Session.StepSeq)
	h.bot = h.newBot()

	ld, err := h.bot.load(h.ctx, gh, ref, 0)
	require.NoError(t, err)
	require.True(t, ld.rebuilt, "rebuilt, not believed")
	assert.Greater(t, ld.st.Session.StepSeq, oldState.Session.StepSeq)

	// The next write is of the rebuilt session, never the old state.
	_, err = h.repo.Comment("alice", h.issue, "/bazinga status")
	require.NoError(t, err)
	h.drain()
	after, _ := h.state()
	assert.Greater(t, after.Session.StepSeq, oldState.Session.StepSeq, "the old state was not written back")
	// The deleted comments of the issue are lost to the log (results the
	// rebuild cannot replay are run again), but the session goes on from
	// its newest provable state and ends.
	require.Equal(t, pipeline.SessionDone, h.run(500))
}
