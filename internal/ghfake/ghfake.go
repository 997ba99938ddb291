// Package ghfake is a fake GitHub for tests and benchmarks: an in-process
// HTTP server that speaks the REST endpoints bazinga uses, backed by real bare
// git repositories served over git smart HTTP, so that the real go-github
// client and go-git talk to it exactly as they would to github.com or a
// GitHub Enterprise Server. The fake reads and writes the repositories
// in-process with go-git (gitstore.go); git itself serves clones and pushes
// (http-backend) and does merges, rebases and ref deletion. Tests may skip
// sockets for the REST API and webhooks with Transport and
// SetWebhookHandler.
//
// The fake records every API call, can inject faults into any call, and
// delivers signed webhooks. Its state is guarded by a single mutex; webhook
// deliveries and dispatch hooks run without it so that receivers may call
// back into the API.
//
// GitHub behaviours it reproduces that code under test must cope with:
//   - a pull request needs commits between base and head (422 "No commits
//     between …"), and a second open one for the same head and base is
//     refused (422 "A pull request already exists for owner:branch.");
//   - the issues list includes pull requests (they share numbers);
//   - a push (or ref update) that makes a pull request's head reachable
//     from its base marks it merged; deleting its head branch closes it;
//     merging into the default branch closes issues named with a closing
//     keyword ("Fixes #3");
//   - labels are created on first use; users below triage cannot set them;
//   - the collaborator permission's "permission" is the legacy level
//     (maintain reads as write, triage as read); role_name is exact;
//   - bodies are limited to 65,536 characters;
//   - a 304 is free, but go-github reports it as an *github.ErrorResponse;
//   - go-github remembers a secondary rate limit's Retry-After and fails
//     further calls from that client without a request until it passes;
//   - primary limits per identity and hour (an installation's
//     Options.RateLimit; the GITHUB_TOKENs of a repository share 1,000),
//     answered 403 with X-RateLimit-Remaining 0 and the reset;
//   - what a GITHUB_TOKEN (github-actions[bot]) does starts no workflow
//     other than dispatches, and (strictly: GitHub documents only the first
//     rule, independent reports agree on this one) the completion of a run
//     a GITHUB_TOKEN dispatched fires no workflow_run;
//   - workflow files (AddWorkflowFile) are read as GitHub reads them:
//     triggers with activity types, workflow_dispatch inputs (a workflow
//     without the trigger answers 422), permissions (a job's GITHUB_TOKEN
//     carries exactly its job's, the restricted default when none are
//     declared), concurrency groups (one running and one pending, a newer
//     pending cancelling the older; workflow-level groups taken before any
//     job's if) and jobs with needs and if (jobs.go, expr.go);
//   - github-actions[bot] may open pull requests only where the repository
//     allows it (SetActionsCanCreatePullRequests; off by default).
//
// Repository rules (settings.go, protection.go, checks.go). A repository
// starts as a new public one with no rules; tests opt in:
//   - Repo.SetSettings(RepoSettings{Private, Plan, AllowMergeCommit,
//     AllowSquashMerge, AllowRebaseMerge, AsyncMergeability}) (start from
//     Repo.Settings or DefaultSettings): GET /repos/{o}/{r} shows them; the
//     merge API refuses a disallowed method with 405 ("Squash merges are not
//     allowed on this repository."); POST /pulls with draft:true in a
//     private repository on the free or pro plan answers 422 "Draft pull
//     requests are not supported in this repository.";
//   - Repo.Protect(branch, Protection{RequirePR, RequiredApprovals,
//     RequiredChecks, Strict, LinearHistory, SignedCommits, EnforceAdmins,
//     …}) and Repo.AddRuleset(Ruleset{Include, Exclude, Bypass, rules…})
//     are enforced on git pushes (GH006 / GH013 with GitHub's reason
//     lines), on the refs API (POST and PATCH, 422) and on PUT
//     /pulls/{n}/merge (405); GET /branches/{b} ("protected",
//     protection.required_status_checks), GET /branches/{b}/protection and
//     GET /rules/branches/{b} describe them. Private repositories on the
//     free plan can have none. Repo.ProtectBranch is "nothing may push";
//   - check runs (POST/PATCH /check-runs, GET /commits/{ref}/check-runs)
//     and commit statuses (POST /statuses/{sha}, GET
//     /commits/{ref}/status), or Repo.SetCheck, SetCheckAs (another App,
//     e.g. github-actions[bot]) and SetStatus, emit check_run, check_suite
//     (naming the open pull requests at that head) and status webhooks and
//     satisfy required checks (a check run concluded success, neutral or
//     skipped; a status success); Repo.CheckRuns and Repo.Statuses inspect
//     them; Repo.AddCI adds a CI job reporting a check run on every push and
//     API-opened pull request, except those GITHUB_TOKEN made (they start no
//     workflows); PUT /pulls/{n}/update-branch merges the base into the
//     head;
//   - with AsyncMergeability, GET /pulls/{n} answers mergeable null and
//     mergeable_state "unknown" once after the pull request is opened or
//     its head or base moves, then the computed values (dirty, draft,
//     blocked, behind, unstable, clean); Fake.ComputeMergeability finishes
//     every pending computation at once.
package ghfake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

