package realcli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/internal/modelfake"
)

// A model claude knows the price of, so it reports a cost.
const claudeModel = "claude-sonnet-4-5"

// claudeEnv is the whole environment claude runs with: a private home and config dir, the fake as the API, and
// everything that would reach for the network off (with these four, claude resolves no host name at all; without
// them it looks up api.anthropic.com for its own traffic). CLAUDE_CODE_MAX_RETRIES keeps failing runs short.
func claudeEnv(sb sandbox, s *modelfake.Server, extra ...string) []string {
	env := []string{
		"PATH=" + basePath(),
		"HOME=" + sb.home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(sb.home, ".claude"),
		"ANTHROPIC_BASE_URL=" + s.URL,
		"ANTHROPIC_API_KEY=sk-ant-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_MAX_RETRIES=2",
	}
	return append(env, extra...)
}

// claudeArgv is a headless run printing every event as a JSON line.
func claudeArgv(t *testing.T, extra ...string) []string {
	return append([]string{Claude(t), "-p", "--output-format", "stream-json", "--verbose", "--model", claudeModel, "--no-session-persistence"}, extra...)
}

// The three role kinds.
var (
	// claudeImplementer may edit files in the working copy and run any command.
	claudeImplementer = []string{"--permission-mode", "acceptEdits", "--allowedTools", "Bash,Read,Write,Edit,Glob,Grep"}
	// claudeReviewer may read and run the tests, not edit: the edit tools are gone, and a command that is not
	// allowed (or writes a file, e.g. with a redirection) is denied because nobody can approve it in -p mode.
	claudeReviewer = []string{"--allowedTools", "Read,Grep,Glob,Bash(go test:*),Bash(go vet:*),Bash(go version:*)", "--disallowedTools", "Write,Edit,NotebookEdit"}
	// claudePM may only read: no other built-in tool exists.
	claudePM = []string{"--tools", "Read,Grep,Glob"}
)

func jsonLines(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range lines(stdout) {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &ev), "line %q", clip(l, 300))
		out = append(out, ev)
	}
	return out
}

// claudeResult is the last event of a stream-json run, which must be the result.
func claudeResult(t *testing.T, stdout string) map[string]any {
	t.Helper()
	evs := jsonLines(t, stdout)
	require.NotEmpty(t, evs, "no output")
	last := evs[len(evs)-1]
	require.Equal(t, "result", last["type"], "last event")
	return last
}

func claudeRun(t *testing.T, sb sandbox, s *modelfake.Server, args []string, env ...string) (invocation, outcome) {
	t.Helper()
	inv := invocation{argv: claudeArgv(t, args...), env: claudeEnv(sb, s, env...), stdin: "Do the task.", server: s}
	o := run(t, sb, inv)
	logRequests(t, s)
	return inv, o
}

// claudeExtended are the table cases -short skips.
var claudeExtended = map[string]bool{"retry-500": true, "retry-429": true, "api-error-500": true, "api-error-429": true, "api-error-401": true, "hang-stalled-stream-killed": true, "hang-sigterm": true}

func toolCall(name string, input map[string]any) []modelfake.ToolCall {
	return []modelfake.ToolCall{{Name: name, Input: input}}
}

const finalJSON = "Done.\n{\"status\": \"READY_FOR_QA\", \"summary\": [\"wrote hello.txt\"]}"

