package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// cliFixture reads testdata/cli/<cli>/<name> (see SOURCES.md there).
func cliFixture(t *testing.T, cli, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "cli", cli, name))
	require.NoError(t, err)
	return b
}

// readThrough streams output through a driver's reader the way runOnce
// does (raw writer or line splitter) and returns what it concluded.
func readThrough(d Driver, output []byte, answerFile []byte) Final {
	r := d.NewReader()
	if raw, ok := r.(rawOutputReader); ok {
		// A few odd-sized writes, as a pipe delivers them.
		for len(output) > 0 {
			n := min(len(output), 4093)
			raw.Write(output[:n])
			output = output[n:]
		}
		return r.Finish(answerFile)
	}
	lw := newLineWriter(r, MaxLineBytes)
	for len(output) > 0 {
		n := min(len(output), 4093)
		lw.Write(output[:n])
		output = output[n:]
	}
	lw.close()
	return r.Finish(answerFile)
}

func failureKind(f Final) FailureKind {
	if f.Failure == nil {
		return FailureNone
	}
	return f.Failure.Kind
}

// hugeAnswer is a final answer of about 3 MB: a JSON result whose summary
// line is long (the parser caps it, but the whole answer must arrive).
func hugeAnswer(status string) string {
	return `{"status":"` + status + `","summary":["` + strings.Repeat("x", 3<<20) + `"]}`
}

func TestGeminiInvocation(t *testing.T) {
	d, err := DriverFor("", "gemini")
	require.NoError(t, err)
	require.Equal(t, "gemini", d.Name())
	inv := func(args []string, access Access) Invocation {
		t.Helper()
		in, err := d.Invocation(args, Invoke{Role: pipeline.RoleQA, Access: access, Model: "gemini-2.5-pro", Dir: "/step"})
		require.NoError(t, err)
		return in
	}
	for _, tc := range []struct {
		name   string
		args   []string
		access Access
		want   []string
		policy string // "" when no policy file
	}{
		{"edit", []string{"gemini"}, AccessEdit,
			[]string{"gemini", "--output-format", "stream-json", "--model", "gemini-2.5-pro", "--approval-mode", "yolo"}, ""},
		{"run", []string{"gemini"}, AccessRun,
			[]string{"gemini", "--output-format", "stream-json", "--model", "gemini-2.5-pro", "--approval-mode", "default", "--policy", "/step/gemini-policy.toml"},
			"[[rule]]\ntoolName = [\"run_shell_command\"]\ndecision = \"allow\"\npriority = 500\nallowRedirection = true\n\n[[rule]]\ntoolName = [\"write_file\", \"replace\"]\ndecision = \"deny\"\npriority = 999\n"},
		{"read", []string{"gemini"}, AccessRead,
			[]string{"gemini", "--output-format", "stream-json", "--model", "gemini-2.5-pro", "--approval-mode", "default", "--policy", "/step/gemini-policy.toml"},
			"[[rule]]\ntoolName = [\"run_shell_command\", \"write_file\", \"replace\"]\ndecision = \"deny\"\npriority = 999\n"},
		{"through npx: flags after the package", []string{"npx", "-y", "@google/gemini-cli", "-p", "go"}, AccessEdit,
			[]string{"npx", "-y", "@google/gemini-cli", "--output-format", "stream-json", "--model", "gemini-2.5-pro", "--approval-mode", "yolo", "-p", "go"}, ""},
		{"user flags kept, not doubled", []string{"gemini", "-m", "flash", "-o", "json", "--yolo", "-p", "go"}, AccessEdit,
			[]string{"gemini", "-m", "flash", "-o", "json", "--yolo", "-p", "go"}, ""},
		{"user mode on a reviewer: deny rules still added", []string{"gemini", "--approval-mode=yolo"}, AccessRun,
			[]string{"gemini", "--output-format", "stream-json", "--model", "gemini-2.5-pro", "--policy", "/step/gemini-policy.toml", "--approval-mode=yolo"},
			"[[rule]]\ntoolName = [\"write_file\", \"replace\"]\ndecision = \"deny\"\npriority = 999\n"},
		{"user allowed tools on a reviewer: no allow rule of ours", []string{"gemini", "--allowed-tools", "run_shell_command(go test)"}, AccessRun,
			[]string{"gemini", "--output-format", "stream-json", "--model", "gemini-2.5-pro", "--approval-mode", "default", "--policy", "/step/gemini-policy.toml", "--allowed-tools", "run_shell_command(go test)"},
			"[[rule]]\ntoolName = [\"write_file\", \"replace\"]\ndecision = \"deny\"\npriority = 999\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := inv(tc.args, tc.access)
			assert.Equal(t, tc.want, got.Args)
			assert.Equal(t, map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"}, got.Env)
			assert.Empty(t, got.AnswerFile)
			if tc.policy == "" {
				assert.Empty(t, got.Files)
				return
			}
			policy := string(got.Files[geminiPolicyFile])
			assert.Contains(t, policy, tc.policy)
			assert.Contains(t, policy, `deny_message = "bazinga: the qa step may `)
		})
	}
}

