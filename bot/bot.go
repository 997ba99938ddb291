package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
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
	// StateKey authenticates the state block (HMAC-SHA256); serve derives
	// it from the webhook secret. Required.
	StateKey []byte
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
}

// Bot is the core Processor: it turns deliveries into engine events,
// reconciles the session and carries out its effects.
type Bot struct {
	o   Options
	log *slog.Logger

	mu    sync.Mutex
	locks map[string]*sync.Mutex
	mem   map[string]*memState
	repos map[string]ghapi.InstalledRepo
	// done remembers action ids carried out, per session, so a retried
	// delivery never repeats an effect even when the state write failed.
	done map[string]map[string]bool
}

// memState is the last state the bot wrote (or failed to write) for a
// session, with the tracking comment it lives in.
type memState struct {
	st        codec.State
	commentID int64
	body      string // last body written; "" when the write failed
	dirty     bool   // st is newer than what GitHub holds
}

// New checks the options and returns the core.
func New(o Options) (*Bot, error) {
	if o.Client == nil {
		return nil, errors.New("bot: Options.Client is required")
	}
	if strings.TrimSpace(o.Login) == "" {
		return nil, errors.New("bot: Options.Login is required")
	}
	if len(o.StateKey) < 16 {
		return nil, errors.New("bot: Options.StateKey must have at least 16 bytes")
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
	return &Bot{o: o, log: o.Logger, locks: map[string]*sync.Mutex{}, mem: map[string]*memState{},
		repos: map[string]ghapi.InstalledRepo{}, done: map[string]map[string]bool{}}, nil
}

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

func (r sessionRef) key() string { return r.repo.String() + "#" + strconv.Itoa(r.issue) }

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
	b.repos[repo.String()] = ghapi.InstalledRepo{Installation: inst, Repo: repo}
}

func (b *Bot) markDone(key, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.done[key]
	if m == nil {
		m = map[string]bool{}
		b.done[key] = m
	}
	if len(m) > 4096 {
		clear(m)
	}
	m[id] = true
}

func (b *Bot) isDone(key, id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done[key][id]
}

// Sweep reconciles every active session with a tick: sessions labelled
// bazinga:running, bazinga:needs-input or bazinga:paused in the known
// repositories, plus the live sessions this process holds in memory.
func (b *Bot) Sweep(ctx context.Context) error {
	repos := map[string]ghapi.InstalledRepo{}
	if b.o.Repos != nil {
		list, err := b.o.Repos(ctx)
		if err != nil {
			b.log.Warn("sweep: listing installed repositories", "err", err)
		}
		for _, r := range list {
			repos[r.Repo.String()] = r
		}
	}
	b.mu.Lock()
	for k, r := range b.repos {
		repos[k] = r
	}
	targets := map[string]sessionRef{}
	for key, m := range b.mem {
		if !m.st.Settled() || m.dirty {
			if repo, ok := ghapi.ParseRepo(m.st.Repo); ok {
				targets[key] = sessionRef{inst: repos[repo.String()].Installation, repo: repo, issue: m.st.Issue}
			}
		}
	}
	b.mu.Unlock()
	var errs []error
	for _, name := range sortedKeys(repos) {
		r := repos[name]
		gh, err := b.o.Client(ctx, r.Installation)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep %s: %w", name, err))
			continue
		}
		for _, label := range []string{"bazinga:running", "bazinga:needs-input", "bazinga:paused"} {
			issues, err := gh.ListIssuesByLabel(ctx, r.Repo, label)
			if err != nil {
				errs = append(errs, fmt.Errorf("sweep %s: %w", name, err))
				continue
			}
			for _, is := range issues {
				ref := sessionRef{inst: r.Installation, repo: r.Repo, issue: is.Number}
				targets[ref.key()] = ref
			}
		}
	}
	for _, key := range sortedKeys(targets) {
		ref := targets[key]
		gh, err := b.o.Client(ctx, ref.inst)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep %s: %w", key, err))
			continue
		}
		err = b.reconcile(ctx, gh, ref, input{events: []pipeline.Event{pipeline.Tick(strconv.Itoa(ref.issue))}, sweep: true})
		if err != nil && !errors.Is(err, ErrIgnored) {
			errs = append(errs, fmt.Errorf("sweep %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
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
}

// ErrIgnored is returned (possibly wrapped) by Processor.Process for a
// delivery that needs no work: it is counted as outcome "ignored".
var ErrIgnored = errors.New("bot: delivery ignored")
