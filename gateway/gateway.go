// Package gateway is bazinga's metering gateway for model provider APIs. Agent CLIs talk to it instead of the
// provider: it holds the real provider keys and puts them on the requests it forwards (the agent holds only a
// short-lived gateway token, bound to one step and worth nothing elsewhere), checks the step's and session's cost
// limits before each request, streams the answers through as they come, and reads the usage from every answer —
// so what a session costs is what the gateway metered, not what the agent says it spent.
//
// Paths are /anthropic/… (the Messages API; ANTHROPIC_BASE_URL=<base>/anthropic), /openai/v1/… (Responses and
// Chat Completions; OPENAI_BASE_URL=<base>/openai/v1) and /gemini/… (generateContent and streamGenerateContent;
// GOOGLE_GEMINI_BASE_URL=<base>/gemini), each forwarded to its configured upstream: the provider, or an
// operator's own gateway (LiteLLM, a cloud AI gateway).
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// UpstreamConfig is where one provider's requests go and the key they carry there.
type UpstreamConfig struct {
	// BaseURL is the API's base: https://api.anthropic.com, https://api.openai.com (the /v1 is in the request
	// paths), https://generativelanguage.googleapis.com, or an operator's gateway speaking the same API.
	BaseURL string
	// Key is the provider key put on forwarded requests (x-api-key, Authorization: Bearer, x-goog-api-key).
	Key string
}

// Default upstream base URLs.
const (
	DefaultAnthropicURL = "https://api.anthropic.com"
	DefaultOpenAIURL    = "https://api.openai.com"
	DefaultGeminiURL    = "https://generativelanguage.googleapis.com"
)

// Config configures a Gateway.
type Config struct {
	Anthropic, OpenAI, Gemini UpstreamConfig
	// Signer verifies the gateway tokens clients present (required).
	Signer *Signer
	// Ledger records what was metered (default: a new MemLedger).
	Ledger Ledger
	// Revocations, when set, is asked on each request whether the token's step has ended (bazinga serve: the
	// steps the orchestrator saw end, on every replica). CloseScope serves the same in one process.
	Revocations Revocations
	// Prices prices it (default DefaultPrices()).
	Prices *Prices
	// Transport carries forwarded requests (default: a clone of http.DefaultTransport keeping up to
	// upstreamIdleConns idle connections a host).
	Transport http.RoundTripper
	Logger    *slog.Logger
	Now       func() time.Time
	// RaiseHint is the end of a budget refusal's message, saying how to raise the limit.
	RaiseHint string
}

// DefaultRaiseHint says how a limit is raised.
const DefaultRaiseHint = "raise limits.step_cost_usd or limits.session_cost_usd in .github/bazinga.yml (or the session's config), then /bazinga resume"

// Gateway is the http.Handler. Mount it under a prefix with http.StripPrefix.
type Gateway struct {
	cfg       Config
	upstreams map[Upstream]*url.URL
	keys      map[Upstream]string
	ledger    Ledger
	prices    *Prices
	transport http.RoundTripper
	log       *slog.Logger
	now       func() time.Time

	mu       sync.Mutex
	closed   map[Scope]bool
	inflight map[Scope]int
	settled  *sync.Cond // signalled when a scope's in-flight count drops
}

// New validates cfg and returns a gateway. A provider without a key is not served (its paths answer 404): a
// gateway forwards nothing unauthenticated.
func New(cfg Config) (*Gateway, error) {
	if cfg.Signer == nil {
		return nil, errors.New("gateway: a token signer is required")
	}
	g := &Gateway{cfg: cfg, upstreams: map[Upstream]*url.URL{}, keys: map[Upstream]string{}, ledger: cfg.Ledger,
		prices: cfg.Prices, transport: cfg.Transport, log: cfg.Logger, now: cfg.Now}
	for _, u := range []struct {
		up  Upstream
		c   UpstreamConfig
		def string
	}{{UpstreamAnthropic, cfg.Anthropic, DefaultAnthropicURL}, {UpstreamOpenAI, cfg.OpenAI, DefaultOpenAIURL}, {UpstreamGemini, cfg.Gemini, DefaultGeminiURL}} {
		if strings.TrimSpace(u.c.Key) == "" {
			continue
		}
		base := u.c.BaseURL
		if base == "" {
			base = u.def
		}
		pu, err := url.Parse(strings.TrimRight(base, "/"))
		if err != nil || pu.Host == "" || (pu.Scheme != "https" && pu.Scheme != "http") || pu.RawQuery != "" {
			return nil, fmt.Errorf("gateway: %s upstream %q is not an http(s) base URL", u.up, base)
		}
		g.upstreams[u.up], g.keys[u.up] = pu, strings.TrimSpace(u.c.Key)
	}
	if len(g.upstreams) == 0 {
		return nil, errors.New("gateway: no provider key is configured")
	}
	if g.ledger == nil {
		g.ledger = NewMemLedger()
	}
	if g.prices == nil {
		g.prices = DefaultPrices()
	}
	if g.transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Every stream in flight holds its own upstream connection (over HTTP/1.1), and the agents of a session
		// stream concurrently to one or two hosts. The default keeps 2 idle connections a host, so after a burst of
		// streams all but 2 would close and the next burst would dial (and TLS-handshake) again.
		t.MaxIdleConns, t.MaxIdleConnsPerHost = upstreamIdleConns, upstreamIdleConns
		g.transport = t
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.cfg.RaiseHint == "" {
		g.cfg.RaiseHint = DefaultRaiseHint
	}
	g.closed, g.inflight = map[Scope]bool{}, map[Scope]int{}
	g.settled = sync.NewCond(&g.mu)
	return g, nil
}

