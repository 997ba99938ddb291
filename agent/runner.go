package agent

import (
	"bytes"
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

	"github.com/bazinga-bot/bazinga/config"
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

// Environment variables the harness sets for every step (ARCHITECTURE.md §4).
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
	// CLI names the agent CLI (agent.cli): "" or "auto" recognises it from
	// the command's program; "generic" is any other command.
	CLI string
	// Timeout bounds one step (default 30m). On expiry the agent and every
	// process it started get SIGTERM, then SIGKILL after KillGrace.
	Timeout time.Duration
	// KillGrace is how long an agent has after SIGTERM to save its work and
	// exit (agent.grace; default 30s).
	KillGrace time.Duration
	// PassEnv names harness environment variables passed to the agent
	// (e.g. ANTHROPIC_API_KEY). Unset names are skipped.
	PassEnv []string
	// OutputCap is how many bytes of stdout and of stderr are kept to show
	// (the tail, default 1 MiB each). The result is read from the whole
	// output as it streams, whatever its size.
	OutputCap int
	// TempDir is where per-step directories for the prompt and result files
	// are made (default os.TempDir()). It must be outside the working copy,
	// so the harness does not commit them.
	TempDir string
	// TranscriptDir, when set, keeps each step's whole output there
	// (<step>.stdout and <step>.stderr, up to MaxTranscriptBytes each).
	TranscriptDir string
	// MaxTurns and MaxBudgetUSD are caps passed to CLIs that take them, so
	// the CLI stops itself (0: none).
	MaxTurns     int
	MaxBudgetUSD float64
	// Retries is how many more times a run that failed on a likely-transient
	// model API error (overloaded, rate limited, 5xx) is tried, after
	// RetryBackoff, doubled each time (defaults 2 and 30s; -1: no retry).
	Retries      int
	RetryBackoff time.Duration
	// Sandboxed says the harness runs on a throwaway machine (an Actions
	// runner), where a CLI's unsandboxed mode may be used as root.
	Sandboxed bool
}

// MaxTranscriptBytes bounds each stream of a kept transcript.
const MaxTranscriptBytes = 256 << 20

// Defaults of the transient-error retry.
const (
	DefaultRetries      = 2
	DefaultRetryBackoff = 30 * time.Second
)

// Runner runs agent steps. It holds no per-step state and is safe for
// concurrent use.
type Runner struct {
	args    []string
	cfg     RunnerConfig
	passEnv []string
	driver  Driver
}

// StepSpec is one step to run.
type StepSpec struct {
	Role    pipeline.Role
	Group   string
	StepID  string
	Model   string
	Prompt  string
	WorkDir string // the step's working copy
	// Env is set in the agent's environment for this step only, over the passed-through names (a metering
	// gateway's base URLs and token, in place of the provider key).
	Env map[string]string
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
	// printed nothing at all, crashed (non-zero exit), timed out or its CLI
	// reported a failure: the engine retries such a step as a failed attempt
	// rather than counting a PARTIAL.
	NoResult bool
	// Failure is the CLI's own report of why the run failed (nil when it
	// did not, or the CLI has no driver that reads one).
	Failure *CLIFailure
	// Denied lists the tool uses the CLI refused.
	Denied []string
	// Attempts is how many times the CLI ran (retries after transient API
	// errors included).
	Attempts int
	Stdout   []byte // tail, at most OutputCap bytes
	Stderr   []byte // tail, at most OutputCap bytes
	// StdoutBytes and StderrBytes are the full sizes printed, kept or not.
	StdoutBytes int64
	StderrBytes int64
	Duration    time.Duration
	ResultFile  []byte // raw bytes of the result file, if any
	// Transcript names the files holding the whole output, when kept.
	Transcript []string
}

