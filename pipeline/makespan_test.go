package pipeline

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scheduling: which ready group gets a free implementation slot.

func TestReadyGroupsStartLongestChainFirst(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxParallel = 1
	h := newHarness(t, cfg)
	// B heads the chain B → C → D; A and E stand alone.
	h.plan(pg("A", 1), pg("B", 1), pg("C", 1, "B"), pg("D", 1, "C"), pg("E", 1))
	assert.Equal(t, RoleDeveloper, h.inFlight("B").Role, "B has the most work behind it")
	h.through("B", StatusReadyForQA)
	_, aRuns := h.maybeInFlight("A")
	assert.True(t, aRuns, "A and E tie; A comes first in the plan")
	assert.Equal(t, WaitCap, h.group("E").Wait)

	// A group of an earlier phase has the whole later phase behind it.
	h = newHarness(t, cfg)
	h.plan(pg("A", 1), pg("B", 1), pg("C", 2), pg("X", 1, "B"))
	assert.Equal(t, RoleDeveloper, h.inFlight("B").Role, "B → X → C is the longest chain")
}

// lastGlobal is the whole-plan bound of the last makespanRun, lastOracle
// the makespan a scheduler that knew every duration reached on it; lastPlan
// and lastDur are its plan and durations.
var (
	lastGlobal, lastOracle float64
	lastPlan               []PlanGroup
	lastDur                map[string]float64
)