func TestClaudeImplementer(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	target := filepath.Join(sb.work, "hello.txt")
	s := modelfake.Start(t, modelfake.ByTurn(
		modelfake.Reply{Text: "I'll write the file.", ToolCalls: toolCall("Write", map[string]any{"file_path": target, "content": "hello from claude\n"}),
			Usage: modelfake.Usage{InputTokens: 1000, OutputTokens: 50, CacheReadTokens: 200, CacheWriteTokens: 300}},
		modelfake.Reply{ToolCalls: toolCall("Bash", map[string]any{"command": "ls -1 && go version", "description": "List files"}),
			Usage: modelfake.Usage{InputTokens: 1100, OutputTokens: 20}},
		modelfake.Reply{Text: finalJSON, Usage: modelfake.Usage{InputTokens: 1200, OutputTokens: 30}},
	))
	inv, o := claudeRun(t, sb, s, claudeImplementer)
	fixture(t, "claude", "implementer", inv, o)

	require.Equal(t, 0, o.code)
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "hello from claude\n", string(b))
	res := claudeResult(t, o.stdout)
	assert.Equal(t, "success", res["subtype"])
	assert.Equal(t, false, res["is_error"])
	assert.Equal(t, finalJSON, res["result"])
	// Usage is the sum of the three replies; the cost is claude's own price list applied to it.
	usage := res["usage"].(map[string]any)
	assert.EqualValues(t, 3300, usage["input_tokens"])
	assert.EqualValues(t, 100, usage["output_tokens"])
	assert.EqualValues(t, 200, usage["cache_read_input_tokens"])
	assert.EqualValues(t, 300, usage["cache_creation_input_tokens"])
	assert.Greater(t, res["total_cost_usd"], 0.0)
	reqs := s.Requests()
	require.Equal(t, 3, len(reqs))
	last, ok := reqs[2].LastToolResult()
	require.True(t, ok)
	assert.Contains(t, last.Text, "hello.txt")
	assert.Contains(t, last.Text, "go version go1.")
	assert.Equal(t, "Do the task.", reqs[0].FirstUserText())
}

// As root, the bypass modes are refused unless IS_SANDBOX=1 says the machine is a sandbox.
func TestClaudeBypassPermissions(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the refusal is for root")
	}
	for _, tc := range []struct {
		name    string
		env     []string
		refused bool
	}{
		{name: "bypass-as-root-refused", refused: true},
		{name: "bypass-is-sandbox", env: []string{"IS_SANDBOX=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if claudeExtended[tc.name] {
				extended(t)
			}
			sb := newSandbox(t)
			target := filepath.Join(sb.work, "hello.txt")
			s := modelfake.Start(t, modelfake.ByTurn(
				modelfake.Reply{ToolCalls: toolCall("Write", map[string]any{"file_path": target, "content": "hi\n"})},
				modelfake.Reply{ToolCalls: toolCall("Bash", map[string]any{"command": "touch made-by-bash", "description": "touch"})},
				modelfake.Reply{Text: finalJSON},
			))
			inv, o := claudeRun(t, sb, s, []string{"--dangerously-skip-permissions"}, tc.env...)
			fixture(t, "claude", tc.name, inv, o)
			if tc.refused {
				assert.Equal(t, 1, o.code)
				assert.Empty(t, o.stdout)
				assert.Contains(t, o.stderr, "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons")
				assert.Empty(t, s.Requests())
				return
			}
			require.Equal(t, 0, o.code)
			assert.FileExists(t, target)
			assert.FileExists(t, filepath.Join(sb.work, "made-by-bash"))
			assert.Equal(t, "success", claudeResult(t, o.stdout)["subtype"])
		})
	}
}

func TestClaudeReviewer(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	s := modelfake.Start(t, modelfake.ByTurn(
		modelfake.Reply{ToolCalls: toolCall("Write", map[string]any{"file_path": filepath.Join(sb.work, "fix.go"), "content": "package x\n"})},
		modelfake.Reply{ToolCalls: toolCall("Bash", map[string]any{"command": "echo notes > notes.txt", "description": "Write notes"})},
		modelfake.Reply{ToolCalls: toolCall("Bash", map[string]any{"command": "go version", "description": "Go version"})},
		modelfake.Reply{Text: "{\"status\": \"APPROVED\"}"},
	))
	inv, o := claudeRun(t, sb, s, claudeReviewer)
	fixture(t, "claude", "reviewer", inv, o)

	require.Equal(t, 0, o.code)
	assert.NoFileExists(t, filepath.Join(sb.work, "fix.go"))
	assert.NoFileExists(t, filepath.Join(sb.work, "notes.txt"))
	reqs := s.Requests()
	require.Equal(t, 4, len(reqs))
	assert.False(t, reqs[0].HasTool("Write"), "Write is not offered to the model at all")
	results := reqs[3].ToolResults()
	require.Len(t, results, 3)
	// A disallowed tool is unknown to the session; it is not a permission denial.
	assert.True(t, results[0].IsError)
	assert.Contains(t, results[0].Text, "No such tool available: Write")
	// A command nobody allowed is denied, and listed in the result's permission_denials.
	assert.True(t, results[1].IsError)
	assert.Contains(t, results[1].Text, "needs approval")
	assert.Contains(t, results[2].Text, "go version go1.")
	res := claudeResult(t, o.stdout)
	denials := res["permission_denials"].([]any)
	require.Len(t, denials, 1)
	assert.Equal(t, "Bash", denials[0].(map[string]any)["tool_name"])
}

