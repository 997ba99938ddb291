package codec

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func timeAt(min int) time.Time { return time.Date(2025, 3, 1, 9, min, 0, 0, time.UTC) }

func TestResultCommentRoundTrip(t *testing.T) {
	rec := ResultRecord{Step: "12/A/developer/3", Role: pipeline.RoleDeveloper, Group: "A", Model: "haiku",
		Result: pipeline.Result{Status: pipeline.StatusReadyForQA, Summary: []string{"Implemented JWT auth", "3 files", "12/12 tests pass"},
			Handoff: json.RawMessage(`{"files_changed":["jwt.go"]}`)},
		StartedAt: timeAt(0), EndedAt: timeAt(4), RunURL: "https://github.com/a/b/actions/runs/1"}
	body := RenderResultComment(rec)
	got, ok := ParseResultComment(body)
	require.True(t, ok)
	require.Equal(t, rec.Step, got.Step)
	require.Equal(t, rec.Result.Status, got.Result.Status)
	require.JSONEq(t, string(rec.Result.Handoff), string(got.Result.Handoff))
	require.True(t, rec.EndedAt.Equal(got.EndedAt))
	for _, bad := range []string{"", "no block", ResultMarker + "!!!" + BlockEnd,
		RenderResultComment(ResultRecord{Step: "12/A/developer/3", Role: pipeline.RoleQA, Group: "A", Result: rec.Result})} {
		_, ok := ParseResultComment(bad)
		require.False(t, ok, bad)
	}
}

func TestParseStepID(t *testing.T) {
	ref, ok := ParseStepID("12/_/pm/1")
	require.True(t, ok)
	require.Equal(t, StepRef{Session: "12", Group: "_", Role: pipeline.RolePM, N: 1}, ref)
	for _, bad := range []string{"12/A/developer", "12/A/chef/1", "12/A/qa/0", "12/A b/qa/1", "/A/qa/1"} {
		_, ok := ParseStepID(bad)
		require.False(t, ok, bad)
	}
	id, _, ok := StepInText("bazinga 7/B/qa/12")
	require.True(t, ok)
	require.Equal(t, "7/B/qa/12", id)
}

func TestFailureCommentRoundTrip(t *testing.T) {
	r := FailureRecord{Step: "7/A/developer/3", Role: pipeline.RoleDeveloper, Group: "A", Reason: "agent timed out after 30m <!-- x -->", RunURL: "https://example.com/run/1"}
	body := RenderFailureComment(r)
	got, ok := ParseFailureComment(body)
	require.True(t, ok)
	require.Equal(t, r, got)
	require.NotContains(t, body[:strings.Index(body, FailureMarker)], "<!--", "the visible line cannot open a comment")
	_, ok = ParseResultComment(body)
	require.False(t, ok, "a failure is not a result")
	for _, bad := range []FailureRecord{{Step: "7/A/developer/3", Role: pipeline.RoleQA, Group: "A", Reason: "x"}, {Step: "7/A/developer/3", Role: pipeline.RoleDeveloper, Group: "A"}} {
		_, ok := ParseFailureComment(RenderFailureComment(bad))
		require.False(t, ok, "%+v", bad)
	}
}

func TestFailureCommentPermanent(t *testing.T) {
	usage := &pipeline.Usage{CostMicros: 250000, InputTokens: 1200}
	tests := []struct {
		name      string
		rec       FailureRecord
		line      string
		permanent bool
	}{
		{"transient", FailureRecord{Step: "7/A/developer/3", Role: pipeline.RoleDeveloper, Group: "A", Reason: "runner lost"},
			"⚠️ Step `7/A/developer/3` ended without a result: runner lost", false},
		{"permanent", FailureRecord{Step: "7/A/developer/3", Role: pipeline.RoleDeveloper, Group: "A",
			Reason: "claude: invalid API key", Permanent: true, Usage: usage, RunURL: "https://example.com/run/2"},
			"⛔ Step `7/A/developer/3` ended without a result, and retrying will not fix it: claude: invalid API key", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := RenderFailureComment(tt.rec)
			assert.True(t, strings.HasPrefix(body, tt.line), body)
			got, ok := ParseFailureComment(body)
			require.True(t, ok)
			assert.Equal(t, tt.rec, got)
			ev := got.Event()
			assert.Equal(t, pipeline.EventStepFailed, ev.Kind)
			assert.Equal(t, "7", ev.Session)
			assert.Equal(t, tt.rec.Step, ev.Step)
			assert.Equal(t, tt.rec.Reason, ev.Reason)
			assert.Equal(t, tt.permanent, ev.Permanent)
			assert.Equal(t, tt.rec.Usage, ev.Usage)
			assert.Equal(t, tt.rec.RunURL, ev.RunURL)
		})
	}
	t.Run("a record written before the field is transient", func(t *testing.T) {
		js := `{"step":"7/A/developer/3","role":"developer","group":"A","reason":"crashed"}`
		body := "x\n\n" + FailureMarker + base64.StdEncoding.EncodeToString([]byte(js)) + BlockEnd
		got, ok := ParseFailureComment(body)
		require.True(t, ok)
		assert.False(t, got.Permanent)
		assert.False(t, got.Event().Permanent)
	})
}
