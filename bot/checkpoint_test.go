package bot

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Checkpoints on GitHub (issue 13): the session waits at the plan with the
// plan in the tracking comment, starts nothing until a writer approves,
// sends the plan back on /bazinga answer, binds approvals to the plan their
// author saw, and a rebuild from the log reaches the same place.

const planCheckpointConfig = "checkpoints: [plan]\n"

// atCheckpoint drives a new session to its plan checkpoint.
func atCheckpoint(t *testing.T, groups int) *fakeSession {
	t.Helper()
	s := newFakeSession(t, groups, planCheckpointConfig)
	s.gh.setRole("bob", "write")
	s.start()
	s.steps(40)
	st, ok := s.state()
	require.True(t, ok)
	require.NotNil(t, st.Session.Checkpoint, "the session waits at the plan checkpoint")
	return s
}

// assertWaiting checks the session waits at checkpoint id and nothing but
// the pm ever ran.
func (s *fakeSession) assertWaiting(id string, pmRuns int) codec.State {
	s.t.Helper()
	st, _ := s.state()
	require.NotNil(s.t, st.Session.Checkpoint)
	require.Equal(s.t, id, st.Session.Checkpoint.ID)
	require.Equal(s.t, pipeline.SessionAwaitingInput, st.Session.Status)
	require.Contains(s.t, s.labels(s.issue), "bazinga:needs-input")
	runs := s.gh.allRuns()
	require.Len(s.t, runs, pmRuns, "only the pm ran")
	for _, r := range runs {
		_, ref, ok := codec.StepInText(r.Title)
		require.True(s.t, ok, r.Title)
		require.Equal(s.t, pipeline.RolePM, ref.Role, "no developer is dispatched at the checkpoint")
	}
	for _, g := range st.Session.Groups {
		require.Equal(s.t, pipeline.WaitCheckpoint, g.Wait, "group %s", g.ID)
		require.False(s.t, g.Started, "group %s", g.ID)
	}
	require.Empty(s.t, s.prs(), "no group branch or PR before approval")
	return st
}

// rebuilt is the session rebuilt from GitHub's log alone.
func (s *fakeSession) rebuilt() codec.State {
	s.t.Helper()
	ref := sessionRef{inst: 1, repo: ghapi.RepoRef{Owner: coreOwner, Name: coreRepo}, issue: s.issue}
	st, ok, err := s.bot.rebuild(context.Background(), s.gh, ref, s.gh.commentsOn(s.issue), 0)
	require.NoError(s.t, err)
	require.True(s.t, ok)
	return st
}

// checkpointsOf is what must survive a rebuild of the checkpoints (times
// differ: a replay runs at the log's times).
func checkpointsOf(s pipeline.Session) []string {
	var out []string
	for _, cp := range s.PassedCheckpoints {
		out = append(out, strings.Join([]string{cp.ID, cp.Step, cp.ApprovedBy, cp.RevisedBy, cp.Feedback}, "|"))
	}
	if cp := s.Checkpoint; cp != nil {
		out = append(out, "open "+cp.ID+"|"+cp.Step)
	}
	return out
}

func (s *fakeSession) assertRebuildMatches() {
	s.t.Helper()
	live, _ := s.state()
	got := s.rebuilt()
	require.Equal(s.t, routingOf(live.Session), routingOf(got.Session))
	require.Equal(s.t, checkpointsOf(live.Session), checkpointsOf(got.Session))
	require.Equal(s.t, live.Session.PlanRev, got.Session.PlanRev)
	require.NoError(s.t, pipeline.CheckLiveness(got.Session, got.Config))
}

