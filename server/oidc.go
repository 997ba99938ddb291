package server

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// GitHub Actions' OIDC issuer on github.com. A GitHub Enterprise Server's is
// https://HOST/_services/token.
const DefaultOIDCIssuer = "https://token.actions.githubusercontent.com"

// Defaults of the job-token verifier.
const (
	// DefaultOIDCLeeway is the clock skew tolerated on exp, nbf and iat.
	DefaultOIDCLeeway = 30 * time.Second
	// DefaultJWKSTTL is how long fetched keys are trusted before the JWKS
	// is read again (a key GitHub withdrew stops verifying by then).
	DefaultJWKSTTL = time.Hour
	// DefaultJWKSMinRefresh spaces the refetches an unknown kid causes, so
	// tokens with made-up key ids cannot make the server hammer the issuer.
	DefaultJWKSMinRefresh = 30 * time.Second
	// DefaultJWKSMaxStale is how long past DefaultJWKSTTL known keys are
	// still served: a refresh runs behind them (a withdrawn key stops as
	// soon as it succeeds), and an unreachable issuer does not stop every
	// exchange at once.
	DefaultJWKSMaxStale = 6 * time.Hour
	// maxJWKSBytes bounds the discovery document and the JWKS (GitHub's
	// are about 2 KiB).
	maxJWKSBytes = 256 << 10
	// maxJobTokenBytes bounds a bearer job token (GitHub's are about 1.5 KiB).
	maxJobTokenBytes = 16 << 10
)

// Errors of job-token verification; VerifyError says which check failed.
var (
	ErrJWKSUnavailable = errors.New("the issuer's keys cannot be fetched")
	ErrUnknownKey      = errors.New("the token's key id is not in the issuer's JWKS")
)

// JobClaims are the claims of a GitHub Actions job token bazinga reads.
// GitHub sends every one of them as a string.
type JobClaims struct {
	jwt.RegisteredClaims
	Repository        string `json:"repository"`
	RepositoryOwner   string `json:"repository_owner"`
	RepositoryID      string `json:"repository_id"`
	RepositoryOwnerID string `json:"repository_owner_id"`
	WorkflowRef       string `json:"workflow_ref"`
	JobWorkflowRef    string `json:"job_workflow_ref"`
	Ref               string `json:"ref"`
	SHA               string `json:"sha"`
	RunID             string `json:"run_id"`
	RunAttempt        string `json:"run_attempt"`
	EventName         string `json:"event_name"`
	Actor             string `json:"actor"`
	Environment       string `json:"environment"`
}

// JobTokenVerifier verifies GitHub Actions OIDC job tokens: RS256
// signatures against the issuer's JWKS (found through its discovery
// document, cached for TTL, read again at most every MinRefresh when a
// token names an unknown key), then iss, aud, exp, nbf and iat with a small
// leeway. golang-jwt does the JWT checks, go-jose reads the JWKS.
type JobTokenVerifier struct {
	issuer     string
	audience   string
	client     *http.Client
	now        func() time.Time
	leeway     time.Duration
	ttl        time.Duration
	minRefresh time.Duration

	maxStale time.Duration

	mu          sync.Mutex
	keys        map[string]*rsa.PublicKey
	fetched     time.Time // when keys were read
	lastAttempt time.Time // the last fetch, successful or not
	lastErr     error     // the last fetch's failure, nil after a success
	inflight    *fetchCall
}

// jwksRequestTimeout bounds each request of a fetch (discovery, JWKS).
const jwksRequestTimeout = 10 * time.Second

// VerifierOptions configure a JobTokenVerifier; zero values are defaults.
type VerifierOptions struct {
	Issuer     string // default DefaultOIDCIssuer
	Audience   string // required
	Client     *http.Client
	Now        func() time.Time
	Leeway     time.Duration
	TTL        time.Duration
	MinRefresh time.Duration
	// MaxStale is how long past TTL cached keys are still served while a
	// refresh runs or the issuer is unreachable (default DefaultJWKSMaxStale).
	MaxStale time.Duration
}

