package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func renumberSession() Session {
	return Session{
		ID:      "1",
		StepSeq: 5,
		Steps: []Step{
			{ID: "1/_/pm/1", Group: LeadGroup, N: 1, State: StepDone},
			{ID: "1/A/qa/4", Group: "A", N: 4, State: StepInFlight},
			{ID: "1/B/qa/5", Group: "B", N: 5, State: StepInFlight},
		},
		Groups: []Group{
			{ID: "A", Track: Track{InFlight: "1/A/qa/4"}},
			{ID: "B", Track: Track{InFlight: "1/B/qa/5"}, Abandoned: &Abandonment{Step: "1/B/qa/5"}},
		},
		Lead: Track{Last: "1/_/pm/1"},
	}
}

func TestRenumberStepsSwapsAndFollowsReferences(t *testing.T) {
	s := renumberSession()
	got, err := RenumberSteps(s, map[string]string{"1/A/qa/4": "1/A/qa/5", "1/B/qa/5": "1/B/qa/4"})
	require.NoError(t, err)
	var ids []string
	for _, st := range got.Steps {
		ids = append(ids, st.ID)
	}
	assert.Equal(t, []string{"1/_/pm/1", "1/B/qa/4", "1/A/qa/5"}, ids, "in number order")
	assert.Equal(t, 4, got.Steps[1].N)
	assert.Equal(t, "1/A/qa/5", got.Group("A").InFlight)
	assert.Equal(t, "1/B/qa/4", got.Group("B").InFlight)
	assert.Equal(t, "1/B/qa/4", got.Group("B").Abandoned.Step)
	assert.Equal(t, "1/_/pm/1", got.Lead.Last)
	assert.Equal(t, "1/A/qa/4", s.Steps[1].ID, "the input is not changed")
}

func TestRenumberStepsRefuses(t *testing.T) {
	tests := []struct {
		name string
		ids  map[string]string
		want string
	}{
		{"unknown step", map[string]string{"1/A/qa/9": "1/A/qa/4"}, "no step 1/A/qa/9"},
		{"another role", map[string]string{"1/A/qa/4": "1/A/developer/4"}, "not the same session, group and role"},
		{"another group", map[string]string{"1/A/qa/4": "1/B/qa/7"}, "not the same session, group and role"},
		{"a number taken", map[string]string{"1/A/qa/4": "1/A/qa/1"}, "1/_/pm/1 and 1/A/qa/4 would both be step 1"},
		{"two onto one", map[string]string{"1/B/qa/5": "1/B/qa/4", "1/A/qa/4": "1/A/qa/6"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := renumberSession()
			got, err := RenumberSteps(s, tc.ids)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
			assert.Equal(t, s, got, "unchanged on refusal")
		})
	}
	s := renumberSession()
	s.Steps = append(s.Steps, Step{ID: "1/A/qa/6", Group: "A", N: 6})
	_, err := RenumberSteps(s, map[string]string{"1/A/qa/4": "1/A/qa/6"})
	assert.ErrorContains(t, err, "renumber: 1/A/qa/4 and 1/A/qa/6 would both be step 6")
}