// CloseScope refuses every further request of a scope's tokens: called when its step ended, so nothing the agent
// left running spends in the step's name after its usage was read.
func (g *Gateway) CloseScope(s Scope) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed[s] = true
}

// Settle waits until the scope's requests in flight have been recorded (the CLI exited, its connections are
// closing), or ctx ends.
func (g *Gateway) Settle(ctx context.Context, s Scope) error {
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.settled.Broadcast()
	})
	defer stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.inflight[s] > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("gateway: %d request(s) of step %s still in flight: %w", g.inflight[s], s.Step, err)
		}
		g.settled.Wait()
	}
	return nil
}

// enter counts a request of s in flight; false when the scope is closed.
func (g *Gateway) enter(s Scope) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed[s] {
		return false
	}
	g.inflight[s]++
	return true
}

func (g *Gateway) leave(s Scope) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight[s]--; g.inflight[s] <= 0 {
		delete(g.inflight, s)
	}
	g.settled.Broadcast()
}

// Ledger is the gateway's ledger.
func (g *Gateway) Ledger() Ledger { return g.ledger }

// Prices is the gateway's price table.
func (g *Gateway) Prices() *Prices { return g.prices }

// Serves reports whether the gateway has a key for up.
func (g *Gateway) Serves(up Upstream) bool { return g.upstreams[up] != nil }

// maxRequestBody bounds a request body (the providers' own limit is 32 MB for Anthropic, less for the others).
const maxRequestBody = 32 << 20

// upstreamIdleConns bounds the idle upstream connections kept, per host and in all (the 3 providers' hosts):
// enough for the streams of a busy gateway to reuse their connections from one request to the next.
const upstreamIdleConns = 256

// route is what a request path is.
type route struct {
	up       Upstream
	provider Provider // ProviderNone: forwarded unmetered (a free endpoint: model lists, token counts)
	path     string   // the path forwarded upstream
	model    string   // Gemini: the model, from the path
	stream   bool     // Gemini: streamGenerateContent
}

// classify maps a path (below the gateway's mount) to its route; ok is false for paths the gateway does not
// forward. Only the endpoints it can meter, and the free ones the CLIs call, are forwarded: the provider key must
// not buy anything unmetered (batches, files, background responses fetched later).
func classify(method, path string) (route, bool) {
	first, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	rest = "/" + rest
	switch first {
	case "anthropic":
		r := route{up: UpstreamAnthropic, path: rest}
		switch {
		case method == http.MethodPost && rest == "/v1/messages":
			r.provider = Anthropic
			return r, true
		case method == http.MethodPost && rest == "/v1/messages/count_tokens":
			return r, true // free: https://docs.anthropic.com/en/docs/build-with-claude/token-counting
		case method == http.MethodGet && (rest == "/v1/models" || strings.HasPrefix(rest, "/v1/models/")):
			return r, true
		}
	case "openai":
		r := route{up: UpstreamOpenAI, path: rest}
		switch {
		case method == http.MethodPost && rest == "/v1/responses":
			r.provider = OpenAIResponses
			return r, true
		case method == http.MethodPost && rest == "/v1/chat/completions":
			r.provider = OpenAIChat
			return r, true
		case method == http.MethodGet && (rest == "/v1/models" || strings.HasPrefix(rest, "/v1/models/")):
			return r, true
		}
	case "gemini":
		r := route{up: UpstreamGemini, path: rest}
		for _, ver := range []string{"/v1beta/models/", "/v1/models/"} {
			tail, ok := strings.CutPrefix(rest, ver)
			if !ok {
				continue
			}
			model, verb, hasVerb := strings.Cut(tail, ":")
			switch {
			case method == http.MethodPost && hasVerb && (verb == "generateContent" || verb == "streamGenerateContent") && model != "" && !strings.Contains(model, "/"):
				r.provider, r.model, r.stream = Gemini, model, verb == "streamGenerateContent"
				return r, true
			case method == http.MethodPost && hasVerb && verb == "countTokens":
				return r, true // free: https://ai.google.dev/api/tokens
			case method == http.MethodGet && !hasVerb:
				return r, true
			}
		}
		if method == http.MethodGet && (rest == "/v1beta/models" || rest == "/v1/models") {
			return r, true
		}
	}
	return route{up: upstreamOf(first)}, false
}

