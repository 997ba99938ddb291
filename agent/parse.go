package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// Source says where a step's result was found.
type Source string

// Sources, in the order they are tried (ARCHITECTURE.md §5).
const (
	SourceFile       Source = "file"        // BAZINGA_RESULT_FILE
	SourceStdoutJSON Source = "stdout_json" // last JSON object with a status on stdout
	SourceStatusLine Source = "status_line" // "Status: X" lines
	SourceMalformed  Source = "malformed"   // nothing usable: PARTIAL
)

// Limits on what a result may carry into the session.
const (
	MaxSummaryLineRunes = 200
	MaxHandoffBytes     = 16 << 10
)

// MalformedSummary is the summary of a step whose output had no result.
const MalformedSummary = "malformed output"

// Parsed is a step's result as read from its output, with where it came from
// and notes on anything the harness changed (aliases, disallowed statuses,
// dropped handoffs) so that a human can see why.
type Parsed struct {
	Result pipeline.Result
	Source Source
	Notes  []string
	// Usage is what the step cost, when the agent CLI or the result reported
	// it (nil otherwise); UsageSource says which (UsageClaude, …).
	Usage       *pipeline.Usage
	UsageSource string
	// rawUsage is the result object's own "usage", read by readUsage.
	rawUsage json.RawMessage
}

// Bounds on the JSON search, so that hostile output costs linear time.
const (
	maxSearchDepth      = 3        // result text inside a wrapper inside a wrapper…
	maxCandidates       = 256      // objects tried per search
	maxCandidateBytes   = 16 << 20 // bytes validated per search
	maxBraceDepth       = 10000    // encoding/json's own nesting limit
	maxStatusLineLength = 200
)

// rawResult is a result object before validation.
type rawResult struct {
	status  string
	summary json.RawMessage
	handoff json.RawMessage
	usage   json.RawMessage
	// findings are the review findings (issue 26), read for reviewers only.
	findings json.RawMessage
	known    bool // status names a known status
}

// ParseResult reads a step's result: the result file if it holds a JSON
// object with a status; else the last such object on stdout (also inside the
// text of agent CLI wrappers such as claude's {"type":"result","result":"…"}
// and inside ```json fences); else "Status: X" lines; else PARTIAL with the
// summary "malformed output". The status is validated for the role: an
// alias is normalised, an unknown or disallowed status becomes PARTIAL with a
// note. It never panics. The step's usage is read too (readUsage): a
// malformed one is a note, never a different result.
func ParseResult(role pipeline.Role, resultFile []byte, stdout []byte) Parsed {
	p := parseResult(role, resultFile, stdout)
	p.Usage, p.UsageSource = readUsage(stdout, p.rawUsage, &p.Notes)
	p.rawUsage = nil
	return p
}

func parseResult(role pipeline.Role, resultFile []byte, stdout []byte) Parsed {
	var notes []string
	if len(bytes.TrimSpace(resultFile)) > 0 {
		if raw, whole, ok := resultFromFile(resultFile); ok {
			if !whole {
				notes = append(notes, "result file is not bare JSON; used the result object found in it")
			}
			return finish(role, raw, SourceFile, notes)
		}
		notes = append(notes, "result file has no JSON object with a status; ignored")
	}
	s := &search{budget: maxCandidateBytes, tries: maxCandidates}
	if raw, ok := s.find(stdout, 0); ok {
		return finish(role, raw, SourceStdoutJSON, notes)
	}
	// Status lines on stdout itself, else in the model's text inside a
	// wrapper's JSON string (claude -p --output-format json), whose lines are
	// not lines of stdout. s.texts is in search order: the last output first.
	texts := append([]string{string(stdout)}, s.texts...)
	for i := range texts {
		if p, ok := statusLines(role, texts[i]); ok {
			p.Notes = append(notes, p.Notes...)
			return p
		}
	}
	notes = append(notes, "no result file, no JSON result on stdout and no Status: line")
	return Parsed{
		Result: pipeline.Result{Status: pipeline.StatusPartial, Summary: []string{MalformedSummary}},
		Source: SourceMalformed,
		Notes:  notes,
	}
}

