package bot

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// gatewayMeter plays bazinga serve's ledger: every agent step metered $0.02.
type gatewayMeter struct {
	mu    sync.Mutex
	asked []string
}

var meteredStep = pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 20_000, InputTokens: 2000, OutputTokens: 50}

func (m *gatewayMeter) StepUsage(_ context.Context, inst int64, repo, session, step string) (pipeline.Usage, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, repo+" "+session+" "+step)
	ref, _ := codec.ParseStepID(step)
	if ref.Role == pipeline.RoleMerge || ref.Role == pipeline.RoleValidate {
		return pipeline.Usage{}, false // no model calls: nothing metered
	}
	return meteredStep, true
}

// With the gateway's meter, a session's usage and limits are what the gateway metered, whatever the jobs report:
// jobs that claim $0.000001 a step still pause the session at its limit.
func TestMeteredUsageReplacesTheJobsReport(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 2, config: "limits:\n  session_cost_usd: 0.05\n"})
	m := &gatewayMeter{}
	h.bot.o.Meter = m
	h.usage = func(ref codec.StepRef) *pipeline.Usage {
		return &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 1, InputTokens: 1}
	}
	h.start()
	h.steps(200)
	st, ok := h.state()
	require.True(t, ok)
	require.Equal(t, pipeline.SessionPaused, st.Session.Status, st.Session.Reason)
	assert.Contains(t, st.Session.Reason, "limits.session_cost_usd $0.0500")
	n := 0
	for _, s := range st.Session.Steps {
		if s.Usage == nil {
			continue
		}
		assert.Equal(t, meteredStep, *s.Usage, "step %s", s.ID)
		n++
	}
	require.Positive(t, n)
	assert.Equal(t, int64(n)*20_000, st.Session.Usage.CostMicros)
	m.mu.Lock()
	defer m.mu.Unlock()
	require.NotEmpty(t, m.asked)
	assert.Regexp(t, `^acme/widgets \d+ \d+/`, m.asked[0])
}

// The gateway asks the session's signed state whether a step is in flight, and for the session's limits.
func TestStepLimitsFromTheSessionsRecord(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 1, config: "limits:\n  session_cost_usd: 7.5\n  step_cost_usd: 1.25\n"})
	h.start()
	h.drain()
	st, ok := h.state()
	require.True(t, ok)
	inFlight := st.Session.InFlight()
	require.NotEmpty(t, inFlight)
	session := st.Session.ID
	l, err := h.bot.StepLimits(h.ctx, 1, "acme/widgets", session, inFlight[0].ID)
	require.NoError(t, err)
	assert.Equal(t, int64(7_500_000), l.SessionMicros)
	assert.Equal(t, int64(1_250_000), l.StepMicros)

	_, err = h.bot.StepLimits(h.ctx, 1, "acme/widgets", session, session+"/_/developer/99")
	assert.ErrorContains(t, err, "not in flight")
	_, err = h.bot.StepLimits(h.ctx, 1, "acme/widgets", "999", "999/_/pm/1")
	assert.Error(t, err)
	_, err = h.bot.StepLimits(h.ctx, 1, "acme/widgets", "x", "x/_/pm/1")
	assert.ErrorContains(t, err, "not an issue")
}
