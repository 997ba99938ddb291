package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/bazinga-bot/bazinga/internal/scripted"
	"github.com/bazinga-bot/bazinga/local"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Exit codes of run and demo.
const (
	exitOK          = 0
	exitNotVerified = 1 // the session ended without a verified BAZINGA
	exitUsage       = 2
	exitInterrupted = 130
)

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// runRun is `bazinga run`.
func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run")
	repo := fs.String("repo", ".", "the repository to work on")
	base := fs.String("base", "", "the branch to land on (default: the branch checked out)")
	agentCmd := fs.String("agent", "", `the agent command, e.g. "claude -p --model {model}" (default: agent.command of .github/bazinga.yml)`)
	testCmd := fs.String("test-command", "", "the test command of the gate (default: tests.command)")
	maxPar := fs.Int("max-parallel", 0, "implementation steps at once (default: max_parallel)")
	baseline := fs.String("baseline", "", "a base whose tests already fail: pause | accept | off (default: tests.baseline)")
	resume := fs.String("resume", "", "resume the session with this id")
	issueFile := fs.String("issue-file", "", "read the requirements from this file")
	asJSON := fs.Bool("json", false, "print events as JSON lines")
	approve := fs.Bool("approve", false, "approve every checkpoint (checkpoints: in the configuration) without asking")
	feedback := fs.String("feedback", "", "with --resume: send the plan waiting for approval back to the pm with this feedback")
	useGateway := fs.Bool("gateway", false, "meter the agents' model calls through bazinga's gateway on loopback: the provider keys "+
		"(ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY) stay in bazinga, each step gets a token of its own, and the "+
		"session's cost is what the gateway metered (docs/gateway.md)")
	usage := flagUsage(fs, `Usage: bazinga run [flags] "requirements"
       bazinga run [flags] --issue-file FILE
       bazinga run --repo DIR --resume ID [--approve | --feedback TEXT]

Runs a whole session on a local repository. Exit code 0 only when the
harness verified BAZINGA. At a checkpoint the run asks on the terminal; without
one it stops there (exit code 1), and --resume with --approve or --feedback
continues.
`)
	pos, code, ok := parseFlags(fs, args, usage, stdout, stderr)
	if !ok {
		return code
	}
	opts := local.Options{Repo: *repo, Base: *base, ResumeID: *resume, AgentCommand: *agentCmd, MaxParallel: *maxPar, JSON: *asJSON,
		Approve: *approve, Feedback: *feedback}
	if fs.Changed("feedback") && (*resume == "" || strings.TrimSpace(*feedback) == "" || *approve) {
		fmt.Fprintln(stderr, "bazinga run: --feedback needs --resume ID and a text, and goes without --approve")
		return exitUsage
	}
	if fs.Changed("test-command") {
		opts.TestCommand = testCmd
	}
	if fs.Changed("baseline") {
		switch m := pipeline.BaselineMode(*baseline); m {
		case pipeline.BaselinePause, pipeline.BaselineAccept, pipeline.BaselineOff:
			opts.Baseline = m
		default:
			fmt.Fprintf(stderr, "bazinga run: --baseline must be pause, accept or off, not %q\n", *baseline)
			usage(stderr)
			return exitUsage
		}
	}
	if *useGateway {
		g, err := local.GatewayFromEnv(os.Getenv)
		if err != nil {
			fmt.Fprintf(stderr, "bazinga run: --gateway: %v\n", err)
			return exitUsage
		}
		opts.Gateway = g
	}
	if fs.Changed("max-parallel") && *maxPar < 1 {
		fmt.Fprintln(stderr, "bazinga run: --max-parallel must be at least 1")
		return exitUsage
	}
	switch {
	case *issueFile != "":
		b, err := os.ReadFile(*issueFile)
		if err != nil {
			fmt.Fprintf(stderr, "bazinga run: %v\n", err)
			return exitUsage
		}
		opts.Requirements = string(b)
	case len(pos) > 0:
		opts.Requirements = strings.Join(pos, " ")
	case *resume == "":
		fmt.Fprint(stderr, `bazinga run: no requirements: say what to build as an argument (bazinga run "add a --verbose flag"), `+
			"or in a file with --issue-file FILE; or continue a session with --resume ID\n\n")
		usage(stderr)
		return exitUsage
	}
	return runLocal(opts, stdout, stderr)
}

