package pipeline

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Size budgets (issue 27). The session is stored whole in one place (the
// tracking comment, whose body GitHub caps at 65,536 characters), so every
// text that enters it from an agent or a person is bounded where it enters:
// a plan over budget goes back to the pm with what to shorten, like any
// other refused plan, and never reaches the session. The limits are in
// bytes of UTF-8 (what the state stores; an ASCII character is one byte)
// and no smaller than what a step's prompt shows of each text (agent's
// section caps), so nothing an agent would read is refused.
const (
	// MaxGroupNameBytes bounds a group's name.
	MaxGroupNameBytes = 100
	// MaxTaskBytes bounds one group's task: what a developer's prompt shows of it.
	MaxTaskBytes = 2000
	// MaxPlanTextBytes bounds the names and tasks of all a session's groups
	// together, so that MaxGroups groups fit in the state with a long step
	// history (BENCHMARKS.md: "State size"). A plan of many groups has
	// shorter tasks: 64 groups get about 180 bytes each.
	MaxPlanTextBytes = 12000
	// MaxCriterionBytes and MaxCriteriaBytes bound the success criteria,
	// one and all together (what a prompt shows of them).
	MaxCriterionBytes = 400
	MaxCriteriaBytes  = 1200
	// MaxQuestionBytes, MaxOptions, MaxOptionBytes and MaxFallbackBytes
	// bound the pm's clarification question.
	MaxQuestionBytes = 1000
	MaxOptions       = 6
	MaxOptionBytes   = 200
	MaxFallbackBytes = 500
	// MaxFeedbackBytes bounds the pm's feedback for one group (CONTINUE).
	MaxFeedbackBytes = 2000
	// MaxAnswerBytes bounds a person's answer to the pm's question, or
	// feedback on a plan waiting for approval.
	MaxAnswerBytes = 2000
	// MaxRequirementsBytes bounds the requirements the session keeps; a
	// longer issue body is kept as its start and end with a note naming its
	// size and SHA-256, the full text staying where it came from (a prompt
	// shows 3,000 bytes of it).
	MaxRequirementsBytes = 4000
	// MaxSummaryLineBytes bounds one line of a result's summary: an agent
	// is asked for 200 characters, and a capsule shows 160.
	MaxSummaryLineBytes = 400
)

// BudgetLines is the pm contract's statement of the limits, for its prompt.
func BudgetLines() []string {
	return []string{
		fmt.Sprintf("group `name`: at most %d bytes; `task`: at most %d bytes", MaxGroupNameBytes, MaxTaskBytes),
		fmt.Sprintf("all groups' names and tasks together, the session's earlier groups included: at most %d bytes (with %d groups that is about %d bytes each: plan fewer, larger groups or write shorter tasks)",
			MaxPlanTextBytes, MaxGroups, MaxPlanTextBytes/MaxGroups),
		fmt.Sprintf("`success_criteria`: each at most %d bytes, all together at most %d", MaxCriterionBytes, MaxCriteriaBytes),
		fmt.Sprintf("CONTINUE `feedback`: at most %d bytes per group", MaxFeedbackBytes),
		fmt.Sprintf("NEEDS_CLARIFICATION: `question` at most %d bytes, at most %d `options` of %d bytes each, `fallback` at most %d bytes",
			MaxQuestionBytes, MaxOptions, MaxOptionBytes, MaxFallbackBytes),
		"a byte is one ASCII character; other characters take 2 to 4. A handoff over a limit is refused with what to shorten, and nothing of it is used",
	}
}

// maxNamedGroups is how many groups over a limit a refusal names.
const maxNamedGroups = 8

// planTextBytes is what one group's texts cost against MaxPlanTextBytes.
func planTextBytes(g Group) int { return len(g.Name) + g.TaskBytes() }

// groupBudgetProblems names each text of the groups to add that is over its
// limit, and the total of the session's groups once they are added.
func groupBudgetProblems(existing, add []Group) []string {
	var problems []string
	total := 0
	for _, g := range existing {
		total += planTextBytes(g)
	}
	before := total
	over := 0 // groups over a limit of their own
	for _, g := range add {
		var mine []string
		if n := len(g.Name); n > MaxGroupNameBytes {
			mine = append(mine, fmt.Sprintf("group %q: name is %d bytes, the limit is %d", g.ID, n, MaxGroupNameBytes))
		}
		if n := g.TaskBytes(); n > MaxTaskBytes {
			mine = append(mine, fmt.Sprintf("group %q: task is %d bytes, the limit is %d: shorten it by %d or split the group", g.ID, n, MaxTaskBytes, n-MaxTaskBytes))
		}
		if len(mine) > 0 {
			over++
			// The first few are named; the rest counted, so the refusal
			// itself stays small (it is stored as the pm's feedback).
			if over <= maxNamedGroups {
				problems = append(problems, mine...)
			}
		}
		total += planTextBytes(g)
	}
	if over > maxNamedGroups {
		problems = append(problems, fmt.Sprintf("%d more groups are over the name or task limit", over-maxNamedGroups))
	}
	if total > MaxPlanTextBytes {
		msg := fmt.Sprintf("the groups' names and tasks total %d bytes, the session's limit is %d", total, MaxPlanTextBytes)
		if before > 0 {
			msg += fmt.Sprintf(" (%d of them are the session's existing groups)", before)
		}
		left := MaxPlanTextBytes - before
		if n := len(add); n > 0 && left > 0 {
			msg += fmt.Sprintf(": shorten them by %d bytes (about %d bytes per group for %d groups) or plan fewer groups", total-MaxPlanTextBytes, left/n, n)
		} else {
			msg += ": add no more groups; continue or drop the existing ones"
		}
		problems = append(problems, msg)
	}
	return problems
}

// criteriaBudgetProblems names the success criteria over their limits.
func criteriaBudgetProblems(criteria []string) []string {
	var problems []string
	total := 0
	for i, c := range criteria {
		c = strings.TrimSpace(c)
		if n := len(c); n > MaxCriterionBytes {
			problems = append(problems, fmt.Sprintf("success criterion %d is %d bytes, the limit is %d", i+1, n, MaxCriterionBytes))
		}
		total += len(c)
	}
	if total > MaxCriteriaBytes {
		problems = append(problems, fmt.Sprintf("the success criteria total %d bytes, the limit is %d: keep the checkable ones, shortly", total, MaxCriteriaBytes))
	}
	return problems
}

// clarificationBudgetProblems names what of a question is over its limits.
func clarificationBudgetProblems(h clarificationHandoff) []string {
	var problems []string
	if n := len(strings.TrimSpace(h.Question)); n > MaxQuestionBytes {
		problems = append(problems, fmt.Sprintf("the question is %d bytes, the limit is %d", n, MaxQuestionBytes))
	}
	if len(h.Options) > MaxOptions {
		problems = append(problems, fmt.Sprintf("%d options, the limit is %d", len(h.Options), MaxOptions))
	}
	for i, o := range h.Options {
		if n := len(o); n > MaxOptionBytes {
			problems = append(problems, fmt.Sprintf("option %d is %d bytes, the limit is %d", i+1, n, MaxOptionBytes))
		}
	}
	if n := len(strings.TrimSpace(h.Fallback)); n > MaxFallbackBytes {
		problems = append(problems, fmt.Sprintf("the fallback is %d bytes, the limit is %d", n, MaxFallbackBytes))
	}
	return problems
}

// feedbackBudgetProblems names the CONTINUE feedback over its limit, in
// the order of the groups it names.
func feedbackBudgetProblems(d continueDecision) []string {
	var problems []string
	for _, id := range slices.Sorted(maps.Keys(d.feedback)) {
		if n := len(d.feedback[id]); n > MaxFeedbackBytes {
			problems = append(problems, fmt.Sprintf("the feedback for group %q is %d bytes, the limit is %d", id, n, MaxFeedbackBytes))
		}
	}
	return problems
}

// overBudget is the refusal text for problems, or "".
func overBudget(problems []string) string {
	if len(problems) == 0 {
		return ""
	}
	return "over the size limits (" + strings.Join(problems, "; ") + ")"
}

// AnswerTooLong is the notice for a person's answer (or feedback on a
// checkpoint) over MaxAnswerBytes, or "". Front-ends refuse such a text
// before it reaches the engine, which refuses it too.
func AnswerTooLong(text string) string {
	if n := len(text); n > MaxAnswerBytes {
		return fmt.Sprintf("The answer is %d bytes; the limit is %d. Shorten it and send it again (a longer text belongs in the issue body or a file).", n, MaxAnswerBytes)
	}
	return ""
}

// RequirementsNote starts the line that replaces the middle of requirements
// longer than MaxRequirementsBytes.
const RequirementsNote = "[bazinga kept the start and end of these requirements:"

// BoundRequirements returns the requirements as a session keeps them: whole
// when within MaxRequirementsBytes, else their start and end around a note
// that gives the full text's size and SHA-256 (RequirementsDigest), so the
// cut is visible to every reader and the full text can be checked against
// the issue it came from.
func BoundRequirements(req string) string {
	if len(req) <= MaxRequirementsBytes {
		return req
	}
	note := fmt.Sprintf("\n\n%s the full text is %d bytes, sha256 %s]\n\n", RequirementsNote, len(req), RequirementsDigest(req))
	keep := MaxRequirementsBytes - len(note)
	head := keep * 3 / 4
	tail := keep - head
	return ValidPrefix(req, head) + note + ValidSuffix(req, tail)
}

// RequirementsDigest is the SHA-256 of requirements, in hex.
func RequirementsDigest(req string) string {
	sum := sha256.Sum256([]byte(req))
	return hex.EncodeToString(sum[:])
}

// ValidPrefix is the longest prefix of s within n bytes that does not cut a character.
func ValidPrefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ValidSuffix is the longest suffix of s within n bytes that does not cut a character.
func ValidSuffix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// errNoPlan is ParsePlan's error for a PLANNING_COMPLETE without a
// handoff. The likeliest cause is a plan too large to deliver (a handoff
// over 16 KiB, or too long for a GitHub comment, is dropped before the
// engine sees it), so the pm hears the size limits with it.
var errNoPlan = fmt.Errorf("the handoff has no plan: a handoff too large to deliver (over 16 KiB) is dropped before it reaches the harness, "+
	"so keep the plan small: at most %d bytes of names and tasks for all groups together, %d per task", MaxPlanTextBytes, MaxTaskBytes)

// withProblems adds problems to err's, as one error naming them all.
func withProblems(err error, problems []string) error {
	if len(problems) == 0 {
		return err
	}
	if err != nil {
		problems = append([]string{err.Error()}, problems...)
	}
	return errors.New(strings.Join(problems, "; "))
}

// planRefused tells the people watching why the pm's plan went back: the
// pm's feedback is in the session, but only a notice reaches the issue.
func (r *reconciler) planRefused(err error) {
	r.notify(NoticeInfo, "The pm's plan was refused and sent back for a corrected one: "+err.Error()+".")
}

// boundSummary keeps at most MaxSummaryLines lines of a result's summary,
// each within MaxSummaryLineBytes.
func boundSummary(lines []string) []string {
	if len(lines) > MaxSummaryLines {
		lines = lines[:MaxSummaryLines]
	}
	var out []string
	for i, l := range lines {
		if len(l) > MaxSummaryLineBytes {
			if out == nil {
				out = append([]string(nil), lines...)
			}
			out[i] = ValidPrefix(l, MaxSummaryLineBytes-len("…")) + "…"
		}
	}
	if out == nil {
		return lines
	}
	return out
}

// MaxStoredHandoffBytes bounds the handoff a session keeps of a step once
// the engine has routed on it: a prompt shows at most 2,500 bytes of a
// previous step's handoff (agent's section cap), cut the same structural
// way, so keeping more would only fill the state (a plan's groups are kept
// in the session's groups). The pm's BAZINGA is kept whole (the agent's
// 16 KiB at most): the validation step reads its criteria.
const MaxStoredHandoffBytes = 2500

// boundHandoff keeps a routed step's handoff within MaxStoredHandoffBytes.
func boundHandoff(st *Step) {
	if st.Result == nil || len(st.Result.Handoff) <= MaxStoredHandoffBytes || st.Role == RolePM && st.Result.Status == StatusBazinga {
		return
	}
	res := *st.Result
	res.Handoff = ShrinkHandoff(res.Handoff, MaxStoredHandoffBytes)
	st.Result = &res
}

// ShrinkHandoff returns a handoff of at most limit bytes that is still a
// JSON object: long strings and arrays are cut, with visible markers, as
// far as needed; what cannot be cut that way is kept as the start of its
// text under "truncated". The output is deterministic (object keys sorted).
func ShrinkHandoff(raw json.RawMessage, limit int) json.RawMessage {
	if len(raw) <= limit {
		return raw
	}
	if out, ok := ShrinkJSON(raw, limit); ok && bytes.HasPrefix(out, []byte("{")) {
		return out
	}
	for n := limit; n > 0; n -= n/4 + 1 {
		out, err := marshalPlain(map[string]any{"truncated": ValidPrefix(string(raw), n) + "…", "bytes": len(raw)})
		if err == nil && len(out) <= limit {
			return out
		}
	}
	return json.RawMessage(`{}`)
}

// ShrinkJSON fits a JSON document into limit bytes while keeping it the
// same JSON: long strings and arrays are cut with "[truncated" markers,
// harder each round (object keys sorted, no HTML escapes). ok is false
// when raw is not JSON or cannot be cut to fit that way.
func ShrinkJSON(raw []byte, limit int) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	for _, c := range []struct{ str, arr int }{{1000, 50}, {400, 20}, {200, 10}, {100, 5}, {50, 3}, {20, 1}} {
		if out, err := marshalPlain(shrinkValue(v, c.str, c.arr)); err == nil && len(out) <= limit {
			return out, true
		}
	}
	return nil, false
}

