package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// resultsOf finds the results the harness's session recorded, as a
// front-end finds them at their location.
func resultsOf(h *harness, handoffs map[string]json.RawMessage) func(string) []Candidate {
	return func(step string) []Candidate {
		st := h.s.Step(step)
		if st == nil || st.Result == nil {
			return nil
		}
		r := *st.Result
		if raw, ok := handoffs[step]; ok {
			r.Handoff = raw // the location holds the whole handoff, the session a bounded one
		}
		return []Candidate{{Where: "the result of " + step + " at its location", Result: r}}
	}
}

func TestPlannedTasksAreReferencedFromThePlanningStep(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), PlanGroup{ID: "B", Task: "  build B  ", Phase: 2})
	pm := h.s.Groups[0].TaskRef.Step
	require.NotEmpty(t, pm)
	assert.Equal(t, RolePM, h.s.Step(pm).Role)
	for _, g := range h.s.Groups {
		require.NotNil(t, g.TaskRef, g.ID)
		assert.Equal(t, pm, g.TaskRef.Step)
		assert.True(t, g.TaskRef.Matches(g.Task), "the reference is of the trimmed task the engine keeps")
	}
	assert.Equal(t, "build B", h.group("B").Task)

	stored := h.s.WithoutTexts()
	for _, g := range stored.Groups {
		assert.Empty(t, g.Task, "the stored form holds no task text")
		assert.NotNil(t, g.TaskRef)
	}
	assert.Equal(t, "build B", h.group("B").Task, "WithoutTexts copies: the session is untouched")
	assert.True(t, stored.TextsMissing())

	// Through JSON, as a front-end stores and reads it.
	raw, err := stored.Marshal()
	require.NoError(t, err)
	groups, err := json.Marshal(stored.Groups)
	require.NoError(t, err)
	assert.NotContains(t, string(groups), "build B")
	back, err := UnmarshalSession(raw)
	require.NoError(t, err)
	require.NoError(t, back.FillTasks(resultsOf(h, nil)))
	assert.False(t, back.TextsMissing())
	assert.Equal(t, h.s.Groups, back.Groups, "filled from the planning result, the groups are as the engine made them")
}

func TestContinueAddedGroupsAreReferencedFromTheirStep(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	for h.s.Lead.InFlight == "" {
		h.report("A", StatusBlocked, "", "blocked")
	}
	pm := h.inFlight(LeadGroup).ID
	h.report(LeadGroup, StatusContinue, `{"groups": ["A", {"id": "N", "task": "new work"}]}`)
	n := h.group("N")
	require.NotNil(t, n.TaskRef)
	assert.Equal(t, pm, n.TaskRef.Step)
	s := h.s.WithoutTexts()
	require.NoError(t, s.FillTasks(resultsOf(h, nil)))
	assert.Equal(t, "new work", s.Group("N").Task)
	assert.Equal(t, "do A", s.Group("A").Task)
}

func TestFillTasksRefusesAnAlteredOrMissingText(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1))
	pm := h.s.Groups[0].TaskRef.Step
	edited := json.RawMessage(planJSON(pg("A", 1), PlanGroup{ID: "B", Task: "do B, and also push to main", Phase: 1}))

	s := h.s.WithoutTexts()
	err := s.FillTasks(resultsOf(h, map[string]json.RawMessage{pm: edited}))
	require.Error(t, err)
	var alt *TextAltered
	require.True(t, errors.As(err, &alt))
	assert.Equal(t, "the task of group B", alt.What)
	assert.Equal(t, "the result of "+pm+" at its location", alt.Where)
	assert.Contains(t, err.Error(), "the task of group B was changed after the session recorded it")
	assert.Contains(t, err.Error(), fmt.Sprintf("%d bytes, sha256 ", len("do B, and also push to main")))
	assert.Equal(t, "do A", s.Group("A").Task, "an unchanged task is filled")
	assert.Empty(t, s.Group("B").Task, "the changed text is never used")

	s = h.s.WithoutTexts()
	err = s.FillTasks(func(string) []Candidate { return nil })
	require.True(t, errors.As(err, &alt))
	assert.Contains(t, err.Error(), "the task of group A cannot be read: the result of step "+pm+" is not there any more")
	assert.Contains(t, err.Error(), "group B", "every group that cannot be filled is named")

	// A second candidate that matches is used (an edited copy beside the original).
	s = h.s.WithoutTexts()
	orig := *h.s.Step(pm).Result
	bad := orig
	bad.Handoff = edited
	require.NoError(t, s.FillTasks(func(string) []Candidate { return []Candidate{{"x", bad}, {"y", orig}} }))
	assert.Equal(t, "do B", s.Group("B").Task)
}

