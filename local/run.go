// Package local runs a whole bazinga session on a local repository: group
// branches are local branches, each step runs in its own temporary clone (up
// to the cap in parallel), merges land on the base through the test gate, and
// the session lives in <repo>/.bazinga/sessions/<id>/ so it can be resumed
// after a kill.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bazinga-bot/bazinga/agent"
	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/stepexec"
)

// Options configure a local session. Zero values mean: the configuration
// file's value, or its default.
type Options struct {
	Repo         string
	Base         string // default: the branch checked out
	Requirements string
	ResumeID     string
	AgentCommand string
	TestCommand  *string // set (even to "") to override tests.command
	// Baseline overrides tests.baseline (pause | accept | off) when set.
	Baseline    pipeline.BaselineMode
	MaxParallel int
	// PassEnv adds names to agent.env (the demo uses it for its scenario).
	PassEnv []string
	JSON    bool
	Out     io.Writer
	// Input answers clarifications; nil or not a terminal → the fallback at once.
	Input    io.Reader
	Terminal bool
	// ClarificationTimeout is how long a terminal question waits (default 5m).
	ClarificationTimeout time.Duration
	Logger               *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// TickEvery is how often timeouts are checked (default 30s).
	TickEvery time.Duration

	// Checkpoints (issue 13). At a checkpoint the run asks on the terminal
	// (approve / feedback / stop) when it has one; otherwise it stops there,
	// saved, and a later --resume continues.
	// Approve approves every checkpoint without asking (--approve).
	Approve bool
	// Feedback, given with ResumeID, sends the plan waiting at the plan
	// checkpoint back to the pm with this text (--feedback).
	Feedback string
	// Reviewer, when set, decides at each checkpoint instead of the terminal:
	// it returns the command to apply (approve, answer with feedback, stop).
	// The demo's scripted human is one.
	Reviewer func(s pipeline.Session) pipeline.Command

	// Gateway, when set, runs the metering gateway on loopback for the session: agents get its base URLs and a
	// step token instead of the provider keys, and the session's cost is what it metered (docs/gateway.md).
	Gateway *GatewayOptions
}

// Outcome is how a local session ended.
type Outcome struct {
	ID      string
	Status  pipeline.SessionStatus
	Reason  string
	Session pipeline.Session
}

// Verified reports whether the session ended with BAZINGA verified.
func (o Outcome) Verified() bool {
	return o.Status == pipeline.SessionDone && o.Reason == "BAZINGA verified"
}

// ErrInterrupted is returned when the context was cancelled (Ctrl-C): the
// session is saved and can be resumed.
var ErrInterrupted = errors.New("interrupted")

type runner struct {
	opts    Options
	agent   agent.Agent // what the preflight found
	store   *Store
	cfg     pipeline.Config
	exec    *stepexec.Executor
	s       pipeline.Session
	seq     int
	view    *view
	results chan stepDone
	replies chan termReply
	running map[string]context.CancelFunc
	gw      *localGateway // nil without Options.Gateway
	baseAt  plumbing.Hash
	asked   string // the clarification step already asked on the terminal
	// reading is set while a goroutine reads a line from the terminal: one
	// at a time, so a question and a checkpoint never read the same line.
	reading bool
	// askedCP is the checkpoint (and step count) last put to the human.
	askedCP string
	// noInput is set once the terminal's input ended.
	noInput bool
	// askedBL is the commit of the red baseline last put to the human.
	askedBL string
}

// termReply is one line read from the terminal for a prompt (key names it).
type termReply struct {
	key  string
	line string
	err  error
}

type stepDone struct {
	ev  pipeline.Event
	rep stepexec.Report
}

