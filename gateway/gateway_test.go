package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/internal/modelfake"
)

const realKey = "sk-real-provider-key-never-in-a-job"

var scope = gateway.Scope{Repository: "octo/repo", Session: "s1", Step: "dev-1"}

type env struct {
	t      *testing.T
	gw     *gateway.Gateway
	srv    *httptest.Server
	signer *gateway.Signer
	ledger *gateway.MemLedger
	token  string
}

// start runs a gateway whose three upstreams are base, in front of a test server.
func start(t *testing.T, base string, limits gateway.Limits) *env {
	t.Helper()
	signer, err := gateway.NewSigner(nil)
	require.NoError(t, err)
	led := gateway.NewMemLedger()
	up := gateway.UpstreamConfig{BaseURL: base, Key: realKey}
	gw, err := gateway.New(gateway.Config{Anthropic: up, OpenAI: up, Gemini: up, Signer: signer, Ledger: led})
	require.NoError(t, err)
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	tok, _, err := signer.Mint(scope, limits, 0)
	require.NoError(t, err)
	return &env{t: t, gw: gw, srv: srv, signer: signer, ledger: led, token: tok}
}

func (e *env) stepSpend() gateway.Spend {
	sp, err := e.ledger.StepSpend(context.Background(), scope)
	require.NoError(e.t, err)
	return sp
}

func (e *env) post(path string, hdr map[string]string, body string) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp, string(b)
}

func anthropicBody(model string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":1024,"stream":%v,"messages":[{"role":"user","content":"hello"}]}`, model, stream)
}

func cost(t *testing.T, model string, tok gateway.Tokens) int64 {
	p, ok := gateway.DefaultPrices().Lookup(model)
	require.True(t, ok, model)
	return p.Cost(tok)
}

// The Anthropic Messages API, streamed and not, through the scripted server: the upstream sees the real key and
// never the gateway token, and the ledger holds exactly the usage the answers reported.
func TestAnthropicMetered(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			fake := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "hi there",
				Usage: modelfake.Usage{InputTokens: 1200, OutputTokens: 30, CacheReadTokens: 4000, CacheWriteTokens: 700}}))
			e := start(t, fake.URL, gateway.Limits{})
			resp, body := e.post("/anthropic/v1/messages", map[string]string{"x-api-key": e.token, "anthropic-version": "2023-06-01"},
				anthropicBody("claude-sonnet-4-5", stream))
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			assert.Contains(t, body, "hi")

			reqs := fake.Requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, realKey, reqs[0].Header.Get("x-api-key"))
			assert.NotContains(t, fmt.Sprint(reqs[0].Header), e.token)

			want := gateway.Tokens{Input: 1200, Output: 30, CacheRead: 4000, CacheWrite: 700}
			sp := e.stepSpend()
			assert.Equal(t, 1, sp.Requests)
			assert.Equal(t, want, sp.Tokens)
			assert.False(t, sp.Estimated)
			assert.Equal(t, cost(t, "claude-sonnet-4-5", want), sp.CostPicos)
			// 1200×3 + 30×15 + 4000×0.30 + 700×3.75 = 3600+450+1200+2625 = 7875 µ$.
			assert.Equal(t, int64(7875), sp.CostMicros())
		})
	}
}

// The OpenAI Responses API counts cached tokens inside input_tokens; the ledger takes them out.
func TestOpenAIResponsesMetered(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			fake := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "done",
				Usage: modelfake.Usage{InputTokens: 900, OutputTokens: 44, CacheReadTokens: 2048}}))
			e := start(t, fake.URL, gateway.Limits{})
			resp, body := e.post("/openai/v1/responses", map[string]string{"Authorization": "Bearer " + e.token},
				fmt.Sprintf(`{"model":"gpt-5-codex","stream":%v,"input":"hello"}`, stream))
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			reqs := fake.Requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, "Bearer "+realKey, reqs[0].Header.Get("Authorization"))
			want := gateway.Tokens{Input: 900, Output: 44, CacheRead: 2048}
			sp := e.stepSpend()
			assert.Equal(t, want, sp.Tokens)
			assert.Equal(t, cost(t, "gpt-5-codex", want), sp.CostPicos)
			assert.False(t, sp.Estimated)
		})
	}
}

