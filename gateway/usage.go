package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Provider names the wire format a request speaks.
type Provider int

// The providers the gateway meters.
const (
	ProviderNone Provider = iota
	// Anthropic is the Messages API (POST /v1/messages).
	Anthropic
	// OpenAIResponses is the Responses API (POST /v1/responses).
	OpenAIResponses
	// OpenAIChat is Chat Completions (POST /v1/chat/completions).
	OpenAIChat
	// Gemini is generateContent / streamGenerateContent (POST /v1beta/models/{model}:…).
	Gemini
)

var providerNames = [...]string{"none", "anthropic", "openai-responses", "openai-chat", "gemini"}

func (p Provider) String() string {
	if p >= 0 && int(p) < len(providerNames) {
		return providerNames[p]
	}
	return fmt.Sprintf("provider(%d)", int(p))
}

// Upstream is the provider family whose upstream (base URL, key) a provider uses.
func (p Provider) Upstream() Upstream {
	switch p {
	case Anthropic:
		return UpstreamAnthropic
	case OpenAIResponses, OpenAIChat:
		return UpstreamOpenAI
	case Gemini:
		return UpstreamGemini
	}
	return UpstreamNone
}

// Upstream names a configured upstream: one base URL and one key serve every wire format of a provider.
type Upstream int

// The upstreams.
const (
	UpstreamNone Upstream = iota
	UpstreamAnthropic
	UpstreamOpenAI
	UpstreamGemini
)

var upstreamNames = [...]string{"none", "anthropic", "openai", "gemini"}

func (u Upstream) String() string {
	if u >= 0 && int(u) < len(upstreamNames) {
		return upstreamNames[u]
	}
	return fmt.Sprintf("upstream(%d)", int(u))
}

// Tokens are one answer's token counts by the kind they are priced at. Input is the uncached input: the
// providers that count cached tokens inside their input figure (OpenAI, Gemini) have them taken out.
type Tokens struct {
	Input      int64 `json:"input,omitempty"`
	Output     int64 `json:"output,omitempty"`
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
}

// Total is every token counted.
func (t Tokens) Total() int64 { return t.Input + t.Output + t.CacheRead + t.CacheWrite }

// Add adds u to t.
func (t *Tokens) Add(u Tokens) {
	t.Input += u.Input
	t.Output += u.Output
	t.CacheRead += u.CacheRead
	t.CacheWrite += u.CacheWrite
}

// Bytes per token of the conservative estimates: English prose and code run at about four bytes a token in the
// providers' tokenizers, and the JSON and SSE framing around the text inflates the byte counts further, so these
// divisors count more tokens than were used, never fewer.
const (
	requestBytesPerToken  = 3
	responseBytesPerToken = 4
)

// EstimateInput is the input a request whose answer never reported usage is charged: its body's bytes divided
// by requestBytesPerToken, rounded up.
func EstimateInput(bodyBytes int64) int64 {
	return (bodyBytes + requestBytesPerToken - 1) / requestBytesPerToken
}

// estimateOutput is the output charged for an answer cut off before it reported its final output count: the
// bytes of the answer received, framing and all, divided by responseBytesPerToken, rounded up.
func estimateOutput(respBytes int64) int64 {
	return (respBytes + responseBytesPerToken - 1) / responseBytesPerToken
}

// maxEvent bounds one buffered SSE event or one non-streamed JSON body kept for reading its usage. An OpenAI
// response.completed event repeats the whole answer, so this is generous; past it the event passes through
// unread and the answer is charged by the estimate.
const maxEvent = 16 << 20

// meter reads usage from one answer as it passes through, without holding it back: Write is called with every
// chunk forwarded to the client. It understands non-streamed JSON and SSE streams of all four formats.
type meter struct {
	provider Provider
	stream   bool // the answer is an SSE stream (from its content type)

	model string // as the answer names it, "" until it does

	tokens     Tokens
	inputSeen  bool // the answer reported its input
	outputSeen bool // the answer reported its final output (end of message, completed response, last chunk)
	bytes      int64
	overflow   bool // an event or body was too large to read

	// line assembly for SSE; body for JSON
	buf  []byte
	data []byte // the current event's data lines, joined by "\n"
	body []byte
}

