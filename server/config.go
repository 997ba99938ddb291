package server

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/secretstrength"
	"github.com/bazinga-bot/bazinga/jobq"
)

// Defaults of the server configuration.
const (
	DefaultListen        = ":8080"
	DefaultWorkers       = 4
	DefaultQueueSize     = 1000
	DefaultSweepInterval = 5 * time.Minute
	// DefaultRateLimitWait and DefaultRateLimitReserve are ghapi's own
	// defaults, stated here so that serve's settings show them.
	DefaultRateLimitWait    = 90 * time.Second
	DefaultRateLimitReserve = 20
	// DefaultMaxBodyBytes caps a webhook body. GitHub allows payloads up to
	// 25 MB, but the events bazinga subscribes to are kilobytes (an issue
	// comment is at most 65,536 characters); 1 MiB leaves ample room and
	// bounds what an unauthenticated sender can make the server hold.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultBodyBudget bounds the bytes of webhook bodies held at once,
	// counted as they arrive (a trickling client holds what it sent, not
	// its Content-Length); beyond it a request is answered 503.
	DefaultBodyBudget = 64 << 20
	// DefaultBodyBudgetPerIP bounds the body bytes one client address has
	// in flight (-1 in the configuration: no bound; behind a reverse proxy
	// every client has the proxy's address).
	DefaultBodyBudgetPerIP = 16 << 20
	// DefaultBodyMinRate and DefaultBodyGrace: a body must arrive at this
	// many bytes per second after the grace (Apache mod_reqtimeout's
	// MinRate); GitHub sends a delivery in one burst, a trickler is cut off
	// after about the grace.
	DefaultBodyMinRate = 32 << 10
	DefaultBodyGrace   = 2 * time.Second
	// DefaultMaxConns caps open connections. At the cap, the connection
	// that has waited longest without a request in a handler (idle, or
	// still sending headers) is closed to admit the new one.
	// A waiting connection costs a goroutine and two 4 KiB buffers, so the
	// cap is generous (a flood below it churns nothing) and time is strict.
	DefaultMaxConns = 4096
	// DefaultMaxConnsPerIP caps one client address's connections, evicting
	// the address's own longest-waiting one at the cap (-1: no limit).
	DefaultMaxConnsPerIP = 1024
	// DefaultHeaderTimeout bounds reading a request's headers (GitHub sends
	// them at once); DefaultReadTimeout bounds the whole request.
	DefaultHeaderTimeout = 5 * time.Second
	DefaultReadTimeout   = 10 * time.Second
	// DefaultIdleTimeout lets an idle keep-alive connection go (and it is
	// the first evicted at the connection cap).
	DefaultIdleTimeout   = 30 * time.Second
	DefaultDedupSize     = 10000
	DefaultDedupTTL      = time.Hour
	DefaultShutdownGrace = 30 * time.Second
)

