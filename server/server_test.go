package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testSecret = "test-webhook-secret"

// fakeProcessor records deliveries; its behaviour is set per test.
type fakeProcessor struct {
	mu      sync.Mutex
	got     []bot.Delivery
	keyFn   func(bot.Delivery) string
	process func(ctx context.Context, d bot.Delivery) error
	sweeps  atomic.Int32
}

func (f *fakeProcessor) Key(d bot.Delivery) string {
	if f.keyFn != nil {
		return f.keyFn(d)
	}
	return ""
}

func (f *fakeProcessor) Process(ctx context.Context, d bot.Delivery) error {
	f.mu.Lock()
	f.got = append(f.got, d)
	f.mu.Unlock()
	if f.process != nil {
		return f.process(ctx, d)
	}
	return nil
}

func (f *fakeProcessor) Sweep(context.Context) error { f.sweeps.Add(1); return nil }

func (f *fakeProcessor) deliveries() []bot.Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bot.Delivery(nil), f.got...)
}

func newTestServer(t *testing.T, cfg Config, p Processor) *Server {
	t.Helper()
	if cfg.WebhookSecret == nil {
		cfg.WebhookSecret = []byte(testSecret)
	}
	s, err := NewServer(cfg, p, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "webhooks", name))
	require.NoError(t, err)
	return b
}

// webhookRequest builds a signed delivery.
func webhookRequest(event, id string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-GitHub-Event", event)
	if id != "" {
		r.Header.Set("X-GitHub-Delivery", id)
	}
	r.Header.Set("X-Hub-Signature-256", Sign([]byte(testSecret), body))
	return r
}

func serve(s *Server, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	return w
}

// waitFor polls cond for up to 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 5*time.Second, time.Millisecond, what)
}

func TestNewServerRequiresSecret(t *testing.T) {
	_, err := NewServer(Config{}, &fakeProcessor{}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), EnvWebhookSecret)
}

