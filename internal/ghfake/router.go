package ghfake

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const (
	docsURL     = "https://docs.github.com/rest"
	maxBodySize = 25 << 20 // GitHub refuses larger request bodies
)

// route is one REST endpoint.
type route struct {
	method string
	segs   []string
	tmpl   string // "POST /repos/{owner}/{repo}/issues", recorded in Call.Route
	h      func(*rc)
	ro
}

// ro are a route's properties.
type ro struct {
	creates bool   // content-creating (counted separately, like GitHub's content limits)
	app     bool   // authenticated as the app (JWT), not with a token
	open    bool   // authentication optional
	perm    string // app permissions accepted, alternatives separated by ";", e.g. "issues=write; pull_requests=write"
	role    string // minimum repository role for user tokens (default read for GET, write otherwise)
	graphql bool   // the GraphQL endpoint: its own rate limit, errors with HTTP 200 (graphql.go)
}

// rc is the state of one API request while its handler runs (under f.mu).
type rc struct {
	f      *Fake
	r      *http.Request
	rt     *route
	params map[string]string
	body   []byte

	login string
	kind  AccountType
	tok   *token
	repo  *Repo

	status int
	hdr    http.Header
	out    []byte
}

func (f *Fake) add(tmpl string, h func(*rc), o ro) {
	method, path, _ := strings.Cut(tmpl, " ")
	f.routes = append(f.routes, &route{
		method: method,
		segs:   strings.Split(strings.Trim(path, "/"), "/"),
		tmpl:   tmpl,
		h:      h,
		ro:     o,
	})
}

// match finds the first route matching method and path segments; earlier
// registrations win, so literal routes are registered before the
// parameterised ones they overlap.
func (f *Fake) match(method string, segs []string) (*route, map[string]string) {
	for _, rt := range f.routes {
		if rt.method != method {
			continue
		}
		if p, ok := matchSegs(rt.segs, segs); ok {
			return rt, p
		}
	}
	return nil, nil
}

func matchSegs(pat, segs []string) (map[string]string, bool) {
	p := map[string]string{}
	for i, ps := range pat {
		if strings.HasPrefix(ps, "{") && strings.HasSuffix(ps, "...}") {
			// A trailing wildcard takes the rest, possibly empty
			// (GET /contents/ lists the root directory).
			p[ps[1:len(ps)-4]] = strings.Join(segs[min(i, len(segs)):], "/")
			return p, true
		}
		if i >= len(segs) {
			return nil, false
		}
		if strings.HasPrefix(ps, "{") {
			if segs[i] == "" {
				return nil, false
			}
			p[ps[1:len(ps)-1]] = segs[i]
			continue
		}
		if ps != segs[i] {
			return nil, false
		}
	}
	return p, len(pat) == len(segs)
}

// splitPath splits an escaped URL path into unescaped segments.
func splitPath(escaped string) []string {
	parts := strings.Split(strings.Trim(escaped, "/"), "/")
	for i, s := range parts {
		if u, err := url.PathUnescape(s); err == nil {
			parts[i] = u
		}
	}
	return parts
}

func (f *Fake) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := gitPath(r.URL.Path); ok {
		f.serveGit(w, r)
		return
	}
	path := r.URL.EscapedPath()
	if path == "/api/v3" || strings.HasPrefix(path, "/api/v3/") {
		path = strings.TrimPrefix(path, "/api/v3")
	}
	segs := f.byIDPath(splitPath(path))
	if f.redirectFormer(w, r, segs) || f.redirectTransferred(w, r, segs) {
		return
	}
	rt, params := f.match(r.Method, segs)
	f.handleAPI(w, r, rt, params, "/"+strings.Join(segs, "/"))
}

