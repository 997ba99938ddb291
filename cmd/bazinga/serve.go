package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/bazinga-bot/bazinga/bot"
)

const serveUsage = `Usage: bazinga serve

Run the bazinga GitHub App: POST /webhook receives GitHub's deliveries,
GET /healthz reports liveness and queue depth, GET /metrics exposes
Prometheus metrics. Configuration comes from the environment.

`

// runServe is `bazinga serve`.
func runServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stdout, serveUsage+bot.EnvHelp) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bazinga serve: unexpected arguments %q\n\n%s%s", fs.Args(), serveUsage, bot.EnvHelp)
		return 2
	}
	cfg, err := bot.ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "bazinga serve: %v\n", err)
		return 2
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, logger); err != nil {
		logger.Error("bazinga serve failed", "err", err)
		return 1
	}
	return 0
}

// serve builds the client factory, the Processor and the server, and runs
// until ctx ends.
func serve(ctx context.Context, cfg bot.Config, logger *slog.Logger) error {
	factory, err := bot.NewClientFactory(cfg, nil, bot.TransportOptions{Logger: logger})
	if err != nil {
		return fmt.Errorf("github clients: %w", err)
	}
	// TODO(lead): replace with the core's bot.New(bot.Options{...}):
	//   Client:   func(ctx, id) { c, err := factory.Installation(id); return bot.NewGitHub(c), err }
	//   Login:    the App's slug + "[bot]" (factory.App() → Apps.Get(ctx, ""))
	//   StateKey: derived from cfg.WebhookSecret (e.g. HMAC(secret, "bazinga state v1"))
	//   Repos:    installations (factory.App()) → each installation's repositories
	//   Logger:   logger
	var p bot.Processor = ackProcessor{log: logger}
	srv, err := bot.NewServer(cfg, p, logger)
	if err != nil {
		return err
	}
	srv.Metrics().SetAPIStats(factory.CallStats)
	return srv.Run(ctx)
}

// ackProcessor is a placeholder Processor: it logs and acknowledges every
// delivery without acting. TODO(lead): remove once bot.New is wired in.
type ackProcessor struct{ log *slog.Logger }

func (ackProcessor) Key(bot.Delivery) string { return "" }

func (a ackProcessor) Process(_ context.Context, d bot.Delivery) error {
	a.log.Info("delivery acknowledged (placeholder processor, no effect)",
		"delivery", d.ID, "event", d.Event, "action", d.Action, "installation", d.Installation, "repo", d.Repo)
	return bot.ErrIgnored
}

func (ackProcessor) Sweep(context.Context) error { return nil }
