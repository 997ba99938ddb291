package server

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/jobq"
)

// Event outcomes counted in bazinga_webhook_events_total.
const (
	OutcomeProcessed = "processed"
	OutcomeFailed    = "failed"
	OutcomeIgnored   = "ignored"
	OutcomeDuplicate = "duplicate"
	OutcomePanicked  = "panicked"
	OutcomeDropped   = "dropped"
	// OutcomeRateLimited: a sweep whose only failures were GitHub rate
	// limits; the sessions concerned wait for the reset by themselves.
	OutcomeRateLimited = "rate_limited"
	// OutcomeRetried: a run failed transiently and is retried after a
	// backoff (durable queue only).
	OutcomeRetried = "retried"
)

// latencyBuckets are the upper bounds (seconds) of the webhook request
// latency histogram: an acknowledgement is expected within milliseconds.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// Metrics holds the server's metrics in a registry of its own (never the
// global one, so two servers in one process — tests — do not collide) and
// serves them with promhttp. Besides the bazinga_* families it carries the
// Go runtime and process collectors: heap and open file descriptors are
// what an operator watches when the webhook endpoint is under attack.
type Metrics struct {
	reg      *prometheus.Registry
	events   *prometheus.CounterVec
	requests *prometheus.CounterVec
	sweeps   *prometheus.CounterVec
	latency  prometheus.Histogram
	dropped  prometheus.Counter
	api      *apiCollector
	// exchanges is registered by MountTokenExchange.
	exchanges *prometheus.CounterVec
	exOnce    sync.Once
	// conns is the connection guard of the listener being served.
	conns atomic.Pointer[connGuard]
	// The durable queue's, registered by setDurable.
	jobRuns                 *prometheus.CounterVec
	jobDuration, jobLatency prometheus.Histogram
}

// setConns makes the connection gauges read g.
func (m *Metrics) setConns(g *connGuard) { m.conns.Store(g) }

// connGauges are the webhook front's connection figures, read at scrape time.
func (m *Metrics) connGauges() []prometheus.Collector {
	read := func(f func(g *connGuard) float64) func() float64 {
		return func() float64 {
			if g := m.conns.Load(); g != nil {
				return f(g)
			}
			return 0
		}
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_connections_open", Help: "Open HTTP connections."},
			read(func(g *connGuard) float64 { return float64(g.open()) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bazinga_connections_evicted_total",
			Help: "Connections closed at the connection cap because they waited longest without a request in a handler."},
			read(func(g *connGuard) float64 { return float64(g.evicted.Load()) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "bazinga_connections_refused_total",
			Help: "Connections closed at accept: their address was at its cap, or every slot was busy."},
			read(func(g *connGuard) float64 { return float64(g.refused.Load()) })),
	}
}

// tokenExchanges counts POST /token answers by outcome: "issued" or the
// check that refused.
func (m *Metrics) tokenExchanges() *prometheus.CounterVec {
	m.exOnce.Do(func() {
		m.exchanges = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bazinga_token_exchanges_total",
			Help: "Token exchanges (POST /token) by outcome: issued, or the check that refused the job's token.",
		}, []string{"outcome"})
		m.reg.MustRegister(m.exchanges)
	})
	return m.exchanges
}

func newMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bazinga_webhook_events_total",
			Help: "Webhook deliveries by event type and outcome (processed, failed, ignored, duplicate, panicked, dropped).",
		}, []string{"event", "outcome"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bazinga_webhook_requests_total",
			Help: "Webhook HTTP requests by response status.",
		}, []string{"code"}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bazinga_sweeps_total",
			Help: "Periodic sweeps of active sessions by outcome.",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "bazinga_webhook_request_duration_seconds",
			Help:    "Time to acknowledge a webhook request.",
			Buckets: latencyBuckets,
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "bazinga_webhook_dropped_total",
			Help: "Deliveries refused with 503 because the queue was full.",
		}),
		api: &apiCollector{},
	}
	m.reg.MustRegister(m.events, m.requests, m.sweeps, m.latency, m.dropped, m.api,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.connGauges()...)
	return m
}

// setQueue registers the queue gauges; their values are read at scrape time.
func (m *Metrics) setQueue(depth func() int, capacity int, inFlight func() int) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_queue_depth", Help: "Deliveries waiting for a worker."},
			func() float64 { return float64(depth()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_queue_capacity", Help: "Capacity of the delivery queue."},
			func() float64 { return float64(capacity) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_deliveries_in_flight", Help: "Deliveries being processed."},
			func() float64 { return float64(inFlight()) }),
	)
}

// SetAPIStats makes /metrics report the GitHub API counters of a client
// factory or transport (e.g. ClientFactory.CallStats).
func (m *Metrics) SetAPIStats(f func() ghapi.CallStats) { m.api.set(f) }

