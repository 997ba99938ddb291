package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// geminiDriver runs Google's Gemini CLI (npm @google/gemini-cli) headless:
// the prompt on standard input (not a terminal, so gemini runs without its
// UI; -p, if given, is appended to it).
//
// Output (google-gemini/gemini-cli docs/cli/headless.md and
// packages/core/src/output/types.ts, JsonOutput and JsonStreamEvent):
//
//   - --output-format stream-json, bazinga's default: one event per line —
//     {"type":"init","session_id","model"}, {"type":"message","role":
//     "user"|"assistant","content","delta"}, {"type":"tool_use","tool_name",
//     "tool_id","parameters"}, {"type":"tool_result","tool_id","status":
//     "success"|"error","output","error":{"type","message"}}, {"type":"error",
//     "severity":"warning"|"error","message"} and, last, {"type":"result",
//     "status":"success"|"error","error":{"type","message"},"stats":
//     {"total_tokens","input_tokens","output_tokens","cached","input",
//     "duration_ms","tool_calls","models":{…}}}. The final answer is the
//     assistant text after the last tool call: what the model said once it
//     had no more tools to run (packages/cli/src/nonInteractiveCli.ts).
//   - --output-format json: one object, pretty-printed over many lines —
//     {"session_id","response":"<the final answer>","stats":{"models":{
//     "<model>":{"tokens":{"input","prompt","candidates","total","cached",
//     "thoughts","tool"}}},"tools":{…}},"error":{"type","message","code"},
//     "warnings":[…]}. gemini writes a fatal error in this format to
//     standard error, not here, so a failed run shows as no answer.
//
// Gemini reports tokens, not dollars: Priced stays 0.
//
// Permissions (docs/reference/policy-engine.md, packages/core/src/policy/
// policies/*.toml): headless, gemini denies every tool that would ask — the
// shell and the edit tools (write_file, replace) — unless the approval mode
// or a policy rule allows it. An implementer runs in --approval-mode yolo
// (auto_edit would allow edits but still deny the shell, and even with the
// shell allowed gemini forces commands it deems dangerous, such as rm -rf,
// back to "ask", that is to a refusal); a reviewer runs in the default mode
// with a policy file (--policy, user tier) that allows the shell and denies
// the edit tools; the pm gets the shell and the edit tools denied. Deny rules
// are added whatever mode the user chose: at priority 999 of the user tier
// they outrank yolo's allow-all (default tier) and --allowed-tools (user tier
// + 0.3). The shell can still write files; what a review step changes is not
// kept by the harness.
//
// gemini refuses to run headless in a folder it does not trust (exit 55);
// the working copy is bazinga's own checkout, so the driver sets
// GEMINI_CLI_TRUST_WORKSPACE=true. That also lets the repository's
// .gemini/settings.json apply (its MCP servers, its hooks), as the test gate
// runs the repository's own code anyway.
type geminiDriver struct{}

func init() { register(geminiDriver{}) }

func (geminiDriver) Name() string      { return "gemini" }
func (geminiDriver) FinalAnswer() bool { return true }

// UsageGemini names gemini's stats as a step's usage source.
const UsageGemini = "gemini"

// geminiPolicyFile holds the role's policy rules for --policy.
const geminiPolicyFile = "gemini-policy.toml"

// Gemini CLI's tools by what they do, as docs/reference/tools.md names them.
var (
	geminiEditTools  = []string{"write_file", "replace"}
	geminiShellTools = []string{"run_shell_command"}
)

func (geminiDriver) Check(args []string) []string {
	own := ownArgs(args)
	var problems []string
	if hasFlag(own, "-i", "--prompt-interactive") {
		problems = append(problems, "gemini -i (--prompt-interactive) goes on in an interactive session; leave it out: bazinga gives the prompt on standard input and gemini runs headless")
	}
	for _, f := range []string{"--acp", "--experimental-acp", "--experimental-zed-integration"} {
		if hasFlag(own, f) {
			problems = append(problems, fmt.Sprintf("gemini %s starts a server for an editor, not a headless run; leave it out", f))
		}
	}
	format, _ := flagValue(own, "--output-format", "-o")
	switch format {
	case "", "json", "stream-json":
	case "text":
		problems = append(problems, "gemini --output-format text prints only the answer, mixed with nothing bazinga can tell apart: no usage, no errors, no denied tools; leave --output-format out (bazinga uses stream-json) or use json")
	default:
		problems = append(problems, fmt.Sprintf("gemini --output-format %q is not json, stream-json or text", format))
	}
	mode, hasMode := flagValue(own, "--approval-mode")
	if hasMode && hasFlag(own, "--yolo", "-y") {
		problems = append(problems, "gemini refuses --yolo together with --approval-mode; keep one (or leave both out: bazinga picks the mode per role)")
	}
	switch mode {
	case "", "default", "auto_edit", "yolo", "plan":
	default:
		problems = append(problems, fmt.Sprintf("gemini --approval-mode %q is not default, auto_edit, yolo or plan", mode))
	}
	return problems
}

func (geminiDriver) Invocation(args []string, s Invoke) (Invocation, error) {
	own := ownArgs(args)
	inv := Invocation{Env: map[string]string{
		// The working copy is bazinga's checkout: gemini exits (55) in a
		// folder it does not trust when it runs headless.
		"GEMINI_CLI_TRUST_WORKSPACE": "true",
	}}
	var extra []string
	if !hasFlag(own, "--output-format", "-o") {
		extra = append(extra, "--output-format", "stream-json")
	}
	if s.Model != "" && !hasFlag(own, "--model", "-m") {
		extra = append(extra, "--model", s.Model)
	}
	userMode := hasFlag(own, "--approval-mode", "--yolo", "-y")
	userAllowed := hasFlag(own, "--allowed-tools")
	var allow, deny []string
	switch s.Access {
	case AccessEdit:
		if !userMode {
			// Edits and any command, dangerous-looking ones included.
			extra = append(extra, "--approval-mode", "yolo")
		}
	case AccessRun:
		if !userMode {
			extra = append(extra, "--approval-mode", "default")
		}
		if !userMode && !userAllowed {
			allow = geminiShellTools
		}
		deny = geminiEditTools
	default:
		if !userMode {
			extra = append(extra, "--approval-mode", "default")
		}
		deny = append(append([]string(nil), geminiShellTools...), geminiEditTools...)
	}
	if len(allow)+len(deny) > 0 {
		inv.Files = map[string][]byte{geminiPolicyFile: geminiPolicy(s.Role, s.Access, allow, deny)}
		// --policy takes several files: a user's own are kept.
		extra = append(extra, "--policy", s.Dir+"/"+geminiPolicyFile)
	}
	inv.Args = insertAt(args, programEnd(args), extra...)
	return inv, nil
}

// programEnd is where the program's own arguments start: after the program,
// or, for a package runner (npx @google/gemini-cli, bunx opencode-ai), after
// the runner's own flags and the package.
func programEnd(args []string) int {
	base := strings.ToLower(filepath.Base(args[0]))
	switch strings.TrimSuffix(strings.TrimSuffix(base, ".exe"), ".cmd") {
	case "npx", "bunx", "pnpx":
		for i := 1; i < len(args); i++ {
			if !strings.HasPrefix(args[i], "-") {
				return i + 1
			}
		}
		return len(args)
	}
	return 1
}

// ownArgs is the program (or package) and its own arguments, for the flag
// helpers: a package runner's flags (npx -y) are not the CLI's.
func ownArgs(args []string) []string { return args[programEnd(args)-1:] }

// insertAt puts extra flags at position at of args.
func insertAt(args []string, at int, extra ...string) []string {
	out := make([]string, 0, len(args)+len(extra))
	out = append(out, args[:at]...)
	out = append(out, extra...)
	return append(out, args[at:]...)
}

// geminiPolicy writes the role's rules in the policy engine's TOML.
func geminiPolicy(role pipeline.Role, access Access, allow, deny []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# bazinga: the %s step may %s (agent access %q).\n", role, accessWords(access), access.String())
	if len(allow) > 0 {
		b.WriteString("\n[[rule]]\n")
		fmt.Fprintf(&b, "toolName = %s\n", tomlStrings(allow))
		b.WriteString("decision = \"allow\"\npriority = 500\nallowRedirection = true\n")
	}
	if len(deny) > 0 {
		b.WriteString("\n[[rule]]\n")
		fmt.Fprintf(&b, "toolName = %s\n", tomlStrings(deny))
		b.WriteString("decision = \"deny\"\npriority = 999\n")
		fmt.Fprintf(&b, "deny_message = %s\n", strconv.Quote("bazinga: the "+role.String()+" step may "+accessWords(access)))
	}
	return []byte(b.String())
}

func accessWords(a Access) string {
	switch a {
	case AccessEdit:
		return "edit files and run commands"
	case AccessRun:
		return "read and run commands, not edit files"
	}
	return "read the repository only"
}

func tomlStrings(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func (geminiDriver) NewReader() OutputReader { return &geminiReader{} }

// Reader modes: stream-json events, or the json object over several lines.
const (
	geminiUnknown = iota
	geminiStream
	geminiDocument
)

// geminiReader keeps the assistant text since the last tool call, the
// result event(s), the errors and the refused tools; in json mode, the
// object itself.
type geminiReader struct {
	mode int
	// json mode
	doc    []byte
	docCut bool
	// stream-json mode
	text      strings.Builder
	textCut   bool // a message line of the current text was cut
	sawText   bool
	results   [][]byte
	lastError string
	maxTurns  bool
	tools     map[string]string
	denied    []string
	cutLines  int
}

var (
	geminiTypeRe   = regexp.MustCompile(`^\{\s*"type"\s*:\s*"([a-z_]+)"`)
	geminiStatusRe = regexp.MustCompile(`\b([45]\d\d)\b`)
)

func (r *geminiReader) Line(line []byte, cut bool) {
	if r.mode == geminiDocument {
		r.appendDoc(line, cut)
		return
	}
	t := trimSpace(line)
	if len(t) == 0 {
		return
	}
	if cut {
		r.cutLines++
		// The line's start says what it was: JSON.stringify writes the
		// event's type first.
		if m := geminiTypeRe.FindSubmatch(t); m != nil {
			switch string(m[1]) {
			case "message":
				r.textCut = true
			case "tool_use", "tool_result":
				r.resetText()
			}
		}
		return
	}
	if t[0] != '{' {
		return
	}
	if r.mode == geminiUnknown && (string(t) == "{" || !geminiTypeRe.Match(t)) {
		// The json format: one object over many lines (or one line).
		r.mode = geminiDocument
		r.appendDoc(line, false)
		return
	}
	r.mode = geminiStream
	var ev struct {
		Type     string          `json:"type"`
		Role     string          `json:"role"`
		Content  string          `json:"content"`
		ToolName string          `json:"tool_name"`
		ToolID   string          `json:"tool_id"`
		Params   json.RawMessage `json:"parameters"`
		Status   string          `json:"status"`
		Error    *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		Severity string `json:"severity"`
		Message  string `json:"message"`
	}
	if json.Unmarshal(t, &ev) != nil {
		return
	}
	switch ev.Type {
	case "message":
		if ev.Role != "assistant" {
			return // the user message is the prompt, echoed
		}
		if r.text.Len()+len(ev.Content) > MaxLineBytes {
			r.textCut = true
			return
		}
		r.text.WriteString(ev.Content)
		r.sawText = true
	case "tool_use":
		// Text before a tool call is narration, not the answer.
		r.resetText()
		if r.tools == nil {
			r.tools = map[string]string{}
		}
		if len(r.tools) < 10000 {
			r.tools[ev.ToolID] = describeDenial(ev.ToolName, ev.Params)
		}
	case "tool_result":
		r.resetText()
		if ev.Status == "error" && ev.Error != nil && geminiRefused(ev.Error.Type, ev.Error.Message) {
			name := r.tools[ev.ToolID]
			if name == "" {
				name = "tool " + capRunes(ev.ToolID, 40)
			}
			r.denied = append(r.denied, name)
		}
	case "error":
		if ev.Severity == "error" {
			r.lastError = ev.Message
		}
		if ev.Message == "Maximum session turns exceeded" {
			r.maxTurns = true
		}
	case "result":
		r.results = append(r.results, append([]byte(nil), t...))
	}
}

// geminiRefused says a tool result is a refusal: a policy's deny rule, a
// tool the policy took from the model (it is then "not found"), or a call
// that would have asked a person, which a headless run cannot.
func geminiRefused(typ, msg string) bool {
	return typ == "policy_violation" || typ == "tool_not_registered" ||
		strings.Contains(msg, "not supported in non-interactive mode")
}

func (r *geminiReader) resetText() {
	r.text.Reset()
	r.textCut, r.sawText = false, false
}

func (r *geminiReader) appendDoc(line []byte, cut bool) {
	if cut || len(r.doc)+len(line)+1 > MaxLineBytes {
		r.docCut = true
		return
	}
	r.doc = append(r.doc, line...)
	r.doc = append(r.doc, '\n')
}

// geminiExitHint is what gemini's exit codes mean when it printed nothing
// (packages/core/src/utils/errors.ts, the Fatal* errors).
const geminiExitHint = "its exit code says why: 41 authentication, 42 bad input, 44 sandbox, 52 configuration, 53 turn limit, 54 a tool, 55 untrusted folder, 130 cancelled"

func (r *geminiReader) Finish([]byte) Final {
	if r.mode == geminiDocument {
		return r.finishDocument()
	}
	var f Final
	if r.cutLines > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("%d output line(s) longer than %d bytes were not read", r.cutLines, MaxLineBytes))
	}
	f.Denied = r.denied
	switch len(r.results) {
	case 0:
		if r.lastError != "" {
			f.Failure = newFailure(geminiFailureKind("", r.lastError, nil), "gemini: %s", r.lastError)
		} else {
			f.Failure = newFailure(FailureNoAnswer, "gemini printed no result event; %s", geminiExitHint)
		}
		return f
	case 1:
	default:
		// gemini prints one result as it exits; another came from
		// something else writing to its output.
		f.Failure = newFailure(FailureConflict, "gemini's output holds %d result events; only one comes from gemini, so none is trusted", len(r.results))
		return f
	}
	var res struct {
		Status string `json:"status"`
		Error  *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		Stats json.RawMessage `json:"stats"`
	}
	if err := json.Unmarshal(r.results[0], &res); err != nil {
		f.Failure = newFailure(FailureNoAnswer, "gemini's result event is malformed: %v", err)
		return f
	}
	if len(res.Stats) > 0 && string(res.Stats) != "null" {
		if u, err := geminiStreamUsage(res.Stats); err == nil {
			f.Usage, f.UsageSource = u, UsageGemini
		} else {
			f.Notes = append(f.Notes, "usage in gemini's result ignored: "+err.Error())
		}
	}
	switch {
	case res.Status == "error":
		typ, msg := "", r.lastError
		if res.Error != nil {
			typ, msg = res.Error.Type, res.Error.Message
		}
		if msg == "" {
			msg = "the run failed"
		}
		f.Failure = newFailure(geminiFailureKind(typ, msg, nil), "gemini: %s", msg)
		return f
	case r.maxTurns:
		f.Failure = newFailure(FailureMaxTurns, "gemini stopped at its session turn limit (model.maxSessionTurns)")
		return f
	case r.textCut:
		f.Failure = newFailure(FailureOutputCut, "gemini's final answer was on a line over %d bytes, not read whole", MaxLineBytes)
		return f
	}
	if r.sawText {
		f.Answer, f.HasAnswer = r.text.String(), true
	}
	return f
}

// geminiJSON is the json format's object (JsonOutput).
type geminiJSON struct {
	SessionID string          `json:"session_id"`
	Response  *string         `json:"response"`
	Stats     json.RawMessage `json:"stats"`
	Error     *struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
	Warnings []string `json:"warnings"`
}

func (r *geminiReader) finishDocument() Final {
	var f Final
	if r.docCut {
		f.Failure = newFailure(FailureOutputCut, "gemini's json output is over %d bytes, not read", MaxLineBytes)
		return f
	}
	dec := json.NewDecoder(bytes.NewReader(r.doc))
	var out geminiJSON
	if err := dec.Decode(&out); err != nil {
		f.Failure = newFailure(FailureNoAnswer, "gemini's json output is malformed: %v", err)
		return f
	}
	if rest := bytes.TrimSpace(r.doc[dec.InputOffset():]); len(rest) > 0 {
		if bytes.IndexByte(rest, '{') >= 0 {
			f.Failure = newFailure(FailureConflict, "gemini's json output holds more than one object; only one comes from gemini, so none is trusted")
			return f
		}
		f.Notes = append(f.Notes, "text after gemini's json output ignored")
	}
	for _, w := range out.Warnings {
		f.Notes = append(f.Notes, "gemini: "+oneLine(w, 200))
	}
	if len(out.Stats) > 0 && string(out.Stats) != "null" {
		if u, err := geminiModelsUsage(out.Stats); err == nil {
			f.Usage, f.UsageSource = u, UsageGemini
		} else {
			f.Notes = append(f.Notes, "usage in gemini's stats ignored: "+err.Error())
		}
	}
	if out.Error != nil {
		f.Failure = newFailure(geminiFailureKind(out.Error.Type, out.Error.Message, out.Error.Code), "gemini: %s", firstNonEmpty(out.Error.Message, out.Error.Type, "the run failed"))
		return f
	}
	if out.Response == nil {
		f.Failure = newFailure(FailureNoAnswer, "gemini's json output has no response")
		return f
	}
	f.Answer, f.HasAnswer = *out.Response, true
	return f
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// geminiStreamUsage reads stream-json's stats: input_tokens is the prompt,
// cached ones included (input is the rest); output_tokens leaves out the
// model's thinking, which Google bills as output, so the output is what
// total_tokens has beyond the prompt.
func geminiStreamUsage(raw json.RawMessage) (*pipeline.Usage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("stats is not an object")
	}
	u, err := usageFields(m, nil, usageKeys{input: []string{"input_tokens"}, output: []string{"output_tokens"},
		cacheRead: []string{"cached"}}, true)
	if err != nil {
		return nil, err
	}
	if u.CacheReadTokens > u.InputTokens {
		return nil, fmt.Errorf("cached %d is more than input_tokens %d", u.CacheReadTokens, u.InputTokens)
	}
	if raw, ok := m["total_tokens"]; ok {
		total, err := jsonNumber(raw)
		if err == nil && total == math.Trunc(total) && total <= pipeline.MaxStepTokens && int64(total) > u.InputTokens+u.OutputTokens {
			u.OutputTokens = int64(total) - u.InputTokens
		}
	}
	u.InputTokens -= u.CacheReadTokens
	return u, u.Check()
}

// geminiModelsUsage sums json's stats.models[*].tokens: prompt (cached ones
// included) and tool-use prompt tokens are input; candidates and thoughts
// are output.
func geminiModelsUsage(raw json.RawMessage) (*pipeline.Usage, error) {
	var stats struct {
		Models map[string]struct {
			Tokens map[string]json.RawMessage `json:"tokens"`
		} `json:"models"`
	}
	if err := json.Unmarshal(raw, &stats); err != nil {
		return nil, fmt.Errorf("stats.models is not an object of models")
	}
	if len(stats.Models) == 0 {
		return nil, fmt.Errorf("no model in stats.models")
	}
	sum := pipeline.Usage{Steps: 1}
	for name, mdl := range stats.Models {
		if mdl.Tokens == nil {
			return nil, fmt.Errorf("model %q has no tokens", capRunes(name, 60))
		}
		part, err := usageFields(mdl.Tokens, nil, usageKeys{input: []string{"prompt"}, output: []string{"candidates"},
			cacheRead: []string{"cached"}}, true)
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", capRunes(name, 60), err)
		}
		extra, err := usageFields(mdl.Tokens, nil, usageKeys{input: []string{"tool"}, output: []string{"thoughts"}}, false)
		if err == nil {
			part.InputTokens += extra.InputTokens
			part.OutputTokens += extra.OutputTokens
		}
		if part.CacheReadTokens > part.InputTokens {
			return nil, fmt.Errorf("model %q: cached %d is more than prompt %d", capRunes(name, 60), part.CacheReadTokens, part.InputTokens)
		}
		part.InputTokens -= part.CacheReadTokens
		sum.InputTokens += part.InputTokens
		sum.OutputTokens += part.OutputTokens
		sum.CacheReadTokens += part.CacheReadTokens
		if err := sum.Check(); err != nil {
			return nil, err
		}
	}
	return &sum, nil
}

// geminiFailureKind classifies gemini's error: its Fatal* error types (the
// exit codes), else the API error it formats as "[API Error: <message>
// (Status: <STATUS>)]" (packages/core/src/utils/errorParsing.ts).
func geminiFailureKind(typ, msg string, code json.RawMessage) FailureKind {
	switch typ {
	case "FatalAuthenticationError":
		return FailureAuth
	case "FatalInputError", "FatalConfigError", "FatalSandboxError", "FatalUntrustedWorkspaceError":
		return FailureUsage
	case "FatalTurnLimitedError":
		return FailureMaxTurns
	case "FatalToolExecutionError", "FatalCancellationError":
		return FailureExecution
	case "TerminalQuotaError", "RetryableQuotaError":
		return FailureRateLimited
	}
	var n int
	if json.Unmarshal(code, &n) == nil {
		switch n {
		case 41:
			return FailureAuth
		case 42, 44, 52, 55:
			return FailureUsage
		case 53:
			return FailureMaxTurns
		}
	}
	low := strings.ToLower(msg)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(low, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("api key not valid", "api_key_invalid", "unauthenticated", "permission_denied", "invalid authentication", "please re-authenticate", "no authentication is configured"):
		return FailureAuth
	case has("resource_exhausted", "rate limit", "too many requests", "quota"):
		return FailureRateLimited
	case has("unavailable", "overloaded"):
		return FailureOverloaded
	}
	if m := geminiStatusRe.FindStringSubmatch(msg); m != nil && has("status", "code", "api error") {
		c, _ := strconv.Atoi(m[1])
		return httpFailure(c)
	}
	switch {
	case has("internal", "deadline_exceeded", "stream error"):
		return FailureAPI
	case has("invalid_argument", "not_found", "failed_precondition"):
		return FailureUsage
	}
	return FailureExecution
}