func upstreamOf(s string) Upstream {
	switch s {
	case "openai":
		return UpstreamOpenAI
	case "gemini":
		return UpstreamGemini
	}
	return UpstreamAnthropic
}

// clientToken is the credential the client sent, wherever its SDK puts it: x-api-key (Anthropic),
// Authorization: Bearer (OpenAI, Anthropic auth tokens), x-goog-api-key or ?key= (Gemini).
func clientToken(r *http.Request) string {
	if v := strings.TrimSpace(r.Header.Get("x-api-key")); v != "" {
		return v
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	if v := strings.TrimSpace(r.Header.Get("x-goog-api-key")); v != "" {
		return v
	}
	return strings.TrimSpace(r.URL.Query().Get("key"))
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead || (r.Method == http.MethodGet && (r.URL.Path == "/" || r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/api/hello"))) {
		// Connection warm-up probes (claude sends HEAD to its base URL): answered here, nothing forwarded.
		w.WriteHeader(http.StatusOK)
		return
	}
	rt, ok := classify(r.Method, r.URL.Path)
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		// codex tries the Responses API over a WebSocket first and falls back to HTTP; a WebSocket's frames
		// would need their own metering, so the gateway speaks HTTP only.
		writeError(w, rt.up, errNotFound, "the bazinga gateway speaks HTTP only; no WebSocket")
		return
	}
	claims, err := g.cfg.Signer.Verify(clientToken(r))
	if err != nil {
		// Checked before the path, so the gateway's paths tell nothing to whoever has no token.
		w.Header().Set("WWW-Authenticate", `Bearer realm="bazinga-gateway"`)
		writeError(w, rt.up, errAuth, "bazinga gateway: "+err.Error()+"; a step's gateway token is in its API key variable")
		return
	}
	if g.cfg.Revocations != nil {
		ended, err := g.cfg.Revocations.Revoked(r.Context(), claims.Scope)
		if err != nil {
			g.log.Error("gateway revocation check failed", "repository", claims.Scope.Repository, "step", claims.Scope.Step, "err", err)
			writeError(w, rt.up, errUpstream, "bazinga gateway: cannot check whether step "+claims.Scope.Step+" has ended; try again")
			return
		}
		if ended {
			writeError(w, rt.up, errAuth, "bazinga gateway: step "+claims.Scope.Step+" has ended; its token is no longer accepted")
			return
		}
	}
	if !ok {
		writeError(w, rt.up, errNotFound, fmt.Sprintf("bazinga gateway: %s %s is not forwarded (only the endpoints it can meter are)", r.Method, r.URL.Path))
		return
	}
	if g.upstreams[rt.up] == nil {
		writeError(w, rt.up, errNotFound, "bazinga gateway: no "+rt.up.String()+" key is configured")
		return
	}
	if !g.enter(claims.Scope) {
		writeError(w, rt.up, errAuth, "bazinga gateway: step "+claims.Scope.Step+" has ended; its token is no longer accepted")
		return
	}
	defer g.leave(claims.Scope)
	g.forward(w, r, rt, claims)
}

// requestInfo is what the gateway reads from a request body.
type requestInfo struct {
	model  string
	stream bool
	body   []byte // possibly rewritten
}

// inspect reads the model and streaming flag, and refuses what cannot be metered. Chat Completions streams that
// did not ask for usage get stream_options.include_usage added: without it the stream carries no usage at all
// (https://platform.openai.com/docs/api-reference/chat/create#chat-create-stream_options), and the client sees
// one more chunk with empty choices, which the API documents for every such stream.
func inspect(rt route, body []byte) (requestInfo, error) {
	info := requestInfo{model: rt.model, stream: rt.stream, body: body}
	if rt.provider == ProviderNone || rt.provider == Gemini {
		return info, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return info, fmt.Errorf("the request body is not a JSON object: %w", err)
	}
	if v, ok := obj["model"]; ok {
		if err := json.Unmarshal(v, &info.model); err != nil {
			return info, errors.New("model: not a string")
		}
	}
	if v, ok := obj["stream"]; ok {
		if err := json.Unmarshal(v, &info.stream); err != nil {
			return info, errors.New("stream: not a boolean")
		}
	}
	if rt.provider == OpenAIResponses {
		var bg bool
		if v, ok := obj["background"]; ok && json.Unmarshal(v, &bg) == nil && bg {
			return info, errors.New("background responses are not forwarded: their usage arrives in a later call the gateway cannot tie to this one")
		}
	}
	if rt.provider == OpenAIChat && info.stream {
		var so map[string]json.RawMessage
		if v, ok := obj["stream_options"]; ok && string(v) != "null" {
			if err := json.Unmarshal(v, &so); err != nil {
				return info, errors.New("stream_options: not an object")
			}
		}
		if so == nil {
			so = map[string]json.RawMessage{}
		}
		if string(so["include_usage"]) != "true" {
			so["include_usage"] = json.RawMessage("true")
			b, err := json.Marshal(so)
			if err != nil {
				return info, err
			}
			obj["stream_options"] = b
			if info.body, err = json.Marshal(obj); err != nil {
				return info, err
			}
		}
	}
	return info, nil
}

// hopHeaders are not forwarded (RFC 9110 section 7.6.1), nor are the client's credentials.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade"}

var credentialHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Cookie", "Anthropic-Admin-Api-Key", "Openai-Organization", "Openai-Project"}

func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, rt route, claims *Claims) {
	ctx := r.Context()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeError(w, rt.up, errBadReq, fmt.Sprintf("bazinga gateway: request body unreadable or over %d bytes", maxRequestBody))
		return
	}
	info, err := inspect(rt, body)
	if err != nil {
		writeError(w, rt.up, errBadReq, "bazinga gateway: "+err.Error())
		return
	}
	scope := claims.Scope
	if rt.provider != ProviderNone {
		if msg, over := g.overBudget(ctx, scope, claims.Limits); over {
			g.record(ctx, Entry{Scope: scope, Time: g.now(), Provider: rt.provider, Model: info.model, Outcome: RefusedBudget,
				Status: budgetStatus(rt.up), Reason: msg, Priced: true})
			g.log.Warn("gateway refused a request over budget", "repository", scope.Repository, "session", scope.Session, "step", scope.Step, "reason", msg)
			writeError(w, rt.up, errBudget, "bazinga gateway: "+msg+"; "+g.cfg.RaiseHint)
			return
		}
	}

	target := *g.upstreams[rt.up]
	target.Path = strings.TrimRight(target.Path, "/") + rt.path
	q := r.URL.Query()
	q.Del("key")
	target.RawQuery = q.Encode()
	out, err := http.NewRequestWithContext(ctx, r.Method, target.String(), bytes.NewReader(info.body))
	if err != nil {
		writeError(w, rt.up, errBadReq, "bazinga gateway: "+err.Error())
		return
	}
	for k, vs := range r.Header {
		out.Header[k] = append([]string(nil), vs...)
	}
	for _, h := range append(hopHeaders, credentialHeaders...) {
		out.Header.Del(h)
	}
	// The transport asks for gzip itself and decompresses, so the meter always reads plain text.
	out.Header.Del("Accept-Encoding")
	out.ContentLength = int64(len(info.body))
	switch rt.up {
	case UpstreamAnthropic:
		out.Header.Set("x-api-key", g.keys[rt.up])
	case UpstreamOpenAI:
		out.Header.Set("Authorization", "Bearer "+g.keys[rt.up])
	case UpstreamGemini:
		out.Header.Set("x-goog-api-key", g.keys[rt.up])
	}

	resp, err := g.transport.RoundTrip(out)
	if err != nil {
		entry := Entry{Scope: scope, Time: g.now(), Provider: rt.provider, Model: info.model, Outcome: UpstreamFailed,
			Status: http.StatusBadGateway, Reason: err.Error()}
		if rt.provider != ProviderNone && !isDialError(err) {
			// The request may have reached the provider, which may bill its input: charged by the estimate.
			entry.Tokens.Input, entry.Estimated = EstimateInput(int64(len(info.body))), true
		}
		g.price(&entry)
		g.record(context.WithoutCancel(ctx), entry)
		g.log.Warn("gateway upstream failed", "upstream", rt.up.String(), "err", err)
		writeError(w, rt.up, errUpstream, "bazinga gateway: the "+rt.up.String()+" upstream did not answer")
		return
	}
	defer resp.Body.Close()

	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	stream := strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream")
	w.WriteHeader(resp.StatusCode)

	m := newMeter(rt.provider, stream)
	copyErr := pump(w, resp.Body, m, stream)
	m.Close()
	if rt.provider == ProviderNone {
		return
	}
	ok2xx := resp.StatusCode >= 200 && resp.StatusCode < 300
	rd := m.reading(int64(len(info.body)), ok2xx)
	entry := Entry{Scope: scope, Time: g.now(), Provider: rt.provider, Model: rd.Model, Outcome: Forwarded,
		Status: resp.StatusCode, Tokens: rd.Tokens, Estimated: rd.Estimated}
	if entry.Model == "" {
		entry.Model = info.model
	}
	if !ok2xx {
		entry.Outcome, entry.Reason = UpstreamFailed, resp.Status
	}
	if copyErr != nil {
		entry.Reason = "answer cut off: " + copyErr.Error()
	}
	g.price(&entry)
	// Recorded even when the client went away: what was used is spent.
	g.record(context.WithoutCancel(ctx), entry)
}

