package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bazinga-bot/bazinga/internal/demo"
	"github.com/bazinga-bot/bazinga/local"
)

// runDemo is `bazinga demo`: a scripted session on a copy of the demo repository.
func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo")
	keep := fs.Bool("keep", false, "keep the demo directory to look around afterwards")
	asJSON := fs.Bool("json", false, "print events as JSON lines")
	usage := flagUsage(fs, `Usage: bazinga demo [flags]

Runs a scripted session (a pm, developers, QA and a tech lead) on a copy of
a small demo repository: real edits, merges, a conflict and tests.
`)
	pos, code, ok := parseFlags(fs, args, usage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "bazinga demo: unexpected arguments %q\n", pos)
		usage(stderr)
		return exitUsage
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "bazinga demo: finding the bazinga binary: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	terminal := false
	if f, ok := stdout.(*os.File); ok {
		terminal = isTerminal(f)
	}
	if !*asJSON {
		fmt.Fprintln(stdout, "bazinga demo: a scripted pm, developers, QA and tech lead extend a small Go calculator.")
	}
	out, dir, err := demo.Run(ctx, demo.Options{Agent: exe, Out: stdout, JSON: *asJSON, Terminal: terminal})
	if *keep || err != nil {
		fmt.Fprintf(stderr, "The demo repository is in %s/repo (try: git -C %s/repo log --graph --oneline)\n", dir, dir)
	} else if dir != "" {
		defer os.RemoveAll(dir)
	}
	switch {
	case errors.Is(err, local.ErrInterrupted):
		return exitInterrupted
	case err != nil:
		fmt.Fprintf(stderr, "bazinga demo: %v\n", err)
		return exitUsage
	case !out.Verified():
		fmt.Fprintf(stderr, "bazinga demo: the session ended %s: %s\n", out.Status, out.Reason)
		return exitNotVerified
	}
	return exitOK
}
