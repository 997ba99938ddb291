package ghfake

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// OIDCIssuer is a fake GitHub Actions OIDC issuer
// (token.actions.githubusercontent.com, or a GitHub Enterprise Server's
// /_services/token): it serves the discovery document and the JWKS, mints
// job tokens with GitHub's claim set, and plays the runner's
// ACTIONS_ID_TOKEN_REQUEST_URL, which hands a job its token when it shows
// its request token. It runs on its own HTTP server, as the real issuer is
// another host than the API.
//
// Tests mint any token they like (Mint with edited claims, MintWith with
// another key or kid): forged, expired, for another audience, repository or
// workflow. Keys rotate with RotateKey; a retired key leaves the JWKS.
type OIDCIssuer struct {
	srv *httptest.Server
	f   *Fake // nil for a standalone issuer
	now func() time.Time

	mu       sync.Mutex
	keys     []oidcKey // published, oldest first; the last one signs
	requests map[string]JobClaims
	fetches  int
	seq      int
}

type oidcKey struct {
	kid string
	key *rsa.PrivateKey
}

// Paths of the issuer's endpoints.
const (
	OIDCDiscoveryPath = "/.well-known/openid-configuration"
	OIDCJWKSPath      = "/.well-known/jwks"
	OIDCRequestPath   = "/_apis/idtoken"
)

// DefaultOIDCLifetime is how long a minted job token is valid (GitHub's
// are valid for minutes, not hours).
const DefaultOIDCLifetime = 5 * time.Minute

// JobClaims is the claim set of a GitHub Actions job token
// (https://docs.github.com/actions/security-for-github-actions/security-hardening-your-deployments/about-security-hardening-with-openid-connect).
// Zero times are filled by Mint: IssuedAt and NotBefore now, ExpiresAt
// DefaultOIDCLifetime later; an empty Issuer is the issuer's URL.
type JobClaims struct {
	Issuer            string
	Audience          string
	Subject           string
	Repository        string
	RepositoryOwner   string
	RepositoryID      string
	RepositoryOwnerID string
	WorkflowRef       string
	JobWorkflowRef    string
	Workflow          string
	Ref               string
	RefType           string
	SHA               string
	RunID             string
	RunNumber         string
	RunAttempt        string
	EventName         string
	Actor             string
	// Environment is the job's deployment environment ("" = none); it
	// becomes the subject's context, as on GitHub.
	Environment string
	IssuedAt    time.Time
	NotBefore   time.Time
	ExpiresAt   time.Time
}

// NewOIDCIssuer starts a standalone issuer on its own server; now is its
// clock (nil: time.Now). Close it when done.
func NewOIDCIssuer(now func() time.Time) (*OIDCIssuer, error) {
	if now == nil {
		now = time.Now
	}
	o := &OIDCIssuer{now: now, requests: map[string]JobClaims{}}
	if _, err := o.RotateKey(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+OIDCDiscoveryPath, o.serveDiscovery)
	mux.HandleFunc("GET "+OIDCJWKSPath, o.serveJWKS)
	mux.HandleFunc("GET "+OIDCRequestPath, o.serveRequest)
	o.srv = httptest.NewServer(mux)
	return o, nil
}

// StartOIDC starts an issuer for the fake's runs (its clock, its
// repositories' ids) and closes it in t.Cleanup.
func StartOIDC(t testing.TB, f *Fake) *OIDCIssuer {
	t.Helper()
	o, err := NewOIDCIssuer(f.now)
	if err != nil {
		t.Fatal(err)
	}
	o.f = f
	t.Cleanup(o.Close)
	return o
}

// SetClock sets the clock tokens are minted by (a test that moves time
// for the verifier but not for the fake's API, whose installation tokens
// the real-time ghinstallation judges).
func (o *OIDCIssuer) SetClock(now func() time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.now = now
}

func (o *OIDCIssuer) clock() time.Time {
	o.mu.Lock()
	now := o.now
	o.mu.Unlock()
	return now()
}

// Close stops the issuer's server.
func (o *OIDCIssuer) Close() { o.srv.Close() }

// URL is the issuer (the "iss" of its tokens), without a trailing slash.
func (o *OIDCIssuer) URL() string { return o.srv.URL }

