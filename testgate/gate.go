// Package testgate is the harness's test gate: it runs a repository's test
// command and checks in a working copy (sh -c, an environment allowlist,
// the whole process group ended at the timeout), names the failing tests
// (go test -json, JUnit XML) and compares them with a baseline. It holds no
// git: gitops lands a merge through it, stepexec checks READY claims and
// takes the baseline with it.
package testgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bazinga-bot/bazinga/internal/proc"
)

// GateOutcome is the verdict of the test gate.
type GateOutcome int

const (
	GatePass GateOutcome = iota
	GateFail
	GateTimeout
)

func (o GateOutcome) String() string {
	switch o {
	case GatePass:
		return "pass"
	case GateFail:
		return "fail"
	case GateTimeout:
		return "timeout"
	}
	return fmt.Sprintf("GateOutcome(%d)", int(o))
}

// MaxGateOutput is how much of the end of the test output is kept.
const MaxGateOutput = 64 << 10

// GateConfig is the configured test command.
type GateConfig struct {
	// Command is run with `sh -c`, so it is written as in a shell
	// (quotes, &&, pipes, env assignments). Running it through sh rather
	// than splitting it ourselves gives users the syntax they expect from
	// the configuration file; the command comes from the repository's own
	// configuration, so it is no less trusted than the tests it runs.
	Command string
	// Timeout bounds the whole run; zero means no limit but the context's.
	Timeout time.Duration
	// Grace is how long the command has between SIGTERM and SIGKILL at the
	// timeout (default DefaultGateGrace).
	Grace time.Duration
	// JUnit is a glob of JUnit XML reports the command writes (tests.junit);
	// failing tests are named from them. Else `go test -json` output is
	// detected, else only the exit status is known.
	JUnit string
	// Known is the baseline: failures the base already has do not fail the
	// gate (issue 13). Nil: every failure counts.
	Known *KnownFailures
	// Checks run after the tests (checks:); a required one that fails fails the gate.
	Checks []Check
}

// GateResult is what the gate reports.
type GateResult struct {
	// Outcome is the verdict: the tests (compared with Known) and the
	// required checks.
	Outcome GateOutcome
	// TestsOutcome is the test command's own outcome; TestsOK says whether
	// the tests held: they passed, or failed only as the baseline does.
	TestsOutcome GateOutcome
	TestsOK      bool
	ExitCode     int
	Duration     time.Duration
	// Output is the combined stdout and stderr, its last MaxGateOutput
	// bytes when longer (Truncated is then true).
	Output    string
	Truncated bool
	Note      string
	// Tests names the failing tests, when the output or reports tell.
	Tests TestReport
	// PreExisting and New split the failing tests by the baseline; Compared
	// says what comparing them concluded (empty without a baseline).
	PreExisting []string
	New         []string
	Compared    string
	// Checks are the outcomes of GateConfig.Checks, in order.
	Checks []CheckResult
}

// Summary is one line for humans.
func (r GateResult) Summary() string {
	s := fmt.Sprintf("tests %s in %s", r.TestsOutcome, r.Duration.Round(time.Millisecond))
	if r.TestsOutcome == GateFail {
		s += fmt.Sprintf(" (exit %d)", r.ExitCode)
	}
	if r.Note != "" {
		s += ": " + r.Note
	}
	if r.TestsOutcome != GatePass && len(r.Tests.Failed) > 0 && r.Compared == "" {
		s += fmt.Sprintf("; failing (%s): %s", r.Tests.Identity, listNames(r.Tests.Names(), 5))
	}
	if r.Compared != "" {
		s += "; " + r.Compared
	}
	if len(r.Checks) > 0 {
		parts := make([]string, len(r.Checks))
		for i, c := range r.Checks {
			parts[i] = c.Name + " " + c.Outcome.String()
			if c.Required && c.Outcome != GatePass {
				parts[i] += " (required)"
			}
		}
		s += "; checks: " + strings.Join(parts, ", ")
	}
	return s
}

// FailedChecks names the required checks that did not pass.
func (r GateResult) FailedChecks() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Required && c.Outcome != GatePass {
			out = append(out, c.Name)
		}
	}
	return out
}

