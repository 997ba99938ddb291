package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
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

// gateEnvAllow are the only variables the test command inherits; the
// bot's tokens and keys never reach it.
var gateEnvAllow = []string{"PATH", "HOME", "GOPATH", "GOCACHE", "GOMODCACHE", "GOFLAGS", "TMPDIR", "LANG", "USER"}

// gateEnv builds the test command's environment from environ.
func gateEnv(environ []string) []string {
	allowed := map[string]bool{}
	for _, k := range gateEnvAllow {
		allowed[k] = true
	}
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !allowed[k] || isSecretName(k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// isSecretName matches variable names that carry credentials.
func isSecretName(k string) bool {
	u := strings.ToUpper(k)
	return u == "GITHUB_TOKEN" || strings.HasPrefix(u, "BAZINGA_") ||
		strings.HasSuffix(u, "_TOKEN") || strings.HasSuffix(u, "_KEY") || strings.HasSuffix(u, "_SECRET")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	truncated bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		t.truncated = true
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.truncated = true
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// RunGate runs the test command in dir. A failing or timed-out command is
// an outcome, not an error; errors mean the command could not be started
// at all. An empty command passes, with a note saying so. On timeout (or
// cancellation) the command's whole process group is killed.
func RunGate(ctx context.Context, dir string, cfg GateConfig) (GateResult, error) {
	if strings.TrimSpace(cfg.Command) == "" {
		return GateResult{Outcome: GatePass, Note: "no test command configured"}, nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return GateResult{}, fmt.Errorf("test gate: working directory %q: %w", dir, errors.Join(err, errors.New("not a directory")))
	}
	out := &tailBuffer{max: MaxGateOutput}
	cmd := exec.Command("/bin/sh", "-c", cfg.Command)
	cmd.Dir = dir
	cmd.Env = gateEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// If a grandchild keeps the output pipe open after the group is
	// killed, stop waiting for it.
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return GateResult{}, fmt.Errorf("test gate: starting %q: %w", cfg.Command, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timeout <-chan time.Time
	if cfg.Timeout > 0 {
		timer := time.NewTimer(cfg.Timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	res := GateResult{}
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timeout:
		killGroup(cmd.Process.Pid)
		<-done
		res.Outcome = GateTimeout
		res.Note = fmt.Sprintf("timed out after %s", cfg.Timeout)
	case <-ctx.Done():
		killGroup(cmd.Process.Pid)
		<-done
		res.Outcome = GateTimeout
		res.Note = "cancelled: " + ctx.Err().Error()
	}
	res.Duration = time.Since(start)
	res.Output, res.Truncated = out.String(), out.truncated
	if res.Outcome == GateTimeout {
		res.ExitCode = -1
		return res, nil
	}
	// Whatever the shell left behind in its group goes too.
	killGroup(cmd.Process.Pid)
	if waitErr != nil {
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			res.Outcome, res.ExitCode = GateFail, ee.ExitCode()
			return res, nil
		}
		res.Outcome, res.ExitCode = GateFail, -1
		res.Note = waitErr.Error()
		return res, nil
	}
	res.Outcome = GatePass
	return res, nil
}

func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