func TestClaudePM(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	require.NoError(t, os.WriteFile(filepath.Join(sb.work, "README.md"), []byte("# project\n"), 0o644))
	s := modelfake.Start(t, modelfake.ByTurn(
		modelfake.Reply{ToolCalls: toolCall("Read", map[string]any{"file_path": filepath.Join(sb.work, "README.md")})},
		modelfake.Reply{ToolCalls: toolCall("Bash", map[string]any{"command": "ls", "description": "List"})},
		modelfake.Reply{Text: "{\"groups\": []}"},
	))
	inv, o := claudeRun(t, sb, s, claudePM)
	fixture(t, "claude", "pm", inv, o)

	require.Equal(t, 0, o.code)
	reqs := s.Requests()
	require.Equal(t, 3, len(reqs))
	assert.ElementsMatch(t, []string{"Read", "Grep", "Glob"}, reqs[0].Tools)
	results := reqs[2].ToolResults()
	require.Len(t, results, 2)
	assert.Contains(t, results[0].Text, "# project")
	assert.Contains(t, results[1].Text, "No such tool available: Bash")
}

// Without any permission flag, -p mode denies what would need a prompt.
func TestClaudePermissionDenied(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	target := filepath.Join(sb.work, "x.txt")
	s := modelfake.Start(t, modelfake.ByTurn(
		modelfake.Reply{ToolCalls: toolCall("Write", map[string]any{"file_path": target, "content": "x\n"})},
		modelfake.Reply{Text: "could not write"},
	))
	inv, o := claudeRun(t, sb, s, nil)
	fixture(t, "claude", "permission-denied", inv, o)

	require.Equal(t, 0, o.code)
	assert.NoFileExists(t, target)
	res := claudeResult(t, o.stdout)
	assert.Equal(t, "success", res["subtype"])
	denials := res["permission_denials"].([]any)
	require.Len(t, denials, 1)
	assert.Equal(t, "Write", denials[0].(map[string]any)["tool_name"])
	last, _ := s.Requests()[1].LastToolResult()
	assert.Contains(t, last.Text, "requested permissions to write")
}

// Errors before the first success are retried (CLAUDE_CODE_MAX_RETRIES bounds the attempts; each one shows as a
// system/api_retry event), honouring retry-after.
func TestClaudeRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fail modelfake.Reply
	}{
		{"retry-529", modelfake.Reply{Status: 529}},
		{"retry-500", modelfake.Reply{Status: 500}},
		{"retry-429", modelfake.Reply{Status: 429, RetryAfter: "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if claudeExtended[tc.name] {
				extended(t)
			}
			sb := newSandbox(t)
			s := modelfake.Start(t, modelfake.FailFirst(2, tc.fail, modelfake.ByTurn(modelfake.Reply{Text: "recovered"})))
			inv, o := claudeRun(t, sb, s, nil, "CLAUDE_CODE_MAX_RETRIES=3")
			fixture(t, "claude", tc.name, inv, o)

			require.Equal(t, 0, o.code)
			assert.Equal(t, 3, len(s.Requests()))
			var retries []map[string]any
			for _, ev := range jsonLines(t, o.stdout) {
				if ev["subtype"] == "api_retry" {
					retries = append(retries, ev)
				}
			}
			require.Len(t, retries, 2)
			assert.EqualValues(t, tc.fail.Status, retries[0]["error_status"])
			assert.EqualValues(t, 3, retries[0]["max_retries"])
			res := claudeResult(t, o.stdout)
			assert.Equal(t, "recovered", res["result"])
			t.Logf("retry delays %v, %v ms; run %v", retries[0]["retry_delay_ms"], retries[1]["retry_delay_ms"], o.dur)
		})
	}
}