// Run runs (or resumes) a session to its end. Errors are for bad input and
// broken infrastructure; how the session ended is in the Outcome.
func Run(ctx context.Context, opts Options) (Outcome, error) {
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TickEvery <= 0 {
		opts.TickEvery = 30 * time.Second
	}
	if opts.ClarificationTimeout <= 0 {
		opts.ClarificationTimeout = 5 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	// From anywhere in the repository, as git works: its root holds the sessions.
	repoDir, err := RepoRoot(opts.Repo)
	if err != nil {
		return Outcome{}, err
	}
	opts.Repo = repoDir
	r := &runner{opts: opts, results: make(chan stepDone, 64), replies: make(chan termReply, 1), running: map[string]context.CancelFunc{}}
	if opts.ResumeID != "" {
		err = r.resume(ctx)
	} else {
		err = r.create(ctx)
	}
	if r.gw != nil {
		defer r.gw.close()
	}
	if err != nil {
		return Outcome{}, err
	}
	return r.loop(ctx)
}

// create checks everything before any session work, then starts the session.
func (r *runner) create(ctx context.Context) error {
	o := r.opts
	if strings.TrimSpace(o.Requirements) == "" {
		return errors.New("no requirements: give them as an argument or with --issue-file")
	}
	repo, err := gitops.OpenWorktree(o.Repo)
	if err != nil {
		_, _, cerr := checkRepo(o.Repo, "main")
		return cerr
	}
	if o.Base == "" {
		o.Base = currentBranch(repo)
		if o.Base == "" {
			return errors.New("HEAD is detached: say which branch to work on with --base")
		}
		r.opts.Base = o.Base
	}
	repo, head, err := checkRepo(o.Repo, o.Base)
	if err != nil {
		return err
	}
	fc, err := readConfigKeys(repo, head)
	if err != nil {
		return err
	}
	cfg, tests, noTests, err := chooseTests(repo, head, fc, o.TestCommand)
	if err != nil {
		return err
	}
	if cfg, err = r.override(ctx, cfg); err != nil {
		return err
	}
	if noTests != nil {
		return noTests
	}
	// Before the pm step, the first one paid for: the commands can start.
	if err := checkCommandsRun(repo, head, cfg); err != nil {
		return err
	}
	if cur := currentBranch(repo); cur != o.Base {
		// Leave the repository checked out on the base, where the merges land.
		wt, _ := repo.Worktree()
		if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(o.Base)}); err != nil {
			return fmt.Errorf("checking out %s: %w", o.Base, err)
		}
	}
	id := newSessionID(o.Now(), o.Repo)
	store, err := CreateStore(o.Repo, id)
	if err != nil {
		return err
	}
	r.store, r.cfg, r.baseAt = store, cfg, head
	if err := store.SaveConfig(cfg); err != nil {
		return err
	}
	if err := store.SaveBase(head); err != nil {
		return err
	}
	if err := r.setup(); err != nil {
		return err
	}
	r.view.started(id, o.Base, o.Repo, false)
	r.view.agentFound(r.agent)
	r.view.testsFound(cfg, tests)
	return r.apply([]pipeline.Event{pipeline.Started(id, o.Requirements, o.Base)})
}

// override applies the command-line flags to the file's configuration.
func (r *runner) override(ctx context.Context, cfg pipeline.Config) (pipeline.Config, error) {
	o := r.opts
	if o.AgentCommand != "" {
		cfg = config.WithAgentCommand(cfg, o.AgentCommand)
	}
	if o.TestCommand != nil {
		cfg.Tests.Command = *o.TestCommand
	}
	if o.MaxParallel != 0 {
		cfg.MaxParallel = o.MaxParallel
	}
	if o.Baseline != "" {
		cfg.Tests.Baseline = o.Baseline
	}
	for _, name := range o.PassEnv {
		if !slices.Contains(cfg.Agent.Env, name) {
			cfg.Agent.Env = append(cfg.Agent.Env, name)
		}
	}
	if err := config.Validate(cfg); err != nil {
		return cfg, fmt.Errorf("configuration: %w", err)
	}
	// Before any model is paid for: the CLI is there, answers, and its
	// flags can work headless.
	a, err := agent.Preflight(ctx, cfg)
	if err != nil {
		return cfg, err
	}
	r.agent = a
	// Local mode has no pull requests: its merges land by push, through the
	// same test gate, whatever merge.method says for GitHub mode.
	cfg.Merge.Method = pipeline.MergePush
	// Local questions are asked on the terminal: a short wait, or none at all.
	cfg.ClarificationTimeout = pipeline.Duration(o.ClarificationTimeout)
	if !o.Terminal || o.Input == nil {
		cfg.ClarificationTimeout = pipeline.Duration(time.Nanosecond)
	}
	return cfg, nil
}

