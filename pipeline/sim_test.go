package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The simulator plays whole sessions against Reconcile with random agents,
// humans and infrastructure, and checks what must always hold.

type simStats struct {
	sessions, steps, reconciles int
	outcomes                    map[string]int
	maxSteps                    int
}

type simulator struct {
	rng      *rand.Rand
	cfg      Config
	s        Session
	now      time.Time
	commands int // human commands issued, bounded so sessions end
	added    int // groups the pm added mid-session
	dispatch map[string]bool
	merged   map[string]int
	stepsRun int
	recs     int
	silent   map[string]bool // steps that will never report
	quiet    bool            // benchmarks: skip the per-call checks
	// wire, when set, receives every reconcile's events, session and
	// actions as JSON (TestWireGoldenSimulated).
	wire io.Writer
	cov  *coverage // what the session reached (nil: not recorded)
	// The code of each group as humans see it: a version that every
	// implementation result moves on, the head commit the executor reported,
	// and the version each reviewer's standing approval was for.
	version  map[string]int
	head     map[string]string
	approved map[string]map[string]int
	// reviewed is the version of each group's code the tech lead last
	// approved for merging (issue 28: only reviewed code merges).
	reviewed map[string]int
	// ci is the last required-checks report the engine accepted for each
	// group, with the code version it was about.
	ci map[string]simCI
	// The session's temperament: how often agents make progress, whether the
	// pm is unable to produce a usable result, how often merges fail.
	progress  int // in 12ths
	lazyPM    bool
	mergeFail int // in 20ths
	// costRng draws what steps cost and the cost limits, apart from rng so
	// that the sessions' other choices stay as they were before costs.
	costRng *rand.Rand
	// pushRng draws humans' pushes to group branches and merges that find
	// the branch moved (issue 28), apart from rng for the same reason.
	pushRng *rand.Rand
	pushes  int
	// hostileRng draws the pm's malformed decisions (issue 23).
	hostileRng *rand.Rand
	// findRng draws review findings (issue 26); hardReviews makes a
	// session's reviewers find HIGH issues often.
	findRng     *rand.Rand
	hardReviews bool
	// late are steps that will report after they stopped being in flight
	// (timed out, cancelled by a retry or a stop): their usage still counts.
	late map[string]bool
}

func simConfig(rng *rand.Rand) Config {
	cfg := DefaultConfig()
	cfg.MaxParallel = 1 + rng.IntN(4)
	cfg.QA = rng.IntN(4) != 0
	if rng.IntN(5) == 0 {
		cfg.Merge.RequiredApprovals = 1
	}
	if rng.IntN(6) == 0 {
		cfg.Limits.InvestigationIterations = 0
	}
	// The baseline (issue 13): mostly the default pause, sometimes accept or off.
	switch rng.IntN(6) {
	case 0:
		cfg.Tests.Baseline = BaselineAccept
	case 1:
		cfg.Tests.Baseline = BaselineOff
	}
	switch rng.IntN(16) {
	case 0:
		// Generous limits: with the defaults the review limit sends a group to
		// the pm before its 4th merge failure can.
		cfg.Limits = Limits{DeveloperIterations: 10, QAAttempts: 8, ReviewAttempts: 8, InvestigationIterations: 2, StepAttempts: 3}
	case 1, 2, 3, 4:
		// Other limits, so that each threshold is reached in its turn.
		l := &cfg.Limits
		l.DeveloperIterations = 2 + rng.IntN(5)
		l.QAAttempts = 1 + rng.IntN(4)
		l.ReviewAttempts = 1 + rng.IntN(5)
		l.StepAttempts = 1 + rng.IntN(3)
		if l.InvestigationIterations > 0 {
			l.InvestigationIterations = 1 + rng.IntN(5)
		}
	}
	return cfg
}

func newSimulator(seed uint64) *simulator {
	rng := rand.New(rand.NewPCG(seed, seed*7919+1))
	sim := &simulator{rng: rng, cfg: simConfig(rng), now: t0, dispatch: map[string]bool{}, merged: map[string]int{},
		silent: map[string]bool{}, progress: 8, mergeFail: 5,
		version: map[string]int{}, head: map[string]string{}, approved: map[string]map[string]int{}, ci: map[string]simCI{},
		reviewed: map[string]int{}}
	switch rng.IntN(10) {
	case 0:
		sim.progress = 2 // hard work: agents rarely finish
		sim.mergeFail = 14
	case 1:
		sim.progress = 5
	}
	if sim.cfg.Limits.ReviewAttempts == 8 {
		sim.mergeFail = 16
	}
	sim.lazyPM = rng.IntN(30) == 0
	sim.costRng = rand.New(rand.NewPCG(seed^0xc057, seed*31+7))
	sim.pushRng = rand.New(rand.NewPCG(seed^0x9e5d, seed*131+3))
	sim.hostileRng = rand.New(rand.NewPCG(seed^0x5105, seed*17+11))
	sim.findRng = rand.New(rand.NewPCG(seed^0xf1d5, seed*37+5))
	// A reviewer who keeps finding HIGH issues, in some sessions: its
	// findings reach the human checkpoint (issue 26).
	sim.hardReviews = sim.findRng.IntN(4) == 0
	sim.late = map[string]bool{}
	switch sim.costRng.IntN(16) {
	case 0:
		sim.cfg.Limits.SessionCostUSD = float64(2 + sim.costRng.IntN(6))
	case 1:
		sim.cfg.Limits.StepCostUSD = 1.5
	case 2:
		sim.cfg.Limits.SessionCostUSD = float64(3 + sim.costRng.IntN(8))
		sim.cfg.Limits.StepCostUSD = 2.5
	}
	// Checkpoints (issue 13) by the seed, so the random stream of sessions
	// without them stays as it was.
	switch seed % 5 {
	case 1:
		sim.cfg.Checkpoints = []CheckpointKind{CheckpointPlan}
	case 2:
		sim.cfg.Checkpoints = []CheckpointKind{CheckpointPhase}
	case 3:
		sim.cfg.Checkpoints = []CheckpointKind{CheckpointPlan, CheckpointPhase}
	}
	return sim
}

