package queuee2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/jobq"
)

// BenchmarkReplicaThroughput: deliveries processed per second by 1, 2 and 3
// `bazinga serve` replicas on one PostgreSQL, when the work waits on GitHub
// rather than on the CPU, as it does in production (a GitHub write takes a
// few hundred milliseconds). The fake GitHub holds every comment write
// 200 ms; each delivery is a "/bazinga help" on one of 50 sessions (the
// bot checks the author's permission, reads the thread and posts its
// reply), and each replica runs 2 workers, so that the three replicas' work
// fits the 2 CPUs the benchmark was run on. The deliveries are posted
// first, round robin over the replicas; the clock runs until the queue is
// drained. On I/O-bound work the throughput should grow with the replicas.
//
//	BAZINGA_TEST_DATABASE_URL=postgres://… go test ./internal/queuee2e/ -run '^$' -bench BenchmarkReplicaThroughput -benchtime 120x -count 3
func BenchmarkReplicaThroughput(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("replicas-%d", n), func(b *testing.B) {
			cl := startCluster(b, n, 200*time.Millisecond, "BAZINGA_WORKERS=2")
			dbURL, fake, sessions, h, replicas := cl.dbURL, cl.fake, cl.sessions, cl.h, cl.replicas
			st, err := jobq.Open(context.Background(), dbURL)
			require.NoError(b, err)
			defer st.Close()
			client := &http.Client{Timeout: 10 * time.Second}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			work := make(chan int, b.N)
			for i := 0; i < b.N; i++ {
				work <- i
			}
			close(work)
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range work {
						se := sessions[i%len(sessions)]
						did := fmt.Sprintf("s%d-%05d", n, i)
						if !h.postEvent(client, replicas[i%n].addr, did, "issue_comment", commentDelivery(se.repo, se.issue, fake.InstallationID(), 300_000+i)) {
							b.Errorf("delivery %s not acknowledged", did)
						}
					}
				}()
			}
			wg.Wait()
			require.Eventually(b, func() bool {
				s, err := st.Stats(context.Background())
				return err == nil && s.Pending == 0
			}, 10*time.Minute, 20*time.Millisecond)
			took := time.Since(start)
			b.StopTimer()
			for _, r := range replicas {
				r.stop(b)
			}
			answered := 0
			for _, se := range sessions {
				answered += len(fake.Repo(se.repo).Comments(se.issue))
			}
			require.Equal(b, b.N, answered, "every delivery answered once")
			b.ReportMetric(float64(b.N)/took.Seconds(), "deliveries/s")
		})
	}
}
