package bot

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Options configure the core.
type Options struct {
	// Client returns the GitHub client of an installation (required).
	Client func(ctx context.Context, installationID int64) (GitHub, error)
	// Login is the bot's own login, e.g. "bazinga[bot]" (required): only its
	// comments are trusted for state, and it never reacts to itself.
	Login string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// SigningKey signs the state block (Ed25519); jobs verify it with the
	// public key. serve derives it from the random state key, never from
	// another secret (required).
	SigningKey ed25519.PrivateKey
	// PreviousKeys are public keys of earlier signing keys whose states are
	// still read during a key rotation (the next write re-signs).
	PreviousKeys []ed25519.PublicKey
	// Logger (default: discard).
	Logger *slog.Logger
	// Defaults is the configuration a repository without
	// .github/bazinga.yml runs with (zero: pipeline.DefaultConfig()).
	Defaults *pipeline.Config
	// ConfigPath is the configuration file (default ".github/bazinga.yml").
	ConfigPath string
	// Repos lists the installed repositories whose active sessions Sweep
	// looks for (optional: repositories seen in deliveries are swept too).
	Repos func(ctx context.Context) ([]ghapi.InstalledRepo, error)
	// StartLabel is the label that starts a session (default "bazinga").
	StartLabel string
	// Meter, when set, is bazinga serve's model gateway: the usage of a step it metered replaces what the step's
	// job reported (docs/gateway.md).
	Meter Meter
	// StepEnded, when set, is told of each step that ended (its result or failure applied, or it failed, timed
	// out or was cancelled), before the session's new state is written: bazinga serve revokes the step's gateway
	// tokens. A step may be told more than once.
	StepEnded func(ctx context.Context, installation int64, repo, session, step string)
}

// Meter says what a step's model calls cost, as the gateway metered them; ok is false when it metered none of
// the step's (the job's report is kept then).
type Meter interface {
	StepUsage(ctx context.Context, installation int64, repo, session, step string) (u pipeline.Usage, ok bool)
}

// Bot is the core Processor: it turns deliveries into engine events,
// reconciles the session and carries out its effects.
type Bot struct {
	o   Options
	log *slog.Logger

	mu    sync.Mutex
	locks map[string]*sync.Mutex
	// repos are the repositories seen in deliveries, for the sweep.
	repos map[string]ghapi.InstalledRepo
	// holds are the installations waiting for a rate limit's reset.
	holds map[int64]hold
	// refused remembers who was refused recently (refusal.go).
	refused refusals
	// seenRev is the newest verified revision of each session (rollback.go).
	seenRev map[string]int
}

// New checks the options and returns the core.
func New(o Options) (*Bot, error) {
	if o.Client == nil {
		return nil, errors.New("bot: Options.Client is required")
	}
	if strings.TrimSpace(o.Login) == "" {
		return nil, errors.New("bot: Options.Login is required")
	}
	if len(o.SigningKey) != ed25519.PrivateKeySize {
		return nil, errors.New("bot: Options.SigningKey must be an Ed25519 private key")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ConfigPath == "" {
		o.ConfigPath = ".github/bazinga.yml"
	}
	if o.StartLabel == "" {
		o.StartLabel = "bazinga"
	}
	return &Bot{o: o, log: o.Logger, locks: map[string]*sync.Mutex{}, repos: map[string]ghapi.InstalledRepo{},
		holds: map[int64]hold{}, refused: refusals{}, seenRev: map[string]int{}}, nil
}

// publicKey verifies the state blocks the bot signed.
func (b *Bot) publicKey() ed25519.PublicKey { return b.o.SigningKey.Public().(ed25519.PublicKey) }

func (b *Bot) defaults() pipeline.Config {
	if b.o.Defaults != nil {
		return *b.o.Defaults
	}
	return pipeline.DefaultConfig()
}

// sessionRef names one session: an issue of a repository.
type sessionRef struct {
	inst  int64
	repo  ghapi.RepoRef
	issue int
}

// key names the session for its lock: by the repository's id when known,
// so that deliveries under a former name and the new one (a rename or
// transfer) never drive it at once.
func (r sessionRef) key() string { return repoKey(r.repo) + "#" + strconv.Itoa(r.issue) }

// repoKey is a repository's id when known, else its name.
func repoKey(r ghapi.RepoRef) string {
	if r.ID != 0 {
		return "id:" + strconv.FormatInt(r.ID, 10)
	}
	return strings.ToLower(r.String())
}

func (b *Bot) lock(key string) func() {
	b.mu.Lock()
	l := b.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		b.locks[key] = l
	}
	b.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (b *Bot) remember(inst int64, repo ghapi.RepoRef) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// By id: a rename replaces the name the sweep uses, it adds no second
	// entry under the former name (whose API calls GitHub redirects, and
	// whose writes a redirect turns into reads).
	if repo.ID != 0 {
		delete(b.repos, strings.ToLower(repo.String()))
	}
	b.repos[repoKey(repo)] = ghapi.InstalledRepo{Installation: inst, Repo: repo}
}

