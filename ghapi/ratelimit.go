package ghapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrRateLimited matches (errors.Is) every *RateLimitedError.
var ErrRateLimited = errors.New("github: rate limited")

// RateLimitedError is a GitHub rate limit the transport did not wait out:
// the primary limit of an identity exhausted with its reset too far away,
// or a secondary limit asking for a longer wait than the transport
// sits out. Callers stop calling GitHub as Identity until Reset.
type RateLimitedError struct {
	// Identity is who is limited, as TransportOptions.Identity names it
	// ("installation/42", "action", …).
	Identity string
	// Resource is GitHub's X-RateLimit-Resource ("core", "search", …); for
	// a secondary limit, what was refused ("content creation" or "requests").
	Resource string
	// Limit is the primary limit per window (X-RateLimit-Limit), 0 if unknown.
	Limit int
	// Reset is when calling again makes sense: the primary limit's
	// X-RateLimit-Reset, or now plus a secondary limit's wait.
	Reset time.Time
	// Secondary is set for a secondary (abuse) limit.
	Secondary bool
	// Reserve is set when the transport refused the call itself because
	// only its reserve of requests was left (see TransportOptions.Reserve).
	Reserve bool
}

// Who names the identity for people: "installation 42".
func (e *RateLimitedError) Who() string {
	id := e.Identity
	if id == "" {
		id = "this token"
	}
	return strings.ReplaceAll(id, "/", " ")
}

// Kind is "rate limit" or "secondary rate limit".
func (e *RateLimitedError) Kind() string {
	if e.Secondary {
		return "secondary rate limit"
	}
	return "rate limit"
}

func (e *RateLimitedError) Error() string {
	res := ""
	if e.Resource != "" {
		res = " (" + e.Resource + ")"
	}
	return fmt.Sprintf("GitHub %s for %s%s exhausted until %s", e.Kind(), e.Who(), res, e.Reset.UTC().Format("15:04:05 UTC"))
}

// Is makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitedError) Is(target error) bool { return target == ErrRateLimited }

// AsRateLimited finds a *RateLimitedError in err's chain.
func AsRateLimited(err error) (*RateLimitedError, bool) {
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return rl, true
	}
	return nil, false
}

type reserveKey struct{}

// WithReserve marks ctx's calls as allowed to spend the reserve of
// requests the transport keeps back (TransportOptions.Reserve): the calls
// that tell people the session waits for the limit.
func WithReserve(ctx context.Context) context.Context {
	return context.WithValue(ctx, reserveKey{}, true)
}

func usesReserve(ctx context.Context) bool {
	v, _ := ctx.Value(reserveKey{}).(bool)
	return v
}

// limitKind classifies a refused response.
type limitKind int

const (
	notLimited limitKind = iota
	primaryLimit
	secondaryLimit
)

// refusal is what a 403/429 says about a rate limit.
type refusal struct {
	kind limitKind
	// wait is how long to wait (from now); known is false for a secondary
	// limit without Retry-After, whose wait is the caller's backoff.
	wait     time.Duration
	known    bool
	resource string
	limit    int
	reset    time.Time
}

// classify reads a response the way GitHub's documentation asks: a 403 or
// 429 with Retry-After is a secondary limit (wait that long); one with
// X-RateLimit-Remaining 0 the primary limit (wait for X-RateLimit-Reset);
// one whose message says so, or any 429, a secondary limit without a wait
// (at least a minute, then exponentially longer). A secondary limit
// without Retry-After is only recognisable by its message, so the body is
// peeked at and put back.
func classify(resp *http.Response, method string, now time.Time) refusal {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return refusal{}
	}
	r := refusal{resource: resp.Header.Get("X-RateLimit-Resource")}
	r.limit, _ = strconv.Atoi(resp.Header.Get("X-RateLimit-Limit"))
	resetUnix, resetErr := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
	if v := strings.TrimSpace(resp.Header.Get("Retry-After")); v != "" {
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			r.kind, r.wait, r.known = secondaryLimit, time.Duration(secs)*time.Second, true
		} else if at, err := http.ParseTime(v); err == nil {
			r.kind, r.wait, r.known = secondaryLimit, at.Sub(now), true
		}
	}
	if r.kind == notLimited && resp.Header.Get("X-RateLimit-Remaining") == "0" && resetErr == nil {
		r.kind, r.known = primaryLimit, true
		r.reset = time.Unix(resetUnix, 0).UTC()
		r.wait = r.reset.Sub(now)
	}
	if r.kind == notLimited {
		b, _ := readLimited(resp.Body, 64<<10)
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b.b), resp.Body), resp.Body}
		msg := strings.ToLower(string(b.b))
		if strings.Contains(msg, "secondary rate limit") || strings.Contains(msg, "abuse detection") ||
			resp.StatusCode == http.StatusTooManyRequests {
			r.kind = secondaryLimit
		}
	}
	if r.wait < 0 {
		r.wait = 0
	}
	if r.kind == secondaryLimit {
		r.resource = "requests"
		if ContentCreating(method) {
			r.resource = "content creation"
		}
	}
	return r
}

// limitState remembers, per credential and resource, the primary limit
// the last response reported, so a transport that knows the limit is
// exhausted does not spend a request to hear it again.
type limitState struct {
	mu sync.Mutex
	m  map[string]seenLimit
}

type seenLimit struct {
	limit, remaining int
	reset            time.Time
}

// limitKey is the credential (a hash of the Authorization header: an App's
// JWT and its installation's token are different identities with different
// limits, though one transport carries both) and the resource.
func limitKey(req *http.Request) string {
	h := sha256.Sum256([]byte(req.Header.Get("Authorization")))
	return hex.EncodeToString(h[:8]) + "\x00" + resourceOf(req.URL.Path)
}

// resourceOf is the rate-limit resource a path counts against.
func resourceOf(path string) string {
	switch {
	case strings.Contains(path, "/search/"):
		return "search"
	case strings.HasSuffix(path, "/graphql"):
		return "graphql"
	}
	return "core"
}

func (s *limitState) observe(req *http.Request, resp *http.Response) {
	rem, err1 := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
	reset, err2 := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	limit, _ := strconv.Atoi(resp.Header.Get("X-RateLimit-Limit"))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]seenLimit{}
	}
	s.m[limitKey(req)] = seenLimit{limit: limit, remaining: rem, reset: time.Unix(reset, 0).UTC()}
}

// before reports whether req should not be sent now: the identity's limit
// is known to be exhausted (or down to the reserve, for a call that may
// not spend it) until the returned reset.
func (s *limitState) before(req *http.Request, reserve int, now time.Time) (seenLimit, bool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.m[limitKey(req)]
	if !ok || !now.Before(l.reset) {
		return seenLimit{}, false, false
	}
	if l.remaining <= 0 {
		return l, true, false
	}
	if reserve > 0 && l.remaining <= reserve && !usesReserve(req.Context()) {
		return l, true, true
	}
	return seenLimit{}, false, false
}
