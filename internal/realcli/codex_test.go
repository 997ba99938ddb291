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

const codexModel = "gpt-5.5"

// codexEnv is the whole environment codex runs with: a private home and CODEX_HOME, and the key of the provider
// codexArgv defines.
func codexEnv(t *testing.T, sb sandbox, extra ...string) []string {
	codexHome := filepath.Join(sb.home, ".codex")
	require.NoError(t, os.MkdirAll(codexHome, 0o755))
	env := []string{"PATH=" + basePath(), "HOME=" + sb.home, "CODEX_HOME=" + codexHome, "FAKE_API_KEY=sk-test"}
	return append(env, extra...)
}

// codexProvider points codex at the fake through a provider of its own (the built-in "openai" provider cannot be
// redefined, and tries a WebSocket first). Retries default to none; provider adds or overrides fields.
func codexProvider(s *modelfake.Server, fields ...string) string {
	all := []string{`name="fake"`, `base_url="` + s.OpenAIBaseURL() + `"`, `env_key="FAKE_API_KEY"`, `wire_api="responses"`,
		`request_max_retries=0`, `stream_max_retries=0`}
	for _, f := range fields {
		key, _, _ := strings.Cut(f, "=")
		replaced := false
		for i, a := range all {
			if strings.HasPrefix(a, key+"=") {
				all[i], replaced = f, true
			}
		}
		if !replaced {
			all = append(all, f)
		}
	}
	return "model_providers.fake={" + strings.Join(all, ", ") + "}"
}

// codexArgv is a headless run printing JSONL events, with nothing reaching for the network: analytics off and
// the plugin sync off (with both, codex resolves no host name; without them it looks up ab.chatgpt.com,
// chatgpt.com and github.com). Without unbounded_connection_retries an unreachable server fails the turn instead
// of "waiting for network" forever. allow_login_shell=false keeps PATH: a login shell reads /etc/profile, which
// resets it. The prompt comes on stdin ("-").
func codexArgv(t *testing.T, provider string, extra ...string) []string {
	argv := []string{Codex(t), "exec", "--json", "--skip-git-repo-check", "--ephemeral", "-m", codexModel,
		"-c", "model_provider=fake", "-c", provider,
		"-c", "analytics.enabled=false", "--disable", "plugins", "--disable", "unbounded_connection_retries",
		"-c", "allow_login_shell=false"}
	return append(append(argv, extra...), "-")
}

func codexRun(t *testing.T, sb sandbox, s *modelfake.Server, provider string, args []string, env ...string) (invocation, outcome) {
	t.Helper()
	inv := invocation{argv: codexArgv(t, provider, args...), env: codexEnv(t, sb, env...), stdin: "Do the task.", server: s}
	o := run(t, sb, inv)
	logRequests(t, s)
	return inv, o
}

// codexEvents decodes the JSONL stream, failing on a line that is not a JSON object.
func codexEvents(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	return jsonLines(t, stdout)
}

