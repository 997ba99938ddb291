package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/local"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// runConfig is `bazinga config`: the configuration a run would use, key by
// key, with where each value comes from.
func runConfig(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("config")
	repo := fs.String("repo", ".", "the repository (any directory inside it)")
	base := fs.String("base", "", "the branch a run would work on (default: the branch checked out)")
	agentCmd := fs.String("agent", "", "as bazinga run's --agent")
	testCmd := fs.String("test-command", "", "as bazinga run's --test-command")
	maxPar := fs.Int("max-parallel", 0, "as bazinga run's --max-parallel")
	baseline := fs.String("baseline", "", "as bazinga run's --baseline")
	usage := flagUsage(fs, `Usage: bazinga config [flags]

Prints the configuration a local run would use, every key with its value and
where the value comes from: the default, the committed .github/bazinga.yml
(with its line), a flag, detection (the test command), or local mode itself.
No environment variable changes a local run's configuration. Give the flags
a run would get to see their effect.
`)
	pos, code, ok := parseFlags(fs, args, usage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "bazinga config: unexpected arguments %q\n", pos)
		usage(stderr)
		return exitUsage
	}
	opts := local.Options{Repo: *repo, Base: *base, AgentCommand: *agentCmd, MaxParallel: *maxPar, Baseline: pipeline.BaselineMode(*baseline)}
	if fs.Changed("test-command") {
		opts.TestCommand = testCmd
	}
	e, err := local.EffectiveConfig(opts)
	if err != nil {
		fmt.Fprintf(stderr, "bazinga config: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "Configuration of a run in %s on %s (%s)\n\n", e.Root, e.Base, e.Commit[:min(12, len(e.Commit))])
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tFROM")
	for _, en := range config.Entries(e.Config) {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", en.Key, en.Value, e.Sources[en.Key])
	}
	tw.Flush()
	for _, n := range e.Notes {
		fmt.Fprintf(stdout, "\nnote: %s\n", n)
	}
	return exitOK
}
