package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/internal/proc"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// PreflightTimeout bounds the version probe: a CLI that cannot print its
// version in this time will not run a step either.
const PreflightTimeout = 20 * time.Second

// Agent is what a preflight found out about the agent command.
type Agent struct {
	// CLI is the driver's name; Program the resolved path; Version the
	// first line the CLI printed for --version ("" for a generic command).
	CLI     string
	Program string
	Version string
}

// Preflight checks, before any model is paid for, that the agent command
// can run the session: it splits and its placeholders are known, its
// program exists and answers --version (for CLIs bazinga has a driver for),
// its flags can work together headless, and it can run the models the
// configuration names. Every problem is reported at once, in words a user
// can act on.
func Preflight(ctx context.Context, cfg pipeline.Config) (Agent, error) {
	var a Agent
	args, err := parseCommand(cfg.Agent.Command)
	if err != nil {
		return a, err
	}
	d, err := DriverFor(string(config.AgentCLI(cfg)), cfg.Agent.Command)
	if err != nil {
		return a, err
	}
	a.CLI = d.Name()
	var problems []string
	problems = append(problems, d.Check(args)...)
	// A model fixed in the command overrides the one bazinga picks per role
	// (a generic command reads BAZINGA_MODEL, so only CLIs are checked).
	if flags := modelFlags[d.Name()]; len(flags) > 0 {
		if v, ok := flagValue(args, flags...); ok && !strings.Contains(v, PlaceholderModel) && len(distinctModels(cfg.Models)) > 1 {
			problems = append(problems, fmt.Sprintf("%s %s fixes one model for every role although the configuration names %s (and escalation could not change it); write %s {model}, or leave the flag out",
				flags[0], v, strings.Join(distinctModels(cfg.Models), ", "), flags[0]))
		}
	}
	prog := args[0]
	if !placeholderRe.MatchString(prog) {
		if a.Program, err = resolveProgram(prog); err != nil {
			problems = append(problems, installHint(d.Name(), err))
		} else if d.Name() != "generic" {
			v, err := probeVersion(ctx, a.Program, args)
			if err != nil {
				problems = append(problems, err.Error())
			}
			a.Version = v
		}
	}
	if len(problems) > 0 {
		return a, errors.New("agent command " + quoteCommand(cfg.Agent.Command) + ": " + strings.Join(problems, "; "))
	}
	return a, nil
}

// modelFlags are the flags each CLI takes its model with.
var modelFlags = map[string][]string{
	"claude": {"--model"}, "codex": {"--model", "-m"}, "gemini": {"--model", "-m"},
	"aider": {"--model"}, "opencode": {"--model", "-m"},
}

func quoteCommand(c string) string { return fmt.Sprintf("%q", c) }

// distinctModels lists the models the roles run, sorted, each once.
func distinctModels(m pipeline.ModelsConfig) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range []string{m.PM, m.Developer, m.Senior, m.QA, m.TechLead, m.Investigator, m.Requirements, m.Validator, m.Escalation} {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// installHint says how to get a missing CLI.
func installHint(cli string, err error) string {
	pkg := map[string]string{
		"claude":   "npm install -g @anthropic-ai/claude-code",
		"codex":    "npm install -g @openai/codex",
		"gemini":   "npm install -g @google/gemini-cli",
		"opencode": "npm install -g opencode-ai",
		"aider":    "python -m pip install aider-install && aider-install",
	}[cli]
	if pkg == "" {
		return err.Error()
	}
	return fmt.Sprintf("%v (install it with `%s`, or give its path)", err, pkg)
}

// probeVersion runs the CLI's --version, with the program's own directory
// first on PATH (an npm-installed CLI is a node script that needs node).
func probeVersion(ctx context.Context, prog string, args []string) (string, error) {
	var out, errOut bytes.Buffer
	env := proc.Environ(baseEnv, map[string]string{"TERM": "dumb"})
	if len(args) > 1 && (filepath.Base(args[0]) == "npx" || filepath.Base(args[0]) == "bunx") {
		return "", nil // runs a package; the version is the package's to fetch
	}
	res, err := proc.Run(ctx, proc.Cmd{Path: prog, Args: []string{args[0], "--version"}, Env: env,
		Stdout: &out, Stderr: &errOut, Timeout: PreflightTimeout, Grace: time.Second})
	if err != nil {
		return "", fmt.Errorf("%s cannot be started: %w", args[0], err)
	}
	if res.TimedOut {
		return "", fmt.Errorf("%s --version did not answer within %s", args[0], PreflightTimeout)
	}
	if res.ExitCode != 0 {
		why := strings.TrimSpace(lastLine(errOut.Bytes()))
		if why == "" {
			why = strings.TrimSpace(lastLine(out.Bytes()))
		}
		return "", fmt.Errorf("%s --version failed (exit code %d)%s", args[0], res.ExitCode, suffix(why))
	}
	v := strings.TrimSpace(out.String())
	if i := strings.IndexByte(v, '\n'); i >= 0 {
		v = v[:i]
	}
	return capRunes(v, 120), nil
}
