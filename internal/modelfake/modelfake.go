// Package modelfake is a scripted model server for tests. It speaks the Anthropic Messages API and the OpenAI
// Responses API on 127.0.0.1, so the real coding-agent CLIs (claude, codex) can run a conversation a test writes,
// with no network. It is never kinder than the real APIs: requests are validated the way the providers do
// (authentication, required fields, tool calls matched by their results) and refused with the providers' error
// shapes, so a CLI that would fail against the real service fails here too.
//
// A script answers each model request from the conversation so far:
//
//	s := modelfake.Start(t, modelfake.ByTurn(
//		modelfake.Reply{ToolCalls: []modelfake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": p, "content": "hi\n"}}}},
//		modelfake.Reply{Text: `{"status": "READY_FOR_QA"}`, Usage: modelfake.Usage{InputTokens: 1200, OutputTokens: 30}},
//	))
//	// claude: ANTHROPIC_BASE_URL=s.URL; codex: a provider with base_url=s.OpenAIBaseURL()
//
// and s.Requests() holds what the CLI sent, for assertions.
package modelfake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// API names the wire format of a request.
type API string

const (
	// Anthropic is the Messages API (POST /v1/messages).
	Anthropic API = "anthropic"
	// OpenAI is the Responses API (POST /v1/responses).
	OpenAI API = "openai"
)

// Request is one model call as the script sees it: the conversation so far, decoded from either wire format into
// one shape. Tool results are carried by "user" messages in both (the Responses API's function_call_output items
// are folded into one).
type Request struct {
	API      API
	Seq      int       // 1-based, per server, in arrival order; retries count
	Received time.Time // when it arrived, for measuring a client's retry delays
	Model    string
	System   string // the system prompt (Anthropic "system", OpenAI "instructions")
	Messages []Message
	Tools    []string // names of the tools offered, in order
	Stream   bool
	// Header and Body are the request as received, for assertions on details the decoded form leaves out.
	Header http.Header
	Body   json.RawMessage
}

// Message is one turn of the conversation.
type Message struct {
	Role        string // user, assistant, system, developer
	Text        string // the text blocks, joined by "\n"
	Texts       []string
	ToolCalls   []ToolCall
	ToolResults []ToolResult
}

// ToolCall is a tool the model calls. ID is assigned (unique per server) when empty.
type ToolCall struct {
	ID   string
	Name string
	// Input is the call's input: a JSON object for ordinary tools (anything json.Marshal makes into an object, or a
	// json.RawMessage), a plain string for a freeform tool (the Responses API's "custom" tools, such as codex's
	// apply_patch). Decoded requests carry map[string]any or string respectively.
	Input any
}

// ToolResult is what the CLI sent back for a tool call.
type ToolResult struct {
	ID      string
	Text    string
	IsError bool
}

// Usage is what a reply reports it cost. Zero fields are estimated from the request and the reply. InputTokens
// are the uncached input tokens; for the Responses API the reported input_tokens is their sum with the cached
// ones, as OpenAI counts cached tokens inside input_tokens.
type Usage struct {
	InputTokens      int
	OutputTokens     int
	CacheReadTokens  int
	CacheWriteTokens int
}

// Reply is what the script answers one request with.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// StopReason overrides the Anthropic stop_reason (default end_turn, or tool_use when there are tool calls),
	// e.g. "max_tokens".
	StopReason string
	Usage      Usage

	// Status, when non-zero, answers with an HTTP error of the provider's shape instead of a message. ErrorType
	// and ErrorMessage default from the status (529 overloaded_error, 429 rate_limit_error, 500 api_error, …; the
	// OpenAI equivalents for OpenAI requests). RetryAfter is sent as the retry-after header when set (the real
	// APIs send it on 429s; codex does not retry a 429 without it).
	Status       int
	ErrorType    string
	ErrorMessage string
	RetryAfter   string
	// FailMidStream starts a streamed answer, then fails it in the stream: an Anthropic "error" event of type
	// ErrorType (default overloaded_error), or an OpenAI response.failed whose error code is ErrorType (default
	// server_error; codex treats context_length_exceeded, insufficient_quota and rate_limit_exceeded apart). A
	// request without streaming gets the matching HTTP error instead.
	FailMidStream bool

	// Hang holds the request open without a byte of response until the client goes away or the server closes.
	Hang bool
	// HangAfterStart sends the response headers and the stream's first event, then holds it open the same way.
	HangAfterStart bool
}