// NewRunner checks a configuration and returns a Runner. It does not look
// for the program (Preflight does), so a runner can be built where the
// agent is not installed yet.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	args, err := parseCommand(cfg.Command)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 || cfg.KillGrace < 0 || cfg.OutputCap < 0 || cfg.MaxTurns < 0 || cfg.MaxBudgetUSD < 0 || cfg.RetryBackoff < 0 {
		return nil, errors.New("agent runner: negative timeout, kill grace, output cap, turn cap, budget or backoff")
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
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	driver, err := DriverFor(cfg.CLI, cfg.Command)
	if err != nil {
		return nil, err
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
		if err := config.CheckAgentEnvName(name); err != nil {
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
	return &Runner{args: args, cfg: cfg, passEnv: pass, driver: driver}, nil
}

// Timeout is how long a step may run before it is stopped.
func (r *Runner) Timeout() time.Duration { return r.cfg.Timeout }

// CLI names the driver the runner uses.
func (r *Runner) CLI() string { return r.driver.Name() }

// FinalAnswer says whether results come from the CLI's final answer (the
// prompt then asks for the result as the answer, not in a file).
func (r *Runner) FinalAnswer() bool { return r.driver.FinalAnswer() }

// ResultFileName is where an agent without a final answer writes its
// result: in the working copy, where any agent may write; the runner reads
// and removes it, so it is never committed.
const ResultFileName = ".bazinga-result.json"

// Run runs one agent step and reads its result. A timeout, a non-zero exit,
// a CLI's failure report or a missing result are reported in the Outcome,
// not as errors; the error is for what stops the harness from running the
// step at all (no working copy, no program, the caller's context cancelled).
// A run that failed on a likely-transient API error is run again in the
// same working copy after a backoff, up to Retries times, within Timeout.
func (r *Runner) Run(ctx context.Context, spec StepSpec) (Outcome, error) {
	var out Outcome
	if fi, err := os.Stat(spec.WorkDir); err != nil {
		return out, fmt.Errorf("agent step %s: working copy: %w", spec.StepID, err)
	} else if !fi.IsDir() {
		return out, fmt.Errorf("agent step %s: working copy %s is not a directory", spec.StepID, spec.WorkDir)
	}
	deadline := time.Now().Add(r.cfg.Timeout)
	var (
		total    pipeline.Usage
		priced   bool
		counted  bool
		retried  []string
		duration time.Duration
	)
	for attempt := 1; ; attempt++ {
		o, err := r.runOnce(ctx, spec, time.Until(deadline), attempt)
		duration += o.Duration
		if o.Parsed.Usage != nil {
			total.Add(*o.Parsed.Usage)
			priced, counted = priced || o.Parsed.Usage.Priced > 0, true
		}
		out = o
		if err != nil {
			return out, err
		}
		if out.Failure == nil || !out.Failure.Kind.Transient() || out.TimedOut || attempt > r.cfg.Retries {
			break
		}
		wait := r.cfg.RetryBackoff << (attempt - 1)
		if time.Until(deadline) < wait+time.Second {
			break
		}
		retried = append(retried, fmt.Sprintf("attempt %d: %s; retried after %s", attempt, out.Failure.Message, wait))
		select {
		case <-ctx.Done():
			return out, fmt.Errorf("agent step %s: %w", spec.StepID, ctx.Err())
		case <-time.After(wait):
		}
	}
	out.Duration = duration
	if counted && out.Attempts > 1 {
		// Every attempt was paid for.
		// One step, priced when any attempt reported dollars.
		total.Steps, total.Priced = 1, 0
		if priced {
			total.Priced = 1
		}
		out.Parsed.Usage = &total
	}
	out.Parsed.Notes = append(retried, out.Parsed.Notes...)
	return out, nil
}

func (r *Runner) runOnce(ctx context.Context, spec StepSpec, timeout time.Duration, attempt int) (Outcome, error) {
	out := Outcome{Attempts: attempt}
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
	if err := os.WriteFile(promptFile, []byte(spec.Prompt), 0o600); err != nil {
		return out, fmt.Errorf("agent step %s: write prompt: %w", spec.StepID, err)
	}
	stdin, err := os.Open(promptFile)
	if err != nil {
		return out, fmt.Errorf("agent step %s: open prompt: %w", spec.StepID, err)
	}
	defer stdin.Close()

	resultFile := ""
	var notes []string
	if !r.driver.FinalAnswer() {
		resultFile = filepath.Join(spec.WorkDir, ResultFileName)
		// A result the branch carries is not this step's.
		if _, err := os.Lstat(resultFile); err == nil {
			if err := os.Remove(resultFile); err != nil {
				return out, fmt.Errorf("agent step %s: removing a stale %s: %w", spec.StepID, ResultFileName, err)
			}
			notes = append(notes, "removed a "+ResultFileName+" already in the working copy")
		}
		defer os.Remove(resultFile)
	}
	filled := fillPlaceholders(r.args, spec.Model, spec.Role.String(), promptFile)
	access := RoleAccess(spec.Role)
	schema := ResultSchema(spec.Role)
	if r.driver.Name() == "codex" {
		schema = StrictResultSchema(spec.Role)
	}
	inv, err := r.driver.Invocation(filled, Invoke{
		Role: spec.Role, Access: access, Model: spec.Model, Dir: dir, WorkDir: spec.WorkDir,
		Schema: schema, MaxTurns: r.cfg.MaxTurns, MaxBudgetUSD: r.cfg.MaxBudgetUSD,
		Root: os.Geteuid() == 0, Sandboxed: r.cfg.Sandboxed, CacheDirs: r.cacheDirs(),
		OpenAIBaseURL: spec.Env["OPENAI_BASE_URL"],
	})
	if err != nil {
		return out, fmt.Errorf("agent step %s: %w", spec.StepID, err)
	}
	for _, name := range sortedKeys(inv.Files) {
		if err := os.WriteFile(filepath.Join(dir, name), inv.Files[name], 0o600); err != nil {
			return out, fmt.Errorf("agent step %s: write %s: %w", spec.StepID, name, err)
		}
	}
	out.Args = inv.Args
	prog := out.Args[0]
	if !filepath.IsAbs(prog) {
		if prog, err = resolveProgram(prog); err != nil {
			return out, fmt.Errorf("agent step %s: %w", spec.StepID, err)
		}
	}

	reader := r.driver.NewReader()
	lines := newLineWriter(reader, MaxLineBytes)
	var sink io.Writer = lines
	if raw, ok := reader.(rawOutputReader); ok {
		sink = raw
	}
	stdoutTail, stderrTail := proc.NewTail(r.cfg.OutputCap), proc.NewTail(r.cfg.OutputCap)
	stdoutW, stderrW := io.Writer(io.MultiWriter(sink, stdoutTail)), io.Writer(stderrTail)
	if r.cfg.TranscriptDir != "" {
		tout, terr, paths, err := r.openTranscript(spec.StepID, attempt)
		if err != nil {
			notes = append(notes, "transcript not kept: "+err.Error())
		} else {
			defer tout.Close()
			defer terr.Close()
			stdoutW, stderrW = io.MultiWriter(stdoutW, tout), io.MultiWriter(stderrW, terr)
			out.Transcript = paths
		}
	}
	res, err := proc.Run(ctx, proc.Cmd{
		Path: prog, Args: out.Args, Dir: spec.WorkDir,
		Env:   r.environ(spec, promptFile, resultFile, inv.Env),
		Stdin: stdin, Stdout: stdoutW, Stderr: stderrW,
		// At the timeout the agent and everything it started get SIGTERM
		// (time to save its work), then SIGKILL after the grace.
		Timeout: timeout, Grace: r.cfg.KillGrace,
	})
	if err != nil {
		return out, fmt.Errorf("agent step %s: %w", spec.StepID, err)
	}
	if sink == io.Writer(lines) {
		lines.close()
	}
	out.Duration = res.Duration
	out.TimedOut, out.Killed = res.TimedOut, res.Killed
	out.ExitCode = res.ExitCode
	out.Stdout, out.StdoutBytes = stdoutTail.Bytes(), stdoutTail.Total()
	out.Stderr, out.StderrBytes = stderrTail.Bytes(), stderrTail.Total()

	var answerFile []byte
	if inv.AnswerFile != "" {
		var n []string
		answerFile, n = readCapped(filepath.Join(dir, inv.AnswerFile), MaxLineBytes)
		notes = append(notes, n...)
	}
	final := reader.Finish(answerFile)
	out.Failure, out.Denied = final.Failure, final.Denied
	if r.driver.FinalAnswer() {
		out.Parsed = ParseAnswer(spec.Role, final)
	} else {
		out.ResultFile, notes = readCappedAppend(resultFile, notes)
		out.Parsed = ParseResult(spec.Role, out.ResultFile, final.raw)
		if final.Usage != nil {
			out.Parsed.Usage, out.Parsed.UsageSource = final.Usage, final.UsageSource
		}
		out.Parsed.Notes = append(final.Notes, out.Parsed.Notes...)
	}
	out.Parsed.Notes = append(notes, out.Parsed.Notes...)
	if out.Failure == nil && !out.TimedOut && out.ExitCode != 0 && out.Parsed.Source == SourceMalformed {
		out.Failure = newFailure(FailureExecution, "%s exited with code %d%s", r.who(), out.ExitCode, suffix(lastLine(out.Stderr)))
	}
	if out.Failure != nil {
		out.Parsed.Notes = append(out.Parsed.Notes, out.Failure.Message)
	}
	if len(out.Denied) > 0 {
		out.Parsed.Notes = append(out.Parsed.Notes, fmt.Sprintf("%s denied %d tool use(s): %s", r.who(), len(out.Denied), strings.Join(firstN(out.Denied, 5), ", ")))
	}
	if out.TimedOut {
		note := fmt.Sprintf("timed out after %s", config.ShortDuration(r.cfg.Timeout))
		if res.Killed {
			note += fmt.Sprintf("; still running %s after SIGTERM, killed", r.cfg.KillGrace)
		}
		out.Parsed.Notes = append(out.Parsed.Notes, note)
	}
	if res.Strays > 0 {
		out.Parsed.Notes = append(out.Parsed.Notes, fmt.Sprintf("killed %d process(es) the agent left running", res.Strays))
	}
	out.Parsed.Notes = append(out.Parsed.Notes, res.Notes...)
	if out.Failure != nil && out.Failure.Kind != FailureNone {
		// The CLI says the run failed: its text (if any) is not an answer.
		out.NoResult = true
		out.Parsed.Result = pipeline.Result{Status: pipeline.StatusPartial, Summary: []string{MalformedSummary}}
		out.Parsed.Source = SourceMalformed
	} else {
		out.NoResult = out.Parsed.Source == SourceMalformed &&
			(out.TimedOut || out.ExitCode != 0 || (isBlank([]byte(final.Answer)) && isBlank(final.raw) && isBlank(out.ResultFile)))
	}

	if ctx.Err() != nil && !out.TimedOut {
		return out, fmt.Errorf("agent step %s: %w", spec.StepID, ctx.Err())
	}
	return out, nil
}

// cacheVars name where toolchains keep caches outside ~/.cache.
var cacheVars = []string{"GOCACHE", "GOMODCACHE", "XDG_CACHE_HOME", "PIP_CACHE_DIR", "npm_config_cache", "CARGO_HOME", "GRADLE_USER_HOME"}

// cacheDirs are the agent's ~/.cache (made if missing) and the cache
// directories the variables passed to it name, so that a sandboxed CLI can be
// told to let tests write there.
func (r *Runner) cacheDirs() []string {
	var dirs []string
	if home := os.Getenv("HOME"); filepath.IsAbs(home) {
		dir := filepath.Join(home, ".cache")
		if os.MkdirAll(dir, 0o700) == nil {
			dirs = append(dirs, dir)
		}
	}
	for _, name := range cacheVars {
		if !slices.Contains(r.passEnv, name) {
			continue
		}
		if v := os.Getenv(name); filepath.IsAbs(v) && !slices.Contains(dirs, v) {
			if fi, err := os.Stat(v); err == nil && fi.IsDir() {
				dirs = append(dirs, v)
			}
		}
	}
	return dirs
}

// who names the agent in messages: its CLI, or "the agent".
func (r *Runner) who() string {
	if r.driver.Name() == "generic" {
		return "the agent"
	}
	return r.driver.Name()
}

func readCappedAppend(path string, notes []string) ([]byte, []string) {
	b, n := readCapped(path, DefaultResultFileCap)
	return b, append(notes, n...)
}

func (r *Runner) openTranscript(stepID string, attempt int) (io.WriteCloser, io.WriteCloser, []string, error) {
	if err := os.MkdirAll(r.cfg.TranscriptDir, 0o700); err != nil {
		return nil, nil, nil, err
	}
	name := safeName(stepID)
	if attempt > 1 {
		name += fmt.Sprintf(".attempt%d", attempt)
	}
	var files []io.WriteCloser
	var paths []string
	for _, ext := range []string{".stdout", ".stderr"} {
		p := filepath.Join(r.cfg.TranscriptDir, name+ext)
		f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, nil, err
		}
		files = append(files, &cappedFile{f: f, left: MaxTranscriptBytes})
		paths = append(paths, p)
	}
	return files[0], files[1], paths, nil
}