// JWKSFetches counts the JWKS requests served, to test a verifier's cache.
func (o *OIDCIssuer) JWKSFetches() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.fetches
}

// RotateKey adds a new signing key to the JWKS and signs with it from now
// on; the previous keys stay published until RetireKey. It returns the new
// key's id.
func (o *OIDCIssuer) RotateKey() (string, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("ghfake oidc: generating a key: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seq++
	kid := fmt.Sprintf("fake-oidc-key-%d", o.seq)
	o.keys = append(o.keys, oidcKey{kid: kid, key: k})
	return kid, nil
}

// RetireKey removes a key from the JWKS (the signing key cannot be
// retired).
func (o *OIDCIssuer) RetireKey(kid string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, k := range o.keys {
		if k.kid != kid {
			continue
		}
		if i == len(o.keys)-1 {
			return fmt.Errorf("ghfake oidc: %s is the signing key; rotate first", kid)
		}
		o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
		return nil
	}
	return fmt.Errorf("ghfake oidc: key %s: %w", kid, ErrNotFound)
}

// SigningKeyID is the id of the key tokens are signed with.
func (o *OIDCIssuer) SigningKeyID() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.keys[len(o.keys)-1].kid
}

// ClaimsFor is the claim set GitHub gives a job of run asking for audience:
// the repository's ids come from the fake.
func (o *OIDCIssuer) ClaimsFor(r Run, audience string) JobClaims {
	owner, _, _ := strings.Cut(r.Repo, "/")
	ref := fullRef(r.Event, r.Ref)
	wf := r.Repo + "/.github/workflows/" + r.Workflow + "@" + ref
	sub := "repo:" + r.Repo + ":ref:" + ref
	if strings.HasPrefix(ref, "refs/pull/") {
		sub = "repo:" + r.Repo + ":pull_request" // GitHub's subject for pull request runs
	}
	c := JobClaims{
		Audience: audience, Subject: sub,
		Repository: r.Repo, RepositoryOwner: owner,
		WorkflowRef: wf, JobWorkflowRef: wf, Workflow: r.Name,
		Ref: ref, RefType: "branch", SHA: r.HeadSHA,
		RunID: strconv.FormatInt(r.ID, 10), RunNumber: strconv.Itoa(r.RunNumber), RunAttempt: "1",
		EventName: r.Event, Actor: r.Actor,
	}
	if o.f != nil {
		o.f.mu.Lock()
		if repo := o.f.lookupRepo(r.Repo); repo != nil {
			c.RepositoryID = strconv.FormatInt(repo.id, 10)
			c.RepositoryOwnerID = strconv.FormatInt(o.f.account(repo.owner, "").id, 10)
		}
		o.f.mu.Unlock()
	}
	return c
}

// Mint signs c with the current key.
func (o *OIDCIssuer) Mint(c JobClaims) string {
	o.mu.Lock()
	k := o.keys[len(o.keys)-1]
	o.mu.Unlock()
	return o.MintWith(c, k.key, k.kid)
}

// MintWith signs c with key under the key id kid, whatever the JWKS
// holds: a forged token (another key, the real kid) or one of an unknown
// key.
func (o *OIDCIssuer) MintWith(c JobClaims, key *rsa.PrivateKey, kid string) string {
	now := o.clock()
	if c.Issuer == "" {
		c.Issuer = o.URL()
	}
	if c.IssuedAt.IsZero() {
		c.IssuedAt = now
	}
	if c.NotBefore.IsZero() {
		c.NotBefore = c.IssuedAt
	}
	if c.ExpiresAt.IsZero() {
		c.ExpiresAt = c.IssuedAt.Add(DefaultOIDCLifetime)
	}
	if c.Environment != "" && c.Subject == "repo:"+c.Repository+":ref:"+c.Ref {
		c.Subject = "repo:" + c.Repository + ":environment:" + c.Environment
	}
	var jti [16]byte
	_, _ = rand.Read(jti[:])
	claims := jwt.MapClaims{
		"jti": hex.EncodeToString(jti[:]), "iss": c.Issuer, "aud": c.Audience, "sub": c.Subject,
		"iat": c.IssuedAt.Unix(), "nbf": c.NotBefore.Unix(), "exp": c.ExpiresAt.Unix(),
		"repository": c.Repository, "repository_owner": c.RepositoryOwner,
		"repository_id": c.RepositoryID, "repository_owner_id": c.RepositoryOwnerID,
		"repository_visibility": "private",
		"workflow_ref":          c.WorkflowRef, "job_workflow_ref": c.JobWorkflowRef, "workflow": c.Workflow,
		"ref": c.Ref, "ref_type": c.RefType, "sha": c.SHA,
		"run_id": c.RunID, "run_number": c.RunNumber, "run_attempt": c.RunAttempt,
		"event_name": c.EventName, "actor": c.Actor, "runner_environment": "github-hosted",
	}
	if c.Environment != "" {
		claims["environment"] = c.Environment
	}
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = kid
	s, err := t.SignedString(key)
	if err != nil {
		// Unreachable with an RSA key of a sane size.
		panic(fmt.Sprintf("ghfake oidc: signing: %v", err))
	}
	return s
}

