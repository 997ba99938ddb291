package pipeline

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

// harness drives a session through Reconcile and checks the liveness
// invariant after every call: the one shared helper every test goes through.
type harness struct {
	t       testing.TB
	cfg     Config
	s       Session
	now     time.Time
	actions []Action // of the last reconcile
	all     []Action
}

func newHarness(t testing.TB, cfg Config) *harness {
	return &harness{t: t, cfg: cfg, now: t0}
}

// reconcile runs one Reconcile and asserts the invariant and determinism.
func (h *harness) reconcile(events ...Event) []Action {
	h.t.Helper()
	s2, acts := Reconcile(h.s, events, h.now, h.cfg)
	if err := checkTransition(transition{before: h.s, events: events, now: h.now, cfg: h.cfg, after: s2, acts: acts}); err != nil {
		b, _ := json.MarshalIndent(s2, "", "  ")
		h.t.Fatalf("promise broken: %v\nevents: %+v\nsession: %s", err, events, b)
	}
	h.s = s2
	h.actions = acts
	h.all = append(h.all, acts...)
	return acts
}

// assertLive is the shared invariant check.
func assertLive(t testing.TB, s Session, cfg Config) {
	t.Helper()
	if err := CheckLiveness(s, cfg); err != nil {
		b, _ := json.MarshalIndent(s, "", "  ")
		t.Fatalf("liveness invariant broken: %v\nsession: %s", err, b)
	}
}

func (h *harness) start(requirements string) {
	h.t.Helper()
	h.reconcile(Started("s1", requirements, "main"))
}

// inFlight returns the single in-flight step of a group ("_" for the lead).
func (h *harness) inFlight(group string) Step {
	h.t.Helper()
	for _, st := range h.s.Steps {
		if st.Group == group && st.State == StepInFlight {
			return st
		}
	}
	h.t.Fatalf("group %s has no step in flight", group)
	return Step{}
}

func (h *harness) maybeInFlight(group string) (Step, bool) {
	for _, st := range h.s.Steps {
		if st.Group == group && st.State == StepInFlight {
			return st, true
		}
	}
	return Step{}, false
}

// report sends a result for the group's step in flight and returns it.
func (h *harness) report(group string, status Status, handoff string, summary ...string) Step {
	h.t.Helper()
	st := h.inFlight(group)
	var raw json.RawMessage
	if handoff != "" {
		raw = json.RawMessage(handoff)
	}
	h.reconcile(StepResult(h.s.ID, st.ID, Result{Status: status, Summary: summary, Handoff: raw}))
	return *h.s.Step(st.ID)
}

func (h *harness) group(id string) Group {
	h.t.Helper()
	g := h.s.Group(id)
	require.NotNil(h.t, g, "group %s", id)
	return *g
}

func (h *harness) dispatched() []Action {
	var out []Action
	for _, a := range h.actions {
		if a.Kind == ActionDispatch {
			out = append(out, a)
		}
	}
	return out
}

func (h *harness) notices() []Action {
	var out []Action
	for _, a := range h.actions {
		if a.Kind == ActionNotify {
			out = append(out, a)
		}
	}
	return out
}

func planJSON(groups ...PlanGroup) string {
	b, _ := json.Marshal(map[string]any{"plan": Plan{Mode: "parallel", Groups: groups, SuccessCriteria: []string{"it works"}}})
	return string(b)
}

func pg(id string, phase int, deps ...string) PlanGroup {
	return PlanGroup{ID: id, Name: "group " + id, Task: "do " + id, Phase: phase, DependsOn: deps}
}

// plan starts a session and answers the planning step with the groups.
func (h *harness) plan(groups ...PlanGroup) {
	h.t.Helper()
	h.start("build the thing")
	h.report(LeadGroup, StatusPlanningComplete, planJSON(groups...), "planned")
}

// through drives a group from its current step along a path of statuses.
func (h *harness) through(group string, statuses ...Status) {
	h.t.Helper()
	for _, st := range statuses {
		h.report(group, st, "", fmt.Sprintf("%s done", st))
	}
}

// allStatuses lists every status in order, aliases last.
func allStatuses() []Status {
	return slices.Clone(statusEnum.values[1:])
}