// usage invents what an agent step reported: mostly a priced step, now and
// then tokens only (codex), an expensive step, or a malformed report the
// engine must refuse. Harness steps (merge, validate) report nothing.
func (sim *simulator) usage(st Step) (*Usage, string) {
	if st.Role == RoleMerge || st.Role == RoleValidate {
		return nil, ""
	}
	r := sim.costRng
	run := ""
	if r.IntN(2) == 0 {
		run = fmt.Sprintf("https://github.com/o/r/actions/runs/%d", 1000+st.N)
	}
	if r.IntN(10) == 0 {
		return nil, run
	}
	u := Usage{Steps: 1, Priced: 1, InputTokens: int64(100 + r.IntN(50_000)), OutputTokens: int64(10 + r.IntN(8_000)),
		CacheReadTokens: int64(r.IntN(100_000))}
	switch r.IntN(30) {
	case 0, 1, 2, 3:
		u.Priced = 0 // tokens only
	case 5:
		u.CostMicros = int64(1_000_000 + r.IntN(2_000_000)) // an expensive step
	case 7:
		u.InputTokens = -5 // malformed: refused with a report
		u.CostMicros = 10_000
	default:
		u.CostMicros = int64(5_000 + r.IntN(600_000))
	}
	return &u, run
}

// bound is the step bound derived from the limits: per group and pm round,
// each kind of step is capped by its limit (investigations restart only after
// an implementation step), every step may be attempted step_attempts times,
// pm rounds are capped between merges, and each human command may restart
// all of it.
func (sim *simulator) bound() int {
	l := sim.cfg.Limits
	inv := max(l.InvestigationIterations, 1)
	perGroup := l.DeveloperIterations + l.QAAttempts + 2*l.ReviewAttempts + inv*(l.DeveloperIterations+1) + 4
	perGroup *= l.StepAttempts
	groups := len(sim.s.Groups) + 1
	pmLimit := 2*l.DeveloperIterations + groups
	pmSteps := (groups + 1) * (pmLimit + 1) * l.StepAttempts
	return (pmSteps*groups*perGroup + pmSteps) * (sim.commands + 1)
}

func (sim *simulator) reconcile(t *testing.T, seed uint64, events []Event) []Action {
	t.Helper()
	before := sim.s
	s2, acts := Reconcile(sim.s, events, sim.now, sim.cfg)
	sim.recs++
	if sim.wire != nil {
		for _, v := range []any{events, s2, acts} {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			sim.wire.Write(append(b, '\n'))
		}
	}
	if sim.quiet {
		sim.s = s2
		return acts
	}
	tr := transition{before: before, events: events, now: sim.now, cfg: sim.cfg, after: s2, acts: acts}
	if err := checkTransition(tr); err != nil {
		b, _ := json.MarshalIndent(s2, "", " ")
		t.Fatalf("seed %d: %v\nevents: %+v\nsession: %s", seed, err, events, b)
	}
	if sim.cov != nil {
		sim.cov.record(tr)
	}
	// Determinism: the same inputs give byte-identical outputs.
	if sim.recs%41 == 0 {
		s3, acts3 := Reconcile(before, events, sim.now, sim.cfg)
		if !reflect.DeepEqual(s2, s3) || !reflect.DeepEqual(acts, acts3) {
			t.Fatalf("seed %d: Reconcile is not deterministic", seed)
		}
	}
	sim.checkApprovals(t, seed, before, events, s2, acts)
	resumed := false
	for _, ev := range events {
		if ev.Kind == EventCommand && (ev.Command.Kind == CommandResume || ev.Command.Kind == CommandRetry && ev.Command.Group == "") {
			resumed = true
		}
	}
	for _, a := range acts {
		if a.Kind != ActionDispatch {
			continue
		}
		if sim.dispatch[a.Step] && !resumed {
			t.Fatalf("seed %d: step %s dispatched twice (events %+v)", seed, a.Step, events)
		}
		sim.dispatch[a.Step] = true
		if st := s2.Step(a.Step); st != nil && st.Role == RoleMerge {
			if g := before.Group(st.Group); g != nil && g.Stage == StageMerged {
				t.Fatalf("seed %d: merge dispatched for merged group %s", seed, g.ID)
			}
		}
	}
	for _, g := range s2.Groups {
		if g.Stage == StageMerged {
			if old := before.Group(g.ID); old == nil || old.Stage != StageMerged {
				sim.merged[g.ID]++
				if sim.merged[g.ID] > 1 {
					t.Fatalf("seed %d: group %s merged twice", seed, g.ID)
				}
			}
		}
	}
	sim.s = s2
	return acts
}