// AccountType is the type of a GitHub account, as in the "type" field of a
// user object.
type AccountType string

// Account types.
const (
	User         AccountType = "User"
	Bot          AccountType = "Bot"
	Organization AccountType = "Organization"
)

// DeliveryMode says how webhooks are delivered.
type DeliveryMode int

const (
	// Async delivers webhooks in order on a background goroutine, like
	// GitHub does (the API call returns before the delivery). Use
	// WaitWebhooks to wait for the queue to drain.
	Async DeliveryMode = iota
	// Sync delivers the webhooks an API call or helper caused before the call
	// returns, in order. A call made by a webhook receiver while a delivery is
	// in progress queues its events behind it instead of waiting, so receivers
	// that call back into the API cannot deadlock.
	Sync
)

// Options configure a Fake. The zero value is usable.
type Options struct {
	AppID          int64  // default 1
	AppSlug        string // default "bazinga"; the bot login is AppSlug+"[bot]"
	InstallationID int64  // default 1
	// Now is the clock for timestamps, token expiry and rate-limit windows.
	// Default time.Now.
	Now func() time.Time
	// RateLimit is the primary rate limit per identity and hour (default 5000).
	RateLimit int
	// ActionsRateLimit is a GITHUB_TOKEN's (github-actions[bot]) primary
	// limit per repository and hour, shared by every job of the repository
	// (default 1000, as on GitHub).
	ActionsRateLimit int
	// WebhookMode selects synchronous or asynchronous delivery.
	WebhookMode DeliveryMode
	// WebhookTimeout bounds one delivery (default 10s, GitHub's timeout).
	WebhookTimeout time.Duration
	// ContentLimits enforces GitHub's secondary limits on content-creating
	// requests: 80 a minute and 500 an hour per identity (403 with
	// Retry-After, as GitHub answers).
	ContentLimits bool
	// FaultsCountGit makes git smart HTTP requests count towards FailCall's
	// k (by default only REST API calls count).
	FaultsCountGit bool
	// Logf, if set, receives diagnostics (failed deliveries, git errors).
	Logf func(format string, args ...any)
	// CommentWriteHold keeps each comment write (create on an issue, edit,
	// delete) in flight this long, so that two writes to one issue's or
	// one comment's thread at once show in ConcurrentCommentWrites.
	CommentWriteHold time.Duration
}

// Fake is a fake GitHub. Create it with New or Start; it is safe for
// concurrent use.
type Fake struct {
	opts Options
	// writing and overlapped count comment writes in flight and those
	// that met another (overlap.go).
	writing, overlapped map[string]int
	srv                 *httptest.Server
	dir                 string
	now                 func() time.Time

	closing   chan struct{}
	closeOnce sync.Once
	hooksWG   sync.WaitGroup

	mu         sync.Mutex
	repos      []*Repo // creation order
	repoByName map[string]*Repo
	// formerNames are the names repositories had before a rename or a
	// transfer: GitHub redirects their API calls (301) to the repository.
	formerNames map[string]*Repo
	defRepo     *Repo
	tokens      map[string]*token
	users       map[string]*account // by lower-case login
	userOrder   int64
	perms       map[string]string // lower-case login -> role
	nextID      map[string]int64  // id counters by kind
	routes      []*route

	calls       []Call
	gitCalls    []Call
	callN       int // API calls counted for FailCall
	faults      map[int]Fault
	routeFaults []*routeFault
	buckets     map[string]*bucket
	contentLog  map[string][]time.Time

	onDispatch []func(Run)
	onJob      []func(context.Context, JobRun)

	manifests map[string]*manifestReg // App-manifest codes not yet exchanged

	// webhooks
	hookURL     string
	hookSecret  string
	hookClient  *http.Client
	hookHandler http.Handler // SetWebhookHandler
	qmu         sync.Mutex
	qcond       *sync.Cond
	queue       []*Delivery
	draining    bool
	deliveries  []*Delivery
	deliverySeq int
}

