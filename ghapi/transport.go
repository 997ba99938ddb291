package ghapi

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// ---------------------------------------------------------------------------
// Call counting

// CallStats is a snapshot of API calls as sent on the wire (each retry is a
// call; a 304 is a call GitHub does not charge against the rate limit).
type CallStats struct {
	Total           int
	ContentCreating int // POST, PATCH, PUT, DELETE
	NotModified     int // answered 304 (served from the ETag cache)
	// ByKind counts calls by "METHOD /route/{template}".
	ByKind           map[string]int
	RateLimitRetries int
	ErrorRetries     int
	// RateLimitRemaining is the latest X-RateLimit-Remaining seen, -1 if none.
	RateLimitRemaining int
}

// Kinds returns the kinds of ByKind, sorted.
func (s CallStats) Kinds() []string {
	ks := make([]string, 0, len(s.ByKind))
	for k := range s.ByKind {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// APIStats accumulates CallStats; safe for concurrent use and shareable by
// many transports.
type APIStats struct {
	mu sync.Mutex
	s  CallStats
}

// NewAPIStats returns empty counters.
func NewAPIStats() *APIStats {
	return &APIStats{s: CallStats{ByKind: map[string]int{}, RateLimitRemaining: -1}}
}

// Snapshot copies the counters.
func (a *APIStats) Snapshot() CallStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.s
	s.ByKind = make(map[string]int, len(a.s.ByKind))
	for k, v := range a.s.ByKind {
		s.ByKind[k] = v
	}
	return s
}

// Reset zeroes the counters (between benchmark runs).
func (a *APIStats) Reset() {
	a.mu.Lock()
	a.s = CallStats{ByKind: map[string]int{}, RateLimitRemaining: -1}
	a.mu.Unlock()
}

func (a *APIStats) record(kind string, creating bool, resp *http.Response) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.s.Total++
	a.s.ByKind[kind]++
	if creating {
		a.s.ContentCreating++
	}
	if resp == nil {
		return
	}
	if resp.StatusCode == http.StatusNotModified {
		a.s.NotModified++
	}
	if v := resp.Header.Get("X-RateLimit-Remaining"); v != "" {
		if n, err := strconv.Atoi(v); err == nil {
			a.s.RateLimitRemaining = n
		}
	}
}

func (a *APIStats) retried(rateLimit bool) {
	a.mu.Lock()
	if rateLimit {
		a.s.RateLimitRetries++
	} else {
		a.s.ErrorRetries++
	}
	a.mu.Unlock()
}

// ContentCreating reports whether GitHub counts a method against the
// secondary content-creation limits (80/min, 500/h).
func ContentCreating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// idempotent methods may be retried after a server error or timeout: sending
// them twice has the effect of sending them once.
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}