// NewJobTokenVerifier returns a verifier; it reaches the issuer only when
// the first token comes.
func NewJobTokenVerifier(o VerifierOptions) (*JobTokenVerifier, error) {
	if o.Issuer == "" {
		o.Issuer = DefaultOIDCIssuer
	}
	o.Issuer = strings.TrimRight(o.Issuer, "/")
	u, err := url.Parse(o.Issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("OIDC issuer %q: not an http(s) URL", o.Issuer)
	}
	if strings.TrimSpace(o.Audience) == "" {
		return nil, errors.New("OIDC audience is required")
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Leeway <= 0 {
		o.Leeway = DefaultOIDCLeeway
	}
	if o.TTL <= 0 {
		o.TTL = DefaultJWKSTTL
	}
	if o.MinRefresh <= 0 {
		o.MinRefresh = DefaultJWKSMinRefresh
	}
	if o.MaxStale <= 0 {
		o.MaxStale = DefaultJWKSMaxStale
	}
	return &JobTokenVerifier{issuer: o.Issuer, audience: o.Audience, client: o.Client, now: o.Now,
		leeway: o.Leeway, ttl: o.TTL, minRefresh: o.MinRefresh, maxStale: o.MaxStale}, nil
}

// Check names a check of the token exchange, as refusals and logs say it.
type Check int

// The checks, in the order they are made. CheckNone ("request") is a
// refusal of the HTTP request itself (method, body size).
const (
	CheckNone Check = iota
	CheckBearer
	CheckMalformed
	CheckKeys
	CheckSignature
	CheckIssuer
	CheckAudience
	CheckExpiry
	CheckNotBefore
	CheckIssuedAt
	CheckReplay
	CheckClaims
	CheckRepository
	CheckWorkflow
	CheckEnvironment
	CheckRateLimit
	CheckInstalled
	CheckRepositoryID
	CheckGitHub
	// CheckRun: the workflow run a gateway token is asked for is not an agent step the App dispatched.
	CheckRun
)

var checkNames = [...]string{"request", "bearer", "malformed", "keys", "signature", "issuer", "audience", "expiry",
	"not_before", "issued_at", "replay", "claims", "repository", "workflow", "environment", "rate_limit", "installed", "repository_id", "github", "run"}

func (c Check) String() string {
	if c >= 0 && int(c) < len(checkNames) {
		return checkNames[c]
	}
	return fmt.Sprintf("check(%d)", int(c))
}

// VerifyError is a refused job token: the check that failed and why.
type VerifyError struct {
	Check Check
	Err   error
}

func (e *VerifyError) Error() string { return e.Check.String() + ": " + e.Err.Error() }
func (e *VerifyError) Unwrap() error { return e.Err }

// Verify checks raw and returns its claims, or a *VerifyError.
func (v *JobTokenVerifier) Verify(ctx context.Context, raw string) (*JobClaims, error) {
	if len(raw) > maxJobTokenBytes {
		return nil, &VerifyError{CheckMalformed, fmt.Errorf("token longer than %d bytes", maxJobTokenBytes)}
	}
	claims := &JobClaims{}
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{"RS256"}),
		jwt.WithIssuer(v.issuer),
		jwt.WithAudience(v.audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(v.leeway),
		jwt.WithTimeFunc(v.now),
	)
	_, err := p.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, fmt.Errorf("%w: the token names no key (kid)", ErrUnknownKey)
		}
		return v.key(ctx, kid)
	})
	if err != nil {
		return nil, &VerifyError{classify(err), err}
	}
	return claims, nil
}

// classify maps golang-jwt's errors (and the key lookup's) to a check.
func classify(err error) Check {
	switch {
	case errors.Is(err, ErrJWKSUnavailable):
		return CheckKeys
	case errors.Is(err, ErrUnknownKey):
		return CheckSignature
	case errors.Is(err, jwt.ErrTokenMalformed):
		return CheckMalformed
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return CheckSignature
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return CheckIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return CheckAudience
	case errors.Is(err, jwt.ErrTokenExpired):
		return CheckExpiry
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return CheckNotBefore
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return CheckIssuedAt
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return CheckExpiry // exp is the only required registered claim
	}
	return CheckMalformed
}

