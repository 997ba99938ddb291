package pipeline

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// permute calls f with every order of a.
func permute(a []int, f func([]int)) {
	var rec func(int)
	rec = func(i int) {
		if i == len(a) {
			f(a)
			return
		}
		for j := i; j < len(a); j++ {
			a[i], a[j] = a[j], a[i]
			rec(i + 1)
			a[i], a[j] = a[j], a[i]
		}
	}
	rec(0)
}

// TestBestListSchedule measures what no scheduler of this kind can beat:
// for every plan of at most 7 groups among TestMakespan's, the best list
// schedule over all priority orders, knowing every duration, against the
// same lower bound (BENCHMARKS.md quotes it). It takes a while, so it runs
// only with BAZINGA_BEST_LIST=1.
func TestBestListSchedule(t *testing.T) {
	if os.Getenv("BAZINGA_BEST_LIST") == "" {
		t.Skip("set BAZINGA_BEST_LIST=1 to measure the best list schedules")
	}
	for _, k := range []int{4, 2} {
		rng := rand.New(rand.NewPCG(uint64(map[int]int{4: 1, 2: 2}[k]), uint64(k)))
		var sum, sumO float64
		var rs []float64
		cnt := 0
		for i := 0; i < 1000; i++ {
			_, lb := makespanRun(t, rng, k, nil)
			plan, dur := lastPlan, lastDur
			if len(plan) > 7 {
				continue
			}
			best := math.Inf(1)
			idx := make([]int, len(plan))
			for j := range idx {
				idx[j] = j
			}
			permute(idx, func(o []int) { best = min(best, orderedMakespan(plan, dur, k, slices.Clone(o))) })
			sum += best / lb
			sumO += lastOracle / lb
			rs = append(rs, best/lb)
			cnt++
		}
		slices.Sort(rs)
		t.Logf("k=%d plans<=7 groups: %d; best list schedule / bound mean %.4f p99 %.4f; oracle mean %.4f", k, cnt, sum/float64(cnt), rs[int(math.Ceil(0.99*float64(cnt)))-1], sumO/float64(cnt))
	}
}