func TestPlanCheckpointOnGitHub(t *testing.T) {
	for _, approval := range []string{"/bazinga approve", "/bazinga resume", "Looks right.\n/bazinga approve plan-1 ship it"} {
		t.Run(strings.ReplaceAll(approval, "\n", " "), func(t *testing.T) {
			s := atCheckpoint(t, 2)
			st := s.assertWaiting("plan-1", 1)

			// The tracking comment shows the plan and how to go on.
			_, body := s.trackingComment()
			for _, want := range []string{
				"→ waiting for approval of plan-1: `/bazinga approve`",
				"> ✋ **Waiting for approval: plan-1**",
				"no developer starts until a writer approves the plan below",
				"Reply `/bazinga approve` to start the work, or `/bazinga answer <feedback>` to send the plan back to the pm.",
				"#### The plan (plan-1, parallel mode)",
				"| A: Widget part A | 1 | implementation, developer | — | Build widget part A. |",
				"**Success criteria**\n\n- widgets work",
				"```mermaid",
				"checkpoint: plan-1 waits for approval",
				"`/bazinga status | resume | approve | stop",
			} {
				require.Contains(t, body, want)
			}
			require.Contains(t, s.botCommentsJoined(), "✋ The plan (plan-1) waits for approval before any work starts: 2 group(s) in 1 phase(s)")
			s.assertRebuildMatches()

			// Time, sweeps and the label put back start nothing.
			s.clock.Advance(48 * time.Hour)
			require.NoError(t, s.bot.Sweep(context.Background()))
			s.label("alice", s.issue, "bazinga", true)
			s.drain()
			s.assertWaiting("plan-1", 1)

			// A reader may not approve: a refusal, no effect.
			s.comment("mallory", s.issue, "/bazinga approve")
			s.drain()
			got := s.botComments(s.issue)
			require.Contains(t, got[len(got)-1], "@mallory only people with write")
			s.assertWaiting("plan-1", 1)

			// A writer approves: the work starts.
			s.comment("alice", s.issue, approval)
			s.drain()
			st, _ = s.state()
			require.Nil(t, st.Session.Checkpoint)
			require.Equal(t, pipeline.SessionRunning, st.Session.Status)
			require.Contains(t, s.botCommentsJoined(), "plan-1 approved by alice: the work starts.")
			require.Contains(t, s.labels(s.issue), "bazinga:running")
			s.assertRebuildMatches()
			require.Equal(t, pipeline.SessionDone, s.run(500))
			s.assertVerifiedBazinga()
			require.Equal(t, "alice", st.Session.PassedCheckpoints[0].ApprovedBy)
		})
	}
}

func TestPlanCheckpointFeedbackReplansOnGitHub(t *testing.T) {
	s := atCheckpoint(t, 2)
	s.assertWaiting("plan-1", 1)

	// bob approves what he sees, but his comment's delivery is slow.
	s.comment("bob", s.issue, "/bazinga approve")
	slow := s.queue[len(s.queue)-1]
	s.queue = s.queue[:len(s.queue)-1]

	// alice sends the plan back; the pm plans again, with three groups.
	s.clock.Advance(time.Minute)
	s.comment("alice", s.issue, "/bazinga answer Split the widget work in three.\nKeep A as it is.")
	s.drain()
	st, _ := s.state()
	require.Nil(t, st.Session.Checkpoint)
	require.Empty(t, st.Session.Groups)
	require.Equal(t, pipeline.SessionPlanning, st.Session.Status)
	comments := s.botCommentsJoined()
	require.Contains(t, comments, "📨 Answer from @alice received")
	require.Contains(t, comments, "alice sent plan-1 back to the pm")
	pm := st.Session.Step(st.Session.Lead.InFlight)
	require.NotNil(t, pm)
	require.Equal(t, pipeline.PurposePlan, pm.Purpose)
	require.Contains(t, pm.Feedback, "Split the widget work in three.\nKeep A as it is.")
	require.Equal(t, st.Session.PassedCheckpoints[0].Step, pm.From, "the pm gets its previous plan")
	s.groups = 3
	s.steps(40)
	st = s.assertWaiting("plan-2", 2)
	require.Len(t, st.Session.Groups, 3)
	_, body := s.trackingComment()
	require.Contains(t, body, "> plan-1 was sent back by alice: Split the widget work in three. Keep A as it is.")
	require.Contains(t, body, "| C: Widget part C |")

	// bob's approval was written about plan-1: it does not approve plan-2.
	s.queue = append(s.queue, slow)
	s.drain()
	s.assertWaiting("plan-2", 2)
	require.Contains(t, s.botCommentsJoined(), "The approval by bob is for plan-1, which was sent back to the pm; it does not approve plan-2.")
	s.assertRebuildMatches()

	s.comment("bob", s.issue, "/bazinga approve")
	s.drain()
	st, _ = s.state()
	require.Nil(t, st.Session.Checkpoint)
	require.Equal(t, []string{"plan-1|" + st.Session.PassedCheckpoints[0].Step + "||alice|Split the widget work in three.\nKeep A as it is.",
		"plan-2|" + st.Session.PassedCheckpoints[1].Step + "|bob||"}, checkpointsOf(st.Session))
	s.assertRebuildMatches()
	require.Equal(t, pipeline.SessionDone, s.run(500))
	s.assertVerifiedBazinga()
}

