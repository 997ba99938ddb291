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

// TestAcknowledgedOrderUnderConcurrentCommits: eight goroutines enqueue 40
// deliveries each, one after another, all for one session, while the
// workers run them. On PostgreSQL the batches commit concurrently, on
// several connections, so a batch can commit after a later one; on SQLite
// one committer commits one batch at a time. The order the bot relies on
// holds either way: a delivery acknowledged (its Enqueue returned) before
// another was received (its Enqueue called) runs first. None is lost, none
// runs twice, and the session never runs two at once. The commits really
// overlapped on PostgreSQL (else the test proves nothing) and never do on
// SQLite (its path is one writer).
func TestAcknowledgedOrderUnderConcurrentCommits(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s := open(t, url)
		var maxInFlight atomic.Int64
		s.ObserveCommits(func(st jobq.CommitStats) {
			for {
				m := maxInFlight.Load()
				if int64(st.InFlight) <= m || maxInFlight.CompareAndSwap(m, int64(st.InFlight)) {
					return
				}
			}
		})
		const senders, each = 8, 40
		const key = "o/r#1"
		var mu sync.Mutex
		ran := []string{}
		runs := map[string]int{}
		var active, overlaps atomic.Int64
		r := jobq.NewRunner(s, func(_ context.Context, c *jobq.Claim) jobq.Result {
			if active.Add(1) > 1 {
				overlaps.Add(1)
			}
			mu.Lock()
			ran = append(ran, c.ID)
			runs[c.ID]++
			mu.Unlock()
			active.Add(-1)
			return jobq.Result{Disposition: jobq.Done, Outcome: "processed"}
		}, jobq.RunnerOptions{Workers: 4, Poll: 5 * time.Millisecond})
		defer r.Stop(ctx)

		// A logical clock orders the calls and returns of all senders.
		var clock atomic.Int64
		type span struct{ called, returned int64 }
		spans := map[string]span{}
		var wg sync.WaitGroup
		for g := range senders {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					id := fmt.Sprintf("s%d-%02d", g, i)
					called := clock.Add(1)
					isNew, err := s.Enqueue(ctx, job(id, key))
					returned := clock.Add(1)
					if !assert.NoError(t, err, id) || !assert.True(t, isNew, id) {
						return
					}
					r.Wake()
					mu.Lock()
					spans[id] = span{called, returned}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Len(t, spans, senders*each)
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(ran) >= senders*each
		}, 30*time.Second, 5*time.Millisecond, "every delivery runs")
		mu.Lock()
		defer mu.Unlock()
		pos := map[string]int{}
		for i, id := range ran {
			pos[id] = i
		}
		for id := range spans {
			assert.Equal(t, 1, runs[id], "%s runs exactly once", id)
		}
		assert.Len(t, ran, senders*each, "nothing runs that was not enqueued, nothing twice")
		assert.Zero(t, overlaps.Load(), "the session never runs two deliveries at once")
		bad := 0
		for a, sa := range spans {
			for b, sb := range spans {
				if sa.returned < sb.called && pos[a] > pos[b] {
					if bad++; bad <= 5 {
						t.Errorf("%s was acknowledged before %s was received, yet ran after it", a, b)
					}
				}
			}
		}
		if s.Postgres() {
			assert.GreaterOrEqual(t, maxInFlight.Load(), int64(2), "PostgreSQL's batches commit concurrently")
		} else {
			assert.Equal(t, int64(1), maxInFlight.Load(), "SQLite commits one batch at a time")
		}
	})
}

// TestLaterCommittedLowerSeqRuns: on PostgreSQL a delivery's sequence
// number is drawn when its row is inserted, and concurrent batches commit
// in any order, so a row with a lower number can become visible after a
// higher one of its session has run. The workers take a session's oldest
// pending row, whatever ran before (no cursor), so that row runs when it
// commits: not lost, not blocked. The row is written by hand in a
// transaction held open while the later one is queued and run.
func TestLaterCommittedLowerSeqRuns(t *testing.T) {
	s := open(t, jobqtest.PostgresURL(t))
	ctx := context.Background()
	var mu sync.Mutex
	var ran []string
	r := jobq.NewRunner(s, func(_ context.Context, c *jobq.Claim) jobq.Result {
		mu.Lock()
		ran = append(ran, c.ID)
		mu.Unlock()
		return jobq.Result{Disposition: jobq.Done, Outcome: "processed"}
	}, jobq.RunnerOptions{Workers: 2, Poll: 5 * time.Millisecond})
	defer r.Stop(ctx)
	ranNow := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ran...)
	}

	tx, err := s.DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	now := time.Now().UnixMilli()
	var early int64
	require.NoError(t, tx.QueryRowContext(ctx, `INSERT INTO bazinga_deliveries
		(delivery_id, session_key, event, payload, received_ms, state, run_after_ms)
		VALUES ('early', 'o/r#1', 'issue_comment', '{}', $1, 'pending', $1) RETURNING seq`, now).Scan(&early))

	_, err = s.Enqueue(ctx, job("late", "o/r#1"))
	require.NoError(t, err)
	r.Wake()
	require.Eventually(t, func() bool { return len(ranNow()) == 1 }, 10*time.Second, 5*time.Millisecond)
	var late int64
	require.NoError(t, s.DB().QueryRowContext(ctx, `SELECT seq FROM bazinga_deliveries WHERE delivery_id = 'late'`).Scan(&late))
	require.Less(t, early, late, "the uncommitted row drew the lower number")

	require.NoError(t, tx.Commit())
	r.Wake()
	require.Eventually(t, func() bool { return len(ranNow()) == 2 }, 10*time.Second, 5*time.Millisecond, "the row committed late runs")
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, []string{"late", "early"}, ranNow(), "each runs once")
}
