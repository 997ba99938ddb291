package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/bazinga-bot/bazinga/server"
)

// clock is a settable clock shared by the fake, its issuer and the exchange.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// recorder keeps the bodies of installation-token requests.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	reqs []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/access_tokens") && req.Body != nil {
		b, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
		r.mu.Lock()
		r.reqs = append(r.reqs, string(b))
		r.mu.Unlock()
	}
	return r.base.RoundTrip(req)
}

// scoped returns the token requests that named repositories (the
// exchange's, not ghinstallation's own).
func (r *recorder) scoped() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, b := range r.reqs {
		var m map[string]any
		if json.Unmarshal([]byte(b), &m) == nil && m["repositories"] != nil {
			out = append(out, m)
		}
	}
	return out
}

type exchangeWorld struct {
	t     testing.TB
	clk   *clock
	f     *ghfake.Fake
	o     *ghfake.OIDCIssuer
	x     *server.TokenExchange
	rec   *recorder
	logs  *bytes.Buffer
	run   ghfake.Run
	logMu *sync.Mutex
	cfg   server.TokenExchangeConfig
	opts  server.TokenExchangeOptions
}

// restart is a new process: a new exchange with the same configuration.
func (w *exchangeWorld) restart() {
	x, err := server.NewTokenExchange(w.cfg, w.opts)
	require.NoError(w.t, err)
	w.x = x
}

