package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// TokenPath is where `bazinga serve` exchanges a job's OIDC token for an
// installation token.
const TokenPath = "/token"

// DefaultOIDCAudience is the audience job tokens must be requested with
// (core.getIDToken("bazinga"); the action's token-exchange-audience).
const DefaultOIDCAudience = "bazinga"

// DefaultTokenWorkflows are the workflows whose jobs may exchange their
// token, relative to the job's own repository and on its default branch.
var DefaultTokenWorkflows = []string{".github/workflows/bazinga-agent.yml", ".github/workflows/bazinga.yml"}

// DefaultTokenPermissions are what an exchanged token may do: what the
// privileged jobs need (push and claim, comment, PRs and merges, dispatch
// the orchestrator, read checks and statuses before merging), and never
// more than the installation holds. Not `workflows`: a step that changes
// workflow files needs it granted explicitly (BAZINGA_TOKEN_PERMISSIONS).
var DefaultTokenPermissions = map[string]string{
	"actions": "write", "checks": "read", "contents": "write", "issues": "write",
	"pull_requests": "write", "statuses": "read",
}

// Defaults of the per-repository exchange rate.
const (
	DefaultTokenRate  = 5 * time.Second // one token per interval, sustained
	DefaultTokenBurst = 20
	maxTokenBody      = 4 << 10
	tokenLimiters     = 10000 // repositories whose limiter is kept
	// seenTokens bounds the job tokens remembered as used (by jti) until
	// they expire; GitHub's live minutes, so this is far above any rate
	// the per-repository limits allow.
	seenTokens = 100000
)

// TokenExchangeConfig configures POST /token.
type TokenExchangeConfig struct {
	// Disabled turns the endpoint off (BAZINGA_TOKEN_EXCHANGE=off).
	Disabled bool
	// Issuer is the OIDC issuer of job tokens ("" = github.com's, or the
	// GitHub Enterprise Server's /_services/token).
	Issuer string
	// Audience the job tokens must carry (default DefaultOIDCAudience).
	Audience string
	// Workflows is the allow-list (default DefaultTokenWorkflows). An entry
	// is a workflow path, relative to the job's repository
	// (.github/workflows/x.yml) or absolute (owner/repo/.github/workflows/x.yml,
	// e.g. a reusable workflow), and optionally @ref: an exact ref, or @* for
	// any. Without a ref, only the repository's default branch is allowed.
	// Both workflow_ref and job_workflow_ref must match an entry.
	Workflows []string
	// Permissions asked for (default DefaultTokenPermissions), cut down to
	// what the installation holds.
	Permissions map[string]string
	// Environment, when set, is the deployment environment the job must
	// run in (its token's environment claim): the privileged jobs declare
	// it and the unprivileged ones do not, so a job that runs agent code
	// cannot exchange its token even if it was given id-token: write.
	Environment string
	// Rate and Burst limit the exchanges per repository.
	Rate  time.Duration
	Burst int
	// SpentFile keeps spent job tokens across restarts ("" = in memory
	// only); ConfigFromEnv puts it next to the credentials file.
	SpentFile string
}

func (c TokenExchangeConfig) withDefaults(githubURL string) TokenExchangeConfig {
	if c.Issuer == "" {
		c.Issuer = DefaultOIDCIssuer
		if githubURL != "" && githubURL != ghapi.DefaultGitHubURL {
			c.Issuer = strings.TrimRight(githubURL, "/") + "/_services/token"
		}
	}
	if c.Audience == "" {
		c.Audience = DefaultOIDCAudience
	}
	if len(c.Workflows) == 0 {
		c.Workflows = DefaultTokenWorkflows
	}
	if len(c.Permissions) == 0 {
		c.Permissions = DefaultTokenPermissions
	}
	if c.Rate <= 0 {
		c.Rate = DefaultTokenRate
	}
	if c.Burst <= 0 {
		c.Burst = DefaultTokenBurst
	}
	return c
}

// ErrNotInstalled is returned by AppGitHub.RepoInstallation when the App
// is not installed on the repository.
var ErrNotInstalled = errors.New("the App is not installed on the repository")

// AppGitHub is what the exchange asks GitHub, as the App.
type AppGitHub interface {
	// RepoInstallation is GET /repos/{owner}/{repo}/installation (App JWT);
	// ErrNotInstalled when GitHub answers 404.
	RepoInstallation(ctx context.Context, owner, repo string) (*github.Installation, error)
	// Repository is GET /repos/{owner}/{repo} with the installation's token.
	Repository(ctx context.Context, installation int64, owner, repo string) (*github.Repository, error)
	// CreateToken is POST /app/installations/{id}/access_tokens (App JWT).
	CreateToken(ctx context.Context, installation int64, opts *github.InstallationTokenOptions) (*github.InstallationToken, error)
}