// Script answers requests. It is called from the server's goroutines, one call per model request (concurrently
// when the CLI sends requests in parallel).
type Script func(Request) Reply

// Server is a running fake. Its URL is the base of both APIs: ANTHROPIC_BASE_URL=URL, and for OpenAI clients
// URL+"/v1" (OpenAIBaseURL).
type Server struct {
	URL string

	t       testing.TB
	ts      *httptest.Server
	script  Script
	closing chan struct{}
	once    sync.Once

	mu        sync.Mutex
	requests  []Request
	unhandled []string
	seq       int
	ids       int
}

// maxBody bounds a request body; the providers refuse larger ones (Anthropic: 32 MB, request_too_large).
const maxBody = 32 << 20

// Start starts a server answering with script; it is closed when the test ends.
func Start(t testing.TB, script Script) *Server {
	t.Helper()
	s := &Server{t: t, script: script, closing: make(chan struct{})}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.ts.URL
	t.Cleanup(s.Close)
	return s
}

// OpenAIBaseURL is the base URL an OpenAI client wants (with the /v1 suffix).
func (s *Server) OpenAIBaseURL() string { return s.URL + "/v1" }

// Close releases hanging requests and stops the server. It is safe to call more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.ts.CloseClientConnections()
		s.ts.Close()
	})
}

// Requests returns the model requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Unhandled returns "METHOD path" of every request the fake has no answer for (answered 404).
func (s *Server) Unhandled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unhandled...)
}

func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s%06d", prefix, s.ids)
}

func (s *Server) record(r Request) Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	r.Seq = s.seq
	r.Received = time.Now()
	s.requests = append(s.requests, r)
	return r
}

func (s *Server) logf(format string, args ...any) {
	// The test may have ended while a client still talks to us; testing panics on a late Logf.
	select {
	case <-s.closing:
		return
	default:
	}
	s.t.Logf("modelfake: "+format, args...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		// codex's built-in OpenAI provider tries the Responses API over a WebSocket first; the fake speaks only
		// HTTP (SSE), so the attempt is refused and recorded for the test to see.
		s.mu.Lock()
		s.unhandled = append(s.unhandled, r.Method+" "+r.URL.RequestURI()+" (websocket upgrade)")
		s.mu.Unlock()
		s.logf("refused a websocket upgrade on %s", r.URL.RequestURI())
		writeOpenAIError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "Invalid method for URL ("+r.Method+" "+path+")", "")
		return
	}
	switch {
	case path == "/v1/messages":
		s.anthropicMessages(w, r)
	case path == "/v1/messages/count_tokens":
		s.anthropicCountTokens(w, r)
	case path == "/v1/responses":
		s.openaiResponses(w, r)
	case path == "/v1/models" || strings.HasPrefix(path, "/v1/models/"):
		s.models(w, r)
	case path == "/api/hello" || path == "/":
		// claude probes the base URL (HEAD /api/hello) to warm the connection; it reads nothing from the answer.
		w.WriteHeader(http.StatusOK)
	default:
		s.mu.Lock()
		s.unhandled = append(s.unhandled, r.Method+" "+r.URL.RequestURI())
		s.mu.Unlock()
		s.logf("unhandled %s %s", r.Method, r.URL.RequestURI())
		if isOpenAIPath(r) {
			writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "", "Invalid URL ("+r.Method+" "+path+")", "")
			return
		}
		writeAnthropicError(w, http.StatusNotFound, "not_found_error", "Not Found", "")
	}
}

