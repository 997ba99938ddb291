package modelfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// The Anthropic Messages API, as documented at https://docs.anthropic.com/en/api/messages (request),
// https://docs.anthropic.com/en/docs/build-with-claude/streaming (events) and
// https://docs.anthropic.com/en/api/errors (error shapes and statuses).

type anthropicRequest struct {
	Model     *string            `json:"model"`
	MaxTokens *int               `json:"max_tokens"`
	Messages  []anthropicMessage `json:"messages"`
	System    json.RawMessage    `json:"system"`
	Tools     []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// anthropicErrorDefaults maps statuses to the error type and message the API sends with them.
var anthropicErrorDefaults = map[int][2]string{
	400: {"invalid_request_error", "invalid request"},
	401: {"authentication_error", "invalid x-api-key"},
	402: {"billing_error", "Your credit balance is too low to access the Anthropic API."},
	403: {"permission_error", "Your API key does not have permission to use the specified resource."},
	404: {"not_found_error", "Not Found"},
	413: {"request_too_large", "Request exceeds the maximum allowed number of bytes."},
	429: {"rate_limit_error", "This request would exceed the rate limit for your organization. Please try again later."},
	500: {"api_error", "Internal server error"},
	529: {"overloaded_error", "Overloaded"},
}

// anthropicStatus is the HTTP status the API sends an error type with.
func anthropicStatus(typ string) int {
	for status, def := range anthropicErrorDefaults {
		if def[0] == typ {
			return status
		}
	}
	return http.StatusInternalServerError
}

// writeAnthropicError answers with the API's error body: {"type":"error","error":{"type":…,"message":…},
// "request_id":…}, the request id also in the request-id header.
func writeAnthropicError(w http.ResponseWriter, status int, typ, msg, retryAfter string) {
	def, ok := anthropicErrorDefaults[status]
	if !ok {
		def = [2]string{"api_error", http.StatusText(status)}
	}
	if typ == "" {
		typ = def[0]
	}
	if msg == "" {
		msg = def[1]
	}
	if retryAfter != "" {
		w.Header().Set("retry-after", retryAfter)
	}
	id := "req_fake" + fmt.Sprint(status)
	w.Header().Set("request-id", id)
	writeJSON(w, status, map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": typ, "message": msg},
		"request_id": id,
	})
}

// anthropicAuth refuses a request without credentials as the API does: x-api-key, or a Bearer token (OAuth and
// ANTHROPIC_AUTH_TOKEN clients).
func (s *Server) anthropicAuth(w http.ResponseWriter, r *http.Request) bool {
	if strings.TrimSpace(r.Header.Get("x-api-key")) != "" {
		return true
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && strings.TrimSpace(tok) != "" {
		return true
	}
	s.logf("%s %s without credentials: 401", r.Method, r.URL.Path)
	writeAnthropicError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required", "")
	return false
}

// anthropicPreamble does what every Messages endpoint does before reading the body: method, credentials, version.
func (s *Server) anthropicPreamble(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost {
		s.methodNotAllowed(w, r)
		return nil, false
	}
	if !s.anthropicAuth(w, r) {
		return nil, false
	}
	if r.Header.Get("anthropic-version") == "" {
		s.logf("%s without anthropic-version: 400", r.URL.Path)
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required", "")
		return nil, false
	}
	body, err := readBody(r)
	if errors.Is(err, errTooLarge) {
		writeAnthropicError(w, http.StatusRequestEntityTooLarge, "", "", "")
		return nil, false
	}
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "")
		return nil, false
	}
	return body, true
}