// Config is the configuration of `bazinga serve`. ConfigFromEnv fills it
// from the environment; tests build it directly. Zero values of the tuning
// fields mean their defaults.
type Config struct {
	AppID int64
	// PrivateKey is the App's PEM-encoded RSA key.
	PrivateKey []byte
	// WebhookSecret is the shared secret of webhook signatures (required).
	WebhookSecret []byte
	// StateKey is the random secret the session state's Ed25519 signing key
	// is derived from (BAZINGA_STATE_KEY; required by ConfigFromEnv). It is
	// never the webhook secret: the state's public key is published.
	StateKey []byte
	// PreviousStateKeys are public keys of earlier state keys whose states
	// are still read during a rotation.
	PreviousStateKeys []ed25519.PublicKey
	// GitHubURL is the web base (https://github.com or a GHES host);
	// APIURL and UploadURL are the REST bases derived from it, with a
	// trailing slash.
	GitHubURL string
	APIURL    string
	UploadURL string

	Listen        string
	Workers       int
	QueueSize     int
	SweepInterval time.Duration
	LogLevel      slog.Level
	// RateLimitWait is the longest GitHub rate-limit wait a call sits out
	// before the session pauses until the reset instead
	// (ghapi.TransportOptions.MaxRateLimitWait); RateLimitReserve is how
	// many requests of the primary limit are kept for saying why a session
	// stops (TransportOptions.Reserve; -1: none).
	RateLimitWait    time.Duration
	RateLimitReserve int

	MaxBodyBytes int64
	// BodyBudget bounds the webhook body bytes held at once (503 beyond).
	BodyBudget int64
	// BodyBudgetPerIP bounds one address's share of it (-1: no bound).
	BodyBudgetPerIP int64
	// BodyMinRate (bytes/s) and BodyGrace: a body slower than this is cut
	// off (408).
	BodyMinRate int64
	BodyGrace   time.Duration
	// MaxConns bounds open connections, evicting the longest-waiting
	// connection without a request in a handler at the cap; MaxConnsPerIP
	// bounds one address's (-1: no limit). Run/Serve only, not Handler.
	MaxConns      int
	MaxConnsPerIP int
	// HeaderTimeout bounds the headers, ReadTimeout the whole request,
	// IdleTimeout a keep-alive connection between requests.
	HeaderTimeout time.Duration
	ReadTimeout   time.Duration
	IdleTimeout   time.Duration
	// WebhookSources, when set, are the only client addresses POST /webhook
	// accepts (403 before the body), e.g. the `hooks` of GitHub's GET /meta.
	WebhookSources []netip.Prefix

	DedupSize     int
	DedupTTL      time.Duration
	ShutdownGrace time.Duration

	// DatabaseURL is the durable queue's database (durable.go): sqlite:PATH
	// or postgres://…; "" keeps deliveries in memory (tests, and "memory").
	DatabaseURL string
	// QueueRetention is how long a finished delivery is kept, so that its
	// redelivery is a duplicate; MaxAttempts is how many runs a delivery
	// failing transiently gets before it is dead-lettered; QueueLease is how
	// long a replica that stopped answering keeps its sessions.
	QueueRetention time.Duration
	MaxAttempts    int
	QueueLease     time.Duration
	// Replica names this process in /metrics and in the queue's leases
	// (default hostname-pid).
	Replica string
	// Queue, when set, is the queue at DatabaseURL already opened (serve
	// opens it first, for the model gateway's tables on the same handle);
	// the server closes it at shutdown.
	Queue *jobq.Store

	// CredentialsFile is the file the credentials came from, or the one the
	// setup page writes to when there are none yet.
	CredentialsFile string
	// PublicURL is the base URL GitHub reaches the server at ("" = derive).
	PublicURL string

	// TokenExchange configures POST /token (token.go).
	TokenExchange TokenExchangeConfig
}

