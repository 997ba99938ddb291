package jobq_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/jobq/jobqtest"
)

func open(t *testing.T, url string) *jobq.Store {
	t.Helper()
	s, err := jobq.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// eachBackend runs f on SQLite and PostgreSQL.
func eachBackend(t *testing.T, f func(t *testing.T, url string)) {
	for _, b := range jobqtest.Backends() {
		t.Run(b.Name, func(t *testing.T) { f(t, b.URL(t)) })
	}
}

func job(id, key string) jobq.Job {
	return jobq.Job{ID: id, Key: key, Event: "issue_comment", Payload: []byte(`{"n":"` + id + `"}`), Received: time.Now()}
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in, dsn string
		kind    jobq.Kind
		err     string
	}{
		{in: "postgres://u@h:5432/db?sslmode=disable", kind: jobq.Postgres, dsn: "postgres://u@h:5432/db?sslmode=disable"},
		{in: "postgresql://u@h/db", kind: jobq.Postgres, dsn: "postgresql://u@h/db"},
		{in: "sqlite:/data/q.db", kind: jobq.SQLite, dsn: "/data/q.db"},
		{in: "file:q.db", kind: jobq.SQLite, dsn: "q.db"},
		{in: "/data/q.db", kind: jobq.SQLite, dsn: "/data/q.db"},
		{in: "mysql://h/db", err: `unsupported database scheme "mysql"`},
		{in: "sqlite:", err: "not a file path"},
		{in: "sqlite:/x.db?mode=ro", err: "not a file path"},
		{in: " ", err: "no database URL"},
	} {
		kind, dsn, err := jobq.ParseURL(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.kind, kind, tc.in)
		assert.Equal(t, tc.dsn, dsn, tc.in)
	}
}

// TestEnqueueDedupSurvivesReopen: a delivery id is a duplicate while its
// row is kept, across a restart (a new Store on the same database).
func TestEnqueueDedupSurvivesReopen(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		ok, err := s.Enqueue(ctx, job("d1", "o/r#1"))
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = s.Enqueue(ctx, job("d1", "o/r#1"))
		require.NoError(t, err)
		assert.False(t, ok, "same id: duplicate")
		require.NoError(t, s.Close())

		s2 := open(t, url)
		ok, err = s2.Enqueue(ctx, job("d1", "o/r#1"))
		require.NoError(t, err)
		assert.False(t, ok, "the id outlives the process")
		c, err := s2.Claim(ctx, "w", time.Minute)
		require.NoError(t, err)
		require.NotNil(t, c, "the job outlives the process")
		assert.Equal(t, "d1", c.ID)
		assert.Equal(t, 1, c.Attempts)
		assert.JSONEq(t, `{"n":"d1"}`, string(c.Payload))
		require.NoError(t, s2.Finish(ctx, c, jobq.Result{Disposition: jobq.Done, Outcome: "processed"}))
		ok, err = s2.Enqueue(ctx, job("d1", "o/r#1"))
		require.NoError(t, err)
		assert.False(t, ok, "a finished job's id is still a duplicate")
		st, err := s2.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, 0, st.Pending)
	})
}