// byType returns the events of one type.
func byType(evs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["type"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

// items returns the completed items of one type.
func items(evs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range byType(evs, "item.completed") {
		if it, _ := ev["item"].(map[string]any); it["type"] == typ {
			out = append(out, it)
		}
	}
	return out
}

// codexExtended are the table cases -short skips.
var codexExtended = map[string]bool{"retry-503": true, "retry-response-failed": true, "api-error-429-no-retry-after": true, "api-error-401": true, "api-error-400": true, "api-error-context-length": true, "api-error-insufficient-quota": true, "hang-sigterm": true, "builtin-openai-api-key": true, "unreachable-default": true, "max-turns-config": true, "danger-full-access": true}

const helloPatch = "*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n"

func execCommand(cmd string) []modelfake.ToolCall {
	return []modelfake.ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": cmd}}}
}

// The implementer: workspace-write lets apply_patch and commands change the working copy (and /tmp), nothing
// else.
func TestCodexImplementer(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	lastMessage := filepath.Join(sb.root, "last-message.txt")
	s := modelfake.Start(t, modelfake.ByTurn(
		modelfake.Reply{Text: "Writing the file.", ToolCalls: []modelfake.ToolCall{{Name: "apply_patch", Input: helloPatch}},
			Usage: modelfake.Usage{InputTokens: 1000, OutputTokens: 50, CacheReadTokens: 200}},
		modelfake.Reply{ToolCalls: execCommand("ls -1 && go version"), Usage: modelfake.Usage{InputTokens: 1100, OutputTokens: 20}},
		modelfake.Reply{Text: finalJSON, Usage: modelfake.Usage{InputTokens: 1200, OutputTokens: 30}},
	))
	inv, o := codexRun(t, sb, s, codexProvider(s), []string{"--sandbox", "workspace-write", "-o", lastMessage})
	fixture(t, "codex", "implementer", inv, o)

	require.Equal(t, 0, o.code)
	b, err := os.ReadFile(filepath.Join(sb.work, "hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello from codex\n", string(b))
	evs := codexEvents(t, o.stdout)
	assert.Equal(t, "thread.started", evs[0]["type"])
	changes := items(evs, "file_change")
	require.Len(t, changes, 1)
	assert.Equal(t, "completed", changes[0]["status"])
	cmds := items(evs, "command_execution")
	require.Len(t, cmds, 1)
	assert.EqualValues(t, 0, cmds[0]["exit_code"])
	assert.Contains(t, cmds[0]["aggregated_output"], "hello.txt")
	assert.Contains(t, cmds[0]["aggregated_output"], "go version go1.")
	msgs := items(evs, "agent_message")
	require.NotEmpty(t, msgs)
	assert.Equal(t, finalJSON, msgs[len(msgs)-1]["text"])
	// Usage is the sum over the turn's requests; input_tokens include the cached ones.
	done := byType(evs, "turn.completed")
	require.Len(t, done, 1)
	usage := done[0]["usage"].(map[string]any)
	assert.EqualValues(t, 3500, usage["input_tokens"])
	assert.EqualValues(t, 200, usage["cached_input_tokens"])
	assert.EqualValues(t, 100, usage["output_tokens"])
	last, err := os.ReadFile(lastMessage)
	require.NoError(t, err)
	assert.Equal(t, finalJSON, strings.TrimSpace(string(last)))
	reqs := s.Requests()
	require.Equal(t, 3, len(reqs))
	assert.Equal(t, "Do the task.", reqs[0].FirstUserText())
	assert.Equal(t, "Bearer sk-test", reqs[0].Header.Get("Authorization"))
}

// The reviewer and the PM: read-only. A patch is refused, and only stderr says so (no item in the JSON stream);
// a command that writes fails with "Read-only file system"; reading commands work. Note that go test cannot run
// here: it needs a writable build cache.
func TestCodexReadOnly(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	s := modelfake.Start(t, modelfake.ByTurn(
		modelfake.Reply{ToolCalls: []modelfake.ToolCall{{Name: "apply_patch", Input: helloPatch}}},
		modelfake.Reply{ToolCalls: execCommand("touch notes.txt")},
		modelfake.Reply{ToolCalls: execCommand("go version")},
		modelfake.Reply{Text: "{\"status\": \"APPROVED\"}"},
	))
	inv, o := codexRun(t, sb, s, codexProvider(s), []string{"--sandbox", "read-only"})
	fixture(t, "codex", "read-only", inv, o)

	require.Equal(t, 0, o.code)
	assert.NoFileExists(t, filepath.Join(sb.work, "hello.txt"))
	assert.NoFileExists(t, filepath.Join(sb.work, "notes.txt"))
	assert.Contains(t, o.stderr, "patch rejected: writing is blocked by read-only sandbox")
	evs := codexEvents(t, o.stdout)
	assert.Empty(t, items(evs, "file_change"), "the refused patch leaves no item")
	// The stream's items are not a reliable record of refused commands:
	// codex 0.169.0 sometimes emits no item at all for the command the
	// sandbox refused (on 2026-11-26, 8 of 8 runs on an idle machine and 2
	// of 4 under load, after many runs that had one). The model's tool
	// results are what the agent acted on, and always carry it.
	cmds := items(evs, "command_execution")
	require.NotEmpty(t, cmds)
	if len(cmds) == 2 {
		assert.Contains(t, cmds[0]["aggregated_output"], "Read-only file system")
		assert.EqualValues(t, 1, cmds[0]["exit_code"])
		assert.Equal(t, "failed", cmds[0]["status"])
	} else {
		require.Len(t, cmds, 1, "only the refused command may be missing")
	}
	assert.Contains(t, cmds[len(cmds)-1]["aggregated_output"], "go version go1.")
	reqs := s.Requests()
	require.Equal(t, 4, len(reqs))
	results := reqs[3].ToolResults()
	require.Len(t, results, 3)
	assert.Contains(t, results[0].Text, "patch rejected")
	assert.Contains(t, results[1].Text, "Process exited with code 1")
	assert.Contains(t, results[1].Text, "touch: cannot touch 'notes.txt': Read-only file system")
	assert.Contains(t, results[2].Text, "go version go1.")
}

// The Linux sandbox (codex's bundled bubblewrap, seccomp) works here as root: what each mode lets a command
// write. /tmp is taken out of workspace-write's writable roots so "outside" (the test's home, under /tmp) is
// outside.
func TestCodexSandboxModes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode            string
		inside, outside bool
	}{
		{"read-only", false, false},
		{"workspace-write", true, false},
		{"danger-full-access", true, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			if codexExtended[tc.mode] {
				extended(t)
			}
			sb := newSandbox(t)
			outside := filepath.Join(sb.home, "outside.txt")
			s := modelfake.Start(t, modelfake.ByTurn(
				modelfake.Reply{ToolCalls: execCommand("touch inside.txt; touch " + outside + "; grep Seccomp: /proc/self/status")},
				modelfake.Reply{Text: "done"},
			))
			_, o := codexRun(t, sb, s, codexProvider(s), []string{"--sandbox", tc.mode,
				"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true"})
			require.Equal(t, 0, o.code)
			_, err := os.Stat(filepath.Join(sb.work, "inside.txt"))
			assert.Equal(t, tc.inside, err == nil, "inside written")
			_, err = os.Stat(outside)
			assert.Equal(t, tc.outside, err == nil, "outside written")
			cmds := items(codexEvents(t, o.stdout), "command_execution")
			require.Len(t, cmds, 1)
			t.Logf("%s: %s", tc.mode, cmds[0]["aggregated_output"])
		})
	}
}

