package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// GatewayPrefix is where `bazinga serve` mounts the model gateway: the agent job's CLI gets
// ANTHROPIC_BASE_URL=<server>/gateway/anthropic and the like.
const GatewayPrefix = "/gateway"

// GatewayTokenPath is where an agent job exchanges its OIDC token for a gateway token.
const GatewayTokenPath = "/gateway/token"

// DefaultGatewayWorkflows are the workflows whose jobs may get gateway tokens: the agent steps' workflow, on any
// ref (a step runs on the session's base branch). What binds a token to a step is the run, not the ref: see
// GatewayExchange.
var DefaultGatewayWorkflows = []string{".github/workflows/bazinga-agent.yml@*"}

// DefaultGatewayRunTitle is the run-name prefix of an agent step's run ("bazinga ${{ inputs.step }}" in
// examples/workflows/bazinga-agent.yml): the rest of the run's title is the step id the App dispatched it for.
const DefaultGatewayRunTitle = "bazinga "

// GatewayExchangeConfig configures POST /gateway/token.
type GatewayExchangeConfig struct {
	// Issuer of job tokens ("" = github.com's; see TokenExchangeConfig.Issuer).
	Issuer string
	// Audience job tokens must carry for this endpoint (default gateway.Audience): a token requested for
	// POST /token ("bazinga") is refused here and the other way round.
	Audience string
	// Workflows is the allow-list, in TokenExchangeConfig.Workflows' form (default DefaultGatewayWorkflows); an
	// entry without @ref allows any ref.
	Workflows []string
	// RunTitle is the run-name prefix before the step id (default DefaultGatewayRunTitle).
	RunTitle string
	// TTL of the gateway tokens (default gateway.DefaultTokenTTL).
	TTL time.Duration
	// Limits are the operator's caps: a step or session limit the session does not set (or sets higher) is this
	// one. Zero: no cap.
	Limits gateway.Limits
	// Rate and Burst limit the exchanges per repository (defaults DefaultTokenRate, DefaultTokenBurst).
	Rate  time.Duration
	Burst int
}

// RunGitHub is what the gateway exchange asks GitHub, as the App.
type RunGitHub interface {
	RepoInstallation(ctx context.Context, owner, repo string) (*github.Installation, error)
	// WorkflowRun is GET /repos/{owner}/{repo}/actions/runs/{id} with the installation's token.
	WorkflowRun(ctx context.Context, installation int64, owner, repo string, id int64) (*github.WorkflowRun, error)
}

// WorkflowRun implements RunGitHub.
func (g FactoryGitHub) WorkflowRun(ctx context.Context, installation int64, owner, repo string, id int64) (*github.WorkflowRun, error) {
	c, err := g.F.Installation(installation)
	if err != nil {
		return nil, err
	}
	r, _, err := c.Actions.GetWorkflowRunByID(ctx, owner, repo, id)
	return r, err
}

// StepRecords is the session's own record of its steps, as the orchestrator keeps it: whether a step is
// dispatched and not finished, and the session's cost limits. An error refuses the token.
type StepRecords interface {
	StepLimits(ctx context.Context, installation int64, repo, session, step string) (gateway.Limits, error)
}

// GatewayExchange is POST /gateway/token: an agent step's job shows its GitHub Actions OIDC token and gets a
// gateway token bound to its repository, session and step.
//
// The OIDC token names a repository, a workflow and a run (run_id, run_attempt) but no job and no step, so the
// step comes from the run: GitHub is asked for the run the token names, which must be a workflow_dispatch of an
// allowed workflow by the App itself (only the orchestrator dispatches as the App), still running, on the same
// attempt, in the same repository (by id); its title — the run-name the App's dispatch inputs rendered — names
// the step. Nothing the agent job can write chooses the scope: not a request body, not a header.
type GatewayExchange struct {
	cfg      GatewayExchangeConfig
	verifier *JobTokenVerifier
	gh       RunGitHub
	records  StepRecords
	signer   *gateway.Signer
	login    string
	log      *slog.Logger
	now      func() time.Time
	workflow *TokenExchange // only its allow-list matching
	limiters *lru.Cache[string, *rate.Limiter]
	seen     *lru.Cache[string, time.Time]
	shared   SpentTokens // nil: seen alone, this process's
	count    func(outcome string)
}