func newExchangeWorld(t testing.TB, cfg server.TokenExchangeConfig) *exchangeWorld {
	t.Helper()
	clk := &clock{t: time.Now().Truncate(time.Second)}
	// The fake keeps real time: ghinstallation judges its tokens' expiry
	// by the real clock. The issuer and the exchange share clk.
	f := ghfake.Start(t, ghfake.Options{})
	for _, name := range []string{"widgets", "gizmos"} {
		r, err := f.CreateRepo("acme", name, "main")
		require.NoError(t, err)
		_, err = r.Push("acme", "main", map[string]string{"README.md": "hi\n"}, "init")
		require.NoError(t, err)
	}
	o := ghfake.StartOIDC(t, f)
	o.SetClock(clk.now)
	rec := &recorder{base: f.Transport()}
	factory, err := ghapi.NewClientFactory(ghapi.App{ID: f.AppID(), PrivateKey: testkey.PEM(t), APIURL: f.APIURL()}, rec,
		ghapi.TransportOptions{MaxRetries: -1, MaxRateLimitRetries: -1})
	require.NoError(t, err)
	logs := &bytes.Buffer{}
	mu := &sync.Mutex{}
	cfg.Issuer = o.URL()
	opts := server.TokenExchangeOptions{
		GitHub: server.FactoryGitHub{F: factory}, Login: f.BotLogin(), Now: clk.now,
		Logger: slog.New(slog.NewJSONHandler(lockedWriter{mu, logs}, nil)),
	}
	x, err := server.NewTokenExchange(cfg, opts)
	require.NoError(t, err)
	run := ghfake.Run{ID: 5_000_001, Repo: "acme/widgets", Workflow: "bazinga-agent.yml", Name: "bazinga agent",
		Ref: "main", HeadSHA: strings.Repeat("a", 40), Event: "workflow_dispatch", Actor: "bazinga[bot]", RunNumber: 1}
	return &exchangeWorld{t: t, clk: clk, f: f, o: o, x: x, rec: rec, logs: logs, run: run, logMu: mu, cfg: cfg, opts: opts}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (w *exchangeWorld) claims() ghfake.JobClaims { return w.o.ClaimsFor(w.run, "bazinga") }

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func (w *exchangeWorld) exchange(auth string) answer {
	req := httptest.NewRequest(http.MethodPost, server.TokenPath, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rr := httptest.NewRecorder()
	w.x.ServeHTTP(rr, req)
	var body map[string]any
	require.NoError(w.t, json.Unmarshal(rr.Body.Bytes(), &body), rr.Body.String())
	return answer{status: rr.Code, header: rr.Header(), body: body}
}

func (w *exchangeWorld) logText() string {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	return w.logs.String()
}

func otherKey(t *testing.T) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return k
}

func TestTokenExchangeIssuesAScopedAppToken(t *testing.T) {
	w := newExchangeWorld(t, server.TokenExchangeConfig{})
	a := w.exchange("Bearer " + w.o.Mint(w.claims()))
	require.Equal(t, http.StatusCreated, a.status, a.body)
	tok, _ := a.body["token"].(string)
	require.NotEmpty(t, tok)
	assert.Equal(t, "acme/widgets", a.body["repository"])
	assert.Equal(t, "bazinga[bot]", a.body["login"])
	assert.Equal(t, "no-store", a.header.Get("Cache-Control"))
	exp, err := time.Parse(time.RFC3339, a.body["expires_at"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(time.Hour), exp, time.Minute, "an installation token lives an hour")
	// Asked for exactly the repository and the jobs' permissions.
	reqs := w.rec.scoped()
	require.Len(t, reqs, 1)
	assert.Equal(t, []any{"widgets"}, reqs[0]["repositories"])
	assert.Equal(t, map[string]any{"actions": "write", "contents": "write", "issues": "write", "pull_requests": "write"},
		reqs[0]["permissions"], "the defaults cut down to what the installation holds (the fake's has no checks or statuses)")
	assert.Equal(t, map[string]any{"actions": "write", "contents": "write", "issues": "write", "pull_requests": "write"}, a.body["permissions"])
	// The token acts as the App.
	c := w.f.Client(tok)
	r := w.f.Repo("acme/widgets")
	n, err := r.CreateIssue("alice", "t", "b")
	require.NoError(t, err)
	cm, _, err := c.Issues.CreateComment(context.Background(), "acme", "widgets", n, &github.IssueComment{Body: github.String("hello")})
	require.NoError(t, err)
	assert.Equal(t, "bazinga[bot]", cm.GetUser().GetLogin())
	logs := w.logText()
	assert.Contains(t, logs, `"msg":"token issued"`)
	assert.Contains(t, logs, `"repository":"acme/widgets"`)
	assert.NotContains(t, logs, tok, "tokens are never logged")
}

func TestTokenExchangeRefusals(t *testing.T) {
	w := newExchangeWorld(t, server.TokenExchangeConfig{})
	base := w.claims()
	with := func(edit func(c *ghfake.JobClaims)) string {
		c := base
		edit(&c)
		return "Bearer " + w.o.Mint(c)
	}
	now := w.clk.now()
	forged := otherKey(t)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: mustMarshalPKIX(t, forged)})
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": w.o.URL(), "aud": "bazinga", "exp": now.Add(time.Minute).Unix(),
		"repository": "acme/widgets", "repository_owner": "acme"})
	hs.Header["kid"] = w.o.SigningKeyID()
	hsTok, err := hs.SignedString(pubPEM)
	require.NoError(t, err)

	cases := []struct {
		name   string
		auth   string
		status int
		check  string
		msg    string
	}{
		{"no bearer", "", 401, "bearer", "permissions: id-token: write"},
		{"basic auth", "Basic YTpi", 401, "bearer", "Authorization: Bearer"},
		{"not a JWT", "Bearer not.a.jwt", 401, "malformed", "not a JWT"},
		{"bad signature (another key, the issuer's kid)", "Bearer " + w.o.MintWith(base, forged, w.o.SigningKeyID()), 401, "signature", "does not verify"},
		{"unknown kid", "Bearer " + w.o.MintWith(base, forged, "made-up"), 401, "signature", "key the issuer does not publish"},
		{"HS256 keyed with a public key (alg confusion)", "Bearer " + hsTok, 401, "signature", "RS256 only"},
		{"expired", with(func(c *ghfake.JobClaims) { c.IssuedAt = now.Add(-time.Hour); c.ExpiresAt = now.Add(-time.Minute) }), 401, "expiry", "expired"},
		{"not yet valid", with(func(c *ghfake.JobClaims) { c.NotBefore = now.Add(10 * time.Minute) }), 401, "not_before", "not valid yet"},
		{"issued in the future", with(func(c *ghfake.JobClaims) {
			c.NotBefore = now
			c.IssuedAt = now.Add(10 * time.Minute)
			c.ExpiresAt = now.Add(20 * time.Minute)
		}), 401, "issued_at", "future"},
		{"wrong issuer", with(func(c *ghfake.JobClaims) { c.Issuer = "https://token.actions.githubusercontent.com" }), 401, "issuer", "not issued by " + w.o.URL()},
		{"wrong audience", with(func(c *ghfake.JobClaims) { c.Audience = "https://github.com/acme" }), 401, "audience", `audience is not "bazinga"`},
		{"owner is not the repository's", with(func(c *ghfake.JobClaims) { c.RepositoryOwner = "evil" }), 403, "repository", "not the owner of acme/widgets"},
		{"repository claim malformed", with(func(c *ghfake.JobClaims) { c.Repository = "widgets" }), 403, "repository", "not owner/name"},
		{"claims of no Actions job", with(func(c *ghfake.JobClaims) { c.JobWorkflowRef = "" }), 403, "claims", "job_workflow_ref"},
		{"another workflow", with(func(c *ghfake.JobClaims) {
			c.WorkflowRef = "acme/widgets/.github/workflows/ci.yml@refs/heads/main"
			c.JobWorkflowRef = c.WorkflowRef
		}), 403, "workflow", "ci.yml@refs/heads/main may not exchange"},
		{"an allowed reusable workflow called from another", with(func(c *ghfake.JobClaims) {
			c.WorkflowRef = "acme/widgets/.github/workflows/ci.yml@refs/heads/main"
		}), 403, "workflow", "ci.yml"},
		{"another repository's workflow of the same name", with(func(c *ghfake.JobClaims) {
			c.WorkflowRef = "evil/widgets/.github/workflows/bazinga-agent.yml@refs/heads/main"
			c.JobWorkflowRef = c.WorkflowRef
		}), 403, "workflow", "evil/widgets"},
		{"the workflow on another branch", with(func(c *ghfake.JobClaims) {
			c.WorkflowRef = "acme/widgets/.github/workflows/bazinga-agent.yml@refs/heads/feature"
			c.JobWorkflowRef = c.WorkflowRef
		}), 403, "workflow", "the default branch, main"},
		{"the workflow of a pull request's merge ref", with(func(c *ghfake.JobClaims) {
			c.WorkflowRef = "acme/widgets/.github/workflows/bazinga.yml@refs/pull/3/merge"
			c.JobWorkflowRef = c.WorkflowRef
		}), 403, "workflow", "refs/pull/3/merge"},
		{"a repository the App is not installed on", with(func(c *ghfake.JobClaims) {
			c.Repository, c.RepositoryOwner = "other/widgets", "other"
			c.WorkflowRef = "other/widgets/.github/workflows/bazinga-agent.yml@refs/heads/main"
			c.JobWorkflowRef = c.WorkflowRef
		}), 403, "installed", "not installed on other/widgets"},
		{"a repository recreated under the same name", with(func(c *ghfake.JobClaims) { c.RepositoryID = "999999" }), 403, "repository_id", "repository_id 999999"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := w.exchange(c.auth)
			assert.Equal(t, c.status, a.status, a.body)
			assert.Equal(t, c.check, a.body["error"], a.body)
			assert.Contains(t, a.body["message"], c.msg)
			assert.Nil(t, a.body["token"])
		})
	}
	assert.Empty(t, w.rec.scoped(), "no refused exchange asked GitHub for a token")
	logs := w.logText()
	for _, c := range cases {
		assert.Contains(t, logs, `"check":"`+c.check+`"`)
	}
	assert.Contains(t, logs, `"msg":"token refused"`)
}