// upstream is a hand-written provider for the formats the scripted server does not speak; it records what it got.
type upstream struct {
	mu      sync.Mutex
	headers []http.Header
	bodies  []string
	urls    []string
}

func (u *upstream) serve(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) string {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.bodies = append(u.bodies, string(b))
		u.urls = append(u.urls, r.URL.String())
		u.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

func sseWrite(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, ev := range events {
		fmt.Fprintf(w, "data: %s\n\n", ev)
		w.(http.Flusher).Flush()
	}
}

// Chat Completions: a stream that did not ask for usage is made to (stream_options.include_usage), and the usage
// chunk is read; prompt_tokens include the cached ones.
func TestChatCompletionsMetered(t *testing.T) {
	var up upstream
	base := up.serve(t, func(w http.ResponseWriter, r *http.Request) {
		sseWrite(w,
			`{"id":"c1","object":"chat.completion.chunk","model":"gpt-4.1-2025-04-14","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`,
			`{"id":"c1","object":"chat.completion.chunk","model":"gpt-4.1-2025-04-14","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
			`{"id":"c1","object":"chat.completion.chunk","model":"gpt-4.1-2025-04-14","choices":[],"usage":{"prompt_tokens":1500,"completion_tokens":12,"total_tokens":1512,"prompt_tokens_details":{"cached_tokens":1024}}}`,
			`[DONE]`)
	})
	e := start(t, base, gateway.Limits{})
	resp, body := e.post("/openai/v1/chat/completions", map[string]string{"Authorization": "Bearer " + e.token},
		`{"model":"gpt-4.1","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, "[DONE]")
	require.Len(t, up.bodies, 1)
	var sent map[string]any
	require.NoError(t, json.Unmarshal([]byte(up.bodies[0]), &sent))
	assert.Equal(t, map[string]any{"include_usage": true}, sent["stream_options"])
	assert.Equal(t, "Bearer "+realKey, up.headers[0].Get("Authorization"))

	want := gateway.Tokens{Input: 476, Output: 12, CacheRead: 1024}
	sp := e.stepSpend()
	assert.Equal(t, want, sp.Tokens)
	assert.Equal(t, cost(t, "gpt-4.1", want), sp.CostPicos)
}

// Gemini: streamGenerateContent with alt=sse, without it (a JSON array), and generateContent. The key the client
// sent in ?key= is the gateway token; upstream gets the real key in x-goog-api-key and no key parameter.
func TestGeminiMetered(t *testing.T) {
	chunk := func(text string, prompt, cand, thoughts, cached int, finish string) string {
		fr := ""
		if finish != "" {
			fr = fmt.Sprintf(`,"finishReason":%q`, finish)
		}
		return fmt.Sprintf(`{"candidates":[{"content":{"parts":[{"text":%q}],"role":"model"}%s}],"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"thoughtsTokenCount":%d,"cachedContentTokenCount":%d,"totalTokenCount":%d},"modelVersion":"gemini-2.5-pro"}`,
			text, fr, prompt, cand, thoughts, cached, prompt+cand+thoughts)
	}
	var up upstream
	base := up.serve(t, func(w http.ResponseWriter, r *http.Request) {
		c1, c2 := chunk("Hel", 800, 2, 100, 300, ""), chunk("lo", 800, 9, 100, 300, "STOP")
		switch {
		case strings.Contains(r.URL.Path, ":streamGenerateContent") && r.URL.Query().Get("alt") == "sse":
			sseWrite(w, c1, c2)
		case strings.Contains(r.URL.Path, ":streamGenerateContent"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, "[%s\n,\r\n%s]", c1, c2)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, c2)
		}
	})
	want := gateway.Tokens{Input: 500, Output: 109, CacheRead: 300}
	for _, path := range []string{
		"/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
		"/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent",
		"/gemini/v1beta/models/gemini-2.5-pro:generateContent",
	} {
		t.Run(path, func(t *testing.T) {
			e := start(t, base, gateway.Limits{})
			sep := "?"
			if strings.Contains(path, "?") {
				sep = "&"
			}
			resp, body := e.post(path+sep+"key="+e.token, nil, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			up.mu.Lock()
			last := len(up.urls) - 1
			assert.NotContains(t, up.urls[last], "key=")
			assert.Equal(t, realKey, up.headers[last].Get("x-goog-api-key"))
			up.mu.Unlock()
			sp := e.stepSpend()
			assert.Equal(t, want, sp.Tokens)
			assert.Equal(t, cost(t, "gemini-2.5-pro", want), sp.CostPicos)
			assert.False(t, sp.Estimated)
		})
	}
}

// A stream is passed on chunk by chunk: the client reads the first event while the upstream still holds the rest.
func TestStreamNotBuffered(t *testing.T) {
	release := make(chan struct{})
	var up upstream
	base := up.serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-haiku-4-5\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n")
	})
	e := start(t, base, gateway.Limits{})
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/anthropic/v1/messages", strings.NewReader(anthropicBody("claude-haiku-4-5", true)))
	req.Header.Set("x-api-key", e.token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	got := ""
	deadline := time.After(10 * time.Second)
	for !strings.Contains(got, "\n\n") {
		n, err := resp.Body.Read(buf)
		require.NoError(t, err)
		got += string(buf[:n])
		select {
		case <-deadline:
			t.Fatal("the first event did not come through before the upstream finished")
		default:
		}
	}
	assert.Contains(t, got, "message_start")
	close(release)
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(rest), "message_delta")
	require.Eventually(t, func() bool { return e.stepSpend().Requests == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, gateway.Tokens{Input: 10, Output: 7}, e.stepSpend().Tokens)
}

// Answers cut off midway are charged what was seen, and what was not reported is charged by the conservative
// estimate: input by the request's size, output by the bytes received.
func TestCutOffAnswers(t *testing.T) {
	t.Run("client leaves after message_start", func(t *testing.T) {
		fake := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "x", HangAfterStart: true,
			Usage: modelfake.Usage{InputTokens: 5000, OutputTokens: 400}}))
		e := start(t, fake.URL, gateway.Limits{})
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/anthropic/v1/messages", strings.NewReader(anthropicBody("claude-sonnet-4-5", true)))
		req.Header.Set("x-api-key", e.token)
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		buf := make([]byte, 8192)
		n, _ := resp.Body.Read(buf)
		require.Contains(t, string(buf[:n]), "message_start")
		cancel()
		resp.Body.Close()
		require.Eventually(t, func() bool { return e.stepSpend().Requests == 1 }, 5*time.Second, 10*time.Millisecond)
		sp := e.stepSpend()
		assert.True(t, sp.Estimated)
		assert.Equal(t, int64(5000), sp.Tokens.Input, "input reported by message_start is exact")
		assert.Equal(t, int64((n+3)/4), sp.Tokens.Output, "output not reported: bytes received / 4")
	})
	t.Run("upstream drops the stream before any usage", func(t *testing.T) {
		var up upstream
		base := up.serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, "event: ping\ndata: {\"type\":\"ping\"}\n\n")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection is cut
		})
		e := start(t, base, gateway.Limits{})
		body := anthropicBody("claude-sonnet-4-5", true)
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/anthropic/v1/messages", strings.NewReader(body))
		req.Header.Set("x-api-key", e.token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Eventually(t, func() bool { return e.stepSpend().Requests == 1 }, 5*time.Second, 10*time.Millisecond)
		sp := e.stepSpend()
		assert.True(t, sp.Estimated)
		assert.Equal(t, gateway.EstimateInput(int64(len(body))), sp.Tokens.Input)
		assert.Positive(t, sp.Tokens.Output)
		assert.Positive(t, sp.CostPicos)
	})
	t.Run("upstream error answers cost nothing", func(t *testing.T) {
		fake := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Status: 529}))
		e := start(t, fake.URL, gateway.Limits{})
		resp, body := e.post("/anthropic/v1/messages", map[string]string{"x-api-key": e.token, "anthropic-version": "2023-06-01"}, anthropicBody("claude-sonnet-4-5", true))
		assert.Equal(t, 529, resp.StatusCode, body)
		assert.Contains(t, body, "overloaded_error")
		sp := e.stepSpend()
		assert.Equal(t, gateway.Tokens{}, sp.Tokens)
		assert.Equal(t, 1, sp.Requests)
	})
}

