package modelfake

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// post sends body to the fake with headers, returning the response.
func post(t *testing.T, url string, headers map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

var anthropicHeaders = map[string]string{"x-api-key": "sk-ant", "anthropic-version": "2023-06-01", "content-type": "application/json"}

var openaiHeaders = map[string]string{"Authorization": "Bearer sk", "content-type": "application/json"}

type sseEvent struct {
	name string
	data map[string]any
}

// readSSE parses a whole event stream, requiring every event to carry a JSON object whose type matches its name.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data))
			require.Equal(t, name, data["type"], "the data's type names the event")
			out = append(out, sseEvent{name: name, data: data})
		case line == "":
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

func names(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.name)
	}
	return out
}

func errorBody(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body
}

const anthropicConversation = `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":%s,
 "system":[{"type":"text","text":"be brief"}],
 "tools":[{"name":"Write","input_schema":{"type":"object"}},{"name":"Bash","input_schema":{"type":"object"}}],
 "messages":[
  {"role":"user","content":[{"type":"text","text":"<system-reminder>context</system-reminder>"},{"type":"text","text":"write it"}]},
  {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{"file_path":"/a","content":"x"}}]},
  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"written"}]}]}`

func TestAnthropicStream(t *testing.T) {
	var got Request
	s := Start(t, func(r Request) Reply {
		got = r
		return Reply{Text: "héllo wörld", ToolCalls: []ToolCall{{Name: "Bash", Input: map[string]any{"command": "ls"}}},
			Usage: Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 3, CacheWriteTokens: 2}}
	})
	resp := post(t, s.URL+"/v1/messages?beta=true", anthropicHeaders, strings.Replace(anthropicConversation, "%s", "true", 1))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	evs := readSSE(t, resp.Body)

	// The documented flow: message_start, ping, blocks (start, deltas, stop), message_delta, message_stop.
	n := names(evs)
	require.GreaterOrEqual(t, len(n), 10)
	assert.Equal(t, []string{"message_start", "ping", "content_block_start"}, n[:3])
	assert.Equal(t, []string{"message_delta", "message_stop"}, n[len(n)-2:])
	start := evs[0].data["message"].(map[string]any)
	assert.Equal(t, "claude-sonnet-4-5", start["model"])
	assert.Empty(t, start["content"])
	assert.Nil(t, start["stop_reason"])

	// Put the blocks back together from the deltas.
	var text, input strings.Builder
	blocks := map[float64]map[string]any{}
	for _, e := range evs {
		switch e.name {
		case "content_block_start":
			blocks[e.data["index"].(float64)] = e.data["content_block"].(map[string]any)
		case "content_block_delta":
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				text.WriteString(d["text"].(string))
			case "input_json_delta":
				input.WriteString(d["partial_json"].(string))
			}
		}
	}
	assert.Equal(t, "héllo wörld", text.String())
	assert.JSONEq(t, `{"command":"ls"}`, input.String())
	require.Len(t, blocks, 2)
	assert.Equal(t, "text", blocks[0]["type"])
	assert.Equal(t, "tool_use", blocks[1]["type"])
	assert.Equal(t, "Bash", blocks[1]["name"])
	assert.True(t, strings.HasPrefix(blocks[1]["id"].(string), "toolu_"))

	delta := evs[len(evs)-2].data
	assert.Equal(t, "tool_use", delta["delta"].(map[string]any)["stop_reason"])
	usage := delta["usage"].(map[string]any)
	assert.EqualValues(t, 10, usage["input_tokens"])
	assert.EqualValues(t, 5, usage["output_tokens"])
	assert.EqualValues(t, 3, usage["cache_read_input_tokens"])
	assert.EqualValues(t, 2, usage["cache_creation_input_tokens"])

	// The request as the script saw it.
	assert.Equal(t, Anthropic, got.API)
	assert.Equal(t, 1, got.Seq)
	assert.Equal(t, "be brief", got.System)
	assert.Equal(t, []string{"Write", "Bash"}, got.Tools)
	assert.True(t, got.Stream)
	assert.Equal(t, "write it", got.FirstUserText())
	assert.Equal(t, 1, got.Turns())
	res, ok := got.LastToolResult()
	require.True(t, ok)
	assert.Equal(t, ToolResult{ID: "toolu_1", Text: "written"}, res)
	require.Len(t, got.Messages[1].ToolCalls, 1)
	assert.Equal(t, map[string]any{"file_path": "/a", "content": "x"}, got.Messages[1].ToolCalls[0].Input)
	assert.Equal(t, "sk-ant", got.Header.Get("x-api-key"))
}