// Digest is the output to show an agent: the failing tests' own output when
// they are named, else the tail of the whole output; then each failed check.
func (r GateResult) Digest(max int) string {
	var b strings.Builder
	if r.TestsOutcome != GatePass {
		if len(r.Tests.Failed) > 0 && r.Tests.Identity != IdentityExitStatus {
			for _, f := range r.Tests.Failed {
				mark := ""
				if slices.Contains(r.PreExisting, f.Name) {
					mark = " (fails on the base too)"
				}
				fmt.Fprintf(&b, "--- FAIL %s%s\n%s\n", f.Name, mark, strings.TrimRight(f.Output, "\n"))
			}
		} else {
			b.WriteString(r.Output)
		}
	}
	for _, c := range r.Checks {
		if c.Outcome == GatePass {
			continue
		}
		fmt.Fprintf(&b, "\n--- check %s: %s\n%s", c.Name, c.Summary(), c.Output)
	}
	s := b.String()
	if len(s) > max {
		s = s[len(s)-max:]
		for len(s) > 0 && !utf8.RuneStart(s[0]) {
			s = s[1:]
		}
		s = "…" + s
	}
	return s
}

// GateEnv names the only variables the test command gets from the harness's
// environment. The command runs code an agent wrote, so it gets what a build
// needs and nothing that can carry a credential: where programs and the home
// directory are (PATH, HOME, USER), the locale (LANG, LC_ALL), where temporary
// files go (TMPDIR), CI (test tools adapt their output to it), and the
// locations and settings of common toolchains (Go's GOPATH, GOCACHE,
// GOMODCACHE, GOFLAGS, GOTOOLCHAIN; JAVA_HOME; CARGO_HOME, RUSTUP_HOME).
// GOPROXY and the like are left out: their URLs may hold credentials.
var GateEnv = []string{
	"CARGO_HOME", "CI", "GOCACHE", "GOFLAGS", "GOMODCACHE", "GOPATH", "GOTOOLCHAIN",
	"HOME", "JAVA_HOME", "LANG", "LC_ALL", "PATH", "RUSTUP_HOME", "TMPDIR", "USER",
}

// DefaultGateGrace is how long the test command has after SIGTERM (at its
// timeout or a cancellation) before it is killed.
const DefaultGateGrace = 5 * time.Second

// RunGate runs the test command in dir, then the checks. A failing or
// timed-out command is an outcome, not an error; errors mean a command could
// not be started at all. An empty test command passes, with a note saying
// so. On timeout (or cancellation) every process a command started gets
// SIGTERM, then SIGKILL after the grace; when it ends, whatever it left
// running is killed. With a baseline (Known), failures the base already has
// do not fail the gate; a required check that fails does.
func RunGate(ctx context.Context, dir string, cfg GateConfig) (GateResult, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return GateResult{}, fmt.Errorf("test gate: working directory %q: %w", dir, errors.Join(err, errors.New("not a directory")))
	}
	res, err := runTests(ctx, dir, cfg)
	if err != nil {
		return res, err
	}
	res.Outcome = res.TestsOutcome
	if res.TestsOutcome != GatePass && cfg.Known != nil {
		var pass bool
		pass, res.Compared = cfg.Known.compare(&res)
		if pass {
			res.Outcome = GatePass
		}
	}
	res.TestsOK = res.Outcome == GatePass
	for _, c := range cfg.Checks {
		if ctx.Err() != nil {
			break
		}
		cr, err := RunCheck(ctx, dir, c, cfg.Timeout, cfg.Grace)
		if err != nil {
			return res, err
		}
		res.Checks = append(res.Checks, cr)
		if c.Required && cr.Outcome != GatePass && res.Outcome == GatePass {
			res.Outcome = GateFail
		}
	}
	return res, nil
}

