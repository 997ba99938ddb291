package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The pm's handoffs carry the plan and its decisions; the engine reads only
// the parts it routes on and leaves the rest to the next step's prompt.

// PlanGroup is a group as the pm writes it.
type PlanGroup struct {
	ID        string   `json:"id"`
	Name      string   `json:"name,omitempty"`
	Task      string   `json:"task"`
	Type      string   `json:"type,omitempty"`
	Tier      string   `json:"tier,omitempty"`
	Phase     int      `json:"phase,omitempty"`
	DependsOn []string `json:"depends_on,omitempty"`
	// Size is the pm's estimate: S, M, L or XL (SizeGuide).
	Size string `json:"size,omitempty"`
}

// Plan is the pm's PLANNING_COMPLETE handoff.
type Plan struct {
	Mode            string      `json:"mode,omitempty"`
	Groups          []PlanGroup `json:"groups"`
	SuccessCriteria []string    `json:"success_criteria,omitempty"`
}

// ParsePlan reads a PLANNING_COMPLETE handoff: {"plan": {…}}, or the plan's
// fields at the top level, as some agents write it.
func ParsePlan(handoff json.RawMessage) (Plan, error) {
	if len(handoff) == 0 {
		return Plan{}, errNoPlan
	}
	var wrapped struct {
		Plan *Plan `json:"plan"`
	}
	if err := json.Unmarshal(handoff, &wrapped); err != nil {
		return Plan{}, fmt.Errorf("the plan is not valid JSON: %w", err)
	}
	p := wrapped.Plan
	if p == nil {
		p = &Plan{}
		if err := json.Unmarshal(handoff, p); err != nil {
			return Plan{}, fmt.Errorf("the plan is not valid JSON: %w", err)
		}
	}
	if len(p.Groups) == 0 {
		return Plan{}, errors.New("the plan has no groups")
	}
	return *p, nil
}