func TestAnthropicJSON(t *testing.T) {
	s := Start(t, ByTurn(Reply{Text: "hi"}))
	resp := post(t, s.URL+"/v1/messages", anthropicHeaders, strings.Replace(anthropicConversation, "%s", "false", 1))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var msg map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&msg))
	assert.Equal(t, "message", msg["type"])
	assert.Equal(t, "assistant", msg["role"])
	assert.Equal(t, "end_turn", msg["stop_reason"])
	assert.Equal(t, []any{map[string]any{"type": "text", "text": "hi"}}, msg["content"])
	assert.Contains(t, msg["usage"], "input_tokens")
}

// Every refusal the real API would give, in its shape.
func TestAnthropicRefusals(t *testing.T) {
	valid := strings.Replace(anthropicConversation, "%s", "true", 1)
	for _, tc := range []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		errType string
		message string
	}{
		{"no key", map[string]string{"anthropic-version": "2023-06-01"}, valid, 401, "authentication_error", "x-api-key header is required"},
		{"no version", map[string]string{"x-api-key": "k"}, valid, 400, "invalid_request_error", "anthropic-version"},
		{"bearer is a key", map[string]string{"Authorization": "Bearer tok", "anthropic-version": "2023-06-01"}, valid, 200, "", ""},
		{"not json", anthropicHeaders, "{", 400, "invalid_request_error", "request body"},
		{"no model", anthropicHeaders, `{"max_tokens":1,"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "model: Field required"},
		{"no max_tokens", anthropicHeaders, `{"model":"claude-x","messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error", "max_tokens: Field required"},
		{"no messages", anthropicHeaders, `{"model":"claude-x","max_tokens":1,"messages":[]}`, 400, "invalid_request_error", "at least one message"},
		{"bad role", anthropicHeaders, `{"model":"claude-x","max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`, 400, "invalid_request_error", "role"},
		{"unknown model", anthropicHeaders, `{"model":"gpt-5","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`, 404, "not_found_error", "model: gpt-5"},
		{"tool_use without result", anthropicHeaders, `{"model":"claude-x","max_tokens":1,"messages":[
			{"role":"user","content":"x"},
			{"role":"assistant","content":[{"type":"tool_use","id":"toolu_9","name":"Bash","input":{}}]},
			{"role":"user","content":"next"}]}`, 400, "invalid_request_error", "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_9"},
		{"result for no call", anthropicHeaders, `{"model":"claude-x","max_tokens":1,"messages":[
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_7","content":"x"}]}]}`, 400, "invalid_request_error", "unexpected `tool_use_id` found in `tool_result` blocks: toolu_7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, ByTurn(Reply{Text: "ok"}))
			resp := post(t, s.URL+"/v1/messages", tc.headers, tc.body)
			require.Equal(t, tc.status, resp.StatusCode)
			if tc.status == 200 {
				return
			}
			body := errorBody(t, resp)
			assert.Equal(t, "error", body["type"])
			e := body["error"].(map[string]any)
			assert.Equal(t, tc.errType, e["type"])
			assert.Contains(t, e["message"], tc.message)
			assert.NotEmpty(t, body["request_id"])
			assert.Empty(t, s.Requests(), "a refused request never reaches the script")
		})
	}
}

func TestScriptedErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		api        API
		reply      Reply
		status     int
		errType    string
		retryAfter string
	}{
		{"anthropic 529", Anthropic, Reply{Status: 529}, 529, "overloaded_error", ""},
		{"anthropic 429", Anthropic, Reply{Status: 429, RetryAfter: "3"}, 429, "rate_limit_error", "3"},
		{"anthropic 500", Anthropic, Reply{Status: 500}, 500, "api_error", ""},
		{"anthropic own type", Anthropic, Reply{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "prompt is too long"}, 400, "invalid_request_error", ""},
		{"openai 429", OpenAI, Reply{Status: 429, RetryAfter: "1"}, 429, "requests", "1"},
		{"openai 500", OpenAI, Reply{Status: 500}, 500, "server_error", ""},
		{"openai 503", OpenAI, Reply{Status: 503}, 503, "server_error", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, ByTurn(tc.reply))
			var resp *http.Response
			if tc.api == Anthropic {
				resp = post(t, s.URL+"/v1/messages", anthropicHeaders, `{"model":"claude-x","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
			} else {
				resp = post(t, s.OpenAIBaseURL()+"/responses", openaiHeaders, `{"model":"gpt-5","stream":true,"input":"x"}`)
			}
			require.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.retryAfter, resp.Header.Get("retry-after"))
			body := errorBody(t, resp)
			e := body["error"].(map[string]any)
			assert.Equal(t, tc.errType, e["type"])
			assert.NotEmpty(t, e["message"])
			if tc.reply.ErrorMessage != "" {
				assert.Equal(t, tc.reply.ErrorMessage, e["message"])
			}
			if tc.api == OpenAI {
				assert.Contains(t, e, "param")
				assert.Contains(t, e, "code")
			}
			assert.Len(t, s.Requests(), 1, "a scripted error is a recorded request")
		})
	}
}

func TestAnthropicFailMidStream(t *testing.T) {
	s := Start(t, ByTurn(Reply{FailMidStream: true}))
	resp := post(t, s.URL+"/v1/messages", anthropicHeaders, `{"model":"claude-x","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	evs := readSSE(t, resp.Body)
	assert.Equal(t, []string{"message_start", "ping", "error"}, names(evs))
	assert.Equal(t, "overloaded_error", evs[2].data["error"].(map[string]any)["type"])

	// Without a stream, the same failure is the HTTP error.
	resp = post(t, s.URL+"/v1/messages", anthropicHeaders, `{"model":"claude-x","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`)
	assert.Equal(t, 529, resp.StatusCode)
}

const openaiConversation = `{"model":"gpt-5","stream":%s,"instructions":"be brief","store":false,
 "tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"}},{"type":"custom","name":"apply_patch"}],
 "input":[
  {"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},
  {"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]},
  {"type":"message","role":"user","content":[{"type":"input_text","text":"do it"}]},
  {"type":"function_call","call_id":"call_1","name":"exec_command","arguments":"{\"cmd\":\"ls\"}"},
  {"type":"function_call_output","call_id":"call_1","output":"a.txt"},
  {"type":"custom_tool_call","call_id":"call_2","name":"apply_patch","input":"*** Begin Patch"},
  {"type":"custom_tool_call_output","call_id":"call_2","output":"Done!"}]}`

func TestOpenAIStream(t *testing.T) {
	var got Request
	s := Start(t, func(r Request) Reply {
		got = r
		return Reply{Text: "héllo", ToolCalls: []ToolCall{
			{Name: "exec_command", Input: map[string]any{"cmd": "go test"}},
			{Name: "apply_patch", Input: "*** Begin Patch\n*** End Patch\n"},
		}, Usage: Usage{InputTokens: 100, CacheReadTokens: 40, OutputTokens: 7}}
	})
	resp := post(t, s.OpenAIBaseURL()+"/responses", openaiHeaders, strings.Replace(openaiConversation, "%s", "true", 1))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	evs := readSSE(t, resp.Body)
	n := names(evs)
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}, n[:4])
	assert.Equal(t, "response.completed", n[len(n)-1])
	for i, e := range evs {
		assert.EqualValues(t, i, e.data["sequence_number"], "sequence numbers count up from 0")
	}

	var text, args, patch strings.Builder
	var done []map[string]any
	for _, e := range evs {
		switch e.name {
		case "response.output_text.delta":
			text.WriteString(e.data["delta"].(string))
		case "response.function_call_arguments.delta":
			args.WriteString(e.data["delta"].(string))
		case "response.custom_tool_call_input.delta":
			patch.WriteString(e.data["delta"].(string))
		case "response.output_item.done":
			done = append(done, e.data["item"].(map[string]any))
		}
	}
	assert.Equal(t, "héllo", text.String())
	assert.JSONEq(t, `{"cmd":"go test"}`, args.String())
	assert.Equal(t, "*** Begin Patch\n*** End Patch\n", patch.String())
	require.Len(t, done, 3)
	assert.Equal(t, "message", done[0]["type"])
	assert.Equal(t, "function_call", done[1]["type"])
	assert.Equal(t, "exec_command", done[1]["name"])
	assert.JSONEq(t, `{"cmd":"go test"}`, done[1]["arguments"].(string))
	assert.Equal(t, "custom_tool_call", done[2]["type"])
	assert.Equal(t, "*** Begin Patch\n*** End Patch\n", done[2]["input"])
	assert.NotEqual(t, done[1]["call_id"], done[2]["call_id"], "call ids are unique")

	completed := evs[len(evs)-1].data["response"].(map[string]any)
	assert.Equal(t, "completed", completed["status"])
	assert.Len(t, completed["output"], 3)
	usage := completed["usage"].(map[string]any)
	assert.EqualValues(t, 140, usage["input_tokens"], "input_tokens include the cached ones")
	assert.EqualValues(t, 40, usage["input_tokens_details"].(map[string]any)["cached_tokens"])
	assert.EqualValues(t, 7, usage["output_tokens"])
	assert.EqualValues(t, 147, usage["total_tokens"])

	assert.Equal(t, OpenAI, got.API)
	assert.Equal(t, "be brief", got.System)
	assert.Equal(t, []string{"exec_command", "apply_patch"}, got.Tools)
	assert.Equal(t, "do it", got.FirstUserText())
	assert.Equal(t, 2, got.NumToolResults())
	res, _ := got.LastToolResult()
	assert.Equal(t, ToolResult{ID: "call_2", Text: "Done!"}, res)
	assert.Equal(t, 2, got.Turns(), "a call starts an assistant turn; its output a user one")
}

func TestOpenAIJSON(t *testing.T) {
	s := Start(t, ByTurn(Reply{Text: "hi"}))
	resp := post(t, s.OpenAIBaseURL()+"/responses", openaiHeaders, `{"model":"gpt-5","input":"hello"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, "response", body["object"])
	assert.Equal(t, "completed", body["status"])
	out := body["output"].([]any)
	require.Len(t, out, 1)
	assert.Equal(t, "hi", out[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])
	assert.Equal(t, "hello", s.Requests()[0].FirstUserText())
}

func TestOpenAIRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		message string
	}{
		{"no key", map[string]string{"content-type": "application/json"}, `{"model":"gpt-5","input":"x"}`, 401, "You didn't provide an API key"},
		{"not json", openaiHeaders, `{`, 400, "could not parse the JSON body"},
		{"no model", openaiHeaders, `{"input":"x"}`, 400, "Missing required parameter: 'model'."},
		{"output without call", openaiHeaders, `{"model":"gpt-5","input":[{"type":"function_call_output","call_id":"call_9","output":"x"}]}`, 400, "No tool call found for function call output with call_id call_9."},
		{"call without output", openaiHeaders, `{"model":"gpt-5","input":[{"type":"function_call","call_id":"call_8","name":"f","arguments":"{}"}]}`, 400, "No tool output found for function call call_8."},
		{"bad role", openaiHeaders, `{"model":"gpt-5","input":[{"role":"tool","content":"x"}]}`, 400, "Invalid value: 'tool'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, ByTurn(Reply{Text: "ok"}))
			resp := post(t, s.OpenAIBaseURL()+"/responses", tc.headers, tc.body)
			require.Equal(t, tc.status, resp.StatusCode)
			e := errorBody(t, resp)["error"].(map[string]any)
			assert.Contains(t, e["message"], tc.message)
			assert.Equal(t, "invalid_request_error", e["type"])
			assert.Empty(t, s.Requests())
		})
	}
}

func TestOpenAIResponseFailed(t *testing.T) {
	s := Start(t, ByTurn(Reply{FailMidStream: true, ErrorType: "rate_limit_exceeded", ErrorMessage: "Please try again in 1.5s."}))
	resp := post(t, s.OpenAIBaseURL()+"/responses", openaiHeaders, `{"model":"gpt-5","stream":true,"input":"x"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	evs := readSSE(t, resp.Body)
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.failed"}, names(evs))
	r := evs[2].data["response"].(map[string]any)
	assert.Equal(t, "failed", r["status"])
	assert.Equal(t, map[string]any{"code": "rate_limit_exceeded", "message": "Please try again in 1.5s."}, r["error"])
}

// A hanging reply holds the request until the client gives up, and Close releases what is still held.
func TestHang(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply Reply
	}{{"before headers", Reply{Hang: true}}, {"after the first event", Reply{HangAfterStart: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, ByTurn(tc.reply))
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/messages",
				strings.NewReader(`{"model":"claude-x","max_tokens":1,"stream":true,"messages":[{"role":"user","content":"x"}]}`))
			require.NoError(t, err)
			for k, v := range anthropicHeaders {
				req.Header.Set(k, v)
			}
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				_ = resp.Body.Close()
			}
			require.Error(t, err)
			assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)

			// A request still held when the server closes is let go.
			go func() {
				time.Sleep(100 * time.Millisecond)
				s.Close()
			}()
			resp2, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(`{}`))
			if err == nil {
				_ = resp2.Body.Close()
			}
		})
	}
}