// Errors before the first success are retried at two levels, each bounded by a provider field: 5xx by the HTTP
// layer (request_max_retries, default 4; silent), anything else retryable — 429, 401, a failed or broken stream —
// by reconnecting the stream (stream_max_retries, default 5), each reconnect an "error" event "Reconnecting...
// n/m (…)" that does not end the turn.
func TestCodexRetries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		fail     modelfake.Reply
		provider string
	}{
		{"retry-500", modelfake.Reply{Status: 500}, "request_max_retries=3"},
		{"retry-503", modelfake.Reply{Status: 503}, "request_max_retries=3"},
		{"retry-429", modelfake.Reply{Status: 429, RetryAfter: "1"}, "stream_max_retries=3"},
		{"retry-response-failed", modelfake.Reply{FailMidStream: true}, "stream_max_retries=3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if codexExtended[tc.name] {
				extended(t)
			}
			sb := newSandbox(t)
			s := modelfake.Start(t, modelfake.FailFirst(2, tc.fail, modelfake.ByTurn(modelfake.Reply{Text: "recovered"})))
			start := time.Now()
			inv, o := codexRun(t, sb, s, codexProvider(s, tc.provider), nil)
			fixture(t, "codex", tc.name, inv, o)

			require.Equal(t, 0, o.code)
			assert.Equal(t, 3, len(s.Requests()))
			evs := codexEvents(t, o.stdout)
			msgs := items(evs, "agent_message")
			require.Len(t, msgs, 1)
			assert.Equal(t, "recovered", msgs[0]["text"])
			assert.Len(t, byType(evs, "turn.completed"), 1)
			reqs := s.Requests()
			t.Logf("retried after %v and %v (run %v)", reqs[1].Received.Sub(reqs[0].Received), reqs[2].Received.Sub(reqs[1].Received), time.Since(start))
		})
	}
}