// An error that outlasts the retries ends the run with exit code 1 and a result with is_error; its subtype is
// still "success" — terminal_reason and api_error_status tell what happened.
func TestClaudeAPIErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		reply    modelfake.Reply
		requests int
		terminal string
		result   string
	}{
		{"api-error-529", modelfake.Reply{Status: 529}, 3, "api_error", "API Error: 529 Overloaded"},
		{"api-error-500", modelfake.Reply{Status: 500}, 3, "api_error", "API Error: 500 Internal server error"},
		{"api-error-429", modelfake.Reply{Status: 429, RetryAfter: "1"}, 3, "api_error", "API Error: Request rejected (429)"},
		{"api-error-401", modelfake.Reply{Status: 401}, 3, "api_error", "Invalid API key"},
		// Not retried: the prompt does not fit.
		{"api-error-400-prompt-too-long", modelfake.Reply{Status: 400, ErrorMessage: "prompt is too long: 300000 tokens > 200000 maximum"}, 1, "prompt_too_long", "Prompt is too long"},
		// An error event inside a 200 stream: retried as a stream, then once without streaming (the last request).
		{"api-error-midstream", modelfake.Reply{FailMidStream: true}, 4, "api_error", "API Error: 529 Overloaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if claudeExtended[tc.name] {
				extended(t)
			}
			sb := newSandbox(t)
			s := modelfake.Start(t, modelfake.ByTurn(tc.reply))
			inv, o := claudeRun(t, sb, s, nil)
			fixture(t, "claude", tc.name, inv, o)

			assert.Equal(t, 1, o.code)
			reqs := s.Requests()
			assert.Equal(t, tc.requests, len(reqs))
			if tc.reply.FailMidStream && len(reqs) > 0 {
				assert.False(t, reqs[len(reqs)-1].Stream)
			}
			res := claudeResult(t, o.stdout)
			assert.Equal(t, "success", res["subtype"])
			assert.Equal(t, true, res["is_error"])
			assert.Equal(t, tc.terminal, res["terminal_reason"])
			assert.Contains(t, res["result"], tc.result)
		})
	}
}

