package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// codexDriver runs the Codex CLI (npm @openai/codex) headless: `codex exec`
// with the prompt on standard input ("-" or no prompt argument).
//
// Output with --json (openai/codex docs/exec.md and codex-rs/exec's
// exec_events.rs): one event per line — thread.started, turn.started,
// item.started/updated/completed (items: agent_message, reasoning,
// command_execution, file_change, mcp_tool_call, web_search, todo_list,
// error), turn.completed {"usage":{"input_tokens","cached_input_tokens",
// "output_tokens"}}, turn.failed {"error":{"message"}}, and error
// {"message"}. The final answer is the last agent_message; -o writes it to a
// file too, and the two must agree.
type codexDriver struct{}

func init() { register(codexDriver{}) }

func (codexDriver) Name() string      { return "codex" }
func (codexDriver) FinalAnswer() bool { return true }

// codexAnswerFile is where codex -o writes the last message.
const codexAnswerFile = "codex-answer.txt"

// codexSchemaFile holds the result schema for --output-schema.
const codexSchemaFile = "result-schema.json"

func (codexDriver) Check(args []string) []string {
	var problems []string
	if len(args) < 2 || !containsWord(args[1:], "exec", "e") {
		problems = append(problems, "codex needs the exec subcommand to run without a terminal (codex exec …)")
	}
	if mode, ok := flagValue(args, "--sandbox", "-s"); ok && mode != "" &&
		mode != "read-only" && mode != "workspace-write" && mode != "danger-full-access" {
		problems = append(problems, fmt.Sprintf("codex --sandbox %q is not read-only, workspace-write or danger-full-access", mode))
	}
	return problems
}

func containsWord(args []string, words ...string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		for _, w := range words {
			if a == w {
				return true
			}
		}
		return false // the first word that is not a flag is the subcommand
	}
	return false
}

func (codexDriver) Invocation(args []string, s Invoke) (Invocation, error) {
	inv := Invocation{Files: map[string][]byte{}, Env: map[string]string{}}
	var extra []string
	if !hasFlag(args, "--json") {
		extra = append(extra, "--json")
	}
	if s.Model != "" && !hasFlag(args, "--model", "-m") {
		extra = append(extra, "--model", s.Model)
	}
	userSandbox := hasFlag(args, "--sandbox", "-s", "--dangerously-bypass-approvals-and-sandbox", "--full-auto")
	if !userSandbox {
		// exec's default sandbox is read-only: a developer could not write.
		mode := "read-only"
		switch s.Access {
		case AccessEdit, AccessRun:
			// Tests write into the working copy and caches; what a QA
			// or review step changes is not kept by the harness.
			mode = "workspace-write"
		}
		extra = append(extra, "--sandbox", mode)
		if mode == "workspace-write" {
			// Tests write build caches (go test: "open ~/.cache/go-build/…:
			// read-only file system" without it).
			for _, d := range s.CacheDirs {
				extra = append(extra, "--add-dir", d)
			}
		}
	}
	if s.OpenAIBaseURL != "" && !hasConfig(args, "model_provider") {
		// codex's built-in provider ignores OPENAI_BASE_URL and tries a WebSocket first: a provider of its own
		// sends the Responses API over HTTP to the gateway, with the step's token from OPENAI_API_KEY.
		extra = append(extra, "-c", "model_provider=bazinga_gateway", "-c",
			`model_providers.bazinga_gateway={name="bazinga gateway", base_url=`+strconv.Quote(s.OpenAIBaseURL)+`, env_key="OPENAI_API_KEY", wire_api="responses"}`)
	}
	if !hasFlag(args, "--skip-git-repo-check") {
		extra = append(extra, "--skip-git-repo-check")
	}
	// No analytics from a step; and commands run in a plain shell, since a
	// login shell's /etc/profile resets the PATH the runner set up (Go, …).
	if !hasConfig(args, "analytics.enabled") {
		extra = append(extra, "-c", "analytics.enabled=false")
	}
	if !hasConfig(args, "allow_login_shell") {
		extra = append(extra, "-c", "allow_login_shell=false")
	}
	// Without this codex waits for an unreachable API forever ("Reconnecting…
	// waiting for network"); the step should fail, named, instead.
	if !hasFeature(args, "unbounded_connection_retries") {
		extra = append(extra, "--disable", "unbounded_connection_retries")
	}
	if !hasFlag(args, "--ephemeral") {
		// A step is one conversation: no session files left behind.
		extra = append(extra, "--ephemeral")
	}
	if !hasFlag(args, "--output-last-message", "-o") {
		extra = append(extra, "--output-last-message", s.Dir+"/"+codexAnswerFile)
		inv.AnswerFile = codexAnswerFile
	}
	if len(s.Schema) > 0 && !hasFlag(args, "--output-schema") {
		inv.Files[codexSchemaFile] = s.Schema
		extra = append(extra, "--output-schema", s.Dir+"/"+codexSchemaFile)
	}
	inv.Args = insertFlags(args, []string{"exec", "e"}, extra...)
	return inv, nil
}