// checkApprovals replays the call's events against the simulator's own view
// of each group's code and fails when a merge is dispatched without enough
// approvals of the code as it is now.
func (sim *simulator) checkApprovals(t *testing.T, seed uint64, before Session, events []Event, after Session, acts []Action) {
	t.Helper()
	applied := map[string]bool{}
	for _, ev := range events {
		switch ev.Kind {
		case EventStepResult:
			st := before.Step(ev.Step)
			if st == nil || st.State != StepInFlight || applied[st.ID] || st.Group == LeadGroup {
				continue
			}
			applied[st.ID] = true
			done := after.Step(st.ID)
			commit := ev.Commit
			if done != nil && done.Result != nil && done.Result.Status == StatusMergeHeadMoved && commit == "" {
				commit = ParseHeadMove(done.Result.Handoff).Head // the move, said in the handoff only
			}
			if st.Role.IsImplementer() || commit != "" && commit != sim.head[st.Group] {
				sim.version[st.Group]++
				sim.head[st.Group] = commit
			}
			if done != nil && done.Result != nil {
				i := lookupIndex(st.Role, done.Result.Status, st.Purpose, Worst(done.Result.Findings))
				switch {
				case i >= 0 && RoutingTable[i].Route == RouteApproved,
					i >= 0 && RoutingTable[i].Route == RouteFindingsNoted && st.Role == RoleTechLead:
					sim.reviewed[st.Group] = sim.version[st.Group]
				case i >= 0 && RoutingTable[i].Route == RouteMergeAgain:
					// The harness's own merge of the reviewed head with the base.
					sim.reviewed[st.Group] = sim.version[st.Group]
				}
			}
		case EventCommand:
			// A human accepting a tech lead's HIGH findings approves the
			// code it reviewed (issue 26).
			cp := before.Checkpoint
			if cp == nil || cp.Kind != CheckpointFindings {
				continue
			}
			if p := after.passed(cp.ID); p != nil && p.ApprovedBy != "" {
				if g := before.Group(cp.Group); g != nil && g.Held != nil && g.Held.Role == RoleTechLead {
					sim.reviewed[cp.Group] = sim.version[cp.Group]
				}
			}
		case EventPushed:
			g := before.Group(ev.Group)
			if g == nil || g.Stage.Finished() || g.InFlight != "" || ev.Commit == "" || ev.Commit == sim.head[ev.Group] {
				continue
			}
			sim.version[ev.Group]++
			sim.head[ev.Group] = ev.Commit
		case EventChecks:
			g := before.Group(ev.Group)
			if g == nil || g.Stage.Finished() || ev.Commit == "" || sim.head[ev.Group] != "" && ev.Commit != sim.head[ev.Group] {
				continue
			}
			sim.ci[ev.Group] = simCI{version: sim.version[ev.Group], state: ev.Checks.State}
		case EventHumanReview:
			if sim.approved[ev.Group] == nil {
				sim.approved[ev.Group] = map[string]int{}
			}
			delete(sim.approved[ev.Group], ev.Actor)
			stale := ev.Commit != "" && sim.head[ev.Group] != "" && ev.Commit != sim.head[ev.Group]
			if ev.Review == ReviewApproved && !stale {
				sim.approved[ev.Group][ev.Actor] = sim.version[ev.Group]
			}
		}
	}
	for _, a := range acts {
		if a.Kind != ActionDispatch || a.Role != RoleMerge {
			continue
		}
		n := 0
		for _, v := range sim.approved[a.Group] {
			if v == sim.version[a.Group] {
				n++
			}
		}
		resent := false // a resume sends a step in flight again: no new decision
		if old := before.Step(a.Step); old != nil && old.State == StepInFlight {
			resent = true
		}
		if ci, ok := sim.ci[a.Group]; ok && !resent && ci.version == sim.version[a.Group] && ci.state != ChecksPassed {
			t.Fatalf("seed %d: merge of %s dispatched while the required checks of its current code are %s (engine: head %q, checks %+v; events %+v)",
				seed, a.Group, ci.state, after.Group(a.Group).Head, after.Group(a.Group).RequiredChecks, events)
		}
		if !resent && sim.reviewed[a.Group] != sim.version[a.Group] {
			t.Fatalf("seed %d: merge of %s dispatched for code version %d, but the tech lead approved version %d (engine: head %q, reviewed %q; events %+v)",
				seed, a.Group, sim.version[a.Group], sim.reviewed[a.Group], after.Group(a.Group).Head, after.Group(a.Group).ReviewedHead, events)
		}
		if n < sim.cfg.Merge.RequiredApprovals {
			t.Fatalf("seed %d: merge of %s dispatched with %d approval(s) of its current code, %d required (engine: %v)",
				seed, a.Group, n, sim.cfg.Merge.RequiredApprovals, after.Group(a.Group).Approvals)
		}
	}
}

func (sim *simulator) pick(list []Status) Status { return list[sim.rng.IntN(len(list))] }

