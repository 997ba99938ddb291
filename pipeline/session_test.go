package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// busySession plays a session with every kind of state in it: escalations,
// a clarification, approvals, retries, an abandoned group, merges.
func busySession(t *testing.T) *harness {
	cfg := DefaultConfig()
	cfg.Merge.RequiredApprovals = 1
	h := newHarness(t, cfg)
	h.start("build the thing")
	h.report(LeadGroup, StatusNeedsClarification, `{"question":"pg?","fallback":"sqlite"}`)
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "pg"}))
	h.report(LeadGroup, StatusPlanningComplete, planJSON(pg("A", 1), pg("B", 1), pg("C", 2, "A")))
	h.through("A", StatusPartial, StatusIncomplete, StatusReadyForQA, StatusPass, StatusApproved)
	h.reconcile(Event{Kind: EventHumanReview, Session: "s1", Group: "A", Actor: "bob", Review: ReviewApproved})
	h.reconcile(StepFailure("s1", h.inFlight("B").ID, "crashed"))
	h.report("A", StatusMergeSuccess, `{"merge_commit":"abc123"}`, "merged", "tests 12/12")
	h.reconcile(Event{Kind: EventPRClosed, Session: "s1", Group: "B", Actor: "carol"})
	return h
}

func TestSessionJSONRoundTrip(t *testing.T) {
	h := busySession(t)
	b, err := h.s.Marshal()
	require.NoError(t, err)
	back, err := UnmarshalSession(b)
	require.NoError(t, err)
	assert.Equal(t, h.s, back)
	b2, err := back.Marshal()
	require.NoError(t, err)
	assert.Equal(t, string(b), string(b2), "serialising twice gives the same bytes")
	assert.Equal(t, SchemaVersion, back.Schema)
}

func TestUnmarshalSessionRefusesBadInput(t *testing.T) {
	h := busySession(t)
	good, err := h.s.Marshal()
	require.NoError(t, err)
	mutate := func(f func(m map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(good, &m))
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"not json", []byte("{"), "read session"},
		{"newer schema", mutate(func(m map[string]any) { m["schema"] = 99 }), "schema version 99"},
		{"unknown status", mutate(func(m map[string]any) { m["status"] = "dancing" }), `unknown session status "dancing"`},
		{"bad session id", mutate(func(m map[string]any) { m["id"] = "a/b" }), `invalid session id "a/b"`},
		{"in-flight step missing", mutate(func(m map[string]any) {
			m["lead"].(map[string]any)["in_flight"] = "s1/_/pm/99"
		}), "not in flight"},
		{"steps out of order", mutate(func(m map[string]any) {
			st := m["steps"].([]any)
			st[0], st[1] = st[1], st[0]
		}), "out of order"},
		{"step id and number disagree", mutate(func(m map[string]any) {
			m["steps"].([]any)[0].(map[string]any)["n"] = 7
		}), "does not match"},
		{"duplicate group", mutate(func(m map[string]any) {
			gs := m["groups"].([]any)
			m["groups"] = append(gs, gs[0])
		}), "duplicate group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := UnmarshalSession(tt.in)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestReconcileIsDeterministicAndPure(t *testing.T) {
	h := busySession(t)
	before, _ := h.s.Marshal()
	c := h.inFlight("C")
	events := []Event{StepResult("s1", c.ID, Result{Status: StatusReadyForQA, Summary: []string{"done"}}), Tick("s1")}
	s1, a1 := Reconcile(h.s, events, h.now, h.cfg)
	s2, a2 := Reconcile(h.s, events, h.now, h.cfg)
	after, _ := h.s.Marshal()
	assert.Equal(t, string(before), string(after), "Reconcile must not modify its input")
	j1, _ := json.Marshal([]any{s1, a1})
	j2, _ := json.Marshal([]any{s2, a2})
	assert.Equal(t, string(j1), string(j2))
	// Action ids are stable and unique within a reconcile.
	seen := map[string]bool{}
	for _, a := range a1 {
		assert.NotEmpty(t, a.ID)
		assert.False(t, seen[a.ID], "duplicate action id %s", a.ID)
		seen[a.ID] = true
	}
}

func TestBadEventsAreIgnoredAndReported(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	acts := h.reconcile(StepResult("s1", "s1/A/developer/1", Result{Status: StatusReadyForQA}))
	assert.Contains(t, acts[0].Text, "has not started")
	h.plan(pg("A", 1))
	a := h.inFlight("A")
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{"unknown step", StepResult("s1", "s1/A/developer/9", Result{Status: StatusReadyForQA}), "no such step"},
		{"other session", StepResult("s2", a.ID, Result{Status: StatusReadyForQA}), `for session "s2"`},
		{"nil result", Event{Kind: EventStepResult, Session: "s1", Step: a.ID}, "carries no result"},
		{"failure of unknown step", StepFailure("s1", "nope", "x"), "no such step"},
		{"review of unknown group", Event{Kind: EventHumanReview, Session: "s1", Group: "Q", Actor: "x"}, "unknown group"},
		{"closure of unknown group", Event{Kind: EventPRClosed, Session: "s1", Group: "Q"}, "unknown group"},
		{"command without command", Event{Kind: EventCommand, Session: "s1"}, "without a command"},
		{"unknown event kind", Event{Kind: EventKind("rename"), Session: "s1"}, "unknown kind"},
		{"second start", Started("s1", "again", "main"), "already started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acts := h.reconcile(tt.ev)
			require.NotEmpty(t, acts)
			assert.Equal(t, ActionReport, acts[0].Kind)
			assert.Contains(t, acts[0].Text, tt.want)
			assert.Equal(t, a.ID, h.inFlight("A").ID, "nothing changed")
		})
	}
	// A second result for the same step is ignored.
	h.report("A", StatusReadyForQA, "")
	acts = h.reconcile(StepResult("s1", a.ID, Result{Status: StatusPartial}))
	assert.Contains(t, acts[0].Text, "it is done, not in flight")
	assert.Equal(t, RoleQA, h.inFlight("A").Role)
}

