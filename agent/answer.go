package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// Sources of a result read from a CLI's final answer.
const (
	SourceStructured Source = "structured" // the answer as the CLI validated it against the schema
	SourceAnswer     Source = "answer"     // a JSON object (or Status: line) in the final answer
)

// ParseAnswer reads a step's result from the CLI's final answer only: the
// schema-validated answer when the CLI gave one, else the JSON object the
// answer is (or, failing that, the last result object or Status: line in
// the answer's text). Nothing else the CLI printed — tool output, the
// transcript, the echoed prompt — is looked at, so text an attacker placed
// in a file, an issue or a test's output cannot choose the status. Usage is
// the CLI's measurement when it gave one, else the result's own claim.
func ParseAnswer(role pipeline.Role, f Final) Parsed {
	p := parseAnswer(role, f)
	var notes []string
	if f.Usage != nil {
		p.Usage, p.UsageSource = f.Usage, f.UsageSource
		if raw := bytes.TrimSpace(p.rawUsage); len(raw) > 0 && string(raw) != "null" {
			notes = append(notes, fmt.Sprintf("usage: took %s's report, not the result's own", f.UsageSource))
		}
	} else {
		p.Usage, p.UsageSource = readUsage(nil, p.rawUsage, &notes)
	}
	p.rawUsage = nil
	p.Notes = append(append(slices2(f.Notes), p.Notes...), notes...)
	return p
}

func slices2(s []string) []string { return append([]string(nil), s...) }

func parseAnswer(role pipeline.Role, f Final) Parsed {
	if s := bytes.TrimSpace(f.Structured); len(s) > 0 && string(s) != "null" {
		if r, isObj := decodeResult(s); r != nil {
			return finish(role, *r, SourceStructured, nil)
		} else if !isObj {
			return malformed("the CLI's structured output is not a JSON object")
		}
		return malformed("the CLI's structured output has no status")
	}
	if !f.HasAnswer {
		return malformed("the CLI reported no final answer")
	}
	text := strings.TrimSpace(f.Answer)
	if body, ok := fenced(text); ok {
		text = body
	}
	if r, _ := decodeResult([]byte(text)); r != nil {
		return finish(role, *r, SourceAnswer, nil)
	}
	// The answer is prose around the object: take the last result object in
	// it (the model's own words only; no wrappers to look inside).
	s := &search{budget: maxCandidateBytes, tries: maxCandidates}
	if raw, ok := s.findFlat([]byte(f.Answer)); ok {
		return finish(role, raw, SourceAnswer, []string{"the final answer has text around its JSON result"})
	}
	if p, ok := statusLines(role, f.Answer); ok {
		p.Source = SourceAnswer
		p.Notes = append([]string{"the final answer has no JSON result; read its Status: line"}, p.Notes...)
		return p
	}
	return malformed("the final answer has no JSON result and no Status: line")
}

func malformed(why string) Parsed {
	return Parsed{
		Result: pipeline.Result{Status: pipeline.StatusPartial, Summary: []string{MalformedSummary}},
		Source: SourceMalformed,
		Notes:  []string{why},
	}
}

// fenced returns the body of text when it is one ```json (or ```) fence.
func fenced(text string) (string, bool) {
	if !strings.HasPrefix(text, "```") || !strings.HasSuffix(text, "```") || len(text) < 6 {
		return "", false
	}
	body := text[3 : len(text)-3]
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return "", false
	}
	if lang := strings.TrimSpace(body[:nl]); lang != "" && !strings.EqualFold(lang, "json") {
		return "", false
	}
	return strings.TrimSpace(body[nl+1:]), true
}

