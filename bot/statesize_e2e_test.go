package bot

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// widgetPlan is a plan of n groups whose tasks are taskBytes of random text.
func widgetPlan(r *rand.Rand, n, taskBytes int) json.RawMessage {
	var groups []map[string]any
	for i := range n {
		id := fmt.Sprintf("G%02d", i)
		groups = append(groups, map[string]any{"id": id, "name": "Widget part " + id,
			"task": "Build widget part " + id + ". " + randText(r, taskBytes-len("Build widget part "+id+". ")), "phase": 1})
	}
	b, _ := json.Marshal(map[string]any{"plan": map[string]any{"mode": "parallel", "groups": groups, "success_criteria": []string{"widgets work"}}})
	return b
}

// TestOversizedPlanOnAHugeIssue (issue 27): an issue body of 65,536
// characters and a pm that proposes MaxGroups groups of 2,000-character
// tasks. The plan is refused, the issue says why and what the pm was asked
// to change, the pm's smaller plan runs to BAZINGA, and every tracking
// comment stays under GitHub's limit (the fake refuses longer ones, as
// GitHub does).
func TestOversizedPlanOnAHugeIssue(t *testing.T) {
	cases := []struct {
		name      string
		taskBytes int
		// why is what the pm and the issue are told of the refusal.
		why []string
	}{
		// 64 × 2,000 bytes: too long even for the result comment that
		// carries it, so the handoff is dropped on the way.
		{"64 groups of 2,000-byte tasks", 2000, []string{"the handoff has no plan: a handoff too large to deliver (over 16 KiB) is dropped",
			"at most 12000 bytes of names and tasks for all groups together, 2000 per task"}},
		// 64 × 250 bytes: delivered, and over the session's total.
		{"64 groups of 250-byte tasks", 250, []string{"the groups' names and tasks total 169",
			"bytes, the session's limit is 12000: shorten them by 49", "(about 187 bytes per group for 64 groups) or plan fewer groups"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(27, 65536))
			s := newFakeSession(t, 4, "")
			var feedback []string
			s.plan = func(fb string) json.RawMessage {
				feedback = append(feedback, fb)
				if fb == "" {
					return widgetPlan(r, pipeline.MaxGroups, tc.taskBytes)
				}
				return widgetPlan(r, 4, 150) // the pm shortens its plan
			}
			body := randText(r, codec.MaxCommentChars-len("Add widgets\n\n"))
			s.issue = s.openAndLabelBody("alice", body)
			require.Equal(t, pipeline.SessionDone, s.run(600))
			s.assertVerifiedBazinga()

			require.Len(t, feedback, 2, "one refusal, then the corrected plan")
			assert.Contains(t, feedback[1], "Your plan could not be used: ")
			assert.Contains(t, s.botCommentsJoined(), "The pm's plan was refused and sent back for a corrected one: ")
			for _, want := range tc.why {
				assert.Contains(t, feedback[1], want, "the pm is told what to change")
				assert.Contains(t, s.botCommentsJoined(), want, "the issue shows it")
			}
			_, tracking := s.trackingComment()
			assert.LessOrEqual(t, utf8.RuneCountInString(tracking), codec.MaxCommentChars)
			st, ok := s.state()
			require.True(t, ok)
			assert.LessOrEqual(t, len(st.Session.Requirements), pipeline.MaxRequirementsBytes)
			assert.Contains(t, st.Session.Requirements, "sha256 "+pipeline.RequirementsDigest("Add widgets\n\n"+body))
			assert.True(t, strings.HasPrefix(st.Session.Requirements, "Add widgets\n\n"+body[:100]))
		})
	}
}

// TestPlanAtTheBudgetRunsOnAHugeIssue: MaxGroups groups whose names and
// tasks fill the session's budget, on an issue body of 65,536 characters,
// run to BAZINGA; every tracking comment written fits (the fake refuses
// longer ones, as GitHub does).
func TestPlanAtTheBudgetRunsOnAHugeIssue(t *testing.T) {
	if testing.Short() {
		t.Skip("a session of 64 groups")
	}
	r := rand.New(rand.NewPCG(27, 64))
	s := newFakeSession(t, pipeline.MaxGroups, "")
	per := pipeline.MaxPlanTextBytes/pipeline.MaxGroups - len("Widget part G00")
	s.plan = func(fb string) json.RawMessage {
		require.Empty(t, fb, "the plan is within the budget")
		return widgetPlan(r, pipeline.MaxGroups, per)
	}
	s.issue = s.openAndLabelBody("alice", randText(r, codec.MaxCommentChars-len("Add widgets\n\n")))
	require.Equal(t, pipeline.SessionDone, s.run(5000))
	s.assertVerifiedBazinga()
	_, tracking := s.trackingComment()
	assert.LessOrEqual(t, utf8.RuneCountInString(tracking), codec.MaxCommentChars)
}