// Errors that outlast the retries: an "error" event, then turn.failed with the same message, exit code 1.
func TestCodexAPIErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		reply    modelfake.Reply
		provider []string
		requests int
		message  string
	}{
		{"api-error-500", modelfake.Reply{Status: 500}, []string{"request_max_retries=1"}, 2, "We’re currently experiencing high demand"},
		{"api-error-429", modelfake.Reply{Status: 429, RetryAfter: "1"}, []string{"stream_max_retries=1"}, 2, "exceeded retry limit, last status: 429 Too Many Requests"},
		{"api-error-429-no-retry-after", modelfake.Reply{Status: 429}, []string{"stream_max_retries=1"}, 1, "exceeded retry limit, last status: 429 Too Many Requests"},
		// Authentication is not retried by the HTTP layer, but the stream retry (stream_max_retries) tries again.
		{"api-error-401", modelfake.Reply{Status: 401}, []string{"stream_max_retries=1"}, 2, "unexpected status 401 Unauthorized: Incorrect API key provided."},
		{"api-error-400", modelfake.Reply{Status: 400, ErrorMessage: "Invalid 'input': too long."}, []string{"stream_max_retries=1"}, 1, "Invalid 'input': too long."},
		// response.failed inside a 200 stream is retried as a stream (stream_max_retries).
		{"api-error-response-failed", modelfake.Reply{FailMidStream: true}, []string{"stream_max_retries=1"}, 2, "stream disconnected before completion: The server had an error"},
		{"api-error-context-length", modelfake.Reply{FailMidStream: true, ErrorType: "context_length_exceeded", ErrorMessage: "Your input exceeds the context window of this model."}, []string{"stream_max_retries=1"}, 1, "context window"},
		{"api-error-insufficient-quota", modelfake.Reply{FailMidStream: true, ErrorType: "insufficient_quota", ErrorMessage: "You exceeded your current quota."}, []string{"stream_max_retries=1"}, 1, "Quota exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if codexExtended[tc.name] {
				extended(t)
			}
			sb := newSandbox(t)
			s := modelfake.Start(t, modelfake.ByTurn(tc.reply))
			inv, o := codexRun(t, sb, s, codexProvider(s, tc.provider...), nil)
			fixture(t, "codex", tc.name, inv, o)

			assert.Equal(t, 1, o.code)
			assert.Equal(t, tc.requests, len(s.Requests()))
			evs := codexEvents(t, o.stdout)
			failed := byType(evs, "turn.failed")
			require.Len(t, failed, 1)
			msg := failed[0]["error"].(map[string]any)["message"].(string)
			assert.Contains(t, strings.ToLower(msg), strings.ToLower(tc.message))
			errs := byType(evs, "error")
			require.NotEmpty(t, errs)
			assert.Equal(t, msg, errs[len(errs)-1]["message"], "the last error event repeats the failure")
		})
	}
}