// RouteTemplate normalises a request path to its REST route template, e.g.
// /repos/acme/app/issues/12/comments → /repos/{owner}/{repo}/issues/{number}/comments.
// prefix ("/api/v3" on GHES) is stripped first.
func RouteTemplate(prefix, path string) string {
	if prefix != "" && prefix != "/" {
		path = strings.TrimPrefix(path, strings.TrimRight(prefix, "/"))
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) == 1 && segs[0] == "" {
		return "/"
	}
	out := make([]string, 0, len(segs))
	i := 0
	if segs[0] == "repos" && len(segs) >= 3 {
		out = append(out, "repos", "{owner}", "{repo}")
		i = 3
	}
	for ; i < len(segs); i++ {
		s := segs[i]
		prev := ""
		if len(out) > 0 {
			prev = out[len(out)-1]
		}
		switch prev {
		case "ref", "refs", "matching-refs":
			if len(out) >= 2 && out[len(out)-2] == "git" {
				out = append(out, "{ref}") // the rest is the ref name
				return "/" + strings.Join(out, "/")
			}
		case "branches":
			out = append(out, "{branch}")
			if j := indexOf(segs[i+1:], "protection"); j >= 0 {
				out = append(out, segs[i+1+j:]...)
			}
			return "/" + strings.Join(out, "/")
		case "contents":
			out = append(out, "{path}")
			return "/" + strings.Join(out, "/")
		}
		out = append(out, placeholder(prev, s))
	}
	return "/" + strings.Join(out, "/")
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// placeholder names a path segment by the collection it follows.
func placeholder(prev, s string) string {
	numeric := s != "" && strings.Trim(s, "0123456789") == ""
	switch prev {
	case "issues", "pulls":
		if numeric {
			return "{number}"
		}
	case "comments":
		if numeric {
			return "{comment_id}"
		}
	case "installations":
		if numeric {
			return "{installation_id}"
		}
	case "runs":
		return "{run_id}"
	case "jobs":
		return "{job_id}"
	case "reviews":
		return "{review_id}"
	case "workflows":
		return "{workflow_id}"
	case "labels":
		return "{name}"
	case "users", "collaborators":
		return "{username}"
	case "commits", "statuses", "trees", "blobs":
		return "{sha}"
	case "orgs":
		return "{org}"
	}
	if numeric {
		return "{id}"
	}
	return s
}

// ---------------------------------------------------------------------------
// The transport chain

// TransportOptions tunes the RoundTripper chain. Zero values mean defaults;
// a negative retry count disables those retries.
type TransportOptions struct {
	// Identity keys the ETag cache by who is asking (e.g.
	// "installation/42"), so one identity never sees another's cached
	// body. Empty: a hash of the Authorization header.
	Identity string
	// Cache and Stats may be shared by several transports.
	Cache *ETagCache
	Stats *APIStats
	// MaxRetries bounds retries of idempotent requests after a 5xx or a
	// network timeout (default 3); BaseBackoff/MaxBackoff shape the
	// exponential backoff with jitter (default 250ms, 10s).
	MaxRetries  int
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// MaxRateLimitWait is the longest wait for a rate limit the transport
	// sits out (default 90s): an exhausted primary limit whose reset is at
	// most this far is waited for and the request sent once more; a
	// secondary limit's Retry-After (or backoff) at most this long is
	// waited out. Anything farther is a *RateLimitedError at once, for the
	// caller to pause on: holding a worker for most of an hour would stall
	// every other session, and retrying early only burns requests.
	MaxRateLimitWait time.Duration
	// MaxRateLimitRetries bounds the waits for secondary limits of one
	// request (default 3; negative: no rate-limit waits at all).
	// SecondaryWait is the first wait of a secondary limit that carries no
	// Retry-After (default 60s, as GitHub's docs ask: at least a minute,
	// then exponentially longer, with jitter).
	MaxRateLimitRetries int
	SecondaryWait       time.Duration
	// Reserve is how many requests of the primary limit ordinary calls
	// leave (default 20; negative: none): once GitHub reports no more than
	// this many remaining, calls are refused with a *RateLimitedError
	// (Reserve set) unless their context is WithReserve, so the caller
	// can still say why it stops.
	Reserve int
	// AttemptTimeout bounds each attempt, response body included
	// (default 30s; negative: none), so a hung connection becomes a
	// timeout that an idempotent request retries.
	AttemptTimeout time.Duration
	// APIPrefix is stripped from paths before templating ("/api/v3").
	APIPrefix string
	Logger    *slog.Logger
	// Now is the clock for X-RateLimit-Reset (default time.Now); Sleep
	// waits out a rate limit on that clock, returning early with the
	// context's error (default a timer). A fake clock gives both, so tests
	// wait for resets without waiting.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

func (o TransportOptions) withDefaults() TransportOptions {
	if o.Cache == nil {
		o.Cache = NewETagCache(0, 0)
	}
	if o.Stats == nil {
		o.Stats = NewAPIStats()
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 3
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 250 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 10 * time.Second
	}
	if o.MaxRateLimitRetries == 0 {
		o.MaxRateLimitRetries = 3
	}
	if o.MaxRateLimitWait <= 0 {
		o.MaxRateLimitWait = 90 * time.Second
	}
	if o.Reserve == 0 {
		o.Reserve = 20
	}
	if o.SecondaryWait <= 0 {
		o.SecondaryWait = 60 * time.Second
	}
	if o.AttemptTimeout == 0 {
		o.AttemptTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	return o
}

// Transport is the chain below go-github: conditional requests (ETag cache)
// → rate-limit waits and retries → call counting → base. Counting sits
// innermost so every request on the wire is counted, retries included.
type Transport struct {
	base   http.RoundTripper
	o      TransportOptions
	limits limitState
	// resetSlack is added to a primary limit's reset: the header has
	// whole seconds, and clocks differ (tests set it to zero).
	resetSlack time.Duration
}

// NewTransport builds the chain over base (nil → http.DefaultTransport). Use
// it directly to give a plain token client (e.g. against the fake GitHub)
// the production behaviour.
func NewTransport(base http.RoundTripper, opts TransportOptions) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &Transport{base: base, o: opts.withDefaults(), resetSlack: time.Second}
}

// CallStats returns the counters this transport records into.
func (t *Transport) CallStats() CallStats { return t.o.Stats.Snapshot() }

// Stats returns the shared counters.
func (t *Transport) Stats() *APIStats { return t.o.Stats }

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.cacheable(req) {
		resp, err := t.retrying(req)
		if err != nil {
			return nil, err
		}
		return t.followMoved(req, resp)
	}
	key := t.cacheKey(req)
	entry, ok := t.o.Cache.get(key)
	send := req
	if ok {
		send = req.Clone(req.Context())
		send.Header.Set("If-None-Match", entry.etag)
	}
	resp, err := t.retrying(send)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotModified && ok:
		// Serve the cached body as the 200 go-github expects; keep the
		// fresh rate-limit headers of the 304.
		drain(resp.Body)
		h := entry.header.Clone()
		for k, v := range resp.Header {
			if strings.HasPrefix(k, "X-Ratelimit-") || k == "Date" || k == "Etag" {
				h[k] = v
			}
		}
		return &http.Response{
			Status: "200 OK", StatusCode: http.StatusOK, Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
			Header: h, Body: io.NopCloser(bytes.NewReader(entry.body)), ContentLength: int64(len(entry.body)),
			Request: req,
		}, nil
	case resp.StatusCode == http.StatusOK && resp.Header.Get("ETag") != "":
		body, err := readLimited(resp.Body, t.o.Cache.maxEntry)
		if err != nil {
			return nil, fmt.Errorf("read %s %s: %w", req.Method, req.URL.Path, err)
		}
		if body.complete {
			resp.Body.Close()
			t.o.Cache.put(key, etagEntry{etag: resp.Header.Get("ETag"), header: resp.Header.Clone(), body: body.b})
			resp.Body = io.NopCloser(bytes.NewReader(body.b))
		} else {
			// Too large to cache: hand back what was read plus the rest.
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body.b), resp.Body), resp.Body}
		}
	}
	return resp, nil
}