func TestTokenExchangeHTTPLimits(t *testing.T) {
	w := newExchangeWorld(t, server.TokenExchangeConfig{})
	srv := httptest.NewServer(w.x)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + server.TokenPath)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
	big := bytes.Repeat([]byte("x"), 5<<10)
	resp, err = http.Post(srv.URL+server.TokenPath, "application/json", bytes.NewReader(big))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	// A chunked body (no Content-Length) is cut at the limit too.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+server.TokenPath, io.MultiReader(bytes.NewReader(big)))
	req.ContentLength = -1
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	// An oversized bearer is refused before it is parsed.
	a := w.exchange("Bearer " + strings.Repeat("a", 20<<10))
	assert.Equal(t, http.StatusUnauthorized, a.status)
	assert.Equal(t, "malformed", a.body["error"])
}

func TestTokenExchangeKeyRotationAndCache(t *testing.T) {
	w := newExchangeWorld(t, server.TokenExchangeConfig{Burst: 100})
	ok := func(what string) {
		t.Helper()
		a := w.exchange("Bearer " + w.o.Mint(w.claims()))
		require.Equal(t, http.StatusCreated, a.status, "%s: %v", what, a.body)
	}
	// A token of the first key that outlives the cache (GitHub's do not;
	// this one shows what a withdrawn key's tokens meet).
	long := w.claims()
	long.ExpiresAt = w.clk.now().Add(3 * time.Hour)
	oldKeyToken := w.o.Mint(long)
	ok("first token")
	require.Equal(t, 1, w.o.JWKSFetches())
	ok("same key")
	assert.Equal(t, 1, w.o.JWKSFetches(), "keys are cached")

	// GitHub rotates: a token with the new kid makes the verifier read the
	// JWKS again at once (the last read is old enough).
	w.clk.add(time.Minute)
	oldKid := w.o.SigningKeyID()
	_, err := w.o.RotateKey()
	require.NoError(t, err)
	ok("rotated key")
	assert.Equal(t, 2, w.o.JWKSFetches())
	ok("rotated key again")
	assert.Equal(t, 2, w.o.JWKSFetches())

	// Made-up kids do not make it hammer the issuer: at most one read per
	// DefaultJWKSMinRefresh.
	forged := otherKey(t)
	for i := range 5 {
		a := w.exchange("Bearer " + w.o.MintWith(w.claims(), forged, fmt.Sprintf("made-up-%d", i)))
		assert.Equal(t, "signature", a.body["error"])
	}
	assert.Equal(t, 2, w.o.JWKSFetches(), "the last read was less than the interval ago")
	w.clk.add(server.DefaultJWKSMinRefresh)
	for i := range 5 {
		a := w.exchange("Bearer " + w.o.MintWith(w.claims(), forged, fmt.Sprintf("made-up-again-%d", i)))
		assert.Equal(t, "signature", a.body["error"])
	}
	assert.Equal(t, 3, w.o.JWKSFetches(), "one read for the burst")

	// The old key, withdrawn, stops verifying once the cache expires and
	// the refresh that runs behind the stale keys has read the JWKS.
	a := w.exchange("Bearer " + oldKeyToken)
	require.Equal(t, http.StatusCreated, a.status, "the old key is still published: %v", a.body)
	require.NoError(t, w.o.RetireKey(oldKid))
	w.clk.add(server.DefaultJWKSTTL)
	ok("after the cache expired: served stale while it is read again")
	require.Eventually(t, func() bool { return w.o.JWKSFetches() == 4 }, 5*time.Second, time.Millisecond, "an expired cache is read again")
	time.Sleep(200 * time.Millisecond) // the refresh stores its keys
	a = w.exchange("Bearer " + oldKeyToken)
	assert.Equal(t, "signature", a.body["error"], "a withdrawn key verifies nothing: %v", a.body)
}

