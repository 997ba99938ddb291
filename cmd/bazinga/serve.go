package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/server"
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
	fs.Usage = func() { fmt.Fprint(stdout, serveUsage+server.EnvHelp) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "bazinga serve: unexpected arguments %q\n\n%s%s", fs.Args(), serveUsage, server.EnvHelp)
		return 2
	}
	cfg, err := server.ConfigFromEnv(os.Getenv)
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

// serve builds the client factory, the bot and the server, and runs until
// ctx ends.
func serve(ctx context.Context, cfg server.Config, logger *slog.Logger) error {
	factory, err := ghapi.NewClientFactory(cfg.App(), nil, ghapi.TransportOptions{Logger: logger})
	if err != nil {
		return fmt.Errorf("github clients: %w", err)
	}
	appClient, err := factory.App()
	if err != nil {
		return fmt.Errorf("github app client: %w", err)
	}
	app, _, err := appClient.Apps.Get(ctx, "")
	if err != nil {
		return fmt.Errorf("reading the GitHub App (check BAZINGA_APP_ID and the private key): %w", err)
	}
	login := app.GetSlug() + "[bot]"
	// The state is signed with a key derived from the webhook secret; step
	// jobs verify it with the public key (the action's state-public-key).
	signing := codec.SigningKeyFromSecret(cfg.WebhookSecret)
	b, err := bot.New(bot.Options{
		Client: func(_ context.Context, id int64) (bot.GitHub, error) {
			c, err := factory.Installation(id)
			if err != nil {
				return nil, err
			}
			return ghapi.New(c), nil
		},
		Login:      login,
		SigningKey: signing,
		Logger:     logger,
		Repos:      factory.InstalledRepos,
	})
	if err != nil {
		return err
	}
	logger.Info("bazinga serve", "app", app.GetSlug(), "login", login, "listen", cfg.Listen,
		"state_public_key", codec.FormatPublicKey(signing.Public().(ed25519.PublicKey)))
	srv, err := server.NewServer(cfg, b, logger)
	if err != nil {
		return err
	}
	srv.Metrics().SetAPIStats(factory.CallStats)
	return srv.Run(ctx)
}