// cacheable: unconditional GETs without a range. A caller that sets its own
// If-None-Match handles the 304 itself.
func (t *Transport) cacheable(req *http.Request) bool {
	return req.Method == http.MethodGet && req.Header.Get("If-None-Match") == "" &&
		req.Header.Get("If-Modified-Since") == "" && req.Header.Get("Range") == ""
}

func (t *Transport) cacheKey(req *http.Request) string {
	id := t.o.Identity
	if id == "" {
		h := sha256.Sum256([]byte(req.Header.Get("Authorization")))
		id = "auth/" + hex.EncodeToString(h[:8])
	}
	return id + "\x00" + req.Header.Get("Accept") + "\x00" + req.URL.String()
}

// retrying sends req, waiting out near rate limits and retrying server
// errors, with cenkalti/backoff doing the waits (context-aware, jittered).
//
// Why POST and PATCH are never retried after a 5xx or a timeout: GitHub may
// have applied the request before failing (a comment created, a PR opened),
// and a blind retry would duplicate it. The caller — the reconciler —
// re-reads state and decides. A 403/429 rate-limit answer is different:
// GitHub refused the request before applying it, so any method is retried.
func (t *Transport) retrying(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("buffer request body: %w", err)
		}
		req = req.Clone(ctx)
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	kind := req.Method + " " + RouteTemplate(t.o.APIPrefix, req.URL.Path)
	creating := ContentCreating(req.Method)
	waits := t.o.MaxRateLimitRetries >= 0
	secondary := t.secondaryBackoff()
	errTries, rateTries, attempt := 0, 0, 0
	primaryWaited := false
	var rateLimitWait time.Duration
	// rateWait decides on a rate limit: wait it out or give up with a
	// *RateLimitedError. The wait is on the options' clock, at the start
	// of the next attempt; backoff.Retry is told to go on at once (a
	// RetryAfterError of zero, which also restarts the error backoff).
	rateWait := func(wait time.Duration, secondaryLimit bool, rl *RateLimitedError) error {
		wait = max(wait, 0)
		tries := !primaryWaited
		if secondaryLimit {
			tries = rateTries < t.o.MaxRateLimitRetries
		}
		if !waits || !tries || wait > t.o.MaxRateLimitWait {
			t.o.Logger.Warn("github api rate limited until a far reset, not waiting", "kind", kind,
				"identity", rl.Identity, "resource", rl.Resource, "secondary", rl.Secondary, "reset", rl.Reset)
			return backoff.Permanent(rl)
		}
		if secondaryLimit {
			rateTries++
		} else {
			primaryWaited = true
		}
		t.o.Stats.retried(true)
		t.o.Logger.Warn("github api rate limited, waiting", "kind", kind, "secondary", secondaryLimit, "wait", wait)
		rateLimitWait = wait
		return &backoff.RetryAfterError{}
	}
	op := func() (*http.Response, error) {
		if rateLimitWait > 0 {
			if err := t.o.Sleep(ctx, rateLimitWait); err != nil {
				return nil, backoff.Permanent(fmt.Errorf("waiting out a rate limit: %w", err))
			}
			rateLimitWait = 0
		}
		now := t.o.Now()
		if l, limited, reserve := t.limits.before(req, t.o.Reserve, now); limited {
			// Known exhausted: no request spent to hear it again.
			return nil, rateWait(l.reset.Sub(now)+t.resetSlack, false, &RateLimitedError{Identity: t.o.Identity,
				Resource: resourceOf(req.URL.Path), Limit: l.limit, Reset: l.reset, Reserve: reserve})
		}
		send := req
		if attempt > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, backoff.Permanent(fmt.Errorf("rewind request body: %w", err))
			}
			send = req.Clone(ctx)
			send.Body = body
		}
		attempt++
		resp, err := t.attempt(send)
		t.o.Stats.record(kind, creating, resp)
		if err != nil {
			if ctx.Err() == nil && idempotent(req.Method) && isTransient(err) && errTries < t.o.MaxRetries {
				errTries++
				t.o.Stats.retried(false)
				t.o.Logger.Warn("github api network error, retrying", "kind", kind, "attempt", attempt, "err", err)
				return nil, err
			}
			return nil, backoff.Permanent(err)
		}
		t.limits.observe(req, resp)
		switch r := classify(resp, req.Method, now); r.kind {
		case primaryLimit:
			drain(resp.Body)
			return nil, rateWait(r.reset.Sub(now)+t.resetSlack, false, &RateLimitedError{Identity: t.o.Identity, Resource: r.resource,
				Limit: r.limit, Reset: r.reset})
		case secondaryLimit:
			drain(resp.Body)
			wait := r.wait
			if !r.known {
				wait = secondary.NextBackOff()
			}
			// Reset in whole seconds, as GitHub's headers give it.
			reset := now.Add(wait + time.Second - 1).Truncate(time.Second)
			return nil, rateWait(wait, true, &RateLimitedError{Identity: t.o.Identity, Resource: r.resource,
				Limit: r.limit, Reset: reset, Secondary: true})
		}
		if retryableStatus(resp.StatusCode) && idempotent(req.Method) && errTries < t.o.MaxRetries {
			errTries++
			t.o.Stats.retried(false)
			t.o.Logger.Warn("github api server error, retrying", "kind", kind, "status", resp.StatusCode, "attempt", attempt)
			drain(resp.Body)
			return nil, fmt.Errorf("%s: status %d", kind, resp.StatusCode)
		}
		return resp, nil
	}
	resp, err := backoff.Retry(ctx, op, backoff.WithBackOff(t.errorBackoff()), backoff.WithMaxElapsedTime(0))
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (after %w)", ctx.Err(), err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", kind, err)
		}
		return nil, err
	}
	return resp, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// errorBackoff is the backoff between retries after a server error or a
