package pipeline

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Usage is what steps cost as the agent CLI reported it (issue 13 item 5):
// money in millionths of a US dollar, so that sums are exact and a rebuild
// that applies the same results in another order reaches the same totals,
// and token counts. Steps counts the steps whose usage is included, Priced
// those of them that reported a cost (codex reports tokens only): a total
// whose Priced is below Steps is a lower bound.
type Usage struct {
	CostMicros       int64 `json:"cost_micros,omitempty"`
	InputTokens      int64 `json:"input_tokens,omitempty"`
	OutputTokens     int64 `json:"output_tokens,omitempty"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	Steps            int   `json:"steps,omitempty"`
	Priced           int   `json:"priced,omitempty"`
}

// Bounds on one step's usage. Agent output is untrusted: a value outside
// them is refused, not summed, so a hostile or broken report cannot overflow
// a total or hide a session's cost behind a negative number.
const (
	// MaxStepCostMicros is $10,000 for one step.
	MaxStepCostMicros = 10_000 * 1_000_000
	// MaxStepTokens is ten billion tokens of one kind in one step.
	MaxStepTokens = 10_000_000_000
	// MaxCostLimitUSD bounds limits.session_cost_usd and limits.step_cost_usd.
	MaxCostLimitUSD = 1_000_000
)

// IsZero reports whether u records nothing.
func (u Usage) IsZero() bool { return u == Usage{} }

// Tokens is every token counted: input, output and cache reads and writes.
func (u Usage) Tokens() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// Check reports why one step's usage cannot be counted: a negative or
// oversized number, or step counts other than one step's.
func (u Usage) Check() error {
	var problems []string
	if u.CostMicros < 0 || u.CostMicros > MaxStepCostMicros {
		problems = append(problems, fmt.Sprintf("cost %d millionths of a dollar is outside 0 to %d", u.CostMicros, int64(MaxStepCostMicros)))
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"input", u.InputTokens}, {"output", u.OutputTokens}, {"cache read", u.CacheReadTokens}, {"cache write", u.CacheWriteTokens}} {
		if f.v < 0 || f.v > MaxStepTokens {
			problems = append(problems, fmt.Sprintf("%s tokens %d outside 0 to %d", f.name, f.v, int64(MaxStepTokens)))
		}
	}
	if u.Steps != 1 || u.Priced < 0 || u.Priced > 1 || u.Priced == 0 && u.CostMicros != 0 {
		problems = append(problems, fmt.Sprintf("steps %d, priced %d: one step's usage counts one step", u.Steps, u.Priced))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("usage refused: %s", strings.Join(problems, "; "))
}

// Add adds v to u, saturating rather than wrapping.
func (u *Usage) Add(v Usage) {
	add := func(a *int64, b int64) {
		if b > 0 && *a > math.MaxInt64-b {
			*a = math.MaxInt64
			return
		}
		*a += b
	}
	add(&u.CostMicros, v.CostMicros)
	add(&u.InputTokens, v.InputTokens)
	add(&u.OutputTokens, v.OutputTokens)
	add(&u.CacheReadTokens, v.CacheReadTokens)
	add(&u.CacheWriteTokens, v.CacheWriteTokens)
	u.Steps += v.Steps
	u.Priced += v.Priced
}

// USDMicros converts dollars (a configured limit) to millionths, rounded.
func USDMicros(usd float64) int64 {
	if math.IsNaN(usd) || usd <= 0 {
		return 0
	}
	if usd >= MaxCostLimitUSD {
		return MaxCostLimitUSD * 1_000_000
	}
	return int64(math.Round(usd * 1e6))
}

// FormatUSD writes millionths of a dollar as people read them: cents from a
// dollar up ("$12.34"), four decimals below ("$0.0123").
func FormatUSD(micros int64) string {
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	if micros >= 1_000_000 {
		cents := (micros + 5_000) / 10_000
		return fmt.Sprintf("%s$%d.%02d", sign, cents/100, cents%100)
	}
	tenths := (micros + 50) / 100 // ten-thousandths of a dollar
	return fmt.Sprintf("%s$0.%04d", sign, tenths)
}

// FormatTokens writes a token count compactly: 950, 15.2k, 3.4M.
func FormatTokens(n int64) string {
	switch {
	case n < 1_000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	case n < 1_000_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	}
	return strconv.FormatFloat(float64(n)/1e9, 'f', 1, 64) + "G"
}

// String is the short form a capsule or a table cell shows:
// "$0.4213 · 15.2k tokens", "15.2k tokens" when no cost was reported, and
// "(cost of 3/5 steps)" when a total misses some steps' cost.
func (u Usage) String() string {
	if u.IsZero() {
		return ""
	}
	var parts []string
	if u.Priced > 0 {
		parts = append(parts, FormatUSD(u.CostMicros))
	}
	parts = append(parts, FormatTokens(u.Tokens())+" tokens")
	s := strings.Join(parts, " · ")
	if u.Priced > 0 && u.Priced < u.Steps {
		s += fmt.Sprintf(" (cost of %d/%d steps)", u.Priced, u.Steps)
	}
	return s
}

// Detail is the long form: every token kind, for summaries.
func (u Usage) Detail() string {
	if u.IsZero() {
		return ""
	}
	s := u.String()
	var kinds []string
	for _, k := range []struct {
		name string
		v    int64
	}{{"in", u.InputTokens}, {"out", u.OutputTokens}, {"cache read", u.CacheReadTokens}, {"cache write", u.CacheWriteTokens}} {
		if k.v > 0 {
			kinds = append(kinds, k.name+" "+FormatTokens(k.v))
		}
	}
	if len(kinds) > 0 {
		s += " (" + strings.Join(kinds, ", ") + ")"
	}
	return s
}

// runURLPattern is a job run's address: http(s), no spaces or characters
// that could end a markdown link, ending in /actions/runs/<id> (optionally
// /attempts/<n> or /job/<id>).
var runURLPattern = regexp.MustCompile(`^https?://[A-Za-z0-9.:\-]+(/[A-Za-z0-9._~\-]+)*/actions/runs/[0-9]{1,20}(/(attempts|job)/[0-9]{1,20})?$`)

// MaxRunURL bounds a stored run address.
const MaxRunURL = 512

// CleanRunURL returns the run address if it looks like one, else "": the
// tracking comment links it, so nothing else may pass.
func CleanRunURL(s string) string {
	if len(s) > MaxRunURL || !runURLPattern.MatchString(s) {
		return ""
	}
	return s
}

// --- the engine's accounting ------------------------------------------------

// metered records the usage and run of a step whose result or failure
// arrived, and pauses the session when the step cost more than
// limits.step_cost_usd. applied says whether the event was applied: a
// result routed already (the work is paid for and kept, and the pause stops
// what it would set going until a human looks), or not (the step had timed
// out, been cancelled, or ended otherwise: the money was spent all the same,
// so it counts, once).
func (r *reconciler) metered(ev Event, applied bool) {
	st := r.step(ev.Step)
	if st == nil {
		if ev.Usage != nil {
			r.report("usage reported for step %s not counted: the session has no such step", ev.Step)
		}
		return
	}
	if u := CleanRunURL(ev.RunURL); u != "" && (applied || st.RunURL == "") {
		st.RunURL = u
		r.changed = true
	}
	if ev.Usage == nil || st.Usage != nil {
		return
	}
	u := *ev.Usage
	if err := u.Check(); err != nil {
		r.report("step %s: %v; not counted", st.ID, err)
		return
	}
	r.changed = true
	st.Usage = &u
	if t, _ := r.track(st); t != nil {
		t.Usage.Add(u)
	}
	r.s.Usage.Add(u)
	limit := USDMicros(r.cfg.Limits.StepCostUSD)
	if limit > 0 && u.Priced > 0 && u.CostMicros > limit {
		where := "its result was applied"
		switch {
		case !applied:
			where = fmt.Sprintf("it reported after it had %s, so its work was not used", stepEnd(st))
		case st.Routed != "":
			where += " (→ " + st.Routed + ")"
		}
		r.pause(fmt.Sprintf("step %s cost %s, over limits.step_cost_usd %s; %s and the session has spent %s; raise the limit if that is expected, then resume",
			st.ID, FormatUSD(u.CostMicros), FormatUSD(limit), where, FormatUSD(r.s.Usage.CostMicros)))
	}
}

// stepEnd says how a step that is no longer in flight ended.
func stepEnd(st *Step) string {
	switch st.State {
	case StepCancelled:
		return "been cancelled (" + st.Note + ")"
	case StepFailed:
		return "failed (" + st.Note + ")"
	}
	return "ended"
}

// checkBudget pauses a live session whose spending reached
// limits.session_cost_usd, before anything more is dispatched. It is level
// triggered: a resume without a higher limit pauses again at once.
func (r *reconciler) checkBudget() {
	s := &r.s
	limit := USDMicros(r.cfg.Limits.SessionCostUSD)
	if limit == 0 || s.Status == SessionNew || s.Status == SessionPaused || s.Status.Terminal() {
		return
	}
	if s.Usage.CostMicros < limit {
		return
	}
	r.pause(fmt.Sprintf("the session has spent %s over %d step(s), reaching limits.session_cost_usd %s; raise the limit, then resume",
		FormatUSD(s.Usage.CostMicros), s.Usage.Steps, FormatUSD(limit)))
}