// Environment variables read by ConfigFromEnv.
const (
	EnvAppID          = "BAZINGA_APP_ID"
	EnvPrivateKey     = "BAZINGA_PRIVATE_KEY"
	EnvPrivateKeyPath = "BAZINGA_PRIVATE_KEY_PATH"
	EnvWebhookSecret  = "BAZINGA_WEBHOOK_SECRET"
	// EnvStateKey is the random secret the session state is signed with
	// (the same variable as the Action-only orchestrator's secret).
	EnvStateKey = "BAZINGA_STATE_KEY"
	// EnvStatePreviousKeys lists public keys of earlier state keys still
	// accepted while the key is rotated.
	EnvStatePreviousKeys = "BAZINGA_STATE_PREVIOUS_PUBLIC_KEYS"
	EnvGitHubURL         = "BAZINGA_GITHUB_URL"
	EnvListen            = "BAZINGA_LISTEN"
	EnvWorkers           = "BAZINGA_WORKERS"
	EnvQueueSize         = "BAZINGA_QUEUE_SIZE"
	EnvSweepInterval     = "BAZINGA_SWEEP_INTERVAL"
	EnvRateLimitWait     = "BAZINGA_RATE_LIMIT_WAIT"
	EnvRateLimitReserve  = "BAZINGA_RATE_LIMIT_RESERVE"
	EnvLogLevel          = "BAZINGA_LOG_LEVEL"
	// The webhook front.
	EnvMaxConns       = "BAZINGA_MAX_CONNS"
	EnvMaxConnsPerIP  = "BAZINGA_MAX_CONNS_PER_IP"
	EnvWebhookSources = "BAZINGA_WEBHOOK_SOURCES"
	// EnvCredentialsFile names the file the setup page writes the App's
	// credentials to and ConfigFromEnv falls back to (default
	// bazinga-app.env in the working directory).
	EnvCredentialsFile = "BAZINGA_CREDENTIALS_FILE"
	// EnvPublicURL is the base URL GitHub reaches the server at, for the
	// setup page's manifest (default: from the request).
	EnvPublicURL = "BAZINGA_PUBLIC_URL"
	// The token exchange (POST /token).
	EnvTokenExchange    = "BAZINGA_TOKEN_EXCHANGE"
	EnvOIDCIssuer       = "BAZINGA_OIDC_ISSUER"
	EnvOIDCAudience     = "BAZINGA_OIDC_AUDIENCE"
	EnvTokenWorkflows   = "BAZINGA_TOKEN_WORKFLOWS"
	EnvTokenPermissions = "BAZINGA_TOKEN_PERMISSIONS"
	EnvTokenEnvironment = "BAZINGA_TOKEN_ENVIRONMENT"
	// EnvTokenSpentFile is where spent job tokens are kept until they
	// expire (default bazinga-spent-tokens next to the credentials file).
	EnvTokenSpentFile = "BAZINGA_TOKEN_SPENT_FILE"
	// EnvDatabaseURL is the durable queue's database (default an SQLite
	// file next to the credentials file; "memory" for none).
	EnvDatabaseURL = "BAZINGA_DATABASE_URL"
	// EnvQueueLease is how long a replica that stopped renewing keeps its
	// sessions (default 30s).
	EnvQueueLease = "BAZINGA_QUEUE_LEASE"
)

// ErrNoAppCredentials is wrapped by ConfigFromEnv's error when none of the
// App's credentials (id, private key, webhook secret) is set, in the
// environment or the credentials file: `bazinga serve` then offers the
// setup page instead of failing.
var ErrNoAppCredentials = errors.New("no GitHub App credentials: set " + EnvAppID + ", " + EnvPrivateKey +
	" and " + EnvWebhookSecret + ", or register the App from the setup page (give a listen address: " + EnvListen + " or --listen)")

// EnvHelp documents the environment variables, for `bazinga serve --help`:
// generated from serveEnv (envhelp.go), the table a test holds against what
// ConfigFromEnv reads.
var EnvHelp = envHelpText("Environment:", serveEnv)