// resultFromFile reads the result file: a bare JSON object, or failing that
// a result object somewhere in its text (whole is then false).
func resultFromFile(b []byte) (raw rawResult, whole bool, ok bool) {
	if r, isObj := decodeResult(bytes.TrimSpace(b)); isObj && r != nil {
		return *r, true, true
	}
	s := &search{budget: maxCandidateBytes, tries: maxCandidates}
	raw, ok = s.find(b, 0)
	return raw, false, ok
}

// decodeResult decodes one JSON object. isObj says whether b is a JSON
// object at all; the result is nil when it has no string "status".
func decodeResult(b []byte) (r *rawResult, isObj bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, false
	}
	st, ok := lookupFold(m, "status")
	if !ok {
		return nil, true
	}
	var status string
	if err := json.Unmarshal(st, &status); err != nil {
		return nil, true
	}
	r = &rawResult{status: status}
	r.summary, _ = lookupFold(m, "summary")
	r.handoff, _ = lookupFold(m, "handoff")
	r.usage, _ = lookupFold(m, "usage")
	r.findings, _ = lookupFold(m, "findings")
	if parsed, err := pipeline.ParseStatus(status); err == nil && parsed != pipeline.StatusUnknown {
		r.known = true
	}
	return r, true
}

// lookupFold finds key exactly, else case-insensitively (first in sorted order).
func lookupFold(m map[string]json.RawMessage, key string) (json.RawMessage, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if strings.EqualFold(k, key) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, false
	}
	slices.Sort(keys)
	return m[keys[0]], true
}

// search looks for the last result object in text, within a budget.
type search struct {
	budget int      // bytes left to validate
	tries  int      // candidates left to try
	texts  []string // wrapper texts seen, for the Status: line fallback
}

type span struct{ start, end int }

// find returns the last JSON object with a known status in text (else the
// last with any status), looking inside string fields of other JSON objects
// for wrapped model output.
func (s *search) find(text []byte, depth int) (rawResult, bool) {
	var fallback *rawResult
	spans := objectSpans(text)
	var lastValid *span
	for i := len(spans) - 1; i >= 0; i-- {
		sp := spans[i]
		if lastValid != nil && sp.start >= lastValid.start {
			continue // a value inside an object already looked at
		}
		if s.tries <= 0 {
			break
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
		r, _ := decodeResult(b)
		if r != nil {
			if r.known {
				return *r, true
			}
			if fallback == nil {
				fallback = r
			}
			continue
		}
		if depth >= maxSearchDepth {
			continue
		}
		strs := wrappedTexts(b)
		for j := len(strs) - 1; j >= 0; j-- {
			s.texts = append(s.texts, strs[j])
			inner, ok := s.find([]byte(strs[j]), depth+1)
			if ok && inner.known {
				return inner, true
			}
			if ok && fallback == nil {
				fallback = &inner
			}
		}
	}
	if fallback != nil {
		return *fallback, true
	}
	return rawResult{}, false
}

// objectSpans finds every balanced {…} in text in one linear pass, in order
// of their closing brace. Strings are tracked only inside braces (prose
// quotes do not count), and a raw newline inside a "string" means the brace
// was prose after all, so the scan starts over from there.
func objectSpans(text []byte) []span {
	var (
		spans []span
		stack []int
		inStr bool
		esc   bool
	)
	for i, c := range text {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			case c == '\n':
				inStr = false
				stack = stack[:0]
			}
			continue
		}
		switch c {
		case '{':
			if len(stack) < maxBraceDepth {
				stack = append(stack, i)
			}
		case '}':
			if n := len(stack); n > 0 {
				spans = append(spans, span{stack[n-1], i + 1})
				stack = stack[:n-1]
			}
		case '"':
			if len(stack) > 0 {
				inStr = true
			}
		}
	}
	return spans
}

// wrappedTexts returns the string values of a JSON document that may hold a
// result (they mention "status"), in document order with object keys sorted.
func wrappedTexts(b []byte) []string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if strings.Contains(strings.ToLower(x), "status") {
				out = append(out, x)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return out
}