// outcome invents a result for a step the way a random agent might.
func (sim *simulator) outcome(st Step) (Result, bool) {
	rng := sim.rng
	if rng.IntN(25) == 0 {
		return Result{}, false // crashed: no result
	}
	if rng.IntN(30) == 0 {
		// malformed or disallowed
		if rng.IntN(2) == 0 {
			return Result{Status: StatusUnknown, Summary: []string{"malformed output"}}, true
		}
		return Result{Status: allStatuses()[rng.IntN(len(allStatuses()))]}, true
	}
	switch st.Role {
	case RolePM:
		return sim.pmOutcome(st), true
	case RoleMerge:
		switch n := rng.IntN(20); {
		case n >= sim.mergeFail:
			return Result{Status: StatusMergeSuccess, Summary: []string{"merged"}}, true
		case n%3 == 0:
			return Result{Status: StatusMergeConflict, Handoff: json.RawMessage(`{"conflicts":["a.go"]}`)}, true
		case n%3 == 1 || rng.IntN(3) != 0:
			if rng.IntN(6) == 0 {
				// A strict base: the tested merge became the group's head.
				return Result{Status: StatusMergeUpdated, Summary: []string{"brought up to date"}}, true
			}
			return Result{Status: StatusMergeTestFailure}, true
		default:
			return Result{Status: StatusMergeBlocked}, true
		}
	case RoleValidate:
		if rng.IntN(4) == 0 {
			return Result{Status: StatusReject, Summary: []string{"criterion 1 lacks evidence"}}, true
		}
		return Result{Status: StatusAccept}, true
	}
	switch {
	case st.Group == LeadGroup && st.Role == RoleInvestigator && rng.IntN(3) == 0:
		// The pm's investigator asks for a diagnostic: it needs an implementation slot.
		return Result{Status: StatusNeedDeveloperDiagnostic, Handoff: json.RawMessage(`{"diagnostic_request":"profile it"}`)}, true
	case st.Role == RoleTechLead && sim.progress < 8 && rng.IntN(3) == 0:
		// A demanding tech lead in a hard session.
		return Result{Status: StatusChangesRequested, Summary: []string{"not yet"}}, true
	}
	allowed := AllowedStatuses(st.Role)
	// Lean towards progress so most sessions finish, but visit every status.
	progress := map[Role][]Status{
		RoleDeveloper:    {StatusReadyForQA, StatusReadyForReview},
		RoleSenior:       {StatusReadyForQA, StatusReadyForReview},
		RoleRequirements: {StatusReadyForReview},
		RoleQA:           {StatusPass},
		RoleTechLead:     {StatusApproved, StatusApprovedWithNotes, StatusUnblockingGuidance},
		RoleInvestigator: {StatusRootCauseFound},
	}[st.Role]
	if rng.IntN(12) < sim.progress && len(progress) > 0 {
		return Result{Status: sim.pick(progress), Summary: []string{"progress"}}, true
	}
	s := sim.pick(allowed)
	if rng.IntN(10) == 0 {
		// Aliases as agents write them.
		switch s {
		case StatusPartial:
			s = StatusIncomplete
		case StatusNeedDeveloperDiagnostic:
			s = StatusWaitingForResults
		case StatusEscalateSenior:
			s = StatusFailEscalate
		}
	}
	res := Result{Status: s, Summary: []string{"line one", "line two"}}
	if st.Role == RoleQA && s == StatusFail {
		res.Handoff = json.RawMessage(fmt.Sprintf(`{"challenge_level":%d}`, 1+rng.IntN(5)))
	}
	return res, true
}

// findings adds review findings to a reviewer's result now and then (issue
// 26), from their own random stream so the sessions without findings play
// as they did: LOW and MEDIUM notes, a HIGH that a revision fixes or not,
// now and then more findings than a result keeps or ones an agent got wrong.
func (sim *simulator) findings(st Step, res *Result) {
	rng := sim.findRng
	if !st.Role.Reviews() || rng.IntN(4) != 0 {
		return
	}
	n := 1 + rng.IntN(3)
	if rng.IntN(40) == 0 {
		n = MaxFindings + 3
	}
	for i := range n {
		sev := Severities()[rng.IntN(3)]
		f := Finding{Severity: sev, File: fmt.Sprintf("pkg/f%d.go", rng.IntN(40)), Line: 1 + rng.IntN(200), Problem: fmt.Sprintf("problem %d", rng.IntN(100)), Fix: "fix it"}
		switch rng.IntN(30) {
		case 0:
			f.File = "../outside.go" // dropped by the engine
		case 1:
			// A forged severity, spelled as the integer enums printed
			// one, so the wire golden digests stay comparable.
			f.Severity = Severity("invalid(9)")
		}
		if i == 0 && sim.hardReviews && rng.IntN(2) == 0 {
			f.Severity = SeverityHigh
		}
		res.Findings = append(res.Findings, f)
	}
}

