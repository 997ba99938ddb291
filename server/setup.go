package server

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v66/github"
	"go.yaml.in/yaml/v3"
	"golang.org/x/net/netutil"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// Paths of the setup page. The manifest's redirect_url and hook URL are
// rewritten to these under the public base URL.
const (
	SetupPath         = "/setup"
	SetupCallbackPath = "/setup/callback"
	WebhookPath       = "/webhook"
)

// setupStateTTL is how long a registration may take: GitHub's manifest
// flow must be completed within an hour.
const setupStateTTL = time.Hour

// stateCookie binds a registration's state to the browser that began it.
const stateCookie = "bazinga_setup_state"

// SetupOptions configures the setup page.
type SetupOptions struct {
	// Manifest is the App manifest in YAML (app.yml).
	Manifest []byte
	// GitHubURL is the web base the form posts to; APIURL and UploadURL are
	// the REST bases of the code exchange (Config's fields).
	GitHubURL, APIURL, UploadURL string
	// PublicURL is the base URL GitHub reaches this server at (the
	// webhook and the redirect back); empty: taken from each request's
	// Host (and X-Forwarded-Proto/-Host, as behind a proxy).
	PublicURL string
	// CredentialsFile is where the credentials are written.
	CredentialsFile string
	// Token guards the page: only who knows it (it is logged at start)
	// may register the App. Empty: a random one.
	Token string
	// HTTPClient makes the code exchange (default: 30 s timeout).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Setup registers the GitHub App in one step, GitHub's manifest flow (the
// way Probot sets an App up): GET /setup?token=… shows a form that POSTs
// the manifest to GitHub; GitHub redirects back to /setup/callback with a
// code, exchanged at POST /app-manifests/{code}/conversions for the App's
// id, private key and webhook secret, which are written to the credentials
// file that the next ConfigFromEnv reads.
//
// Who reaches an unconfigured server first could register their own App
// into it, so the page needs the start-up token; the state parameter
// (random, single-use, an hour at most, also held in a cookie) ties the
// callback to a form this server issued to this browser (CSRF).
type Setup struct {
	o        SetupOptions
	manifest map[string]any
	log      *slog.Logger
	mux      *http.ServeMux
	gh       *github.Client

	mu     sync.Mutex
	states map[string]time.Time // issued state → expiry
	done   chan struct{}
	doneMu sync.Once
	creds  Credentials
}

// NewSetup parses the manifest and prepares the handlers.
func NewSetup(o SetupOptions, logger *slog.Logger) (*Setup, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var m map[string]any
	if err := yaml.Unmarshal(o.Manifest, &m); err != nil {
		return nil, fmt.Errorf("setup: the App manifest is not YAML: %w", err)
	}
	if m == nil {
		return nil, errors.New("setup: the App manifest is empty")
	}
	if url, _ := m["url"].(string); url == "" {
		return nil, errors.New("setup: the App manifest has no url (GitHub requires the App's homepage)")
	}
	if o.CredentialsFile == "" {
		o.CredentialsFile = DefaultCredentialsFile
	}
	// Fail now, not after the App exists on GitHub with nowhere to keep
	// its key.
	if err := checkWritable(o.CredentialsFile); err != nil {
		return nil, fmt.Errorf("setup: the credentials file: %w", err)
	}
	if o.GitHubURL == "" || o.APIURL == "" {
		o.GitHubURL, o.APIURL, o.UploadURL = ghapi.DefaultGitHubURL, ghapi.DefaultAPIURL, ghapi.DefaultUploadURL
	}
	if o.UploadURL == "" {
		o.UploadURL = o.APIURL
	}
	if o.PublicURL != "" {
		u, err := url.Parse(o.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			return nil, fmt.Errorf("setup: %s must be an http(s) base URL such as https://bazinga.example.com, got %q", EnvPublicURL, o.PublicURL)
		}
		o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	}
	if o.Token == "" {
		o.Token = randomToken()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	gh := github.NewClient(o.HTTPClient)
	if o.APIURL != ghapi.DefaultAPIURL {
		var err error
		if gh, err = gh.WithEnterpriseURLs(o.APIURL, o.UploadURL); err != nil {
			return nil, fmt.Errorf("setup: API URL %q: %w", o.APIURL, err)
		}
	}
	s := &Setup{o: o, manifest: m, log: logger, gh: gh, states: map[string]time.Time{}, done: make(chan struct{})}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET "+SetupPath, s.handlePage)
	s.mux.HandleFunc("GET "+SetupCallbackPath, s.handleCallback)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"setup"}` + "\n"))
	})
	s.mux.HandleFunc("POST "+WebhookPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "60")
		http.Error(w, "bazinga is not configured yet: finish the App setup", http.StatusServiceUnavailable)
	})
	return s, nil
}

// Handler serves /setup, /setup/callback, /healthz (and 503 on /webhook).
func (s *Setup) Handler() http.Handler { return s.mux }

// URL is the address of the setup page under base (e.g. http://host:8080).
func (s *Setup) URL(base string) string {
	return strings.TrimRight(base, "/") + SetupPath + "?token=" + url.QueryEscape(s.o.Token)
}

// Done is closed once the credentials are written.
func (s *Setup) Done() <-chan struct{} { return s.done }

// Credentials returns what was written (valid after Done).
func (s *Setup) Credentials() Credentials {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.creds
}

// Serve serves the setup page on ln until the credentials are written
// (nil) or ctx ends (ctx.Err()), with the webhook server's limits.
func (s *Setup) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: DefaultReadTimeout,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      60 * time.Second, // the callback waits for GitHub
		IdleTimeout:       30 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(netutil.LimitListener(ln, DefaultMaxConns)) }()
	var err error
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-s.Done():
	case e := <-serveErr:
		if !errors.Is(e, http.ErrServerClosed) {
			return fmt.Errorf("setup server: %w", e)
		}
	}
	// Shutdown lets the callback's answer reach the browser.
	shCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if e := hs.Shutdown(shCtx); e != nil && err == nil {
		err = fmt.Errorf("setup server shutdown: %w", e)
	}
	return err
}

// orgName is a GitHub organisation login.
var orgName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$`)

func (s *Setup) handlePage(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	// The URL carries the token: no Referer to GitHub or anywhere else.
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if !s.tokenOK(r.URL.Query().Get("token")) {
		s.log.Warn("setup page refused: wrong or missing token", "remote", r.RemoteAddr)
		http.Error(w, "this page needs the token printed in bazinga serve's log: open the URL it shows", http.StatusForbidden)
		return
	}
	if s.finished() {
		http.Error(w, "the App is registered already; restart bazinga serve if it has not picked it up", http.StatusConflict)
		return
	}
	org := r.URL.Query().Get("org")
	if org != "" && !orgName.MatchString(org) {
		http.Error(w, fmt.Sprintf("org %q is not a GitHub organisation name", org), http.StatusBadRequest)
		return
	}
	base := s.publicBase(r)
	// The form goes to GitHub, which redirects back to base (browsers check
	// form-action on that redirect too).
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; form-action 'self' "+
		origin(s.o.GitHubURL)+" "+origin(base))
	manifest, err := s.manifestJSON(base)
	if err != nil {
		s.log.Error("setup: building the manifest", "err", err)
		http.Error(w, "cannot build the App manifest", http.StatusInternalServerError)
		return
	}
	state := s.issueState()
	http.SetCookie(w, &http.Cookie{
		Name: stateCookie, Value: state, Path: SetupPath, MaxAge: int(setupStateTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(base, "https://"),
	})
	action := strings.TrimRight(s.o.GitHubURL, "/") + "/settings/apps/new"
	if org != "" {
		action = strings.TrimRight(s.o.GitHubURL, "/") + "/organizations/" + url.PathEscape(org) + "/settings/apps/new"
	}
	action += "?state=" + url.QueryEscape(state)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := setupPage.Execute(w, map[string]any{
		"Action": action, "Manifest": string(manifest), "Org": org, "Token": s.o.Token,
		"Webhook": base + WebhookPath, "Callback": base + SetupCallbackPath, "File": s.o.CredentialsFile,
	}); err != nil {
		s.log.Debug("setup page write", "err", err)
	}
}

func (s *Setup) handleCallback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	q := r.URL.Query()
	state, code := q.Get("state"), q.Get("code")
	cookie, _ := r.Cookie(stateCookie)
	if state == "" || cookie == nil || subtle.ConstantTimeCompare([]byte(cookie.Value), []byte(state)) != 1 || !s.takeState(state) {
		s.log.Warn("setup callback refused: unknown, expired or foreign state", "remote", r.RemoteAddr)
		http.Error(w, "unknown or expired state: start again from the setup page", http.StatusForbidden)
		return
	}
	if !validCode(code) {
		http.Error(w, "missing or malformed code parameter", http.StatusBadRequest)
		return
	}
	if s.finished() {
		http.Error(w, "the App is registered already", http.StatusConflict)
		return
	}
	cfg, _, err := s.gh.Apps.CompleteAppManifest(r.Context(), code)
	if err != nil {
		s.log.Error("setup: exchanging the manifest code", "err", err)
		http.Error(w, "GitHub refused the code exchange (codes are good once, for an hour): "+err.Error(), http.StatusBadGateway)
		return
	}
	creds := Credentials{
		AppID: cfg.GetID(), Slug: cfg.GetSlug(), PrivateKey: cfg.GetPEM(), WebhookSecret: cfg.GetWebhookSecret(),
		ClientID: cfg.GetClientID(), ClientSecret: cfg.GetClientSecret(),
	}
	// The state key is bazinga's own, random, and written with the App's
	// credentials; nothing of the webhook secret is ever published.
	if creds.StateKey, err = GenerateStateKey(); err != nil {
		s.log.Error("setup: generating the state key", "err", err)
		http.Error(w, "cannot generate the state key: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if err := checkCredentials(creds); err != nil {
		s.log.Error("setup: GitHub's answer is unusable", "err", err)
		http.Error(w, "GitHub's answer is unusable: "+err.Error(), http.StatusBadGateway)
		return
	}
	if err := WriteCredentials(s.o.CredentialsFile, creds, s.o.Now()); err != nil {
		s.log.Error("setup: writing the credentials", "err", err, "file", s.o.CredentialsFile)
		code := http.StatusInternalServerError
		if errors.Is(err, ErrCredentialsExist) {
			code = http.StatusConflict
		}
		http.Error(w, "the App was registered on GitHub, but its credentials could not be written: "+err.Error(), code)
		return
	}
	s.mu.Lock()
	s.creds = creds
	s.mu.Unlock()
	s.log.Info("GitHub App registered", "app_id", creds.AppID, "slug", creds.Slug, "file", s.o.CredentialsFile)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	install := strings.TrimRight(s.o.GitHubURL, "/") + "/apps/" + url.PathEscape(creds.Slug) + "/installations/new"
	if err := donePage.Execute(w, map[string]any{"Slug": creds.Slug, "ID": creds.AppID, "File": s.o.CredentialsFile, "Install": install}); err != nil {
		s.log.Debug("setup done page write", "err", err)
	}
	s.doneMu.Do(func() { close(s.done) })
}

// checkWritable makes sure path does not exist and its directory takes a
// new file.
func checkWritable(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s: %w", path, ErrCredentialsExist)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".bazinga-setup-*")
	if err != nil {
		return fmt.Errorf("cannot write next to %s (set %s to a writable path): %w", path, EnvCredentialsFile, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func checkCredentials(c Credentials) error {
	var errs []error
	if c.AppID <= 0 {
		errs = append(errs, errors.New("no App id"))
	}
	if c.Slug == "" {
		errs = append(errs, errors.New("no App slug"))
	}
	if err := ghapi.ValidatePrivateKey([]byte(c.PrivateKey)); err != nil {
		errs = append(errs, fmt.Errorf("private key: %w", err))
	}
	if c.WebhookSecret == "" {
		errs = append(errs, errors.New("no webhook secret (the manifest must declare hook_attributes)"))
	}
	return errors.Join(errs...)
}

// validCode accepts what GitHub's codes look like (hex, a few dozen
// characters); the code goes into a URL path.
func validCode(c string) bool {
	if c == "" || len(c) > 128 {
		return false
	}
	for _, r := range c {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func (s *Setup) tokenOK(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(s.o.Token)) == 1
}

func (s *Setup) finished() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// issueState records a new random state, dropping expired ones.
func (s *Setup) issueState() string {
	st := randomToken()
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, exp := range s.states {
		if !now.Before(exp) {
			delete(s.states, k)
		}
	}
	s.states[st] = now.Add(setupStateTTL)
	return st
}

// takeState consumes a state: true if this server issued it and it has
// not expired or been used.
func (s *Setup) takeState(st string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.states[st]
	delete(s.states, st)
	return ok && s.o.Now().Before(exp)
}

// publicBase is the base URL GitHub reaches this server at.
func (s *Setup) publicBase(r *http.Request) string {
	if s.o.PublicURL != "" {
		return s.o.PublicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := firstHeaderValue(r.Header.Get("X-Forwarded-Proto")); p == "http" || p == "https" {
		scheme = p
	}
	host := r.Host
	if h := firstHeaderValue(r.Header.Get("X-Forwarded-Host")); h != "" {
		host = h
	}
	return scheme + "://" + host
}

// origin is scheme://host of a URL, for the CSP's form-action.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "'none'"
	}
	return p.Scheme + "://" + p.Host
}

func firstHeaderValue(v string) string {
	first, _, _ := strings.Cut(v, ",")
	return strings.TrimSpace(first)
}

// manifestJSON is app.yml as JSON with this server's webhook and callback.
func (s *Setup) manifestJSON(base string) ([]byte, error) {
	m := make(map[string]any, len(s.manifest)+2)
	for k, v := range s.manifest {
		m[k] = v
	}
	hook := map[string]any{"active": true}
	if h, ok := s.manifest["hook_attributes"].(map[string]any); ok {
		for k, v := range h {
			hook[k] = v
		}
	}
	hook["url"] = base + WebhookPath
	m["hook_attributes"] = hook
	m["redirect_url"] = base + SetupCallbackPath
	return json.Marshal(m)
}

func randomToken() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

var setupPage = template.Must(template.New("setup").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bazinga: register the GitHub App</title></head>
<body style="font-family: sans-serif; max-width: 46em; margin: 2em auto">
<h1>Register bazinga as a GitHub App</h1>
<p>bazinga has no GitHub App credentials yet. The button below sends the App manifest (<code>app.yml</code>)
to GitHub{{if .Org}} for the organisation <b>{{.Org}}</b>{{else}} for your personal account{{end}}; you pick the name there.
GitHub then sends you back here, and bazinga writes the App's id, private key and webhook secret to
<code>{{.File}}</code> and starts serving.</p>
<ul><li>Webhook URL: <code>{{.Webhook}}</code></li><li>Redirect URL: <code>{{.Callback}}</code></li></ul>
<p>GitHub must reach these addresses; set <code>BAZINGA_PUBLIC_URL</code> if they are not the public ones.</p>
<form action="{{.Action}}" method="post">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<button type="submit">Register the App on GitHub</button>
</form>
<form action="/setup" method="get" style="margin-top: 2em">
<input type="hidden" name="token" value="{{.Token}}">
<label>Register it for an organisation instead: <input name="org" value="{{.Org}}" placeholder="organisation"></label>
<button type="submit">Use this organisation</button>
</form>
</body></html>
`))

var donePage = template.Must(template.New("done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>bazinga: App registered</title></head>
<body style="font-family: sans-serif; max-width: 46em; margin: 2em auto">
<h1>The GitHub App {{.Slug}} is registered</h1>
<p>App id {{.ID}}. Its credentials are in <code>{{.File}}</code> (mode 0600; keep it private), which
<code>bazinga serve</code> reads at start. It now serves webhooks with them.</p>
<p>The file also holds <code>BAZINGA_STATE_KEY</code>, a random key generated here that signs the session
state. <code>bazinga serve</code> logs its public key at start as <code>state_public_key</code>: store that as the
repository (or organisation) variable <code>BAZINGA_STATE_PUBLIC_KEY</code>, which step jobs verify the state with.
The state key itself never goes to GitHub.</p>
<p>Next: <a href="{{.Install}}">install the App</a> on the repositories bazinga should work on.</p>
</body></html>
`))
