package server

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// Event outcomes counted in bazinga_webhook_events_total.
const (
	OutcomeProcessed = "processed"
	OutcomeFailed    = "failed"
	OutcomeIgnored   = "ignored"
	OutcomeDuplicate = "duplicate"
	OutcomePanicked  = "panicked"
	OutcomeDropped   = "dropped"
)

// latencyBuckets are the upper bounds (seconds) of the webhook request
// latency histogram: an acknowledgement is expected within milliseconds.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// Metrics holds the server's counters and writes them in the Prometheus text
// exposition format (version 0.0.4). It is written by hand: a dozen series
// do not justify a dependency.
type Metrics struct {
	mu         sync.Mutex
	events     map[[2]string]uint64 // (event, outcome)
	requests   map[int]uint64       // by HTTP status
	dropped    uint64
	sweeps     map[string]uint64 // by outcome
	latCounts  []uint64          // per bucket, not cumulative; last = +Inf
	latSum     float64
	latCount   uint64
	queueDepth func() int
	queueCap   int
	inFlight   func() int
	api        func() ghapi.CallStats
}

func newMetrics() *Metrics {
	return &Metrics{
		events:    map[[2]string]uint64{},
		requests:  map[int]uint64{},
		sweeps:    map[string]uint64{},
		latCounts: make([]uint64, len(latencyBuckets)+1),
	}
}

// SetAPIStats makes /metrics report the GitHub API counters of a client
// factory or transport (e.g. ClientFactory.CallStats).
func (m *Metrics) SetAPIStats(f func() ghapi.CallStats) {
	m.mu.Lock()
	m.api = f
	m.mu.Unlock()
}

func (m *Metrics) event(event, outcome string) {
	if event == "" {
		event = "unknown"
	}
	m.mu.Lock()
	m.events[[2]string{event, outcome}]++
	if outcome == OutcomeDropped {
		m.dropped++
	}
	m.mu.Unlock()
}

func (m *Metrics) sweep(outcome string) {
	m.mu.Lock()
	m.sweeps[outcome]++
	m.mu.Unlock()
}

func (m *Metrics) request(status int, d time.Duration) {
	s := d.Seconds()
	i := sort.SearchFloat64s(latencyBuckets, s) // first bound ≥ s
	m.mu.Lock()
	m.requests[status]++
	m.latCounts[i]++
	m.latSum += s
	m.latCount++
	m.mu.Unlock()
}

// EventCount returns the count of one (event, outcome) pair, for tests.
func (m *Metrics) EventCount(event, outcome string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.events[[2]string{event, outcome}]
}

// Dropped returns the number of deliveries refused because the queue was full.
func (m *Metrics) Dropped() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dropped
}

// series is one sample line.
type series struct {
	labels []string // name, value, name, value…; names in sorted order
	value  float64
	suffix string // "_bucket", "_sum", "_count" for histograms
}

type family struct {
	name, help, typ string
	series          []series
}

