package pipeline

import (
	"fmt"
	"sort"
	"strings"
)

// RenumberSteps gives steps the ids the live session gave them. A front-end
// that rebuilds a session from its log replays results in the order the
// log shows them, which need not be the order they were applied (GitHub's
// timestamps have whole seconds; an Action-only orchestrator may apply a
// later result first): the replay then numbers the steps those results
// started differently. ids maps a step's rebuilt id to its live one (as the
// log's results and run titles name it); each pair must keep its session,
// group and role, and no two steps may end up with one number. Every reference
// to a step (tracks, checkpoints, a clarification, an abandonment) follows,
// and Steps stay in number order.
func RenumberSteps(s Session, ids map[string]string) (Session, error) {
	if len(ids) == 0 {
		return s, nil
	}
	out := s.Clone()
	have := map[string]bool{}
	for _, st := range out.Steps {
		have[st.ID] = true
	}
	keys := make([]string, 0, len(ids))
	for from := range ids {
		keys = append(keys, from)
	}
	sort.Strings(keys)
	final := map[string]string{}
	for _, st := range out.Steps {
		final[st.ID] = st.ID
	}
	for _, from := range keys {
		to := ids[from]
		if !have[from] {
			return s, fmt.Errorf("renumber: no step %s", from)
		}
		fs, fg, fr, _, ok := splitStepID(from)
		ts, tg, tr, _, ok2 := splitStepID(to)
		if !ok || !ok2 || fs != ts || fg != tg || fr != tr {
			return s, fmt.Errorf("renumber: %s and %s are not the same session, group and role", from, to)
		}
		final[from] = to
	}
	// Step numbers count every step of the session: no two may share one.
	seen := map[int]string{}
	for _, st := range out.Steps {
		_, _, _, n, _ := splitStepID(final[st.ID])
		if other, dup := seen[n]; dup {
			return s, fmt.Errorf("renumber: %s and %s would both be step %d", other, st.ID, n)
		}
		seen[n] = st.ID
	}
	rename := func(id string) string {
		if to, ok := final[id]; ok {
			return to
		}
		return id
	}
	for i := range out.Steps {
		st := &out.Steps[i]
		st.ID = rename(st.ID)
		_, _, _, n, _ := splitStepID(st.ID)
		st.N = n
		if n > out.StepSeq {
			out.StepSeq = n
		}
	}
	sort.SliceStable(out.Steps, func(i, j int) bool { return out.Steps[i].N < out.Steps[j].N })
	renameTrack := func(t *Track) {
		t.InFlight = rename(t.InFlight)
		t.Last = rename(t.Last)
	}
	renameTrack(&out.Lead)
	for i := range out.Groups {
		g := &out.Groups[i]
		renameTrack(&g.Track)
		if g.Abandoned != nil {
			g.Abandoned.Step = rename(g.Abandoned.Step)
		}
	}
	if out.Checkpoint != nil {
		out.Checkpoint.Step = rename(out.Checkpoint.Step)
	}
	for i := range out.PassedCheckpoints {
		out.PassedCheckpoints[i].Step = rename(out.PassedCheckpoints[i].Step)
	}
	if out.Clarification != nil {
		out.Clarification.Step = rename(out.Clarification.Step)
	}
	return out, nil
}

// splitStepID splits <session>/<group>/<role>/<n>.
func splitStepID(id string) (session, group, role string, n int, ok bool) {
	parts := strings.Split(id, "/")
	if len(parts) != 4 {
		return "", "", "", 0, false
	}
	if _, err := fmt.Sscanf(parts[3], "%d", &n); err != nil || n < 1 || fmt.Sprint(n) != parts[3] {
		return "", "", "", 0, false
	}
	return parts[0], parts[1], parts[2], n, true
}
