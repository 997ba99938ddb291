package codec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// Usage travels in result and failure records and shows in the comment.
func TestRecordsCarryUsage(t *testing.T) {
	u := &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 1_250_000, InputTokens: 900, OutputTokens: 100}
	rec := ResultRecord{Step: "7/A/qa/4", Role: pipeline.RoleQA, Group: "A", Model: "sonnet",
		Result: pipeline.Result{Status: pipeline.StatusPass, Summary: []string{"ok"}}, Usage: u}
	body := RenderResultComment(rec)
	assert.Contains(t, body, "🧪 Group A [qa/sonnet] PASS | ok | $1.25 · 1.0k tokens")
	assert.Contains(t, body, "Usage: $1.25 · 1.0k tokens (in 900, out 100).")
	back, ok := ParseResultComment(body)
	require.True(t, ok)
	assert.Equal(t, u, back.Usage)

	// Without usage nothing changes: no line, no field.
	rec.Usage = nil
	body = RenderResultComment(rec)
	assert.NotContains(t, body, "Usage:")
	back, ok = ParseResultComment(body)
	require.True(t, ok)
	assert.Nil(t, back.Usage)

	fr := FailureRecord{Step: "7/A/qa/4", Role: pipeline.RoleQA, Group: "A", Reason: "crashed", Usage: u}
	got, ok := ParseFailureComment(RenderFailureComment(fr))
	require.True(t, ok)
	assert.Equal(t, u, got.Usage)
}