func TestWebhookStatusCodes(t *testing.T) {
	ping := readFixture(t, "ping.json")
	big := bytes.Repeat([]byte(" "), DefaultMaxBodyBytes+1)
	tests := []struct {
		name   string
		req    func() *http.Request
		want   int
		queued bool
	}{
		{"signed ping", func() *http.Request { return webhookRequest("ping", "d-1", ping) }, http.StatusAccepted, true},
		{"ignored event type", func() *http.Request {
			return webhookRequest("watch", "d-2", readFixture(t, "watch-started.json"))
		}, http.StatusAccepted, true},
		{"unsigned", func() *http.Request {
			r := webhookRequest("ping", "d-3", ping)
			r.Header.Del("X-Hub-Signature-256")
			return r
		}, http.StatusUnauthorized, false},
		{"sha1 only", func() *http.Request {
			r := webhookRequest("ping", "d-4", ping)
			r.Header.Del("X-Hub-Signature-256")
			r.Header.Set("X-Hub-Signature", "sha1=0123456789abcdef0123456789abcdef01234567")
			return r
		}, http.StatusUnauthorized, false},
		{"wrong signature", func() *http.Request {
			r := webhookRequest("ping", "d-5", ping)
			r.Header.Set("X-Hub-Signature-256", Sign([]byte("other"), ping))
			return r
		}, http.StatusUnauthorized, false},
		{"signature of another body", func() *http.Request {
			r := webhookRequest("ping", "d-6", ping)
			r.Header.Set("X-Hub-Signature-256", Sign([]byte(testSecret), []byte("{}")))
			return r
		}, http.StatusUnauthorized, false},
		{"1 MiB + 1", func() *http.Request { return webhookRequest("ping", "d-7", big) }, http.StatusRequestEntityTooLarge, false},
		{"25 MiB + 1, chunked", func() *http.Request {
			r := webhookRequest("ping", "d-7b", nil)
			r.Body, r.ContentLength = io.NopCloser(io.LimitReader(zeros{}, 25<<20+1)), -1
			return r
		}, http.StatusRequestEntityTooLarge, false},
		{"sha256 header with a sha1 value", func() *http.Request {
			r := webhookRequest("ping", "d-4b", ping)
			r.Header.Set("X-Hub-Signature-256", "sha1=0123456789abcdef0123456789abcdef01234567")
			return r
		}, http.StatusUnauthorized, false},
		{"both headers, sha256 wrong", func() *http.Request {
			r := webhookRequest("ping", "d-4c", ping)
			r.Header.Set("X-Hub-Signature", "sha1=0123456789abcdef0123456789abcdef01234567")
			r.Header.Set("X-Hub-Signature-256", Sign([]byte("other"), ping))
			return r
		}, http.StatusUnauthorized, false},
		{"unsupported content type", func() *http.Request {
			r := webhookRequest("ping", "d-12", ping)
			r.Header.Set("Content-Type", "text/xml")
			return r
		}, http.StatusUnsupportedMediaType, false},
		{"no content type is JSON", func() *http.Request {
			r := webhookRequest("ping", "d-13", ping)
			r.Header.Del("Content-Type")
			return r
		}, http.StatusAccepted, true},
		{"form without payload field", func() *http.Request {
			body := []byte("other=1")
			r := webhookRequest("ping", "d-14", body)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, http.StatusBadRequest, false},
		{"form, signature of another body", func() *http.Request {
			body := []byte("payload=%7B%22zen%22%3A%22x%22%7D")
			r := webhookRequest("ping", "d-15", body)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
			r.Header.Set("X-Hub-Signature-256", Sign([]byte(testSecret), []byte(`{"zen":"x"}`)))
			return r
		}, http.StatusUnauthorized, false},
		{"malformed JSON", func() *http.Request { return webhookRequest("issues", "d-8", []byte(`{"action":`)) }, http.StatusBadRequest, false},
		{"JSON not an object", func() *http.Request { return webhookRequest("issues", "d-9", []byte(`[1,2]`)) }, http.StatusBadRequest, false},
		{"missing event header", func() *http.Request { return webhookRequest("", "d-10", ping) }, http.StatusBadRequest, false},
		{"form-encoded payload", func() *http.Request {
			body := []byte("payload=%7B%22zen%22%3A%22x%22%7D")
			r := webhookRequest("ping", "d-11", body)
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}, http.StatusAccepted, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakeProcessor{}
			s := newTestServer(t, Config{}, p)
			w := serve(s, tc.req())
			assert.Equal(t, tc.want, w.Code, w.Body.String())
			if tc.queued {
				waitFor(t, "processed", func() bool { return len(p.deliveries()) == 1 })
			} else {
				time.Sleep(5 * time.Millisecond)
				assert.Empty(t, p.deliveries())
			}
		})
	}
}

func TestWebhookDeliveryFields(t *testing.T) {
	p := &fakeProcessor{}
	s := newTestServer(t, Config{}, p)
	body := readFixture(t, "issues-labeled.json")
	w := serve(s, webhookRequest("issues", "72d3162e-cc78-11e3-81ab-4c9367dc0958", body))
	require.Equal(t, http.StatusAccepted, w.Code)
	waitFor(t, "processed", func() bool { return len(p.deliveries()) == 1 })
	d := p.deliveries()[0]
	assert.Equal(t, "72d3162e-cc78-11e3-81ab-4c9367dc0958", d.ID)
	assert.Equal(t, "issues", d.Event)
	assert.Equal(t, "labeled", d.Action)
	assert.Equal(t, int64(4242), d.Installation)
	assert.Equal(t, "acme/app", d.Repo)
	assert.Equal(t, body, d.Payload)
	assert.False(t, d.Received.IsZero())
}

func TestDuplicateDeliveryProcessedOnce(t *testing.T) {
	p := &fakeProcessor{}
	s := newTestServer(t, Config{}, p)
	body := readFixture(t, "issues-labeled.json")
	for i := 0; i < 3; i++ {
		assert.Equal(t, http.StatusAccepted, serve(s, webhookRequest("issues", "same-id", body)).Code)
	}
	assert.Equal(t, http.StatusAccepted, serve(s, webhookRequest("issues", "other-id", body)).Code)
	waitFor(t, "two processed", func() bool { return len(p.deliveries()) == 2 })
	time.Sleep(10 * time.Millisecond)
	assert.Len(t, p.deliveries(), 2)
	assert.Equal(t, uint64(2), s.Metrics().EventCount("issues", OutcomeDuplicate))
	waitFor(t, "counted", func() bool { return s.Metrics().EventCount("issues", OutcomeProcessed) == 2 })
}