func (f *Fake) handleAPI(w http.ResponseWriter, r *http.Request, rt *route, params map[string]string, path string) {
	call := Call{Method: r.Method, Path: path, Query: r.URL.RawQuery}
	if rt != nil {
		call.Route = rt.tmpl
		call.ContentCreating = rt.creates
		call.GraphQL = rt.graphql
	}

	f.mu.Lock()
	f.callN++
	fault, faulted := f.pickFault(f.callN, call.Route)
	f.mu.Unlock()
	if faulted {
		call.Fault = fault.Kind
	}

	if faulted && !fault.Applied {
		f.answerFault(w, r, fault, nil, call)
		return
	}

	defer f.commentWrite(rt, params)()
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodySize+1))
	c := &rc{f: f, r: r, rt: rt, params: params, body: body, hdr: http.Header{}}
	f.mu.Lock()
	switch {
	case err != nil:
		c.fail(http.StatusBadRequest, "Problems reading request body")
	case len(body) > maxBodySize:
		c.fail(http.StatusRequestEntityTooLarge, "Request body too large")
	default:
		f.run(c)
	}
	call.Login, call.Kind = c.login, c.kind
	if c.status == http.StatusNotModified {
		call.NotModified = true
	}
	call.Status = c.status
	call.Applied = !faulted || fault.Applied
	if c.status >= 400 {
		call.Applied = false
	}
	f.mu.Unlock()

	f.afterChange()
	if faulted {
		f.answerFault(w, r, fault, c.hdr, call)
		return
	}
	f.record(call)
	for k, v := range c.hdr {
		w.Header()[k] = v
	}
	w.WriteHeader(c.status)
	if c.status != http.StatusNotModified && c.status != http.StatusNoContent {
		_, _ = w.Write(c.out)
	}
}

// answerFault answers with a fault and records the call; a timeout is
// recorded when the hold starts, so tests see it while the client waits.
func (f *Fake) answerFault(w http.ResponseWriter, r *http.Request, ft Fault, hdr http.Header, call Call) {
	if ft.Kind == FaultTimeout {
		call.Status = 0
		f.record(call)
		f.writeFault(w, r, ft, hdr)
		return
	}
	call.Status = f.writeFault(w, r, ft, hdr)
	f.record(call)
}

// run authenticates, rate-limits and authorises the request, then runs the
// handler and answers conditional GETs. Caller holds f.mu.
func (f *Fake) run(c *rc) {
	// A bug in a handler must not leave f.mu locked or kill the test
	// binary: answer 500 like GitHub would.
	defer func() {
		if p := recover(); p != nil {
			c.hdr = http.Header{}
			c.fail(http.StatusInternalServerError, fmt.Sprintf("ghfake: internal error: %v", p))
		}
	}()
	authed := f.authenticate(c)
	bk := f.bucketFor(c)
	if !authed {
		f.rateHeaders(c, bk)
		return
	}
	if bk.remaining() <= 0 {
		bk.used++ // GitHub counts refused requests too
		f.rateHeaders(c, bk)
		who := "user ID " + strconv.FormatInt(f.account(c.login, c.kind).id, 10)
		switch {
		case c.tok != nil && c.tok.install:
			who = "installation ID " + strconv.FormatInt(f.opts.InstallationID, 10)
		case strings.EqualFold(c.login, ActionsLogin):
			// A GITHUB_TOKEN is an installation token of the Actions app,
			// one installation per repository.
			who = "installation ID " + strconv.FormatInt(actionsInstallation(c.params["owner"]+"/"+c.params["repo"]), 10)
		}
		c.hdr.Set("X-RateLimit-Remaining", "0")
		if c.rt != nil && c.rt.graphql {
			// GraphQL's exhausted limit is an error with HTTP 200.
			c.json(http.StatusOK, map[string]any{"errors": []gqlError{{Type: "RATE_LIMITED", Message: "API rate limit exceeded for " + who + "."}}})
			return
		}
		c.errorBody(http.StatusForbidden, map[string]any{
			"message":           "API rate limit exceeded for " + who + ".",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits",
		})
		return
	}
	switch {
	case c.rt == nil:
		c.notFound()
	case !f.authorise(c):
	case c.rt.creates && f.opts.ContentLimits && f.contentLimited(c):
	default:
		c.rt.h(c)
	}
	if c.status == 0 {
		c.status = http.StatusOK
	}
	setLocation(c)
	if c.r.Method == http.MethodGet && c.status == http.StatusOK {
		sum := sha256.Sum256(c.out)
		etag := `"` + hex.EncodeToString(sum[:]) + `"`
		c.hdr.Set("ETag", etag)
		if etagMatch(c.r.Header.Get("If-None-Match"), etag) {
			c.status = http.StatusNotModified
			c.out = nil
		}
	}
	// A 304 is free, as on GitHub.
	if c.status != http.StatusNotModified {
		bk.used++
	}
	f.rateHeaders(c, bk)
}

