package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// Usage sources: where a step's usage was read (issue 13 item 5).
const (
	UsageClaude     = "claude"      // claude -p --output-format json|stream-json: the result object
	UsageCodex      = "codex"       // codex exec --json: turn.completed (or a legacy token_count) event
	UsageResultFile = "result_file" // "usage" in the result object the agent wrote
)

// maxUsageLines bounds how many stdout lines are decoded looking for the
// CLI's usage report, newest first.
const maxUsageLines = 64

// readUsage finds what the step cost. The agent CLI's own report on stdout
// wins over a "usage" the agent wrote in its result: the CLI measures, the
// model can only guess. Formats, as the CLIs document and print them:
//
//   - claude (-p --output-format json, or the last line of stream-json): one
//     object {"type":"result","subtype":"success","is_error":false,
//     "total_cost_usd":0.0123,"usage":{"input_tokens":…,"output_tokens":…,
//     "cache_creation_input_tokens":…,"cache_read_input_tokens":…},…}
//     (anthropics/claude-code: headless mode / SDK result message; older
//     versions wrote "cost_usd").
//   - codex (exec --json): JSON lines; {"type":"turn.completed","usage":
//     {"input_tokens":…,"cached_input_tokens":…,"output_tokens":…}} ends a
//     turn (openai/codex codex-rs/exec/src/exec_events.rs, TurnCompletedEvent;
//     input_tokens includes the cached ones, and the usage is the thread's
//     total so far, so the last event is the step's). Versions before the
//     thread events printed {"msg":{"type":"token_count",…}} with the same
//     fields, flat or under info.total_token_usage. codex reports no cost.
//   - the result object: "usage": {"cost_usd":…,"input_tokens":…,
//     "output_tokens":…,"cache_read_tokens":…,"cache_write_tokens":…}.
//
// Anything malformed (not numbers, negative, fractional tokens, beyond the
// bounds of pipeline.Usage) is dropped with a note: usage never fails a step.
func readUsage(stdout []byte, result json.RawMessage, notes *[]string) (*pipeline.Usage, string) {
	if u, src, ok := cliUsage(stdout, notes); ok {
		if len(bytes.TrimSpace(result)) > 0 && string(bytes.TrimSpace(result)) != "null" {
			*notes = append(*notes, fmt.Sprintf("usage: took %s's report, not the result's own", src))
		}
		return u, src
	}
	result = bytes.TrimSpace(result)
	if len(result) == 0 || string(result) == "null" {
		return nil, ""
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil || m == nil {
		*notes = append(*notes, "usage in the result is not a JSON object; ignored")
		return nil, ""
	}
	u, err := usageFields(m, []string{"cost_usd", "total_cost_usd"},
		usageKeys{input: []string{"input_tokens"}, output: []string{"output_tokens"},
			cacheRead:  []string{"cache_read_tokens", "cache_read_input_tokens"},
			cacheWrite: []string{"cache_write_tokens", "cache_creation_input_tokens"}}, false)
	if err != nil {
		*notes = append(*notes, "usage in the result ignored: "+err.Error())
		return nil, ""
	}
	return u, UsageResultFile
}

// cliUsage reads the claude or codex report from stdout, newest line first.
func cliUsage(stdout []byte, notes *[]string) (*pipeline.Usage, string, bool) {
	tried := 0
	for end := len(stdout); end > 0 && tried < maxUsageLines; {
		start := bytes.LastIndexByte(stdout[:end], '\n') + 1
		line := bytes.TrimSpace(stdout[start:end])
		end = start - 1
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		if !bytes.Contains(line, []byte(`"result"`)) && !bytes.Contains(line, []byte(`turn.completed`)) &&
			!bytes.Contains(line, []byte(`token_count`)) {
			continue
		}
		tried++
		var m map[string]json.RawMessage
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch typ := jsonString(m["type"]); {
		case typ == "result" && (m["usage"] != nil || m["total_cost_usd"] != nil || m["cost_usd"] != nil):
			u, err := claudeUsage(m)
			if err != nil {
				*notes = append(*notes, "usage in claude's result ignored: "+err.Error())
				return nil, "", false
			}
			return u, UsageClaude, true
		case typ == "turn.completed":
			u, err := codexUsage(m["usage"])
			if err != nil {
				*notes = append(*notes, "usage in codex's turn.completed ignored: "+err.Error())
				return nil, "", false
			}
			return u, UsageCodex, true
		case typ == "" && m["msg"] != nil:
			var msg map[string]json.RawMessage
			if json.Unmarshal(m["msg"], &msg) != nil || jsonString(msg["type"]) != "token_count" {
				continue
			}
			raw := json.RawMessage(m["msg"])
			var info struct {
				Total json.RawMessage `json:"total_token_usage"`
			}
			if msg["info"] != nil && json.Unmarshal(msg["info"], &info) == nil && info.Total != nil {
				raw = info.Total
			}
			u, err := codexUsage(raw)
			if err != nil {
				*notes = append(*notes, "usage in codex's token_count ignored: "+err.Error())
				return nil, "", false
			}
			return u, UsageCodex, true
		}
	}
	return nil, "", false
}

func claudeUsage(m map[string]json.RawMessage) (*pipeline.Usage, error) {
	fields := map[string]json.RawMessage{}
	if m["usage"] != nil {
		if err := json.Unmarshal(m["usage"], &fields); err != nil || fields == nil {
			return nil, fmt.Errorf("usage is not an object")
		}
	}
	for _, k := range []string{"total_cost_usd", "cost_usd"} {
		if v, ok := m[k]; ok {
			fields[k] = v
		}
	}
	return usageFields(fields, []string{"total_cost_usd", "cost_usd"},
		usageKeys{input: []string{"input_tokens"}, output: []string{"output_tokens"},
			cacheRead: []string{"cache_read_input_tokens"}, cacheWrite: []string{"cache_creation_input_tokens"}}, false)
}

// codexUsage reads codex's token counts: input_tokens includes the cached
// ones, which pipeline.Usage counts apart.
func codexUsage(raw json.RawMessage) (*pipeline.Usage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("usage is not an object")
	}
	u, err := usageFields(fields, nil, usageKeys{input: []string{"input_tokens"}, output: []string{"output_tokens"},
		cacheRead: []string{"cached_input_tokens"}, cacheWrite: []string{"cache_write_input_tokens"}}, true)
	if err != nil {
		return nil, err
	}
	if u.CacheReadTokens > u.InputTokens {
		return nil, fmt.Errorf("cached_input_tokens %d is more than input_tokens %d", u.CacheReadTokens, u.InputTokens)
	}
	u.InputTokens -= u.CacheReadTokens
	return u, nil
}

