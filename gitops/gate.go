package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

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
}

// GateResult is what the gate reports.
type GateResult struct {
	Outcome  GateOutcome
	ExitCode int
	Duration time.Duration
	// Output is the combined stdout and stderr, its last MaxGateOutput
	// bytes when longer (Truncated is then true).
	Output    string
	Truncated bool
	Note      string
}

// Summary is one line for humans.
func (r GateResult) Summary() string {
	s := fmt.Sprintf("tests %s in %s", r.Outcome, r.Duration.Round(time.Millisecond))
	if r.Outcome == GateFail {
		s += fmt.Sprintf(" (exit %d)", r.ExitCode)
	}
	if r.Note != "" {
		s += ": " + r.Note
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

// RunGate runs the test command in dir. A failing or timed-out command is
// an outcome, not an error; errors mean the command could not be started
// at all. An empty command passes, with a note saying so. On timeout (or
// cancellation) every process the command started gets SIGTERM, then
// SIGKILL after the grace; when it ends, whatever it left running is killed.
func RunGate(ctx context.Context, dir string, cfg GateConfig) (GateResult, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return GateResult{Outcome: GatePass, Note: "no test command configured"}, nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return GateResult{}, fmt.Errorf("test gate: working directory %q: %w", dir, errors.Join(err, errors.New("not a directory")))
	}
	grace := cfg.Grace
	if grace <= 0 {
		grace = DefaultGateGrace
	}
	out := proc.NewTail(MaxGateOutput)
	pr, err := proc.Run(ctx, proc.Cmd{
		Path: "/bin/sh", Args: []string{"sh", "-c", cfg.Command}, Dir: dir,
		Env: proc.Environ(GateEnv, nil), Stdout: out, Stderr: out,
		Timeout: cfg.Timeout, Grace: grace,
	})
	if err != nil {
		return GateResult{}, fmt.Errorf("test gate: running %q: %w", cfg.Command, err)
	}
	res := GateResult{Duration: pr.Duration, Output: out.String(), Truncated: out.Truncated(), ExitCode: pr.ExitCode}
	switch {
	case pr.TimedOut:
		res.Outcome, res.ExitCode = GateTimeout, -1
		res.Note = fmt.Sprintf("timed out after %s", cfg.Timeout)
	case pr.Cancelled:
		res.Outcome, res.ExitCode = GateTimeout, -1
		res.Note = "cancelled: " + ctx.Err().Error()
	case pr.Signal != 0:
		res.Outcome = GateFail
		res.Note = "killed by " + pr.Signal.String()
	case pr.ExitCode != 0:
		res.Outcome = GateFail
	default:
		res.Outcome = GatePass
	}
	return res, nil
}