// etagMatch implements If-None-Match's weak comparison over a list.
func etagMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// authenticate resolves the Authorization header to an identity. Caller
// holds f.mu.
func (f *Fake) authenticate(c *rc) bool {
	h := c.r.Header.Get("Authorization")
	if h == "" {
		if c.rt != nil && c.rt.open {
			return true
		}
		if c.rt == nil {
			return true // unknown route: 404, as GitHub answers
		}
		c.fail(http.StatusUnauthorized, "Requires authentication")
		return false
	}
	scheme, val, _ := strings.Cut(h, " ")
	scheme = strings.ToLower(scheme)
	val = strings.TrimSpace(val)
	if scheme != "token" && scheme != "bearer" {
		c.fail(http.StatusUnauthorized, "Bad credentials")
		return false
	}
	if t, ok := f.tokens[val]; ok {
		if !t.expires.IsZero() && !f.now().Before(t.expires) {
			c.fail(http.StatusUnauthorized, "Bad credentials")
			return false
		}
		c.tok, c.login, c.kind = t, t.login, t.kind
		if c.rt != nil && c.rt.app {
			c.fail(http.StatusUnauthorized, "A JSON web token could not be decoded")
			return false
		}
		return true
	}
	if scheme == "bearer" && isJWT(val) {
		c.login, c.kind = f.opts.AppSlug, "App"
		if c.rt != nil && !c.rt.app && !c.rt.open {
			// GitHub refuses an app JWT outside the /app endpoints.
			c.fail(http.StatusForbidden, "Resource not accessible by integration")
			return false
		}
		return true
	}
	c.fail(http.StatusUnauthorized, "Bad credentials")
	return false
}

// isJWT accepts anything shaped like a JWT whose header decodes to JSON; the
// fake does not check signatures (tests sign with throwaway keys).
func isJWT(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return false
	}
	hdr, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[0], "="))
	if err != nil {
		return false
	}
	var m map[string]any
	return json.Unmarshal(hdr, &m) == nil
}

// authorise resolves the route's repository and checks the identity's
// access to it. Caller holds f.mu.
func (f *Fake) authorise(c *rc) bool {
	if owner, ok := c.params["owner"]; ok {
		if name, ok := c.params["repo"]; ok {
			c.repo = f.lookupRepo(owner + "/" + name)
			if c.repo == nil {
				c.notFound()
				return false
			}
		}
	}
	if c.tok != nil && c.tok.repo != nil && c.repo != nil && c.repo != c.tok.repo {
		// Another repository: a public one can be read, nothing written;
		// a private one is invisible.
		if c.repo.settings.Private {
			c.notFound()
			return false
		}
		if c.r.Method != http.MethodGet {
			c.fail(http.StatusForbidden, "Resource not accessible by integration")
			return false
		}
	}
	if c.tok != nil && c.tok.perms != nil {
		perm := c.rt.perm
		if perm == "" {
			perm = "metadata=read"
		}
		if !tokenAllows(c.tok.perms, perm) {
			c.hdr.Set("X-Accepted-GitHub-Permissions", strings.ReplaceAll(perm, " ", ""))
			c.fail(http.StatusForbidden, "Resource not accessible by integration")
			return false
		}
	}
	if c.repo != nil && c.kind == User {
		role := f.roleOf(c.repo, c.login)
		if role == "none" {
			c.notFound() // a private repository is invisible
			return false
		}
		need := c.rt.role
		if need == "" {
			need = "read"
			if c.r.Method != http.MethodGet {
				need = "write"
			}
		}
		if !roleAtLeast(role, need) {
			c.fail(http.StatusForbidden, "Must have "+need+" access to repository")
			return false
		}
	}
	return true
}

var levelRank = map[string]int{"": 0, "none": 0, "read": 1, "write": 2, "admin": 3}

// tokenAllows reports whether perms grant any of the alternatives in need
// ("issues=write; pull_requests=write"). metadata=read is always granted.
func tokenAllows(perms map[string]string, need string) bool {
	for _, alt := range strings.Split(need, ";") {
		name, level, _ := strings.Cut(strings.TrimSpace(alt), "=")
		if name == "metadata" && level == "read" {
			return true
		}
		if levelRank[perms[name]] >= levelRank[level] {
			return true
		}
	}
	return false
}

