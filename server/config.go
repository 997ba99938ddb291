package server

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/ghapi"
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
	// DefaultMaxBodyReads bounds the webhook bodies being read at once, so
	// body buffers take at most DefaultMaxBodyReads × MaxBodyBytes.
	DefaultMaxBodyReads = 16
	// DefaultBodyReadWait is how long a request waits for a body-read slot
	// before it is answered 503 (GitHub redelivers on request).
	DefaultBodyReadWait = 250 * time.Millisecond
	// DefaultMaxConns caps open connections; more wait in the kernel's
	// accept backlog until one closes.
	DefaultMaxConns = 128
	// DefaultReadTimeout bounds reading a request's headers and, separately,
	// the whole request: a slow sender is cut off after it.
	DefaultReadTimeout   = 10 * time.Second
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
	// MaxBodyReads bounds concurrent webhook body reads; a request that
	// finds no slot within BodyReadWait is answered 503.
	MaxBodyReads int
	BodyReadWait time.Duration
	// MaxConns bounds open connections (Run/Serve only, not Handler).
	MaxConns int
	// ReadTimeout bounds the headers (ReadHeaderTimeout) and the whole
	// request (ReadTimeout) of the HTTP server.
	ReadTimeout time.Duration

	DedupSize     int
	DedupTTL      time.Duration
	ShutdownGrace time.Duration

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
	EnvAppID            = "BAZINGA_APP_ID"
	EnvPrivateKey       = "BAZINGA_PRIVATE_KEY"
	EnvPrivateKeyPath   = "BAZINGA_PRIVATE_KEY_PATH"
	EnvWebhookSecret    = "BAZINGA_WEBHOOK_SECRET"
	EnvGitHubURL        = "BAZINGA_GITHUB_URL"
	EnvListen           = "BAZINGA_LISTEN"
	EnvWorkers          = "BAZINGA_WORKERS"
	EnvQueueSize        = "BAZINGA_QUEUE_SIZE"
	EnvSweepInterval    = "BAZINGA_SWEEP_INTERVAL"
	EnvRateLimitWait    = "BAZINGA_RATE_LIMIT_WAIT"
	EnvRateLimitReserve = "BAZINGA_RATE_LIMIT_RESERVE"
	EnvLogLevel         = "BAZINGA_LOG_LEVEL"
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
)

// ErrNoAppCredentials is wrapped by ConfigFromEnv's error when none of the
// App's credentials (id, private key, webhook secret) is set, in the
// environment or the credentials file: `bazinga serve` then offers the
// setup page instead of failing.
var ErrNoAppCredentials = errors.New("no GitHub App credentials: set " + EnvAppID + ", " + EnvPrivateKey +
	" and " + EnvWebhookSecret + ", or register the App from the setup page (give a listen address: " + EnvListen + " or --listen)")

// EnvHelp documents the environment variables, for `bazinga serve --help`.
const EnvHelp = `Environment:
  BAZINGA_APP_ID            the GitHub App's numeric id (required, here or in the credentials file)
  BAZINGA_PRIVATE_KEY       the App's private key, PEM (this or _PATH is required, or the credentials file's)
  BAZINGA_PRIVATE_KEY_PATH  a file holding the App's private key, PEM
  BAZINGA_WEBHOOK_SECRET    the webhook secret (required: deliveries are verified with it)
                            Without any of these three, and with a listen address, serve offers the setup page.
  BAZINGA_GITHUB_URL        GitHub Enterprise Server base, e.g. https://ghe.example.com (default https://github.com)
  BAZINGA_LISTEN            listen address (default :8080)
  BAZINGA_WORKERS           webhook workers (default 4)
  BAZINGA_QUEUE_SIZE        webhook queue capacity; full → 503 (default 1000)
  BAZINGA_SWEEP_INTERVAL    period of the active-session sweep, e.g. 5m (default 5m)
  BAZINGA_RATE_LIMIT_WAIT   longest GitHub rate-limit wait sat out before a session pauses until the reset (default 90s, at most 15m)
  BAZINGA_RATE_LIMIT_RESERVE requests of the hourly limit kept to say why a session stops (default 20; -1: none)
  BAZINGA_LOG_LEVEL         debug | info | warn | error (default info)
  BAZINGA_TOKEN_EXCHANGE    on | off: POST /token gives a privileged job of an installed repository an App token
                            for its OIDC token (default on)
  BAZINGA_OIDC_ISSUER       issuer of job tokens (default https://token.actions.githubusercontent.com;
                            on GitHub Enterprise Server <BAZINGA_GITHUB_URL>/_services/token)
  BAZINGA_OIDC_AUDIENCE     audience job tokens must carry (default bazinga; the action's token-exchange-audience)
  BAZINGA_TOKEN_WORKFLOWS   comma-separated workflows whose jobs may exchange, [owner/repo/].github/workflows/X.yml[@ref]
                            (default .github/workflows/bazinga-agent.yml,.github/workflows/bazinga.yml of the job's
                            repository, on its default branch)
  BAZINGA_TOKEN_PERMISSIONS comma-separated name:level the exchanged token asks for, within the installation's
                            (default actions:write,checks:read,contents:write,issues:write,pull_requests:write,statuses:read)
  BAZINGA_TOKEN_ENVIRONMENT the deployment environment exchanging jobs must run in (their token's environment claim;
                            default none required)
`

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
	secret, _ := cred(EnvWebhookSecret)
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
	} else {
		c.WebhookSecret = []byte(secret)
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
	if c.MaxBodyReads <= 0 {
		c.MaxBodyReads = DefaultMaxBodyReads
	}
	if c.BodyReadWait <= 0 {
		c.BodyReadWait = DefaultBodyReadWait
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
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
		slog.String("github_url", c.GitHubURL),
		slog.String("api_url", c.APIURL),
		slog.String("listen", c.Listen),
		slog.Int("workers", c.Workers),
		slog.Int("queue_size", c.QueueSize),
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
