package pipeline

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
)

// Review findings (issue 26). QA, the tech lead and the investigator may
// return findings with their result: each names a severity, where it
// applies, what is wrong and the suggested fix. The engine routes on the
// worst severity (the routing table's Worst column): any HIGH sends the group
// back, MEDIUM and LOW alone let it go on, MEDIUM ones recorded as the
// session's follow-ups. Everything in a finding is written by an agent, so it
// is bounded and checked where it enters (BoundFindings), like a summary.

// Severity is how much a finding matters. Severities are ordered: compare
// them by rank, never with < on their names.
type Severity string

// Severities in increasing order; SeverityNone is "no finding".
const (
	SeverityNone   Severity = ""
	SeverityLow    Severity = "low"
	SeverityMedium Severity = "medium"
	SeverityHigh   Severity = "high"
)

var severityEnum = enum[Severity]{kind: "severity", values: []Severity{
	SeverityNone, SeverityLow, SeverityMedium, SeverityHigh,
}}

func (s Severity) String() string { return severityEnum.name(s) }

func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// rank orders the severities: SeverityNone (and any value that is not a
// severity) 0, then LOW, MEDIUM, HIGH. Compare severities by it, never by <
// on the names.
func (s Severity) rank() int {
	switch s {
	case SeverityLow:
		return 1
	case SeverityMedium:
		return 2
	case SeverityHigh:
		return 3
	}
	return 0
}

func (s *Severity) UnmarshalText(b []byte) error {
	return severityEnum.unmarshal([]byte(strings.ToLower(string(b))), s)
}

// Severities lists the finding severities, worst first.
func Severities() []Severity { return []Severity{SeverityHigh, SeverityMedium, SeverityLow} }

// Limits on findings (issue 27's budgets): a result keeps at most
// MaxFindings, worst first, and each text at most its bytes.
const (
	MaxFindings         = 10
	MaxFindingPathBytes = 200
	MaxFindingTextBytes = 300
	// MaxFindingLine bounds line numbers: a number past any real file is
	// the agent's error, not a place.
	MaxFindingLine = 1_000_000
	// MaxFollowUps bounds the session's follow-ups (MEDIUM findings); past
	// it they are counted, not kept. A follow-up keeps at most
	// maxFollowUpProblemBytes of its problem and maxFollowUpFixBytes of its
	// fix: all of them stay within about 5 KB of the state (issue 27).
	MaxFollowUps            = 16
	maxFollowUpProblemBytes = 200
	maxFollowUpFixBytes     = 100
)

// Finding is one review finding. Line and EndLine are 1-based and
// inclusive; Line 0 means the finding is about the file (or, with no File,
// the change) as a whole.
type Finding struct {
	Severity Severity `json:"severity"`
	File     string   `json:"file,omitempty"`
	Line     int      `json:"line,omitempty"`
	EndLine  int      `json:"end_line,omitempty"`
	Problem  string   `json:"problem"`
	Fix      string   `json:"fix,omitempty"`
}

// Where is the finding's place for people: "a.go:12-14", "a.go", or "".
func (f Finding) Where() string {
	switch {
	case f.File == "":
		return ""
	case f.Line == 0:
		return f.File
	case f.EndLine > f.Line:
		return fmt.Sprintf("%s:%d-%d", f.File, f.Line, f.EndLine)
	}
	return fmt.Sprintf("%s:%d", f.File, f.Line)
}

// Text is the finding on one line: severity, place, problem and fix.
func (f Finding) Text() string {
	s := strings.ToUpper(f.Severity.String())
	if w := f.Where(); w != "" {
		s += " " + w
	}
	s += ": " + f.Problem
	if f.Fix != "" {
		s += " (fix: " + f.Fix + ")"
	}
	return s
}