// label makes a header-derived value safe as a label value: client_golang
// panics on invalid UTF-8.
func label(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

func (m *Metrics) event(event, outcome string) {
	if event == "" {
		event = "unknown"
	}
	m.events.WithLabelValues(label(event), outcome).Inc()
	if outcome == OutcomeDropped {
		m.dropped.Inc()
	}
}

func (m *Metrics) sweep(outcome string) { m.sweeps.WithLabelValues(outcome).Inc() }

func (m *Metrics) request(status int, d time.Duration) {
	m.requests.WithLabelValues(strconv.Itoa(status)).Inc()
	m.latency.Observe(d.Seconds())
}

// handler serves the registry (content negotiation, gzip) for GET /metrics.
func (m *Metrics) handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// apiCollector reports a snapshot of the GitHub client's counters at scrape
// time. It is an unchecked collector (Describe sends nothing) because its
// series depend on the API kinds seen so far.
type apiCollector struct {
	mu    sync.Mutex
	stats func() ghapi.CallStats
}

var (
	apiCallsDesc = prometheus.NewDesc("bazinga_github_api_calls_total",
		"GitHub API requests sent (each retry counts) by kind (METHOD route) and whether they create content.",
		[]string{"creating", "kind"}, nil)
	apiNotModifiedDesc = prometheus.NewDesc("bazinga_github_api_not_modified_total",
		"GitHub API reads answered 304 Not Modified (served from the ETag cache).", nil, nil)
	apiRetriesDesc = prometheus.NewDesc("bazinga_github_api_retries_total",
		"GitHub API requests retried, by reason.", []string{"reason"}, nil)
	apiRateRemainingDesc = prometheus.NewDesc("bazinga_github_rate_limit_remaining",
		"The latest X-RateLimit-Remaining GitHub reported.", nil, nil)
)

func (c *apiCollector) set(f func() ghapi.CallStats) {
	c.mu.Lock()
	c.stats = f
	c.mu.Unlock()
}

func (c *apiCollector) Describe(chan<- *prometheus.Desc) {}

func (c *apiCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	f := c.stats
	c.mu.Unlock()
	if f == nil {
		return
	}
	st := f()
	for _, k := range st.Kinds() {
		ch <- prometheus.MustNewConstMetric(apiCallsDesc, prometheus.CounterValue, float64(st.ByKind[k]),
			strconv.FormatBool(isCreating(k)), label(k))
	}
	ch <- prometheus.MustNewConstMetric(apiNotModifiedDesc, prometheus.CounterValue, float64(st.NotModified))
	ch <- prometheus.MustNewConstMetric(apiRetriesDesc, prometheus.CounterValue, float64(st.RateLimitRetries), "rate_limit")
	ch <- prometheus.MustNewConstMetric(apiRetriesDesc, prometheus.CounterValue, float64(st.ErrorRetries), "server_error")
	if st.RateLimitRemaining >= 0 {
		ch <- prometheus.MustNewConstMetric(apiRateRemainingDesc, prometheus.GaugeValue, float64(st.RateLimitRemaining))
	}
}

func isCreating(kind string) bool {
	method, _, _ := strings.Cut(kind, " ")
	return ghapi.ContentCreating(method)
}

// jobLatencyBuckets (seconds) cover a run of the durable queue: GitHub calls, up to minutes.
var jobLatencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// setDurable registers the durable queue's gauges (read at scrape time from
// the latest stats, which every replica reads from the shared database) and
// its per-replica run counters and histograms.
func (m *Metrics) setDurable(d *durable, capacity int, replica string) {
	stat := func(f func(st *jobq.Stats) float64) func() float64 {
		return func() float64 { return f(d.stats.Load()) }
	}
	m.jobRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "bazinga_queue_job_runs_total",
		Help: "Runs of queued deliveries on this replica by what came of them: done, retry, park, dead.",
	}, []string{"result"})
	m.jobDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "bazinga_queue_job_duration_seconds", Help: "Time a run of a delivery took on this replica.",
		Buckets: jobLatencyBuckets,
	})
	m.jobLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "bazinga_queue_job_latency_seconds", Help: "Time from a delivery's acknowledgement to the end of the run that finished it, on this replica.",
		Buckets: jobLatencyBuckets,
	})
	m.reg.MustRegister(m.jobRuns, m.jobDuration, m.jobLatency,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_queue_depth", Help: "Deliveries not finished (waiting, parked or running), all replicas."},
			stat(func(st *jobq.Stats) float64 { return float64(st.Pending) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_queue_capacity", Help: "Capacity of the delivery queue."},
			func() float64 { return float64(capacity) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_queue_parked", Help: "Deliveries waiting for a retry's backoff or a rate limit's reset."},
			stat(func(st *jobq.Stats) float64 { return float64(st.Parked) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_queue_dead", Help: "Dead-lettered deliveries (bazinga serve dead lists them)."},
			stat(func(st *jobq.Stats) float64 { return float64(st.Dead) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_queue_sessions_running", Help: "Sessions leased by a worker, all replicas."},
			stat(func(st *jobq.Stats) float64 { return float64(st.Running) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_queue_oldest_age_seconds", Help: "Age of the oldest delivery not finished (0 if none)."},
			stat(func(st *jobq.Stats) float64 {
				if st.Oldest.IsZero() {
					return 0
				}
				return time.Since(st.Oldest).Seconds()
			})),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_deliveries_in_flight", Help: "Deliveries being processed by this replica."},
			func() float64 { return float64(d.runner.Running()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bazinga_replica_info", Help: "This replica's name (in the queue's leases and logs).",
			ConstLabels: prometheus.Labels{"replica": label(replica)}}, func() float64 { return 1 }),
	)
}

// jobFinished counts a run of the durable queue.
func (m *Metrics) jobFinished(c *jobq.Claim, r jobq.Result, took time.Duration) {
	if m.jobRuns == nil {
		return
	}
	result := map[jobq.Disposition]string{jobq.Done: "done", jobq.Retry: "retry", jobq.Park: "park", jobq.Dead: "dead"}[r.Disposition]
	m.jobRuns.WithLabelValues(result).Inc()
	m.jobDuration.Observe(took.Seconds())
	if r.Disposition == jobq.Done || r.Disposition == jobq.Dead {
		m.jobLatency.Observe(time.Since(c.Received).Seconds())
	}
}