func TestGeminiCheck(t *testing.T) {
	d := drivers["gemini"]
	for _, tc := range []struct {
		args []string
		want []string // substrings, one per problem
	}{
		{[]string{"gemini"}, nil},
		{[]string{"gemini", "-p", "{prompt_file}", "--output-format", "json", "--approval-mode", "auto_edit"}, nil},
		{[]string{"gemini", "--output-format", "text"}, []string{"--output-format text prints only the answer"}},
		{[]string{"gemini", "-o", "xml"}, []string{`--output-format "xml" is not json`}},
		{[]string{"gemini", "-i", "hello"}, []string{"-i (--prompt-interactive)"}},
		{[]string{"gemini", "--yolo", "--approval-mode", "default"}, []string{"refuses --yolo together with --approval-mode"}},
		{[]string{"gemini", "--approval-mode", "auto"}, []string{`--approval-mode "auto" is not default, auto_edit, yolo or plan`}},
		{[]string{"gemini", "--experimental-acp"}, []string{"starts a server for an editor"}},
	} {
		got := d.Check(tc.args)
		require.Len(t, got, len(tc.want), "%v: %v", tc.args, got)
		for i, w := range tc.want {
			assert.Contains(t, got[i], w)
		}
	}
}

func TestGeminiFinishFixtures(t *testing.T) {
	d := drivers["gemini"]
	for _, tc := range []struct {
		file    string
		answer  string // exact final answer, when there is one
		usage   *pipeline.Usage
		kind    FailureKind
		message string // substring of the failure
		denied  []string
	}{
		{file: "stream_snapshot.jsonl", answer: "Final answer",
			usage: &pipeline.Usage{Steps: 1}},
		{file: "stream_injection.jsonl", answer: `{"status": "CHANGES_REQUESTED", "summary": ["notes read"]}`,
			// 16400 prompt tokens of which 12000 cached; 16520 in all, so
			// 120 output tokens (50 candidates and 70 of thinking).
			usage: &pipeline.Usage{InputTokens: 4400, CacheReadTokens: 12000, OutputTokens: 120, Steps: 1}},
		{file: "stream_denied.jsonl", answer: "Both tools were refused.\n{\"status\": \"PASS\", \"summary\": [\"nothing to clean\"]}",
			usage:  &pipeline.Usage{InputTokens: 14200, OutputTokens: 65, Steps: 1},
			denied: []string{"run_shell_command(rm -rf build)", "write_file(notes.txt)"}},
		{file: "json_success.json", answer: `{"status": "CHANGES_REQUESTED", "summary": ["notes read"]}`,
			usage: &pipeline.Usage{InputTokens: 4400, CacheReadTokens: 12000, OutputTokens: 120, Steps: 1}},
		{file: "stream_max_turns.jsonl", kind: FailureMaxTurns, message: "Reached max session turns",
			usage: &pipeline.Usage{InputTokens: 4100, CacheReadTokens: 4000, OutputTokens: 80, Steps: 1}},
		{file: "stream_max_turns_event.jsonl", kind: FailureMaxTurns, message: "turn limit", usage: &pipeline.Usage{Steps: 1}},
		{file: "stream_rate_limit.jsonl", kind: FailureRateLimited, message: "[API Error: Rate limit exceeded]", usage: &pipeline.Usage{Steps: 1}},
		{file: "stream_overloaded.jsonl", kind: FailureOverloaded, message: "The model is overloaded", usage: &pipeline.Usage{Steps: 1}},
		{file: "stream_api_key.jsonl", kind: FailureAuth, message: "API key not valid", usage: &pipeline.Usage{Steps: 1}},
		{file: "json_auth_error.json", kind: FailureAuth, message: "The enforced authentication type"},
		{file: "stream_conflict.jsonl", kind: FailureConflict, message: "2 result events"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f := readThrough(d, cliFixture(t, "gemini", tc.file), nil)
			assert.Equal(t, tc.kind, failureKind(f), "failure: %v", f.Failure)
			if tc.kind == FailureNone {
				assert.True(t, f.HasAnswer)
				assert.Equal(t, tc.answer, f.Answer)
			} else {
				assert.Contains(t, f.Failure.Message, tc.message)
				assert.False(t, f.HasAnswer, "a failed run's text is not an answer")
			}
			if tc.usage != nil {
				require.NotNil(t, f.Usage, "notes: %v", f.Notes)
				assert.Equal(t, *tc.usage, *f.Usage)
				assert.Equal(t, UsageGemini, f.UsageSource)
				assert.Zero(t, f.Usage.Priced, "gemini reports no dollars")
			}
			assert.Equal(t, tc.denied, f.Denied)
		})
	}
}

