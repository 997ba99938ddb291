package pipeline

import (
	"fmt"
	"slices"
	"strings"
)

// A group leaves the session only through an explicit decision that names
// it (issue 23): a pm `drop` naming a group that waits on the pm, a merge,
// or a human (a closed PR, feedback that sends an unstarted plan back). A pm
// result is LLM text: a typo, an unknown id, a repeated id or a decision
// that leaves a waiting group out is not a decision about that group. Such a
// result is refused whole, told to the pm with every problem named, and
// changes nothing; the groups that waited keep waiting.

// Abandonment records the decision that took a group out of the session
// unmerged.
type Abandonment struct {
	// Step is the pm step whose `drop` named the group.
	Step string `json:"step,omitempty"`
	// By is the human who closed the group's PR (or "a human" when the
	// front-end did not say who).
	By string `json:"by,omitempty"`
}

// decisionProblems checks a pm decision (a CONTINUE, or a plan made while
// groups exist) against the session before anything of it is applied. It
// returns every problem, in the order of the decision, or nil.
func (r *reconciler) decisionProblems(st *Step, d continueDecision) []string {
	s := &r.s
	var problems []string
	added := map[string]bool{}
	for _, a := range d.added {
		added[strings.TrimSpace(a.ID)] = true
	}
	waiting := func(g *Group) bool { return g.Wait == WaitPM && g.Next == nil && !g.Stage.Finished() }
	seen := map[string]string{} // id → "groups" or "drop"
	mention := func(list, id string) bool {
		if id == "" {
			problems = append(problems, fmt.Sprintf("%s has an empty id", list))
			return false
		}
		if prev, dup := seen[id]; dup {
			if prev == list {
				problems = append(problems, fmt.Sprintf("%s names %q twice", list, id))
			} else {
				problems = append(problems, fmt.Sprintf("%q is under both groups and drop", id))
			}
			return false
		}
		seen[id] = list
		return true
	}
	for _, id := range d.named {
		if !mention("groups", id) {
			continue
		}
		g := s.Group(id)
		switch {
		case g == nil && added[id]:
			problems = append(problems, fmt.Sprintf("groups names %q both by id and in full", id))
		case g == nil:
			problems = append(problems, fmt.Sprintf("groups names %q, which is no group of this session%s", id, r.didYouMean(id)))
		case g.Stage == StageAbandoned:
			problems = append(problems, fmt.Sprintf("groups names %q, which was given up; add a new group for its work", id))
		}
	}
	for _, id := range d.dropped {
		if !mention("drop", id) {
			continue
		}
		g := s.Group(id)
		switch {
		case g == nil:
			problems = append(problems, fmt.Sprintf("drop names %q, which is no group of this session%s", id, r.didYouMean(id)))
		case !waiting(g):
			problems = append(problems, fmt.Sprintf("drop names %q, which does not wait on your decision (it is %s); only a waiting group can be dropped", id, g.Stage))
		}
	}
	var keys []string
	for k := range d.feedback {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the message never depends on map order
	for _, k := range keys {
		id := strings.TrimSpace(k)
		if s.Group(id) == nil && !added[id] {
			problems = append(problems, fmt.Sprintf("feedback is for %q, which is no group of this session%s", k, r.didYouMean(id)))
		} else if seen[id] == "drop" {
			problems = append(problems, fmt.Sprintf("feedback is for %q, which you drop", id))
		}
	}
	// Every group that waited on this pm step must be decided: continued by
	// name or dropped. Leaving one out decides nothing about it.
	for _, id := range r.waitingOn(st) {
		if _, ok := seen[id]; !ok {
			problems = append(problems, fmt.Sprintf("group %s waits on your decision and is neither under groups nor under drop", id))
		}
	}
	return problems
}

// didYouMean suggests the group a mistyped id most likely meant.
func (r *reconciler) didYouMean(id string) string {
	for _, g := range r.s.Groups {
		if strings.EqualFold(g.ID, id) || strings.EqualFold(strings.Trim(g.ID, "-_ "), strings.Trim(id, "-_ ")) {
			return fmt.Sprintf(" (did you mean %q?)", g.ID)
		}
	}
	return ""
}

// refuseDecision sends a pm decision back with its problems; the groups and
// the notes stay as they were.
func (r *reconciler) refuseDecision(st *Step, problems []string) string {
	r.returnNotes(st)
	r.report("pm step %s: decision refused, nothing changed: %s", st.ID, strings.Join(problems, "; "))
	waiting := r.waitingOn(st)
	hint := `send {"groups": ["A", {"id": "D", "task": "…"}], "feedback": {"A": "…"}, "drop": ["C"]}`
	if len(waiting) > 0 {
		hint += fmt.Sprintf(`, deciding every waiting group (%s): continue it under "groups" (with "feedback") or give it up under "drop"`,
			strings.Join(waiting, ", "))
	}
	r.want(&r.s.Lead, nil, StepSpec{Role: RolePM, Purpose: st.Purpose, From: st.ID,
		Feedback: "Your decision was not applied, and nothing changed: " + strings.Join(problems, "; ") + ". Correct it and " + hint + "."})
	return "refused: " + strings.Join(problems, "; ")
}