// GatewayExchangeOptions are the parts that are not configuration.
type GatewayExchangeOptions struct {
	GitHub RunGitHub
	// Records, when set, is asked whether the step is live and for the session's limits.
	Records   StepRecords
	Signer    *gateway.Signer
	GitHubURL string
	// Login is the App's bot login: the actor of the runs it dispatches.
	Login  string
	Client *http.Client
	Now    func() time.Time
	Logger *slog.Logger
	// Spent, when set, records exchanged job tokens where every replica sees them (SQLSpentTokens): a job token
	// is good for one gateway token in all, not one per replica.
	Spent SpentTokens
}

// NewGatewayExchange validates cfg and builds the handler.
func NewGatewayExchange(cfg GatewayExchangeConfig, o GatewayExchangeOptions) (*GatewayExchange, error) {
	if o.GitHub == nil || o.Signer == nil {
		return nil, errors.New("gateway exchange: GitHub and a signer are required")
	}
	if o.Login == "" {
		return nil, errors.New("gateway exchange: the App's bot login is required (the actor of the runs it dispatches)")
	}
	if cfg.Audience == "" {
		cfg.Audience = gateway.Audience
	}
	if cfg.Audience == DefaultOIDCAudience {
		return nil, fmt.Errorf("gateway exchange: audience %q is POST /token's; the gateway's must differ", cfg.Audience)
	}
	if len(cfg.Workflows) == 0 {
		cfg.Workflows = DefaultGatewayWorkflows
	}
	if cfg.RunTitle == "" {
		cfg.RunTitle = DefaultGatewayRunTitle
	}
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultTokenRate
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultTokenBurst
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	entries, err := parseWorkflows(cfg.Workflows)
	if err != nil {
		return nil, fmt.Errorf("gateway exchange: %w", err)
	}
	for i := range entries {
		if entries[i].ref == "" {
			// A step runs on the session's base branch, whichever it is; the run binds the token, not the ref.
			entries[i].ref = "*"
		}
	}
	issuer := TokenExchangeConfig{Issuer: cfg.Issuer}.withDefaults(o.GitHubURL).Issuer
	cfg.Issuer = issuer
	v, err := NewJobTokenVerifier(VerifierOptions{Issuer: issuer, Audience: cfg.Audience, Client: o.Client, Now: o.Now})
	if err != nil {
		return nil, fmt.Errorf("gateway exchange: %w", err)
	}
	lim, err := lru.New[string, *rate.Limiter](tokenLimiters)
	if err != nil {
		return nil, err
	}
	seen, err := lru.New[string, time.Time](seenTokens)
	if err != nil {
		return nil, err
	}
	return &GatewayExchange{cfg: cfg, verifier: v, gh: o.GitHub, records: o.Records, signer: o.Signer, login: o.Login,
		log: o.Logger, now: o.Now, workflow: &TokenExchange{workflow: entries}, limiters: lim, seen: seen, shared: o.Spent}, nil
}

// GatewayToken is the answer of POST /gateway/token.
type GatewayToken struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	// BasePath is the gateway's path on this server; the providers' base URLs are below it
	// (<server><base_path>/anthropic, /openai/v1, /gemini).
	BasePath   string         `json:"base_path"`
	Repository string         `json:"repository"`
	Session    string         `json:"session"`
	Step       string         `json:"step"`
	Limits     gateway.Limits `json:"limits"`
}

func (x *GatewayExchange) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		x.refuse(w, r, http.StatusMethodNotAllowed, CheckNone, "use POST with the job's OIDC token as bearer", nil)
		return
	}
	if r.ContentLength > maxTokenBody {
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
		w.Header().Set("WWW-Authenticate", `Bearer realm="bazinga-gateway"`)
		x.refuse(w, r, http.StatusUnauthorized, CheckBearer,
			"send the agent job's GitHub Actions OIDC token (audience "+strconv.Quote(x.cfg.Audience)+") as `Authorization: Bearer <token>`", nil)
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
		x.refuse(w, r, status, ve.Check, refusalText(ve, TokenExchangeConfig{Issuer: x.cfg.Issuer, Audience: x.cfg.Audience}), []any{"err", ve.Err.Error()})
		return
	}
	x.exchange(w, r, claims)
}