func (sim *simulator) pmOutcome(st Step) Result {
	rng := sim.rng
	s := &sim.s
	if sim.lazyPM && rng.IntN(10) != 0 {
		// A pm that cannot produce a usable result: the no-progress limit ends it.
		return Result{Status: StatusUnknown, Summary: []string{"malformed output"}}
	}
	if len(s.Groups) == 0 {
		switch n := rng.IntN(20); {
		case n == 0:
			return Result{Status: StatusNeedsClarification, Handoff: json.RawMessage(`{"question":"which db?","options":["pg","sqlite"],"fallback":"sqlite"}`)}
		case n == 1:
			return Result{Status: StatusPlanningComplete, Handoff: json.RawMessage(`{"plan":{"groups":[{"id":"A","task":"x","depends_on":["A"]}]}}`)}
		case n == 2:
			return Result{Status: StatusInvestigationNeeded}
		case n == 3 && rng.IntN(3) == 0:
			return Result{Status: StatusInvestigationOnly, Summary: []string{"the answer is 42"}}
		}
		return Result{Status: StatusPlanningComplete, Handoff: sim.randomPlan()}
	}
	if sim.allFinished() && rng.IntN(5) != 0 {
		return Result{Status: StatusBazinga, Handoff: json.RawMessage(`{"criteria":[{"criterion":"it works","met":true,"evidence":"ok"}]}`)}
	}
	switch rng.IntN(40) {
	case 0, 1, 2:
		return Result{Status: StatusNeedsClarification, Handoff: json.RawMessage(`{"question":"more?","fallback":"no"}`)}
	case 3, 4, 9, 10:
		// The pm wants to understand something first; its investigator may ask
		// for a developer diagnostic at session level.
		return Result{Status: StatusInvestigationNeeded, Summary: []string{"why is B slow?"}}
	case 5:
		return Result{Status: StatusInvestigationOnly, Summary: []string{"nothing to build"}}
	case 6:
		return Result{Status: StatusBazinga}
	case 7, 8:
		return Result{Status: StatusContinue} // bare: decides nothing
	}
	// CONTINUE: name the groups that wait, sometimes drop one, sometimes add
	// one. Now and then the pm writes what an LLM might (issue 23): a waiting
	// group left out, a typo, an unknown or repeated id, an empty list, only
	// a new group, feedback for no group. None of it may lose a group.
	var named []any
	var dropped []string
	feedback := map[string]string{}
	for _, n := range st.Notes {
		if n.Group == "" {
			continue
		}
		switch rng.IntN(8) {
		case 0:
			// left out: the decision is refused, the group keeps waiting
		case 1:
			dropped = append(dropped, n.Group)
		default:
			named = append(named, n.Group)
			feedback[n.Group] = "smaller steps"
		}
	}
	if sim.added < 2 && len(s.Groups) < 12 && rng.IntN(6) == 0 {
		sim.added++
		named = append(named, PlanGroup{ID: fmt.Sprintf("X%d", sim.added), Task: "extra work"})
	}
	h := map[string]any{"groups": named, "drop": dropped, "feedback": feedback}
	if hr := sim.hostileRng; hr.IntN(4) == 0 {
		any0 := s.Groups[hr.IntN(len(s.Groups))].ID
		switch hr.IntN(8) {
		case 0: // a typo of a group's id
			h["groups"] = append(named, strings.ToLower(any0)+"_")
		case 1: // an id from another session
			h["groups"] = append(named, "Q9")
		case 2: // the same id twice
			h["groups"] = append(named, any0, any0)
		case 3: // empty lists
			h = map[string]any{"groups": []string{}, "drop": []string{}}
		case 4: // only a new group
			sim.added++
			h = map[string]any{"groups": []any{PlanGroup{ID: fmt.Sprintf("X%d", sim.added), Task: "extra"}}}
		case 5: // drop what is not there, or not waiting
			h["drop"] = append(dropped, []string{"ZZ", any0}[hr.IntN(2)])
		case 6: // feedback for no group
			feedback["a-"] = "faster"
		case 7: // continue and drop the same group
			h["groups"], h["drop"] = append(named, any0), append(dropped, any0)
		}
	}
	b, _ := json.Marshal(h)
	return Result{Status: StatusContinue, Handoff: b}
}

func (sim *simulator) allFinished() bool {
	for _, g := range sim.s.Groups {
		if !g.Stage.Finished() {
			return false
		}
	}
	return true
}

func (sim *simulator) randomPlan() json.RawMessage {
	rng := sim.rng
	n := 1 + rng.IntN(8)
	phases := 1 + rng.IntN(3)
	research := 5
	if rng.IntN(10) == 0 {
		research = 2 // a research-heavy plan meets the research cap
	}
	var groups []PlanGroup
	for i := 0; i < n; i++ {
		g := PlanGroup{ID: string(rune('A' + i)), Task: "task", Phase: 1 + rng.IntN(phases)}
		if rng.IntN(research) == 0 {
			g.Type = "research"
		}
		if rng.IntN(4) == 0 {
			g.Tier = "senior"
		}
		// Sizes (issue 23), mostly given, drawn apart from rng.
		g.Size = []string{"", "S", "M", "L", "XL", "m"}[sim.hostileRng.IntN(6)]
		for _, prev := range groups {
			if prev.Phase <= g.Phase && rng.IntN(4) == 0 {
				g.DependsOn = append(g.DependsOn, prev.ID)
			}
		}
		groups = append(groups, g)
	}
	mode := "parallel"
	if n == 1 && rng.IntN(2) == 0 {
		mode = "simple"
	}
	b, _ := json.Marshal(map[string]any{"plan": Plan{Mode: mode, Groups: groups, SuccessCriteria: []string{"it works"}}})
	return b
}

// simCI is a required-checks report as the simulator saw it accepted.
type simCI struct {
	version int
	state   CheckState
}

