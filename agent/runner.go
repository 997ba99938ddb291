package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/internal/proc"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Defaults for RunnerConfig fields left zero.
const (
	DefaultTimeout       = 30 * time.Minute
	DefaultOutputCap     = 1 << 20          // per stream
	DefaultKillGrace     = 30 * time.Second // agent.grace's default
	DefaultResultFileCap = 1 << 20
)

// Environment variables the harness sets for every step (DESIGN §4).
const (
	EnvRole       = "BAZINGA_ROLE"
	EnvGroup      = "BAZINGA_GROUP"
	EnvStep       = "BAZINGA_STEP"
	EnvModel      = "BAZINGA_MODEL"
	EnvPromptFile = "BAZINGA_PROMPT_FILE"
	EnvResultFile = "BAZINGA_RESULT_FILE"
)

// baseEnv is what every process needs to work at all; nothing else from the
// harness's environment reaches the agent unless configured by name.
var baseEnv = []string{"HOME", "LANG", "PATH", "TMPDIR", "USER"}

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// RunnerConfig says how agent steps are run.
type RunnerConfig struct {
	// Command is the agent command template, split like a shell, with
	// {model}, {role} and {prompt_file} filled in per argument.
	Command string
	// Timeout bounds one step (default 30m). On expiry the agent and every
	// process it started get SIGTERM, then SIGKILL after KillGrace.
	Timeout time.Duration
	// KillGrace is how long an agent has after SIGTERM to save its work and
	// exit (agent.grace; default 30s).
	KillGrace time.Duration
	// PassEnv names harness environment variables passed to the agent
	// (e.g. ANTHROPIC_API_KEY). Unset names are skipped.
	PassEnv []string
	// OutputCap is how many bytes of stdout and of stderr are kept, the
	// tail (default 1 MiB each).
	OutputCap int
	// TempDir is where per-step directories for the prompt and result files
	// are made (default os.TempDir()). It must be outside the working copy,
	// so the harness does not commit them.
	TempDir string
}

// Runner runs agent steps. It holds no per-step state and is safe for
// concurrent use.
type Runner struct {
	args    []string
	cfg     RunnerConfig
	passEnv []string
}

// StepSpec is one step to run.
type StepSpec struct {
	Role    pipeline.Role
	Group   string
	StepID  string
	Model   string
	Prompt  string
	WorkDir string // the step's working copy
}

// Outcome is what a step produced.
type Outcome struct {
	Parsed   Parsed
	Args     []string // the command as run, placeholders filled
	ExitCode int      // -1 when killed by a signal
	TimedOut bool
	// Killed is true when the agent was still running KillGrace after the
	// timeout's SIGTERM and was killed.
	Killed bool
	// NoResult is true when the agent produced nothing parsable and either
	// printed nothing at all, crashed (non-zero exit) or timed out: the engine
	// retries such a step as a failed attempt rather than counting a PARTIAL.
	NoResult bool
	Stdout   []byte // tail, at most OutputCap bytes
	Stderr   []byte // tail, at most OutputCap bytes
	// StdoutBytes and StderrBytes are the full sizes printed, kept or not.
	StdoutBytes int64
	StderrBytes int64
	Duration    time.Duration
	ResultFile  []byte // raw bytes of the result file, if any
}

// NewRunner checks a configuration and returns a Runner. It does not look
// for the program (CheckCommand does), so a runner can be built where the
// agent is not installed yet.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	args, err := parseCommand(cfg.Command)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 || cfg.KillGrace < 0 || cfg.OutputCap < 0 {
		return nil, errors.New("agent runner: negative timeout, kill grace or output cap")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	if cfg.OutputCap == 0 {
		cfg.OutputCap = DefaultOutputCap
	}
	var pass []string
	for _, name := range cfg.PassEnv {
		if !envNameRe.MatchString(name) {
			return nil, fmt.Errorf("agent env: invalid variable name %q", name)
		}
		if strings.HasPrefix(name, "BAZINGA_") {
			return nil, fmt.Errorf("agent env: %s is set by the harness and cannot be passed through", name)
		}
		// Credentials stay out whatever built the configuration (flags, a
		// state snapshot), not only when it came through the parser.
		if err := pipeline.CheckAgentEnvName(name); err != nil {
			return nil, fmt.Errorf("agent env: %w", err)
		}
		pass = append(pass, name)
	}
	slices.Sort(pass)
	pass = slices.Compact(pass)
	// A relative program path means the harness's directory, not the working copy.
	if p := args[0]; strings.ContainsRune(p, filepath.Separator) && !filepath.IsAbs(p) && !placeholderRe.MatchString(p) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("agent command %q: %w", p, err)
		}
		args[0] = abs
	}
	return &Runner{args: args, cfg: cfg, passEnv: pass}, nil
}

// Timeout is how long a step may run before it is stopped.
func (r *Runner) Timeout() time.Duration { return r.cfg.Timeout }

