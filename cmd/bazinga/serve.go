package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bazinga-bot/bazinga"
	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/server"
)

const serveUsage = `Usage: bazinga serve [--listen ADDR]
       bazinga serve dead | retry   (the queue's dead letters: bazinga serve dead --help)

Run the bazinga GitHub App: POST /webhook receives GitHub's deliveries,
GET /healthz reports liveness and queue depth, GET /metrics exposes
Prometheus metrics, POST /token gives a privileged step job an App token
for its GitHub Actions OIDC token (input token-exchange-url of the action;
off with BAZINGA_TOKEN_EXCHANGE=off). With a provider key configured,
/gateway/ is the model gateway: agent jobs get a step token at
POST /gateway/token for their OIDC token and never see the provider key,
and their cost is what the gateway metered. Configuration comes from the
environment.

Without App credentials (in the environment or the credentials file) and
with a listen address (--listen or BAZINGA_LISTEN), it serves a setup page
instead: open the /setup URL it prints to register the App on GitHub from
app.yml; the credentials are written to the credentials file and serving
starts with them.

Deliveries are committed to a durable queue before GitHub gets its 202:
an SQLite file next to the credentials file by default, or PostgreSQL
(BAZINGA_DATABASE_URL=postgres://…) for several replicas (docs/queue.md).

Flags:
      --listen ADDR   listen address, e.g. :8080 (overrides BAZINGA_LISTEN)

`

// runServe is `bazinga serve`: it runs until SIGINT or SIGTERM.
func runServe(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveCommand(ctx, args, os.Getenv, stdout, stderr)
}

// serveCommand is runServe with its context and environment given.
func serveCommand(ctx context.Context, args []string, environ func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "dead" || args[0] == "retry") {
		return serveQueueCommand(ctx, args[0], args[1:], environ, stdout, stderr)
	}
	fs := newFlags("serve")
	listen := fs.String("listen", "", "listen address, e.g. :8080 (overrides BAZINGA_LISTEN)")
	usage := func(w io.Writer) { fmt.Fprint(w, serveUsage+server.EnvHelp+server.GatewayEnvHelp) }
	pos, code, ok := parseFlags(fs, args, usage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "bazinga serve: unexpected arguments %q\n\n%s%s", pos, serveUsage, server.EnvHelp)
		return exitUsage
	}
	getenv := environ
	if fs.Changed("listen") {
		getenv = func(k string) string {
			if k == server.EnvListen {
				return *listen
			}
			return environ(k)
		}
	}
	cfg, err := server.ConfigFromEnv(getenv)
	// No App yet and somewhere to listen: register it from the setup page.
	setup := errors.Is(err, server.ErrNoAppCredentials) && strings.TrimSpace(getenv(server.EnvListen)) != ""
	if err != nil && !setup {
		fmt.Fprintf(stderr, "bazinga serve: %v\n", err)
		return exitUsage
	}
	gw, gerr := server.GatewayConfigFromEnv(getenv)
	if gerr == nil && !setup {
		gerr = server.CheckGatewayWithTokenExchange(gw, cfg.TokenExchange)
	}
	if gerr != nil {
		fmt.Fprintf(stderr, "bazinga serve: %v\n", gerr)
		return exitUsage
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	var runErr error
	if setup {
		ln, lerr := net.Listen("tcp", cfg.Listen)
		if lerr != nil {
			fmt.Fprintf(stderr, "bazinga serve: listen %s: %v\n", cfg.Listen, lerr)
			return 1
		}
		runErr = setupThenServe(ctx, getenv, cfg, ln, logger, stderr)
	} else {
		runErr = serveWith(ctx, cfg, gw, logger)
	}
	if runErr != nil {
		logger.Error("bazinga serve failed", "err", runErr)
		return 1
	}
	return 0
}