// FindingInput is a finding as an agent writes it, before BoundFindings:
// severity a free string, lines plain numbers.
type FindingInput struct {
	Severity string `json:"severity"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	EndLine  int    `json:"end_line"`
	Problem  string `json:"problem"`
	Fix      string `json:"fix"`
}

// BoundFindings checks and bounds what an agent wrote: a finding with an
// unknown severity, no problem, or a path that leaves the repository is
// dropped with a note; texts are folded onto one line and cut; line numbers
// out of range are dropped (the finding stays, about the whole file); past
// MaxFindings the worst are kept, in the order they were written. It is
// deterministic and never fails.
func BoundFindings(in []FindingInput) ([]Finding, []string) {
	var out []Finding
	var notes []string
	for i, fi := range in {
		var sev Severity
		if err := sev.UnmarshalText([]byte(strings.TrimSpace(fi.Severity))); err != nil || sev == SeverityNone {
			notes = append(notes, fmt.Sprintf("finding %d: severity %q is not high, medium or low; dropped", i+1, foldLine(fi.Severity, 20)))
			continue
		}
		f := Finding{Severity: sev, Problem: boundText(fi.Problem, MaxFindingTextBytes), Fix: boundText(fi.Fix, MaxFindingTextBytes)}
		if f.Problem == "" {
			notes = append(notes, fmt.Sprintf("finding %d: no problem given; dropped", i+1))
			continue
		}
		file, ok := cleanFindingPath(fi.File)
		if !ok {
			notes = append(notes, fmt.Sprintf("finding %d: file %q is not a path inside the repository; dropped", i+1, foldLine(fi.File, 60)))
			continue
		}
		f.File = file
		if file != "" && fi.Line >= 1 && fi.Line <= MaxFindingLine {
			f.Line = fi.Line
			if fi.EndLine > fi.Line && fi.EndLine <= MaxFindingLine {
				f.EndLine = fi.EndLine
			}
		}
		out = append(out, f)
	}
	return capFindings(out, &notes), notes
}

// Bound checks findings that are already typed (read back from a result
// comment or a state, or built by a front-end): the same rules as
// BoundFindings, so the engine never trusts what reaches it.
func Bound(fs []Finding) []Finding {
	in := make([]FindingInput, len(fs))
	for i, f := range fs {
		in[i] = FindingInput{Severity: f.Severity.String(), File: f.File, Line: f.Line, EndLine: f.EndLine, Problem: f.Problem, Fix: f.Fix}
	}
	out, _ := BoundFindings(in)
	return out
}

// capFindings keeps at most MaxFindings, the worst first among equals in
// written order, then restores the written order.
func capFindings(fs []Finding, notes *[]string) []Finding {
	if len(fs) <= MaxFindings {
		return fs
	}
	idx := make([]int, len(fs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(fs[b].Severity.rank(), fs[a].Severity.rank()) })
	keep := idx[:MaxFindings]
	slices.Sort(keep)
	out := make([]Finding, 0, MaxFindings)
	for _, i := range keep {
		out = append(out, fs[i])
	}
	*notes = append(*notes, fmt.Sprintf("%d findings, kept the %d worst", len(fs), MaxFindings))
	return out
}

// boundText folds s onto one line without control or invisible characters
// and cuts it to n bytes.
func boundText(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = ValidPrefix(s, n-len("…")) + "…"
	}
	return s
}

// cleanFindingPath returns a repository-relative slash path, "" for none;
// ok is false for an absolute path, one that leaves the repository, or one
// with characters no file name here has.
func cleanFindingPath(p string) (string, bool) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", true
	}
	if len(p) > MaxFindingPathBytes || strings.ContainsAny(p, "\\\x00") || strings.HasPrefix(p, "/") {
		return "", false
	}
	for _, r := range p {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return "", false
		}
	}
	c := path.Clean(strings.TrimPrefix(p, "./"))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// Reviews reports whether the role's results may carry findings: QA, the
// tech lead and the investigator.
func (r Role) Reviews() bool {
	return r == RoleQA || r == RoleTechLead || r == RoleInvestigator
}

// Worst is the worst severity among findings, SeverityNone for none.
func Worst(fs []Finding) Severity {
	w := SeverityNone
	for _, f := range fs {
		if f.Severity.rank() > w.rank() {
			w = f.Severity
		}
	}
	return w
}

// BySeverity returns the findings of severity s, in order.
func BySeverity(fs []Finding, s Severity) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Severity == s {
			out = append(out, f)
		}
	}
	return out
}

// FindingsText renders findings worst first, one per line, for a prompt's
// feedback or a summary.
func FindingsText(fs []Finding) string {
	var b strings.Builder
	for _, s := range Severities() {
		for _, f := range BySeverity(fs, s) {
			b.WriteString("- " + f.Text() + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// FollowUp is a MEDIUM finding the session recorded and went on with: a
// known issue for a later session.
type FollowUp struct {
	Group   string  `json:"group"`
	Step    string  `json:"step"`
	Finding Finding `json:"finding"`
}

// followUps records the MEDIUM findings of a step whose group went on,
// once each (same group, place and problem), within MaxFollowUps.
func (r *reconciler) followUps(st *Step) {
	for _, f := range BySeverity(st.Result.Findings, SeverityMedium) {
		r.followUp(FollowUp{Group: st.Group, Step: st.ID, Finding: f})
	}
}

// followUp records one follow-up unless the group has it already.
func (r *reconciler) followUp(u FollowUp) {
	s := &r.s
	u.Finding.Problem = boundText(u.Finding.Problem, maxFollowUpProblemBytes)
	u.Finding.Fix = boundText(u.Finding.Fix, maxFollowUpFixBytes)
	dup := slices.ContainsFunc(s.FollowUps, func(o FollowUp) bool {
		return o.Group == u.Group && o.Finding.Where() == u.Finding.Where() && o.Finding.Problem == u.Finding.Problem
	})
	if dup {
		return
	}
	r.changed = true
	if len(s.FollowUps) >= MaxFollowUps {
		s.FollowUpsDropped++
		return
	}
	s.FollowUps = append(s.FollowUps, u)
}

// FollowUpsText lists the session's follow-ups for a summary, "" for none.
func FollowUpsText(s Session) string {
	if len(s.FollowUps) == 0 && s.FollowUpsDropped == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Follow-ups (review findings the session went on with): %d", len(s.FollowUps)+s.FollowUpsDropped)
	for _, u := range s.FollowUps {
		fmt.Fprintf(&b, "\n- group %s: %s", u.Group, u.Finding.Text())
	}
	if s.FollowUpsDropped > 0 {
		fmt.Fprintf(&b, "\n- and %d more not kept (the session keeps %d)", s.FollowUpsDropped, MaxFollowUps)
	}
	return b.String()
}