// Run runs one agent step and reads its result. A timeout, a non-zero exit or
// a missing result are reported in the Outcome, not as errors; the error is
// for what stops the harness from running the step at all (no working copy,
// no program, the caller's context cancelled).
func (r *Runner) Run(ctx context.Context, spec StepSpec) (Outcome, error) {
	var out Outcome
	if fi, err := os.Stat(spec.WorkDir); err != nil {
		return out, fmt.Errorf("agent step %s: working copy: %w", spec.StepID, err)
	} else if !fi.IsDir() {
		return out, fmt.Errorf("agent step %s: working copy %s is not a directory", spec.StepID, spec.WorkDir)
	}
	dir, err := os.MkdirTemp(r.cfg.TempDir, "bazinga-step-")
	if err != nil {
		return out, fmt.Errorf("agent step %s: temp dir: %w", spec.StepID, err)
	}
	defer os.RemoveAll(dir)
	if within(dir, spec.WorkDir) {
		// The harness commits the working copy: the prompt must not be in it.
		return out, fmt.Errorf("agent step %s: temp dir %s is inside the working copy %s", spec.StepID, dir, spec.WorkDir)
	}
	promptFile := filepath.Join(dir, "prompt.md")
	resultFile := filepath.Join(dir, "result.json")
	if err := os.WriteFile(promptFile, []byte(spec.Prompt), 0o600); err != nil {
		return out, fmt.Errorf("agent step %s: write prompt: %w", spec.StepID, err)
	}
	stdin, err := os.Open(promptFile)
	if err != nil {
		return out, fmt.Errorf("agent step %s: open prompt: %w", spec.StepID, err)
	}
	defer stdin.Close()

	out.Args = fillPlaceholders(r.args, spec.Model, spec.Role.String(), promptFile)
	prog := out.Args[0]
	if !filepath.IsAbs(prog) {
		if prog, err = resolveProgram(prog); err != nil {
			return out, fmt.Errorf("agent step %s: %w", spec.StepID, err)
		}
	}

	stdout, stderr := proc.NewTail(r.cfg.OutputCap), proc.NewTail(r.cfg.OutputCap)
	res, err := proc.Run(ctx, proc.Cmd{
		Path: prog, Args: out.Args, Dir: spec.WorkDir,
		Env:   r.environ(spec, promptFile, resultFile),
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
		// At the timeout the agent and everything it started get SIGTERM
		// (time to save its work), then SIGKILL after the grace.
		Timeout: r.cfg.Timeout, Grace: r.cfg.KillGrace,
	})
	if err != nil {
		return out, fmt.Errorf("agent step %s: %w", spec.StepID, err)
	}
	out.Duration = res.Duration
	out.TimedOut, out.Killed = res.TimedOut, res.Killed
	out.ExitCode = res.ExitCode
	out.Stdout, out.StdoutBytes = stdout.Bytes(), stdout.Total()
	out.Stderr, out.StderrBytes = stderr.Bytes(), stderr.Total()

	var notes []string
	out.ResultFile, notes = readCapped(resultFile, DefaultResultFileCap)
	out.Parsed = ParseResult(spec.Role, out.ResultFile, out.Stdout)
	out.Parsed.Notes = append(notes, out.Parsed.Notes...)
	if out.StdoutBytes > int64(len(out.Stdout)) {
		out.Parsed.Notes = append(out.Parsed.Notes, fmt.Sprintf("stdout was %d bytes; kept the last %d", out.StdoutBytes, len(out.Stdout)))
	}
	if out.TimedOut {
		note := fmt.Sprintf("timed out after %s", r.cfg.Timeout)
		if res.Killed {
			note += fmt.Sprintf("; still running %s after SIGTERM, killed", r.cfg.KillGrace)
		}
		out.Parsed.Notes = append(out.Parsed.Notes, note)
	}
	if res.Strays > 0 {
		out.Parsed.Notes = append(out.Parsed.Notes, fmt.Sprintf("killed %d process(es) the agent left running", res.Strays))
	}
	out.Parsed.Notes = append(out.Parsed.Notes, res.Notes...)
	out.NoResult = out.Parsed.Source == SourceMalformed &&
		(out.TimedOut || out.ExitCode != 0 || (isBlank(out.Stdout) && isBlank(out.ResultFile)))

	if ctx.Err() != nil && !out.TimedOut {
		return out, fmt.Errorf("agent step %s: %w", spec.StepID, ctx.Err())
	}
	return out, nil
}

// environ builds the agent's whole environment: the base names, the
// configured pass-through names, then the harness's own variables, sorted.
func (r *Runner) environ(spec StepSpec, promptFile, resultFile string) []string {
	return proc.Environ(append(slices.Clone(baseEnv), r.passEnv...), map[string]string{
		"TERM":        "dumb",
		EnvRole:       spec.Role.String(),
		EnvGroup:      spec.Group,
		EnvStep:       spec.StepID,
		EnvModel:      spec.Model,
		EnvPromptFile: promptFile,
		EnvResultFile: resultFile,
	})
}

// readCapped reads the result file; a missing file is no result, an oversized
// one is ignored with a note rather than read into memory.
func readCapped(path string, max int64) ([]byte, []string) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []string{fmt.Sprintf("result file unreadable: %v", err)}
	}
	if !fi.Mode().IsRegular() {
		// A FIFO would block the harness; a symlink could point anywhere.
		return nil, []string{fmt.Sprintf("result file is not a regular file (%v), ignored", fi.Mode().Type())}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, []string{fmt.Sprintf("result file unreadable: %v", err)}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, []string{fmt.Sprintf("result file unreadable: %v", err)}
	}
	if int64(len(b)) > max {
		return nil, []string{fmt.Sprintf("result file larger than %d bytes, ignored", max)}
	}
	return b, nil
}

// within reports whether path is dir or below it, symlinks resolved.
func within(path, dir string) bool {
	p, err1 := filepath.EvalSymlinks(path)
	d, err2 := filepath.EvalSymlinks(dir)
	if err1 != nil || err2 != nil {
		p, d = filepath.Clean(path), filepath.Clean(dir)
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func isBlank(b []byte) bool { return len(strings.TrimSpace(string(b))) == 0 }