func TestStopAtThePlanCheckpointOnGitHub(t *testing.T) {
	s := atCheckpoint(t, 1)
	s.comment("alice", s.issue, "/bazinga stop")
	s.drain()
	st, _ := s.state()
	require.Equal(t, pipeline.SessionStopped, st.Session.Status)
	require.Contains(t, s.labels(s.issue), "bazinga:stopped")
	require.Len(t, s.gh.allRuns(), 1)
	// Resuming a stopped session at its checkpoint, written after the plan
	// was shown, approves it too.
	s.comment("alice", s.issue, "/bazinga resume")
	s.drain()
	st, _ = s.state()
	require.Nil(t, st.Session.Checkpoint)
	require.True(t, slices.ContainsFunc(st.Session.PassedCheckpoints, func(cp pipeline.Checkpoint) bool { return cp.ApprovedBy == "alice" }))
	require.Equal(t, pipeline.SessionDone, s.run(500))
}

func TestBindCheckpoint(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	s := pipeline.Session{Checkpoint: &pipeline.Checkpoint{ID: "plan-2", Kind: pipeline.CheckpointPlan, Since: t0},
		PassedCheckpoints: []pipeline.Checkpoint{{ID: "plan-1", Kind: pipeline.CheckpointPlan, Since: t0.Add(-time.Hour), Ended: t0.Add(-time.Minute)}}}
	cmd := func(k pipeline.CommandKind, id string) pipeline.Event {
		return pipeline.CommandEvent("7", "alice", pipeline.Command{Kind: k, Checkpoint: id})
	}
	for _, tc := range []struct {
		name    string
		written time.Time
		in      pipeline.Event
		want    string
	}{
		{"approve after it opened", t0.Add(time.Second), cmd(pipeline.CommandApprove, ""), "plan-2"},
		{"approve while plan-1 waited", t0.Add(-30 * time.Minute), cmd(pipeline.CommandApprove, ""), "plan-1"},
		{"approve while the pm re-planned", t0.Add(-30 * time.Second), cmd(pipeline.CommandApprove, ""), pipeline.NoCheckpoint},
		{"approve naming one keeps it", t0.Add(-30 * time.Minute), cmd(pipeline.CommandApprove, "plan-2"), "plan-2"},
		{"resume after it opened", t0.Add(time.Second), cmd(pipeline.CommandResume, ""), "plan-2"},
		{"resume with nothing open stays plain", t0.Add(-30 * time.Second), cmd(pipeline.CommandResume, ""), ""},
		{"stop is not bound", t0.Add(time.Second), cmd(pipeline.CommandStop, ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := tc.in.Command.Checkpoint
			events, record := []pipeline.Event{tc.in}, []pipeline.Event{tc.in}
			bindCheckpoint(s, input{command: true, written: tc.written}, t0.Add(time.Hour), events, record)
			assert.Equal(t, tc.want, events[0].Command.Checkpoint)
			assert.Equal(t, tc.want, record[0].Command.Checkpoint, "the record replays the same binding")
			assert.Equal(t, orig, tc.in.Command.Checkpoint, "the translated event is not modified in place")
		})
	}
	// Answers are bound to the question and the checkpoint their author saw
	// (issue 23): feedback about plan-1 never sends plan-2 back.
	asked := s
	asked.Clarification = &pipeline.Clarification{Step: "7/_/pm/9", Question: "pg?", AskedAt: t0.Add(2 * time.Second)}
	for _, tc := range []struct {
		name           string
		written        time.Time
		checkpoint, qn string
	}{
		{"feedback while plan-1 waited", t0.Add(-30 * time.Minute), "plan-1", pipeline.NoQuestion},
		{"feedback on plan-2", t0.Add(time.Second), "plan-2", pipeline.NoQuestion},
		{"an answer after the question", t0.Add(3 * time.Second), "plan-2", "7/_/pm/9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := []pipeline.Event{pipeline.CommandEvent("7", "alice", pipeline.Command{Kind: pipeline.CommandAnswer, Text: "x"})}
			bindCheckpoint(asked, input{command: true, written: tc.written}, t0.Add(time.Hour), events)
			assert.Equal(t, tc.checkpoint, events[0].Command.Checkpoint)
			assert.Equal(t, tc.qn, events[0].Command.Question)
		})
	}
	// GitHub stamps comments with whole seconds (issue 22): a command
	// stamped in the second a checkpoint or question opened (by the
	// orchestrator's clock, 400ms into it) binds to it when nothing was open
	// at the start of that second; a precise time keeps its binding.
	tie := pipeline.Session{Checkpoint: &pipeline.Checkpoint{ID: "plan-1", Kind: pipeline.CheckpointPlan, Since: t0.Add(400 * time.Millisecond)},
		Clarification: &pipeline.Clarification{Step: "7/_/pm/2", Question: "pg?", AskedAt: t0.Add(400 * time.Millisecond)}}
	for _, tc := range []struct {
		name           string
		written        time.Time
		checkpoint, qn string
	}{
		{"stamped in the second it opened", t0, "plan-1", "7/_/pm/2"},
		{"stamped the second before", t0.Add(-time.Second), pipeline.NoCheckpoint, pipeline.NoQuestion},
		{"a precise time before it opened", t0.Add(100 * time.Millisecond), pipeline.NoCheckpoint, pipeline.NoQuestion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := []pipeline.Event{cmd(pipeline.CommandApprove, ""),
				pipeline.CommandEvent("7", "alice", pipeline.Command{Kind: pipeline.CommandAnswer, Text: "x"})}
			bindCheckpoint(tie, input{command: true, written: tc.written}, t0.Add(time.Hour), events)
			assert.Equal(t, tc.checkpoint, events[0].Command.Checkpoint)
			assert.Equal(t, tc.qn, events[1].Command.Question)
		})
	}
	// Not a command comment (a label): nothing is bound.
	events := []pipeline.Event{cmd(pipeline.CommandResume, "")}
	bindCheckpoint(s, input{}, t0, events)
	assert.Empty(t, events[0].Command.Checkpoint)
}

