package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 23: the pm's words can never lose a group. Every decision below is
// something an LLM pm might write while group A waits on it; none decides
// A's fate by name, so each is refused whole: the groups stay exactly as
// they were, and the pm hears every problem.
func TestMalformedDecisionsChangeNothing(t *testing.T) {
	for _, c := range []struct {
		name, status, handoff string
		problems              []string
	}{
		{"only adds a group", "CONTINUE", `{"groups":[{"id":"D","task":"replacement"}]}`,
			[]string{"group A waits on your decision and is neither under groups nor under drop"}},
		{"a typo of the waiting group", "CONTINUE", `{"groups":["a"],"feedback":{"a":"smaller"}}`,
			[]string{`groups names "a", which is no group of this session (did you mean "A"?)`, `feedback is for "a"`, "group A waits on your decision"}},
		{"an unknown id", "CONTINUE", `{"groups":["A","Q9"]}`, []string{`groups names "Q9", which is no group of this session`}},
		{"drops an unknown group", "CONTINUE", `{"drop":["Z"]}`, []string{`drop names "Z", which is no group`, "group A waits on your decision"}},
		{"empty lists", "CONTINUE", `{"groups":[],"drop":[]}`, []string{"group A waits on your decision"}},
		{"no handoff", "CONTINUE", ``, []string{"group A waits on your decision"}},
		{"the same id twice", "CONTINUE", `{"groups":["A","A"]}`, []string{`groups names "A" twice`}},
		{"dropped twice", "CONTINUE", `{"drop":["A","A"]}`, []string{`drop names "A" twice`}},
		{"continued and dropped", "CONTINUE", `{"groups":["A"],"drop":["A"]}`, []string{`"A" is under both groups and drop`}},
		{"an empty id", "CONTINUE", `{"groups":["A",""]}`, []string{"groups has an empty id"}},
		{"drops a group that does not wait", "CONTINUE", `{"groups":["A"],"drop":["B"]}`, []string{`drop names "B", which does not wait on your decision`}},
		{"continues a group given up", "CONTINUE", `{"groups":["A","C"]}`, []string{`groups names "C", which was given up`}},
		{"feedback for no group", "CONTINUE", `{"groups":["A"],"feedback":{"Z":"x"}}`, []string{`feedback is for "Z", which is no group`}},
		{"named by id and in full", "CONTINUE", `{"groups":["A","D",{"id":"D","task":"d"}]}`, []string{`groups names "D" both by id and in full`}},
		{"an added group that cannot be used", "CONTINUE", `{"groups":["A",{"id":"A","task":"again"}]}`, []string{`group "A": id already used`}},
		{"a new plan that ignores A", "PLANNING_COMPLETE", planJSON(pg("D", 1)), []string{"group A waits on your decision"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := stuckAmongOthers(t)
			before := h.s.Clone()
			pm := h.inFlight(LeadGroup)
			status, err := ParseStatus(c.status)
			require.NoError(t, err)
			h.report(LeadGroup, status, c.handoff)
			assert.Equal(t, before.Groups, h.s.Groups, "the groups are as they were")
			assert.Equal(t, before.PlanRev, h.s.PlanRev)
			next := h.inFlight(LeadGroup)
			assert.Equal(t, RolePM, next.Role, "the pm is asked again")
			assert.Contains(t, next.Feedback, "Your decision was not applied, and nothing changed")
			for _, p := range c.problems {
				assert.Contains(t, next.Feedback, p)
			}
			require.NotEmpty(t, next.Notes, "the pm hears about A again")
			assert.Equal(t, "A", next.Notes[0].Group)
			assert.Contains(t, h.s.Step(pm.ID).Routed, "refused")
		})
	}
}

// stuckAmongOthers is a session where A waits on the pm step in flight, B
// is at work and C was given up by a human.
func stuckAmongOthers(t *testing.T) *harness {
	cfg := DefaultConfig()
	cfg.Limits.DeveloperIterations = 2
	h := newHarness(t, cfg)
	h.plan(pg("A", 1), pg("B", 1), pg("C", 1))
	h.through("A", StatusPartial, StatusPartial)
	require.Equal(t, WaitPM, h.group("A").Wait)
	require.Equal(t, "A", h.inFlight(LeadGroup).Notes[0].Group)
	h.reconcile(Event{Kind: EventPRClosed, Session: "s1", Group: "C", Actor: "carol"})
	require.Equal(t, StageAbandoned, h.group("C").Stage)
	return h
}

// A decision that names every waiting group is applied: continued groups
// run, dropped ones are abandoned with the step that dropped them, added
// ones start.
func TestWellFormedDecisionsApply(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1))
	for _, g := range []string{"A", "B"} {
		h.through(g, StatusPartial, StatusPartial, StatusPartial, StatusPartial, StatusUnblockingGuidance, StatusPartial)
	}
	require.Equal(t, WaitPM, h.group("A").Wait)
	require.Equal(t, WaitPM, h.group("B").Wait)
	pm := h.inFlight(LeadGroup)
	h.report(LeadGroup, StatusContinue, `{"groups":["A",{"id":"C","task":"the rest of B"}],"drop":["B"],"feedback":{"A":"just the parser"}}`)
	assert.Equal(t, "just the parser", h.inFlight("A").Feedback)
	assert.Equal(t, StageAbandoned, h.group("B").Stage)
	assert.Equal(t, &Abandonment{Step: pm.ID}, h.group("B").Abandoned)
	_, cRuns := h.maybeInFlight("C")
	assert.True(t, cRuns)

	// A human who retries an abandoned group takes its record back.
	h.reconcile(CommandEvent("s1", "bob", Command{Kind: CommandRetry, Group: "B"}))
	assert.Nil(t, h.group("B").Abandoned)
	assert.NotEqual(t, StageAbandoned, h.group("B").Stage)
}

// A closed PR records who gave the group up.
func TestClosedPRRecordsWhoAbandoned(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	h.reconcile(Event{Kind: EventPRClosed, Session: "s1", Group: "A", Actor: "carol"})
	assert.Equal(t, &Abandonment{By: "carol"}, h.group("A").Abandoned)
}

// Naming a merged group changes nothing and is no problem: the decision
// about the waiting group applies.
func TestNamingAMergedGroupIsHarmless(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Limits.DeveloperIterations = 2
	h := newHarness(t, cfg)
	h.plan(pg("A", 1), pg("B", 1))
	h.through("B", StatusReadyForQA, StatusPass, StatusApproved, StatusMergeSuccess)
	require.Equal(t, StageMerged, h.group("B").Stage)
	h.through("A", StatusPartial, StatusPartial)
	require.Equal(t, WaitPM, h.group("A").Wait)
	h.report(LeadGroup, StatusContinue, `{"groups":["A","B"],"feedback":{"A":"smaller"}}`)
	assert.Equal(t, "smaller", h.inFlight("A").Feedback)
	assert.Equal(t, StageMerged, h.group("B").Stage)
}
