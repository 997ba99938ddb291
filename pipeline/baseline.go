package pipeline

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// This file holds the build baseline and the harness-run checks (issue 13,
// items 1 and 4) as the engine sees them: plain data the harness reports in
// an event, recorded in the session. The harness runs the commands and
// compares failures (stepexec, gitops); the engine only records what it was
// told and pauses on a red baseline it was not told to accept.

// BaselineMode says what a red baseline does (tests.baseline).
type BaselineMode string

const (
	// BaselinePause pauses the session on a red baseline until a human
	// resumes it (which accepts the baseline).
	BaselinePause BaselineMode = "pause"
	// BaselineAccept proceeds at once, counting only failures the base does not have.
	BaselineAccept BaselineMode = "accept"
	// BaselineOff takes no baseline: every failure counts, as before baselines.
	BaselineOff BaselineMode = "off"
)

// TestIdentity is how failing tests were told apart in a test run. Its zero
// value IdentityExitStatus is "" in Go (knowing nothing but the exit status
// is the least a run tells) and "exit status" on the wire.
type TestIdentity string

const (
	// IdentityExitStatus ("exit status"): only the command's exit status is known.
	IdentityExitStatus TestIdentity = ""
	// IdentityGoTestJSON: the command printed `go test -json` events.
	IdentityGoTestJSON TestIdentity = "go test -json"
	// IdentityJUnit: the configured JUnit XML reports (tests.junit).
	IdentityJUnit TestIdentity = "JUnit XML"
)

var testIdentityEnum = enum[TestIdentity]{kind: "test identity", zero: "exit status", values: []TestIdentity{
	IdentityExitStatus, IdentityGoTestJSON, IdentityJUnit,
}}

func (i TestIdentity) String() string { return testIdentityEnum.name(i) }

func (i TestIdentity) MarshalText() ([]byte, error) { return []byte(i.String()), nil }

func (i *TestIdentity) UnmarshalText(b []byte) error {
	return testIdentityEnum.unmarshal(b, i)
}

// MaxBaselineFailures bounds the failing test names a baseline keeps; a
// baseline with more is recorded as Unnamed (every failure pre-existing),
// so the session state stays small.
const MaxBaselineFailures = 500

// Baseline is the harness's run of the build and test commands on the base
// head at session start. It is taken once, for the commit named, and kept for
// the whole session: after the session's own merges the base holds the
// session's changes, whose failures must not become "pre-existing".
type Baseline struct {
	// Commit is the base commit the baseline was taken on.
	Commit   string       `json:"commit"`
	Identity TestIdentity `json:"identity"`
	// Green: the command passed.
	Green bool `json:"green"`
	// Failed names the failing tests, sorted.
	Failed []string `json:"failed,omitempty"`
	// Unnamed: the command failed without naming every failing test (a build
	// error, a crash, a timeout, exit-status identity, or more than
	// MaxBaselineFailures). Then any failure counts as pre-existing.
	Unnamed bool `json:"unnamed,omitempty"`
	// Summary is the harness's one line about the run.
	Summary string `json:"summary,omitempty"`
	// Command is the command that ran (build and tests), at most
	// MaxBaselineCommand bytes; Tail is the end of a red run's output, at
	// most MaxCheckTail bytes: a red baseline names both (issue 25).
	Command string `json:"command,omitempty"`
	Tail    string `json:"tail,omitempty"`
	// CannotRun: the command could not start at all (the shell's exit 126
	// or 127: not found, not executable). That is not a red base but a
	// wrong command: it is never accepted without a human, and nobody is
	// asked to accept it as pre-existing failures.
	CannotRun bool `json:"cannot_run,omitempty"`
	// Accepted is set once a red baseline may be compared against: by
	// tests.baseline accept, or by the human who resumed the session.
	Accepted   bool   `json:"accepted,omitempty"`
	AcceptedBy string `json:"accepted_by,omitempty"`
}

// Red reports whether the base already fails.
func (b *Baseline) Red() bool { return b != nil && !b.Green }

// Describe says in one line what the baseline found, naming failing tests.
func (b Baseline) Describe(base string) string {
	at := base
	if b.Commit != "" {
		at += "@" + shortSHA(b.Commit)
	}
	if b.Green {
		return fmt.Sprintf("the tests pass on %s (%s)", at, b.Identity)
	}
	if b.CannotRun {
		s := fmt.Sprintf("the test command %s cannot run on %s", cmdQuote(b.Command), at)
		if t := lastLine(b.Tail); t != "" {
			s += ": " + t
		}
		return s + " — set tests.command (or build.command) to a command that runs here"
	}
	var what string
	switch {
	case len(b.Failed) > 0:
		what = "failing: " + listSome(b.Failed, 10)
		if b.Unnamed {
			what += " (and failures without a test name)"
		}
	case b.Identity == IdentityExitStatus:
		what = "failing tests cannot be named from the exit status alone"
	default:
		what = "the command failed without naming a test"
	}
	if b.Command != "" {
		what += "; command " + cmdQuote(b.Command)
	}
	s := fmt.Sprintf("the tests already fail on %s (%s) — %s", at, b.Identity, what)
	if b.Summary != "" {
		s += " [" + oneLine(b.Summary) + "]"
	}
	return s
}

// MaxBaselineCommand bounds the command a baseline keeps.
const MaxBaselineCommand = 512

// cmdQuote shows a command in backquotes, as Markdown and terminals read it.
func cmdQuote(c string) string {
	if c == "" {
		return "(none)"
	}
	return "`" + oneLine(c) + "`"
}