func TestTokenExchangeRateLimitPerRepository(t *testing.T) {
	w := newExchangeWorld(t, server.TokenExchangeConfig{Rate: time.Minute, Burst: 2})
	for i := range 2 {
		a := w.exchange("Bearer " + w.o.Mint(w.claims()))
		require.Equal(t, http.StatusCreated, a.status, "exchange %d: %v", i, a.body)
	}
	a := w.exchange("Bearer " + w.o.Mint(w.claims()))
	assert.Equal(t, http.StatusTooManyRequests, a.status)
	assert.Equal(t, "rate_limit", a.body["error"])
	assert.Equal(t, "60", a.header.Get("Retry-After"))
	// Another repository has its own allowance.
	other := w.run
	other.Repo = "acme/gizmos"
	b := w.exchange("Bearer " + w.o.Mint(w.o.ClaimsFor(other, "bazinga")))
	assert.Equal(t, http.StatusCreated, b.status, b.body)
	// And the first one's comes back.
	w.clk.add(time.Minute)
	a = w.exchange("Bearer " + w.o.Mint(w.claims()))
	assert.Equal(t, http.StatusCreated, a.status, a.body)
}

func TestTokenExchangeConfiguredAllowList(t *testing.T) {
	w := newExchangeWorld(t, server.TokenExchangeConfig{
		Workflows:   []string{"acme/shared/.github/workflows/steps.yml@refs/tags/v1", ".github/workflows/bazinga-agent.yml@*"},
		Permissions: map[string]string{"contents": "write", "workflows": "write", "checks": "read"},
	})
	// The agent workflow on any ref, calling a pinned reusable workflow.
	c := w.claims()
	c.WorkflowRef = "acme/widgets/.github/workflows/bazinga-agent.yml@refs/heads/feature"
	c.JobWorkflowRef = "acme/shared/.github/workflows/steps.yml@refs/tags/v1"
	a := w.exchange("Bearer " + w.o.Mint(c))
	require.Equal(t, http.StatusCreated, a.status, a.body)
	assert.Equal(t, map[string]any{"contents": "write", "workflows": "write"}, a.body["permissions"],
		"workflows only when configured; checks dropped: the installation lacks it")
	c.JobWorkflowRef = "acme/shared/.github/workflows/steps.yml@refs/heads/main"
	a = w.exchange("Bearer " + w.o.Mint(c))
	assert.Equal(t, "workflow", a.body["error"])

	_, err := server.NewTokenExchange(server.TokenExchangeConfig{Workflows: []string{"bazinga.yml"}},
		server.TokenExchangeOptions{GitHub: server.FactoryGitHub{}})
	assert.ErrorContains(t, err, "want [owner/repo/].github/workflows/NAME.yml[@ref]")
	_, err = server.NewTokenExchange(server.TokenExchangeConfig{Permissions: map[string]string{"pull-requests": "write"}},
		server.TokenExchangeOptions{GitHub: server.FactoryGitHub{}})
	assert.ErrorContains(t, err, "pull-requests is not a GitHub App permission")
	_, err = server.ParseTokenPermissions("contents:write,contnets:read")
	assert.ErrorContains(t, err, "contnets is not a GitHub App permission")
	_, err = server.ParseTokenPermissions("contents:admin")
	assert.ErrorContains(t, err, "want name:read or name:write")
}

