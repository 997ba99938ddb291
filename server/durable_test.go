package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/jobq/jobqtest"
)

func durableServer(t *testing.T, url string, p Processor, cfg Config) *Server {
	t.Helper()
	cfg.DatabaseURL = url
	return newTestServer(t, cfg, p)
}

func openStore(t *testing.T, url string) *jobq.Store {
	t.Helper()
	st, err := jobq.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

func jobState(t *testing.T, st *jobq.Store, id string) jobq.Entry {
	t.Helper()
	e, ok, err := st.Get(context.Background(), id)
	require.NoError(t, err)
	require.True(t, ok, "delivery %s is in the queue", id)
	return e
}

// TestDurableAckedIsCommittedAndSurvivesRestart: the 202 comes after the
// delivery is in the database; a server stopped before running it leaves
// it there, the next one runs it, and its id stays a duplicate.
func TestDurableAckedIsCommittedAndSurvivesRestart(t *testing.T) {
	url := jobqtest.SQLiteURL(t)
	block := make(chan struct{})
	// One session: arrival order is a session's (different sessions run in
	// parallel, in no promised order).
	oneSession := func(bot.Delivery) string { return "o/r#1" }
	p1 := &fakeProcessor{keyFn: oneSession, process: func(ctx context.Context, d bot.Delivery) error {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return ctx.Err()
	}}
	s1 := durableServer(t, url, p1, Config{Workers: 1})
	body := readFixture(t, "issues-labeled.json")
	require.Equal(t, http.StatusAccepted, serve(s1, webhookRequest("issues", "d-1", body)).Code)
	require.Equal(t, http.StatusAccepted, serve(s1, webhookRequest("issues", "d-2", body)).Code)
	st := openStore(t, url)
	assert.Equal(t, jobq.StatePending, jobState(t, st, "d-1").State, "committed before the 202")
	assert.Equal(t, jobq.StatePending, jobState(t, st, "d-2").State)
	waitFor(t, "d-1 running", func() bool { return len(p1.deliveries()) == 1 })
	s1.Close() // cancels d-1 mid-run, as a crash would leave it
	close(block)

	p2 := &fakeProcessor{keyFn: oneSession}
	s2 := durableServer(t, url, p2, Config{})
	waitFor(t, "both run after the restart", func() bool { return len(p2.deliveries()) == 2 })
	assert.Equal(t, "d-1", p2.deliveries()[0].ID, "in arrival order")
	assert.Equal(t, "issues", p2.deliveries()[0].Event)
	assert.NotEmpty(t, p2.deliveries()[0].Repo, "the stored payload is parsed again")
	require.Equal(t, http.StatusAccepted, serve(s2, webhookRequest("issues", "d-1", body)).Code)
	assert.Equal(t, uint64(1), s2.Metrics().EventCount("issues", OutcomeDuplicate), "a redelivery after the restart is a duplicate")
	waitFor(t, "done", func() bool { return jobState(t, st, "d-2").State == jobq.StateDone })
	assert.Equal(t, 1, jobState(t, st, "d-1").Attempts, "an interrupted run is not an attempt")
	time.Sleep(20 * time.Millisecond)
	assert.Len(t, p2.deliveries(), 2)
}

// TestDurableFailures: a transient failure is retried later, a permanent
// one is dead-lettered (and revived by RetryDead), a panic too, and a rate
// limit parks the session's deliveries, in order, until its reset.
func TestDurableFailures(t *testing.T) {
	url := jobqtest.SQLiteURL(t)
	body := readFixture(t, "issues-labeled.json")
	reset := time.Now().Add(4 * time.Second)
	var calls sync.Map
	var order []string
	var mu sync.Mutex
	p := &fakeProcessor{
		keyFn: func(d bot.Delivery) string { return "o/r#1" },
		process: func(ctx context.Context, d bot.Delivery) error {
			n, _ := calls.LoadOrStore(d.ID, new(atomic.Int32))
			c := n.(*atomic.Int32).Add(1)
			mu.Lock()
			order = append(order, d.ID)
			mu.Unlock()
			switch d.ID {
			case "transient":
				if c > 1 {
					return nil
				}
				return &github.ErrorResponse{Response: &http.Response{StatusCode: http.StatusBadGateway}, Message: "bad gateway"}
			case "permanent":
				if c == 1 {
					return &github.ErrorResponse{Response: &http.Response{StatusCode: http.StatusForbidden}, Message: "forbidden"}
				}
			case "panics":
				panic("boom")
			case "limited":
				if time.Now().Before(reset) {
					return &ghapi.RateLimitedError{Identity: "installation/1", Resource: "core", Reset: reset}
				}
			}
			return nil
		},
	}
	s := durableServer(t, url, p, Config{Workers: 2})
	st := openStore(t, url)
	for _, id := range []string{"transient", "permanent", "panics", "limited", "after-limit"} {
		require.Equal(t, http.StatusAccepted, serve(s, webhookRequest("issues", id, body)).Code)
	}
	waitFor(t, "a 502 is retried later", func() bool { return jobState(t, st, "transient").Err != "" })
	tr := jobState(t, st, "transient")
	assert.Equal(t, jobq.StatePending, tr.State, "a 502 is retried, not given up")
	assert.Contains(t, tr.Err, "bad gateway")
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	assert.Equal(t, []string{"transient"}, order, "the session's later deliveries wait behind its retried head")
	mu.Unlock()
	require.Eventually(t, func() bool { return jobState(t, st, "limited").Err != "" }, 10*time.Second, 10*time.Millisecond, "the session reaches the rate limit")
	assert.Equal(t, 2, jobState(t, st, "transient").Attempts)
	assert.Equal(t, jobq.StateDone, jobState(t, st, "transient").State)
	require.Eventually(t, func() bool {
		e := jobState(t, st, "after-limit")
		return e.State == jobq.StateDone
	}, 20*time.Second, 10*time.Millisecond, "the session runs on after the retry and the reset")
	assert.False(t, time.Now().Before(reset), "the parked session waited for the reset")
	pe := jobState(t, st, "permanent")
	assert.Equal(t, jobq.StateDead, pe.State, "a 403 is dead-lettered at once")
	assert.Equal(t, 1, pe.Attempts)
	assert.Equal(t, jobq.StateDead, jobState(t, st, "panics").State)
	le := jobState(t, st, "limited")
	assert.Equal(t, jobq.StateDone, le.State)
	assert.Equal(t, 1, le.Attempts, "waiting for a reset is not an attempt")
	mu.Lock()
	assert.Equal(t, []string{"transient", "permanent", "panics", "limited", "after-limit"}, dedupe(order), "arrival order")
	mu.Unlock()

	n, err := st.RetryDead(context.Background(), []string{"permanent"})
	require.NoError(t, err)
	assert.EqualValues(t, 1, n)
	waitFor(t, "a revived delivery runs again", func() bool { return jobState(t, st, "permanent").State == jobq.StateDone })
	assert.Equal(t, uint64(1), s.Metrics().EventCount("issues", OutcomePanicked))
	assert.GreaterOrEqual(t, s.Metrics().EventCount("issues", OutcomeRetried), uint64(1))
	assert.GreaterOrEqual(t, s.Metrics().EventCount("issues", OutcomeRateLimited), uint64(1))
}

// dedupe drops consecutive repeats (a retried delivery shows once).
func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

func TestTransient(t *testing.T) {
	resp := func(code int) error {
		return &github.ErrorResponse{Response: &http.Response{StatusCode: code}}
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{resp(502), true}, {resp(500), true}, {resp(429), true}, {resp(404), false}, {resp(422), false},
		{&net.OpError{Op: "dial", Err: errors.New("refused")}, true},
		{context.DeadlineExceeded, true},
		{errors.New("the state block is malformed"), false},
	} {
		assert.Equal(t, tc.want, transient(tc.err), "%v", tc.err)
	}
	for n := 1; n <= 12; n++ {
		b := backoff(n)
		base := min(2*time.Second<<(n-1), 10*time.Minute)
		assert.GreaterOrEqual(t, b, base*3/4)
		assert.LessOrEqual(t, b, base*5/4)
	}
}

// TestDurableSweepOneReplicaPerInterval: two servers on one queue sweep
// once per interval between them, not once each.
func TestDurableSweepOneReplicaPerInterval(t *testing.T) {
	url := jobqtest.SQLiteURL(t)
	const interval = 200 * time.Millisecond
	var ps []*fakeProcessor
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 2 {
		p := &fakeProcessor{}
		ps = append(ps, p)
		s, err := NewServer(Config{WebhookSecret: []byte(testSecret), DatabaseURL: url, SweepInterval: interval,
			Replica: []string{"a", "b"}[i]}, p, nil)
		require.NoError(t, err)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		wg.Add(1)
		go func() { defer wg.Done(); assert.NoError(t, s.Serve(ctx, ln)) }()
	}
	time.Sleep(1100 * time.Millisecond)
	cancel()
	wg.Wait()
	elapsed := time.Since(start)
	total := ps[0].sweeps.Load() + ps[1].sweeps.Load()
	maxSweeps := int32(elapsed/interval) + 1
	assert.LessOrEqual(t, total, maxSweeps, "one sweep per interval across the replicas")
	assert.GreaterOrEqual(t, total, maxSweeps-3, "and one in every interval")
}

func TestDurableMetrics(t *testing.T) {
	url := jobqtest.SQLiteURL(t)
	s := durableServer(t, url, &fakeProcessor{}, Config{Replica: "replica-1"})
	require.Equal(t, http.StatusAccepted, serve(s, webhookRequest("issues", "m-1", readFixture(t, "issues-labeled.json"))).Code)
	waitFor(t, "run recorded", func() bool {
		return s.Metrics().value("bazinga_queue_job_runs_total", map[string]string{"result": "done"}) == 1
	})
	w := serve(s, httpGet("/metrics"))
	for _, name := range []string{"bazinga_queue_depth", "bazinga_queue_oldest_age_seconds", "bazinga_queue_dead", "bazinga_queue_parked",
		"bazinga_queue_job_runs_total{result=\"done\"} 1", "bazinga_queue_job_latency_seconds_count 1",
		"bazinga_queue_job_duration_seconds_count 1", `bazinga_replica_info{replica="replica-1"} 1`} {
		assert.Contains(t, w.Body.String(), name)
	}
}

func httpGet(path string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, path, nil)
	return r
}