// A model that never answers: claude waits (API_TIMEOUT_MS, 600 s by default, bounds a request that has no
// response yet; a stream that started and stalls is not bounded by it), so the harness has to end it. SIGINT
// makes claude write an error_during_execution result and exit 0; SIGTERM ends it at once without one.
func TestClaudeHang(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		reply  modelfake.Reply
		env    []string
		signal syscall.Signal
		check  func(t *testing.T, o outcome)
	}{
		{name: "hang-killed", reply: modelfake.Reply{Hang: true}, check: func(t *testing.T, o outcome) {
			assert.True(t, o.killed, "claude should still be waiting")
			for _, ev := range jsonLines(t, o.stdout) {
				assert.NotEqual(t, "result", ev["type"])
			}
		}},
		{name: "hang-stalled-stream-killed", reply: modelfake.Reply{HangAfterStart: true}, env: []string{"API_TIMEOUT_MS=2000"}, check: func(t *testing.T, o outcome) {
			assert.True(t, o.killed, "a stalled stream is not bounded by API_TIMEOUT_MS")
		}},
		{name: "hang-api-timeout", reply: modelfake.Reply{Hang: true}, env: []string{"API_TIMEOUT_MS=2000", "CLAUDE_CODE_MAX_RETRIES=0"}, check: func(t *testing.T, o outcome) {
			require.False(t, o.killed)
			assert.Equal(t, 1, o.code)
			res := claudeResult(t, o.stdout)
			assert.Equal(t, "api_error", res["terminal_reason"])
			assert.Contains(t, res["result"], "Request timed out")
		}},
		{name: "hang-sigint", reply: modelfake.Reply{Hang: true}, signal: syscall.SIGINT, check: func(t *testing.T, o outcome) {
			require.False(t, o.killed)
			assert.Equal(t, 0, o.code)
			// Usually an interrupted turn and its result follow; once, on a heavily loaded machine, claude exited 0
			// after the init event alone.
			evs := jsonLines(t, o.stdout)
			if last := evs[len(evs)-1]; last["type"] == "result" {
				assert.Equal(t, "error_during_execution", last["subtype"])
				assert.Equal(t, true, last["is_error"])
			} else {
				t.Logf("SIGINT: exit 0 without a result event")
			}
		}},
		{name: "hang-sigterm", reply: modelfake.Reply{Hang: true}, signal: syscall.SIGTERM, check: func(t *testing.T, o outcome) {
			require.False(t, o.killed)
			assert.Equal(t, 143, o.code)
			for _, ev := range jsonLines(t, o.stdout) {
				assert.NotEqual(t, "result", ev["type"])
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if claudeExtended[tc.name] {
				extended(t)
			}
			sb := newSandbox(t)
			s := modelfake.Start(t, modelfake.ByTurn(tc.reply))
			// Five seconds after its request, a claude that is still running is waiting for good.
			inv := invocation{argv: claudeArgv(t), env: claudeEnv(sb, s, tc.env...), stdin: "Do the task.",
				afterRequest: 5 * time.Second, signal: tc.signal, server: s}
			o := run(t, sb, inv)
			logRequests(t, s)
			fixture(t, "claude", tc.name, inv, o)
			assert.NotEmpty(t, s.Requests())
			tc.check(t, o)
		})
	}
}

func TestClaudeMaxTurns(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	s := modelfake.Start(t, func(modelfake.Request) modelfake.Reply {
		return modelfake.Reply{ToolCalls: toolCall("Bash", map[string]any{"command": "echo again", "description": "Loop"})}
	})
	// --max-turns is no longer in --help but still accepted (so is CLAUDE_CODE_MAX_TURNS).
	inv, o := claudeRun(t, sb, s, append([]string{"--max-turns", "2"}, claudeImplementer...))
	fixture(t, "claude", "max-turns", inv, o)

	assert.Equal(t, 1, o.code)
	assert.Equal(t, 2, len(s.Requests()))
	res := claudeResult(t, o.stdout)
	assert.Equal(t, "error_max_turns", res["subtype"])
	assert.Equal(t, "max_turns", res["terminal_reason"])
	assert.Equal(t, []any{"Reached maximum number of turns (2)"}, res["errors"])
	assert.NotContains(t, res, "result")
}

func TestClaudeMaxBudget(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	s := modelfake.Start(t, func(modelfake.Request) modelfake.Reply {
		return modelfake.Reply{ToolCalls: toolCall("Bash", map[string]any{"command": "echo again", "description": "Loop"}),
			Usage: modelfake.Usage{InputTokens: 100000, OutputTokens: 1000}}
	})
	inv, o := claudeRun(t, sb, s, append([]string{"--max-budget-usd", "0.5"}, claudeImplementer...))
	fixture(t, "claude", "max-budget", inv, o)

	assert.Equal(t, 1, o.code)
	res := claudeResult(t, o.stdout)
	assert.Equal(t, "error_max_budget_usd", res["subtype"])
	assert.Equal(t, "budget_exhausted", res["terminal_reason"])
	// The budget is checked after each turn, so the total can pass it.
	assert.Greater(t, res["total_cost_usd"], 0.5)
}