// Sweep reconciles every active session of the known repositories (open
// issues labelled bazinga, bazinga:running, bazinga:needs-input or
// bazinga:paused: a session whose effects were not all carried out keeps
// such a label): first
// the results its log holds that no event delivered, then a tick
// (timeouts, lost steps, clarifications, the outbox).
func (b *Bot) Sweep(ctx context.Context) error {
	repos := map[string]ghapi.InstalledRepo{}
	if b.o.Repos != nil {
		list, err := b.o.Repos(ctx)
		if err != nil {
			b.log.Warn("sweep: listing installed repositories", "err", err)
		}
		for _, r := range list {
			repos[repoKey(r.Repo)] = r
		}
	}
	b.mu.Lock()
	for k, r := range b.repos {
		if _, ok := repos[k]; ok {
			continue // GitHub's list has the current name
		}
		if r.Repo.ID == 0 && slices.ContainsFunc(slices.Collect(maps.Values(repos)), func(l ghapi.InstalledRepo) bool {
			return strings.EqualFold(l.Repo.String(), r.Repo.String())
		}) {
			continue
		}
		repos[k] = r
	}
	b.mu.Unlock()
	var errs []error
	for _, name := range sortedKeys(repos) {
		r := repos[name]
		if rl, ok := b.held(r.Installation); ok {
			b.log.Info("sweep: waiting for a rate limit's reset", "repo", name, "until", rl.Reset)
			continue
		}
		gh, err := b.o.Client(ctx, r.Installation)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep %s: %w", name, err))
			continue
		}
		issues := map[int]bool{}
		var limitErr error
		// The start label too: a session whose first effects failed has no
		// bazinga:* label yet.
		for _, label := range []string{b.o.StartLabel, "bazinga:running", "bazinga:needs-input", "bazinga:paused"} {
			list, err := gh.ListIssuesByLabel(ctx, r.Repo, label)
			if err != nil {
				errs = append(errs, fmt.Errorf("sweep %s: %w", name, err))
				if _, ok := ghapi.AsRateLimited(err); ok {
					limitErr = err
					break
				}
				continue
			}
			for _, is := range list {
				if !is.IsPR {
					issues[is.Number] = true
				}
			}
		}
		numbers := make([]int, 0, len(issues))
		for n := range issues {
			numbers = append(numbers, n)
		}
		sort.Ints(numbers)
		if limitErr != nil {
			// The sessions found so far are told why they wait.
			b.limited(ctx, gh, sessionRef{inst: r.Installation, repo: r.Repo}, limitErr)
			for _, n := range numbers {
				b.limited(ctx, gh, sessionRef{inst: r.Installation, repo: r.Repo, issue: n}, limitErr)
			}
			continue
		}
		for _, n := range numbers {
			if err := b.catchUp(ctx, gh, sessionRef{inst: r.Installation, repo: r.Repo, issue: n}); err != nil {
				errs = append(errs, fmt.Errorf("sweep: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// ReconcileIssue brings one session up to date, as the sweep does for every
// active one: the results its log holds that no event delivered, then a
// tick. The Action-only orchestrator runs it when a step's job dispatches it
// for the step's issue. An issue without a session is no error.
func (b *Bot) ReconcileIssue(ctx context.Context, installation int64, repo ghapi.RepoRef, issue int) error {
	gh, err := b.o.Client(ctx, installation)
	if err != nil {
		return fmt.Errorf("client for installation %d: %w", installation, err)
	}
	b.remember(installation, repo)
	return b.catchUp(ctx, gh, sessionRef{inst: installation, repo: repo, issue: issue})
}

func (b *Bot) catchUp(ctx context.Context, gh GitHub, ref sessionRef) error {
	if rl, ok := b.held(ref.inst); ok {
		b.log.Info("waiting for a rate limit's reset", "repo", ref.repo.String(), "issue", ref.issue, "until", rl.Reset)
		return nil
	}
	var errs []error
	if _, err := b.applyLoggedResults(ctx, gh, ref); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", ref.key(), err))
	}
	if err := b.applyFailedRuns(ctx, gh, ref); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", ref.key(), err))
	}
	through, err := b.applyMissedCommands(ctx, gh, ref)
	if err != nil {
		errs = append(errs, err)
	}
	err = b.drive(ctx, gh, ref, input{delivery: "sweep", events: []pipeline.Event{pipeline.Tick(strconv.Itoa(ref.issue))}, through: through})
	if err != nil && !errors.Is(err, ErrIgnored) {
		errs = append(errs, fmt.Errorf("%s: %w", ref.key(), err))
	}
	return b.limited(ctx, gh, ref, errors.Join(errs...))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Delivery is one webhook delivery, verified and parsed just enough to route it.
type Delivery struct {
	ID           string // X-GitHub-Delivery
	Event        string // X-GitHub-Event
	Action       string // payload "action", if any
	Installation int64  // payload installation.id, if any
	Repo         string // "owner/name", if any
	Payload      []byte
	Received     time.Time
	// parsed is the payload as ParseDelivery decoded it.
	parsed *payload
}

// ErrIgnored is returned (possibly wrapped) by Processor.Process for a
// delivery that needs no work: it is counted as outcome "ignored".
var ErrIgnored = errors.New("bot: delivery ignored")