// resume reloads a session after a stop or a kill: the saved state plus the
// log entries it had not applied yet; the steps that were in flight are sent
// again (they are the interrupted ones).
func (r *runner) resume(ctx context.Context) error {
	o := r.opts
	store, err := OpenStore(o.Repo, o.ResumeID)
	if err != nil {
		return err
	}
	if err := store.Repair(); err != nil {
		return err
	}
	saved, err := store.Config()
	if err != nil {
		return err
	}
	cfg, err := r.override(ctx, saved)
	if err != nil {
		return err
	}
	s, applied, err := store.Replay(cfg)
	if err != nil {
		return err
	}
	if s.Status == pipeline.SessionNew {
		return fmt.Errorf("session %s never started; start a new one", o.ResumeID)
	}
	if strings.TrimSpace(o.Feedback) != "" && (s.Checkpoint == nil || s.Checkpoint.Kind == pipeline.CheckpointPhase) {
		return fmt.Errorf("--feedback: session %s has no plan or findings waiting for a decision", o.ResumeID)
	}
	if at := store.Base(); !at.IsZero() {
		// A kill between a merge and the checkout's update leaves it behind.
		if _, err := syncWorktree(o.Repo, s.Base, at); err != nil {
			return err
		}
	}
	gitRepo, head, err := checkRepo(o.Repo, s.Base)
	if err != nil {
		return err
	}
	// The cost limits are read again from the base's .github/bazinga.yml
	// (after the replay, which must follow the limits the run had): a session
	// paused at its cost limit continues once the limit was raised.
	if cfg, err = refreshCostLimits(gitRepo, head, cfg); err != nil {
		return err
	}
	if err := store.SaveConfig(cfg); err != nil {
		return err
	}
	r.opts.Base = s.Base
	r.store, r.cfg, r.s, r.seq, r.baseAt = store, cfg, s, applied, head
	if err := store.SaveBase(head); err != nil {
		return err
	}
	if err := r.setup(); err != nil {
		return err
	}
	if s.Status == pipeline.SessionDone {
		r.view.warn(fmt.Sprintf("session %s is already done", s.ID))
		return nil
	}
	r.view.started(s.ID, s.Base, o.Repo, true)
	r.view.agentFound(r.agent)
	if err := r.apply([]pipeline.Event{pipeline.CommandEvent(s.ID, "local", pipeline.Command{Kind: pipeline.CommandResume, Restart: true})}); err != nil {
		return err
	}
	if fb := strings.TrimSpace(o.Feedback); fb != "" && r.s.Checkpoint != nil {
		return r.apply([]pipeline.Event{pipeline.CommandEvent(s.ID, "local", pipeline.Command{Kind: pipeline.CommandAnswer, Text: fb})})
	}
	return nil
}

func (r *runner) setup() error {
	passEnv := r.cfg.Agent.Env
	if r.opts.Gateway != nil {
		gw, err := startGateway(*r.opts.Gateway, r.opts.Repo, r.cfg)
		if err != nil {
			return err
		}
		r.gw = gw
		gw.carry(r.s)
		passEnv = agentEnvWithoutCredentials(passEnv)
	}
	run, err := agent.NewRunner(agent.RunnerConfig{Command: r.cfg.Agent.Command, CLI: string(config.AgentCLI(r.cfg)), Timeout: r.cfg.Agent.Timeout.D(), KillGrace: r.cfg.Agent.Grace.D(), PassEnv: passEnv,
		// The CLI stops itself at these caps, before the harness has to.
		MaxTurns: r.cfg.Agent.MaxTurns, MaxBudgetUSD: r.cfg.Limits.StepCostUSD,
		// Every step's whole output stays with the session, to read after.
		TranscriptDir: filepath.Join(r.store.Dir, "transcripts")})
	if err != nil {
		return err
	}
	r.exec = &stepexec.Executor{Remote: gitops.Remote{URL: r.opts.Repo}, Config: r.cfg, Runner: run, Logger: r.opts.Logger}
	if r.gw != nil {
		r.exec.Meter = r.gw
	}
	r.view = newView(r.opts.Out, r.opts.JSON, r.opts.Terminal)
	return nil
}