func TestDedupTTLAndSize(t *testing.T) {
	const ttl = 200 * time.Millisecond
	d := newDedup(2, ttl)
	start := time.Now()
	assert.True(t, d.reserve("a"))
	assert.False(t, d.reserve("a"))
	assert.True(t, d.reserve("b"))
	assert.True(t, d.reserve("c")) // evicts a (size 2)
	assert.True(t, d.reserve("a"))
	assert.False(t, d.reserve("c"))
	if time.Since(start) >= ttl {
		t.Skip("machine too slow for a 200 ms TTL check")
	}
	time.Sleep(ttl + 50*time.Millisecond) // everything expired
	assert.True(t, d.reserve("c"))
	d.release("c")
	assert.True(t, d.reserve("c"))
	assert.False(t, d.reserve("c"))
}

func TestDedupRedeliveryDoesNotExtendTTL(t *testing.T) {
	const ttl = 300 * time.Millisecond
	d := newDedup(10, ttl)
	first := time.Now()
	require.True(t, d.reserve("x"))
	// Redeliveries inside the window are duplicates and do not renew it.
	checked := 0
	for time.Since(first) < ttl/2 {
		assert.False(t, d.reserve("x"))
		checked++
		time.Sleep(20 * time.Millisecond)
	}
	require.Positive(t, checked)
	time.Sleep(time.Until(first.Add(ttl + 100*time.Millisecond)))
	assert.True(t, d.reserve("x"), "expired ttl after its first arrival")
}

func TestQueueFullReturns503(t *testing.T) {
	release := make(chan struct{})
	p := &fakeProcessor{process: func(ctx context.Context, d bot.Delivery) error {
		<-release
		return nil
	}}
	s := newTestServer(t, Config{Workers: 1, QueueSize: 2}, p)
	defer close(release)
	body := readFixture(t, "ping.json")
	// One running (blocked), then two queued fill the queue.
	require.Equal(t, http.StatusAccepted, serve(s, webhookRequest("ping", "q-0", body)).Code)
	waitFor(t, "first running", func() bool { return len(p.deliveries()) == 1 })
	require.Equal(t, http.StatusAccepted, serve(s, webhookRequest("ping", "q-1", body)).Code)
	require.Equal(t, http.StatusAccepted, serve(s, webhookRequest("ping", "q-2", body)).Code)
	assert.Equal(t, 2, s.QueueDepth())
	w := serve(s, webhookRequest("ping", "q-3", body))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, uint64(1), s.Metrics().Dropped())
	assert.Equal(t, uint64(1), s.Metrics().EventCount("ping", OutcomeDropped))

	var buf bytes.Buffer
	_, err := s.Metrics().WriteTo(&buf)
	require.NoError(t, err)
	assert.Contains(t, buf.String(), "bazinga_webhook_dropped_total 1\n")
	assert.Contains(t, buf.String(), "bazinga_queue_depth 2\n")

	// A dropped delivery is not remembered: GitHub's redelivery is accepted
	// once there is room.
	release <- struct{}{}
	waitFor(t, "room", func() bool { return s.QueueDepth() < 2 })
	assert.Equal(t, http.StatusAccepted, serve(s, webhookRequest("ping", "q-3", body)).Code)
}