// findFlat is find without looking inside JSON strings: in a final answer a
// result quoted inside another object's text is not the agent's result.
func (s *search) findFlat(text []byte) (rawResult, bool) {
	var fallback *rawResult
	spans := objectSpans(text)
	var lastValid *span
	for i := len(spans) - 1; i >= 0 && s.tries > 0; i-- {
		sp := spans[i]
		if lastValid != nil && sp.start >= lastValid.start {
			continue
		}
		if s.budget < sp.end-sp.start {
			continue
		}
		s.tries--
		s.budget -= sp.end - sp.start
		b := text[sp.start:sp.end]
		if !json.Valid(b) {
			continue
		}
		lastValid = &spans[i]
		if r, _ := decodeResult(b); r != nil {
			if r.known {
				return *r, true
			}
			if fallback == nil {
				fallback = r
			}
		}
	}
	if fallback != nil {
		return *fallback, true
	}
	return rawResult{}, false
}

// ResultSchema is the JSON Schema of a role's result object, for CLIs that
// validate their final answer against one (claude --json-schema, codex
// --output-schema). The handoff is a free-form object; strict validators
// that need every property named get StrictResultSchema instead.
func ResultSchema(role pipeline.Role) []byte {
	return resultSchema(role, false)
}

// StrictResultSchema is ResultSchema in the strict dialect of OpenAI's
// structured outputs: every object closed and every property required, so
// the handoff travels as a JSON text (decoded by the harness).
func StrictResultSchema(role pipeline.Role) []byte {
	return resultSchema(role, true)
}

func resultSchema(role pipeline.Role, strict bool) []byte {
	var statuses []string
	for _, st := range pipeline.AllowedStatuses(role) {
		statuses = append(statuses, st.String())
	}
	summary := map[string]any{"type": "array", "items": map[string]any{"type": "string", "maxLength": MaxSummaryLineRunes}, "maxItems": pipeline.MaxSummaryLines}
	handoff := map[string]any{"type": "object", "description": "for the next step; the shape the prompt gives for the status"}
	required := []string{"status", "summary"}
	if strict {
		// Strict mode admits no open object: the handoff is a JSON text.
		handoff = map[string]any{"type": "string", "description": "the handoff object, as JSON text ({} when none)"}
		required = []string{"status", "summary", "handoff"}
		delete(summary, "maxItems")
		summary["items"] = map[string]any{"type": "string"}
	}
	props := map[string]any{
		"status":  map[string]any{"type": "string", "enum": statuses},
		"summary": summary,
		"handoff": handoff,
	}
	if role.Reviews() {
		// Review findings (issue 26): closed objects, so a strict
		// validator takes them too ("" and 0 stand for no file or line).
		finding := map[string]any{
			"type": "object",
			"properties": map[string]any{
				"severity": map[string]any{"type": "string", "enum": []string{"high", "medium", "low"}},
				"file":     map[string]any{"type": "string"},
				"line":     map[string]any{"type": "integer"},
				"end_line": map[string]any{"type": "integer"},
				"problem":  map[string]any{"type": "string"},
				"fix":      map[string]any{"type": "string"},
			},
			"required":             []string{"severity", "problem"},
			"additionalProperties": false,
		}
		findings := map[string]any{"type": "array", "items": finding, "maxItems": pipeline.MaxFindings}
		if strict {
			finding["required"] = []string{"severity", "file", "line", "end_line", "problem", "fix"}
			delete(findings, "maxItems")
			required = append(required, "findings")
		}
		props["findings"] = findings
	}
	schema := map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
	b, _ := json.Marshal(schema) // maps marshal with sorted keys: deterministic
	return b
}

// decodeStrictHandoff turns a strict-schema answer's handoff text back into
// an object, so that both schemas reach the engine the same way.
func decodeStrictHandoff(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	h, ok := m["handoff"]
	if !ok {
		return raw
	}
	var text string
	if json.Unmarshal(h, &text) != nil {
		return raw
	}
	text = strings.TrimSpace(text)
	if text == "" {
		delete(m, "handoff")
	} else if json.Valid([]byte(text)) {
		m["handoff"] = json.RawMessage(text)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}
