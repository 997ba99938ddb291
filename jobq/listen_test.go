package jobq_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/jobq/jobqtest"
)

// TestNotifyWakesOtherReplica: on PostgreSQL a job queued by one replica
// starts on another at once, by LISTEN/NOTIFY: the other's poll is an hour,
// so only the notification can wake it. A batch of jobs on different keys
// (one group commit, one notification) reaches several workers.
func TestNotifyWakesOtherReplica(t *testing.T) {
	url := jobqtest.PostgresURL(t)
	ctx := context.Background()
	a, b := open(t, url), open(t, url)
	started := make(chan string, 16)
	release := make(chan struct{})
	r := jobq.NewRunner(b, func(_ context.Context, c *jobq.Claim) jobq.Result {
		started <- c.ID
		<-release
		return jobq.Result{Disposition: jobq.Done, Outcome: "processed"}
	}, jobq.RunnerOptions{Workers: 3, Poll: time.Hour})
	defer func() {
		close(release)
		require.NoError(t, r.Stop(ctx))
	}()
	// The listener connects after NewRunner returns: its first wake finds
	// what was queued before, so the test need not wait for it.
	_, err := a.Enqueue(ctx, job("first", "o/r#1"))
	require.NoError(t, err)
	select {
	case id := <-started:
		assert.Equal(t, "first", id)
	case <-time.After(10 * time.Second):
		t.Fatal("the job queued on the other replica did not start: no notification, and the poll is an hour")
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := a.Enqueue(ctx, job(fmt.Sprint("next-", i), fmt.Sprint("o/r#", 10+i)))
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	var got []string
	for len(got) < 2 {
		select {
		case id := <-started:
			got = append(got, id)
		case <-time.After(10 * time.Second):
			t.Fatalf("started %v of next-0, next-1: a wake-up did not reach every idle worker", got)
		}
	}
	sort.Strings(got)
	assert.Equal(t, []string{"next-0", "next-1"}, got)
}

// BenchmarkPickup is the delay from a job's commit on one replica to its
// start on another (PostgreSQL), polling only (every 250ms, the former
// default) and with LISTEN/NOTIFY (polling every 2s as the fallback).
//
//	go test ./jobq/ -run '^$' -bench BenchmarkPickup -benchtime 200x -count 5
func BenchmarkPickup(b *testing.B) {
	for _, mode := range []struct {
		name string
		o    jobq.RunnerOptions
	}{
		{"poll-250ms", jobq.RunnerOptions{Workers: 4, Poll: 250 * time.Millisecond, PollOnly: true}},
		{"notify", jobq.RunnerOptions{Workers: 4}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			url := jobqtest.PostgresURL(b)
			ctx := context.Background()
			a, err := jobq.Open(ctx, url)
			require.NoError(b, err)
			defer a.Close()
			other, err := jobq.Open(ctx, url)
			require.NoError(b, err)
			defer other.Close()
			started := make(chan time.Time, 1)
			r := jobq.NewRunner(other, func(context.Context, *jobq.Claim) jobq.Result {
				started <- time.Now()
				return jobq.Result{Disposition: jobq.Done, Outcome: "processed"}
			}, mode.o)
			defer r.Stop(ctx)
			time.Sleep(200 * time.Millisecond) // the listener connected
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := a.Enqueue(ctx, job(fmt.Sprint("p-", i), fmt.Sprint("o/r#", i)))
				require.NoError(b, err)
				t0 := time.Now()
				lat = append(lat, (<-started).Sub(t0))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "pickup-p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "pickup-p99-µs")
		})
	}
}

// TestOwnCommitWakesRunner: a job committed by a Store starts at once on
// that Store's runner with nobody calling Wake and the poll an hour: the
// Store wakes its runners after the commit (its own notification, which
// its listener skips, is not what does it).
func TestOwnCommitWakesRunner(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		started := make(chan string, 4)
		r := jobq.NewRunner(s, func(_ context.Context, c *jobq.Claim) jobq.Result {
			started <- c.ID
			return jobq.Result{Disposition: jobq.Done, Outcome: "processed"}
		}, jobq.RunnerOptions{Workers: 2, Poll: time.Hour})
		defer r.Stop(ctx)
		// Let the first poll (at start) find the queue empty.
		time.Sleep(100 * time.Millisecond)
		for _, id := range []string{"one", "two"} {
			_, err := s.Enqueue(ctx, job(id, "o/r#1"))
			require.NoError(t, err)
			select {
			case got := <-started:
				assert.Equal(t, id, got)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not start: the commit did not wake the runner, and the poll is an hour", id)
			}
		}
	})
}

// TestNotificationsPaced: a run of commits on PostgreSQL costs the other
// replicas a notification per 10 ms pause, not one per commit, and the
// last commit is still announced (its request waits for the pause to end,
// it is not dropped).
func TestNotificationsPaced(t *testing.T) {
	url := jobqtest.PostgresURL(t)
	ctx := context.Background()
	lc, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer lc.Close(context.Background())
	_, err = lc.Exec(ctx, "LISTEN "+jobq.NotifyChannel)
	require.NoError(t, err)
	s := open(t, url)
	const commits = 100
	start := time.Now()
	for i := range commits {
		_, err := s.Enqueue(ctx, job(fmt.Sprint("n-", i), fmt.Sprint("o/r#", i)))
		require.NoError(t, err)
	}
	lastCommit := time.Now()
	elapsed := lastCommit.Sub(start)
	var got int
	var last time.Time
	for {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := lc.WaitForNotification(wctx)
		cancel()
		if err != nil {
			break // a second with none: the notifier is done
		}
		got++
		last = time.Now()
	}
	t.Logf("%d commits in %v, %d notifications", commits, elapsed, got)
	assert.GreaterOrEqual(t, got, 1)
	assert.LessOrEqual(t, got, int(elapsed/(10*time.Millisecond))+2, "at most one notification per 10 ms")
	assert.Less(t, got, commits, "commits share notifications")
	assert.True(t, last.After(lastCommit), "the last commit is announced after it")
}

// TestConnectionsOpenedAhead: on PostgreSQL a Store opens its committers'
// connections when it opens, and a Runner its workers' when it starts,
// before any delivery: a connection opened during a burst costs its first
// statements several milliseconds each (warm.go).
func TestConnectionsOpenedAhead(t *testing.T) {
	url := jobqtest.PostgresURL(t)
	ctx := context.Background()
	probe, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer probe.Close(context.Background())
	conns := func() int {
		var n int
		require.NoError(t, probe.QueryRow(ctx,
			`SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n))
		return n
	}
	s := open(t, url)
	afterOpen := conns()
	assert.GreaterOrEqual(t, afterOpen, 5, "the four committers' connections and one for reads")
	r := jobq.NewRunner(s, func(context.Context, *jobq.Claim) jobq.Result {
		return jobq.Result{Disposition: jobq.Done}
	}, jobq.RunnerOptions{Workers: 3, Poll: time.Hour, PollOnly: true})
	defer r.Stop(ctx)
	assert.GreaterOrEqual(t, conns()-afterOpen, 5, "the three workers' connections and two for the notifier and renewals")
}