// ConfigFromEnv reads the configuration through getenv (os.Getenv in
// production) and validates it. Every error names the variable at fault;
// errors never quote a secret.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var errs, credErrs []error
	c := Config{}
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }

	// The credentials file fills what the environment leaves unset.
	c.CredentialsFile = get(EnvCredentialsFile)
	if c.CredentialsFile == "" {
		c.CredentialsFile = DefaultCredentialsFile
	}
	fileVals, err := readCredentialsFile(c.CredentialsFile)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", EnvCredentialsFile, err))
	}
	// cred returns a credential and the name to blame in an error.
	cred := func(k string) (val, name string) {
		if v := getenv(k); strings.TrimSpace(v) != "" {
			return v, k
		}
		if k == EnvPrivateKey && get(EnvPrivateKeyPath) != "" {
			return "", k // the environment chose the key file
		}
		if v, ok := fileVals[k]; ok && strings.TrimSpace(v) != "" {
			return v, fmt.Sprintf("%s (from %s)", k, c.CredentialsFile)
		}
		return "", k
	}

	appID, appIDName := cred(EnvAppID)
	key, keyName := cred(EnvPrivateKey)
	keyPath := get(EnvPrivateKeyPath)
	secret, secretName := cred(EnvWebhookSecret)
	noCredentials := strings.TrimSpace(appID) == "" && strings.TrimSpace(key) == "" && keyPath == "" && secret == ""

	if v := strings.TrimSpace(appID); v == "" {
		credErrs = append(credErrs, fmt.Errorf("%s is required (the GitHub App's numeric id)", EnvAppID))
	} else if id, err := strconv.ParseInt(v, 10, 64); err != nil || id <= 0 {
		credErrs = append(credErrs, fmt.Errorf("%s must be a positive integer, got %q", appIDName, v))
	} else {
		c.AppID = id
	}

	switch {
	case strings.TrimSpace(key) != "" && keyPath != "":
		credErrs = append(credErrs, fmt.Errorf("set only one of %s and %s", EnvPrivateKey, EnvPrivateKeyPath))
	case strings.TrimSpace(key) != "":
		// Some deployments store the PEM with literal "\n" escapes.
		if !strings.Contains(key, "\n") {
			key = strings.ReplaceAll(key, `\n`, "\n")
		}
		if err := ghapi.ValidatePrivateKey([]byte(key)); err != nil {
			credErrs = append(credErrs, fmt.Errorf("%s: %w", keyName, err))
		} else {
			c.PrivateKey = []byte(key)
		}
	case keyPath != "":
		b, err := os.ReadFile(keyPath)
		if err != nil {
			credErrs = append(credErrs, fmt.Errorf("%s: %w", EnvPrivateKeyPath, err))
		} else if err := ghapi.ValidatePrivateKey(b); err != nil {
			credErrs = append(credErrs, fmt.Errorf("%s (%s): %w", EnvPrivateKeyPath, keyPath, err))
		} else {
			c.PrivateKey = b
		}
	default:
		credErrs = append(credErrs, fmt.Errorf("%s or %s is required (the App's private key)", EnvPrivateKey, EnvPrivateKeyPath))
	}

	if secret == "" {
		credErrs = append(credErrs, fmt.Errorf("%s is required: without it webhook deliveries cannot be verified, so the server refuses to start", EnvWebhookSecret))
	} else if err := secretstrength.Check(secret); err != nil {
		credErrs = append(credErrs, fmt.Errorf("%s is weak: %v; a signed delivery lets it be guessed offline. Set a new one on the App's settings page and here: %s", secretName, err, secretstrength.Advice))
	} else {
		c.WebhookSecret = []byte(secret)
	}
	stateKey, stateKeyName := cred(EnvStateKey)
	switch {
	case strings.TrimSpace(stateKey) == "":
		credErrs = append(credErrs, fmt.Errorf("%s is required: the random key the session state is signed with (its public key is published, so it is never derived from another secret); "+
			"%s, put it in the environment or %s, and give step jobs the state_public_key serve then logs (the repository variable BAZINGA_STATE_PUBLIC_KEY)",
			EnvStateKey, secretstrength.Advice, c.CredentialsFile))
	case strings.TrimSpace(stateKey) == strings.TrimSpace(secret):
		credErrs = append(credErrs, fmt.Errorf("%s must not be the webhook secret: the state's public key is published; %s", stateKeyName, secretstrength.Advice))
	default:
		if err := secretstrength.Check(stateKey); err != nil {
			credErrs = append(credErrs, fmt.Errorf("%s is weak: %v; its public key is published, so it can be guessed offline: %s", stateKeyName, err, secretstrength.Advice))
		} else {
			c.StateKey = []byte(strings.TrimSpace(stateKey))
		}
	}
	if v := get(EnvStatePreviousKeys); v != "" {
		keys, err := codec.ParsePublicKeys(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvStatePreviousKeys, err))
		}
		c.PreviousStateKeys = keys
	}

	c.PublicURL = get(EnvPublicURL)

	web, api, upload, err := ghapi.GitHubURLs(get(EnvGitHubURL))
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", EnvGitHubURL, err))
	}
	c.GitHubURL, c.APIURL, c.UploadURL = web, api, upload

	c.Listen = get(EnvListen)
	if c.Listen == "" {
		c.Listen = DefaultListen
	} else if !strings.Contains(c.Listen, ":") {
		errs = append(errs, fmt.Errorf("%s must be host:port or :port, got %q", EnvListen, c.Listen))
	}

	intVar := func(name string, def, lo, hi int) int {
		v := get(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			errs = append(errs, fmt.Errorf("%s must be an integer in [%d, %d], got %q", name, lo, hi, v))
			return def
		}
		return n
	}
	c.Workers = intVar(EnvWorkers, DefaultWorkers, 1, 1024)
	c.QueueSize = intVar(EnvQueueSize, DefaultQueueSize, 1, 1_000_000)
	c.MaxConns = intVar(EnvMaxConns, DefaultMaxConns, 16, 1_000_000)
	c.MaxConnsPerIP = intVar(EnvMaxConnsPerIP, DefaultMaxConnsPerIP, -1, 1_000_000)
	if c.MaxConnsPerIP == 0 {
		errs = append(errs, fmt.Errorf("%s must be positive or -1 (no limit)", EnvMaxConnsPerIP))
	}
	if c.MaxConnsPerIP < 0 {
		// Behind a reverse proxy every client has the proxy's address: no
		// per-address bound of any kind then.
		c.BodyBudgetPerIP = -1
	}
	if v := get(EnvWebhookSources); v != "" {
		src, err := ParseSources(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvWebhookSources, err))
		}
		c.WebhookSources = src
	}

	c.SweepInterval = DefaultSweepInterval
	if v := get(EnvSweepInterval); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			errs = append(errs, fmt.Errorf("%s must be a duration of at least 1s such as 5m, got %q", EnvSweepInterval, v))
		} else {
			c.SweepInterval = d
		}
	}

	c.RateLimitWait = DefaultRateLimitWait
	if v := get(EnvRateLimitWait); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > 15*time.Minute {
			errs = append(errs, fmt.Errorf("%s must be a duration from 1s to 15m such as 90s, got %q", EnvRateLimitWait, v))
		} else {
			c.RateLimitWait = d
		}
	}
	c.RateLimitReserve = intVar(EnvRateLimitReserve, DefaultRateLimitReserve, -1, 1000)

	if v := get(EnvLogLevel); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			errs = append(errs, fmt.Errorf("%s must be debug, info, warn or error, got %q", EnvLogLevel, v))
		}
	}
	c.TokenExchange, errs = tokenExchangeFromEnv(get, c.GitHubURL, errs)
	if u, err := DatabaseURLFromEnv(getenv); err != nil {
		errs = append(errs, err)
	} else {
		c.DatabaseURL = u
	}
	if v := get(EnvQueueLease); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > 10*time.Minute {
			errs = append(errs, fmt.Errorf("%s must be a duration from 1s to 10m such as 30s, got %q", EnvQueueLease, v))
		} else {
			c.QueueLease = d
		}
	}
	if !c.TokenExchange.Disabled {
		// Spent job tokens outlive a restart, next to the credentials.
		c.TokenExchange.SpentFile = get(EnvTokenSpentFile)
		if c.TokenExchange.SpentFile == "" {
			c.TokenExchange.SpentFile = filepath.Join(filepath.Dir(c.CredentialsFile), DefaultSpentTokensFile)
		}
	}
	if noCredentials && len(errs) == 0 {
		// Everything but the App is usable: the caller may serve the setup
		// page with this configuration.
		return c, fmt.Errorf("configuration: %w", errors.Join(append([]error{ErrNoAppCredentials}, credErrs...)...))
	}
	if err := errors.Join(append(credErrs, errs...)...); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

