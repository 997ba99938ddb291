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

// TestStateTooLargePausesVisibly (issue 27): when a state cannot be written
// however little the tracking comment shows (here: a person's answer of
// 60,000 characters, which the event record carries in the outbox), the
// session pauses at its last written state with a short notice; a sweep
// does not post it again, and a resume carries on.
func TestStateTooLargePausesVisibly(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 3))
	s := newFakeSession(t, 1, "")
	held := true
	s.hold = func(string) bool { return held }
	s.start()
	s.drain()
	before, ok := s.state()
	require.True(t, ok)
	require.Equal(t, pipeline.SessionPlanning, before.Session.Status)

	s.comment("alice", s.issue, "/bazinga answer "+randText(r, 60000))
	s.drain()
	st, _ := s.state()
	assert.Equal(t, pipeline.SessionPaused, st.Session.Status)
	assert.Contains(t, st.Session.Reason, tooLargeReason)
	assert.Equal(t, before.Session.StepSeq, st.Session.StepSeq, "nothing of what did not fit was applied")
	_, tracking := s.trackingComment()
	assert.Contains(t, tracking, "paused | planning | "+tooLargeReason+" → `/bazinga resume` to continue")
	notices := strings.Count(s.botCommentsJoined(), "⏸️ **Paused** | "+tooLargeReason)
	assert.Equal(t, 1, notices, "the issue says why")
	assert.Contains(t, s.botCommentsJoined(), "a GitHub comment holds 65536. What arrived since was not applied")
	assert.Contains(t, s.botCommentsJoined(), "The largest parts: the outbox, ")
	assert.Contains(t, s.labels(s.issue), "bazinga:paused")

	require.NoError(t, s.bot.Sweep(t.Context()))
	s.drain()
	assert.Equal(t, notices, strings.Count(s.botCommentsJoined(), "⏸️ **Paused** | "+tooLargeReason), "a sweep does not repeat it")

	held = false
	s.comment("alice", s.issue, "/bazinga resume")
	require.Equal(t, pipeline.SessionDone, s.run(500))
	s.assertVerifiedBazinga()
}