// Over budget, the request is not forwarded: the client gets its provider's error shape naming the limit, and the
// ledger records the refusal. The step limit and the session limit are both checked.
func TestBudgetRefusal(t *testing.T) {
	fake := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "ok", Usage: modelfake.Usage{InputTokens: 1000, OutputTokens: 100}}))
	// One answer costs 1000×3 + 100×15 = 4500 µ$; the step may spend 5000.
	e := start(t, fake.URL, gateway.Limits{StepMicros: 5000, SessionMicros: 1_000_000})
	hdr := map[string]string{"x-api-key": e.token, "anthropic-version": "2023-06-01"}
	for i := range 2 {
		resp, body := e.post("/anthropic/v1/messages", hdr, anthropicBody("claude-sonnet-4-5", true))
		require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i, body)
	}
	resp, body := e.post("/anthropic/v1/messages", hdr, anthropicBody("claude-sonnet-4-5", true))
	assert.Equal(t, http.StatusPaymentRequired, resp.StatusCode)
	var ae struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &ae), body)
	assert.Equal(t, "error", ae.Type)
	assert.Equal(t, "billing_error", ae.Error.Type)
	assert.Contains(t, ae.Error.Message, "limits.step_cost_usd")
	assert.Contains(t, ae.Error.Message, "$0.0090")
	assert.Len(t, fake.Requests(), 2, "the refused request never reached the upstream")
	sp := e.stepSpend()
	assert.Equal(t, 2, sp.Requests)
	assert.Equal(t, 1, sp.Refused)

	// Another step of the same session has its own step budget but shares the session's.
	other := gateway.Scope{Repository: scope.Repository, Session: scope.Session, Step: "qa-1"}
	tok, _, err := e.signer.Mint(other, gateway.Limits{StepMicros: 1_000_000, SessionMicros: 9000}, 0)
	require.NoError(t, err)
	resp, body = e.post("/openai/v1/responses", map[string]string{"Authorization": "Bearer " + tok}, `{"model":"gpt-5","input":"x"}`)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Contains(t, body, `"insufficient_quota"`)
	assert.Contains(t, body, "limits.session_cost_usd")
}