// apply logs the events, reconciles, saves, and carries out the actions.
func (r *runner) apply(events []pipeline.Event) error {
	now := r.opts.Now().UTC()
	r.seq++
	if err := r.store.Append(LogEntry{Seq: r.seq, At: now, Events: events}); err != nil {
		return err
	}
	before := r.s
	s, actions := pipeline.Reconcile(r.s, events, now, r.cfg)
	if err := pipeline.CheckLiveness(s, r.cfg); err != nil {
		r.opts.Logger.Error("liveness invariant broken", "session", s.ID, "err", err)
	}
	r.s = s
	if err := r.store.Save(s, r.seq); err != nil {
		return err
	}
	r.view.reconciled(before, s, events, actions)
	for _, a := range actions {
		r.act(a)
	}
	return nil
}

func (r *runner) act(a pipeline.Action) {
	switch a.Kind {
	case pipeline.ActionDispatch:
		r.start(a.Step)
	case pipeline.ActionCancel:
		if cancel := r.running[a.Step]; cancel != nil {
			cancel()
		}
	case pipeline.ActionNotify:
		if a.Notice == pipeline.NoticeQuestion {
			r.ask(a.Text)
		}
	}
}

// start runs a step in the background; its result comes back on r.results.
func (r *runner) start(id string) {
	if _, busy := r.running[id]; busy {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.running[id] = cancel
	s := r.s.Clone()
	now := r.opts.Now
	go func() {
		began := now().UTC()
		ev, rep := r.exec.Run(ctx, s, id)
		// The step's own timings: the engine corrects its size estimates
		// with them (issue 23).
		ev.StartedAt, ev.EndedAt = began, now().UTC()
		if ctx.Err() != nil {
			// What the step cost before it was cancelled still counts (issue 23).
			u, run := ev.Usage, ev.RunURL
			ev = pipeline.StepFailure(s.ID, id, "cancelled")
			ev.Usage, ev.RunURL = u, run
		}
		r.results <- stepDone{ev: ev, rep: rep}
	}()
}

// ask puts the pm's question on the terminal; the answer arrives on r.replies.
func (r *runner) ask(question string) {
	cl := r.s.Clarification
	if cl == nil || cl.Step == r.asked || !r.interactive() || r.reading {
		return // a line is being read for another prompt: asked once it is in
	}
	r.asked = cl.Step
	r.view.question(question, r.opts.ClarificationTimeout)
	r.read("question " + cl.Step)
}

// interactive reports whether a person can be asked on the terminal.
func (r *runner) interactive() bool {
	return r.opts.Terminal && r.opts.Input != nil && !r.noInput
}

// read reads one line of the terminal in the background for the prompt key.
func (r *runner) read(key string) {
	r.reading = true
	go func() {
		line, err := readLine(r.opts.Input)
		r.replies <- termReply{key: key, line: strings.TrimSpace(line), err: err}
	}()
}

func readLine(in io.Reader) (string, error) {
	var b strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := in.Read(buf)
		if n == 1 {
			if buf[0] == '\n' {
				return b.String(), nil
			}
			b.WriteByte(buf[0])
		}
		if err != nil {
			return b.String(), err
		}
	}
}