// makespanRun plays one random plan with every step succeeding at once,
// each step taking a random time per role, and returns the makespan (from
// the plan to the last merge) and its lower bound, in minutes.
//
// With sizes, the pm gives each group a size from an estimate of its whole
// work that is off by up to ±50% (drawn from est, apart from rng so that
// the plans and durations are the same with and without sizes), and each
// step's result carries the job's start and end as a front-end reports them.
func makespanRun(t testing.TB, rng *rand.Rand, k int, est *rand.Rand) (makespan, bound float64) {
	n := 2 + rng.IntN(11)
	phases := 1 + rng.IntN(3)
	var plan []PlanGroup
	for i := 0; i < n; i++ {
		g := PlanGroup{ID: fmt.Sprintf("G%02d", i), Task: "task", Phase: 1 + rng.IntN(phases)}
		if rng.IntN(5) == 0 {
			g.Type = "research"
		}
		if rng.IntN(4) == 0 {
			g.Tier = "senior"
		}
		for _, prev := range plan {
			if prev.Phase <= g.Phase && rng.IntN(4) == 0 {
				g.DependsOn = append(g.DependsOn, prev.ID)
			}
		}
		plan = append(plan, g)
	}
	slices.SortStableFunc(plan, func(a, b PlanGroup) int { return a.Phase - b.Phase })
	uniform := func(lo, hi float64) float64 { return lo + rng.Float64()*(hi-lo) }
	// Durations per group and role, drawn before the run.
	dur := map[string]float64{}
	for _, g := range plan {
		dur[g.ID+"/impl"] = uniform(20, 120)
		dur[g.ID+"/qa"] = uniform(5, 30)
		dur[g.ID+"/review"] = uniform(5, 20)
		dur[g.ID+"/merge"] = uniform(2, 10)
		if g.Type == "research" {
			dur[g.ID+"/qa"] = 0
		}
	}

	// Lower bounds. Phases run one after another (a group starts only when
	// every earlier phase merged), so the usual lower bound of list scheduling —
	// max(critical path, implementation work / k) — holds for each phase and
	// the phases' bounds add up. The merge lane adds one more: merges go one
	// at a time, after the quickest group's work before its merge. global is
	// the formula applied to the whole plan at once (looser).
	work := func(id string) float64 {
		return dur[id+"/impl"] + dur[id+"/qa"] + dur[id+"/review"] + dur[id+"/merge"]
	}
	var global float64
	{
		finish := map[string]float64{}
		var impl float64
		for _, g := range plan { // sorted by phase; dependencies come earlier
			start := 0.0
			for _, o := range plan {
				if o.Phase < g.Phase || slices.Contains(g.DependsOn, o.ID) {
					start = max(start, finish[o.ID])
				}
			}
			finish[g.ID] = start + work(g.ID)
			impl += dur[g.ID+"/impl"]
			global = max(global, finish[g.ID])
		}
		global = max(global, impl/float64(k))
	}
	for p := 1; p <= phases; p++ {
		finish := map[string]float64{}
		var impl, research, merges, critical float64
		firstMerge, minTail, minResearchTail := math.Inf(1), math.Inf(1), 0.0
		for _, g := range plan {
			if g.Phase != p {
				continue
			}
			start := 0.0
			for _, d := range g.DependsOn {
				start = max(start, finish[d]) // 0 for an earlier phase's group
			}
			finish[g.ID] = start + work(g.ID)
			critical = max(critical, finish[g.ID])
			impl += dur[g.ID+"/impl"]
			tail := work(g.ID) - dur[g.ID+"/impl"]
			minTail = min(minTail, tail)
			if g.Type == "research" {
				research += dur[g.ID+"/impl"]
				if minResearchTail == 0 || tail < minResearchTail {
					minResearchTail = tail
				}
			}
			merges += dur[g.ID+"/merge"]
			firstMerge = min(firstMerge, work(g.ID)-dur[g.ID+"/merge"])
		}
		if merges > 0 {
			// The last implementation step to end ends no earlier than the
			// work shared by the slots; its group's QA, review and merge follow.
			bound += max(critical, impl/float64(k)+minTail, research/float64(min(k, MaxResearchInFlight))+minResearchTail,
				firstMerge+merges)
		}
	}
	lastGlobal = global
	lastOracle = oracleMakespan(plan, dur, k)
	lastPlan, lastDur = plan, dur
	if est != nil {
		for i := range plan {
			plan[i].Size = sizeOf(work(plan[i].ID) * (0.5 + est.Float64()))
		}
	}

	cfg := DefaultConfig()
	cfg.MaxParallel = k
	cfg.Agent.Timeout = Duration(48 * time.Hour) // simulated steps never time out
	cfg.Tests.Timeout = Duration(48 * time.Hour)
	at := func(m float64) time.Time { return t0.Add(time.Duration(m * float64(time.Minute))) }
	s, _ := Reconcile(Session{}, []Event{Started("mk", "build", "main")}, t0, cfg)
	planJSON, _ := json.Marshal(map[string]any{"plan": Plan{Mode: "parallel", Groups: plan}})
	s, _ = Reconcile(s, []Event{StepResult("mk", s.Lead.InFlight, Result{Status: StatusPlanningComplete, Handoff: planJSON})}, t0, cfg)
	ends := map[string]float64{}   // step → when it reports
	starts := map[string]float64{} // step → when it started
	now := 0.0
	for {
		allMerged := true
		for _, g := range s.Groups {
			allMerged = allMerged && g.Stage == StageMerged
		}
		if allMerged {
			return now, bound
		}
		next := math.Inf(1)
		for _, st := range s.InFlight() {
			if st.Group == LeadGroup {
				continue // the pm is not timed
			}
			if _, ok := ends[st.ID]; !ok {
				key := map[Role]string{RoleDeveloper: "impl", RoleSenior: "impl", RoleRequirements: "impl",
					RoleQA: "qa", RoleTechLead: "review", RoleMerge: "merge"}[st.Role]
				require.NotEmpty(t, key, "unexpected step %s", st.ID)
				ends[st.ID] = now + dur[st.Group+"/"+key]
				starts[st.ID] = now
			}
			next = min(next, ends[st.ID])
		}
		require.False(t, math.IsInf(next, 1), "nothing in flight before every group merged: %s", s.Status)
		now = next
		var evs []Event
		for _, st := range s.InFlight() {
			if end, ok := ends[st.ID]; !ok || end > now || st.Group == LeadGroup {
				continue
			}
			status := map[Role]Status{RoleDeveloper: StatusReadyForQA, RoleSenior: StatusReadyForQA,
				RoleRequirements: StatusReadyForReview, RoleQA: StatusPass, RoleTechLead: StatusApproved,
				RoleMerge: StatusMergeSuccess}[st.Role]
			ev := StepResult("mk", st.ID, Result{Status: status})
			if est != nil {
				ev.StartedAt, ev.EndedAt = at(starts[st.ID]), at(ends[st.ID])
			}
			evs = append(evs, ev)
		}
		s2, acts := Reconcile(s, evs, at(now), cfg)
		if err := checkTransition(transition{before: s, events: evs, now: at(now), cfg: cfg, after: s2, acts: acts}); err != nil {
			t.Fatal(err)
		}
		s = s2
	}
}