// JobEnv registers a request token for a job of run and returns the
// variables a runner sets when the job has `permissions: id-token: write`:
// ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN. The
// request endpoint answers a token with the run's claims and the audience
// the job asks for (GitHub's default, the owner's URL, when none).
func (o *OIDCIssuer) JobEnv(r Run) []string {
	return o.JobEnvWith(o.ClaimsFor(r, ""))
}

// JobEnvWith is JobEnv with the claims given (the audience is still the
// job's request's).
func (o *OIDCIssuer) JobEnvWith(c JobClaims) []string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	req := "fake-id-token-request-" + hex.EncodeToString(b[:])
	o.mu.Lock()
	o.requests[req] = c
	o.mu.Unlock()
	return []string{
		"ACTIONS_ID_TOKEN_REQUEST_URL=" + o.URL() + OIDCRequestPath + "?api-version=2.0",
		"ACTIONS_ID_TOKEN_REQUEST_TOKEN=" + req,
	}
}

func (o *OIDCIssuer) serveDiscovery(w http.ResponseWriter, _ *http.Request) {
	// The fields GitHub's document has.
	oidcJSON(w, http.StatusOK, map[string]any{
		"issuer":                                o.URL(),
		"jwks_uri":                              o.URL() + OIDCJWKSPath,
		"subject_types_supported":               []string{"public", "pairwise"},
		"response_types_supported":              []string{"id_token"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      []string{"openid"},
		"claims_supported": []string{"sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "repository", "repository_id",
			"repository_owner", "repository_owner_id", "run_id", "run_number", "run_attempt", "actor", "workflow",
			"workflow_ref", "job_workflow_ref", "event_name", "ref_type", "sha", "runner_environment", "environment"},
	})
}

func (o *OIDCIssuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	o.mu.Lock()
	o.fetches++
	set := jose.JSONWebKeySet{}
	for _, k := range o.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.key.PublicKey, KeyID: k.kid, Algorithm: "RS256", Use: "sig"})
	}
	o.mu.Unlock()
	oidcJSON(w, http.StatusOK, set)
}

// serveRequest is the runner's token request: a bearer request token,
// ?audience=.
func (o *OIDCIssuer) serveRequest(w http.ResponseWriter, r *http.Request) {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	o.mu.Lock()
	c, ok := o.requests[strings.TrimSpace(tok)]
	o.mu.Unlock()
	if !strings.EqualFold(scheme, "bearer") || !ok {
		oidcJSON(w, http.StatusUnauthorized, map[string]string{"message": "invalid request token"})
		return
	}
	c.Audience = r.URL.Query().Get("audience")
	if c.Audience == "" {
		c.Audience = "https://github.com/" + c.RepositoryOwner
	}
	oidcJSON(w, http.StatusOK, map[string]any{"count": 1, "value": o.Mint(c)})
}

func oidcJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// getRepoInstallation is GET /repos/{owner}/{repo}/installation (App JWT):
// the installation that can reach the repository. The App is installed on
// every repository of the fake; any other answers 404, as GitHub answers
// for a repository the App is not installed on.
func (f *Fake) getRepoInstallation(c *rc) {
	if c.repo == nil {
		c.notFound()
		return
	}
	in := f.fullInstallationJSON()
	c.json(http.StatusOK, in)
}