// TestOneKeyOneWorkerInOrder: three stores on one database (replicas),
// four workers each; jobs of a key never overlap and run in arrival order,
// keys run in parallel, every job runs once.
func TestOneKeyOneWorkerInOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		const keys, perKey = 12, 10
		stores := []*jobq.Store{open(t, url), open(t, url), open(t, url)}
		var mu sync.Mutex
		active := map[string]int{}
		order := map[string][]string{}
		runs := map[string]int{}
		var overlaps, maxParallel, parallel atomic.Int64
		h := func(_ context.Context, c *jobq.Claim) jobq.Result {
			mu.Lock()
			active[c.Key]++
			if active[c.Key] > 1 {
				overlaps.Add(1)
			}
			order[c.Key] = append(order[c.Key], c.ID)
			runs[c.ID]++
			mu.Unlock()
			if p := parallel.Add(1); p > maxParallel.Load() {
				maxParallel.Store(p)
			}
			time.Sleep(2 * time.Millisecond)
			parallel.Add(-1)
			mu.Lock()
			active[c.Key]--
			mu.Unlock()
			return jobq.Result{Disposition: jobq.Done, Outcome: "processed"}
		}
		var runners []*jobq.Runner
		for i, s := range stores {
			runners = append(runners, jobq.NewRunner(s, h, jobq.RunnerOptions{Workers: 4, Poll: 10 * time.Millisecond, Owner: fmt.Sprint("r", i)}))
		}
		want := map[string][]string{}
		for n := 0; n < perKey; n++ {
			for k := 0; k < keys; k++ {
				key := fmt.Sprintf("o/r#%d", k)
				id := fmt.Sprintf("%s-%02d", key, n)
				want[key] = append(want[key], id)
				ok, err := stores[(n+k)%len(stores)].Enqueue(ctx, job(id, key))
				require.NoError(t, err)
				require.True(t, ok)
			}
		}
		require.Eventually(t, func() bool {
			st, err := stores[0].Stats(ctx)
			return err == nil && st.Pending == 0
		}, 60*time.Second, 20*time.Millisecond)
		for _, r := range runners {
			require.NoError(t, r.Stop(ctx))
		}
		assert.Zero(t, overlaps.Load(), "a key ran on two workers at once")
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, want, order, "arrival order within each key")
		for id, n := range runs {
			assert.Equal(t, 1, n, id)
		}
		assert.Len(t, runs, keys*perKey)
		assert.Greater(t, maxParallel.Load(), int64(1), "different keys ran in parallel")
	})
}

// TestLeaseRunsOutAndIsTakenOver: a worker that stops renewing (it died)
// loses its key; the next worker runs the job again, and the dead worker's
// late result is refused.
func TestLeaseRunsOutAndIsTakenOver(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		a, b := open(t, url), open(t, url)
		clock := time.Now()
		var mu sync.Mutex
		now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
		a.Now, b.Now = now, now
		_, err := a.Enqueue(ctx, job("d1", "k"))
		require.NoError(t, err)
		_, err = a.Enqueue(ctx, job("d2", "k"))
		require.NoError(t, err)
		ca, err := a.Claim(ctx, "a", 30*time.Second)
		require.NoError(t, err)
		require.NotNil(t, ca)
		cb, err := b.Claim(ctx, "b", 30*time.Second)
		require.NoError(t, err)
		assert.Nil(t, cb, "the key is held: its next job waits too")

		mu.Lock()
		clock = clock.Add(31 * time.Second)
		mu.Unlock()
		cb, err = b.Claim(ctx, "b", 30*time.Second)
		require.NoError(t, err)
		require.NotNil(t, cb)
		assert.Equal(t, "d1", cb.ID, "the head runs again, before d2")
		assert.Equal(t, 2, cb.Attempts)
		assert.ErrorIs(t, a.Finish(ctx, ca, jobq.Result{Disposition: jobq.Done}), jobq.ErrLeaseLost)
		assert.ErrorIs(t, a.Extend(ctx, ca, time.Minute), jobq.ErrLeaseLost)
		require.NoError(t, b.Finish(ctx, cb, jobq.Result{Disposition: jobq.Done, Outcome: "processed"}))
		e, ok, err := b.Get(ctx, "d1")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, jobq.StateDone, e.State)
		assert.Equal(t, "k", e.Key)
	})
}