func (x *GatewayExchange) exchange(w http.ResponseWriter, r *http.Request, c *JobClaims) {
	attrs := []any{"repository", c.Repository, "workflow_ref", c.WorkflowRef, "run_id", c.RunID, "run_attempt", c.RunAttempt, "actor", c.Actor}
	repo, ok := ghapi.ParseRepo(c.Repository)
	runID, idErr := strconv.ParseInt(c.RunID, 10, 64)
	attempt, attErr := strconv.Atoi(c.RunAttempt)
	switch {
	case !ok || !strings.EqualFold(repo.Owner, c.RepositoryOwner):
		x.refuse(w, r, http.StatusForbidden, CheckRepository, fmt.Sprintf("the token's repository claim %q is not owner/name of its owner", c.Repository), attrs)
		return
	case c.RepositoryID == "" || c.WorkflowRef == "" || c.JobWorkflowRef == "" || idErr != nil || runID <= 0 || attErr != nil || attempt < 1:
		x.refuse(w, r, http.StatusForbidden, CheckClaims, "the token lacks repository_id, workflow_ref, job_workflow_ref, run_id or run_attempt: not a GitHub Actions job token", attrs)
		return
	case c.EventName != "workflow_dispatch":
		x.refuse(w, r, http.StatusForbidden, CheckWorkflow, fmt.Sprintf("the job's run was started by %q, not workflow_dispatch: only the App dispatches agent steps", c.EventName), attrs)
		return
	}
	for _, wref := range []string{c.WorkflowRef, c.JobWorkflowRef} {
		if _, ok := x.workflow.match(c.Repository, wref, "", false); !ok {
			x.refuse(w, r, http.StatusForbidden, CheckWorkflow, fmt.Sprintf("workflow %s may not get gateway tokens; allowed: %s", wref, x.workflow.allowed()), attrs)
			return
		}
	}
	ctx := r.Context()
	inst, attrs, ok := admitRepo(ctx, w, r, repoGate{limiters: x.limiters, every: x.cfg.Rate, burst: x.cfg.Burst, now: x.now(),
		gh: x.gh, refuse: x.refuse, what: "gateway tokens"}, repo, c.Repository, attrs)
	if !ok {
		return
	}
	run, err := x.gh.WorkflowRun(ctx, inst.GetID(), repo.Owner, repo.Name, runID)
	if err != nil {
		x.refuse(w, r, http.StatusBadGateway, CheckGitHub, fmt.Sprintf("GitHub did not answer run %d of %s", runID, c.Repository), append(attrs, "err", err))
		return
	}
	step, why := x.stepOf(run, c, attempt)
	if why != "" {
		x.refuse(w, r, http.StatusForbidden, CheckRun, why, attrs)
		return
	}
	session, _, _ := strings.Cut(step, "/")
	attrs = append(attrs, "session", session, "step", step)
	limits := x.cfg.Limits
	if x.records != nil {
		l, err := x.records.StepLimits(ctx, inst.GetID(), c.Repository, session, step)
		if err != nil {
			x.refuse(w, r, http.StatusForbidden, CheckRun, "the session does not have step "+step+" running: "+err.Error(), attrs)
			return
		}
		limits = gateway.Limits{StepMicros: capLimit(l.StepMicros, limits.StepMicros), SessionMicros: capLimit(l.SessionMicros, limits.SessionMicros)}
	}
	if fresh, err := x.spend(ctx, c); err != nil {
		// Fail closed: a spend that is not recorded could be replayed at another replica.
		x.refuse(w, r, http.StatusServiceUnavailable, CheckNone, "cannot record the job token as spent; retry later", append(attrs, "err", err))
		return
	} else if !fresh {
		x.refuse(w, r, http.StatusUnauthorized, CheckReplay, "this job token was already exchanged; request a new one", attrs)
		return
	}
	scope := gateway.Scope{Installation: inst.GetID(), Repository: c.Repository, Session: session, Step: step}
	tok, exp, err := x.signer.Mint(scope, limits, x.cfg.TTL)
	if err != nil {
		x.refuse(w, r, http.StatusInternalServerError, CheckNone, "internal error", append(attrs, "err", err))
		return
	}
	if x.count != nil {
		x.count("issued")
	}
	x.log.Info("gateway token issued", append(attrs, "expires_at", exp, "step_limit_micros", limits.StepMicros, "session_limit_micros", limits.SessionMicros)...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(GatewayToken{Token: tok, ExpiresAt: exp, BasePath: GatewayPrefix, Repository: c.Repository,
		Session: session, Step: step, Limits: limits})
}

// stepOf checks the run the job token names and returns the step it was dispatched for, or why not.
func (x *GatewayExchange) stepOf(run *github.WorkflowRun, c *JobClaims, attempt int) (string, string) {
	switch {
	case strconv.FormatInt(run.GetRepository().GetID(), 10) != c.RepositoryID:
		return "", fmt.Sprintf("run %d is not of repository %s (id %s)", run.GetID(), c.Repository, c.RepositoryID)
	case run.GetEvent() != "workflow_dispatch":
		return "", fmt.Sprintf("run %d was started by %s, not a dispatch", run.GetID(), run.GetEvent())
	case !strings.EqualFold(run.GetActor().GetLogin(), x.login):
		// A run someone else dispatched (a maintainer, another workflow's token) has inputs the orchestrator
		// never chose.
		return "", fmt.Sprintf("run %d was dispatched by %s, not by the App (%s)", run.GetID(), run.GetActor().GetLogin(), x.login)
	case run.GetStatus() == "completed":
		return "", fmt.Sprintf("run %d has completed", run.GetID())
	case run.GetRunAttempt() != 0 && run.GetRunAttempt() != attempt:
		return "", fmt.Sprintf("the token is of attempt %d of run %d, which is at attempt %d", attempt, run.GetID(), run.GetRunAttempt())
	}
	wpath, _, _ := strings.Cut(c.WorkflowRef, "@")
	if !strings.EqualFold(c.Repository+"/"+run.GetPath(), wpath) {
		return "", fmt.Sprintf("run %d is of workflow %s, the token of %s", run.GetID(), run.GetPath(), wpath)
	}
	step, ok := strings.CutPrefix(run.GetDisplayTitle(), x.cfg.RunTitle)
	if !ok || !validStepID(step) {
		return "", fmt.Sprintf("run %d's title %q is not %q (the agent workflow's run-name)", run.GetID(), run.GetDisplayTitle(), x.cfg.RunTitle+"<session>/<group>/<role>/<n>")
	}
	return step, ""
}

// validStepID accepts <session>/<group>/<role>/<n> (pipeline.StepID) of plain characters.
func validStepID(s string) bool {
	parts := strings.Split(s, "/")
	if len(parts) != 4 || len(s) > 200 {
		return false
	}
	for _, p := range parts {
		if p == "" {
			return false
		}
		for _, r := range p {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
				return false
			}
		}
	}
	_, err := strconv.Atoi(parts[3])
	return err == nil
}