type usageKeys struct{ input, output, cacheRead, cacheWrite []string }

// usageFields reads a cost and token counts from the first present of each
// key list. requireTokens: a report without input and output counts is no report.
func usageFields(m map[string]json.RawMessage, costKeys []string, k usageKeys, requireTokens bool) (*pipeline.Usage, error) {
	u := pipeline.Usage{Steps: 1}
	found := false
	var problems []string
	for _, key := range costKeys {
		raw, ok := m[key]
		if !ok || string(raw) == "null" {
			continue
		}
		f, err := jsonNumber(raw)
		switch {
		case err != nil:
			problems = append(problems, key+" "+err.Error())
		case f < 0 || f*1e6 > pipeline.MaxStepCostMicros:
			problems = append(problems, fmt.Sprintf("%s %v is outside 0 to %d", key, f, pipeline.MaxStepCostMicros/1_000_000))
		default:
			u.CostMicros, u.Priced, found = int64(math.Round(f*1e6)), 1, true
		}
		break
	}
	tokens := func(keys []string, dst *int64) bool {
		for _, key := range keys {
			raw, ok := m[key]
			if !ok || string(raw) == "null" {
				continue
			}
			f, err := jsonNumber(raw)
			switch {
			case err != nil:
				problems = append(problems, key+" "+err.Error())
			case f != math.Trunc(f) || f < 0 || f > pipeline.MaxStepTokens:
				problems = append(problems, fmt.Sprintf("%s %v is not a whole number from 0 to %d", key, f, int64(pipeline.MaxStepTokens)))
			default:
				*dst, found = int64(f), true
				return true
			}
			return false
		}
		return false
	}
	in := tokens(k.input, &u.InputTokens)
	out := tokens(k.output, &u.OutputTokens)
	tokens(k.cacheRead, &u.CacheReadTokens)
	tokens(k.cacheWrite, &u.CacheWriteTokens)
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	if !found || requireTokens && !(in && out) {
		return nil, fmt.Errorf("no cost or token counts in it")
	}
	if err := u.Check(); err != nil {
		return nil, err
	}
	return &u, nil
}

// jsonNumber reads a JSON number (not a string, not a huge exponent).
func jsonNumber(raw json.RawMessage) (float64, error) {
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return 0, fmt.Errorf("is not valid JSON")
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("is not a number")
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("is not a finite number")
	}
	return f, nil
}

func jsonString(raw json.RawMessage) string {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