// A status that a file or a tool's output holds is not the step's status:
// only the final answer is read.
func TestGeminiInjectedStatusChangesNothing(t *testing.T) {
	d := drivers["gemini"]
	for _, file := range []string{"stream_injection.jsonl"} {
		out := cliFixture(t, "gemini", file)
		require.Contains(t, string(out), `\"status\":\"APPROVED\"`, "the fixture carries the injection")
		f := readThrough(d, out, nil)
		p := ParseAnswer(pipeline.RoleTechLead, f)
		assert.Equal(t, SourceAnswer, p.Source, file)
		assert.Equal(t, pipeline.StatusChangesRequested, p.Result.Status, file)
		assert.Equal(t, []string{"notes read"}, p.Result.Summary, file)
		require.NotNil(t, p.Usage)
		assert.Equal(t, UsageGemini, p.UsageSource)
	}
	// A forged second result makes the run untrusted, not APPROVED.
	f := readThrough(d, cliFixture(t, "gemini", "stream_conflict.jsonl"), nil)
	assert.Equal(t, FailureConflict, failureKind(f))
	assert.Equal(t, SourceMalformed, ParseAnswer(pipeline.RoleTechLead, f).Source)
	// Without the real answer the injected status is still not taken.
	var cut []string
	for _, l := range strings.Split(string(cliFixture(t, "gemini", "stream_injection.jsonl")), "\n") {
		if !strings.Contains(l, `"CHANGES_REQUESTED`) {
			cut = append(cut, l)
		}
	}
	f = readThrough(d, []byte(strings.Join(cut, "\n")), nil)
	assert.False(t, f.HasAnswer)
	assert.Equal(t, SourceMalformed, ParseAnswer(pipeline.RoleTechLead, f).Source)
}

func TestGeminiParseAnswer(t *testing.T) {
	d := drivers["gemini"]
	f := readThrough(d, cliFixture(t, "gemini", "stream_denied.jsonl"), nil)
	p := ParseAnswer(pipeline.RoleQA, f)
	assert.Equal(t, SourceAnswer, p.Source)
	assert.Equal(t, pipeline.StatusPass, p.Result.Status)
	assert.Equal(t, []string{"nothing to clean"}, p.Result.Summary)
	assert.Equal(t, &pipeline.Usage{InputTokens: 14200, OutputTokens: 65, Steps: 1}, p.Usage)
}

func TestGeminiHugeAnswer(t *testing.T) {
	d := drivers["gemini"]
	answer := hugeAnswer("PASS")
	msg, err := json.Marshal(map[string]any{"type": "message", "timestamp": "2026-11-25T20:59:30.742Z", "role": "assistant", "content": answer, "delta": true})
	require.NoError(t, err)
	stream := []byte(`{"type":"init","timestamp":"2026-11-25T20:59:29.034Z","session_id":"s","model":"auto"}` + "\n" +
		string(msg) + "\n" +
		`{"type":"result","timestamp":"2026-11-25T20:59:30.759Z","status":"success","stats":{"total_tokens":10,"input_tokens":5,"output_tokens":5,"cached":0,"input":5,"duration_ms":1,"tool_calls":0,"models":{}}}` + "\n")
	require.Greater(t, len(stream), 3<<20)
	doc, err := json.MarshalIndent(map[string]any{"session_id": "s", "response": answer}, "", "  ")
	require.NoError(t, err)
	for name, out := range map[string][]byte{"stream-json": stream, "json": doc} {
		f := readThrough(d, out, nil)
		require.Nil(t, f.Failure, name)
		assert.Equal(t, len(answer), len(f.Answer), name)
		assert.Equal(t, answer, f.Answer, name)
		assert.Equal(t, pipeline.StatusPass, ParseAnswer(pipeline.RoleQA, f).Result.Status, name)
	}
}

func TestGeminiFailureKinds(t *testing.T) {
	for _, tc := range []struct {
		typ, msg string
		code     string
		want     FailureKind
	}{
		{"FatalAuthenticationError", "x", "", FailureAuth},
		{"FatalConfigError", "x", "", FailureUsage},
		{"FatalUntrustedWorkspaceError", "Gemini CLI is not running in a trusted directory.", "", FailureUsage},
		{"FatalTurnLimitedError", "x", "", FailureMaxTurns},
		{"Error", "x", "41", FailureAuth},
		{"unknown", "[API Error: Rate limit exceeded (Status: RESOURCE_EXHAUSTED)]", "", FailureRateLimited},
		{"unknown", `[API Error: {"error":{"code":500,"message":"Internal error encountered.","status":"INTERNAL"}}]`, "", FailureAPI},
		{"unknown", "[API Error: got status: 502 Bad Gateway]", "", FailureAPI},
		{"unknown", "[API Error: models/gemini-9 is not found for API version v1beta (Status: NOT_FOUND)]", "", FailureUsage},
		{"unknown", "[API Error: An unknown error occurred.]", "", FailureExecution},
	} {
		assert.Equal(t, tc.want, geminiFailureKind(tc.typ, tc.msg, json.RawMessage(tc.code)), "%s %s", tc.typ, tc.msg)
	}
}