type account struct {
	login string
	id    int64
	typ   AccountType
}

type token struct {
	value   string
	login   string
	kind    AccountType
	perms   map[string]string // nil: everything
	expires time.Time         // zero: never
	install bool              // installation token (rate bucket per installation)
	repo    *Repo             // a GITHUB_TOKEN: the one repository it reaches (nil: any)
	// repos narrow an installation token to these repositories, by id
	// (nil: every repository of the installation; tokennarrow.go).
	repos map[int64]bool
}

// New starts a fake GitHub. Call Close when done.
func New(opts Options) (*Fake, error) {
	if opts.AppID == 0 {
		opts.AppID = 1
	}
	if opts.AppSlug == "" {
		opts.AppSlug = "bazinga"
	}
	if opts.InstallationID == 0 {
		opts.InstallationID = 1
	}
	if opts.RateLimit == 0 {
		opts.RateLimit = 5000
	}
	if opts.ActionsRateLimit == 0 {
		opts.ActionsRateLimit = 1000
	}
	if opts.WebhookTimeout == 0 {
		opts.WebhookTimeout = 10 * time.Second
	}
	dir, err := os.MkdirTemp("", "ghfake-")
	if err != nil {
		return nil, fmt.Errorf("ghfake: temp dir: %w", err)
	}
	f := &Fake{
		opts:        opts,
		dir:         dir,
		now:         opts.Now,
		closing:     make(chan struct{}),
		repoByName:  map[string]*Repo{},
		formerNames: map[string]*Repo{},
		tokens:      map[string]*token{},
		users:       map[string]*account{},
		perms:       map[string]string{},
		nextID:      map[string]int64{},
		faults:      map[int]Fault{},
		buckets:     map[string]*bucket{},
		contentLog:  map[string][]time.Time{},
	}
	f.hookClient = &http.Client{Timeout: opts.WebhookTimeout, Transport: hookTransport{f}}
	if f.now == nil {
		f.now = time.Now
	}
	f.qcond = sync.NewCond(&f.qmu)
	if err := os.MkdirAll(filepath.Join(dir, "repos"), 0o755); err != nil {
		return nil, fmt.Errorf("ghfake: %w", err)
	}
	f.registerRoutes()
	f.account(f.BotLogin(), Bot)
	f.srv = httptest.NewServer(http.HandlerFunc(f.serveHTTP))
	go f.deliveryWorker()
	return f, nil
}

// Start is New for tests: it fails the test on error and closes the fake in
// t.Cleanup.
func Start(t testing.TB, opts Options) *Fake {
	t.Helper()
	f, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// Close stops the server, releases held (timeout-faulted) requests, waits
// briefly for dispatch hooks and removes the repositories.
func (f *Fake) Close() {
	f.closeOnce.Do(func() {
		close(f.closing)
		f.qmu.Lock()
		f.qcond.Broadcast()
		f.qmu.Unlock()
		done := make(chan struct{})
		go func() { f.hooksWG.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		f.srv.CloseClientConnections()
		f.srv.Close()
		_ = os.RemoveAll(f.dir)
	})
}

// Context is cancelled when the fake is closed; dispatch hooks (fake
// runners) should stop when it is.
func (f *Fake) Context() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-f.closing; cancel() }()
	return ctx
}

// URL is the server's root URL (no trailing slash), also the git host:
// clone URLs are URL()+"/owner/name.git".
func (f *Fake) URL() string { return f.srv.URL }

// APIURL is the REST base URL with the GitHub Enterprise Server prefix and a
// trailing slash, as go-github's WithEnterpriseURLs produces it. The API is
// also served at the root.
func (f *Fake) APIURL() string { return f.srv.URL + "/api/v3/" }

// BotLogin is the login of the app's bot account, e.g. "bazinga[bot]".
func (f *Fake) BotLogin() string { return f.opts.AppSlug + "[bot]" }

// InstallationID is the app installation's id.
func (f *Fake) InstallationID() int64 { return f.opts.InstallationID }

// AppID is the app's id.
func (f *Fake) AppID() int64 { return f.opts.AppID }