func TestTokenExchangeRequiredEnvironment(t *testing.T) {
	w := newExchangeWorld(t, server.TokenExchangeConfig{Environment: "bazinga"})
	a := w.exchange("Bearer " + w.o.Mint(w.claims()))
	assert.Equal(t, http.StatusForbidden, a.status)
	assert.Equal(t, "environment", a.body["error"])
	assert.Contains(t, a.body["message"], "add `environment: bazinga` to the privileged job")
	c := w.claims()
	c.Environment = "production"
	a = w.exchange("Bearer " + w.o.Mint(c))
	assert.Equal(t, "environment", a.body["error"])
	c.Environment = "bazinga"
	a = w.exchange("Bearer " + w.o.Mint(c))
	assert.Equal(t, http.StatusCreated, a.status, a.body)
}

// A job token is good for one exchange: a copy is refused, a token
// refused before it reached GitHub can be retried.
func TestTokenExchangeRefusesReplays(t *testing.T) {
	w := newExchangeWorld(t, server.TokenExchangeConfig{})
	tok := "Bearer " + w.o.Mint(w.claims())
	a := w.exchange(tok)
	require.Equal(t, http.StatusCreated, a.status, a.body)
	a = w.exchange(tok)
	assert.Equal(t, http.StatusUnauthorized, a.status)
	assert.Equal(t, "replay", a.body["error"])
	assert.Len(t, w.rec.scoped(), 1, "one installation token for one job token")

	c := w.claims()
	c.RepositoryID = "999999"
	other := "Bearer " + w.o.Mint(c)
	assert.Equal(t, "repository_id", w.exchange(other).body["error"])
	assert.Equal(t, "repository_id", w.exchange(other).body["error"], "not spent by a refusal")
}

// TestTokenExchangeRefusesReplaysAcrossRestarts is issue 21 item 4: a job
// token spent before a restart buys nothing after it. The store keeps a hash,
// not the jti, and forgets a token once it has expired.
func TestTokenExchangeRefusesReplaysAcrossRestarts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "spent")
	w := newExchangeWorld(t, server.TokenExchangeConfig{SpentFile: file})
	tok := w.o.Mint(w.claims())
	a := w.exchange("Bearer " + tok)
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	w.restart()
	a = w.exchange("Bearer " + tok)
	assert.Equal(t, http.StatusUnauthorized, a.status)
	assert.Equal(t, "replay", a.body["error"], "spent before the restart, spent after it")
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
	require.NoError(t, err)
	jti, _ := parsed.Claims.(jwt.MapClaims)["jti"].(string)
	require.NotEmpty(t, jti)
	assert.NotContains(t, string(b), jti, "no jti in clear")
	st, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// A fresh token still works after the restart; an expired entry is
	// dropped when the store is read again.
	a = w.exchange("Bearer " + w.o.Mint(w.claims()))
	require.Equal(t, http.StatusCreated, a.status, "%v", a.body)
	w.clk.add(2 * time.Hour)
	w.restart()
	b, err = os.ReadFile(file)
	require.NoError(t, err)
	assert.Empty(t, strings.TrimSpace(string(b)), "expired spends are forgotten")

	// A torn last line (a crash mid-append) is dropped; other damage
	// stops the start, naming the file.
	require.NoError(t, os.WriteFile(file, []byte("123"), 0o600))
	w.restart()
	require.NoError(t, os.WriteFile(file, []byte("garbage line\n"), 0o600))
	_, err = server.NewTokenExchange(w.cfg, w.opts)
	assert.ErrorContains(t, err, file)
}

func TestTokenExchangeIssuerUnavailable(t *testing.T) {
	w := newExchangeWorld(t, server.TokenExchangeConfig{})
	tok := w.o.Mint(w.claims())
	w.o.Close()
	a := w.exchange("Bearer " + tok)
	assert.Equal(t, http.StatusServiceUnavailable, a.status)
	assert.Equal(t, "keys", a.body["error"])
	assert.Equal(t, "30", a.header.Get("Retry-After"))
}

func mustMarshalPKIX(t *testing.T, k *rsa.PrivateKey) []byte {
	b, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	return b
}