func TestAuthRefused(t *testing.T) {
	fake := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "ok"}))
	e := start(t, fake.URL, gateway.Limits{})
	otherSigner, err := gateway.NewSigner(nil)
	require.NoError(t, err)
	foreign, _, err := otherSigner.Mint(scope, gateway.Limits{}, 0)
	require.NoError(t, err)
	cases := []struct {
		name, path string
		hdr        map[string]string
		want       string
	}{
		{"no token", "/anthropic/v1/messages", map[string]string{"anthropic-version": "2023-06-01"}, `"authentication_error"`},
		{"the real key itself is not a gateway token", "/anthropic/v1/messages", map[string]string{"x-api-key": realKey}, `"authentication_error"`},
		{"another gateway's token", "/anthropic/v1/messages", map[string]string{"x-api-key": foreign}, `"authentication_error"`},
		{"openai shape", "/openai/v1/responses", map[string]string{"Authorization": "Bearer nope"}, `"invalid_api_key"`},
		{"gemini shape", "/gemini/v1beta/models/gemini-2.5-pro:generateContent", map[string]string{"x-goog-api-key": "nope"}, `"UNAUTHENTICATED"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := e.post(c.path, c.hdr, anthropicBody("claude-sonnet-4-5", false))
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			assert.Contains(t, body, c.want)
		})
	}
	assert.Empty(t, fake.Requests())
}

// Only the endpoints the gateway meters (and free ones) are forwarded with the key.
func TestUnmeteredPathsRefused(t *testing.T) {
	var up upstream
	base := up.serve(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	e := start(t, base, gateway.Limits{})
	for _, c := range []struct{ path, body string }{
		{"/anthropic/v1/messages/batches", `{}`},
		{"/openai/v1/files", `{}`},
		{"/openai/v1/responses", `{"model":"gpt-5","input":"x","background":true}`},
		{"/gemini/v1beta/models/gemini-2.5-pro:batchGenerateContent", `{}`},
		{"/elsewhere/v1/messages", `{}`},
	} {
		resp, body := e.post(c.path, map[string]string{"Authorization": "Bearer " + e.token}, c.body)
		assert.GreaterOrEqual(t, resp.StatusCode, 400, "%s: %s", c.path, body)
	}
	assert.Empty(t, up.urls)
}

// An unknown model is metered in tokens, named, and charged against limits at the table's highest prices.
func TestUnknownModelNeverFree(t *testing.T) {
	fake := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "ok", Usage: modelfake.Usage{InputTokens: 100, OutputTokens: 10}}))
	e := start(t, fake.URL, gateway.Limits{})
	resp, body := e.post("/anthropic/v1/messages", map[string]string{"x-api-key": e.token, "anthropic-version": "2023-06-01"},
		anthropicBody("claude-mystery-9", false))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	sp := e.stepSpend()
	assert.Zero(t, sp.CostPicos)
	ceil := gateway.DefaultPrices().Ceiling()
	assert.Equal(t, ceil.Cost(gateway.Tokens{Input: 100, Output: 10}), sp.ChargedPicos)
	assert.Positive(t, sp.ChargedPicos)
	assert.Equal(t, []gateway.UnpricedModel{{Model: "claude-mystery-9", Tokens: gateway.Tokens{Input: 100, Output: 10}}}, sp.Unpriced)
}

func TestMeterSplitsAnywhere(t *testing.T) {
	// The same stream, fed one byte at a time through a server that flushes every byte, meters the same.
	stream := "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-haiku-4-5\",\"usage\":{\"input_tokens\":321,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\r\n\r\n" +
		": comment\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\n" +
		"data: \"usage\":{\"output_tokens\":77}}\n\n"
	var up upstream
	base := up.serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range len(stream) {
			_, _ = w.Write([]byte{stream[i]})
			w.(http.Flusher).Flush()
		}
	})
	e := start(t, base, gateway.Limits{})
	resp, body := e.post("/anthropic/v1/messages", map[string]string{"x-api-key": e.token}, anthropicBody("claude-haiku-4-5", true))
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, stream, body, "passed through byte for byte")
	assert.Equal(t, gateway.Tokens{Input: 321, CacheRead: 5, Output: 77}, e.stepSpend().Tokens)
	assert.False(t, e.stepSpend().Estimated)
}

// A closed scope's token is refused; Settle waits for the requests in flight to be recorded.
func TestCloseScopeAndSettle(t *testing.T) {
	release := make(chan struct{})
	var up upstream
	base := up.serve(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"type":"message","model":"claude-haiku-4-5","usage":{"input_tokens":100,"output_tokens":10}}`)
	})
	e := start(t, base, gateway.Limits{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, _ := e.post("/anthropic/v1/messages", map[string]string{"x-api-key": e.token}, anthropicBody("claude-haiku-4-5", false))
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}()
	require.Eventually(t, func() bool { up.mu.Lock(); defer up.mu.Unlock(); return len(up.urls) == 1 }, 5*time.Second, 5*time.Millisecond)
	e.gw.CloseScope(scope)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.Error(t, e.gw.Settle(ctx, scope), "a request is still in flight")
	close(release)
	require.NoError(t, e.gw.Settle(context.Background(), scope))
	assert.Equal(t, gateway.Tokens{Input: 100, Output: 10}, e.stepSpend().Tokens, "recorded before Settle returned")
	<-done

	resp, body := e.post("/anthropic/v1/messages", map[string]string{"x-api-key": e.token}, anthropicBody("claude-haiku-4-5", false))
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, body, "has ended")
	assert.Len(t, up.urls, 1)
}