// ciEvents are what CI reports between steps: a group's head checks go
// pending, then pass or fail; now and then a report is about an older head.
func (sim *simulator) ciEvents() []Event {
	rng := sim.rng
	s := &sim.s
	var evs []Event
	for _, g := range s.Groups {
		if !g.Started || g.Stage.Finished() {
			continue
		}
		if g.Wait != WaitChecks && rng.IntN(8) != 0 {
			continue
		}
		head := g.Head
		if head == "" || rng.IntN(20) == 0 {
			head = "ci-" + g.ID
		}
		state := ChecksPassed
		switch rng.IntN(6) {
		case 0, 1:
			state = ChecksPending
		case 2:
			state = ChecksFailed
		}
		rep := ChecksReport{State: state, Required: []string{"ci/test"}}
		switch state {
		case ChecksPending:
			rep.Pending = []string{"ci/test"}
		case ChecksFailed:
			rep.Failed, rep.Summary = []string{"ci/test"}, "1 test failed"
		}
		evs = append(evs, ChecksEvent(s.ID, g.ID, head, rep))
	}
	return evs
}

// humanEvents are the random things humans do between steps.
func (sim *simulator) humanEvents() []Event {
	rng := sim.rng
	s := &sim.s
	var evs []Event
	for _, g := range s.Groups {
		if g.Wait == WaitHumanReview && rng.IntN(2) == 0 {
			ev := Event{Kind: EventHumanReview, Session: s.ID, Group: g.ID, Actor: "alice", Review: ReviewApproved, Commit: g.Head}
			switch rng.IntN(8) {
			case 0:
				ev.Review = ReviewChangesRequested
				ev.Body = "rename it"
			case 1:
				ev.Review = ReviewDismissed
			case 2:
				ev.Commit = "c0" // a review of an older head
			}
			evs = append(evs, ev)
		}
		if g.Started && !g.Stage.Finished() && g.Wait != WaitHumanReview && rng.IntN(80) == 0 {
			// An early approval: the fix that follows makes it stale.
			evs = append(evs, Event{Kind: EventHumanReview, Session: s.ID, Group: g.ID, Actor: "erin", Review: ReviewApproved, Commit: g.Head})
		}
	}
	if cl := s.Clarification; cl != nil && rng.IntN(2) == 0 {
		// Bound to the question its author saw (issue 23); now and then
		// written before it was asked, or from a terminal (unbound).
		c := Command{Kind: CommandAnswer, Text: "postgres", Question: cl.Step}
		switch sim.hostileRng.IntN(6) {
		case 0:
			c.Question = NoQuestion
		case 1:
			c.Question = ""
		}
		evs = append(evs, CommandEvent(s.ID, "alice", c))
	}
	if cp := s.Checkpoint; cp != nil && rng.IntN(2) == 0 {
		// A human at a checkpoint: mostly approves what they saw.
		c := Command{Kind: CommandApprove, Checkpoint: cp.ID}
		switch n := rng.IntN(12); {
		case n <= 4 && cp.Kind == CheckpointFindings && sim.findRng.IntN(2) == 0:
			c = Command{Kind: CommandAnswer, Text: "guard it with a mutex", Checkpoint: cp.ID}
		case n == 0:
			c.Checkpoint = "" // a terminal approves what it shows
		case n == 1:
			// Written before this checkpoint was shown: a revised plan's, or none.
			c.Checkpoint = NoCheckpoint
			if k := len(s.PassedCheckpoints); k > 0 {
				c.Checkpoint = s.PassedCheckpoints[k-1].ID
			}
		case n <= 3 && cp.Kind == CheckpointPlan && s.PlanRev < 4:
			c = Command{Kind: CommandAnswer, Text: "smaller groups, please", Checkpoint: cp.ID}
			if k := len(s.PassedCheckpoints); k > 0 && sim.hostileRng.IntN(3) == 0 {
				// Feedback about the plan before, delivered late (issue 23).
				c.Checkpoint = s.PassedCheckpoints[k-1].ID
			}
		case n == 2 && cp.Kind == CheckpointPhase:
			c = Command{Kind: CommandAnswer, Text: "check the API first", Checkpoint: cp.ID}
		case n == 4:
			c = Command{Kind: CommandResume, Checkpoint: cp.ID}
		}
		evs = append(evs, CommandEvent(s.ID, "alice", c))
	}
	if st := s.Step(s.Lead.InFlight); st != nil && (st.Purpose == PurposeFinalCheck || st.Role == RoleValidate) &&
		sim.commands < 8 && rng.IntN(12) == 0 {
		// A human pauses while the session is about to finish: the pause must
		// hold against BAZINGA and against a rejected validation.
		sim.commands++
		evs = append(evs, CommandEvent(s.ID, "bob", Command{Kind: CommandPause, Text: "label removed by bob"}))
	}
	if sim.commands < 8 && rng.IntN(50) == 0 {
		sim.commands++
		var c Command
		switch rng.IntN(7) {
		case 0:
			c = Command{Kind: CommandStop}
		case 1:
			c = Command{Kind: CommandPause, Text: "label removed by bob"}
		case 2, 3:
			c = Command{Kind: CommandResume}
			if sim.hostileRng.IntN(3) == 0 {
				// A local runner restarted, and a human resumed too (issue 23).
				evs = append(evs, CommandEvent(s.ID, "local", Command{Kind: CommandResume, Restart: true}))
			}
		case 4:
			c = Command{Kind: CommandRetry}
			if len(s.Groups) > 0 && rng.IntN(4) != 0 {
				c.Group = s.Groups[rng.IntN(len(s.Groups))].ID
			}
		default:
			c = Command{Kind: CommandAnswer, Text: "use sqlite"}
		}
		evs = append(evs, CommandEvent(s.ID, "bob", c))
	}
	for _, g := range s.Groups {
		// A human pushes to a group branch while nothing of the group runs
		// (issue 28): often while it waits to merge.
		odds := 120
		if g.Next != nil && g.Next.Role == RoleMerge {
			odds = 8
		}
		if g.Started && !g.Stage.Finished() && g.InFlight == "" && sim.pushRng.IntN(odds) == 0 {
			sim.pushes++
			evs = append(evs, Pushed(s.ID, g.ID, fmt.Sprintf("push%d", sim.pushes), "dave"))
		}
	}
	if len(s.Groups) > 0 && rng.IntN(150) == 0 {
		g := s.Groups[rng.IntN(len(s.Groups))]
		if g.Started {
			// Closed by a human; now and then merged by one.
			evs = append(evs, Event{Kind: EventPRClosed, Session: s.ID, Group: g.ID, Actor: "carol", Merged: rng.IntN(4) == 0})
		}
	}
	return evs
}