// buildGroups checks plan groups against the existing ones and returns them as
// Groups. Every problem is named so the pm can fix its plan.
// from is the pm step whose result plans them: each task is referenced
// from it (TextRef), so the stored session holds no task text (issue 27).
func buildGroups(session, from string, existing []Group, add []PlanGroup, defaultPhase int) ([]Group, error) {
	known := map[string]int{} // id → phase
	for _, g := range existing {
		known[g.ID] = g.Phase
	}
	var problems []string
	var out []Group
	for i, pg := range add {
		where := fmt.Sprintf("group %d", i+1)
		if pg.ID != "" {
			where = fmt.Sprintf("group %q", pg.ID)
		}
		if reservedGroupID(pg.ID) {
			problems = append(problems, fmt.Sprintf("%s: id is a role name, which step ids reserve", where))
			continue
		}
		if !ValidGroupID(pg.ID) {
			problems = append(problems, fmt.Sprintf("%s: id must match [A-Za-z0-9_-]{1,32}", where))
			continue
		}
		if _, dup := known[pg.ID]; dup {
			problems = append(problems, fmt.Sprintf("%s: id already used", where))
			continue
		}
		g := Group{ID: pg.ID, Name: strings.TrimSpace(pg.Name), Task: strings.TrimSpace(pg.Task), Phase: pg.Phase}
		if g.Name == "" {
			g.Name = g.ID
		}
		if g.Task == "" {
			problems = append(problems, where+": task is empty")
		} else {
			g.TaskRef = RefOf(g.Task, from)
		}
		if g.Phase == 0 {
			g.Phase = defaultPhase
		}
		if g.Phase < 1 || g.Phase > 100 {
			problems = append(problems, fmt.Sprintf("%s: phase %d out of range 1..100", where, pg.Phase))
		}
		switch strings.ToLower(pg.Type) {
		case "", "implementation":
			g.Type = GroupImplementation
		case "research":
			g.Type = GroupResearch
		default:
			problems = append(problems, fmt.Sprintf("%s: type %q is not implementation or research", where, pg.Type))
		}
		switch strings.ToLower(pg.Tier) {
		case "", "developer":
			g.Tier = TierDeveloper
		case "senior":
			g.Tier = TierSenior
		default:
			problems = append(problems, fmt.Sprintf("%s: tier %q is not developer or senior", where, pg.Tier))
		}
		if size, err := parseSize(pg.Size); err != nil {
			problems = append(problems, where+": "+err.Error())
		} else {
			g.Size = size
		}
		g.DependsOn = dedupe(pg.DependsOn)
		g.Branch = BranchName(session, g.ID)
		known[g.ID] = g.Phase
		out = append(out, g)
	}
	if len(existing)+len(out) > MaxGroups {
		problems = append(problems, fmt.Sprintf("at most %d groups per session", MaxGroups))
	}
	problems = append(problems, groupBudgetProblems(existing, out)...) // issue 27
	// Dependencies: known, not later in phase, no cycles.
	for _, g := range out {
		for _, d := range g.DependsOn {
			phase, ok := known[d]
			switch {
			case d == g.ID:
				problems = append(problems, fmt.Sprintf("group %q depends on itself", g.ID))
			case !ok:
				problems = append(problems, fmt.Sprintf("group %q depends on unknown group %q", g.ID, d))
			case phase > g.Phase:
				problems = append(problems, fmt.Sprintf("group %q (phase %d) depends on %q of a later phase %d", g.ID, g.Phase, d, phase))
			}
		}
	}
	if len(problems) == 0 {
		if cycle := findCycle(existing, out); cycle != "" {
			problems = append(problems, "dependency cycle: "+cycle)
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}

func dedupe(list []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// findCycle returns a dependency cycle as "A → B → A", or "".
func findCycle(existing, added []Group) string {
	deps := map[string][]string{}
	var order []string
	for _, list := range [][]Group{existing, added} {
		for _, g := range list {
			deps[g.ID] = g.DependsOn
			order = append(order, g.ID)
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var visit func(id string) string
	visit = func(id string) string {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range deps[id] {
			switch color[d] {
			case grey:
				start := 0
				for i, s := range stack {
					if s == d {
						start = i
					}
				}
				return strings.Join(append(append([]string(nil), stack[start:]...), d), " → ")
			case white:
				if _, ok := deps[d]; ok {
					if c := visit(d); c != "" {
						return c
					}
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return ""
	}
	for _, id := range order {
		if color[id] == white {
			if c := visit(id); c != "" {
				return c
			}
		}
	}
	return ""
}

// continueHandoff is the pm's CONTINUE handoff: groups named by id or added
// in full, and feedback per group.
type continueHandoff struct {
	Groups   []json.RawMessage `json:"groups"`
	Feedback map[string]string `json:"feedback"`
	// Drop names waiting groups the pm gives up, for a CONTINUE that
	// continues nothing else.
	Drop []string `json:"drop"`
}

// continueDecision is a parsed CONTINUE handoff.
type continueDecision struct {
	named    []string
	added    []PlanGroup
	dropped  []string
	feedback map[string]string
}

// bare says the pm decided nothing: no group named, added or dropped.
func (d continueDecision) bare() bool {
	return len(d.named) == 0 && len(d.added) == 0 && len(d.dropped) == 0
}

func parseContinue(handoff json.RawMessage) (continueDecision, error) {
	var d continueDecision
	if len(handoff) == 0 {
		return d, nil
	}
	var h continueHandoff
	if err := json.Unmarshal(handoff, &h); err != nil {
		return d, fmt.Errorf("CONTINUE handoff is not valid: %w", err)
	}
	for i, raw := range h.Groups {
		var id string
		if json.Unmarshal(raw, &id) == nil {
			d.named = append(d.named, strings.TrimSpace(id))
			continue
		}
		var pg PlanGroup
		if err := json.Unmarshal(raw, &pg); err != nil {
			return continueDecision{}, fmt.Errorf("CONTINUE groups[%d] is neither an id nor a group: %w", i, err)
		}
		d.added = append(d.added, pg)
	}
	for _, id := range h.Drop {
		d.dropped = append(d.dropped, strings.TrimSpace(id))
	}
	d.feedback = h.Feedback
	return d, nil
}

// Clarification handoff of NEEDS_CLARIFICATION.
type clarificationHandoff struct {
	Question string   `json:"question"`
	Options  []string `json:"options"`
	Fallback string   `json:"fallback"`
}

// challengeLevel reads qa's challenge_level (0 when absent).
func challengeLevel(handoff json.RawMessage) int {
	var h struct {
		ChallengeLevel int `json:"challenge_level"`
	}
	if len(handoff) > 0 && json.Unmarshal(handoff, &h) == nil {
		return h.ChallengeLevel
	}
	return 0
}

// handoffField returns a short text form of one field of a handoff, for feedback.
func handoffField(handoff json.RawMessage, field string) string {
	if len(handoff) == 0 {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(handoff, &m) != nil {
		return ""
	}
	raw, ok := m[field]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