// key returns the issuer's key kid. No request can block or cancel another's
// key: the JWKS is read by a fetch detached from every request (a client
// that hangs up stops waiting, not the fetch), one at a time (callers join
// the fetch in flight), and never under v.mu. A known key is served from
// the cache at once — while it is fresh, and for up to maxStale after while
// a refresh runs in the background (stale-while-revalidate); an unknown
// kid waits for a fetch, which starts at most every minRefresh.
func (v *JobTokenVerifier) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	v.mu.Lock()
	now := v.now()
	age := now.Sub(v.fetched)
	k, known := v.keys[kid]
	canFetch := v.lastAttempt.IsZero() || now.Sub(v.lastAttempt) >= v.minRefresh
	switch {
	case known && age < v.ttl:
		v.mu.Unlock()
		return k, nil
	case known && age < v.ttl+v.maxStale:
		// Stale: serve it, and refresh behind it.
		if canFetch {
			v.startFetchLocked(now)
		}
		v.mu.Unlock()
		return k, nil
	}
	call := v.inflight
	if call == nil && canFetch {
		call = v.startFetchLocked(now)
	}
	lastErr := v.lastErr
	haveKeys := v.keys != nil && age < v.ttl+v.maxStale
	v.mu.Unlock()
	if call == nil {
		// Fetched a moment ago and the kid was not there.
		if !haveKeys {
			return nil, fmt.Errorf("%w: the last attempt failed less than %s ago (%v); retry later", ErrJWKSUnavailable, v.minRefresh, lastErr)
		}
		return nil, fmt.Errorf("%w: %q", ErrUnknownKey, kid)
	}
	select {
	case <-call.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrJWKSUnavailable, ctx.Err())
	}
	v.mu.Lock()
	haveKeys = v.keys != nil && v.now().Sub(v.fetched) < v.ttl+v.maxStale
	k, known = v.keys[kid]
	v.mu.Unlock()
	switch {
	case known && haveKeys:
		return k, nil
	case call.err != nil && !haveKeys:
		return nil, fmt.Errorf("%w: %w", ErrJWKSUnavailable, call.err)
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownKey, kid)
}

// fetchCall is a JWKS fetch in flight; done is closed when it ends.
type fetchCall struct {
	done chan struct{}
	err  error
}

// startFetchLocked starts a detached fetch unless one is in flight, and
// returns the one in flight. Caller holds v.mu.
func (v *JobTokenVerifier) startFetchLocked(now time.Time) *fetchCall {
	if v.inflight != nil {
		return v.inflight
	}
	call := &fetchCall{done: make(chan struct{})}
	v.inflight, v.lastAttempt = call, now
	go func() {
		// Detached from every request: its own deadline only.
		ctx, cancel := context.WithTimeout(context.Background(), 2*jwksRequestTimeout)
		defer cancel()
		keys, err := v.fetch(ctx)
		v.mu.Lock()
		if err == nil {
			// Aged from when the fetch began: conservative.
			v.keys, v.fetched, v.lastErr = keys, now, nil
		} else {
			v.lastErr = err
		}
		call.err = err
		v.inflight = nil
		v.mu.Unlock()
		close(call.done)
	}()
	return call
}

// fetch reads the discovery document, then the JWKS it names. It runs in
// startFetchLocked's goroutine, one at a time, without v.mu.
func (v *JobTokenVerifier) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := v.getJSON(ctx, v.issuer+"/.well-known/openid-configuration", &doc); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	if strings.TrimRight(doc.Issuer, "/") != v.issuer {
		return nil, fmt.Errorf("discovery: the document is for issuer %q, not %q", doc.Issuer, v.issuer)
	}
	ju, err := url.Parse(doc.JWKSURI)
	iu, _ := url.Parse(v.issuer)
	if err != nil || ju.Host == "" || ju.Scheme != iu.Scheme {
		// The keys come over the issuer's scheme (https in production).
		return nil, fmt.Errorf("discovery: jwks_uri %q is not a %s URL", doc.JWKSURI, iu.Scheme)
	}
	var set jose.JSONWebKeySet
	if err := v.getJSON(ctx, doc.JWKSURI, &set); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	keys := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		pub, ok := k.Key.(*rsa.PublicKey)
		if !ok || k.KeyID == "" || (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && k.Algorithm != "RS256") {
			continue // not a signing key bazinga accepts
		}
		if pub.N.BitLen() < 2048 {
			continue
		}
		keys[k.KeyID] = pub
	}
	if len(keys) == 0 {
		return nil, errors.New("jwks: no RS256 signing key")
	}
	return keys, nil
}

func (v *JobTokenVerifier) getJSON(ctx context.Context, u string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, jwksRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxJWKSBytes))
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if len(body) > maxJWKSBytes {
		return fmt.Errorf("GET %s: larger than %d bytes", u, maxJWKSBytes)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}
