package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/bazinga-bot/bazinga/bot"
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
	fs := newFlags("serve")
	usage := func(w io.Writer) { fmt.Fprint(w, serveUsage+server.EnvHelp) }
	pos, code, ok := parseFlags(fs, args, usage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "bazinga serve: unexpected arguments %q\n\n%s%s", pos, serveUsage, server.EnvHelp)
		return exitUsage
	}
	cfg, err := server.ConfigFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "bazinga serve: %v\n", err)
		return exitUsage
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
	b, err := bot.New(bot.Options{
		Client: func(_ context.Context, id int64) (bot.GitHub, error) {
			c, err := factory.Installation(id)
			if err != nil {
				return nil, err
			}
			return ghapi.New(c), nil
		},
		Login:    login,
		StateKey: stateKey(cfg.WebhookSecret),
		Logger:   logger,
		Repos:    factory.InstalledRepos,
	})
	if err != nil {
		return err
	}
	logger.Info("bazinga serve", "app", app.GetSlug(), "login", login, "listen", cfg.Listen)
	srv, err := server.NewServer(cfg, b, logger)
	if err != nil {
		return err
	}
	srv.Metrics().SetAPIStats(factory.CallStats)
	return srv.Run(ctx)
}

// stateKey derives the key that authenticates the state block from the
// webhook secret, so no second secret has to be configured.
func stateKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("bazinga state v1"))
	return m.Sum(nil)
}