// isOpenAIPath tells which provider's error shape an unknown path gets: OpenAI clients authenticate with a
// Bearer token and no anthropic-version header.
func isOpenAIPath(r *http.Request) bool {
	return r.Header.Get("anthropic-version") == "" && strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// readBody reads a JSON request body, bounded by maxBody.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	if len(b) > maxBody {
		return nil, errTooLarge
	}
	return b, nil
}

var errTooLarge = fmt.Errorf("request body over %d bytes", maxBody)

// runScript calls the script, turning a panic into a test error and a 500 so one bad script line does not take
// the server down with an unreadable trace.
func (s *Server) runScript(req Request) (rep Reply) {
	defer func() {
		if p := recover(); p != nil {
			s.t.Errorf("modelfake: script panicked on request #%d: %v", req.Seq, p)
			rep = Reply{Status: http.StatusInternalServerError, ErrorMessage: fmt.Sprintf("script panicked: %v", p)}
		}
	}()
	return s.script(req)
}

// hang blocks until the client goes away or the server closes.
func (s *Server) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.closing:
	}
}

// estimate fills the zero fields of u from the sizes of the request and the reply (about four bytes a token),
// so the CLIs always have usage to report.
func estimate(u Usage, reqBytes int, rep Reply) Usage {
	if u.InputTokens == 0 {
		u.InputTokens = reqBytes/4 + 1
	}
	if u.OutputTokens == 0 {
		n := len(rep.Text)
		for _, c := range rep.ToolCalls {
			b, _ := json.Marshal(c.Input)
			n += len(c.Name) + len(b)
		}
		u.OutputTokens = n/4 + 1
	}
	return u
}

// chunks splits s into pieces of at most size bytes on rune boundaries, and short texts into two, so clients
// always have to put deltas together.
func chunks(s string, size int) []string {
	if s == "" {
		return nil
	}
	if len(s) <= size && len(s) >= 2 {
		size = (len(s) + 1) / 2
	}
	var out []string
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && n > 0 && !runeStart(s[n]) {
			n--
		}
		if n == 0 {
			n = min(size, len(s))
			for n < len(s) && !runeStart(s[n]) {
				n++
			}
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// sse writes server-sent events, flushing each.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}
}

func (e *sse) event(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", name, err)
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		return fmt.Errorf("write %s event: %w", name, err)
	}
	if err := e.rc.Flush(); err != nil {
		return fmt.Errorf("flush %s event: %w", name, err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		s.methodNotAllowed(w, r)
		return
	}
	id := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/v1/models"), "/")
	if r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != "" {
		if !s.anthropicAuth(w, r) {
			return
		}
		// https://docs.anthropic.com/en/api/models-list: a page of ModelInfo objects.
		model := func(id string) map[string]any {
			return map[string]any{"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"}
		}
		if id != "" {
			writeJSON(w, http.StatusOK, model(id))
			return
		}
		ids := []string{"claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"}
		var data []any
		for _, m := range ids {
			data = append(data, model(m))
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": data, "has_more": false, "first_id": ids[0], "last_id": ids[len(ids)-1]})
		return
	}
	if !s.openaiAuth(w, r) {
		return
	}
	model := func(id string) map[string]any {
		return map[string]any{"id": id, "object": "model", "created": 1735689600, "owned_by": "openai"}
	}
	if id != "" {
		writeJSON(w, http.StatusOK, model(id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{model("gpt-5"), model("gpt-5-codex")}})
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	s.logf("method %s not allowed on %s", r.Method, r.URL.Path)
	if isOpenAIPath(r) {
		writeOpenAIError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "Invalid method for URL ("+r.Method+" "+r.URL.Path+")", "")
		return
	}
	writeAnthropicError(w, http.StatusMethodNotAllowed, "invalid_request_error", "Method Not Allowed", "")
}

// now is the clock for created_at fields; a var so the wire tests can pin it.
var now = time.Now
