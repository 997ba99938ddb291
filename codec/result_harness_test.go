package codec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// The harness's findings travel in the result comment (the bot turns them
// into the event's HarnessReport) and are shown in its details, escaped.
func TestResultCommentCarriesTheHarnessReport(t *testing.T) {
	tests := []struct {
		name    string
		harness *pipeline.HarnessReport
		shown   []string
	}{
		{"red baseline", &pipeline.HarnessReport{Baseline: &pipeline.Baseline{Commit: "0123456789abcdef", Identity: pipeline.IdentityGoTestJSON,
			Failed: []string{"calc.TestOld"}}}, []string{"🔴 Baseline: the tests already fail on the base@\u20600123456789ab (go test -json) — failing: calc.TestOld"}},
		{"green baseline", &pipeline.HarnessReport{Baseline: &pipeline.Baseline{Commit: "abc", Green: true}}, []string{"🟢 Baseline: the tests pass"}},
		{"checks", &pipeline.HarnessReport{Checks: []pipeline.CheckOutcome{
			{Name: "lint", Required: true, Summary: "fail (exit 1) in 2s <!-- x -->", Tail: "bad"},
			{Name: "vet", Passed: true, Summary: "pass in 1s"}}},
			[]string{"Checks run by the harness:", "- ❌ lint (required): fail (exit 1) in 2s", "- ✅ vet (optional): pass in 1s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := ResultRecord{Step: "12/_/pm/1", Role: pipeline.RolePM, Group: "_",
				Result: pipeline.Result{Status: pipeline.StatusPlanningComplete, Summary: []string{"planned"}}, Harness: tc.harness}
			if len(tc.harness.Checks) > 0 {
				rec.Step, rec.Role, rec.Group = "12/A/developer/3", pipeline.RoleDeveloper, "A"
				rec.Result.Status = pipeline.StatusReadyForQA
			}
			body := RenderResultComment(rec)
			got, ok := ParseResultComment(body)
			require.True(t, ok)
			assert.Equal(t, tc.harness, got.Harness)
			visible := body[:strings.Index(body, ResultMarker)]
			for _, s := range tc.shown {
				assert.Contains(t, visible, s)
			}
			assert.NotContains(t, visible, "<!-- x", "check text cannot open a hidden block")
		})
	}
}