// decodeAnthropic validates a Messages request the way the API does and decodes it; the error is the message of
// the 400 the API would answer.
func decodeAnthropic(body []byte) (Request, error) {
	var ar anthropicRequest
	if err := json.Unmarshal(body, &ar); err != nil {
		return Request{}, fmt.Errorf("There was an issue with your request body: %w", err)
	}
	if ar.Model == nil || *ar.Model == "" {
		return Request{}, errors.New("model: Field required")
	}
	if ar.MaxTokens == nil {
		return Request{}, errors.New("max_tokens: Field required")
	}
	if *ar.MaxTokens < 1 {
		return Request{}, errors.New("max_tokens: Input should be greater than or equal to 1")
	}
	if len(ar.Messages) == 0 {
		return Request{}, errors.New("messages: at least one message is required")
	}
	req := Request{API: Anthropic, Model: *ar.Model, Stream: ar.Stream, Body: body}
	sys, err := anthropicText(ar.System)
	if err != nil {
		return Request{}, fmt.Errorf("system: %w", err)
	}
	req.System = strings.Join(sys, "\n")
	for _, t := range ar.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for i, m := range ar.Messages {
		msg, err := decodeAnthropicMessage(m)
		if err != nil {
			return Request{}, fmt.Errorf("messages.%d: %w", i, err)
		}
		req.Messages = append(req.Messages, msg)
	}
	if err := checkToolPairs(req.Messages); err != nil {
		return Request{}, err
	}
	return req, nil
}

// anthropicText decodes a string-or-text-blocks field (system, tool_result content) into its texts.
func anthropicText(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("decode text: %w", err)
		}
		return []string{s}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("Input should be a valid string or list of blocks: %w", err)
	}
	var out []string
	for _, b := range blocks {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out, nil
}

func decodeAnthropicMessage(m anthropicMessage) (Message, error) {
	switch m.Role {
	case "user", "assistant", "system":
		// "system" turns inside messages come with one of claude's betas (per-turn-control); the API takes them.
	default:
		return Message{}, fmt.Errorf("role: Input should be 'user' or 'assistant', got %q", m.Role)
	}
	msg := Message{Role: m.Role}
	raw := bytes.TrimSpace(m.Content)
	if len(raw) == 0 {
		return Message{}, errors.New("content: Field required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Message{}, fmt.Errorf("content: %w", err)
		}
		msg.Texts = []string{s}
		msg.Text = s
		return msg, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return Message{}, fmt.Errorf("content: Input should be a valid string or list of blocks: %w", err)
	}
	for i, b := range blocks {
		switch b.Type {
		case "text":
			msg.Texts = append(msg.Texts, b.Text)
		case "tool_use":
			if m.Role != "assistant" {
				return Message{}, fmt.Errorf("content.%d: tool_use blocks are only allowed in assistant messages", i)
			}
			if b.ID == "" || b.Name == "" {
				return Message{}, fmt.Errorf("content.%d.tool_use: id and name are required", i)
			}
			var input any
			if len(b.Input) > 0 {
				if err := json.Unmarshal(b.Input, &input); err != nil {
					return Message{}, fmt.Errorf("content.%d.tool_use.input: %w", i, err)
				}
			}
			if _, ok := input.(map[string]any); !ok {
				return Message{}, fmt.Errorf("content.%d.tool_use.input: Input should be a valid dictionary", i)
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Input: input})
		case "tool_result":
			if m.Role != "user" {
				return Message{}, fmt.Errorf("content.%d: tool_result blocks are only allowed in user messages", i)
			}
			if b.ToolUseID == "" {
				return Message{}, fmt.Errorf("content.%d.tool_result.tool_use_id: Field required", i)
			}
			texts, err := anthropicText(b.Content)
			if err != nil {
				return Message{}, fmt.Errorf("content.%d.tool_result.content: %w", i, err)
			}
			msg.ToolResults = append(msg.ToolResults, ToolResult{ID: b.ToolUseID, Text: strings.Join(texts, "\n"), IsError: b.IsError})
		}
	}
	msg.Text = strings.Join(msg.Texts, "\n")
	return msg, nil
}