func TestSideEndpoints(t *testing.T) {
	s := Start(t, ByTurn(Reply{Text: "ok"}))

	resp := post(t, s.URL+"/v1/messages/count_tokens", anthropicHeaders, `{"model":"claude-x","messages":[{"role":"user","content":"hello"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var count map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&count))
	assert.Greater(t, count["input_tokens"], 0.0)

	get := func(path string, headers map[string]string) map[string]any {
		req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
		require.NoError(t, err)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return body
	}
	assert.Equal(t, false, get("/v1/models", anthropicHeaders)["has_more"])
	assert.Equal(t, "list", get("/v1/models", openaiHeaders)["object"])
	assert.Equal(t, "model", get("/v1/models/claude-x", anthropicHeaders)["type"])

	req, err := http.NewRequest(http.MethodHead, s.URL+"/api/hello", nil)
	require.NoError(t, err)
	head, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = head.Body.Close()
	assert.Equal(t, http.StatusOK, head.StatusCode)

	unknown := post(t, s.URL+"/v1/batches", anthropicHeaders, `{}`)
	assert.Equal(t, http.StatusNotFound, unknown.StatusCode)
	assert.Equal(t, []string{"POST /v1/batches"}, s.Unhandled())
	assert.Empty(t, s.Requests(), "side endpoints are not model requests")
}

func TestScriptPanicIsATestError(t *testing.T) {
	ft := &fakeT{TB: t}
	s := Start(ft, func(Request) Reply { panic("boom") })
	resp := post(t, s.URL+"/v1/messages", anthropicHeaders, `{"model":"claude-x","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.Contains(t, ft.errors, "modelfake: script panicked on request #1: boom")
}

// fakeT records errors instead of failing the test.
type fakeT struct {
	testing.TB
	errors string
}

func (f *fakeT) Errorf(format string, args ...any) { f.errors += fmt.Sprintf(format, args...) }

func TestHelpers(t *testing.T) {
	t.Run("chunks keep runes whole", func(t *testing.T) {
		for _, s := range []string{"", "a", "ab", "héllo wörld ✓✓✓", strings.Repeat("日本語", 500)} {
			parts := chunks(s, 7)
			assert.Equal(t, s, strings.Join(parts, ""))
			for _, p := range parts {
				assert.True(t, len(p) == 0 || runeStart(p[0]), "part %q starts mid-rune", p)
			}
			if len(s) >= 2 {
				assert.GreaterOrEqual(t, len(parts), 2, "a text always takes more than one delta")
			}
		}
	})
	t.Run("ByTurn repeats the last", func(t *testing.T) {
		script := ByTurn(Reply{Text: "a"}, Reply{Text: "b"})
		turn := func(n int) Request {
			r := Request{Messages: []Message{{Role: "user"}}}
			for range n {
				r.Messages = append(r.Messages, Message{Role: "assistant"}, Message{Role: "user"})
			}
			return r
		}
		assert.Equal(t, "a", script(turn(0)).Text)
		assert.Equal(t, "b", script(turn(1)).Text)
		assert.Equal(t, "b", script(turn(5)).Text)
	})
	t.Run("FailFirst", func(t *testing.T) {
		script := FailFirst(2, Reply{Status: 529}, ByTurn(Reply{Text: "ok"}))
		assert.Equal(t, 529, script(Request{Seq: 2}).Status)
		assert.Equal(t, "ok", script(Request{Seq: 3}).Text)
	})
}