// Client returns a go-github client for the fake authenticated with token
// (none if empty), using the Enterprise URLs, over the in-process
// Transport.
func (f *Fake) Client(tok string) *github.Client {
	c := github.NewClient(&http.Client{Transport: f.Transport()})
	if tok != "" {
		c = c.WithAuthToken(tok)
	}
	c, err := c.WithEnterpriseURLs(f.APIURL(), f.srv.URL+"/api/uploads/")
	if err != nil {
		// Unreachable: the URLs come from httptest and always parse.
		panic(err)
	}
	return c
}

// AddToken registers an API token for login. Bot tokens act with every
// permission; user tokens are limited by the user's repository role (see
// SetPermission).
func (f *Fake) AddToken(tok, login string, kind AccountType) {
	f.AddTokenWithPermissions(tok, login, kind, nil)
}

// AddTokenWithPermissions registers a token limited to GitHub App style
// permissions, e.g. {"contents": "read", "issues": "write"}; requests needing
// more get 403 "Resource not accessible by integration" with an
// X-Accepted-GitHub-Permissions header, as GitHub answers. nil means all.
func (f *Fake) AddTokenWithPermissions(tok, login string, kind AccountType, perms map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.account(login, kind)
	f.tokens[tok] = &token{value: tok, login: login, kind: kind, perms: perms}
}

// SetPermission sets login's role on every repository: admin, maintain,
// write, triage, read or none. Users without one have read; repository
// owners have admin.
func (f *Fake) SetPermission(login, role string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.account(login, User)
	f.perms[strings.ToLower(login)] = role
}

// account returns (creating on first sight) the account for login. Ids are
// assigned in order of first appearance, so they are deterministic for a
// deterministic test. Caller holds f.mu (or is New).
func (f *Fake) account(login string, kind AccountType) *account {
	key := strings.ToLower(login)
	if a, ok := f.users[key]; ok {
		return a
	}
	if kind == "" {
		kind = User
		if strings.HasSuffix(login, "[bot]") {
			kind = Bot
		}
	}
	f.userOrder++
	a := &account{login: login, id: 1000 + f.userOrder, typ: kind}
	f.users[key] = a
	return a
}

// id returns the next id of a kind. Each kind starts in its own range so
// that an issue number, a comment id and a run id are never confused by a
// test passing.
func (f *Fake) id(kind string) int64 {
	base := map[string]int64{
		"issue": 10_000, "comment": 100_000, "label": 300_000, "review": 400_000,
		"run": 5_000_000, "job": 6_000_000, "workflow": 700, "repo": 500,
		"token": 0, "hook": 9_000,
	}[kind]
	f.nextID[kind]++
	return base + f.nextID[kind]
}

// roleOf is login's role on r. Caller holds f.mu.
func (f *Fake) roleOf(r *Repo, login string) string {
	if strings.EqualFold(login, r.owner) {
		return "admin"
	}
	if role, ok := f.perms[strings.ToLower(login)]; ok {
		return role
	}
	if a, ok := f.users[strings.ToLower(login)]; ok && a.typ == Bot {
		return "write"
	}
	return "read"
}

var roleRank = map[string]int{"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}

// roleAtLeast reports whether role grants at least need.
func roleAtLeast(role, need string) bool { return roleRank[role] >= roleRank[need] }

func (f *Fake) logf(format string, args ...any) {
	if f.opts.Logf != nil {
		f.opts.Logf(format, args...)
	}
}

// ErrNotFound is returned (wrapped) by helpers given an unknown repository,
// issue, pull request, comment or run.
var ErrNotFound = errors.New("ghfake: not found")

// lookupRepo finds a repository by "owner/name", case-insensitively as
// GitHub does. Caller holds f.mu.
func (f *Fake) lookupRepo(full string) *Repo {
	return f.repoByName[strings.ToLower(full)]
}

// repoID is the id of the repository "owner/name" (a former name too), or 0.
func (f *Fake) repoID(full string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.lookupRepo(full); r != nil {
		return r.id
	}
	if r := f.formerNames[strings.ToLower(full)]; r != nil {
		return r.id
	}
	return 0
}

// Repo returns the repository "owner/name", or nil.
func (f *Fake) Repo(full string) *Repo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lookupRepo(full)
}

// Repos lists the repositories in creation order.
func (f *Fake) Repos() []*Repo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Repo(nil), f.repos...)
}

// DefaultRepo is the repository the Fake-level helpers act on: the first one
// created unless SetDefaultRepo says otherwise.
func (f *Fake) DefaultRepo() *Repo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.defRepo
}

// SetDefaultRepo selects the repository for the Fake-level helpers.
func (f *Fake) SetDefaultRepo(r *Repo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.defRepo = r
}

// sortedKeys returns a map's keys sorted, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