func newMeter(p Provider, stream bool) *meter {
	return &meter{provider: p, stream: stream}
}

// Write takes the next chunk of the answer. It never fails: what cannot be read is charged by the estimate.
func (m *meter) Write(p []byte) (int, error) {
	m.bytes += int64(len(p))
	if !m.stream {
		if !m.overflow {
			if len(m.body)+len(p) > maxEvent {
				m.overflow, m.body = true, nil
			} else {
				m.body = append(m.body, p...)
			}
		}
		return len(p), nil
	}
	m.buf = append(m.buf, p...)
	start := 0
	for {
		i := bytes.IndexByte(m.buf[start:], '\n')
		if i < 0 {
			break
		}
		m.line(bytes.TrimSuffix(m.buf[start:start+i], []byte{'\r'}))
		start += i + 1
	}
	// Keep the unfinished line at the front of the same array: no allocation per chunk.
	m.buf = m.buf[:copy(m.buf, m.buf[start:])]
	if len(m.buf) > maxEvent {
		m.overflow, m.buf = true, nil
	}
	return len(p), nil
}

// line handles one SSE line (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation):
// data lines accumulate, a blank line dispatches the event, other fields (event:, id:, comments) are not needed —
// every format puts the event's type inside its JSON too.
func (m *meter) line(l []byte) {
	if len(l) == 0 {
		if len(m.data) > 0 {
			m.event(m.data)
		}
		m.data = m.data[:0]
		return
	}
	v, ok := bytes.CutPrefix(l, []byte("data:"))
	if !ok {
		return
	}
	v = bytes.TrimPrefix(v, []byte{' '})
	if len(m.data)+len(v) > maxEvent {
		m.overflow = true
		return
	}
	if len(m.data) > 0 {
		m.data = append(m.data, '\n')
	}
	m.data = append(m.data, v...)
}

// Close is called when the answer ended (completely or not): a last event without its blank line, or the JSON
// body, is read.
func (m *meter) Close() {
	if m.stream {
		if len(m.buf) > 0 {
			m.line(bytes.TrimSuffix(m.buf, []byte{'\r'}))
			m.buf = nil
		}
		if len(m.data) > 0 {
			m.event(m.data)
			m.data = nil
		}
		return
	}
	if !m.overflow && len(m.body) > 0 {
		m.json(m.body)
	}
	m.body = nil
}

// Most events of a stream are text deltas that carry no usage, so an event is decoded only when it may name a
// key the meter reads. The test must never miss a key encoding/json would match: json matches keys with
// bytes.EqualFold (so "USAGE" and "u\u017fage", with U+017F LATIN SMALL LETTER LONG S, are "usage") and unescapes
// them first (so "\u0075sage" is too). Hence the test is on how each key ends, in letters whose only case fold is
// their ASCII pair (a e g t d l i o n; s and k also fold to non-ASCII letters): a key is "usage" only if the event
// holds a quote right after "age" in any case, or an escape \u somewhere. A text delta rarely holds either, and a
// false positive costs one decode, never a reading.
var (
	endUsage         = [3]byte{'a', 'g', 'e'} // "usage"
	endUsageMetadata = [3]byte{'a', 't', 'a'} // "usageMetadata"
	endModel         = [3]byte{'d', 'e', 'l'} // "model"
	endModelVersion  = [3]byte{'i', 'o', 'n'} // "modelVersion"
)

// mayHoldKey reports whether data may hold a JSON key that json.Unmarshal would match to a name ending in end
// (3 ASCII letters with no non-ASCII case fold) or, when alt is set, in alt.
func mayHoldKey(data []byte, end [3]byte, alt *[3]byte) bool {
	// One pass, byte by byte: events are short and full of quotes, so a byte search per quote costs more.
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '\\':
			if i+1 < len(data) && data[i+1] == 'u' {
				return true
			}
		case '"':
			if i < 3 {
				continue
			}
			// ASCII letters only: OR-ing 0x20 lowercases them and maps no other byte onto a lowercase letter.
			w := [3]byte{data[i-3] | 0x20, data[i-2] | 0x20, data[i-1] | 0x20}
			if w == end || (alt != nil && w == *alt) {
				return true
			}
		}
	}
	return false
}