// TestRetryParkDead: a retry waits and counts; a park waits for the reset,
// holds the key's later jobs and does not count; dead jobs are listed and
// revived by an operator.
func TestRetryParkDead(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		clock := time.Now()
		s.Now = func() time.Time { return clock }
		for _, j := range []jobq.Job{job("a1", "a"), job("a2", "a"), job("b1", "b")} {
			j.Received = clock
			_, err := s.Enqueue(ctx, j)
			require.NoError(t, err)
		}
		claim := func() *jobq.Claim {
			t.Helper()
			c, err := s.Claim(ctx, "w", time.Minute)
			require.NoError(t, err)
			return c
		}
		c := claim()
		require.Equal(t, "a1", c.ID)
		require.NoError(t, s.Finish(ctx, c, jobq.Result{Disposition: jobq.Park, Err: "rate limited", RunAfter: clock.Add(time.Hour)}))
		c = claim()
		require.NotNil(t, c)
		assert.Equal(t, "b1", c.ID, "a parked key's later jobs wait; other keys run")
		require.NoError(t, s.Finish(ctx, c, jobq.Result{Disposition: jobq.Retry, Err: "502", RunAfter: clock.Add(time.Second)}))
		assert.Nil(t, claim(), "nothing due")
		st, err := s.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, jobq.Stats{Pending: 3, Parked: 2, Oldest: time.UnixMilli(clock.UnixMilli())}, st)

		clock = clock.Add(2 * time.Second)
		c = claim()
		require.NotNil(t, c)
		assert.Equal(t, "b1", c.ID)
		assert.Equal(t, 2, c.Attempts)
		require.NoError(t, s.Finish(ctx, c, jobq.Result{Disposition: jobq.Dead, Outcome: "failed", Err: "still 502"}))

		clock = clock.Add(time.Hour)
		c = claim()
		require.NotNil(t, c)
		assert.Equal(t, "a1", c.ID)
		assert.Equal(t, 1, c.Attempts, "a park does not count as an attempt")
		require.NoError(t, s.Finish(ctx, c, jobq.Result{Disposition: jobq.Done, Outcome: "processed"}))

		dead, err := s.Dead(ctx, 10)
		require.NoError(t, err)
		require.Len(t, dead, 1)
		assert.Equal(t, "b1", dead[0].ID)
		assert.Equal(t, "still 502", dead[0].Err)
		assert.Equal(t, 2, dead[0].Attempts)
		n, err := s.RetryDead(ctx, []string{"nope"})
		require.NoError(t, err)
		assert.Zero(t, n)
		n, err = s.RetryDead(ctx, []string{"b1"})
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
		c = claim()
		require.NotNil(t, c)
		assert.Equal(t, "a2", c.ID)
		require.NoError(t, s.Finish(ctx, c, jobq.Result{Disposition: jobq.Done}))
		c = claim()
		require.NotNil(t, c)
		assert.Equal(t, "b1", c.ID, "a revived job runs again")
		assert.Equal(t, 1, c.Attempts, "with fresh attempts")
	})
}

// TestPeriodicOneReplicaPerInterval: of replicas asking at once, exactly
// one runs the periodic task in each interval.
func TestPeriodicOneReplicaPerInterval(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		stores := []*jobq.Store{open(t, url), open(t, url), open(t, url)}
		clock := time.Now()
		var mu sync.Mutex
		for _, s := range stores {
			s.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
		}
		for interval := 0; interval < 5; interval++ {
			var won atomic.Int64
			var wg sync.WaitGroup
			for i, s := range stores {
				for range 3 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ok, err := s.ClaimPeriodic(ctx, "sweep", fmt.Sprint("r", i), time.Minute)
						assert.NoError(t, err)
						if ok {
							won.Add(1)
						}
					}()
				}
			}
			wg.Wait()
			assert.EqualValues(t, 1, won.Load(), "interval %d", interval)
			mu.Lock()
			clock = clock.Add(time.Minute)
			mu.Unlock()
		}
	})
}

// TestPrune: finished jobs older than the retention are forgotten (their
// ids are new again); pending and dead ones stay.
func TestPrune(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		for _, id := range []string{"done", "dead", "pending"} {
			_, err := s.Enqueue(ctx, job(id, ""))
			require.NoError(t, err)
		}
		for _, d := range []jobq.Disposition{jobq.Done, jobq.Dead} {
			c, err := s.Claim(ctx, "w", time.Minute)
			require.NoError(t, err)
			require.NoError(t, s.Finish(ctx, c, jobq.Result{Disposition: d}))
		}
		n, err := s.Prune(ctx, time.Now().Add(time.Second))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
		all, err := s.All(ctx)
		require.NoError(t, err)
		var ids []string
		for _, e := range all {
			ids = append(ids, e.ID+":"+e.State)
		}
		assert.Equal(t, []string{"dead:dead", "pending:pending"}, ids)
		ok, err := s.Enqueue(ctx, job("done", ""))
		require.NoError(t, err)
		assert.True(t, ok)
	})
}