func TestPerKeySerialisation(t *testing.T) {
	const keys, perKey = 4, 25
	var mu sync.Mutex
	running := map[string]int{}
	order := map[string][]int{}
	maxConcurrentSameKey, maxConcurrentAll, all := 0, 0, 0
	p := &fakeProcessor{
		keyFn: func(d bot.Delivery) string { return d.Repo },
		process: func(ctx context.Context, d bot.Delivery) error {
			var env struct {
				Seq int `json:"seq"`
			}
			_ = json.Unmarshal(d.Payload, &env)
			mu.Lock()
			running[d.Repo]++
			all++
			maxConcurrentSameKey = max(maxConcurrentSameKey, running[d.Repo])
			maxConcurrentAll = max(maxConcurrentAll, all)
			order[d.Repo] = append(order[d.Repo], env.Seq)
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			running[d.Repo]--
			all--
			mu.Unlock()
			return nil
		},
	}
	s := newTestServer(t, Config{Workers: 8, QueueSize: 1000}, p)
	for i := 0; i < perKey; i++ {
		for k := 0; k < keys; k++ {
			body := fmt.Appendf(nil, `{"seq":%d,"repository":{"full_name":"o/r%d"}}`, i, k)
			require.Equal(t, http.StatusAccepted, serve(s, webhookRequest("issue_comment", fmt.Sprintf("k%d-%d", k, i), body)).Code)
		}
	}
	waitFor(t, "all processed", func() bool { return len(p.deliveries()) == keys*perKey })
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, maxConcurrentSameKey, "same key ran concurrently")
	assert.Greater(t, maxConcurrentAll, 1, "different keys never ran in parallel")
	for k := 0; k < keys; k++ {
		seq := order[fmt.Sprintf("o/r%d", k)]
		require.Len(t, seq, perKey)
		for i, v := range seq {
			assert.Equal(t, i, v, "key %d out of order: %v", k, seq)
		}
	}
}

func TestPanicRecovered(t *testing.T) {
	p := &fakeProcessor{
		keyFn: func(bot.Delivery) string { return "one-lane" },
		process: func(ctx context.Context, d bot.Delivery) error {
			switch d.ID {
			case "boom":
				panic("handler exploded")
			case "fails":
				return errors.New("github said no")
			case "ignored":
				return fmt.Errorf("not a bazinga issue: %w", bot.ErrIgnored)
			}
			return nil
		},
	}
	var logs syncBuffer
	s, err := NewServer(Config{WebhookSecret: []byte(testSecret), Workers: 1}, p, slog.New(slog.NewJSONHandler(&logs, nil)))
	require.NoError(t, err)
	defer s.Close()
	body := readFixture(t, "issues-labeled.json")
	for _, id := range []string{"boom", "fails", "ignored", "after"} {
		require.Equal(t, http.StatusAccepted, serve(s, webhookRequest("issues", id, body)).Code)
	}
	waitFor(t, "all four", func() bool { return len(p.deliveries()) == 4 })
	waitFor(t, "counted", func() bool { return s.Metrics().EventCount("issues", OutcomeProcessed) == 1 })
	assert.Equal(t, uint64(1), s.Metrics().EventCount("issues", OutcomePanicked))
	assert.Equal(t, uint64(1), s.Metrics().EventCount("issues", OutcomeFailed))
	assert.Equal(t, uint64(1), s.Metrics().EventCount("issues", OutcomeIgnored))
	out := logs.String()
	assert.Contains(t, out, `"msg":"delivery panicked"`)
	assert.Contains(t, out, `handler exploded`)
	assert.Contains(t, out, `"stack":"goroutine`)
	assert.Contains(t, out, `"delivery":"fails"`)
	assert.Contains(t, out, `"installation":4242`)
	assert.Contains(t, out, `"repo":"acme/app"`)
	assert.NotContains(t, out, testSecret)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHealthz(t *testing.T) {
	s := newTestServer(t, Config{QueueSize: 7}, &fakeProcessor{})
	w := serve(s, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	require.Equal(t, http.StatusOK, w.Code)
	var h struct {
		Status     string `json:"status"`
		QueueDepth int    `json:"queue_depth"`
		QueueCap   int    `json:"queue_capacity"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &h))
	assert.Equal(t, "ok", h.Status)
	assert.Equal(t, 0, h.QueueDepth)
	assert.Equal(t, 7, h.QueueCap)

	assert.Equal(t, http.StatusMethodNotAllowed, serve(s, httptest.NewRequest(http.MethodGet, "/webhook", nil)).Code)
}

var (
	promSample  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")*\})? (?:[-+]?[0-9.eE+-]+|\+Inf|-Inf|NaN)$`)
	promComment = regexp.MustCompile(`^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .+$`)
)

func TestMetricsFormat(t *testing.T) {
	p := &fakeProcessor{process: func(ctx context.Context, d bot.Delivery) error {
		if d.Event == "watch" {
			return bot.ErrIgnored
		}
		return nil
	}}
	s := newTestServer(t, Config{}, p)
	// What two calls (a 304 read, a comment created) leave in the counters.
	s.Metrics().SetAPIStats(func() ghapi.CallStats {
		return ghapi.CallStats{Total: 2, ContentCreating: 1, NotModified: 1, RateLimitRemaining: 4990, ByKind: map[string]int{
			"GET /repos/{owner}/{repo}/issues/{number}": 1, "POST /repos/{owner}/{repo}/issues/{number}/comments": 1}}
	})

	serve(s, webhookRequest("ping", "m-1", readFixture(t, "ping.json")))
	serve(s, webhookRequest("watch", "m-2", readFixture(t, "watch-started.json")))
	serve(s, webhookRequest("watch", "m-2", readFixture(t, "watch-started.json")))
	r := webhookRequest("ping", "m-3", []byte("{}"))
	r.Header.Del("X-Hub-Signature-256")
	serve(s, r)
	waitFor(t, "processed", func() bool { return s.Metrics().EventCount("watch", OutcomeIgnored) == 1 })

	w := serve(s, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Header().Get("Content-Type"), "text/plain; version=0.0.4")
	body := w.Body.String()
	sc := bufio.NewScanner(strings.NewReader(body))
	var names []string
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			assert.Regexp(t, promComment, line)
			if strings.HasPrefix(line, "# TYPE ") {
				names = append(names, strings.Fields(line)[2])
			}
			continue
		}
		assert.Regexp(t, promSample, line)
	}
	assert.IsNonDecreasing(t, names, "families sorted by name")
	for _, want := range []string{
		`bazinga_webhook_events_total{event="ping",outcome="processed"} 1`,
		`bazinga_webhook_events_total{event="watch",outcome="duplicate"} 1`,
		`bazinga_webhook_events_total{event="watch",outcome="ignored"} 1`,
		`bazinga_webhook_requests_total{code="202"} 3`,
		`bazinga_webhook_requests_total{code="401"} 1`,
		`bazinga_webhook_request_duration_seconds_count 4`,
		`bazinga_webhook_request_duration_seconds_bucket{le="+Inf"} 4`,
		`bazinga_queue_depth 0`,
		`bazinga_github_api_calls_total{creating="false",kind="GET /repos/{owner}/{repo}/issues/{number}"} 1`,
		`bazinga_github_api_calls_total{creating="true",kind="POST /repos/{owner}/{repo}/issues/{number}/comments"} 1`,
		`bazinga_github_api_not_modified_total 1`,
		`bazinga_github_rate_limit_remaining 4990`,
		`# TYPE bazinga_webhook_request_duration_seconds histogram`,
	} {
		assert.Contains(t, body, want+"\n")
	}
	// Deterministic: two scrapes of unchanged state are identical. The Go
	// runtime and process families (go_*, process_*) move between scrapes by
	// nature; every bazinga_* line must not.
	again := serve(s, httptest.NewRequest(http.MethodGet, "/metrics", nil)).Body.String()
	assert.Equal(t, bazingaLines(t, body), bazingaLines(t, again))
	assert.Contains(t, body, "\ngo_memstats_heap_alloc_bytes ", "runtime metrics exported")
}

