package stepexec

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// The step's usage rides on its event, a result or a failure alike, even
// when the harness turned the claim into PARTIAL.
func TestUsageRidesOnTheStepEvent(t *testing.T) {
	const claude = `{"type":"result","subtype":"%s","is_error":%s,"result":%s,"total_cost_usd":0.31,"usage":{"input_tokens":900,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":40}}`
	want := &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 310_000, InputTokens: 900, OutputTokens: 40, CacheReadTokens: 100}
	for _, tc := range []struct {
		name, script string
		kind         pipeline.EventKind
		status       pipeline.Status
	}{
		{"result", `echo hi > hello.txt; printf '` + claude + `\n' success false '"Status: READY_FOR_QA"'`,
			pipeline.EventStepResult, pipeline.StatusReadyForQA},
		{"claim the harness refused", `touch broken; printf '` + claude + `\n' success false '"Status: READY_FOR_QA"'`,
			pipeline.EventStepResult, pipeline.StatusPartial},
		{"crash without a result", `printf '` + claude + `\n' error_during_execution true null; exit 1`,
			pipeline.EventStepFailed, pipeline.StatusUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, pipeline.RoleDeveloper)
			e := f.exec(t, tc.script)
			ev, rep := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
			require.Equal(t, tc.kind, ev.Kind, ev.Reason)
			if ev.Result != nil {
				assert.Equal(t, tc.status, ev.Result.Status)
			}
			assert.Equal(t, want, ev.Usage)
			assert.Equal(t, want, rep.Usage)
		})
	}
}