var (
	statusLineRe  = regexp.MustCompile(`(?im)^[ \t>*#_-]*status[ \t*_]*[:=][ \t*_]*([^\n]*)$`)
	summaryLineRe = regexp.MustCompile(`(?im)^[ \t>*#_-]*summary[ \t*_]*:[ \t*_]*([^\n]*)$`)
	keyLineRe     = regexp.MustCompile(`^[ \t>*#_-]*[A-Za-z][A-Za-z _-]{0,30}[ \t*_]*:`)
	statusWordRe  = regexp.MustCompile(`[A-Za-z][A-Za-z_]*`)
)

// statusLines reads "Status: X" lines (the last wins) and the summary from
// "Summary:" lines, or else the lines after the status.
func statusLines(role pipeline.Role, text string) (Parsed, bool) {
	locs := statusLineRe.FindAllStringSubmatchIndex(text, -1)
	if len(locs) == 0 {
		return Parsed{}, false
	}
	// The last line that names a known status wins; failing that, the last line.
	pick := locs[len(locs)-1]
	for i := len(locs) - 1; i >= 0; i-- {
		if _, ok := parseStatusValue(text[locs[i][2]:locs[i][3]]); ok {
			pick = locs[i]
			break
		}
	}
	value := text[pick[2]:pick[3]]
	status, ok := parseStatusValue(value)
	if !ok {
		status = capRunes(strings.TrimSpace(value), maxStatusLineLength)
	}
	raw := rawResult{status: status, known: ok}
	var summary []string
	if sm := summaryLineRe.FindAllStringSubmatchIndex(text, -1); len(sm) > 0 {
		for _, m := range sm {
			if line := strings.TrimSpace(text[m[2]:m[3]]); line != "" {
				summary = append(summary, line)
			} else {
				summary = append(summary, linesAfter(text[m[1]:], pipeline.MaxSummaryLines)...)
			}
		}
	} else {
		summary = linesAfter(text[pick[1]:], pipeline.MaxSummaryLines)
	}
	if len(summary) > 0 {
		raw.summary, _ = json.Marshal(summary)
	}
	return finish(role, raw, SourceStatusLine, nil), true
}

// parseStatusValue reads the value of a Status: line: the whole value
// ("ready for qa"), else its first word ("PASS - all good").
func parseStatusValue(v string) (string, bool) {
	v = strings.Trim(strings.TrimSpace(v), "*_`'\".!")
	if st, err := pipeline.ParseStatus(v); err == nil && st != pipeline.StatusUnknown {
		return st.String(), true
	}
	if w := statusWordRe.FindString(v); w != "" {
		if st, err := pipeline.ParseStatus(w); err == nil && st != pipeline.StatusUnknown {
			return st.String(), true
		}
	}
	return v, false
}

// linesAfter returns up to n non-empty lines from the start of text,
// stopping at a blank line once some were found, or at the next "Key:" line.
func linesAfter(text string, n int) []string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		t := strings.TrimSpace(line)
		if t == "" {
			if len(out) > 0 {
				break
			}
			continue
		}
		if keyLineRe.MatchString(t) {
			break
		}
		out = append(out, strings.TrimLeft(t, "-*• \t"))
		if len(out) == n {
			break
		}
	}
	return out
}

// finish validates a raw result for the role.
func finish(role pipeline.Role, raw rawResult, src Source, notes []string) Parsed {
	p := Parsed{Source: src, Notes: notes}
	p.Result.Status = validStatus(role, raw.status, &p.Notes)
	p.Result.Summary = cleanSummary(raw.summary, &p.Notes)
	p.Result.Handoff = cleanHandoff(raw.handoff, &p.Notes)
	p.Result.Findings = cleanFindings(role, raw.findings, &p.Notes)
	p.rawUsage = raw.usage
	return p
}