func (m *meter) event(data []byte) {
	switch m.provider {
	case Gemini:
		// modelVersion comes with usageMetadata in every chunk; a chunk with neither is not read.
		if mayHoldKey(data, endUsageMetadata, &endModelVersion) {
			m.gemini(data)
		}
	default:
		alt := &endModel
		if m.model != "" {
			alt = nil
		}
		if mayHoldKey(data, endUsage, alt) {
			m.json(data)
		}
	}
}

// json reads one JSON document: a non-streamed answer, or one event's data.
func (m *meter) json(data []byte) {
	switch m.provider {
	case Anthropic:
		m.anthropic(data)
	case OpenAIResponses:
		m.responses(data)
	case OpenAIChat:
		m.chat(data)
	case Gemini:
		data = bytes.TrimSpace(data)
		if len(data) > 0 && data[0] == '[' {
			// streamGenerateContent without alt=sse answers a JSON array of responses.
			var arr []json.RawMessage
			if json.Unmarshal(data, &arr) == nil {
				for _, el := range arr {
					m.gemini(el)
				}
			}
			return
		}
		m.gemini(data)
	}
}

// Anthropic Messages usage (https://docs.anthropic.com/en/api/messages,
// https://docs.anthropic.com/en/docs/build-with-claude/streaming): a message carries usage {input_tokens,
// cache_creation_input_tokens, cache_read_input_tokens, output_tokens}; a stream sends it in message_start (input,
// cache, a first output count) and again in message_delta, whose counts are cumulative — the last one wins. The
// message_delta is the end of the message's billing, so it marks the output as final.
type anthropicUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