// capLimit is the lower of two limits, 0 being none.
func capLimit(a, b int64) int64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// spend marks the job token's jti used: false when it was, in this process or (with a shared store) at any replica.
func (x *GatewayExchange) spend(ctx context.Context, c *JobClaims) (bool, error) {
	if c.ID == "" {
		return false, nil
	}
	key := c.Issuer + "\x00" + c.ID
	if prev, found, _ := x.seen.PeekOrAdd(key, c.ExpiresAt.Time); found && x.now().Before(prev.Add(x.verifier.leeway)) {
		return false, nil
	}
	if x.shared != nil {
		fresh, err := x.shared.Spend(ctx, key, c.ExpiresAt.Time.Add(x.verifier.leeway))
		if err != nil {
			x.seen.Remove(key)
		}
		if err != nil || !fresh {
			return false, err
		}
	}
	x.seen.Add(key, c.ExpiresAt.Time)
	return true, nil
}

func (x *GatewayExchange) refuse(w http.ResponseWriter, r *http.Request, status int, check Check, msg string, attrs []any) {
	if x.count != nil {
		x.count(check.String())
	}
	x.log.Warn("gateway token refused", append([]any{"status", status, "check", check.String(), "reason", msg, "remote", r.RemoteAddr}, attrs...)...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ghapi.ExchangeRefusal{Error: check.String(), Message: msg})
}

// MountGateway serves the model gateway under /gateway/ and, when x is not nil, POST /gateway/token, counting
// exchanges in m when it is not nil (call before Run or Serve).
func (s *Server) MountGateway(gw *gateway.Gateway, x *GatewayExchange, m *GatewayMetrics) {
	s.mux.Handle(GatewayPrefix+"/", http.StripPrefix(GatewayPrefix, gw))
	if x != nil {
		if m != nil {
			x.count = func(outcome string) { m.exchanges.WithLabelValues(outcome).Inc() }
		}
		s.mux.Handle(GatewayTokenPath, x)
	}
}

// LedgerMeter is the orchestrator's view of the gateway's ledger (bot.Meter): a step's usage is what the gateway
// metered for it, when it metered anything.
type LedgerMeter struct{ Ledger gateway.Ledger }

// StepUsage implements bot.Meter.
func (m LedgerMeter) StepUsage(ctx context.Context, installation int64, repo, session, step string) (pipeline.Usage, bool) {
	sp, err := m.Ledger.StepSpend(ctx, gateway.Scope{Installation: installation, Repository: repo, Session: session, Step: step})
	if err != nil || !sp.Metered() {
		return pipeline.Usage{}, false
	}
	return sp.StepUsage(), true
}