func playSession(t *testing.T, seed uint64, stats *simStats, cov *coverage) {
	sim := newSimulator(seed)
	sim.cov = cov
	sim.play(t, seed)
	stats.sessions++
	stats.steps += len(sim.s.Steps)
	stats.reconciles += sim.recs
	stats.maxSteps = max(stats.maxSteps, len(sim.s.Steps))
	if sim.s.Status == SessionPaused || sim.s.Status == SessionFailed || sim.s.Status == SessionStopped {
		if sim.s.Reason == "" {
			t.Fatalf("seed %d: session %s without a reason", seed, sim.s.Status)
		}
	}
	stats.outcomes[sim.s.Status.String()]++
}

// play runs one whole session: until it ends, or pauses and no human resumes it.
func (sim *simulator) play(t *testing.T, seed uint64) {
	rng := sim.rng
	sim.reconcile(t, seed, []Event{Started("sim", "build it", "main")})
	for {
		reporting := false // a paused session's steps in flight still report
		for _, st := range sim.s.InFlight() {
			reporting = reporting || !sim.silent[st.ID]
		}
		if sim.s.Status.Terminal() || sim.s.Status == SessionPaused && !reporting {
			// Humans sometimes pick a paused or stopped session up again.
			if sim.s.Status != SessionDone && sim.commands < 8 && rng.IntN(3) == 0 {
				sim.commands++
				sim.now = sim.now.Add(time.Minute)
				if strings.Contains(sim.s.Reason, "limits.session_cost_usd") && sim.costRng.IntN(5) != 0 {
					// A human raises the budget before resuming (else the
					// resume pauses again at once).
					sim.cfg.Limits.SessionCostUSD *= 2
				}
				sim.reconcile(t, seed, []Event{CommandEvent(sim.s.ID, "dave", Command{Kind: CommandResume})})
				continue
			}
			break
		}
		if n := len(sim.s.Steps); n > sim.bound() {
			t.Fatalf("seed %d: %d steps exceed the bound %d", seed, n, sim.bound())
		}
		sim.now = sim.now.Add(time.Duration(1+rng.IntN(10)) * time.Minute)
		events := append(sim.humanEvents(), sim.ciEvents()...)
		events = append(events, sim.lateEvents()...)
		inflight := sim.s.InFlight()
		var live []Step
		for _, st := range inflight {
			if !sim.silent[st.ID] {
				live = append(live, st)
			}
		}
		if len(live) == 0 {
			// Only silent steps (or a human wait): let time pass.
			sim.now = sim.now.Add(sim.cfg.Agent.Timeout.D()*4 + 3*StepGrace + sim.cfg.ClarificationTimeout.D())
			events = append(events, Tick(sim.s.ID))
			sim.reconcile(t, seed, events)
			continue
		}
		// Report one to three steps at once, in random order.
		rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
		k := 1 + rng.IntN(min(3, len(live)))
		for _, st := range live[:k] {
			sim.stepsRun++
			if rng.IntN(40) == 0 {
				sim.silent[st.ID] = true // reports only once it timed out, or never
				if sim.hostileRng.IntN(2) == 0 {
					sim.late[st.ID] = true
				}
				continue
			}
			res, ok := sim.outcome(st)
			sim.findings(st, &res)
			use, run := sim.usage(st)
			if !ok {
				ev := StepFailure(sim.s.ID, st.ID, "runner crashed")
				ev.Usage, ev.RunURL = use, run
				events = append(events, ev)
				continue
			}
			ev := StepResult(sim.s.ID, st.ID, res)
			ev.Usage, ev.RunURL = use, run
			if sim.hostileRng.IntN(3) != 0 {
				// The job's own timings (issue 23); now and then nonsense.
				ev.StartedAt, ev.EndedAt = st.DispatchedAt.Add(time.Minute), sim.now
				if sim.hostileRng.IntN(10) == 0 {
					ev.StartedAt, ev.EndedAt = sim.now, st.DispatchedAt
				}
			}
			ev.Harness = sim.harnessReport(st)
			if st.Role.IsImplementer() && st.Group != LeadGroup && rng.IntN(2) == 0 {
				ev.Commit = fmt.Sprintf("c%d", st.N) // the executor knows the new head
			}
			if res.Status == StatusMergeUpdated && rng.IntN(4) != 0 {
				ev.Commit = fmt.Sprintf("m%d", st.N) // the tested merge pushed to the group branch
			}
			if st.Role == RoleMerge && sim.pushRng.IntN(12) == 0 {
				// Someone pushed after review: the merge lands nothing and
				// says where the branch is (on the event, or only in the handoff).
				m := HeadMove{Reviewed: sim.head[st.Group], Head: fmt.Sprintf("h%d", st.N), PushedBy: "erin"}
				ev.Result = &Result{Status: StatusMergeHeadMoved, Summary: []string{m.Sentence(st.Group)}, Handoff: m.Handoff()}
				ev.Commit = ""
				if sim.pushRng.IntN(4) != 0 {
					ev.Commit = m.Head
				}
			}
			events = append(events, ev)
			if rng.IntN(20) == 0 {
				events = append(events, ev) // duplicate delivery
			}
		}
		if rng.IntN(50) == 0 {
			events = append(events, StepResult("other", "other/A/developer/1", Result{Status: StatusPartial}))
		}
		sim.reconcile(t, seed, events)
	}
}

