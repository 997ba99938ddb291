package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bazinga-bot/bazinga/action"
)

// runAction is `bazinga action`: one step, or the Action-only orchestrator,
// inside a GitHub Actions job (inputs from INPUT_* variables).
func runAction(args []string, stdout, stderr io.Writer) int {
	// The runner cancels a job with SIGINT, then SIGTERM: stop the agent and
	// leave no claim half-done.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return action.Main(ctx, args, stdout, stderr)
}