// tokenExchangeFromEnv reads the token exchange's variables.
func tokenExchangeFromEnv(get func(string) string, githubURL string, errs []error) (TokenExchangeConfig, []error) {
	var t TokenExchangeConfig
	switch v := strings.ToLower(get(EnvTokenExchange)); v {
	case "", "on", "true", "1":
	case "off", "false", "0":
		t.Disabled = true
	default:
		errs = append(errs, fmt.Errorf("%s must be on or off, got %q", EnvTokenExchange, v))
	}
	t.Issuer = get(EnvOIDCIssuer)
	t.Environment = get(EnvTokenEnvironment)
	t.Audience = get(EnvOIDCAudience)
	if v := get(EnvTokenWorkflows); v != "" {
		t.Workflows = strings.Split(v, ",")
		if _, err := parseWorkflows(t.Workflows); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvTokenWorkflows, err))
		}
	}
	if v := get(EnvTokenPermissions); v != "" {
		p, err := ParseTokenPermissions(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvTokenPermissions, err))
		}
		t.Permissions = p
	}
	if !t.Disabled {
		d := t.withDefaults(githubURL)
		if _, err := NewJobTokenVerifier(VerifierOptions{Issuer: d.Issuer, Audience: d.Audience}); err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", EnvOIDCIssuer, EnvOIDCAudience, err))
		}
	}
	return t, errs
}