// bazingaLines keeps the lines of a scrape that describe bazinga_* families.
func bazingaLines(t *testing.T, scrape string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(scrape, "\n") {
		name := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
		if strings.HasPrefix(name, "bazinga_") {
			out = append(out, line)
		}
	}
	require.NotEmpty(t, out)
	return out
}

func TestRunSweepsAndShutsDownGracefully(t *testing.T) {
	started := make(chan struct{}, 1)
	finished := atomic.Bool{}
	p := &fakeProcessor{process: func(ctx context.Context, d bot.Delivery) error {
		started <- struct{}{}
		time.Sleep(50 * time.Millisecond)
		finished.Store(true)
		return nil
	}}
	s, err := NewServer(Config{WebhookSecret: []byte(testSecret), SweepInterval: 10 * time.Millisecond}, p, nil)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()

	waitFor(t, "sweeps", func() bool { return p.sweeps.Load() >= 3 })
	body := readFixture(t, "ping.json")
	req := webhookRequest("ping", "run-1", body)
	req.RequestURI = ""
	req.URL.Scheme, req.URL.Host = "http", ln.Addr().String()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	<-started
	cancel()
	require.NoError(t, <-done)
	assert.True(t, finished.Load(), "in-flight delivery finished before Run returned")
	// After shutdown the queue refuses work.
	assert.Equal(t, http.StatusServiceUnavailable, serve(s, webhookRequest("ping", "run-2", body)).Code)
}

