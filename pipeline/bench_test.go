package pipeline

import (
	"fmt"
	"testing"
	"time"
)

// bigSession builds a running session of 16 groups whose history holds about
// `steps` finished steps, every group with one step in flight. The history
// comes first, numbered as a long-lived session numbers it, so the session
// is one UnmarshalSession accepts (the setup checks it).
func bigSession(tb testing.TB, steps int) Session {
	cfg := DefaultConfig()
	cfg.MaxParallel = 16
	h := newHarness(tb, cfg)
	var groups []PlanGroup
	for i := 0; i < 16; i++ {
		groups = append(groups, pg(fmt.Sprintf("G%02d", i), 1))
	}
	h.plan(groups...)
	s := h.s
	// Earlier rounds of QA failures, one per group in turn, before the steps
	// the plan dispatched: renumber those after the history.
	hist := steps - len(s.Steps)
	renamed := map[string]string{}
	for i := range s.Steps {
		st := &s.Steps[i]
		st.N += hist
		old := st.ID
		st.ID = StepID(s.ID, st.Group, st.Role, st.N)
		renamed[old] = st.ID
	}
	rename := func(id *string) {
		if n, ok := renamed[*id]; ok {
			*id = n
		}
	}
	for i := range s.Steps {
		rename(&s.Steps[i].From)
	}
	for _, t := range append([]*Track{&s.Lead}, func() []*Track {
		var ts []*Track
		for i := range s.Groups {
			ts = append(ts, &s.Groups[i].Track)
		}
		return ts
	}()...) {
		rename(&t.InFlight)
		rename(&t.Last)
		if t.Next != nil {
			rename(&t.Next.From)
		}
	}
	history := make([]Step, 0, hist)
	for i := 0; i < hist; i++ {
		g := s.Groups[i%16]
		n := i + 1
		history = append(history, Step{ID: StepID(s.ID, g.ID, RoleQA, n), Group: g.ID, N: n,
			StepSpec:     StepSpec{Role: RoleQA, Purpose: PurposeTest, Model: "sonnet", Attempt: 1},
			State:        StepDone,
			DispatchedAt: t0, EndedAt: t0,
			Result: &Result{Status: StatusFail, Summary: []string{"2 tests fail", "cache race", "see handoff"}},
			Routed: "developer"})
	}
	s.Steps = append(history, s.Steps...)
	s.StepSeq += hist
	b, err := s.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := UnmarshalSession(b); err != nil {
		tb.Fatalf("the benchmark session is not valid: %v", err)
	}
	assertLive(tb, s, cfg)
	return s
}

func benchReconcile(b *testing.B, steps int) {
	s := bigSession(b, steps)
	cfg := DefaultConfig()
	cfg.MaxParallel = 16
	g := s.Groups[7]
	ev := []Event{StepResult(s.ID, g.InFlight, Result{Status: StatusReadyForQA, Summary: []string{"done"}})}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s2, acts := Reconcile(s, ev, t0.Add(time.Minute), cfg)
		if len(acts) == 0 || s2.Group(g.ID).InFlight == g.InFlight {
			b.Fatal("the result was not routed")
		}
	}
}

// BenchmarkReconcile1k: 16 groups, 1,000 steps, one result routed (target < 1 ms).
func BenchmarkReconcile1k(b *testing.B) { benchReconcile(b, 1000) }

// BenchmarkReconcile10k: the same at 10,000 steps (growth must be linear or better).
func BenchmarkReconcile10k(b *testing.B) { benchReconcile(b, 10000) }

// BenchmarkSimulatedSessions: whole random sessions per second.
func BenchmarkSimulatedSessions(b *testing.B) {
	t := &testing.T{}
	stats := &simStats{outcomes: map[string]int{}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		playSessionQuiet(t, uint64(i+1), stats)
	}
	b.ReportMetric(float64(stats.steps)/float64(b.N), "steps/session")
}

// playSessionQuiet plays a session without the test's per-call checks.
func playSessionQuiet(t *testing.T, seed uint64, stats *simStats) {
	sim := newSimulator(seed)
	sim.quiet = true
	sim.play(t, seed)
	stats.sessions++
	stats.steps += len(sim.s.Steps)
}
