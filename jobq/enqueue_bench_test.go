package jobq_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/jobq/jobqtest"
)

// BenchmarkEnqueueBurst is the acknowledgement's commit alone, without
// HTTP or workers: an open loop of 500 Enqueues a second (one started every
// 2 ms whether or not the earlier ones returned, as GitHub sends a burst) on
// 50 sessions. Reported: the Enqueue's p50 and p99, and where its time went
// (jobqtest.Commits: the wait for a committer, the commit itself, the batch
// sizes, the commits in flight at once).
//
//	go test ./jobq/ -run '^$' -bench BenchmarkEnqueueBurst -benchtime 2000x -count 5
func BenchmarkEnqueueBurst(b *testing.B) {
	for _, bk := range jobqtest.Backends() {
		b.Run(bk.Name, func(b *testing.B) {
			ctx := context.Background()
			s, err := jobq.Open(ctx, bk.URL(b))
			require.NoError(b, err)
			defer s.Close()
			var rec jobqtest.Commits
			s.ObserveCommits(rec.Observe)
			run := fmt.Sprint(time.Now().UnixNano())
			errs := make(chan error, b.N)
			b.ResetTimer()
			lat := jobqtest.Burst(b.N, func(i int) {
				if _, err := s.Enqueue(ctx, job(fmt.Sprintf("burst-%s-%d", run, i), fmt.Sprintf("o/r#%d", i%50))); err != nil {
					errs <- err
				}
			})
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "ack-p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "ack-p99-µs")
			rec.Report(b)
		})
	}
}