// lastLine is the last non-empty line of s, at most 200 bytes.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		l = ValidPrefix(l, 200) + "…"
	}
	return l
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// listSome joins at most n items, saying how many more there are.
func listSome(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// CheckConfig is one named command of `checks:`, run by the harness after a
// READY claim and in the merge gate.
type CheckConfig struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	// Required checks that fail turn a READY claim into PARTIAL and block a merge.
	Required bool `json:"required"`
	// Timeout bounds one run; zero means tests.timeout.
	Timeout Duration `json:"timeout,omitempty"`
}

// MaxChecks bounds how many checks a configuration may name.
const MaxChecks = 10

// MaxCheckTail bounds the output tail a check outcome keeps in the session.
const MaxCheckTail = 1 << 10

// CheckOutcome is the result of one check as the session keeps it.
type CheckOutcome struct {
	Name     string `json:"name"`
	Required bool   `json:"required,omitempty"`
	Passed   bool   `json:"passed"`
	// Summary is one line: "fail (exit 1) in 2s".
	Summary string `json:"summary,omitempty"`
	// Tail is the end of the output of a failed check, at most MaxCheckTail bytes.
	Tail string `json:"tail,omitempty"`
}

// HarnessReport is what the harness itself found during a step, beside the
// agent's result: the baseline it took, the checks it ran.
type HarnessReport struct {
	Baseline *Baseline      `json:"baseline,omitempty"`
	Checks   []CheckOutcome `json:"checks,omitempty"`
}

// ChecksLine renders check outcomes in one line: "lint ✗ (required), vet ✓".
func ChecksLine(cs []CheckOutcome) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		mark := "✓"
		if !c.Passed {
			mark = "✗"
		}
		p := c.Name + " " + mark
		if c.Required {
			p += " (required)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// wantBaseline reports whether a pm step dispatched now should take the
// baseline: configured, not taken yet, and nothing of the session merged
// (after a merge the base is no longer the base the session started on).
func (r *reconciler) wantBaseline() bool {
	if r.cfg.Tests.Baseline == BaselineOff || r.s.Baseline != nil {
		return false
	}
	if strings.TrimSpace(r.cfg.Tests.Command) == "" && strings.TrimSpace(r.cfg.Build.Command) == "" {
		return false
	}
	for _, g := range r.s.Groups {
		if g.Stage == StageMerged {
			return false
		}
	}
	return true
}

// harness records what the harness reported with a step's result.
func (r *reconciler) harness(st *Step, g *Group, h *HarnessReport) {
	if h == nil {
		return
	}
	if b := h.Baseline; b != nil {
		switch {
		case !st.Baseline:
			r.report("ignored the baseline reported with step %s: it was not asked to take one", st.ID)
		case r.s.Baseline != nil:
			r.report("ignored the baseline reported with step %s: the session has one for %s", st.ID, shortSHA(r.s.Baseline.Commit))
		default:
			r.recordBaseline(*b)
		}
	}
	if g != nil && len(h.Checks) > 0 && g.Stage != StageMerged {
		// A merged group's code is the base's now: nothing to keep.
		g.Checks = boundChecks(h.Checks)
	}
}

func (r *reconciler) recordBaseline(b Baseline) {
	s := &r.s
	b.Failed = append([]string(nil), b.Failed...)
	if len(b.Failed) > MaxBaselineFailures {
		b.Failed, b.Unnamed = b.Failed[:MaxBaselineFailures], true
	}
	b.Accepted, b.AcceptedBy = false, ""
	// What the harness reports is bounded before it enters the state.
	if len(b.Command) > MaxBaselineCommand {
		b.Command = ValidPrefix(b.Command, MaxBaselineCommand) + "…"
	}
	if b.Green {
		b.Tail, b.CannotRun = "", false
	} else if len(b.Tail) > MaxCheckTail {
		b.Tail = "…" + ValidSuffix(b.Tail, MaxCheckTail)
	}
	s.Baseline = &b
	r.changed = true
	if b.Green {
		return
	}
	desc := b.Describe(s.Base)
	if b.CannotRun {
		// Not failures to compare with: accepting would leave the session
		// without tests, so even tests.baseline accept waits for a human.
		r.pause("baseline: " + desc)
		return
	}
	if r.cfg.Tests.Baseline == BaselineAccept {
		b.Accepted, b.AcceptedBy = true, "tests.baseline: accept"
		s.Baseline = &b
		r.notify(NoticeInfo, "Baseline: "+desc+". tests.baseline is accept: only failures the base does not have count.")
		return
	}
	r.pause("baseline: " + desc + "; resuming accepts them as pre-existing (only new failures count)")
}

// acceptBaseline is what a resume does to a red baseline not yet accepted.
func (r *reconciler) acceptBaseline(who string) string {
	b := r.s.Baseline
	if !b.Red() || b.Accepted {
		return ""
	}
	nb := *b
	nb.Accepted, nb.AcceptedBy = true, who
	r.s.Baseline = &nb
	return " The baseline of " + r.s.Base + " is accepted: only failures it does not have count."
}

func boundChecks(in []CheckOutcome) []CheckOutcome {
	n := min(len(in), MaxChecks)
	out := make([]CheckOutcome, n)
	copy(out, in[:n])
	for i := range out {
		if out[i].Passed {
			out[i].Tail = ""
		} else if len(out[i].Tail) > MaxCheckTail {
			t := out[i].Tail[len(out[i].Tail)-MaxCheckTail:]
			for len(t) > 0 && !utf8.RuneStart(t[0]) {
				t = t[1:]
			}
			out[i].Tail = "…" + t
		}
		out[i].Summary = oneLine(out[i].Summary)
	}
	return out
}
