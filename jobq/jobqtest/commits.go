package jobqtest

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/jobq"
)

// Commits records a Store's group commits (jobq.Store.ObserveCommits) and
// reports where the acknowledgements' time went, as benchmark metrics.
type Commits struct {
	mu       sync.Mutex
	batches  int
	jobs     int
	queued   []time.Duration // one per job
	took     []time.Duration // one per job: its batch's commit
	inFlight int             // the most batches committing at once
}

// Observe is the function to give ObserveCommits.
func (c *Commits) Observe(st jobq.CommitStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches++
	c.jobs += st.Jobs
	c.queued = append(c.queued, st.Queued...)
	for range st.Jobs {
		c.took = append(c.took, st.Took)
	}
	c.inFlight = max(c.inFlight, st.InFlight)
}

// Report adds the metrics to b: per job, the p50 and p99 of the wait for a
// committer (queued) and of its batch's commit; the jobs per commit; the
// most commits in flight at once.
func (c *Commits) Report(b *testing.B) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batches == 0 {
		return
	}
	pct := func(d []time.Duration, p int) float64 {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[len(s)*p/100].Microseconds())
	}
	b.ReportMetric(pct(c.queued, 50), "queued-p50-µs")
	b.ReportMetric(pct(c.queued, 99), "queued-p99-µs")
	b.ReportMetric(pct(c.took, 50), "commit-p50-µs")
	b.ReportMetric(pct(c.took, 99), "commit-p99-µs")
	b.ReportMetric(float64(c.jobs)/float64(c.batches), "jobs/commit")
	b.ReportMetric(float64(c.inFlight), "max-in-flight")
}