// loop feeds step results, answers and ticks to the engine until the session ends.
func (r *runner) loop(ctx context.Context) (Outcome, error) {
	tick := time.NewTicker(r.opts.TickEvery)
	defer tick.Stop()
	// On a terminal the progress lines tick every second between events.
	var redraw <-chan time.Time
	if r.view.terminal {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		redraw = t.C
	}
	for {
		r.view.progress(r.s)
		if r.s.Status.Terminal() {
			break
		}
		r.askBaseline()
		if r.s.Status == pipeline.SessionPaused && len(r.running) == 0 && !r.awaitsBaseline() {
			if baselineWaits(r.s) {
				// A red baseline and nobody here to accept it: stop, saved.
				r.view.baselineStop(r.s, r.opts.Repo, r.askedBL == r.s.Baseline.Commit)
			} else {
				// The engine's reason names no command (issue 23): the
				// terminal says how to go on in its own words.
				r.view.warn(fmt.Sprintf("paused; the session is saved. Once the cause is dealt with, continue with:\n  bazinga run --repo %s --resume %s",
					r.opts.Repo, r.s.ID))
			}
			break
		}
		if r.s.Clarification != nil && (!r.opts.Terminal || r.opts.Input == nil) {
			// No terminal to ask on: the pm proceeds with its fallback at once.
			if err := r.apply([]pipeline.Event{pipeline.Tick(r.s.ID)}); err != nil {
				return Outcome{}, err
			}
			continue
		}
		if cl := r.s.Clarification; cl != nil && cl.Step != r.asked {
			r.ask(cl.Question) // not asked yet: another prompt was reading
		}
		if evs := r.checkpoint(); len(evs) > 0 {
			if err := r.apply(evs); err != nil {
				return Outcome{}, err
			}
			continue
		}
		if r.stalled() {
			// A checkpoint waits and nobody here can approve it: stop, saved.
			r.view.checkpointStop(r.s, r.opts.Repo)
			break
		}
		var events []pipeline.Event
		select {
		case <-ctx.Done():
			r.interrupt()
			return r.outcome(), ErrInterrupted
		case d := <-r.results:
			events = r.collect(d)
		case rep := <-r.replies:
			events = r.reply(rep)
			if len(events) == 0 {
				continue
			}
		case <-tick.C:
			events = []pipeline.Event{pipeline.Tick(r.s.ID)}
		case <-redraw:
			continue
		}
		if err := r.apply(events); err != nil {
			return Outcome{}, err
		}
		r.sync()
	}
	r.view.summary(r.s)
	return r.outcome(), nil
}

// collect takes a finished step and every other one already waiting, so a
// single reconcile routes results that arrive together.
func (r *runner) collect(first stepDone) []pipeline.Event {
	done := []stepDone{first}
	for more := true; more; {
		select {
		case d := <-r.results:
			done = append(done, d)
		default:
			more = false
		}
	}
	var events []pipeline.Event
	for _, d := range done {
		delete(r.running, d.ev.Step)
		r.view.finished(d.rep, d.ev)
		events = append(events, d.ev)
	}
	return events
}

// sync keeps the repository's checkout of the base current after merges.
func (r *runner) sync() {
	at, err := syncWorktree(r.opts.Repo, r.s.Base, r.baseAt)
	if err != nil {
		r.view.warn(err.Error())
		return
	}
	if at != r.baseAt {
		if err := r.store.SaveBase(at); err != nil {
			r.view.warn(err.Error())
		}
	}
	r.baseAt = at
}

// interrupt stops the running steps without recording them: on resume they
// are the interrupted steps and run again.
func (r *runner) interrupt() {
	for _, cancel := range r.running {
		cancel()
	}
	for range r.running {
		<-r.results
	}
	r.running = map[string]context.CancelFunc{}
	r.view.warn(fmt.Sprintf("interrupted; resume with: bazinga run --repo %s --resume %s", r.opts.Repo, r.s.ID))
}

func (r *runner) outcome() Outcome {
	return Outcome{ID: r.s.ID, Status: r.s.Status, Reason: r.s.Reason, Session: r.s}
}

// newSessionID names a session after its start time, unique in the repository.
func newSessionID(now time.Time, repo string) string {
	base := now.UTC().Format("20060102-150405")
	id := base
	for i := 2; ; i++ {
		if _, err := os.Stat(filepath.Join(sessionsDir(repo), id)); errors.Is(err, os.ErrNotExist) {
			return id
		}
		id = fmt.Sprintf("%s-%d", base, i)
	}
}