func (m *meter) anthropic(data []byte) {
	var ev struct {
		Type    string          `json:"type"`
		Model   string          `json:"model"`
		Usage   *anthropicUsage `json:"usage"`
		Message *struct {
			Model string          `json:"model"`
			Usage *anthropicUsage `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	switch ev.Type {
	case "message": // a non-streamed answer
		m.setModel(ev.Model)
		if ev.Usage != nil {
			m.anthropicUsage(ev.Usage)
			m.outputSeen = true
		}
	case "message_start":
		if ev.Message != nil {
			m.setModel(ev.Message.Model)
			if ev.Message.Usage != nil {
				m.anthropicUsage(ev.Message.Usage)
			}
		}
	case "message_delta":
		if ev.Usage != nil {
			m.anthropicUsage(ev.Usage)
			m.outputSeen = true
		}
	}
}

func (m *meter) anthropicUsage(u *anthropicUsage) {
	if u.InputTokens != nil {
		m.tokens.Input = nonNeg(*u.InputTokens)
		m.inputSeen = true
	}
	if u.CacheCreationInputTokens != nil {
		m.tokens.CacheWrite = nonNeg(*u.CacheCreationInputTokens)
	}
	if u.CacheReadInputTokens != nil {
		m.tokens.CacheRead = nonNeg(*u.CacheReadInputTokens)
	}
	if u.OutputTokens != nil {
		m.tokens.Output = max(m.tokens.Output, nonNeg(*u.OutputTokens))
	}
}

// OpenAI Responses usage (https://platform.openai.com/docs/api-reference/responses/object): usage
// {input_tokens, input_tokens_details.cached_tokens, output_tokens}, input counting the cached tokens. A stream
// carries it in the terminal event: response.completed, response.incomplete or response.failed, each holding the
// response object.
type openaiUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens int64 `json:"output_tokens"`
}

func (m *meter) responses(data []byte) {
	var ev struct {
		Type     string       `json:"type"`
		Object   string       `json:"object"`
		Model    string       `json:"model"`
		Usage    *openaiUsage `json:"usage"`
		Response *struct {
			Model string       `json:"model"`
			Usage *openaiUsage `json:"usage"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	if ev.Object == "response" { // a non-streamed answer
		m.setModel(ev.Model)
		if ev.Usage != nil {
			m.openaiUsage(ev.Usage.InputTokens, ev.Usage.InputTokensDetails.CachedTokens, ev.Usage.OutputTokens)
		}
		return
	}
	if ev.Response == nil {
		return
	}
	m.setModel(ev.Response.Model)
	if ev.Response.Usage != nil && strings.HasPrefix(ev.Type, "response.") {
		u := ev.Response.Usage
		m.openaiUsage(u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens)
	}
}

// Chat Completions usage (https://platform.openai.com/docs/api-reference/chat/object): usage {prompt_tokens,
// prompt_tokens_details.cached_tokens, completion_tokens}; streamed, only when the request asked
// stream_options.include_usage, in a last chunk whose choices are empty.
func (m *meter) chat(data []byte) {
	if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
		return
	}
	var ev struct {
		Model string `json:"model"`
		Usage *struct {
			PromptTokens        int64 `json:"prompt_tokens"`
			PromptTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	m.setModel(ev.Model)
	if ev.Usage != nil {
		m.openaiUsage(ev.Usage.PromptTokens, ev.Usage.PromptTokensDetails.CachedTokens, ev.Usage.CompletionTokens)
	}
}

func (m *meter) openaiUsage(input, cached, output int64) {
	input, cached, output = nonNeg(input), nonNeg(cached), nonNeg(output)
	cached = min(cached, input)
	m.tokens.Input, m.tokens.CacheRead, m.tokens.Output = input-cached, cached, output
	m.inputSeen, m.outputSeen = true, true
}

// Gemini usage (https://ai.google.dev/api/generate-content#UsageMetadata): usageMetadata {promptTokenCount
// (which includes cachedContentTokenCount), cachedContentTokenCount, candidatesTokenCount, thoughtsTokenCount,
// toolUsePromptTokenCount}; thinking tokens are billed as output, tool-use prompt tokens as input. Streamed, every
// chunk carries the counts so far, and the chunk with a finishReason ends the answer.
func (m *meter) gemini(data []byte) {
	var ev struct {
		ModelVersion  string `json:"modelVersion"`
		UsageMetadata *struct {
			PromptTokenCount        int64 `json:"promptTokenCount"`
			CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
			CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
			ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
			ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
		} `json:"usageMetadata"`
		Candidates []struct {
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	m.setModel(ev.ModelVersion)
	if u := ev.UsageMetadata; u != nil {
		prompt := nonNeg(u.PromptTokenCount) + nonNeg(u.ToolUsePromptTokenCount)
		cached := min(nonNeg(u.CachedContentTokenCount), prompt)
		m.tokens.Input, m.tokens.CacheRead = prompt-cached, cached
		m.tokens.Output = max(m.tokens.Output, nonNeg(u.CandidatesTokenCount)+nonNeg(u.ThoughtsTokenCount))
		m.inputSeen = true
	}
	for _, c := range ev.Candidates {
		if c.FinishReason != "" {
			m.outputSeen = true
		}
	}
	if !m.stream && ev.UsageMetadata != nil {
		m.outputSeen = true
	}
}

func (m *meter) setModel(s string) {
	if s != "" && m.model == "" {
		m.model = s
	}
}

func nonNeg(v int64) int64 { return max(v, 0) }

// Reading is what the meter made of an answer.
type Reading struct {
	Model     string // the model the answer named ("" when it named none)
	Tokens    Tokens
	Estimated bool // some count is the conservative estimate, not the provider's report
}

// reading applies the conservative rule to what was seen. reqBytes is the size of the request body forwarded;
// answered tells whether the upstream answered with a success status (an error answer is not billed by the
// providers and counts nothing).
//
// The rule: a success answer that never reported its input is charged EstimateInput(reqBytes) input tokens; one
// that never reported its final output is charged the larger of the output it reported so far and
// estimateOutput(bytes received). So cutting an answer off (a killed CLI, a dropped connection) never makes it
// cheaper than it was.
func (m *meter) reading(reqBytes int64, answered bool) Reading {
	r := Reading{Model: m.model, Tokens: m.tokens}
	if !answered {
		return Reading{Model: m.model}
	}
	if !m.inputSeen {
		r.Tokens.Input = EstimateInput(reqBytes)
		r.Estimated = true
	}
	if !m.outputSeen {
		r.Tokens.Output = max(r.Tokens.Output, estimateOutput(m.bytes))
		r.Estimated = true
	}
	return r
}