func runTests(ctx context.Context, dir string, cfg GateConfig) (GateResult, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return GateResult{Outcome: GatePass, TestsOutcome: GatePass, Note: "no test command configured"}, nil
	}
	grace := cfg.Grace
	if grace <= 0 {
		grace = DefaultGateGrace
	}
	var before map[string]time.Time
	if cfg.JUnit != "" {
		before = fileStamps(dir, cfg.JUnit)
	}
	out := proc.NewTail(MaxGateOutput)
	gj := newGoTestReader()
	w := io.MultiWriter(out, gj)
	pr, err := proc.Run(ctx, proc.Cmd{
		Path: "/bin/sh", Args: []string{"sh", "-c", cfg.Command}, Dir: dir,
		Env: proc.Environ(GateEnv, nil), Stdout: w, Stderr: w,
		Timeout: cfg.Timeout, Grace: grace,
	})
	if err != nil {
		return GateResult{}, fmt.Errorf("test gate: running %q: %w", cfg.Command, err)
	}
	res := GateResult{Duration: pr.Duration, Output: out.String(), Truncated: out.Truncated()}
	res.TestsOutcome, res.ExitCode, res.Note = commandOutcome(ctx, pr, cfg.Timeout)
	res.Outcome = res.TestsOutcome
	switch {
	case cfg.JUnit != "":
		jr, err := readJUnit(dir, cfg.JUnit, before)
		switch {
		case err != nil:
			res.Tests.Note = err.Error()
		case jr != nil:
			res.Tests = *jr
		default:
			res.Tests.Note = fmt.Sprintf("no JUnit report matched %q", cfg.JUnit)
		}
		if jr == nil {
			if g := gj.report(); g != nil {
				res.Tests = *g
			}
		}
	default:
		if g := gj.report(); g != nil {
			res.Tests = *g
		}
	}
	return res, nil
}

// Check is one harness-run check (checks:): a named command, run with sh -c
// in the working copy, like the tests and with the same environment.
type Check struct {
	Name     string
	Command  string
	Required bool
	// Timeout bounds the run; zero means the gate's timeout.
	Timeout time.Duration
}

// MaxCheckOutput is how much of the end of a check's output is kept.
const MaxCheckOutput = 16 << 10

// CheckResult is the outcome of one check.
type CheckResult struct {
	Name     string
	Required bool
	Outcome  GateOutcome
	ExitCode int
	Duration time.Duration
	Output   string
	Note     string
}

// Summary is one line: "fail (exit 1) in 1.2s".
func (c CheckResult) Summary() string {
	s := c.Outcome.String()
	if c.Outcome == GateFail {
		s += fmt.Sprintf(" (exit %d)", c.ExitCode)
	}
	s += " in " + c.Duration.Round(time.Millisecond).String()
	if c.Note != "" {
		s += ": " + c.Note
	}
	return s
}

// RunCheck runs one check in dir. Like the tests, it runs code an agent
// wrote: it gets GateEnv and nothing else, and its whole process group is
// ended at the timeout.
func RunCheck(ctx context.Context, dir string, c Check, defTimeout, grace time.Duration) (CheckResult, error) {
	res := CheckResult{Name: c.Name, Required: c.Required}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = defTimeout
	}
	if grace <= 0 {
		grace = DefaultGateGrace
	}
	out := proc.NewTail(MaxCheckOutput)
	pr, err := proc.Run(ctx, proc.Cmd{
		Path: "/bin/sh", Args: []string{"sh", "-c", c.Command}, Dir: dir,
		Env: proc.Environ(GateEnv, nil), Stdout: out, Stderr: out,
		Timeout: timeout, Grace: grace,
	})
	if err != nil {
		return res, fmt.Errorf("check %s: running %q: %w", c.Name, c.Command, err)
	}
	res.Duration, res.Output = pr.Duration, out.String()
	res.Outcome, res.ExitCode, res.Note = commandOutcome(ctx, pr, timeout)
	return res, nil
}

// commandOutcome judges a test or check command as it ended: a timeout or
// cancellation (exit code -1), a kill by a signal, a non-zero exit or a pass.
func commandOutcome(ctx context.Context, pr proc.Result, timeout time.Duration) (GateOutcome, int, string) {
	switch {
	case pr.TimedOut:
		return GateTimeout, -1, fmt.Sprintf("timed out after %s", timeout)
	case pr.Cancelled:
		return GateTimeout, -1, "cancelled: " + ctx.Err().Error()
	case pr.Signal != 0:
		return GateFail, pr.ExitCode, "killed by " + pr.Signal.String()
	case pr.ExitCode != 0:
		return GateFail, pr.ExitCode, ""
	}
	return GatePass, pr.ExitCode, ""
}