// WriteTo writes every metric family, sorted by name, each series sorted by
// its labels, so the output never depends on map order.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	m.mu.Lock()
	fams := m.families()
	m.mu.Unlock()
	sort.Slice(fams, func(i, j int) bool { return fams[i].name < fams[j].name })
	var b strings.Builder
	for _, f := range fams {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, escapeHelp(f.help), f.name, f.typ)
		if f.typ != "histogram" {
			sort.SliceStable(f.series, func(i, j int) bool {
				return labelKey(f.series[i].labels) < labelKey(f.series[j].labels)
			})
		}
		for _, s := range f.series {
			b.WriteString(f.name + s.suffix)
			if len(s.labels) > 0 {
				b.WriteByte('{')
				for i := 0; i < len(s.labels); i += 2 {
					if i > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, "%s=\"%s\"", s.labels[i], escapeLabel(s.labels[i+1]))
				}
				b.WriteByte('}')
			}
			b.WriteByte(' ')
			b.WriteString(formatValue(s.value))
			b.WriteByte('\n')
		}
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// families snapshots every metric; m.mu is held. The callbacks (queue depth,
// API stats) take their own locks, never m.mu.
func (m *Metrics) families() []family {
	ev := family{name: "bazinga_webhook_events_total", typ: "counter",
		help: "Webhook deliveries by event type and outcome (processed, failed, ignored, duplicate, panicked, dropped)."}
	for k, v := range m.events {
		ev.series = append(ev.series, series{labels: []string{"event", k[0], "outcome", k[1]}, value: float64(v)})
	}
	req := family{name: "bazinga_webhook_requests_total", typ: "counter", help: "Webhook HTTP requests by response status."}
	for code, v := range m.requests {
		req.series = append(req.series, series{labels: []string{"code", strconv.Itoa(code)}, value: float64(v)})
	}
	sw := family{name: "bazinga_sweeps_total", typ: "counter", help: "Periodic sweeps of active sessions by outcome."}
	for o, v := range m.sweeps {
		sw.series = append(sw.series, series{labels: []string{"outcome", o}, value: float64(v)})
	}
	lat := family{name: "bazinga_webhook_request_duration_seconds", typ: "histogram",
		help: "Time to acknowledge a webhook request."}
	var cum uint64
	for i, ub := range latencyBuckets {
		cum += m.latCounts[i]
		lat.series = append(lat.series, series{suffix: "_bucket", labels: []string{"le", formatValue(ub)}, value: float64(cum)})
	}
	cum += m.latCounts[len(latencyBuckets)]
	lat.series = append(lat.series,
		series{suffix: "_bucket", labels: []string{"le", "+Inf"}, value: float64(cum)},
		series{suffix: "_sum", value: m.latSum},
		series{suffix: "_count", value: float64(m.latCount)})

	fams := []family{ev, req, sw, lat,
		{name: "bazinga_webhook_dropped_total", typ: "counter", help: "Deliveries refused with 503 because the queue was full.",
			series: []series{{value: float64(m.dropped)}}},
	}
	if m.queueDepth != nil {
		fams = append(fams,
			family{name: "bazinga_queue_depth", typ: "gauge", help: "Deliveries waiting for a worker.",
				series: []series{{value: float64(m.queueDepth())}}},
			family{name: "bazinga_queue_capacity", typ: "gauge", help: "Capacity of the delivery queue.",
				series: []series{{value: float64(m.queueCap)}}})
	}
	if m.inFlight != nil {
		fams = append(fams, family{name: "bazinga_deliveries_in_flight", typ: "gauge", help: "Deliveries being processed.",
			series: []series{{value: float64(m.inFlight())}}})
	}
	if m.api != nil {
		st := m.api()
		calls := family{name: "bazinga_github_api_calls_total", typ: "counter",
			help: "GitHub API requests sent (each retry counts) by kind (METHOD route) and whether they create content."}
		for _, k := range st.Kinds() {
			calls.series = append(calls.series, series{
				labels: []string{"creating", strconv.FormatBool(isCreating(k)), "kind", k},
				value:  float64(st.ByKind[k])})
		}
		fams = append(fams, calls,
			family{name: "bazinga_github_api_not_modified_total", typ: "counter", help: "GitHub API reads answered 304 Not Modified (served from the ETag cache).",
				series: []series{{value: float64(st.NotModified)}}},
			family{name: "bazinga_github_api_retries_total", typ: "counter", help: "GitHub API requests retried, by reason.",
				series: []series{
					{labels: []string{"reason", "rate_limit"}, value: float64(st.RateLimitRetries)},
					{labels: []string{"reason", "server_error"}, value: float64(st.ErrorRetries)},
				}},
		)
		if st.RateLimitRemaining >= 0 {
			fams = append(fams, family{name: "bazinga_github_rate_limit_remaining", typ: "gauge",
				help:   "The latest X-RateLimit-Remaining GitHub reported.",
				series: []series{{value: float64(st.RateLimitRemaining)}}})
		}
	}
	return fams
}

func isCreating(kind string) bool {
	method, _, _ := strings.Cut(kind, " ")
	return ghapi.ContentCreating(method)
}

func labelKey(labels []string) string { return strings.Join(labels, "\x00") }

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}