// --json-schema adds a StructuredOutput tool; the model's call to it ends the run and becomes structured_output
// (and, as JSON text, result).
func TestClaudeStructuredOutput(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	out := map[string]any{"status": "READY_FOR_QA", "summary": []any{"did it"}}
	s := modelfake.Start(t, func(r modelfake.Request) modelfake.Reply {
		if !r.HasTool("StructuredOutput") {
			return modelfake.Reply{Text: "no StructuredOutput tool offered"}
		}
		return modelfake.Reply{ToolCalls: toolCall("StructuredOutput", out)}
	})
	schema := `{"type":"object","properties":{"status":{"type":"string"},"summary":{"type":"array","items":{"type":"string"}}},"required":["status"]}`
	inv := invocation{argv: []string{Claude(t), "-p", "--output-format", "json", "--model", claudeModel, "--no-session-persistence", "--json-schema", schema},
		env: claudeEnv(sb, s), stdin: "Do the task.", server: s}
	o := run(t, sb, inv)
	logRequests(t, s)
	fixture(t, "claude", "structured-output", inv, o)

	require.Equal(t, 0, o.code)
	require.Len(t, lines(o.stdout), 1, "--output-format json prints the result object alone")
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &res))
	assert.Equal(t, "result", res["type"])
	assert.Equal(t, out, res["structured_output"])
	assert.JSONEq(t, `{"status":"READY_FOR_QA","summary":["did it"]}`, res["result"].(string))
	assert.Equal(t, 1, len(s.Requests()))
}

// A model that never calls StructuredOutput is told to once; then the run ends "success" (exit 0) with
// structured_output null — a caller must check it.
func TestClaudeStructuredOutputMissing(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	s := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "plain words"}))
	schema := `{"type":"object","properties":{"status":{"type":"string"}},"required":["status"]}`
	inv := invocation{argv: claudeArgv(t, "--json-schema", schema), env: claudeEnv(sb, s), stdin: "Do the task.", server: s}
	o := run(t, sb, inv)
	logRequests(t, s)
	fixture(t, "claude", "structured-output-missing", inv, o)

	require.Equal(t, 0, o.code)
	res := claudeResult(t, o.stdout)
	assert.Equal(t, "success", res["subtype"])
	assert.Equal(t, false, res["is_error"])
	assert.Nil(t, res["structured_output"])
	assert.Equal(t, "plain words", res["result"])
	assert.Equal(t, 2, len(s.Requests()))
	var nudges int
	for _, r := range s.Requests() {
		for _, txt := range r.UserTexts() {
			if strings.Contains(txt, "[structured-output-enforce]") {
				nudges++
				break
			}
		}
	}
	assert.Positive(t, nudges, "claude asks for the StructuredOutput call")
}

// A 3 MB answer arrives whole, on lines of over 3 MB (a line scanner with a default buffer would choke).
func TestClaudeLargeAnswer(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	big := strings.Repeat("0123456789abcdef", 3<<20/16) + "\n{\"status\": \"READY_FOR_QA\"}"
	s := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: big}))
	inv, o := claudeRun(t, sb, s, nil)
	// The fixture keeps the shape, not the 6 MB.
	fixtureOut(t, "claude", "large-answer", inv, o, strings.ReplaceAll(o.stdout, strings.Repeat("0123456789abcdef", 3<<20/16), "<3145728 bytes of 0123456789abcdef>"))

	require.Equal(t, 0, o.code)
	res := claudeResult(t, o.stdout)
	assert.Equal(t, big, res["result"])
}

// Nothing listens at the base URL: retried like an API error (error "unknown", no status), then the run fails.
func TestClaudeUnreachable(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	s := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "hi"}))
	env := claudeEnv(sb, s)
	s.Close()
	inv := invocation{argv: claudeArgv(t), env: env, stdin: "Do the task."}
	o := run(t, sb, inv)
	fixture(t, "claude", "unreachable", inv, o)

	assert.Equal(t, 1, o.code)
	res := claudeResult(t, o.stdout)
	assert.Equal(t, true, res["is_error"])
	assert.Equal(t, "api_error", res["terminal_reason"])
	assert.Equal(t, "connection_failed", res["api_error"])
	assert.Contains(t, res["result"], "API Error: Connection refused")
}