// A model that never answers: codex waits for response headers without a limit; once a stream has started,
// stream_idle_timeout_ms (provider field, default 300000) ends a stall. SIGINT ends it with exit code 1, SIGTERM
// with the signal; neither prints turn.failed.
func TestCodexHang(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		reply    modelfake.Reply
		provider []string
		signal   syscall.Signal
		check    func(t *testing.T, o outcome)
	}{
		{name: "hang-killed", reply: modelfake.Reply{Hang: true}, provider: []string{"stream_idle_timeout_ms=2000"}, check: func(t *testing.T, o outcome) {
			assert.True(t, o.killed, "codex should still be waiting")
		}},
		{name: "hang-stalled-stream-idle-timeout", reply: modelfake.Reply{HangAfterStart: true}, provider: []string{"stream_idle_timeout_ms=2000"}, check: func(t *testing.T, o outcome) {
			require.False(t, o.killed)
			assert.Equal(t, 1, o.code)
			failed := byType(codexEvents(t, o.stdout), "turn.failed")
			require.Len(t, failed, 1)
			assert.Contains(t, failed[0]["error"].(map[string]any)["message"], "idle timeout waiting for SSE")
		}},
		{name: "hang-sigint", reply: modelfake.Reply{Hang: true}, signal: syscall.SIGINT, check: func(t *testing.T, o outcome) {
			require.False(t, o.killed)
			assert.Equal(t, 1, o.code)
			assert.Empty(t, byType(codexEvents(t, o.stdout), "turn.failed"))
		}},
		{name: "hang-sigterm", reply: modelfake.Reply{Hang: true}, signal: syscall.SIGTERM, check: func(t *testing.T, o outcome) {
			require.False(t, o.killed)
			assert.Equal(t, -1, o.code, "ended by the signal")
			assert.Empty(t, byType(codexEvents(t, o.stdout), "turn.failed"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if codexExtended[tc.name] {
				extended(t)
			}
			sb := newSandbox(t)
			s := modelfake.Start(t, modelfake.ByTurn(tc.reply))
			inv := invocation{argv: codexArgv(t, codexProvider(s, tc.provider...)), env: codexEnv(t, sb), stdin: "Do the task.",
				afterRequest: 5 * time.Second, signal: tc.signal, server: s}
			o := run(t, sb, inv)
			logRequests(t, s)
			fixture(t, "codex", tc.name, inv, o)
			assert.NotEmpty(t, s.Requests())
			tc.check(t, o)
		})
	}
}

// --output-schema sends the schema as the Responses API's text.format; the final message is the model's JSON.
func TestCodexOutputSchema(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	schemaFile := filepath.Join(sb.root, "schema.json")
	schema := `{"type":"object","properties":{"status":{"type":"string"}},"required":["status"],"additionalProperties":false}`
	require.NoError(t, os.WriteFile(schemaFile, []byte(schema), 0o644))
	lastMessage := filepath.Join(sb.root, "last-message.txt")
	s := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: `{"status":"READY_FOR_QA"}`}))
	inv, o := codexRun(t, sb, s, codexProvider(s), []string{"--output-schema", schemaFile, "-o", lastMessage})
	fixture(t, "codex", "output-schema", inv, o)

	require.Equal(t, 0, o.code)
	reqs := s.Requests()
	require.Equal(t, 1, len(reqs))
	var body struct {
		Text struct {
			Format struct {
				Type   string          `json:"type"`
				Strict bool            `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"text"`
	}
	require.NoError(t, json.Unmarshal(reqs[0].Body, &body))
	assert.Equal(t, "json_schema", body.Text.Format.Type)
	assert.True(t, body.Text.Format.Strict)
	assert.JSONEq(t, schema, string(body.Text.Format.Schema))
	last, err := os.ReadFile(lastMessage)
	require.NoError(t, err)
	assert.JSONEq(t, `{"status":"READY_FOR_QA"}`, string(last))
}

// A 3 MB answer arrives whole, on a line of over 3 MB.
func TestCodexLargeAnswer(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	filler := strings.Repeat("0123456789abcdef", 3<<20/16)
	big := filler + "\n{\"status\": \"READY_FOR_QA\"}"
	s := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: big}))
	inv, o := codexRun(t, sb, s, codexProvider(s), nil)
	fixtureOut(t, "codex", "large-answer", inv, o, strings.ReplaceAll(o.stdout, filler, "<3145728 bytes of 0123456789abcdef>"))

	require.Equal(t, 0, o.code)
	msgs := items(codexEvents(t, o.stdout), "agent_message")
	require.Len(t, msgs, 1)
	assert.Equal(t, big, msgs[0]["text"])
}