// pump copies the answer to the client as it arrives, feeding the meter, flushing each read of a stream so a
// chunk is never held back.
func pump(w http.ResponseWriter, body io.Reader, m *meter, stream bool) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	observe := pumpObserver.Load()
	for {
		n, err := body.Read(buf)
		if n > 0 {
			var t0 time.Time
			if observe != nil {
				t0 = time.Now()
			}
			_, _ = m.Write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				return fmt.Errorf("write to client: %w", werr)
			}
			if stream {
				if ferr := rc.Flush(); ferr != nil {
					return fmt.Errorf("flush to client: %w", ferr)
				}
			}
			if observe != nil {
				(*observe)(n, time.Since(t0))
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read upstream: %w", err)
		}
	}
}

// pumpObserver, when set (benchmarks only: export_test.go), is told the time pump spent on each read it passed on
// (metering, the write and the flush to the client): the gateway's own work per chunk, apart from the machine's
// scheduling before the read returned.
var pumpObserver atomic.Pointer[func(n int, d time.Duration)]

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func budgetStatus(up Upstream) int {
	switch up {
	case UpstreamOpenAI:
		return http.StatusTooManyRequests
	case UpstreamGemini:
		return http.StatusForbidden
	}
	return http.StatusPaymentRequired
}

// price sets an entry's cost from the table: an unknown model's tokens are charged at the table's highest prices
// (ChargedPicos) and named, never counted free.
func (g *Gateway) price(e *Entry) {
	if p, ok := g.prices.Lookup(e.Model); ok {
		e.Priced, e.CostPicos, e.ChargedPicos = true, p.Cost(e.Tokens), p.Cost(e.Tokens)
		return
	}
	e.Priced, e.CostPicos, e.ChargedPicos = false, 0, g.prices.Ceiling().Cost(e.Tokens)
}