// cappedFile writes at most left bytes, then a marker, and swallows the
// rest: a transcript never fills the disk.
type cappedFile struct {
	f    *os.File
	left int64
	cut  bool
}

func (c *cappedFile) Write(p []byte) (int, error) {
	n := len(p)
	if c.left <= 0 {
		if !c.cut {
			c.cut = true
			_, _ = c.f.WriteString("\n[bazinga: transcript cut here]\n")
		}
		return n, nil
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	c.left -= int64(len(p))
	_, _ = c.f.Write(p) // a transcript that cannot be written never fails the step
	return n, nil
}

func (c *cappedFile) Close() error { return c.f.Close() }

var unsafeNameRe = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func safeName(s string) string {
	s = unsafeNameRe.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		return "step"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// lastLine is the last non-empty line of output, for a failure's reason.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// environ builds the agent's whole environment: the base names, the
// configured pass-through names, then the harness's own variables, sorted.
func (r *Runner) environ(spec StepSpec, promptFile, resultFile string, extra map[string]string) []string {
	set := map[string]string{}
	for k, v := range spec.Env {
		set[k] = v
	}
	for k, v := range extra {
		set[k] = v
	}
	for k, v := range map[string]string{
		"TERM":        "dumb",
		EnvRole:       spec.Role.String(),
		EnvGroup:      spec.Group,
		EnvStep:       spec.StepID,
		EnvModel:      spec.Model,
		EnvPromptFile: promptFile,
	} {
		set[k] = v
	}
	if resultFile != "" {
		// Offered only to agents whose result is not their final answer.
		set[EnvResultFile] = resultFile
	}
	return proc.Environ(append(slices.Clone(baseEnv), r.passEnv...), set)
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

func isBlank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }
