package agent

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// claudeDriver runs Claude Code (npm @anthropic-ai/claude-code) headless:
// `claude -p` with the prompt on standard input.
//
// Output (Claude Code's headless docs and its SDK message types): with
// --output-format json one result object; with --verbose json an array of
// every message ending in that object; with stream-json (which needs
// --verbose under -p) one message per line ending in it. The result object:
// {"type":"result","subtype":"success"|"error_max_turns"|
// "error_during_execution"|"error_max_budget_usd"|…,"is_error":bool,
// "result":"<the final answer>","structured_output":{…} (with
// --json-schema),"total_cost_usd":…,"usage":{…},"permission_denials":
// [{"tool_name":…,"tool_input":…}],"errors":["…"]}. Only that object is
// read: assistant and tool messages before it are the transcript.
type claudeDriver struct{}

func init() { register(claudeDriver{}) }

func (claudeDriver) Name() string      { return "claude" }
func (claudeDriver) FinalAnswer() bool { return true }

// Claude Code's tools by what they do; names as its settings document them.
var (
	claudeEditTools = []string{"Edit", "MultiEdit", "Write", "NotebookEdit"}
	claudeReadTools = []string{"Read", "Glob", "Grep", "LS", "TodoWrite"}
)

func (claudeDriver) Check(args []string) []string {
	var problems []string
	if !hasFlag(args, "-p", "--print") {
		problems = append(problems, "claude needs -p (--print) to run without a terminal")
	}
	format, _ := flagValue(args, "--output-format")
	switch format {
	case "", "json", "stream-json":
	case "text":
		problems = append(problems, "claude --output-format text prints only the answer: no usage, no errors, no denied tools; leave --output-format out (bazinga uses stream-json) or use json")
	default:
		problems = append(problems, fmt.Sprintf("claude --output-format %q is not json, stream-json or text", format))
	}
	if format == "stream-json" && !hasFlag(args, "--verbose") {
		problems = append(problems, "claude refuses --output-format stream-json under -p without --verbose; add --verbose (or leave --output-format out)")
	}
	if hasFlag(args, "--input-format") {
		if v, _ := flagValue(args, "--input-format"); v != "" && v != "text" {
			problems = append(problems, "claude --input-format must be text: bazinga gives the prompt as text on standard input")
		}
	}
	return problems
}

func (claudeDriver) Invocation(args []string, s Invoke) (Invocation, error) {
	inv := Invocation{Env: map[string]string{
		// No update checks, telemetry or error reports from a step.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
	}}
	var extra []string
	if !hasFlag(args, "--no-session-persistence", "--resume", "-r", "--continue", "-c") {
		// A step is one conversation: nothing to resume, nothing to keep.
		extra = append(extra, "--no-session-persistence")
	}
	if !hasFlag(args, "--output-format") {
		extra = append(extra, "--output-format", "stream-json")
		if !hasFlag(args, "--verbose") {
			extra = append(extra, "--verbose")
		}
	}
	if s.Model != "" && !hasFlag(args, "--model") {
		extra = append(extra, "--model", s.Model)
	}
	userMode, _ := flagValue(args, "--permission-mode")
	bypass := userMode == "bypassPermissions" || hasFlag(args, "--dangerously-skip-permissions")
	userPerms := userMode != "" || bypass || hasFlag(args, "--allowedTools", "--allowed-tools")
	switch s.Access {
	case AccessEdit:
		if !userPerms {
			// Edits inside the working copy and any command: what a
			// developer needs to change code and run its tests.
			extra = append(extra, "--permission-mode", "acceptEdits",
				"--allowedTools", strings.Join(append(append([]string{"Bash"}, claudeEditTools...), claudeReadTools...), ","))
		}
	case AccessRun:
		if !userPerms {
			extra = append(extra, "--allowedTools", strings.Join(append([]string{"Bash"}, claudeReadTools...), ","))
		}
		// Deny rules win over any mode the user chose.
		extra = append(extra, "--disallowedTools", strings.Join(claudeEditTools, ","))
	default:
		if !userPerms {
			extra = append(extra, "--allowedTools", strings.Join(claudeReadTools, ","))
		}
		extra = append(extra, "--disallowedTools", strings.Join(append([]string{"Bash"}, claudeEditTools...), ","))
	}
	if bypass && s.Root {
		if !s.Sandboxed {
			return inv, fmt.Errorf("claude refuses %s as root outside a sandbox; run bazinga as a normal user, or leave the permission flags to bazinga", firstOf(userMode, "--dangerously-skip-permissions"))
		}
		// A throwaway runner is the sandbox claude asks about.
		inv.Env["IS_SANDBOX"] = "1"
	}
	if s.MaxTurns > 0 && !hasFlag(args, "--max-turns") {
		extra = append(extra, "--max-turns", strconv.Itoa(s.MaxTurns))
	}
	if s.MaxBudgetUSD > 0 && !hasFlag(args, "--max-budget-usd") {
		extra = append(extra, "--max-budget-usd", strconv.FormatFloat(s.MaxBudgetUSD, 'f', -1, 64))
	}
	if len(s.Schema) > 0 && !hasFlag(args, "--json-schema") {
		extra = append(extra, "--json-schema", string(s.Schema))
	}
	inv.Args = insertFlags(args, nil, extra...)
	return inv, nil
}

func firstOf(a, b string) string {
	if a != "" {
		return "--permission-mode " + a
	}
	return b
}

func (claudeDriver) NewReader() OutputReader { return &claudeReader{} }

// claudeReader keeps the result object(s) and nothing else.
type claudeReader struct {
	results  [][]byte
	cutLines int
	lines    int
	initSeen bool
}

func (r *claudeReader) Line(line []byte, cut bool) {
	r.lines++
	if cut {
		r.cutLines++
		return
	}
	t := trimSpace(line)
	if len(t) == 0 {
		return
	}
	switch t[0] {
	case '[': // --verbose --output-format json: every message in one array
		var msgs []json.RawMessage
		if json.Unmarshal(t, &msgs) != nil {
			return
		}
		for _, m := range msgs {
			r.object(m)
		}
	case '{':
		r.object(t)
	}
}

func (r *claudeReader) object(b []byte) {
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(b, &head) != nil {
		return
	}
	switch head.Type {
	case "result":
		r.results = append(r.results, append([]byte(nil), b...))
	case "system":
		r.initSeen = true
	}
}

type claudeResult struct {
	Type             string            `json:"type"`
	Subtype          string            `json:"subtype"`
	IsError          bool              `json:"is_error"`
	Result           *string           `json:"result"`
	StructuredOutput json.RawMessage   `json:"structured_output"`
	Errors           []json.RawMessage `json:"errors"`
	TerminalReason   string            `json:"terminal_reason"`
	APIErrorStatus   int               `json:"api_error_status"`
	APIError         string            `json:"api_error"`
	NumTurns         int               `json:"num_turns"`
	Denials          []struct {
		ToolName  string          `json:"tool_name"`
		ToolInput json.RawMessage `json:"tool_input"`
	} `json:"permission_denials"`
}

func (r *claudeReader) Finish([]byte) Final {
	var f Final
	if r.cutLines > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("%d output line(s) longer than %d bytes were not read", r.cutLines, MaxLineBytes))
	}
	switch len(r.results) {
	case 0:
		// claude reports usage only in its result: what a killed run spent
		// is unknown, and the step says so rather than count nothing.
		f.Notes = append(f.Notes, "claude ended without its result, so this step's cost is unknown")
		if r.cutLines > 0 {
			f.Failure = newFailure(FailureOutputCut, "claude's output had no result object bazinga could read (a line over %d bytes was cut)", MaxLineBytes)
		} else {
			f.Failure = newFailure(FailureNoAnswer, "claude printed no result object")
		}
		return f
	case 1:
	default:
		// claude prints one result as it exits; a second one came from
		// something else writing to its output (a process it started).
		f.Failure = newFailure(FailureConflict, "claude's output holds %d result objects; only one comes from claude, so none is trusted", len(r.results))
		return f
	}
	raw := r.results[0]
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	var res claudeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		f.Failure = newFailure(FailureNoAnswer, "claude's result object is malformed: %v", err)
		return f
	}
	if u, err := claudeUsage(m); err == nil {
		f.Usage, f.UsageSource = u, UsageClaude
	} else if m["usage"] != nil || m["total_cost_usd"] != nil {
		f.Notes = append(f.Notes, "usage in claude's result ignored: "+err.Error())
	}
	for _, d := range res.Denials {
		f.Denied = append(f.Denied, describeDenial(d.ToolName, d.ToolInput))
	}
	if res.Result != nil {
		f.Answer, f.HasAnswer = *res.Result, true
	}
	if len(res.StructuredOutput) > 0 && string(res.StructuredOutput) != "null" {
		f.Structured = res.StructuredOutput
	}
	if fail := claudeFailure(res); fail != nil {
		f.Failure = fail
		// An error result's text is claude's, not the model's answer.
		f.Answer, f.HasAnswer, f.Structured = "", false, nil
	}
	return f
}

var apiErrorRe = regexp.MustCompile(`API Error:?\s*(\d{3})`)

// claudeFailure names the failure a result object reports, or nil.
func claudeFailure(res claudeResult) *CLIFailure {
	detail := strings.TrimSpace(joinErrors(res.Errors))
	text := ""
	if res.Result != nil {
		text = *res.Result
	}
	if detail == "" {
		detail = text
	}
	switch res.Subtype {
	case "error_max_turns":
		return newFailure(FailureMaxTurns, "claude stopped at its turn limit after %d turns", res.NumTurns)
	case "error_max_budget_usd":
		return newFailure(FailureBudget, "claude stopped at its spending limit (--max-budget-usd)")
	case "error_max_structured_output_retries":
		return newFailure(FailureNoAnswer, "claude could not produce an answer matching the result schema%s", suffix(detail))
	case "error_during_execution":
		if k, ok := classifyAPIText(detail); ok {
			return newFailure(k, "claude: %s", detail)
		}
		return newFailure(FailureExecution, "claude failed during the run%s", suffix(detail))
	case "success", "":
		if !res.IsError {
			return nil
		}
		// claude 2.1 says what ended the run (terminal_reason) and, for an
		// API error, its HTTP status; older versions only say it in words.
		switch {
		case res.TerminalReason == "prompt_too_long":
			return newFailure(FailureUsage, "claude: %s", detail)
		case res.APIErrorStatus > 0:
			return newFailure(httpFailure(res.APIErrorStatus), "claude: %s", detail)
		case res.TerminalReason == "api_error":
			// No status: the connection failed or timed out.
			return newFailure(FailureAPI, "claude: %s", detail)
		}
		if k, ok := classifyAPIText(detail); ok {
			return newFailure(k, "claude: %s", detail)
		}
		return newFailure(FailureExecution, "claude reported an error%s", suffix(detail))
	default:
		if !res.IsError {
			return nil
		}
		return newFailure(FailureExecution, "claude ended with %s%s", res.Subtype, suffix(detail))
	}
}

// classifyAPIText reads an "API Error: 529 …" style message.
func classifyAPIText(s string) (FailureKind, bool) {
	low := strings.ToLower(s)
	if m := apiErrorRe.FindStringSubmatch(s); m != nil {
		code, _ := strconv.Atoi(m[1])
		return httpFailure(code), true
	}
	switch {
	case strings.Contains(low, "overloaded"):
		return FailureOverloaded, true
	case strings.Contains(low, "rate limit") || strings.Contains(low, "rate_limit"):
		return FailureRateLimited, true
	case strings.Contains(low, "invalid api key") || strings.Contains(low, "authentication_error") ||
		strings.Contains(low, "please run /login") || strings.Contains(low, "oauth token"):
		return FailureAuth, true
	}
	return FailureNone, false
}

// httpFailure classifies a model API's HTTP status.
func httpFailure(code int) FailureKind {
	switch {
	case code == 529:
		return FailureOverloaded
	case code == 429:
		return FailureRateLimited
	case code == 401 || code == 403:
		return FailureAuth
	case code >= 500:
		return FailureAPI
	case code == 400 || code == 404 || code == 413 || code == 422:
		return FailureUsage
	}
	return FailureExecution
}

func joinErrors(errs []json.RawMessage) string {
	var parts []string
	for _, e := range errs {
		var s string
		if json.Unmarshal(e, &s) == nil {
			parts = append(parts, s)
			continue
		}
		var o struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e, &o) == nil && o.Message != "" {
			parts = append(parts, o.Message)
		}
	}
	return strings.Join(parts, "; ")
}

func suffix(detail string) string {
	if detail == "" {
		return ""
	}
	return ": " + detail
}

// describeDenial names a refused tool use briefly: the tool and the first
// of its command, file or pattern.
func describeDenial(tool string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	for _, k := range []string{"command", "file_path", "path", "pattern", "notebook_path"} {
		if v, ok := in[k].(string); ok && v != "" {
			return fmt.Sprintf("%s(%s)", tool, capRunes(strings.Join(strings.Fields(v), " "), 80))
		}
	}
	return tool
}

func trimSpace(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	for j > i && (b[j-1] == ' ' || b[j-1] == '\t' || b[j-1] == '\r') {
		j--
	}
	return b[i:j]
}