func validStatus(role pipeline.Role, s string, notes *[]string) pipeline.Status {
	st, err := pipeline.ParseStatus(s)
	if err != nil || st == pipeline.StatusUnknown {
		*notes = append(*notes, fmt.Sprintf("unknown status %q, treated as PARTIAL", capRunes(s, 60)))
		return pipeline.StatusPartial
	}
	norm, ok := pipeline.NormalizeStatus(role, st)
	if st.IsAlias() {
		*notes = append(*notes, fmt.Sprintf("alias %s → %s", st, st.Canonical()))
	}
	if !ok {
		*notes = append(*notes, fmt.Sprintf("status %s not allowed for %s, treated as PARTIAL", st.Canonical(), role))
	}
	return norm
}

// cleanSummary accepts a list of strings or one string, keeps at most three
// non-empty lines, each one line of at most MaxSummaryLineRunes runes.
func cleanSummary(raw json.RawMessage, notes *[]string) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var lines []string
	var list []any
	var one string
	switch {
	case json.Unmarshal(raw, &list) == nil:
		for _, e := range list {
			switch x := e.(type) {
			case string:
				lines = append(lines, x)
			case nil:
			default:
				b, _ := json.Marshal(x)
				lines = append(lines, string(b))
			}
		}
	case json.Unmarshal(raw, &one) == nil:
		lines = strings.Split(one, "\n")
	default:
		*notes = append(*notes, "summary is neither a string nor a list, dropped")
		return nil
	}
	var out []string
	for _, l := range lines {
		l = strings.Join(strings.Fields(stripInvisible(l)), " ")
		if l == "" {
			continue
		}
		out = append(out, capRunes(l, MaxSummaryLineRunes))
	}
	if len(out) > pipeline.MaxSummaryLines {
		*notes = append(*notes, fmt.Sprintf("summary had %d lines, kept %d", len(out), pipeline.MaxSummaryLines))
		out = out[:pipeline.MaxSummaryLines]
	}
	return out
}

// maxFindingsRead bounds the list entries decoded at all: a hostile list
// of millions costs no more than this.
const maxFindingsRead = 4 * pipeline.MaxFindings

// cleanFindings reads a reviewer's findings (issue 26): a list of objects,
// each checked and bounded by pipeline.BoundFindings. An entry that is not
// a finding object is dropped with a note; findings of other roles are
// ignored with a note.
func cleanFindings(role pipeline.Role, raw json.RawMessage, notes *[]string) []pipeline.Finding {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if !role.Reviews() {
		*notes = append(*notes, fmt.Sprintf("findings are for qa, tech_lead and investigator, not %s; ignored", role))
		return nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		*notes = append(*notes, "findings is not a list; dropped")
		return nil
	}
	if len(list) > maxFindingsRead {
		*notes = append(*notes, fmt.Sprintf("findings had %d entries, read the first %d", len(list), maxFindingsRead))
		list = list[:maxFindingsRead]
	}
	in := make([]pipeline.FindingInput, 0, len(list))
	for i, e := range list {
		var fi pipeline.FindingInput
		if err := json.Unmarshal(e, &fi); err != nil {
			*notes = append(*notes, fmt.Sprintf("finding %d is not an object with severity, file, line, end_line, problem and fix; dropped", i+1))
			continue
		}
		in = append(in, fi)
	}
	out, more := pipeline.BoundFindings(in)
	*notes = append(*notes, more...)
	return out
}

// cleanHandoff keeps a handoff that is a JSON object of at most
// MaxHandoffBytes, re-encoded compactly (keys sorted, valid UTF-8).
func cleanHandoff(raw json.RawMessage, notes *[]string) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		*notes = append(*notes, "handoff is not valid JSON, dropped")
		return nil
	}
	if _, ok := v.(map[string]any); !ok {
		*notes = append(*notes, fmt.Sprintf("handoff is a JSON %s, not an object, dropped", jsonKind(v)))
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		*notes = append(*notes, "handoff could not be re-encoded, dropped")
		return nil
	}
	out := bytes.TrimRight(buf.Bytes(), "\n")
	if len(out) > MaxHandoffBytes {
		*notes = append(*notes, fmt.Sprintf("handoff is %d bytes (limit %d), dropped", len(out), MaxHandoffBytes))
		return nil
	}
	return json.RawMessage(out)
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}