// checkToolPairs enforces the API's rule that every tool_use is answered by a tool_result in the next user
// message, and that a tool_result answers a tool_use of the message just before it
// (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use). "system" turns between them
// are skipped: they are not part of the exchange.
func checkToolPairs(msgs []Message) error {
	var pending []string // tool_use ids of the last assistant message
	pendingAt := -1
	for i, m := range msgs {
		switch m.Role {
		case "system":
			continue
		case "assistant":
			if len(pending) > 0 {
				return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", pendingAt, strings.Join(pending, ", "))
			}
			pending = nil
			for _, c := range m.ToolCalls {
				pending = append(pending, c.ID)
			}
			pendingAt = i
		case "user":
			answered := map[string]bool{}
			for _, res := range m.ToolResults {
				if !contains(pending, res.ID) {
					return fmt.Errorf("messages.%d.content: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, res.ID)
				}
				answered[res.ID] = true
			}
			var missing []string
			for _, id := range pending {
				if !answered[id] {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", pendingAt, strings.Join(missing, ", "))
			}
			pending = nil
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Server) anthropicCountTokens(w http.ResponseWriter, r *http.Request) {
	body, ok := s.anthropicPreamble(w, r)
	if !ok {
		return
	}
	// count_tokens takes a Messages request without max_tokens.
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "There was an issue with your request body: "+err.Error(), "")
		return
	}
	if _, ok := probe["max_tokens"]; !ok {
		probe["max_tokens"] = json.RawMessage("1")
	}
	withMax, err := json.Marshal(probe)
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "")
		return
	}
	if _, err := decodeAnthropic(withMax); err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": len(body)/4 + 1})
}

func (s *Server) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	body, ok := s.anthropicPreamble(w, r)
	if !ok {
		return
	}
	req, err := decodeAnthropic(body)
	if err != nil {
		s.logf("/v1/messages refused: %v", err)
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error(), "")
		return
	}
	if !strings.HasPrefix(req.Model, "claude-") {
		// The API knows its models; anything else is a 404.
		writeAnthropicError(w, http.StatusNotFound, "not_found_error", "model: "+req.Model, "")
		return
	}
	req.Header = r.Header.Clone()
	req = s.record(req)
	rep := s.runScript(req)
	s.logf("#%d anthropic model=%s msgs=%d results=%d → %s", req.Seq, req.Model, len(req.Messages), req.NumToolResults(), describe(rep))
	switch {
	case rep.Hang:
		s.hang(r)
		return
	case rep.Status != 0:
		writeAnthropicError(w, rep.Status, rep.ErrorType, rep.ErrorMessage, rep.RetryAfter)
		return
	}
	msg := s.anthropicReply(req, rep, len(body))
	if !req.Stream {
		switch {
		case rep.HangAfterStart:
			s.hang(r)
			return
		case rep.FailMidStream:
			// Without a stream to break, the same failure is an HTTP error.
			typ := rep.ErrorType
			if typ == "" {
				typ = "overloaded_error"
			}
			writeAnthropicError(w, anthropicStatus(typ), typ, rep.ErrorMessage, "")
			return
		}
		writeJSON(w, http.StatusOK, msg.final())
		return
	}
	if err := s.anthropicStream(w, r, msg, rep); err != nil {
		s.logf("#%d stream: %v", req.Seq, err)
	}
}

func describe(rep Reply) string {
	switch {
	case rep.Hang:
		return "hang"
	case rep.Status != 0:
		return fmt.Sprintf("HTTP %d %s", rep.Status, rep.ErrorType)
	}
	var parts []string
	if rep.Text != "" {
		t := rep.Text
		if len(t) > 40 {
			t = t[:40] + "…"
		}
		parts = append(parts, fmt.Sprintf("text %q", t))
	}
	for _, c := range rep.ToolCalls {
		parts = append(parts, "call "+c.Name)
	}
	if rep.FailMidStream {
		parts = append(parts, "then fail")
	}
	if rep.HangAfterStart {
		parts = append(parts, "start then hang")
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, ", ")
}

// anthropicMsg is a reply rendered as content blocks.
type anthropicMsg struct {
	id, model  string
	blocks     []map[string]any // content blocks as in the final message
	inputs     []string         // for tool_use blocks: the input JSON, streamed as input_json_delta
	stopReason string
	usage      Usage
}