type makespanStats struct {
	median, p90, p99, mean, worst float64
	// the same against the whole-plan bound
	gMedian, gP90, gP99, gMean float64
	// the scheduler that knows every duration, against the phase bound
	oMedian, oP90, oP99, oMean float64
	// the makespan against that scheduler's
	rMedian, rP90, rP99, rMean float64
}

// sizeOf is the size a pm gives a group it estimates at m minutes of work:
// the nearest size on SizeGuide's doubling scale.
func sizeOf(m float64) string {
	switch {
	case m < 30*math.Sqrt2:
		return "S"
	case m < 60*math.Sqrt2:
		return "M"
	case m < 120*math.Sqrt2:
		return "L"
	}
	return "XL"
}

func makespanRatios(t testing.TB, k, plans int, seed uint64, sized bool) makespanStats {
	rng := rand.New(rand.NewPCG(seed, uint64(k)))
	var est *rand.Rand
	if sized {
		est = rand.New(rand.NewPCG(seed^0x5123, uint64(k)))
	}
	ratios := make([]float64, plans)
	global := make([]float64, plans)
	oracle := make([]float64, plans)
	relative := make([]float64, plans)
	for i := range ratios {
		m, lb := makespanRun(t, rng, k, est)
		require.GreaterOrEqual(t, m, lb-1e-9, "plan %d: the makespan beats its lower bound", i)
		require.GreaterOrEqual(t, lb, lastGlobal-1e-9, "plan %d: the phase bound is below the whole-plan bound", i)
		ratios[i] = m / lb
		global[i] = m / lastGlobal
		oracle[i] = lastOracle / lb
		relative[i] = m / lastOracle
		require.GreaterOrEqual(t, lastOracle, lb-1e-9, "plan %d: the reference beats the lower bound", i)
	}
	mean := func(xs []float64) float64 {
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	}
	at := func(xs []float64, q float64) float64 { return xs[int(math.Ceil(q*float64(len(xs))))-1] }
	slices.Sort(ratios)
	slices.Sort(global)
	slices.Sort(oracle)
	slices.Sort(relative)
	return makespanStats{median: at(ratios, 0.5), p90: at(ratios, 0.9), p99: at(ratios, 0.99), mean: mean(ratios), worst: ratios[plans-1],
		gMedian: at(global, 0.5), gP90: at(global, 0.9), gP99: at(global, 0.99), gMean: mean(global),
		oMedian: at(oracle, 0.5), oP90: at(oracle, 0.9), oP99: at(oracle, 0.99), oMean: mean(oracle),
		rMedian: at(relative, 0.5), rP90: at(relative, 0.9), rP99: at(relative, 0.99), rMean: mean(relative)}
}

// TestMakespan measures how close the schedule comes to the lower bound
// over random plans, at k = 4 and k = 2 (BENCHMARKS.md quotes it). The runs
// are seeded, so the figures are exact; the assertions keep the longest-chain
// order ahead of plan order (k=4 p99 1.095, k=2 mean 1.062 on these plans),
// and the sizes the pm estimates (issue 23) ahead of counting groups.
func TestMakespan(t *testing.T) {
	plans := 1000
	if testing.Short() {
		plans = 500
	}
	k4 := makespanRatios(t, 4, plans, 1, false)
	k2 := makespanRatios(t, 2, plans, 2, false)
	k4s := makespanRatios(t, 4, plans, 1, true)
	k2s := makespanRatios(t, 2, plans, 2, true)
	if !testing.Short() {
		assert.LessOrEqual(t, k4.p99, 1.075, "k=4 p99")
		assert.LessOrEqual(t, k2.mean, 1.05, "k=2 mean")
		// Sizes off by up to ±50% (issue 23): k=4 p99 1.045, k=2 mean 1.042.
		assert.LessOrEqual(t, k4s.p99, 1.046, "k=4 p99 with sizes")
		assert.LessOrEqual(t, k2s.mean, 1.043, "k=2 mean with sizes")
		// Against the schedule a scheduler knowing the true durations reaches
		// on the same plan: issue 23's targets.
		assert.LessOrEqual(t, k4s.rP99, 1.03, "k=4 p99 with sizes, against true durations")
		assert.LessOrEqual(t, k2s.rMean, 1.01, "k=2 mean with sizes, against true durations")
	}
	for _, r := range []struct {
		k     int
		sizes bool
		m     makespanStats
	}{{4, false, k4}, {4, true, k4s}, {2, false, k2}, {2, true, k2s}} {
		t.Logf("k=%d sizes=%v, %d random plans: makespan / phase bound: median %.3f p90 %.3f p99 %.3f mean %.3f max %.3f; "+
			"/ whole-plan bound: median %.3f p90 %.3f p99 %.3f mean %.3f; "+
			"a scheduler knowing every duration / phase bound: median %.3f p90 %.3f p99 %.3f mean %.3f; "+
			"makespan / that scheduler's: median %.3f p90 %.3f p99 %.3f mean %.3f",
			r.k, r.sizes, plans, r.m.median, r.m.p90, r.m.p99, r.m.mean, r.m.worst, r.m.gMedian, r.m.gP90, r.m.gP99, r.m.gMean,
			r.m.oMedian, r.m.oP90, r.m.oP99, r.m.oMean, r.m.rMedian, r.m.rP90, r.m.rP99, r.m.rMean)
	}
}

