package server

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMetricsLabelEscaping(t *testing.T) {
	m := newMetrics()
	m.event("we\"ird\\ev\nent", OutcomeProcessed)
	var b bytes.Buffer
	_, err := m.WriteTo(&b)
	require.NoError(t, err)
	assert.Contains(t, b.String(), `event="we\"ird\\ev\nent"`)
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if !strings.HasPrefix(line, "#") {
			assert.Regexp(t, promSample, line)
		}
	}
}

func TestMetricsHistogramCumulative(t *testing.T) {
	m := newMetrics()
	m.request(202, 300*time.Microsecond) // ≤ 0.0005
	m.request(202, 3*time.Millisecond)   // ≤ 0.005
	m.request(401, 10*time.Second)       // +Inf only
	var b bytes.Buffer
	_, err := m.WriteTo(&b)
	require.NoError(t, err)
	out := b.String()
	for _, want := range []string{
		`bazinga_webhook_request_duration_seconds_bucket{le="0.0005"} 1`,
		`bazinga_webhook_request_duration_seconds_bucket{le="0.0025"} 1`,
		`bazinga_webhook_request_duration_seconds_bucket{le="0.005"} 2`,
		`bazinga_webhook_request_duration_seconds_bucket{le="2.5"} 2`,
		`bazinga_webhook_request_duration_seconds_bucket{le="+Inf"} 3`,
		`bazinga_webhook_request_duration_seconds_count 3`,
		`bazinga_webhook_requests_total{code="202"} 2`,
		`bazinga_webhook_requests_total{code="401"} 1`,
	} {
		assert.Contains(t, out, want+"\n")
	}
	// Buckets stay in increasing order of le (not sorted as strings).
	i1 := strings.Index(out, `le="0.0005"`)
	i2 := strings.Index(out, `le="0.001"`)
	i3 := strings.Index(out, `le="+Inf"`)
	assert.True(t, i1 < i2 && i2 < i3)
}

func TestMetricsInvalidUTF8Label(t *testing.T) {
	m := newMetrics()
	assert.NotPanics(t, func() { m.event("is\xffsues", OutcomeDuplicate) })
	var b bytes.Buffer
	_, err := m.WriteTo(&b)
	require.NoError(t, err)
	assert.Contains(t, b.String(), "bazinga_webhook_events_total{event=\"is\uFFFDsues\",outcome=\"duplicate\"} 1")
	assert.Equal(t, uint64(1), m.EventCount("is\uFFFDsues", OutcomeDuplicate))
}