func TestStartRefusesBadSessions(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	acts := h.reconcile(Started("bad/id", "x", "main"))
	assert.Contains(t, acts[0].Text, "refused to start")
	assert.Equal(t, SessionNew, h.s.Status)
	h.reconcile(Started("s1", "  ", "main"))
	assert.Equal(t, SessionFailed, h.s.Status)
	assert.Equal(t, "the session has no requirements", h.s.Reason)
}

func TestDisallowedStatusIsRecordedAsReported(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	st := h.report("A", StatusApproved, "")
	assert.Equal(t, StatusPartial, st.Result.Status)
	assert.Equal(t, StatusApproved, st.Reported)
	assert.Contains(t, st.Note, "not allowed for developer")
}

// TestNoChangeNoRevision: a reconcile that changes nothing leaves the
// revision alone, so front-ends write no state.
func TestNoChangeNoRevision(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	h.report("A", StatusReadyForQA, "")
	rev, updated := h.s.Rev, h.s.UpdatedAt
	h.reconcile(Tick("s1"))
	assert.Equal(t, rev, h.s.Rev, "no revision when nothing changed")
	assert.Equal(t, updated, h.s.UpdatedAt)
	h.reconcile(CommandEvent("s1", "a", Command{Kind: CommandPause}))
	assert.Greater(t, h.s.Rev, rev, "a pause is a change")
}

func TestCapsules(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	st := h.report("A", StatusReadyForQA, "", "Implemented JWT auth", "3 files", "12/12 tests pass")
	assert.Equal(t, "🔨 Group A [developer/haiku] READY_FOR_QA | Implemented JWT auth | 3 files | 12/12 tests pass → qa", Capsule(st))
	qa := h.inFlight("A")
	assert.Equal(t, "⏳ Group A [qa/sonnet] test…", Capsule(qa))
	h.reconcile(StepFailure("s1", qa.ID, "job cancelled"))
	assert.Equal(t, "⚠️ Group A [qa/sonnet] no result (job cancelled) → retry 2/3", Capsule(*h.s.Step(qa.ID)))
	pm := *h.s.Step("s1/_/pm/1")
	assert.Equal(t, "📋 Session [pm/opus] PLANNING_COMPLETE | planned → groups A", Capsule(pm))
}

// TestRoleNamesAreNotGroupIDs: a group named like a role would make its
// step ids look like another kind of step (a group "merge" routed to the
// merge job), so plans may not use role names as ids.
func TestRoleNamesAreNotGroupIDs(t *testing.T) {
	for _, id := range []string{"merge", "validate", "QA", "pm", "tech_lead"} {
		assert.False(t, ValidGroupID(id), id)
	}
	assert.True(t, ValidGroupID("merger"))
	h := newHarness(t, DefaultConfig())
	h.start("x")
	h.report(LeadGroup, StatusPlanningComplete, `{"plan":{"groups":[{"id":"merge","task":"a"},{"id":"A","task":"b"}]}}`)
	next := h.inFlight(LeadGroup)
	assert.Equal(t, PurposePlan, next.Purpose, "the plan goes back to the pm")
	assert.Contains(t, next.Feedback, `"merge": id is a role name`)
}