// FactoryGitHub is AppGitHub over a ClientFactory.
type FactoryGitHub struct{ F *ghapi.ClientFactory }

// RepoInstallation implements AppGitHub.
func (g FactoryGitHub) RepoInstallation(ctx context.Context, owner, repo string) (*github.Installation, error) {
	c, err := g.F.App()
	if err != nil {
		return nil, err
	}
	in, resp, err := c.Apps.FindRepositoryInstallation(ctx, owner, repo)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return nil, ErrNotInstalled
	}
	return in, err
}

// Repository implements AppGitHub.
func (g FactoryGitHub) Repository(ctx context.Context, installation int64, owner, repo string) (*github.Repository, error) {
	c, err := g.F.Installation(installation)
	if err != nil {
		return nil, err
	}
	r, _, err := c.Repositories.Get(ctx, owner, repo)
	return r, err
}

// CreateToken implements AppGitHub.
func (g FactoryGitHub) CreateToken(ctx context.Context, installation int64, opts *github.InstallationTokenOptions) (*github.InstallationToken, error) {
	c, err := g.F.App()
	if err != nil {
		return nil, err
	}
	t, _, err := c.Apps.CreateInstallationToken(ctx, installation, opts)
	return t, err
}

// TokenExchange is POST /token: a GitHub Actions job shows its OIDC token
// (bearer) and gets a short-lived installation token for its own
// repository, so that what it pushes and posts is the App's and starts
// workflows (a GITHUB_TOKEN's does not).
type TokenExchange struct {
	cfg      TokenExchangeConfig
	verifier *JobTokenVerifier
	gh       AppGitHub
	login    string
	log      *slog.Logger
	now      func() time.Time
	limiters *lru.Cache[string, *rate.Limiter]
	workflow []workflowEntry
	// count, when set (MountTokenExchange), counts outcomes in metrics.
	count func(outcome string)
	// seen holds the jti of exchanged job tokens until their exp: a job
	// token is good for one exchange, so one copied from a job (a log, a
	// proxy) after its use is worth nothing.
	seen *lru.Cache[string, time.Time]
	// spentFile, when configured, keeps them across restarts (spent.go).
	spentFile *spentFile
	// shared, when set, keeps them in the queue's database for every
	// replica (spentsql.go); it replaces spentFile.
	shared SpentTokens
}

// TokenExchangeOptions are the parts of a TokenExchange that are not
// configuration.
type TokenExchangeOptions struct {
	GitHub AppGitHub
	// GitHubURL is the web base, to derive a GHES issuer.
	GitHubURL string
	// Login is the App's bot login, told to the job.
	Login string
	// Client fetches the issuer's keys (default: 10 s timeout).
	Client *http.Client
	Now    func() time.Time
	Logger *slog.Logger
	// Spent, when set, records exchanged job tokens where every replica
	// sees them (SQLSpentTokens); then TokenExchangeConfig.SpentFile is
	// not used.
	Spent SpentTokens
}

// NewTokenExchange validates cfg and builds the handler.
func NewTokenExchange(cfg TokenExchangeConfig, o TokenExchangeOptions) (*TokenExchange, error) {
	if o.GitHub == nil {
		return nil, errors.New("token exchange: GitHub is required")
	}
	cfg = cfg.withDefaults(o.GitHubURL)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	entries, err := parseWorkflows(cfg.Workflows)
	if err != nil {
		return nil, fmt.Errorf("token exchange: %w", err)
	}
	known := permissionNames()
	for _, name := range sortedNames(cfg.Permissions) {
		if level := cfg.Permissions[name]; level != "read" && level != "write" {
			return nil, fmt.Errorf("token exchange: permission %s: level %q, want read or write", name, level)
		}
		if !known[name] {
			return nil, fmt.Errorf("token exchange: %s is not a GitHub App permission", name)
		}
	}
	v, err := NewJobTokenVerifier(VerifierOptions{Issuer: cfg.Issuer, Audience: cfg.Audience, Client: o.Client, Now: o.Now})
	if err != nil {
		return nil, fmt.Errorf("token exchange: %w", err)
	}
	lim, err := lru.New[string, *rate.Limiter](tokenLimiters)
	if err != nil {
		return nil, err
	}
	seen, err := lru.New[string, time.Time](seenTokens)
	if err != nil {
		return nil, err
	}
	x := &TokenExchange{cfg: cfg, verifier: v, gh: o.GitHub, login: o.Login, log: o.Logger, now: o.Now,
		limiters: lim, workflow: entries, seen: seen, shared: o.Spent}
	if cfg.SpentFile != "" && o.Spent == nil {
		if x.spentFile, err = openSpentFile(cfg.SpentFile, o.Now()); err != nil {
			return nil, fmt.Errorf("token exchange: %w", err)
		}
	}
	return x, nil
}