// overBudget checks the step's and the session's spend against their limits before a request is forwarded.
func (g *Gateway) overBudget(ctx context.Context, s Scope, l Limits) (string, bool) {
	if l.StepMicros > 0 {
		sp, err := g.ledger.StepSpend(ctx, s)
		if err != nil {
			return "the ledger cannot be read: " + err.Error(), true
		}
		if sp.ChargedPicos >= satMul(l.StepMicros, 1_000_000) {
			return fmt.Sprintf("step %s has spent %s, its limit (limits.step_cost_usd) is %s", s.Step,
				pipeline.FormatUSD(sp.ChargedMicros()), pipeline.FormatUSD(l.StepMicros)), true
		}
	}
	if l.SessionMicros > 0 {
		sp, err := g.ledger.SessionSpend(ctx, s.SessionKey())
		if err != nil {
			return "the ledger cannot be read: " + err.Error(), true
		}
		if sp.ChargedPicos >= satMul(l.SessionMicros, 1_000_000) {
			return fmt.Sprintf("session %s has spent %s, its limit (limits.session_cost_usd) is %s", s.Session,
				pipeline.FormatUSD(sp.ChargedMicros()), pipeline.FormatUSD(l.SessionMicros)), true
		}
	}
	return "", false
}

func (g *Gateway) record(ctx context.Context, e Entry) {
	if err := g.ledger.Record(ctx, e); err != nil {
		g.log.Error("gateway ledger write failed", "repository", e.Scope.Repository, "session", e.Scope.Session, "step", e.Scope.Step, "err", err)
	}
}