// runLocal runs a session with the terminal attached, Ctrl-C saving it.
func runLocal(opts local.Options, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts.Out = stdout
	if f, ok := stdout.(*os.File); ok && isTerminal(f) {
		opts.Terminal = isTerminal(os.Stdin)
		opts.Input = os.Stdin
	}
	out, err := local.Run(ctx, opts)
	switch {
	case errors.Is(err, local.ErrInterrupted):
		fmt.Fprintf(stderr, "bazinga: interrupted; resume with: bazinga run --repo %s --resume %s\n", opts.Repo, out.ID)
		return exitInterrupted
	case err != nil:
		fmt.Fprintf(stderr, "bazinga: %v\n", err)
		return exitUsage
	case out.Verified():
		return exitOK
	}
	if cp := out.Session.Checkpoint; cp != nil && out.Status == pipeline.SessionAwaitingInput {
		fmt.Fprintf(stderr, "bazinga: session %s waits for approval of %s; approve with: bazinga run --repo %s --resume %s --approve\n",
			out.ID, cp.ID, opts.Repo, out.ID)
		return exitNotVerified
	}
	reason := out.Reason
	if reason == "" {
		reason = "no reason given"
	}
	fmt.Fprintf(stderr, "bazinga: session %s ended %s without a verified BAZINGA: %s\n", out.ID, out.Status, reason)
	if out.Status == pipeline.SessionPaused || out.Status == pipeline.SessionStopped || out.Status == pipeline.SessionFailed {
		fmt.Fprintf(stderr, "resume with: bazinga run --repo %s --resume %s\n", opts.Repo, out.ID)
	}
	return exitNotVerified
}

// runStatus is `bazinga status`.
func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("status")
	repo := fs.String("repo", ".", "the repository")
	asJSON := fs.Bool("json", false, "print the session as JSON")
	usage := flagUsage(fs, `Usage: bazinga status [flags] [ID]

Shows a local session: the latest one, or the one with this id.
`)
	pos, code, ok := parseFlags(fs, args, usage, stdout, stderr)
	if !ok {
		return code
	}
	// From anywhere in the repository, as git works: the sessions are at its root.
	root, err := local.RepoRoot(*repo)
	if err != nil {
		fmt.Fprintf(stderr, "bazinga status: %v\n", err)
		return exitUsage
	}
	*repo = root
	ids, err := local.ListSessions(*repo)
	if err != nil {
		fmt.Fprintf(stderr, "bazinga status: %v\n", err)
		return exitUsage
	}
	if len(ids) == 0 {
		fmt.Fprintf(stderr, "bazinga status: no sessions in %s (start one with: bazinga run \"what to build\")\n", *repo)
		return exitNotVerified
	}
	id := ids[len(ids)-1]
	if len(pos) > 0 {
		id = pos[0]
	}
	st, err := local.OpenStore(*repo, id)
	if err != nil {
		fmt.Fprintf(stderr, "bazinga status: %v\n", err)
		return exitUsage
	}
	cfg, err := st.Config()
	if err != nil {
		fmt.Fprintf(stderr, "bazinga status: %v\n", err)
		return exitUsage
	}
	// The saved state plus what the log says happened after it.
	s, _, err := st.Replay(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "bazinga status: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		b, _ := s.Marshal()
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	if len(pos) == 0 && len(ids) > 1 {
		fmt.Fprintf(stdout, "Sessions: %s (showing the latest)\n", strings.Join(ids, ", "))
	}
	local.WriteSummary(stdout, s)
	for _, step := range s.Steps {
		fmt.Fprintln(stdout, "  "+pipeline.Capsule(step))
	}
	return exitOK
}

// runScriptedAgent is the hidden `bazinga scripted-agent`: the demo's agent.
func runScriptedAgent(args []string, stdout, stderr io.Writer) int {
	return scripted.Main(args, stdout, stderr)
}