func TestPhaseCheckpointOnGitHub(t *testing.T) {
	s := newFakeSession(t, 2, "checkpoints: [phase]\n")
	s.phased = true
	s.start()
	s.steps(200)
	st, _ := s.state()
	require.NotNil(t, st.Session.Checkpoint, "phase 1 merged; phase 2 waits")
	require.Equal(t, "phase-2", st.Session.Checkpoint.ID)
	require.Equal(t, pipeline.StageMerged, st.Session.Group("A").Stage)
	require.False(t, st.Session.Group("B").Started)
	require.Contains(t, s.labels(s.issue), "bazinga:needs-input")
	_, body := s.trackingComment()
	require.Contains(t, body, "> ✋ **Waiting for approval: phase-2**")
	require.Contains(t, body, "phase 2 (B) starts once a writer approves.")
	require.Contains(t, s.botCommentsJoined(), "Phase 1 is done; phase 2 (B) waits for approval before it starts.")
	runs := len(s.gh.allRuns())

	// Feedback at a phase checkpoint goes to the pm; the phase still waits.
	s.comment("alice", s.issue, "/bazinga answer Reuse A's helpers in B.")
	s.drain()
	st, _ = s.state()
	require.NotNil(t, st.Session.Checkpoint)
	pm := st.Session.Step(st.Session.Lead.InFlight)
	require.NotNil(t, pm)
	require.Equal(t, pipeline.RolePM, pm.Role)
	require.Contains(t, pm.Notes[len(pm.Notes)-1].Text, "Before phase 2 starts, alice says: Reuse A's helpers in B.")
	require.Len(t, s.gh.allRuns(), runs+1, "only the pm runs")

	s.comment("alice", s.issue, "/bazinga approve phase-2")
	s.drain()
	st, _ = s.state()
	require.Nil(t, st.Session.Checkpoint)
	require.Contains(t, s.botCommentsJoined(), "phase-2 approved by alice: phase 2 starts.")
	s.assertRebuildMatches()
	require.Equal(t, pipeline.SessionDone, s.run(500))
	s.assertVerifiedBazinga()
}