// TestLongAnswerIsRefusedAtTheDoor: an answer over the limit gets a reply
// and enters nothing: not the session, not the event record.
func TestLongAnswerIsRefusedAtTheDoor(t *testing.T) {
	s := newFakeSession(t, 1, "")
	s.hold = func(string) bool { return true }
	s.start()
	s.drain()
	before, _ := s.state()
	s.comment("alice", s.issue, "/bazinga answer "+strings.Repeat("a", 60000))
	s.drain()
	after, _ := s.state()
	assert.Equal(t, before.Session.Rev, after.Session.Rev, "nothing entered the session")
	assert.Contains(t, s.botCommentsJoined(), "ℹ️ The answer is 60000 bytes; the limit is 2000. Shorten it and send it again")
}

// TestStateTooLargePausesVisibly (issue 27): when a state cannot be written
// however little the tracking comment shows, the session pauses at its last
// written state with a short notice; a sweep does not post it again, and
// once the cause is gone a resume carries on. The cause here: a large
// comment GitHub has not taken yet, waiting in the outbox of a state near
// the limit, which one more reply pushes over it.
func TestStateTooLargePausesVisibly(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 3))
	s := newFakeSession(t, 1, "")
	held := true
	s.hold = func(string) bool { return held }
	s.start()
	s.drain()
	st, ok := s.state()
	require.True(t, ok)
	require.Equal(t, pipeline.SessionPlanning, st.Session.Status)

	// The largest waiting comment that still fits, less a little.
	waiting := func(n int) codec.State {
		c := st
		c.Pending = append(append([]codec.PendingEffect(nil), st.Pending...), codec.PendingEffect{ID: "comment/1/notice", Kind: codec.EffectComment,
			Number: s.issue, Text: randText(rand.New(rand.NewPCG(1, 1)), n), Failed: true})
		return c
	}
	n := 30000
	for ; ; n += 500 {
		if _, err := fitTracking(waiting(n+500), st.RepoURL, coreSigningKey); err != nil {
			break
		}
	}
	body, err := fitTracking(waiting(n-1500), st.RepoURL, coreSigningKey)
	require.NoError(t, err)
	id, _ := s.trackingComment()
	_, err = s.gh.EditComment(t.Context(), s.gh.repo, id, body)
	require.NoError(t, err)
	before, _ := s.state()
	require.Len(t, before.Pending, len(st.Pending)+1)

	s.comment("alice", s.issue, "/bazinga answer "+randText(r, pipeline.MaxAnswerBytes))
	s.drain()
	paused, _ := s.state()
	assert.Equal(t, pipeline.SessionPaused, paused.Session.Status)
	assert.Contains(t, paused.Session.Reason, tooLargeReason)
	assert.Equal(t, before.Session.StepSeq, paused.Session.StepSeq, "nothing of what did not fit was applied")
	_, tracking := s.trackingComment()
	assert.Contains(t, tracking, "paused | planning | "+tooLargeReason+" → `/bazinga resume` to continue")
	notice := "⏸️ **Paused** | " + tooLargeReason
	assert.Equal(t, 1, strings.Count(s.botCommentsJoined(), notice), "the issue says why")
	assert.Contains(t, s.botCommentsJoined(), "a GitHub comment holds 65536. What arrived since was not applied")
	assert.Contains(t, s.botCommentsJoined(), "The largest parts: the outbox, ")
	assert.Contains(t, s.labels(s.issue), "bazinga:paused")

	require.NoError(t, s.bot.Sweep(t.Context()))
	s.drain()
	assert.Equal(t, 1, strings.Count(s.botCommentsJoined(), notice), "a sweep does not repeat it")
	after, _ := s.state()
	assert.Len(t, after.Pending, 0, "the waiting comment was posted: the cause is gone")

	held = false
	s.comment("alice", s.issue, "/bazinga resume")
	require.Equal(t, pipeline.SessionDone, s.run(500))
	s.assertVerifiedBazinga()
}

// TestFirstStateTooLargeRefusesToStart: a configuration so large that the
// session's first state cannot be stored gets one notice on the issue
// naming it; a sweep does not repeat it.
func TestFirstStateTooLargeRefusesToStart(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 9))
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	cmd := make([]byte, 100000)
	for i := range cmd {
		cmd[i] = alnum[r.IntN(len(alnum))]
	}
	h := newFakeHarness(t, "tests:\n  command: \"go test ./... && echo "+string(cmd)+"\"\n")
	n := h.openAndLabel("alice")
	got := h.botComments(n)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "⚠️ **Session not started** | its first state would take ")
	assert.Contains(t, got[0], "The largest parts: the configuration, ")
	require.NoError(t, h.bot.Sweep(t.Context()))
	assert.Len(t, h.botComments(n), 1, "a sweep does not repeat it")
	assert.Empty(t, h.gh.allRuns())
}