// hasFeature reports whether --enable or --disable names a feature.
func hasFeature(args []string, name string) bool {
	for i := 1; i+1 < len(args); i++ {
		if (args[i] == "--enable" || args[i] == "--disable") && args[i+1] == name {
			return true
		}
	}
	return hasConfig(args, "features."+name)
}

// hasConfig reports whether a -c/--config override sets key.
func hasConfig(args []string, key string) bool {
	for i := 1; i < len(args); i++ {
		v := ""
		switch {
		case (args[i] == "-c" || args[i] == "--config") && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(args[i], "--config="):
			v = strings.TrimPrefix(args[i], "--config=")
		default:
			continue
		}
		if k, _, _ := strings.Cut(v, "="); strings.TrimSpace(k) == key {
			return true
		}
	}
	return false
}

func (codexDriver) NewReader() OutputReader { return &codexReader{} }

type codexReader struct {
	answer    *string
	usage     json.RawMessage
	legacy    json.RawMessage // token_count of versions before thread events
	failed    string
	lastError string
	cutLines  int
	denied    []string
}

func (r *codexReader) Line(line []byte, cut bool) {
	if cut {
		r.cutLines++
		return
	}
	t := trimSpace(line)
	if len(t) == 0 || t[0] != '{' {
		return
	}
	var ev struct {
		Type  string          `json:"type"`
		Item  json.RawMessage `json:"item"`
		Usage json.RawMessage `json:"usage"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string          `json:"message"`
		Msg     json.RawMessage `json:"msg"`
	}
	if json.Unmarshal(t, &ev) != nil {
		return
	}
	switch ev.Type {
	case "item.completed":
		var item struct {
			Type   string `json:"type"`
			Text   string `json:"text"`
			Status string `json:"status"`
			Cmd    string `json:"command"`
		}
		if json.Unmarshal(ev.Item, &item) != nil {
			return
		}
		switch item.Type {
		case "agent_message":
			text := item.Text
			r.answer = &text
		case "command_execution":
			if item.Status == "declined" {
				r.denied = append(r.denied, "shell("+capRunes(item.Cmd, 80)+")")
			}
		}
	case "turn.completed":
		if len(ev.Usage) > 0 {
			r.usage = append(json.RawMessage(nil), ev.Usage...)
		}
	case "turn.failed":
		if ev.Error != nil {
			r.failed = ev.Error.Message
		} else {
			r.failed = "the turn failed"
		}
	case "error":
		r.lastError = ev.Message
	case "":
		if len(ev.Msg) > 0 && bytes.Contains(ev.Msg, []byte(`"token_count"`)) {
			r.legacy = append(json.RawMessage(nil), ev.Msg...)
		}
	}
}

func (r *codexReader) Finish(answerFile []byte) Final {
	var f Final
	if r.cutLines > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("%d output line(s) longer than %d bytes were not read", r.cutLines, MaxLineBytes))
	}
	var notes []string
	switch {
	case r.usage != nil:
		if u, err := codexUsage(r.usage); err == nil {
			f.Usage, f.UsageSource = u, UsageCodex
		} else {
			notes = append(notes, "usage in codex's turn.completed ignored: "+err.Error())
		}
	case r.legacy != nil:
		if u, src, ok := cliUsage(append(append([]byte(`{"msg":`), r.legacy...), '}'), &notes); ok {
			f.Usage, f.UsageSource = u, src
		}
	}
	f.Notes = append(f.Notes, notes...)
	if f.Usage == nil {
		f.Notes = append(f.Notes, "codex reported no usage, so this step's tokens are unknown")
	}
	f.Denied = r.denied
	if r.failed != "" {
		f.Failure = newFailure(codexFailureKind(r.failed), "codex: %s", r.failed)
		return f
	}
	if r.answer == nil {
		switch {
		case r.cutLines > 0:
			f.Failure = newFailure(FailureOutputCut, "codex's final message was on a line over %d bytes, not read", MaxLineBytes)
		case r.lastError != "":
			f.Failure = newFailure(codexFailureKind(r.lastError), "codex: %s", r.lastError)
		default:
			f.Failure = newFailure(FailureNoAnswer, "codex printed no final message")
		}
		return f
	}
	if answerFile != nil && strings.TrimSpace(string(answerFile)) != strings.TrimSpace(*r.answer) {
		// Both come from codex; when they differ, something else wrote one.
		f.Failure = newFailure(FailureConflict, "codex's last message on its output and in its -o file differ; neither is trusted")
		return f
	}
	f.Answer, f.HasAnswer = *r.answer, true
	if b := []byte(strings.TrimSpace(f.Answer)); json.Valid(b) && len(b) > 0 && b[0] == '{' {
		// A strict schema's handoff travels as text; decode it back.
		f.Structured = decodeStrictHandoff(b)
	}
	return f
}

var statusCodeRe = regexp.MustCompile(`\b(4\d\d|5\d\d)\b`)

// codexFailureKind classifies codex's error text ("unexpected status 401
// Unauthorized: …", "exceeded retry limit, last status: 429 Too Many
// Requests", "stream disconnected before completion: …").
func codexFailureKind(msg string) FailureKind {
	low := strings.ToLower(msg)
	if m := statusCodeRe.FindStringSubmatch(msg); m != nil && (strings.Contains(low, "status") || strings.Contains(low, "http")) {
		code, _ := strconv.Atoi(m[1])
		return httpFailure(code)
	}
	switch {
	case strings.Contains(low, "quota exceeded") || strings.Contains(low, "insufficient_quota"):
		return FailureQuota
	case strings.Contains(low, "context window") || strings.Contains(low, "context_length_exceeded"):
		// The same prompt is too long again.
		return FailureUsage
	case strings.Contains(low, "high demand") || strings.Contains(low, "connection failed") ||
		strings.Contains(low, "timed out") || strings.Contains(low, "idle timeout"):
		return FailureAPI
	case strings.Contains(low, "invalid_request_error"):
		// The API refused the request itself: the same run is refused again.
		return FailureUsage
	case strings.Contains(low, "too many requests") || strings.Contains(low, "rate limit"):
		return FailureRateLimited
	case strings.Contains(low, "overloaded") || strings.Contains(low, "server_error") ||
		strings.Contains(low, "stream disconnected") || strings.Contains(low, "internal server error"):
		return FailureAPI
	case strings.Contains(low, "unauthorized") || strings.Contains(low, "invalid api key") || strings.Contains(low, "api key"):
		return FailureAuth
	}
	return FailureExecution
}
