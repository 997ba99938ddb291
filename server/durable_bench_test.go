package server

import (
	"context"
	"sync/atomic"

	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/bot"

	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/jobq/jobqtest"
)

// BenchmarkDurableAck is the cost of durability on the normal path, side by
// side in one run: the in-memory queue, the embedded SQLite queue and (with
// BAZINGA_TEST_DATABASE_URL) PostgreSQL. Each delivery is a real HTTP
// request on loopback, acknowledged after its commit and then processed by
// a no-op Processor; reported are the acknowledgement's p50 and p99 and the
// process's CPU time (user+system, server, workers and client together) per
// delivery, until every delivery is processed.
//
//	go test ./server/ -run '^$' -bench BenchmarkDurableAck -benchtime 2000x -count 5
func BenchmarkDurableAck(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("..", "testdata", "webhooks", "issues-labeled.json"))
	require.NoError(b, err)
	sig := Sign([]byte(testSecret), body)
	for _, bk := range ackBackends {
		b.Run(bk.name, func(b *testing.B) {
			p := &countingProcessor{}
			s, err := NewServer(Config{WebhookSecret: []byte(testSecret), QueueSize: 1 << 20, DatabaseURL: bk.url(b)}, p, nil)
			require.NoError(b, err)
			defer s.Close()
			ts := httptest.NewServer(s.Handler())
			defer ts.Close()
			client := ts.Client()
			lat := make([]time.Duration, 0, b.N)
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := clientDelivery(ts.URL, body, sig, bk.name+"-"+strconv.Itoa(i))
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				if resp.StatusCode != http.StatusAccepted {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			for p.n.Load() < int64(b.N) {
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			reportAcks(b, lat, cpuTime()-cpu0)
		})
	}
}

// BenchmarkDurableAckBurst is BenchmarkDurableAck under GitHub's bursts: an
// open loop of 500 deliveries a second (one request started every 2 ms,
// whether or not the earlier ones were answered, as GitHub sends them), so
// deliveries arrive while others commit. This is where the queue's group
// commit counts: the deliveries waiting share one transaction and one sync.
// Three bursts of b.N each: the first on a server just started with a
// database just created (reported as first-p50/p99); the second once the
// first is processed, as every later burst of a running server (ack-p50/p99,
// the CPU per delivery, and with a database where the acknowledgement's
// time went: jobqtest.Commits, the wait for a committer, the commit, the
// batch sizes); the third on a new server on the same database, as after a
// deploy (restarted-p50/p99).
//
//	go test ./server/ -run '^$' -bench BenchmarkDurableAckBurst -benchtime 1000x -count 5
func BenchmarkDurableAckBurst(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("..", "testdata", "webhooks", "issues-labeled.json"))
	require.NoError(b, err)
	sig := Sign([]byte(testSecret), body)
	for _, bk := range ackBackends {
		b.Run(bk.name, func(b *testing.B) {
			p := &countingProcessor{}
			dbURL := bk.url(b)
			s, err := NewServer(Config{WebhookSecret: []byte(testSecret), QueueSize: 1 << 20, DatabaseURL: dbURL}, p, nil)
			require.NoError(b, err)
			ts := httptest.NewServer(s.Handler())
			tr := ts.Client().Transport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = 256
			client := &http.Client{Transport: tr}
			defer func() { ts.Close(); s.Close() }()
			burst := func(name string) []time.Duration {
				var failed atomic.Int64
				processed := p.n.Load()
				lat := jobqtest.Burst(b.N, func(i int) {
					resp, err := client.Do(clientDelivery(ts.URL, body, sig, bk.name+"-"+name+"-"+strconv.Itoa(i)))
					if err != nil {
						failed.Add(1)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusAccepted {
						failed.Add(1)
					}
				})
				if n := failed.Load(); n > 0 {
					b.Fatalf("%s burst: %d deliveries not acknowledged", name, n)
				}
				for p.n.Load() < processed+int64(b.N) {
					time.Sleep(time.Millisecond)
				}
				return lat
			}
			b.StopTimer()
			first := burst("first")
			var rec jobqtest.Commits
			if s.dq != nil {
				s.dq.store.ObserveCommits(rec.Observe)
			}
			cpu0 := cpuTime()
			b.StartTimer()
			later := burst("later")
			b.StopTimer()
			reportAcks(b, later, cpuTime()-cpu0)
			rec.Report(b)
			// A deploy: a new process on the database in use.
			ts.Close()
			s.Close()
			s, err = NewServer(Config{WebhookSecret: []byte(testSecret), QueueSize: 1 << 20, DatabaseURL: dbURL}, p, nil)
			require.NoError(b, err)
			ts = httptest.NewServer(s.Handler())
			tr = ts.Client().Transport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = 256
			client = &http.Client{Transport: tr}
			restarted := burst("restarted")
			for _, m := range []struct {
				name string
				lat  []time.Duration
			}{{"first", first}, {"restarted", restarted}} {
				sort.Slice(m.lat, func(i, j int) bool { return m.lat[i] < m.lat[j] })
				b.ReportMetric(float64(m.lat[len(m.lat)/2].Microseconds()), m.name+"-p50-µs")
				b.ReportMetric(float64(m.lat[len(m.lat)*99/100].Microseconds()), m.name+"-p99-µs")
			}
		})
	}
}

// ackBackends are the queues the acknowledgement benchmarks compare.
var ackBackends = []struct {
	name string
	url  func(testing.TB) string
}{
	{"memory", func(testing.TB) string { return "" }},
	{"sqlite", jobqtest.SQLiteURL},
	{"postgres", jobqtest.PostgresURL},
}

// clientDelivery is webhookRequest for a client on the network: sent to the
// server at base, signed once by the caller (the signature's CPU is not the
// server's), its id made unique per run as GitHub's are.
func clientDelivery(base string, body []byte, sig, id string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, base+"/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", id+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	req.Header.Set("X-Hub-Signature-256", sig)
	return req
}

// reportAcks reports the acknowledgements' p50 and p99 and the CPU time
// per delivery.
func reportAcks(b *testing.B, lat []time.Duration, cpu time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "ack-p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "ack-p99-µs")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/delivery")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingProcessor counts processed deliveries and does nothing else.
type countingProcessor struct{ n atomic.Int64 }

func (c *countingProcessor) Key(d bot.Delivery) string { return "" }
func (c *countingProcessor) Process(context.Context, bot.Delivery) error {
	c.n.Add(1)
	return nil
}
func (c *countingProcessor) Sweep(context.Context) error { return nil }