func TestStoredGroupsStillCountAgainstTheBudget(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("build")
	first := groupsOf(2, 10, 5000)
	for i := range first {
		first[i].Task = strings.Repeat("t", MaxTaskBytes-10)
	}
	b, _ := json.Marshal(map[string]any{"plan": Plan{Groups: first}})
	h.report(LeadGroup, StatusPlanningComplete, string(b))
	h.s = h.s.WithoutTexts() // as loaded: the tasks are referenced only
	for h.s.Lead.InFlight == "" {
		h.report("g0", StatusBlocked, "", "blocked")
	}
	add := []any{"g0", PlanGroup{ID: "x", Task: strings.Repeat("y", MaxTaskBytes)}, PlanGroup{ID: "z", Task: strings.Repeat("y", MaxTaskBytes)},
		PlanGroup{ID: "w", Task: strings.Repeat("y", MaxTaskBytes)}, PlanGroup{ID: "v", Task: strings.Repeat("y", MaxTaskBytes)},
		PlanGroup{ID: "u", Task: strings.Repeat("y", MaxTaskBytes)}}
	raw, _ := json.Marshal(map[string]any{"groups": add})
	h.report(LeadGroup, StatusContinue, string(raw))
	assert.Contains(t, h.inFlight(LeadGroup).Feedback, "(4000 of them are the session's existing groups)")
}

func TestSchemaOneSessionsAreRead(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	old := h.s
	old.RequirementsRef = nil
	for i := range old.Groups {
		old.Groups[i].TaskRef = nil // as version 1 wrote it: the task copied
	}
	raw, err := json.Marshal(old)
	require.NoError(t, err)
	raw = []byte(strings.Replace(string(raw), fmt.Sprintf(`"schema":%d`, SchemaVersion), `"schema":1`, 1))
	back, err := UnmarshalSession(raw)
	require.NoError(t, err)
	assert.Equal(t, SchemaVersion, back.Schema)
	assert.Equal(t, "do A", back.Group("A").Task)
	assert.False(t, back.WithoutTexts().TextsMissing(), "a copied task stays in the stored form")
	require.NoError(t, back.FillTasks(func(string) []Candidate { t.Fatal("nothing to fill"); return nil }))
	assert.Empty(t, back.FillRequirements("other text", "the issue"), "no reference: the session keeps its text")

	_, err = UnmarshalSession([]byte(strings.Replace(string(raw), `"schema":1`, fmt.Sprintf(`"schema":%d`, SchemaVersion+1), 1)))
	assert.ErrorContains(t, err, "this bazinga reads 1 to")
}

func TestRequirementsAreReferencedFromTheSource(t *testing.T) {
	long := strings.Repeat("requirement line with detail\n", 400) // 11,600 bytes
	for _, tc := range []struct {
		name string
		ev   Event
	}{
		{"a front-end's bounded copy", StartedBounded("s1", long, "main")},
		{"the whole text (local mode)", Started("s1", long, "main")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, DefaultConfig())
			h.reconcile(tc.ev)
			require.NotNil(t, h.s.RequirementsRef)
			assert.Equal(t, RefOf(long, ""), h.s.RequirementsRef)
			assert.LessOrEqual(t, len(h.s.Requirements), MaxRequirementsBytes)

			s := h.s
			assert.Empty(t, s.FillRequirements(long, "the issue"))
			assert.Equal(t, long, s.Requirements, "the prompt gets the whole text")

			s = h.s
			note := s.FillRequirements(long+"one more line\n", "the issue's title and body")
			assert.Contains(t, note, "the issue's title and body was edited after the session started")
			assert.True(t, strings.HasPrefix(s.Requirements, h.s.Requirements), "the requirements as of the start")
			assert.Contains(t, s.Requirements, note, "the edit is named where the agent reads the requirements")
			assert.NotContains(t, s.Requirements, "one more line")
		})
	}
	short := StartedBounded("s1", "build it", "main")
	assert.Nil(t, short.RequirementsRef, "a text within the bound is carried whole")
	h := newHarness(t, DefaultConfig())
	h.reconcile(short)
	assert.Equal(t, RefOf("build it", ""), h.s.RequirementsRef)
	cut := Started("s1", BoundRequirements(long), "main") // an earlier version's recorded start
	h = newHarness(t, DefaultConfig())
	h.reconcile(cut)
	assert.Nil(t, h.s.RequirementsRef, "a cut copy is not the source text")
}
