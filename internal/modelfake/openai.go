package modelfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI Responses API, as documented at https://platform.openai.com/docs/api-reference/responses/create
// (request), https://platform.openai.com/docs/api-reference/responses-streaming (events) and
// https://platform.openai.com/docs/guides/error-codes (statuses); errors are {"error":{"message","type","param",
// "code"}}.

type openaiRequest struct {
	Model              *string         `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	PreviousResponseID string          `json:"previous_response_id"`
	Tools              []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

type openaiItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Input     *string         `json:"input"`
	Output    json.RawMessage `json:"output"`
}

// openaiError is an error the API answers a request with.
type openaiError struct {
	status                    int
	typ, param, code, message string
}

func (e *openaiError) Error() string { return e.message }

func badRequest(param, code, format string, args ...any) *openaiError {
	return &openaiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: param, code: code, message: fmt.Sprintf(format, args...)}
}

// openaiErrorDefaults maps statuses to the type, code and message the API sends with them.
var openaiErrorDefaults = map[int][3]string{
	400: {"invalid_request_error", "", "Invalid request."},
	401: {"invalid_request_error", "invalid_api_key", "Incorrect API key provided."},
	403: {"invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported"},
	404: {"invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."},
	429: {"requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again in 1s."},
	500: {"server_error", "", "The server had an error while processing your request. Sorry about that!"},
	503: {"server_error", "server_is_overloaded", "The server is overloaded or not ready yet."},
	529: {"server_error", "server_is_overloaded", "The server is overloaded or not ready yet."},
}

func writeOpenAIError(w http.ResponseWriter, status int, typ, code, msg, retryAfter string) {
	def, ok := openaiErrorDefaults[status]
	if !ok {
		def = [3]string{"server_error", "", http.StatusText(status)}
	}
	if typ == "" {
		typ = def[0]
	}
	if code == "" {
		code = def[1]
	}
	if msg == "" {
		msg = def[2]
	}
	if retryAfter != "" {
		w.Header().Set("retry-after", retryAfter)
	}
	w.Header().Set("x-request-id", fmt.Sprintf("req_fake%d", status))
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}})
}

func writeOpenAIErr(w http.ResponseWriter, e *openaiError) {
	var param, code any
	if e.param != "" {
		param = e.param
	}
	if e.code != "" {
		code = e.code
	}
	w.Header().Set("x-request-id", fmt.Sprintf("req_fake%d", e.status))
	writeJSON(w, e.status, map[string]any{"error": map[string]any{"message": e.message, "type": e.typ, "param": param, "code": code}})
}

// openaiAuth refuses a request without a Bearer token, with the API's words.
func (s *Server) openaiAuth(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok && strings.TrimSpace(tok) != "" {
		return true
	}
	s.logf("%s %s without a Bearer token: 401", r.Method, r.URL.Path)
	writeOpenAIErr(w, &openaiError{status: http.StatusUnauthorized, typ: "invalid_request_error",
		message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."})
	return false
}

// decodeOpenAI validates a Responses request the way the API does and decodes it.
func decodeOpenAI(body []byte) (Request, *openaiError) {
	var or openaiRequest
	if err := json.Unmarshal(body, &or); err != nil {
		return Request{}, badRequest("", "", "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)")
	}
	if or.Model == nil || *or.Model == "" {
		return Request{}, badRequest("model", "missing_required_parameter", "Missing required parameter: 'model'.")
	}
	req := Request{API: OpenAI, Model: *or.Model, Stream: or.Stream, Body: body}
	if or.Instructions != nil {
		req.System = *or.Instructions
	}
	for _, t := range or.Tools {
		if t.Name != "" {
			req.Tools = append(req.Tools, t.Name)
		}
	}
	raw := bytes.TrimSpace(or.Input)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Request{}, badRequest("input", "", "Invalid 'input': %v", err)
		}
		req.Messages = []Message{{Role: "user", Text: s, Texts: []string{s}}}
		return req, nil
	}
	var items []openaiItem
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &items); err != nil {
			return Request{}, badRequest("input", "", "Invalid type for 'input': expected a string or an array of input items.")
		}
	}
	msgs, oerr := foldItems(items)
	if oerr != nil {
		return Request{}, oerr
	}
	req.Messages = msgs
	// Without previous_response_id the input is the whole conversation, so every call must have its output in
	// it and every output its call (store=false clients such as codex always send it whole).
	if or.PreviousResponseID == "" {
		if oerr := checkCallPairs(items); oerr != nil {
			return Request{}, oerr
		}
	}
	return req, nil
}

// foldItems turns input items into messages: calls join the assistant turn before them, outputs a user turn.
func foldItems(items []openaiItem) ([]Message, *openaiError) {
	var msgs []Message
	last := func(role string) *Message {
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			return &msgs[n-1]
		}
		msgs = append(msgs, Message{Role: role})
		return &msgs[len(msgs)-1]
	}
	for i, it := range items {
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message" // EasyInputMessage
		}
		switch typ {
		case "message":
			switch it.Role {
			case "user", "assistant", "system", "developer":
			default:
				return nil, badRequest(fmt.Sprintf("input[%d].role", i), "invalid_value", "Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", it.Role)
			}
			texts, err := openaiTexts(it.Content)
			if err != nil {
				return nil, badRequest(fmt.Sprintf("input[%d].content", i), "", "Invalid 'input[%d].content': %v", i, err)
			}
			msgs = append(msgs, Message{Role: it.Role, Texts: texts, Text: strings.Join(texts, "\n")})
		case "function_call", "custom_tool_call":
			if it.CallID == "" {
				return nil, badRequest(fmt.Sprintf("input[%d].call_id", i), "missing_required_parameter", "Missing required parameter: 'input[%d].call_id'.", i)
			}
			var in any
			switch {
			case typ == "custom_tool_call" && it.Input != nil:
				in = *it.Input
			case it.Arguments != nil:
				var obj any
				if err := json.Unmarshal([]byte(*it.Arguments), &obj); err != nil {
					obj = *it.Arguments
				}
				in = obj
			}
			m := last("assistant")
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: it.CallID, Name: it.Name, Input: in})
		case "function_call_output", "custom_tool_call_output":
			if it.CallID == "" {
				return nil, badRequest(fmt.Sprintf("input[%d].call_id", i), "missing_required_parameter", "Missing required parameter: 'input[%d].call_id'.", i)
			}
			text, err := openaiOutput(it.Output)
			if err != nil {
				return nil, badRequest(fmt.Sprintf("input[%d].output", i), "", "Invalid 'input[%d].output': %v", i, err)
			}
			m := last("user")
			m.ToolResults = append(m.ToolResults, ToolResult{ID: it.CallID, Text: text})
		case "reasoning", "local_shell_call", "local_shell_call_output", "web_search_call", "compaction", "item_reference",
			// codex 0.169 opens the input with an additional_tools item for the
			// models of its catalogue (gpt-6-*); the API it is built for takes it.
			"additional_tools":
			// Carried along by clients; nothing the script needs.
		default:
			return nil, badRequest(fmt.Sprintf("input[%d].type", i), "invalid_value", "Invalid value: '%s'.", typ)
		}
	}
	return msgs, nil
}

// openaiTexts decodes message content: a string, or parts of which the text ones count.
func openaiTexts(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("decode content: %w", err)
		}
		return []string{s}, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("expected a string or an array of content parts: %w", err)
	}
	var out []string
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			out = append(out, p.Text)
		}
	}
	return out, nil
}

// openaiOutput decodes a tool output: a string, or content parts.
func openaiOutput(raw json.RawMessage) (string, error) {
	texts, err := openaiTexts(raw)
	if err != nil {
		return "", err
	}
	return strings.Join(texts, "\n"), nil
}

func checkCallPairs(items []openaiItem) *openaiError {
	calls := map[string]string{} // call_id → item type
	outputs := map[string]bool{}
	for _, it := range items {
		switch it.Type {
		case "function_call", "custom_tool_call":
			calls[it.CallID] = it.Type
		case "function_call_output", "custom_tool_call_output":
			if _, ok := calls[it.CallID]; !ok {
				return badRequest("input", "", "No tool call found for function call output with call_id %s.", it.CallID)
			}
			outputs[it.CallID] = true
		}
	}
	for _, it := range items {
		if (it.Type == "function_call" || it.Type == "custom_tool_call") && !outputs[it.CallID] {
			if it.Type == "custom_tool_call" {
				return badRequest("input", "", "No tool output found for custom tool call %s.", it.CallID)
			}
			return badRequest("input", "", "No tool output found for function call %s.", it.CallID)
		}
	}
	return nil
}

func (s *Server) openaiResponses(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.methodNotAllowed(w, r)
		return
	}
	if !s.openaiAuth(w, r) {
		return
	}
	body, err := readBody(r)
	if errors.Is(err, errTooLarge) {
		writeOpenAIErr(w, &openaiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", message: "Request too large."})
		return
	}
	if err != nil {
		writeOpenAIErr(w, badRequest("", "", "%v", err))
		return
	}
	req, oerr := decodeOpenAI(body)
	if oerr != nil {
		s.logf("/v1/responses refused: %s", oerr.message)
		writeOpenAIErr(w, oerr)
		return
	}
	req.Header = r.Header.Clone()
	req = s.record(req)
	rep := s.runScript(req)
	s.logf("#%d openai model=%s msgs=%d results=%d → %s", req.Seq, req.Model, len(req.Messages), req.NumToolResults(), describe(rep))
	switch {
	case rep.Hang:
		s.hang(r)
		return
	case rep.Status != 0:
		writeOpenAIError(w, rep.Status, rep.ErrorType, "", rep.ErrorMessage, rep.RetryAfter)
		return
	}
	resp := s.openaiReply(req, rep, len(body))
	if !req.Stream {
		switch {
		case rep.HangAfterStart:
			s.hang(r)
			return
		case rep.FailMidStream:
			// Without a stream to break, the same failure is an HTTP error.
			writeOpenAIError(w, http.StatusInternalServerError, "server_error", rep.ErrorType, rep.ErrorMessage, "")
			return
		}
		writeJSON(w, http.StatusOK, resp.object("completed", resp.items(true), resp.usageJSON(), nil))
		return
	}
	if err := s.openaiStream(w, r, resp, rep); err != nil {
		s.logf("#%d stream: %v", req.Seq, err)
	}
}

// openaiResp is a reply rendered as output items.
type openaiResp struct {
	id, model string
	created   int64
	outs      []openaiOut
	usage     Usage
}

type openaiOut struct {
	kind   string // message, function_call, custom_tool_call
	id     string
	callID string
	name   string
	text   string // message text, function arguments or custom tool input
}

func (s *Server) openaiReply(req Request, rep Reply, reqBytes int) openaiResp {
	resp := openaiResp{id: s.nextID("resp_fake"), model: req.Model, created: now().Unix(), usage: estimate(rep.Usage, reqBytes, rep)}
	kinds := toolKinds(req.Body)
	if rep.Text != "" || len(rep.ToolCalls) == 0 {
		resp.outs = append(resp.outs, openaiOut{kind: "message", id: s.nextID("msg_fake"), text: rep.Text})
	}
	for _, c := range rep.ToolCalls {
		callID := c.ID
		if callID == "" {
			callID = s.nextID("call_fake")
		}
		if _, ok := kinds[c.Name]; !ok {
			s.logf("#%d calls %s, which the request does not offer", req.Seq, c.Name)
		}
		if str, isStr := c.Input.(string); isStr && kinds[c.Name] == "custom" {
			resp.outs = append(resp.outs, openaiOut{kind: "custom_tool_call", id: s.nextID("ctc_fake"), callID: callID, name: c.Name, text: str})
			continue
		}
		resp.outs = append(resp.outs, openaiOut{kind: "function_call", id: s.nextID("fc_fake"), callID: callID, name: c.Name, text: inputJSON(c.Input)})
	}
	return resp
}

// toolKinds maps the request's tool names to their types (function, custom, …).
func toolKinds(body []byte) map[string]string {
	var or struct {
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &or)
	out := map[string]string{}
	for _, t := range or.Tools {
		if t.Name != "" {
			out[t.Name] = t.Type
		}
	}
	return out
}

func (o openaiOut) item(done bool) map[string]any {
	status := "in_progress"
	if done {
		status = "completed"
	}
	switch o.kind {
	case "message":
		content := []any{}
		if done {
			content = append(content, map[string]any{"type": "output_text", "text": o.text, "annotations": []any{}, "logprobs": []any{}})
		}
		return map[string]any{"id": o.id, "type": "message", "status": status, "role": "assistant", "content": content}
	case "custom_tool_call":
		in := ""
		if done {
			in = o.text
		}
		return map[string]any{"id": o.id, "type": "custom_tool_call", "status": status, "call_id": o.callID, "name": o.name, "input": in}
	default:
		args := ""
		if done {
			args = o.text
		}
		return map[string]any{"id": o.id, "type": "function_call", "status": status, "call_id": o.callID, "name": o.name, "arguments": args}
	}
}

func (r openaiResp) items(done bool) []any {
	out := []any{}
	for _, o := range r.outs {
		out = append(out, o.item(done))
	}
	return out
}

// usageJSON reports usage the Responses way: input_tokens include the cached ones.
func (r openaiResp) usageJSON() map[string]any {
	in := r.usage.InputTokens + r.usage.CacheReadTokens + r.usage.CacheWriteTokens
	return map[string]any{
		"input_tokens":          in,
		"input_tokens_details":  map[string]any{"cached_tokens": r.usage.CacheReadTokens},
		"output_tokens":         r.usage.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          in + r.usage.OutputTokens,
	}
}

func (r openaiResp) object(status string, output []any, usage any, errObj any) map[string]any {
	return map[string]any{
		"id": r.id, "object": "response", "created_at": r.created, "status": status, "error": errObj,
		"incomplete_details": nil, "model": r.model, "output": output, "parallel_tool_calls": true,
		"tool_choice": "auto", "tools": []any{}, "usage": usage, "store": false,
	}
}

// openaiStream sends the reply as the documented event sequence, each event with its sequence_number:
// response.created, response.in_progress, per output item output_item.added, its deltas and done events,
// output_item.done, then response.completed carrying the usage.
func (s *Server) openaiStream(w http.ResponseWriter, r *http.Request, resp openaiResp, rep Reply) error {
	e := newSSE(w)
	seq := 0
	send := func(typ string, fields map[string]any) error {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return e.event(typ, fields)
	}
	if err := send("response.created", map[string]any{"response": resp.object("in_progress", []any{}, nil, nil)}); err != nil {
		return err
	}
	if rep.HangAfterStart {
		s.hang(r)
		return nil
	}
	if err := send("response.in_progress", map[string]any{"response": resp.object("in_progress", []any{}, nil, nil)}); err != nil {
		return err
	}
	if rep.FailMidStream {
		code, msg := rep.ErrorType, rep.ErrorMessage
		if code == "" {
			code = "server_error"
		}
		if msg == "" {
			msg = "The server had an error while processing your request. Sorry about that!"
		}
		return send("response.failed", map[string]any{"response": resp.object("failed", []any{}, nil, map[string]any{"code": code, "message": msg})})
	}
	for i, o := range resp.outs {
		if err := send("response.output_item.added", map[string]any{"output_index": i, "item": o.item(false)}); err != nil {
			return err
		}
		var err error
		switch o.kind {
		case "message":
			err = openaiTextEvents(send, i, o)
		case "custom_tool_call":
			err = openaiInputEvents(send, i, o, "response.custom_tool_call_input", "input")
		default:
			err = openaiInputEvents(send, i, o, "response.function_call_arguments", "arguments")
		}
		if err != nil {
			return err
		}
		if err := send("response.output_item.done", map[string]any{"output_index": i, "item": o.item(true)}); err != nil {
			return err
		}
	}
	return send("response.completed", map[string]any{"response": resp.object("completed", resp.items(true), resp.usageJSON(), nil)})
}

func openaiTextEvents(send func(string, map[string]any) error, i int, o openaiOut) error {
	at := func(extra map[string]any) map[string]any {
		m := map[string]any{"item_id": o.id, "output_index": i, "content_index": 0}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	if err := send("response.content_part.added", at(map[string]any{"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})); err != nil {
		return err
	}
	for _, c := range chunks(o.text, 512) {
		if err := send("response.output_text.delta", at(map[string]any{"delta": c, "logprobs": []any{}})); err != nil {
			return err
		}
	}
	if err := send("response.output_text.done", at(map[string]any{"text": o.text, "logprobs": []any{}})); err != nil {
		return err
	}
	return send("response.content_part.done", at(map[string]any{"part": map[string]any{"type": "output_text", "text": o.text, "annotations": []any{}}}))
}

func openaiInputEvents(send func(string, map[string]any) error, i int, o openaiOut, prefix, doneField string) error {
	for _, c := range chunks(o.text, 512) {
		if err := send(prefix+".delta", map[string]any{"item_id": o.id, "output_index": i, "delta": c}); err != nil {
			return err
		}
	}
	return send(prefix+".done", map[string]any{"item_id": o.id, "output_index": i, doneField: o.text})
}