func TestKeyPanicDoesNotFailRequest(t *testing.T) {
	p := &fakeProcessor{keyFn: func(bot.Delivery) string { panic("bad key") }}
	s := newTestServer(t, Config{}, p)
	assert.Equal(t, http.StatusAccepted, serve(s, webhookRequest("ping", "kp", readFixture(t, "ping.json"))).Code)
	waitFor(t, "processed", func() bool { return len(p.deliveries()) == 1 })
}

// noopProcessor acknowledges everything; for latency measurements.
type noopProcessor struct{}

func (noopProcessor) Key(d bot.Delivery) string                   { return d.Repo }
func (noopProcessor) Process(context.Context, bot.Delivery) error { return nil }
func (noopProcessor) Sweep(context.Context) error                 { return nil }

// AckLatency fires signed deliveries at rate per second for dur against a
// real HTTP listener (open loop: a slow answer does not delay the next
// send) and returns the sorted times to the 202.
func AckLatency(tb testing.TB, rate int, dur time.Duration) []time.Duration {
	tb.Helper()
	s, err := NewServer(Config{WebhookSecret: []byte(testSecret)}, noopProcessor{}, slog.New(slog.DiscardHandler))
	require.NoError(tb, err)
	// Served as bazinga serve serves: through Serve's listener and limits.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	sctx, scancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(sctx, ln) }()
	defer func() { scancel(); <-served }()
	hs := struct{ URL string }{"http://" + ln.Addr().String()}
	body := readFixture(tb, "issues-labeled.json")
	sig := Sign([]byte(testSecret), body)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	defer client.CloseIdleConnections()

	n := int(dur.Seconds() * float64(rate))
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, hs.URL+"/webhook", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "issues")
			req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("bench-%d", i))
			req.Header.Set("X-Hub-Signature-256", sig)
			start := time.Now()
			resp, err := client.Do(req)
			lat[i] = time.Since(start)
			if err != nil {
				errs[i] = err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				errs[i] = fmt.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(tb, err)
	}
	slices.Sort(lat)
	return lat
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// TestAckLatency200rps measures webhook acknowledgement latency at 200
// requests per second for 10 s. Run with BAZINGA_BENCH_ACK=1.
func TestAckLatency200rps(t *testing.T) {
	if os.Getenv("BAZINGA_BENCH_ACK") == "" {
		t.Skip("set BAZINGA_BENCH_ACK=1 to run the 10 s acknowledgement latency measurement")
	}
	lat := AckLatency(t, 200, 10*time.Second)
	t.Logf("requests=%d p50=%v p90=%v p99=%v max=%v", len(lat),
		percentile(lat, 50), percentile(lat, 90), percentile(lat, 99), lat[len(lat)-1])
}

// BenchmarkWebhookAck measures the handler alone (no network): verify,
// parse, dedup, enqueue, 202.
func BenchmarkWebhookAck(b *testing.B) {
	s, err := NewServer(Config{WebhookSecret: []byte(testSecret), QueueSize: 1 << 20}, noopProcessor{}, slog.New(slog.DiscardHandler))
	require.NoError(b, err)
	defer s.Close()
	body, err := os.ReadFile(filepath.Join("..", "testdata", "webhooks", "issues-labeled.json"))
	require.NoError(b, err)
	sig := Sign([]byte(testSecret), body)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
		r.Header.Set("X-GitHub-Event", "issues")
		r.Header.Set("X-GitHub-Delivery", strconv.Itoa(i))
		r.Header.Set("X-Hub-Signature-256", sig)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		if w.Code != http.StatusAccepted {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// zeros is an endless reader of zero bytes that allocates nothing.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// countingBody counts what the handler read of a request body.
type countingBody struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingBody) Close() error { return nil }

func TestOversizedBodyRefusedWithoutReadingIt(t *testing.T) {
	const huge = 25 << 20
	tests := []struct {
		name          string
		contentLength int64
		maxRead       int64
	}{
		// Content-Length says too much: refused before a byte is read.
		{"declared length", huge, 0},
		// Chunked: read up to the cap, not one buffer more.
		{"chunked", -1, DefaultMaxBodyBytes + 64<<10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakeProcessor{}
			s := newTestServer(t, Config{}, p)
			body := &countingBody{r: io.LimitReader(zeros{}, huge)}
			r := webhookRequest("ping", "big", nil)
			r.Body, r.ContentLength = body, tc.contentLength
			w := serve(s, r)
			assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
			assert.LessOrEqual(t, body.n.Load(), tc.maxRead)
			assert.Empty(t, p.deliveries())
		})
	}
}