func (s *Server) anthropicReply(req Request, rep Reply, reqBytes int) anthropicMsg {
	m := anthropicMsg{id: s.nextID("msg_fake"), model: req.Model, usage: estimate(rep.Usage, reqBytes, rep)}
	if rep.Text != "" || len(rep.ToolCalls) == 0 {
		m.blocks = append(m.blocks, map[string]any{"type": "text", "text": rep.Text})
		m.inputs = append(m.inputs, "")
	}
	for _, c := range rep.ToolCalls {
		id := c.ID
		if id == "" {
			id = s.nextID("toolu_fake")
		}
		in := inputJSON(c.Input)
		var obj any
		_ = json.Unmarshal([]byte(in), &obj)
		if !req.HasTool(c.Name) {
			s.logf("#%d calls %s, which the request does not offer", req.Seq, c.Name)
		}
		m.blocks = append(m.blocks, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": obj})
		m.inputs = append(m.inputs, in)
	}
	m.stopReason = rep.StopReason
	if m.stopReason == "" {
		m.stopReason = "end_turn"
		if len(rep.ToolCalls) > 0 {
			m.stopReason = "tool_use"
		}
	}
	return m
}

// inputJSON renders a tool call's input as a JSON object text.
func inputJSON(in any) string {
	switch v := in.(type) {
	case nil:
		return "{}"
	case string:
		if json.Valid([]byte(v)) {
			return v
		}
	case json.RawMessage:
		return string(v)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return "{}"
	}
	return string(b)
}

func (m anthropicMsg) usageJSON() map[string]any {
	return map[string]any{
		"input_tokens":                m.usage.InputTokens,
		"cache_creation_input_tokens": m.usage.CacheWriteTokens,
		"cache_read_input_tokens":     m.usage.CacheReadTokens,
		"output_tokens":               m.usage.OutputTokens,
		"service_tier":                "standard",
	}
}

func (m anthropicMsg) envelope(content []map[string]any, stop any, usage map[string]any) map[string]any {
	return map[string]any{
		"id": m.id, "type": "message", "role": "assistant", "model": m.model,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
	}
}

// final is the non-streaming answer.
func (m anthropicMsg) final() map[string]any {
	return m.envelope(m.blocks, m.stopReason, m.usageJSON())
}

// anthropicStream sends the reply as the documented event flow: message_start (empty content, input usage), a
// ping, per block content_block_start / _delta… / _stop, message_delta (stop_reason, cumulative usage),
// message_stop.
func (s *Server) anthropicStream(w http.ResponseWriter, r *http.Request, m anthropicMsg, rep Reply) error {
	e := newSSE(w)
	start := m.usageJSON()
	start["output_tokens"] = 1
	if err := e.event("message_start", map[string]any{"type": "message_start", "message": m.envelope([]map[string]any{}, nil, start)}); err != nil {
		return err
	}
	if rep.HangAfterStart {
		s.hang(r)
		return nil
	}
	if err := e.event("ping", map[string]any{"type": "ping"}); err != nil {
		return err
	}
	if rep.FailMidStream {
		typ, msg := rep.ErrorType, rep.ErrorMessage
		if typ == "" {
			typ = "overloaded_error"
		}
		if msg == "" {
			msg = "Overloaded"
		}
		return e.event("error", map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	}
	for i, b := range m.blocks {
		startBlock := map[string]any{}
		for k, v := range b {
			startBlock[k] = v
		}
		switch b["type"] {
		case "text":
			startBlock["text"] = ""
		case "tool_use":
			startBlock["input"] = map[string]any{}
		}
		if err := e.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": startBlock}); err != nil {
			return err
		}
		switch b["type"] {
		case "text":
			for _, c := range chunks(b["text"].(string), 512) {
				if err := e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": c}}); err != nil {
					return err
				}
			}
		case "tool_use":
			// The API opens a tool_use block with an empty partial_json, then streams the input in pieces.
			parts := append([]string{""}, chunks(m.inputs[i], 512)...)
			for _, c := range parts {
				if err := e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": c}}); err != nil {
					return err
				}
			}
		}
		if err := e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}); err != nil {
			return err
		}
	}
	if err := e.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": m.stopReason, "stop_sequence": nil}, "usage": m.usageJSON()}); err != nil {
		return err
	}
	return e.event("message_stop", map[string]any{"type": "message_stop"})
}