func shrinkValue(v any, maxStr, maxArr int) any {
	switch x := v.(type) {
	case string:
		if len(x) > maxStr {
			return ValidPrefix(x, maxStr) + "…[truncated]"
		}
		return x
	case []any:
		n := min(len(x), maxArr)
		out := make([]any, 0, n+1)
		for _, e := range x[:n] {
			out = append(out, shrinkValue(e, maxStr, maxArr))
		}
		if len(x) > n {
			out = append(out, fmt.Sprintf("[truncated: %d more]", len(x)-n))
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = shrinkValue(e, maxStr, maxArr)
		}
		return out
	}
	return v
}

// marshalPlain encodes v as compact JSON without HTML escapes.
func marshalPlain(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// Lean returns the smallest session that still works the same, as far as
// limit allows: Snapshot(0) (no finished step but those referred to),
// without the summaries and notes of the finished steps no later step reads
// (a track's last step, shown only by its capsule), and with the handoffs
// later steps read and the feedback of the steps in flight or next cut to
// limit bytes (a prompt shows up to MaxStoredHandoffBytes and
// MaxFeedbackBytes of them). A front-end stores it only when nothing larger
// fits (issue 27); every result stays whole in its result comment.
func (s Session) Lean(limit int) Session {
	c := s.Snapshot(0)
	_, read := s.stepRefs()
	for i := range c.Steps {
		st := &c.Steps[i]
		st.Feedback = cutMiddle(st.Feedback, limit)
		if st.State == StepInFlight || st.Result == nil {
			continue
		}
		r := *st.Result
		if read[st.ID] {
			if !(st.Role == RolePM && r.Status == StatusBazinga) {
				r.Handoff = ShrinkHandoff(r.Handoff, limit)
			}
		} else {
			r.Summary = nil
			r.Findings = nil // issue 26: posted and routed on; only prompts that read the step need them
			st.Notes = nil
		}
		st.Result = &r
	}
	cut := func(t *Track) {
		if t.Next != nil {
			n := *t.Next
			n.Feedback = cutMiddle(n.Feedback, limit)
			t.Next = &n
		}
	}
	cut(&c.Lead)
	for i := range c.Groups {
		cut(&c.Groups[i].Track)
	}
	return c
}

// BoundReviewBody is a person's review text as the session keeps it: at
// most MaxFeedbackBytes (it becomes a step's feedback), start and end kept.
// Front-ends record it bounded the same way, so a rebuild decides the same
// and the record fits in its comment (issue 27).
func BoundReviewBody(body string) string { return cutMiddle(body, MaxFeedbackBytes) }

// cutMiddle keeps s within n bytes: its start and end around a marker, as a
// prompt cuts a long text.
func cutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	marker := fmt.Sprintf("\n[cut %d bytes]\n", len(s)-n)
	keep := max(n-len(marker), 0)
	head := keep * 3 / 5
	return ValidPrefix(s, head) + marker + ValidSuffix(s, keep-head)
}