// blockingBody hands out its bytes only once released.
type blockingBody struct {
	release chan struct{}
	r       io.Reader
}

func (b *blockingBody) Read(p []byte) (int, error) {
	<-b.release
	return b.r.Read(p)
}

func (b *blockingBody) Close() error { return nil }

func TestConcurrentBodyReadsBounded(t *testing.T) {
	ping := readFixture(t, "ping.json")
	// hold starts a delivery from addr whose body is held until released.
	hold := func(s *Server, addr, id string) (chan int, *blockingBody) {
		r := webhookRequest("ping", id, ping)
		r.RemoteAddr = addr
		bb := &blockingBody{release: make(chan struct{}), r: bytes.NewReader(ping)}
		r.Body = bb
		done := make(chan int, 1)
		go func() { done <- serve(s, r).Code }()
		return done, bb
	}
	from := func(addr, id string) *http.Request {
		r := webhookRequest("ping", id, ping)
		r.RemoteAddr = addr
		return r
	}

	t.Run("per address", func(t *testing.T) {
		p := &fakeProcessor{}
		// A body that has started holds 4 KiB: the address's whole share.
		s := newTestServer(t, Config{BodyBudgetPerIP: 4 << 10}, p)
		done, bb := hold(s, "192.0.2.1:1000", "slow")
		waitFor(t, "slot taken", func() bool { return s.budget.used.Load() > 0 })
		// The address's slot is held: its next body is refused at once, not queued.
		w := serve(s, from("192.0.2.1:1001", "same"))
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		assert.Equal(t, "1", w.Header().Get("Retry-After"))
		// Another address is not affected.
		assert.Equal(t, http.StatusAccepted, serve(s, from("192.0.2.2:1000", "other")).Code)
		close(bb.release)
		assert.Equal(t, http.StatusAccepted, <-done)
		assert.Equal(t, http.StatusAccepted, serve(s, from("192.0.2.1:1002", "again")).Code, "the slot is released after the read")
		waitFor(t, "three processed", func() bool { return len(p.deliveries()) == 3 })
	})

	t.Run("bytes held", func(t *testing.T) {
		p := &fakeProcessor{}
		// Two bodies that have started take the whole budget (4 KiB each at first).
		s := newTestServer(t, Config{BodyBudget: 8 << 10, BodyBudgetPerIP: -1}, p)
		d1, b1 := hold(s, "192.0.2.1:1000", "a")
		d2, b2 := hold(s, "192.0.2.2:1000", "b")
		waitFor(t, "budget taken", func() bool { return s.budget.used.Load() == 8<<10 })
		w := serve(s, from("192.0.2.3:1000", "c"))
		assert.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
		assert.Contains(t, w.Body.String(), "too many webhook bytes")
		close(b1.release)
		close(b2.release)
		assert.Equal(t, http.StatusAccepted, <-d1)
		assert.Equal(t, http.StatusAccepted, <-d2)
		assert.Zero(t, s.budget.used.Load(), "every reservation is returned")
		assert.Equal(t, http.StatusAccepted, serve(s, from("192.0.2.3:1000", "c")).Code)
	})
}

// startServing runs s.Serve on a loopback listener until the test ends.
func startServing(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ln.Addr().String()
}

func TestLargeBodyFloodKeepsHeapSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 300 MiB over loopback")
	}
	p := &fakeProcessor{}
	s, err := NewServer(Config{WebhookSecret: []byte(testSecret)}, p, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	addr := startServing(t, s)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()

	// The attack of issue 10: six 25 MiB bodies at once, unsigned; then the
	// same with a well-formed (wrong) signature and no Content-Length, which
	// has to be read to be judged.
	attacks := []struct {
		name   string
		signed bool
		want   int
	}{
		{"unsigned", false, http.StatusUnauthorized},
		{"bogus signature, chunked", true, http.StatusRequestEntityTooLarge},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			var peak atomic.Uint64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					if ms.HeapAlloc > peak.Load() {
						peak.Store(ms.HeapAlloc)
					}
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Millisecond):
					}
				}
			}()
			var wg sync.WaitGroup
			codes := make([]int, 6)
			for i := range codes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhook", io.NopCloser(io.LimitReader(zeros{}, 25<<20)))
					require.NoError(t, err)
					req.ContentLength = -1
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("X-GitHub-Event", "ping")
					req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("flood-%d", i))
					if a.signed {
						req.Header.Set("X-Hub-Signature-256", Sign([]byte("not the secret"), []byte("x")))
					}
					resp, err := client.Do(req)
					if err != nil {
						// The server may close while the client still writes;
						// what matters is that nothing was accepted or held.
						codes[i] = -1
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					codes[i] = resp.StatusCode
				}()
			}
			wg.Wait()
			close(stop)
			<-sampled
			growth := int64(peak.Load()) - int64(before.HeapAlloc)
			t.Logf("codes=%v heap before=%d MiB peak=%d MiB growth=%.1f MiB", codes,
				before.HeapAlloc>>20, peak.Load()>>20, float64(growth)/(1<<20))
			answered := 0
			for _, c := range codes {
				if c != -1 {
					assert.Equal(t, a.want, c)
					answered++
				}
			}
			assert.Positive(t, answered, "some attack requests got an answer")
			// 6 × 25 MiB were sent; at most 6 × 1 MiB (plus read-buffer
			// doubling) may be held. Before the limits this was ~290 MiB.
			assert.Less(t, growth, int64(24<<20), "heap grew by %d bytes", growth)
			assert.Empty(t, p.deliveries())
		})
	}
}

// sweepProcessor is a processor whose sweeps fail with err.
type sweepProcessor struct {
	noopProcessor
	err error
}

func (p sweepProcessor) Sweep(context.Context) error { return p.err }

// TestSweepOutcomes: a sweep whose only failures are rate limits is counted
// and logged as rate-limited (the sessions wait for the reset by
// themselves), not as failed; any other failure among them fails it.
func TestSweepOutcomes(t *testing.T) {
	reset := time.Date(2026, 3, 2, 15, 42, 0, 0, time.UTC)
	limited := &ghapi.RateLimitedError{Identity: "installation/1", Resource: "core", Reset: reset}
	later := &ghapi.RateLimitedError{Identity: "installation/2", Resource: "core", Reset: reset.Add(time.Hour)}
	tests := []struct {
		name    string
		err     error
		outcome string
		log     string
	}{
		{"ok", nil, OutcomeProcessed, ""},
		{"one rate limit", fmt.Errorf("sweep acme/widgets#1: %w", limited), OutcomeRateLimited, `"reset":"2026-03-02T15:42:00Z"`},
		{"rate limits joined", errors.Join(fmt.Errorf("a: %w", limited), fmt.Errorf("b: %w", errors.Join(later))), OutcomeRateLimited, `"reset":"2026-03-02T16:42:00Z"`},
		{"a rate limit and a failure", errors.Join(limited, errors.New("boom")), OutcomeFailed, `"msg":"sweep failed"`},
		{"a failure", errors.New("boom"), OutcomeFailed, `"msg":"sweep failed"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			s, err := NewServer(Config{WebhookSecret: []byte(testSecret)}, sweepProcessor{err: tt.err}, slog.New(slog.NewJSONHandler(&logs, nil)))
			require.NoError(t, err)
			s.sweep(context.Background())
			metrics := serve(s, httptest.NewRequest(http.MethodGet, "/metrics", nil)).Body.String()
			assert.Contains(t, metrics, `bazinga_sweeps_total{outcome="`+tt.outcome+`"} 1`)
			assert.Contains(t, logs.String(), tt.log)
		})
	}
}