// oracleMakespan schedules the same plan under the engine's rules (phases,
// dependencies, k implementation slots, two research slots, one merge at a
// time, QA and review uncapped) but knowing every duration: ready groups
// start by the longest remaining work behind them in minutes. It is the
// reference that shows how much of the gap to the lower bound comes from
// not knowing how long a group will take.
func oracleMakespan(plan []PlanGroup, dur map[string]float64, k int) float64 {
	n := len(plan)
	work := func(i int) float64 {
		id := plan[i].ID
		return dur[id+"/impl"] + dur[id+"/qa"] + dur[id+"/review"] + dur[id+"/merge"]
	}
	rank := make([]float64, n)
	for i := n - 1; i >= 0; i-- { // plan is sorted by phase; dependents come later
		best := 0.0
		for j := i + 1; j < n; j++ {
			if plan[j].Phase > plan[i].Phase || slices.Contains(plan[j].DependsOn, plan[i].ID) {
				best = max(best, rank[j])
			}
		}
		rank[i] = work(i) + best
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rank[a] > rank[b]:
			return -1
		case rank[a] < rank[b]:
			return 1
		}
		return 0
	})
	return orderedMakespan(plan, dur, k, order)
}

// orderedMakespan plays a plan under the engine's rules (phases,
// dependencies, k implementation slots, two research slots, one merge at a
// time, QA and review uncapped) knowing every duration, starting ready
// groups in the given priority order (a list schedule).
func orderedMakespan(plan []PlanGroup, dur map[string]float64, k int, order []int) float64 {
	const (
		waiting = iota
		implementing
		testing_
		reviewing
		mergeReady
		merging
		merged
	)
	stage := make([]int, len(plan))
	end := make([]float64, len(plan))
	now := 0.0
	for {
		lowest := math.MaxInt
		for i := range plan {
			if stage[i] != merged {
				lowest = min(lowest, plan[i].Phase)
			}
		}
		if lowest == math.MaxInt {
			return now
		}
		impl, research, lane := 0, 0, false
		for i := range plan {
			if stage[i] == implementing {
				impl++
				if plan[i].Type == "research" {
					research++
				}
			}
			lane = lane || stage[i] == merging
		}
		for _, i := range order {
			g := plan[i]
			switch {
			case stage[i] == mergeReady && !lane:
				stage[i], end[i], lane = merging, now+dur[g.ID+"/merge"], true
			case stage[i] == waiting && g.Phase == lowest && impl < k && (g.Type != "research" || research < MaxResearchInFlight):
				ready := true
				for j := range plan {
					if slices.Contains(g.DependsOn, plan[j].ID) && stage[j] != merged {
						ready = false
					}
				}
				if ready {
					stage[i], end[i] = implementing, now+dur[g.ID+"/impl"]
					impl++
					if g.Type == "research" {
						research++
					}
				}
			}
		}
		next := math.Inf(1)
		for i := range plan {
			if stage[i] == implementing || stage[i] == testing_ || stage[i] == reviewing || stage[i] == merging {
				next = min(next, end[i])
			}
		}
		now = next
		for i := range plan {
			if end[i] > now {
				continue
			}
			id := plan[i].ID
			switch stage[i] {
			case implementing:
				stage[i], end[i] = testing_, now+dur[id+"/qa"]
			case testing_:
				stage[i], end[i] = reviewing, now+dur[id+"/review"]
			case reviewing:
				stage[i] = mergeReady
			case merging:
				stage[i] = merged
			}
		}
	}
}