// App is the GitHub App the configuration names.
func (c Config) App() ghapi.App {
	return ghapi.App{ID: c.AppID, PrivateKey: c.PrivateKey, APIURL: c.APIURL, UploadURL: c.UploadURL}
}

// withDefaults fills zero tuning fields with their defaults.
func (c Config) withDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = DefaultSweepInterval
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.BodyBudget <= 0 {
		c.BodyBudget = DefaultBodyBudget
	}
	if c.BodyBudgetPerIP == 0 {
		c.BodyBudgetPerIP = DefaultBodyBudgetPerIP
	}
	if c.BodyMinRate <= 0 {
		c.BodyMinRate = DefaultBodyMinRate
	}
	if c.BodyGrace <= 0 {
		c.BodyGrace = DefaultBodyGrace
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxConnsPerIP == 0 {
		c.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = DefaultHeaderTimeout
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.DedupSize <= 0 {
		c.DedupSize = DefaultDedupSize
	}
	if c.DedupTTL <= 0 {
		c.DedupTTL = DefaultDedupTTL
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	c = c.queueDefaults()
	if c.APIURL == "" {
		c.GitHubURL, c.APIURL, c.UploadURL = ghapi.DefaultGitHubURL, ghapi.DefaultAPIURL, ghapi.DefaultUploadURL
	}
	if c.UploadURL == "" {
		c.UploadURL = c.APIURL
	}
	return c
}

// LogValue logs the configuration without its secrets.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int64("app_id", c.AppID),
		slog.Bool("private_key_set", len(c.PrivateKey) > 0),
		slog.Bool("webhook_secret_set", len(c.WebhookSecret) > 0),
		slog.Bool("state_key_set", len(c.StateKey) > 0),
		slog.Int("previous_state_keys", len(c.PreviousStateKeys)),
		slog.String("github_url", c.GitHubURL),
		slog.String("api_url", c.APIURL),
		slog.String("listen", c.Listen),
		slog.Int("workers", c.Workers),
		slog.Int("queue_size", c.QueueSize),
		slog.String("queue", redactDatabaseURL(c.DatabaseURL)),
		slog.Int("max_conns", c.MaxConns),
		slog.Int("max_conns_per_ip", c.MaxConnsPerIP),
		slog.Int("webhook_sources", len(c.WebhookSources)),
		slog.Duration("sweep_interval", c.SweepInterval),
		slog.Duration("rate_limit_wait", c.RateLimitWait),
		slog.Int("rate_limit_reserve", c.RateLimitReserve),
		slog.String("log_level", c.LogLevel.String()),
		slog.String("credentials_file", c.CredentialsFile),
		slog.String("public_url", c.PublicURL),
		slog.Bool("token_exchange", !c.TokenExchange.Disabled),
		slog.String("oidc_issuer", c.TokenExchange.Issuer),
		slog.String("oidc_audience", c.TokenExchange.Audience),
	)
}

// String keeps secrets out of %v and %+v.
func (c Config) String() string { return c.LogValue().String() }

// GoString keeps secrets out of %#v.
func (c Config) GoString() string { return "server.Config" + c.String() }