// encoding/json matches a key to a field by bytes.EqualFold after unescaping, so a usage object may be spelled
// "Usage", "uſage" (U+017F folds to s) or "\u0075sage". The meter skips events that cannot carry usage; a usage
// object spelled any way json reads it must still be read, or an upstream could make the step look cheaper.
func TestMeterReadsEveryKeyJSONMatches(t *testing.T) {
	usages := []string{`"Usage"`, `"USAGE"`, "\"u\u017fage\"", `"\u0075sage"`, `"us\u0061ge"`}
	metas := []string{`"UsageMetadata"`, "\"u\u017fageMetadata\"", `"usage\u004detadata"`, `"usageMETADATA"`}
	for _, key := range usages {
		t.Run("anthropic "+key, func(t *testing.T) {
			var up upstream
			base := up.serve(t, func(w http.ResponseWriter, r *http.Request) {
				sseWrite(w,
					`{"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":100,"output_tokens":1}}}`,
					`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
					`{"type":"message_delta","delta":{"stop_reason":"end_turn"},`+key+`:{"input_tokens":900,"output_tokens":77}}`,
					`{"type":"message_stop"}`)
			})
			e := start(t, base, gateway.Limits{})
			resp, body := e.post("/anthropic/v1/messages", map[string]string{"x-api-key": e.token}, anthropicBody("claude-sonnet-4-5", true))
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			sp := e.stepSpend()
			assert.Equal(t, gateway.Tokens{Input: 900, Output: 77}, sp.Tokens)
			assert.False(t, sp.Estimated)
		})
		t.Run("responses "+key, func(t *testing.T) {
			var up upstream
			base := up.serve(t, func(w http.ResponseWriter, r *http.Request) {
				sseWrite(w,
					`{"type":"response.output_text.delta","delta":"hi"}`,
					`{"type":"response.completed","response":{"model":"gpt-5-codex",`+key+`:{"input_tokens":900,"output_tokens":44}}}`)
			})
			e := start(t, base, gateway.Limits{})
			resp, body := e.post("/openai/v1/responses", map[string]string{"Authorization": "Bearer " + e.token}, `{"model":"gpt-5-codex","stream":true,"input":"hi"}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			sp := e.stepSpend()
			assert.Equal(t, gateway.Tokens{Input: 900, Output: 44}, sp.Tokens)
			assert.False(t, sp.Estimated)
		})
		t.Run("chat "+key, func(t *testing.T) {
			var up upstream
			base := up.serve(t, func(w http.ResponseWriter, r *http.Request) {
				sseWrite(w,
					`{"object":"chat.completion.chunk","model":"gpt-4.1","choices":[{"index":0,"delta":{"content":"hi"}}]}`,
					`{"object":"chat.completion.chunk","model":"gpt-4.1","choices":[],`+key+`:{"prompt_tokens":1500,"completion_tokens":12}}`,
					`[DONE]`)
			})
			e := start(t, base, gateway.Limits{})
			resp, body := e.post("/openai/v1/chat/completions", map[string]string{"Authorization": "Bearer " + e.token}, `{"model":"gpt-4.1","stream":true,"messages":[]}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			sp := e.stepSpend()
			assert.Equal(t, gateway.Tokens{Input: 1500, Output: 12}, sp.Tokens)
			assert.False(t, sp.Estimated)
		})
	}
	for _, key := range metas {
		t.Run("gemini "+key, func(t *testing.T) {
			var up upstream
			base := up.serve(t, func(w http.ResponseWriter, r *http.Request) {
				sseWrite(w,
					`{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}`,
					`{"candidates":[{"content":{"parts":[{"text":"!"}]},"finishReason":"STOP"}],`+key+`:{"promptTokenCount":800,"candidatesTokenCount":9}}`)
			})
			e := start(t, base, gateway.Limits{})
			resp, body := e.post("/gemini/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key="+e.token, nil, `{"contents":[]}`)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			sp := e.stepSpend()
			assert.Equal(t, gateway.Tokens{Input: 800, Output: 9}, sp.Tokens)
			assert.False(t, sp.Estimated)
		})
	}
}

// Concurrent streams each hold an upstream connection; when they end, the connections stay open for the next
// ones (the default transport kept 2 a host and dialed again for the rest).
func TestUpstreamConnectionsReused(t *testing.T) {
	const streams = 12
	var (
		mu      sync.Mutex
		dialed  int
		arrived sync.WaitGroup
	)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		arrived.Done()
		arrived.Wait() // every stream of the round is open at once
		sseWrite(w, `{"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":10,"output_tokens":1}}}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`)
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			dialed++
			mu.Unlock()
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	e := start(t, up.URL, gateway.Limits{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams}}
	for range 3 {
		arrived.Add(streams)
		var wg sync.WaitGroup
		for range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/anthropic/v1/messages", strings.NewReader(anthropicBody("claude-sonnet-4-5", true)))
				req.Header.Set("x-api-key", e.token)
				resp, err := client.Do(req)
				if !assert.NoError(t, err) {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
			}()
		}
		wg.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, streams, dialed, "upstream connections opened over 3 rounds of %d concurrent streams", streams)
	assert.Equal(t, 3*streams, e.stepSpend().Requests)
}