// setupThenServe serves the setup page on ln until the App is registered,
// then reads the configuration again (now with the credentials file) and
// serves the App on the same address. The setup URL, with its token, goes
// to announce. It returns nil when ctx ends.
func setupThenServe(ctx context.Context, getenv func(string) string, cfg server.Config, ln net.Listener, logger *slog.Logger, announce io.Writer) error {
	st, err := server.NewSetup(server.SetupOptions{
		Manifest: bazinga.AppManifest, GitHubURL: cfg.GitHubURL, APIURL: cfg.APIURL, UploadURL: cfg.UploadURL,
		PublicURL: cfg.PublicURL, CredentialsFile: cfg.CredentialsFile,
	}, logger)
	if err != nil {
		ln.Close()
		return err
	}
	base := cfg.PublicURL
	if base == "" {
		base = "http://" + browsable(ln.Addr())
	}
	fmt.Fprintf(announce, "bazinga serve: no GitHub App credentials yet. To register the App, open\n\n    %s\n\n"+
		"(the token guards the page; GitHub must reach this server, see BAZINGA_PUBLIC_URL).\n", st.URL(base))
	logger.Info("bazinga serve: setup page", "url", base+server.SetupPath, "credentials_file", cfg.CredentialsFile)
	addr := ln.Addr().String()
	if err := st.Serve(ctx, ln); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	cfg2, err := server.ConfigFromEnv(getenv)
	if err != nil {
		return fmt.Errorf("reading the configuration the setup wrote: %w", err)
	}
	cfg2.Listen = addr // the address GitHub now knows, even if it was :0
	gw, err := server.GatewayConfigFromEnv(getenv)
	if err == nil {
		err = server.CheckGatewayWithTokenExchange(gw, cfg2.TokenExchange)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(announce, "bazinga serve: GitHub App %q registered; credentials in %s. Serving.\n", st.Credentials().Slug, cfg.CredentialsFile)
	return serveWith(ctx, cfg2, gw, logger)
}

// browsable turns a listener's address into one a browser on this machine
// can open (an unspecified host becomes localhost).
func browsable(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// serve builds the client factory, the bot and the server, and runs until
// ctx ends.
func serve(ctx context.Context, cfg server.Config, logger *slog.Logger) error {
	return serveWith(ctx, cfg, server.GatewayServeConfig{}, logger)
}

// serveWith is serve with the model gateway's configuration.
func serveWith(ctx context.Context, cfg server.Config, gwCfg server.GatewayServeConfig, logger *slog.Logger) error {
	factory, err := ghapi.NewClientFactory(cfg.App(), nil, ghapi.TransportOptions{Logger: logger,
		MaxRateLimitWait: cfg.RateLimitWait, Reserve: cfg.RateLimitReserve})
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
	// The state is signed with a key derived from the random state key,
	// never the webhook secret (its public key is published); step jobs
	// verify it with the public key (the action's state-public-key).
	if len(cfg.StateKey) == 0 {
		return fmt.Errorf("%s is required (the random key the session state is signed with): make one with `openssl rand -hex 32`", server.EnvStateKey)
	}
	signing := codec.SigningKeyFromSecret(cfg.StateKey)
	// With the queue's database, the exchanged job tokens are recorded there: one exchange per token across every
	// replica, not one per replica.
	var spent server.SpentTokens
	if cfg.DatabaseURL != "" {
		if spent, err = openSpentTokens(ctx, &cfg); err != nil {
			return err
		}
	}
	var gp *gatewayParts
	var meter bot.Meter
	var stepEnded func(ctx context.Context, installation int64, repo, session, step string)
	if gwCfg.Enabled {
		if gp, err = newGatewayParts(ctx, &cfg, gwCfg, logger); err != nil {
			return err
		}
		// The orchestrator counts what the gateway metered, not what the agent's job reports, and ends a step's
		// tokens with the step.
		meter, stepEnded = server.LedgerMeter{Ledger: gp.ledger}, gp.stepEnded
	}
	b, err := bot.New(bot.Options{
		Meter:     meter,
		StepEnded: stepEnded,
		Client: func(_ context.Context, id int64) (bot.GitHub, error) {
			c, err := factory.Installation(id)
			if err != nil {
				return nil, err
			}
			return ghapi.New(c), nil
		},
		Login:        login,
		SigningKey:   signing,
		PreviousKeys: cfg.PreviousStateKeys,
		Logger:       logger,
		Repos:        factory.InstalledRepos,
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
	if !cfg.TokenExchange.Disabled {
		x, err := server.NewTokenExchange(cfg.TokenExchange, server.TokenExchangeOptions{
			GitHub: server.FactoryGitHub{F: factory}, GitHubURL: cfg.GitHubURL, Login: login, Logger: logger, Spent: spent})
		if err != nil {
			return err
		}
		srv.MountTokenExchange(x)
		logger.Info("bazinga serve: token exchange", "path", server.TokenPath, "exchange", x)
	}
	if gwCfg.Enabled {
		if err := mountGateway(srv, factory, cfg, gwCfg, gp, b, login, spent, logger); err != nil {
			return err
		}
	}
	return srv.Run(ctx)
}

// gatewayParts are the model gateway's pieces the orchestrator needs before the server exists: the ledger it
// reads a step's usage from, and the revocation of an ended step's tokens.
type gatewayParts struct {
	signer *gateway.Signer
	ledger gateway.Ledger
	gw     *gateway.Gateway
	rev    *gateway.SQLRevocations // nil without a database: the gateway's own CloseScope, in this process
	log    *slog.Logger
}

// newGatewayParts builds the gateway. Its token key is derived from the App's private key, so every replica
// verifies every replica's tokens; with the queue's database (cfg.DatabaseURL) the ledger and the ended steps are
// tables in it, on the queue's own handle (cfg.Queue, which the server then runs on), so spend is shared by the
// replicas and survives restarts. Without one ("memory"), they live in this process.
func newGatewayParts(ctx context.Context, cfg *server.Config, gwCfg server.GatewayServeConfig, logger *slog.Logger) (*gatewayParts, error) {
	secret, err := server.GatewaySecret(cfg.PrivateKey)
	if err != nil {
		return nil, err
	}
	signer, err := gateway.NewSignerFromSecret(secret, nil)
	if err != nil {
		return nil, err
	}
	// After a rotation of the App's key, the tokens of steps in flight were minted under the former one: they stay
	// good for the grace (at most their lifetime), from this start.
	until := time.Now().Add(gwCfg.KeyGrace)
	for _, prev := range gwCfg.PreviousKeys {
		kid, err := signer.AcceptPrevious(prev, until)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", server.EnvPreviousPrivateKey, err)
		}
		if kid == signer.KeyID() {
			logger.Warn("gateway: a former App key given is the current one; ignored", "key_id", kid)
			continue
		}
		logger.Info("gateway: tokens of a former App key accepted for the grace", "key_id", kid, "until", until)
	}
	p := &gatewayParts{signer: signer, log: logger}
	if cfg.DatabaseURL != "" {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		st, err := queueStore(octx, cfg)
		if err != nil {
			return nil, err
		}
		if p.ledger, err = gateway.NewSQLLedger(octx, st); err == nil {
			p.rev, err = gateway.NewSQLRevocations(octx, st, nil)
		}
		if err != nil {
			st.Close() // serve stops: nothing else uses it
			cfg.Queue = nil
			return nil, err
		}
	} else {
		p.ledger = gateway.NewMemLedger()
	}
	cf := gateway.Config{Anthropic: gwCfg.Anthropic, OpenAI: gwCfg.OpenAI, Gemini: gwCfg.Gemini,
		Signer: signer, Ledger: p.ledger, Prices: gwCfg.Prices, Logger: logger}
	if p.rev != nil {
		cf.Revocations = p.rev
	}
	if p.gw, err = gateway.New(cf); err != nil {
		return nil, err
	}
	return p, nil
}

// queueStore opens the queue's database once (cfg.Queue, which the server then runs on) for the tables kept beside
// the queue's.
func queueStore(ctx context.Context, cfg *server.Config) (*jobq.Store, error) {
	if cfg.Queue != nil {
		return cfg.Queue, nil
	}
	st, err := jobq.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("queue database (%s): %w", server.EnvDatabaseURL, err)
	}
	cfg.Queue = st
	return st, nil
}

// openSpentTokens is the spent job tokens' table in the queue's database.
func openSpentTokens(ctx context.Context, cfg *server.Config) (server.SpentTokens, error) {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := queueStore(octx, cfg)
	if err != nil {
		return nil, err
	}
	spent, err := server.NewSQLSpentTokens(octx, st, nil)
	if err != nil {
		st.Close() // serve stops: nothing else uses it
		cfg.Queue = nil
		return nil, err
	}
	return spent, nil
}

// stepEnded revokes the tokens of a step the orchestrator saw end (bot.Options.StepEnded). A failure leaves them
// good until they expire, so it is logged as an error; the session goes on.
func (p *gatewayParts) stepEnded(ctx context.Context, installation int64, repo, session, step string) {
	if p.rev == nil {
		p.gw.CloseScope(gateway.Scope{Installation: installation, Repository: repo, Session: session, Step: step})
		return
	}
	if err := p.rev.Revoke(ctx, repo, session, step); err != nil {
		p.log.Error("gateway: an ended step's tokens were not revoked; they stay good until they expire",
			"repository", repo, "session", session, "step", step, "err", err)
	}
}

// mountGateway serves the model gateway and POST /gateway/token, its spend in /metrics.
func mountGateway(srv *server.Server, factory *ghapi.ClientFactory, cfg server.Config, gwCfg server.GatewayServeConfig, gp *gatewayParts,
	records server.StepRecords, login string, spent server.SpentTokens, logger *slog.Logger) error {
	gm := srv.Metrics().NewGatewayMetrics()
	switch l := gp.ledger.(type) {
	case *gateway.MemLedger:
		l.OnRecord = gm.Recorded
	case *gateway.SQLLedger:
		l.OnRecord = gm.Recorded
	}
	signer, gw := gp.signer, gp.gw
	xc := gwCfg.Exchange
	xc.Issuer = cfg.TokenExchange.Issuer
	// The session's own record says whether the step runs and what its limits are (the operator's cap them).
	x, err := server.NewGatewayExchange(xc, server.GatewayExchangeOptions{GitHub: server.FactoryGitHub{F: factory}, Records: records,
		Signer: signer, GitHubURL: cfg.GitHubURL, Login: login, Logger: logger, Spent: spent})
	if err != nil {
		return err
	}
	srv.MountGateway(gw, x, gm)
	logger.Info("bazinga serve: model gateway", "path", server.GatewayPrefix+"/", "token_path", server.GatewayTokenPath,
		"anthropic", gw.Serves(gateway.UpstreamAnthropic), "openai", gw.Serves(gateway.UpstreamOpenAI), "gemini", gw.Serves(gateway.UpstreamGemini),
		"step_limit_micros", xc.Limits.StepMicros, "session_limit_micros", xc.Limits.SessionMicros,
		"token_key_id", signer.KeyID(), "ledger_shared", gp.rev != nil)
	return nil
}