// --- rate limits ---

// contentLimited enforces GitHub's secondary limits on content-creating
// requests (80 a minute, 500 an hour per identity), answering as GitHub
// does. Caller holds f.mu.
func (f *Fake) contentLimited(c *rc) bool {
	key := "user:" + strings.ToLower(c.login)
	switch {
	case c.tok != nil && c.tok.install:
		key = "installation"
	case strings.EqualFold(c.login, ActionsLogin):
		key = actionsBucket(c.params["owner"] + "/" + c.params["repo"])
	}
	now := f.now()
	var keep []time.Time
	for _, t := range f.contentLog[key] {
		if now.Sub(t) < time.Hour {
			keep = append(keep, t)
		}
	}
	inMinute := 0
	for _, t := range keep {
		if now.Sub(t) < time.Minute {
			inMinute++
		}
	}
	var wait time.Duration
	switch {
	case inMinute >= 80:
		wait = time.Minute - now.Sub(keep[len(keep)-inMinute])
	case len(keep) >= 500:
		wait = time.Hour - now.Sub(keep[0])
	}
	if wait > 0 {
		f.contentLog[key] = keep
		c.hdr.Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		c.errorBody(http.StatusForbidden, map[string]any{
			"message":           "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		})
		return true
	}
	f.contentLog[key] = append(keep, now)
	return false
}

type bucket struct {
	limit int
	used  int
	reset time.Time
}

func (b *bucket) remaining() int { return max(0, b.limit-b.used) }

// bucketFor returns the identity's primary rate-limit bucket, starting a new
// hour window when the old one has passed. Caller holds f.mu.
func (f *Fake) bucketFor(c *rc) *bucket {
	key, limit := "", f.opts.RateLimit
	switch {
	case c.tok != nil && c.tok.install:
		key = "installation"
	case strings.EqualFold(c.login, ActionsLogin):
		// A GITHUB_TOKEN: every job of a repository shares its 1,000.
		repo := c.params["owner"] + "/" + c.params["repo"]
		if c.tok != nil && c.tok.repo != nil && c.rt != nil && c.rt.graphql {
			repo = c.tok.repo.owner + "/" + c.tok.repo.name // GraphQL's path names none
		}
		key, limit = actionsBucket(repo), f.opts.ActionsRateLimit
	case c.login != "":
		key = "user:" + strings.ToLower(c.login)
	default:
		host, _, _ := net.SplitHostPort(c.r.RemoteAddr)
		key, limit = "anon:"+host, 60
	}
	if c.rt != nil && c.rt.graphql {
		key = "graphql:" + key // GraphQL's points are counted apart (graphql.go)
	}
	return f.bucket(key, limit)
}

func actionsBucket(repo string) string { return "actions:" + strings.ToLower(repo) }

func (f *Fake) bucket(key string, limit int) *bucket {
	now := f.now()
	b := f.buckets[key]
	if b == nil || !now.Before(b.reset) {
		b = &bucket{limit: limit, reset: now.Add(time.Hour).Truncate(time.Second)}
		f.buckets[key] = b
	}
	return b
}

func (f *Fake) rateHeaders(c *rc, b *bucket) {
	c.hdr.Set("X-RateLimit-Limit", strconv.Itoa(b.limit))
	c.hdr.Set("X-RateLimit-Remaining", strconv.Itoa(b.remaining()))
	c.hdr.Set("X-RateLimit-Used", strconv.Itoa(b.used))
	c.hdr.Set("X-RateLimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
	resource := "core"
	if c.rt != nil && c.rt.graphql {
		resource = "graphql"
	}
	c.hdr.Set("X-RateLimit-Resource", resource)
	c.hdr.Set("X-GitHub-Api-Version", "2022-11-28")
	c.hdr.Set("X-GitHub-Request-Id", fmt.Sprintf("FAKE:%08X", f.callN))
}

// SetRateRemaining sets how many requests the identity behind tok has left
// in the current window (0 makes the next request fail with GitHub's primary
// rate limit error).
func (f *Fake) SetRateRemaining(tok string, remaining int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tokens[tok]
	if !ok {
		return fmt.Errorf("token: %w", ErrNotFound)
	}
	key := "user:" + strings.ToLower(t.login)
	if t.install {
		key = "installation"
	}
	b := f.bucket(key, f.opts.RateLimit)
	b.used = max(0, b.limit-remaining)
	return nil
}

// SetActionsRateRemaining sets how many requests the GITHUB_TOKENs of repo
// ("owner/name") have left in the current window.
func (f *Fake) SetActionsRateRemaining(repo string, remaining int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bucket(actionsBucket(repo), f.opts.ActionsRateLimit)
	b.used = max(0, b.limit-remaining)
}

// actionsInstallation is a stable id for the Actions app's installation on
// repo, for the rate-limit message.
func actionsInstallation(repo string) int64 {
	var h int64 = 7
	for _, r := range strings.ToLower(repo) {
		h = (h*31 + int64(r)) % 1_000_000
	}
	return 20_000_000 + h
}

// --- responses ---

func (c *rc) json(status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.fail(http.StatusInternalServerError, "ghfake: encoding response: "+err.Error())
		return
	}
	b = withRequiredNulls(v, b)
	c.status = status
	c.hdr.Set("Content-Type", "application/json; charset=utf-8")
	c.out = b
}

func (c *rc) noContent() {
	c.status = http.StatusNoContent
	c.out = nil
}

func (c *rc) errorBody(status int, body map[string]any) {
	c.json(status, body)
}

// fail answers with GitHub's error shape {"message", "documentation_url"}.
func (c *rc) fail(status int, msg string) {
	c.errorBody(status, map[string]any{"message": msg, "documentation_url": docsURL, "status": strconv.Itoa(status)})
}

func (c *rc) notFound() { c.fail(http.StatusNotFound, "Not Found") }

// fieldError is one entry of a 422's "errors" array.
type fieldError struct {
	Resource string `json:"resource,omitempty"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

// invalid answers 422 "Validation Failed" with errors, GitHub's shape.
func (c *rc) invalid(errs ...fieldError) {
	c.errorBody(http.StatusUnprocessableEntity, map[string]any{
		"message": "Validation Failed", "errors": errs, "documentation_url": docsURL, "status": "422",
	})
}

// decode parses the JSON body into v; an empty body leaves v alone. A bad
// body answers 400 "Problems parsing JSON" and returns false.
func (c *rc) decode(v any) bool {
	if len(bytes.TrimSpace(c.body)) == 0 {
		return true
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

func (c *rc) param(name string) string { return c.params[name] }

// intParam parses a numeric path parameter; a non-number answers 404 like
// GitHub's router does.
func (c *rc) intParam(name string) (int64, bool) {
	n, err := strconv.ParseInt(c.params[name], 10, 64)
	if err != nil || n <= 0 {
		c.notFound()
		return 0, false
	}
	return n, true
}

// page slices n items per the per_page/page query and sets the Link header.
func (c *rc) page(n int) (int, int) {
	q := c.r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	per = min(per, 100)
	pg, err := strconv.Atoi(q.Get("page"))
	if err != nil || pg <= 0 {
		pg = 1
	}
	last := max(1, (n+per-1)/per)
	link := func(p int, rel string) string {
		u := url.URL{Scheme: "http", Host: c.r.Host, Path: c.r.URL.Path}
		qq := c.r.URL.Query()
		qq.Set("page", strconv.Itoa(p))
		qq.Set("per_page", strconv.Itoa(per))
		u.RawQuery = qq.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if pg > 1 {
		links = append(links, link(min(pg-1, last), "prev"))
	}
	if pg < last {
		links = append(links, link(pg+1, "next"), link(last, "last"))
	}
	if pg > 1 {
		links = append(links, link(1, "first"))
	}
	if len(links) > 0 {
		c.hdr.Set("Link", strings.Join(links, ", "))
	}
	start := min((pg-1)*per, n)
	return start, min(start+per, n)
}

// Routes lists the endpoint templates the fake answers ("GET
// /repos/{owner}/{repo}/pulls/{number}"), in registration order.
func (f *Fake) Routes() []string {
	out := make([]string, 0, len(f.routes))
	for _, r := range f.routes {
		out = append(out, r.tmpl)
	}
	return out
}
