package bot

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

func TestTrackingShowsBaselineAndFailingChecks(t *testing.T) {
	red := &pipeline.Baseline{Commit: "0123456789abcdef", Identity: pipeline.IdentityGoTestJSON, Failed: []string{"calc.TestOld", "calc.Test|Pipe"}}
	tests := []struct {
		name   string
		mod    func(*pipeline.Session)
		want   []string
		absent []string
	}{
		{"no baseline", func(*pipeline.Session) {}, nil, []string{"Baseline", "Checks failing"}},
		{"green baseline is not news", func(s *pipeline.Session) { s.Baseline = &pipeline.Baseline{Green: true} }, nil, []string{"Baseline"}},
		{"red baseline waiting", func(s *pipeline.Session) { s.Baseline = red },
			[]string{"> 🔴 Baseline: the tests already fail on main@\u20600123456789ab (go test -json) — failing: calc.TestOld, calc.Test|Pipe.",
				"`/bazinga resume` accepts these failures as pre-existing"}, nil},
		{"red baseline accepted", func(s *pipeline.Session) {
			b := *red
			b.Accepted, b.AcceptedBy = true, "alice"
			s.Baseline = &b
		}, []string{"> Accepted (alice): only failures the base does not have count."}, []string{"/bazinga resume` accepts"}},
		{"failing checks", func(s *pipeline.Session) {
			s.Groups[0].Checks = []pipeline.CheckOutcome{{Name: "lint", Required: true}, {Name: "vet", Passed: true}}
		}, []string{"Checks failing on group code:\n- A: lint ✗ (required), vet ✓"}, nil},
		{"passing checks are not listed", func(s *pipeline.Session) {
			s.Groups[0].Checks = []pipeline.CheckOutcome{{Name: "vet", Passed: true}}
		}, nil, []string{"Checks failing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := pipeline.Session{ID: "7", Base: "main", Status: pipeline.SessionRunning,
				Groups: []pipeline.Group{{ID: "A", Name: "a", Track: pipeline.Track{Stage: pipeline.StageDev}}}}
			tc.mod(&s)
			st := codec.State{Session: s}
			out := renderTracking(&st, "", 30, "")
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
			for _, a := range tc.absent {
				assert.NotContains(t, out, a)
			}
		})
	}
}

// A result comment's harness report reaches the engine's event.
func TestResultEventCarriesTheHarnessReport(t *testing.T) {
	s := pipeline.Session{ID: "7", Steps: []pipeline.Step{{ID: "7/_/pm/1", Group: "_", N: 1,
		StepSpec: pipeline.StepSpec{Role: pipeline.RolePM, Baseline: true}, State: pipeline.StepInFlight}}, StepSeq: 1}
	h := &pipeline.HarnessReport{Baseline: &pipeline.Baseline{Commit: "abc", Green: true}}
	ev, ok := resultEvent(s, codec.ResultRecord{Step: "7/_/pm/1", Role: pipeline.RolePM, Group: "_",
		Result: pipeline.Result{Status: pipeline.StatusPlanningComplete}, Harness: h}, false)
	assert.True(t, ok)
	assert.Equal(t, h, ev.Harness)
}