// The built-in provider, as bazinga uses it against the real API: codex exec takes its key from CODEX_API_KEY
// (OPENAI_API_KEY is not read), and tries a WebSocket before falling back to HTTPS (five reconnects), which the
// fake refuses.
func TestCodexBuiltinProvider(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  string
		ok   bool
	}{
		{"builtin-codex-api-key", "CODEX_API_KEY=sk-codex", true},
		{"builtin-openai-api-key", "OPENAI_API_KEY=sk-openai", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if codexExtended[tc.name] {
				extended(t)
			}
			sb := newSandbox(t)
			s := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "hello"}))
			argv := []string{Codex(t), "exec", "--json", "--skip-git-repo-check", "--ephemeral", "-m", codexModel,
				"-c", `openai_base_url="` + s.OpenAIBaseURL() + `"`, "-c", "analytics.enabled=false", "--disable", "plugins", "-"}
			env := []string{"PATH=" + basePath(), "HOME=" + sb.home, "CODEX_HOME=" + filepath.Join(sb.home, ".codex"), tc.env}
			require.NoError(t, os.MkdirAll(filepath.Join(sb.home, ".codex"), 0o755))
			inv := invocation{argv: argv, env: env, stdin: "Do the task.", server: s}
			o := run(t, sb, inv)
			fixture(t, "codex", tc.name, inv, o)

			for _, u := range s.Unhandled() {
				assert.Contains(t, u, "(websocket upgrade)")
			}
			evs := codexEvents(t, o.stdout)
			if !tc.ok {
				assert.Equal(t, 1, o.code)
				failed := byType(evs, "turn.failed")
				require.Len(t, failed, 1)
				assert.Contains(t, failed[0]["error"].(map[string]any)["message"], "You didn't provide an API key")
				return
			}
			require.Equal(t, 0, o.code)
			require.NotEmpty(t, s.Requests())
			assert.Equal(t, "Bearer sk-codex", s.Requests()[0].Header.Get("Authorization"))
			fallback := items(evs, "error")
			require.Len(t, fallback, 1)
			assert.Contains(t, fallback[0]["message"], "Falling back from WebSockets to HTTPS transport")
		})
	}
}

// codex exec has no turn limit: neither a flag nor a config key (a run is bounded only by its caller's timeout).
func TestCodexNoMaxTurns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"max-turns-flag", []string{"--max-turns", "2"}, "unexpected argument '--max-turns' found"},
		{"max-turns-config", []string{"--strict-config", "-c", "max_turns=2"}, "unknown configuration field `max_turns`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if codexExtended[tc.name] {
				extended(t)
			}
			sb := newSandbox(t)
			s := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "hi"}))
			inv, o := codexRun(t, sb, s, codexProvider(s), tc.args)
			fixture(t, "codex", tc.name, inv, o)
			assert.NotEqual(t, 0, o.code)
			assert.Contains(t, o.stderr, tc.want)
			assert.Empty(t, s.Requests())
		})
	}
}

// Nothing listens at the base URL. By default (the feature unbounded_connection_retries) codex retries the
// connection forever ("Reconnecting... waiting for network"); with it disabled the turn fails at once.
func TestCodexUnreachable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		enable  bool
		message string
	}{
		{"unreachable-default", true, "Reconnecting... waiting for network (Connection failed: error sending request)"},
		{"unreachable", false, "Connection failed: error sending request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if codexExtended[tc.name] {
				extended(t)
			}
			sb := newSandbox(t)
			s := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "hi"}))
			provider := codexProvider(s)
			s.Close()
			argv, timeout := codexArgv(t, provider), 2*time.Minute
			if tc.enable {
				// Leave codex its default: drop "--disable unbounded_connection_retries" (a later --enable loses).
				var kept []string
				for i := 0; i < len(argv); i++ {
					if argv[i] == "--disable" && i+1 < len(argv) && argv[i+1] == "unbounded_connection_retries" {
						i++
						continue
					}
					kept = append(kept, argv[i])
				}
				argv, timeout = kept, 30*time.Second
			}
			inv := invocation{argv: argv, env: codexEnv(t, sb), stdin: "Do the task.", timeout: timeout}
			o := run(t, sb, inv)
			fixture(t, "codex", tc.name, inv, o)
			evs := codexEvents(t, o.stdout)
			errs := byType(evs, "error")
			require.NotEmpty(t, errs)
			assert.Equal(t, tc.message, errs[0]["message"])
			if tc.enable {
				assert.True(t, o.killed, "codex should still be waiting for the network")
				assert.Empty(t, byType(evs, "turn.failed"))
				return
			}
			assert.Equal(t, 1, o.code)
			failed := byType(evs, "turn.failed")
			require.Len(t, failed, 1)
			assert.Equal(t, tc.message, failed[0]["error"].(map[string]any)["message"])
		})
	}
}