func TestConfigFromEnvQueue(t *testing.T) {
	base := func(extra map[string]string) map[string]string {
		m := map[string]string{EnvAppID: "1", EnvPrivateKey: string(testkey.PEM(t)), EnvWebhookSecret: strongWebhookSecret,
			EnvStateKey: strongStateKey, EnvCredentialsFile: "/data/bazinga-app.env"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	c, err := ConfigFromEnv(envOf(base(nil)))
	require.NoError(t, err)
	assert.Equal(t, "sqlite:/data/bazinga-queue.db", c.DatabaseURL, "the embedded queue sits next to the credentials")
	assert.Zero(t, c.QueueLease, "default lease")
	assert.Equal(t, DefaultQueueLease, c.withDefaults().QueueLease)

	c, err = ConfigFromEnv(envOf(base(map[string]string{EnvDatabaseURL: "memory"})))
	require.NoError(t, err)
	assert.Empty(t, c.DatabaseURL)

	c, err = ConfigFromEnv(envOf(base(map[string]string{EnvDatabaseURL: "postgres://bazinga:s3cret@db:5432/q", EnvQueueLease: "10s"})))
	require.NoError(t, err)
	assert.Equal(t, "postgres://bazinga:s3cret@db:5432/q", c.DatabaseURL)
	assert.Equal(t, 10*time.Second, c.QueueLease)
	assert.NotContains(t, c.String(), "s3cret", "the database password stays out of the logs")
	assert.Contains(t, c.String(), "postgres://bazinga:xxxxx@db:5432/q")

	for _, tc := range []struct{ env, val, want string }{
		{EnvDatabaseURL, "mysql://db/q", `unsupported database scheme "mysql"`},
		{EnvDatabaseURL, "sqlite:", "not a file path"},
		{EnvQueueLease, "100ms", EnvQueueLease + " must be a duration from 1s to 10m"},
	} {
		_, err := ConfigFromEnv(envOf(base(map[string]string{tc.env: tc.val})))
		assert.ErrorContains(t, err, tc.want, tc.val)
	}
}