// timeout: exponential from BaseBackoff to MaxBackoff, ±50% jitter.
func (t *Transport) errorBackoff() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: t.o.BaseBackoff, RandomizationFactor: 0.5,
		Multiplier: 2, MaxInterval: t.o.MaxBackoff}
}

// secondaryBackoff is the wait of a secondary limit without Retry-After:
// the n-th (1-based) wait lies in [SecondaryWait·2ⁿ⁻¹, 1.5·SecondaryWait·2ⁿ⁻¹]
// (never below GitHub's minute), capped at an hour.
func (t *Transport) secondaryBackoff() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: t.o.SecondaryWait * 5 / 4, RandomizationFactor: 0.2,
		Multiplier: 2, MaxInterval: time.Hour}
}

func retryableStatus(code int) bool {
	switch code {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// attempt sends one request under AttemptTimeout; the timeout's context is
// released when the response body is closed.
func (t *Transport) attempt(req *http.Request) (*http.Response, error) {
	if t.o.AttemptTimeout < 0 {
		return t.base.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.o.AttemptTimeout)
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// isTransient reports a network failure after which an idempotent request
// may be sent again: a timeout, or a connection dropped before the answer.
func isTransient(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

func drain(rc io.ReadCloser) {
	if rc == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(rc, 1<<20))
	rc.Close()
}

type limitedRead struct {
	b        []byte
	complete bool
}

// readLimited reads up to max bytes; complete is false if more remain (the
// reader is then left positioned after what was read).
func readLimited(r io.Reader, max int) (limitedRead, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return limitedRead{b: b}, err
	}
	if len(b) > max {
		return limitedRead{b: b, complete: false}, nil
	}
	return limitedRead{b: b, complete: true}, nil
}

// ---------------------------------------------------------------------------
// ETag cache

type etagEntry struct {
	etag   string
	header http.Header
	body   []byte
}

// ETagCache is a bounded LRU of GET responses by identity and URL, for
// conditional requests: GitHub does not charge a 304 against the rate limit.
type ETagCache struct {
	mu       sync.Mutex
	ll       *list.List
	items    map[string]*list.Element
	bytes    int
	maxBytes int
	maxEntry int
}

type cacheItem struct {
	key string
	e   etagEntry
}

// NewETagCache returns a cache holding at most maxBytes of bodies (default
// 64 MiB) and no body larger than maxEntry (default 2 MiB).
func NewETagCache(maxBytes, maxEntry int) *ETagCache {
	if maxBytes <= 0 {
		maxBytes = 64 << 20
	}
	if maxEntry <= 0 {
		maxEntry = 2 << 20
	}
	if maxEntry > maxBytes {
		maxEntry = maxBytes
	}
	return &ETagCache{ll: list.New(), items: map[string]*list.Element{}, maxBytes: maxBytes, maxEntry: maxEntry}
}

// Len returns the number of cached responses.
func (c *ETagCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

func (c *ETagCache) get(key string) (etagEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return etagEntry{}, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*cacheItem).e, true
}

func (c *ETagCache) put(key string, e etagEntry) {
	size := len(e.body) + len(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		old := el.Value.(*cacheItem)
		c.bytes -= len(old.e.body) + len(key)
		old.e = e
		c.ll.MoveToFront(el)
	} else {
		c.items[key] = c.ll.PushFront(&cacheItem{key: key, e: e})
	}
	c.bytes += size
	for c.bytes > c.maxBytes && c.ll.Len() > 0 {
		el := c.ll.Back()
		it := el.Value.(*cacheItem)
		c.ll.Remove(el)
		delete(c.items, it.key)
		c.bytes -= len(it.e.body) + len(it.key)
	}
}

// followMoved repeats a write that GitHub answered with 301 Moved
// Permanently or 308 (a renamed or transferred repository: its former name
// redirects to the repository by id) at the new location, with its method
// and body. net/http's client repeats a redirected POST, PATCH, PUT or
// DELETE as a GET without its body, so the write would silently not
// happen. Only on the same scheme and host: the token goes nowhere else.
func (t *Transport) followMoved(req *http.Request, resp *http.Response) (*http.Response, error) {
	if (resp.StatusCode != http.StatusMovedPermanently && resp.StatusCode != http.StatusPermanentRedirect) ||
		req.Method == http.MethodGet || req.Method == http.MethodHead {
		return resp, nil
	}
	loc, err := resp.Location()
	if err != nil || loc.Scheme != req.URL.Scheme || loc.Host != req.URL.Host || (req.Body != nil && req.GetBody == nil) {
		return resp, nil
	}
	next := req.Clone(req.Context())
	next.URL, next.Host = loc, ""
	if req.GetBody != nil {
		if next.Body, err = req.GetBody(); err != nil {
			return resp, nil
		}
	}
	drain(resp.Body)
	return t.retrying(next)
}