// LogValue logs the exchange's configuration.
func (x *TokenExchange) LogValue() slog.Value {
	return slog.GroupValue(slog.String("issuer", x.cfg.Issuer), slog.String("audience", x.cfg.Audience),
		slog.String("workflows", x.allowed()), slog.String("permissions", permString(x.cfg.Permissions)),
		slog.String("environment", x.cfg.Environment), slog.Duration("rate", x.cfg.Rate), slog.Int("burst", x.cfg.Burst))
}

// workflowEntry is one allow-list entry.
type workflowEntry struct {
	repo string // "" = the job's own repository
	path string
	ref  string // "" = the default branch; "*" = any
}

func (e workflowEntry) String() string {
	s := e.path
	if e.repo != "" {
		s = e.repo + "/" + s
	}
	if e.ref != "" {
		s += "@" + e.ref
	}
	return s
}

func parseWorkflows(list []string) ([]workflowEntry, error) {
	var out []workflowEntry
	for _, raw := range list {
		s := strings.TrimSpace(raw)
		if s == "" {
			continue
		}
		path, ref, _ := strings.Cut(s, "@")
		e := workflowEntry{path: path, ref: ref}
		if i := strings.Index(path, "/.github/workflows/"); i > 0 {
			e.repo, e.path = path[:i], path[i+1:]
			if _, ok := ghapi.ParseRepo(e.repo); !ok {
				return nil, fmt.Errorf("workflow %q: %q is not owner/name", raw, e.repo)
			}
		}
		if !strings.HasPrefix(e.path, ".github/workflows/") || strings.Contains(e.path, "..") ||
			!(strings.HasSuffix(e.path, ".yml") || strings.HasSuffix(e.path, ".yaml")) {
			return nil, fmt.Errorf("workflow %q: want [owner/repo/].github/workflows/NAME.yml[@ref]", raw)
		}
		if strings.Contains(s, "@") && ref == "" {
			return nil, fmt.Errorf("workflow %q: empty ref after @", raw)
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, errors.New("the workflow allow-list is empty")
	}
	return out, nil
}

// pathAllowed reports whether a workflow ref ("owner/repo/path@ref") names
// an allowed workflow of repo, whatever its ref.
func (x *TokenExchange) pathAllowed(repo, wref string) bool {
	_, ok := x.match(repo, wref, "", true)
	return ok
}

// match finds the entry allowing wref for a job of repo whose default
// branch is def; anyRef skips the ref check.
func (x *TokenExchange) match(repo, wref, def string, anyRef bool) (workflowEntry, bool) {
	full, ref, ok := strings.Cut(wref, "@")
	if !ok {
		return workflowEntry{}, false
	}
	for _, e := range x.workflow {
		owner := e.repo
		if owner == "" {
			owner = repo
		}
		if !strings.EqualFold(full, owner+"/"+e.path) {
			continue
		}
		if anyRef || e.ref == "*" || (e.ref == "" && ref == "refs/heads/"+def) || (e.ref != "" && ref == e.ref) {
			return e, true
		}
	}
	return workflowEntry{}, false
}

func (x *TokenExchange) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		x.refuse(w, r, http.StatusMethodNotAllowed, CheckNone, "use POST with the job's OIDC token as bearer", nil)
		return
	}
	// The body carries nothing; read a bounded amount so the connection
	// can be reused, and refuse a large one.
	if r.ContentLength > maxTokenBody {
		w.Header().Set("Connection", "close")
		x.refuse(w, r, http.StatusRequestEntityTooLarge, CheckNone, fmt.Sprintf("body larger than %d bytes", maxTokenBody), nil)
		return
	}
	if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxTokenBody)); err != nil {
		x.refuse(w, r, http.StatusRequestEntityTooLarge, CheckNone, fmt.Sprintf("body larger than %d bytes", maxTokenBody), nil)
		return
	}
	scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	raw = strings.TrimSpace(raw)
	if !strings.EqualFold(scheme, "bearer") || raw == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="bazinga"`)
		x.refuse(w, r, http.StatusUnauthorized, CheckBearer,
			"send the job's GitHub Actions OIDC token (audience "+strconv.Quote(x.cfg.Audience)+") as `Authorization: Bearer <token>`; the job needs `permissions: id-token: write`", nil)
		return
	}
	claims, err := x.verifier.Verify(r.Context(), raw)
	if err != nil {
		var ve *VerifyError
		if !errors.As(err, &ve) {
			ve = &VerifyError{CheckMalformed, err}
		}
		status := http.StatusUnauthorized
		if ve.Check == CheckKeys {
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "30")
		}
		// The job is told which check failed; the log has the detail.
		x.refuse(w, r, status, ve.Check, refusalText(ve, x.cfg), []any{"err", ve.Err.Error()})
		return
	}
	x.exchange(w, r, claims)
}

// refusalText is what the job is told about a failed token check.
func refusalText(ve *VerifyError, cfg TokenExchangeConfig) string {
	switch ve.Check {
	case CheckIssuer:
		return "the token was not issued by " + cfg.Issuer
	case CheckAudience:
		return "the token's audience is not " + strconv.Quote(cfg.Audience) + "; request it with that audience (input token-exchange-audience)"
	case CheckExpiry:
		return "the token has expired, or carries no exp"
	case CheckNotBefore:
		return "the token is not valid yet (nbf)"
	case CheckIssuedAt:
		return "the token was issued in the future (iat)"
	case CheckSignature:
		if errors.Is(ve.Err, ErrUnknownKey) {
			return "the token is signed with a key the issuer does not publish"
		}
		return "the token's signature does not verify with the issuer's keys (RS256 only)"
	case CheckKeys:
		return "the issuer's keys cannot be fetched now; retry later"
	}
	return "the token is not a JWT"
}

func (x *TokenExchange) exchange(w http.ResponseWriter, r *http.Request, c *JobClaims) {
	attrs := []any{"repository", c.Repository, "workflow_ref", c.WorkflowRef, "job_workflow_ref", c.JobWorkflowRef,
		"run_id", c.RunID, "actor", c.Actor, "event_name", c.EventName}
	repo, ok := ghapi.ParseRepo(c.Repository)
	switch {
	case !ok:
		x.refuse(w, r, http.StatusForbidden, CheckRepository, fmt.Sprintf("the token's repository claim %q is not owner/name", c.Repository), attrs)
		return
	case !strings.EqualFold(repo.Owner, c.RepositoryOwner):
		x.refuse(w, r, http.StatusForbidden, CheckRepository, fmt.Sprintf("the token's repository_owner %q is not the owner of %s", c.RepositoryOwner, c.Repository), attrs)
		return
	case c.RepositoryID == "" || c.WorkflowRef == "" || c.JobWorkflowRef == "":
		x.refuse(w, r, http.StatusForbidden, CheckClaims, "the token lacks repository_id, workflow_ref or job_workflow_ref: not a GitHub Actions job token", attrs)
		return
	}
	for _, wref := range []string{c.WorkflowRef, c.JobWorkflowRef} {
		if !x.pathAllowed(c.Repository, wref) {
			x.refuse(w, r, http.StatusForbidden, CheckWorkflow, fmt.Sprintf("workflow %s may not exchange tokens; allowed: %s", wref, x.allowed()), attrs)
			return
		}
	}
	if x.cfg.Environment != "" && c.Environment != x.cfg.Environment {
		x.refuse(w, r, http.StatusForbidden, CheckEnvironment, fmt.Sprintf("the job runs in environment %q, not %q: add `environment: %s` to the privileged job", c.Environment, x.cfg.Environment, x.cfg.Environment), attrs)
		return
	}
	// Limited after verification, so forged tokens cannot spend a
	// repository's allowance.
	ctx := r.Context()
	inst, attrs, ok := admitRepo(ctx, w, r, repoGate{limiters: x.limiters, every: x.cfg.Rate, burst: x.cfg.Burst, now: x.now(),
		gh: x.gh, refuse: x.refuse, what: "token exchanges"}, repo, c.Repository, attrs)
	if !ok {
		return
	}
	gr, err := x.gh.Repository(ctx, inst.GetID(), repo.Owner, repo.Name)
	if err != nil {
		x.refuse(w, r, http.StatusBadGateway, CheckGitHub, "GitHub did not answer the repository "+c.Repository, append(attrs, "err", err))
		return
	}
	// A repository deleted and created again under the same name is
	// another repository: the id tells them apart.
	if strconv.FormatInt(gr.GetID(), 10) != c.RepositoryID {
		x.refuse(w, r, http.StatusForbidden, CheckRepositoryID, fmt.Sprintf("the token's repository_id %s is not %s's (%d)", c.RepositoryID, c.Repository, gr.GetID()), attrs)
		return
	}
	for _, wref := range []string{c.WorkflowRef, c.JobWorkflowRef} {
		if _, ok := x.match(c.Repository, wref, gr.GetDefaultBranch(), false); !ok {
			x.refuse(w, r, http.StatusForbidden, CheckWorkflow, fmt.Sprintf("workflow %s runs on a ref that may not exchange tokens (allowed: %s; no ref = the default branch, %s)", wref, x.allowed(), gr.GetDefaultBranch()), attrs)
			return
		}
	}
	// Spent just before GitHub is asked for the token: a refused
	// exchange leaves the job token usable for a retry.
	if fresh, err := x.spend(ctx, c); err != nil {
		// Fail closed: a spend that is not recorded could be replayed
		// after a restart or at another replica.
		x.refuse(w, r, http.StatusServiceUnavailable, CheckNone, "cannot record the job token as spent; retry later", append(attrs, "err", err))
		return
	} else if !fresh {
		x.refuse(w, r, http.StatusUnauthorized, CheckReplay, "this job token was already exchanged; request a new one", attrs)
		return
	}
	perms := grantable(x.cfg.Permissions, inst.GetPermissions())
	if len(perms) == 0 {
		x.refuse(w, r, http.StatusForbidden, CheckInstalled, "the installation holds none of the permissions the jobs need", attrs)
		return
	}
	ip, err := toInstallationPermissions(perms)
	if err != nil {
		x.refuse(w, r, http.StatusInternalServerError, CheckNone, "internal error", append(attrs, "err", err))
		return
	}
	tok, err := x.gh.CreateToken(ctx, inst.GetID(), &github.InstallationTokenOptions{Repositories: []string{repo.Name}, Permissions: ip})
	if err != nil {
		x.refuse(w, r, http.StatusBadGateway, CheckGitHub, "GitHub did not issue the installation token", append(attrs, "err", err))
		return
	}
	if x.count != nil {
		x.count("issued")
	}
	x.log.Info("token issued", append(attrs, "expires_at", tok.GetExpiresAt().Time, "permissions", permString(perms))...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(ghapi.ExchangedToken{Token: tok.GetToken(), ExpiresAt: tok.GetExpiresAt().Time,
		Repository: c.Repository, Permissions: perms, Login: x.login})
}

// spend marks the token's jti used; false when it was (a token without
// jti cannot be told apart from a copy and is refused).
// With a spent file, the spend is on disk before it returns true, so a
// restart does not make the token good again; with a shared store, it is
// in the queue's database, so no other replica takes it either.
func (x *TokenExchange) spend(ctx context.Context, c *JobClaims) (bool, error) {
	if c.ID == "" {
		return false, nil
	}
	key := c.Issuer + "\x00" + c.ID
	exp := c.ExpiresAt.Time
	now := x.now()
	if prev, found, _ := x.seen.PeekOrAdd(key, exp); found && now.Before(prev.Add(x.verifier.leeway)) {
		return false, nil
	}
	if x.shared != nil {
		// Kept for the leeway past exp too: the verifier accepts it that long.
		fresh, err := x.shared.Spend(ctx, key, exp.Add(x.verifier.leeway))
		if err != nil || !fresh {
			if err != nil {
				x.seen.Remove(key)
			}
			return false, err
		}
	} else if x.spentFile != nil {
		if x.spentFile.spent(key, now) {
			x.seen.Add(key, exp)
			return false, nil
		}
		// Kept for the leeway past exp too: the verifier accepts it that long.
		if err := x.spentFile.add(key, exp.Add(x.verifier.leeway), now); err != nil {
			x.seen.Remove(key)
			return false, err
		}
	}
	x.seen.Add(key, exp)
	return true, nil
}

func (x *TokenExchange) allowed() string {
	var s []string
	for _, e := range x.workflow {
		s = append(s, e.String())
	}
	return strings.Join(s, ", ")
}

func (x *TokenExchange) refuse(w http.ResponseWriter, r *http.Request, status int, check Check, msg string, attrs []any) {
	if x.count != nil {
		x.count(check.String())
	}
	x.log.Warn("token refused", append([]any{"status", status, "check", check.String(), "reason", msg, "remote", r.RemoteAddr}, attrs...)...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ghapi.ExchangeRefusal{Error: check.String(), Message: msg})
}

// grantable is want cut down to what the installation holds (a lower
// level where it holds read only).
func grantable(want map[string]string, held *github.InstallationPermissions) map[string]string {
	have := map[string]string{}
	if held != nil {
		b, _ := json.Marshal(held)
		_ = json.Unmarshal(b, &have)
	}
	out := map[string]string{}
	for name, level := range want {
		switch h := have[name]; {
		case h == "write" || h == "admin" || (h == "read" && level == "read"):
			out[name] = level
		case h == "read":
			out[name] = "read"
		}
	}
	return out
}

func toInstallationPermissions(m map[string]string) (*github.InstallationPermissions, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var p github.InstallationPermissions
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

func sortedNames(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// permString renders permissions sorted, for logs.
func permString(m map[string]string) string {
	keys := sortedNames(m)
	for i, k := range keys {
		keys[i] = k + ":" + m[k]
	}
	return strings.Join(keys, ",")
}

// ParseTokenPermissions reads "contents:write,issues:write" (the
// BAZINGA_TOKEN_PERMISSIONS form).
func ParseTokenPermissions(s string) (map[string]string, error) {
	out := map[string]string{}
	known := permissionNames()
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, level, ok := strings.Cut(part, ":")
		name, level = strings.TrimSpace(name), strings.TrimSpace(level)
		if !ok || (level != "read" && level != "write") {
			return nil, fmt.Errorf("%q: want name:read or name:write", part)
		}
		if !known[name] {
			return nil, fmt.Errorf("%q: %s is not a GitHub App permission", part, name)
		}
		out[name] = level
	}
	if len(out) == 0 {
		return nil, errors.New("no permission given")
	}
	return out, nil
}

// permissionNames are the permission names of go-github's
// InstallationPermissions (its JSON tags), so a typo is refused at start.
func permissionNames() map[string]bool {
	names := map[string]bool{}
	t := reflect.TypeFor[github.InstallationPermissions]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names[name] = true
		}
	}
	return names
}

// repoGate is what both exchanges (POST /token, POST /gateway/token) do
// before they ask GitHub about a verified job token's run: limit the
// requests per repository, then find the App's installation on it.
type repoGate struct {
	limiters *lru.Cache[string, *rate.Limiter]
	every    time.Duration
	burst    int
	now      time.Time
	gh       interface {
		RepoInstallation(ctx context.Context, owner, repo string) (*github.Installation, error)
	}
	refuse func(w http.ResponseWriter, r *http.Request, status int, check Check, msg string, attrs []any)
	// what names the requests in a refusal ("token exchanges").
	what string
}

// admitRepo applies the gate to repository full (ref parsed); it answers
// the refusal itself and returns ok false, or the installation with attrs
// extended by it.
func admitRepo(ctx context.Context, w http.ResponseWriter, r *http.Request, g repoGate, ref ghapi.RepoRef, full string, attrs []any) (*github.Installation, []any, bool) {
	fresh := rate.NewLimiter(rate.Every(g.every), g.burst)
	lim, found, _ := g.limiters.PeekOrAdd(strings.ToLower(full), fresh)
	if !found {
		lim = fresh
	}
	if rsv := lim.ReserveN(g.now, 1); rsv.DelayFrom(g.now) > 0 {
		d := rsv.DelayFrom(g.now)
		rsv.CancelAt(g.now)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
		g.refuse(w, r, http.StatusTooManyRequests, CheckRateLimit, fmt.Sprintf("too many %s for %s; retry in %s", g.what, full, d.Round(time.Second)), attrs)
		return nil, attrs, false
	}
	inst, err := g.gh.RepoInstallation(ctx, ref.Owner, ref.Name)
	if errors.Is(err, ErrNotInstalled) {
		g.refuse(w, r, http.StatusForbidden, CheckInstalled, "the App is not installed on "+full, attrs)
		return nil, attrs, false
	}
	if err != nil {
		g.refuse(w, r, http.StatusBadGateway, CheckGitHub, "GitHub did not answer which installation reaches "+full, append(attrs, "err", err))
		return nil, attrs, false
	}
	return inst, append(attrs, "installation", inst.GetID()), true
}