// simSessions is how many sessions TestSimulatedSessions plays: 3,000 by
// default (about 5 s of CPU), 1,000 under -short, or BAZINGA_SIM_SESSIONS
// (BENCHMARKS.md quotes a run of 10,000).
func simSessions(t *testing.T) int {
	if v := os.Getenv("BAZINGA_SIM_SESSIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("BAZINGA_SIM_SESSIONS=%q: want a positive number of sessions", v)
		}
		return n
	}
	if testing.Short() {
		return 1000
	}
	return 3000
}

func TestSimulatedSessions(t *testing.T) {
	n := simSessions(t)
	stats := &simStats{outcomes: map[string]int{}}
	cov := newCoverage()
	for seed := uint64(1); seed <= uint64(n); seed++ {
		playSession(t, seed, stats, cov)
	}
	var keys []string
	for k := range stats.outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, stats.outcomes[k]))
	}
	t.Logf("simulated %d sessions, %d steps (max %d in one session), %d reconciles; outcomes: %s\ncoverage:%s",
		stats.sessions, stats.steps, stats.maxSteps, stats.reconciles, strings.Join(parts, " "), cov.report())
	for _, want := range []string{"done", "failed", "stopped", "paused"} {
		if stats.outcomes[want] == 0 {
			t.Errorf("no simulated session ended %s", want)
		}
	}
	if miss := cov.missing(); len(miss) > 0 {
		t.Errorf("the simulation never reached:\n  %s", strings.Join(miss, "\n  "))
	}
}

// harnessReport is what the harness reports beside a result: a baseline
// (green, red with names, red without) for a step asked for one, now and
// then for one that was not, and check outcomes for implementers.
func (sim *simulator) harnessReport(st Step) *HarnessReport {
	rng := sim.rng
	var h HarnessReport
	if st.Baseline || rng.IntN(30) == 0 {
		switch rng.IntN(4) {
		case 0, 1:
			h.Baseline = &Baseline{Commit: fmt.Sprintf("base%d", st.N), Green: true}
		case 2:
			h.Baseline = &Baseline{Commit: fmt.Sprintf("base%d", st.N), Identity: IdentityGoTestJSON, Failed: []string{"p.TestA"}}
		default:
			h.Baseline = &Baseline{Commit: fmt.Sprintf("base%d", st.N), Unnamed: true}
		}
	}
	if st.Role.IsImplementer() && rng.IntN(3) == 0 {
		h.Checks = []CheckOutcome{{Name: "lint", Required: true, Passed: rng.IntN(2) == 0, Tail: "out"}}
	}
	if h.Baseline == nil && h.Checks == nil {
		return nil
	}
	return &h
}

// lateEvents are results of steps no longer in flight (issue 23): a step
// that timed out reports after all, and now and then a job a retry or a
// stop cancelled ran on and reports, with what it cost.
func (sim *simulator) lateEvents() []Event {
	var evs []Event
	for _, st := range sim.s.Steps {
		if st.State == StepInFlight || st.Usage != nil || sim.late[st.ID+"/done"] {
			continue
		}
		if !sim.late[st.ID] && st.State != StepCancelled {
			continue
		}
		sim.late[st.ID+"/done"] = true // decided once
		if !sim.late[st.ID] && sim.hostileRng.IntN(4) != 0 {
			continue // the cancelled job did stop
		}
		use, run := sim.usage(st)
		if use == nil {
			continue
		}
		ev := StepResult(sim.s.ID, st.ID, Result{Status: StatusPartial, Summary: []string{"late"}})
		if sim.hostileRng.IntN(2) == 0 {
			ev = StepFailure(sim.s.ID, st.ID, "the runner gave up")
		}
		ev.Usage, ev.RunURL = use, run
		evs = append(evs, ev)
	}
	return evs
}
