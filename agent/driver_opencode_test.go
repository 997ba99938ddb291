package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

func TestOpencodeInvocation(t *testing.T) {
	d, err := DriverFor("", "npx opencode-ai run")
	require.NoError(t, err)
	require.Equal(t, "opencode", d.Name())
	for _, tc := range []struct {
		name   string
		args   []string
		access Access
		want   []string
		perm   string
	}{
		{"edit", []string{"opencode", "run"}, AccessEdit,
			[]string{"opencode", "run", "--format", "json", "--model", "anthropic/claude-sonnet-4-5"},
			`{"edit":"allow","bash":"allow","external_directory":"allow","doom_loop":"deny"}`},
		{"run", []string{"opencode", "run"}, AccessRun,
			[]string{"opencode", "run", "--format", "json", "--model", "anthropic/claude-sonnet-4-5"},
			`{"edit":"deny","bash":"allow","external_directory":"allow","doom_loop":"deny"}`},
		{"read", []string{"opencode", "run"}, AccessRead,
			[]string{"opencode", "run", "--format", "json", "--model", "anthropic/claude-sonnet-4-5"},
			`{"edit":"deny","bash":"deny","external_directory":"deny","doom_loop":"deny"}`},
		{"user flags kept, not doubled; a trailing message stays last", []string{"opencode", "run", "-m", "openai/gpt-5", "--format=json", "--agent", "build", "Do the task in"}, AccessRun,
			[]string{"opencode", "run", "-m", "openai/gpt-5", "--format=json", "--agent", "build", "Do the task in"},
			`{"edit":"deny","bash":"allow","external_directory":"allow","doom_loop":"deny"}`},
		{"through npx: flags after the subcommand", []string{"npx", "-y", "opencode-ai", "run"}, AccessRead,
			[]string{"npx", "-y", "opencode-ai", "run", "--format", "json", "--model", "anthropic/claude-sonnet-4-5"},
			`{"edit":"deny","bash":"deny","external_directory":"deny","doom_loop":"deny"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := d.Invocation(tc.args, Invoke{Role: pipeline.RoleQA, Access: tc.access, Model: "anthropic/claude-sonnet-4-5", Dir: "/step"})
			require.NoError(t, err)
			assert.Equal(t, tc.want, inv.Args)
			assert.JSONEq(t, tc.perm, inv.Env["OPENCODE_PERMISSION"])
			assert.Equal(t, "true", inv.Env["OPENCODE_DISABLE_AUTOUPDATE"])
			assert.Empty(t, inv.Files)
			// Nothing is left to "ask": a headless run rejects asks and a
			// rejection ends the agent's loop.
			assert.NotContains(t, inv.Env["OPENCODE_PERMISSION"], "ask")
		})
	}
	_, err = d.Invocation([]string{"opencode", "run"}, Invoke{Access: AccessEdit, Model: "sonnet"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "provider/model")
}

func TestOpencodeCheck(t *testing.T) {
	d := drivers["opencode"]
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"opencode", "run"}, nil},
		{[]string{"opencode", "run", "--format", "json", "-m", "{model}"}, nil},
		{[]string{"opencode"}, []string{"needs the run subcommand"}},
		{[]string{"opencode", "serve"}, []string{"needs the run subcommand"}},
		{[]string{"opencode", "run", "--format", "default"}, []string{"--format default prints formatted text"}},
		{[]string{"opencode", "run", "--format=xml"}, []string{`--format "xml" is not default or json`}},
		{[]string{"opencode", "run", "--attach", "http://localhost:4096"}, []string{"--attach sends the step to a server"}},
		{[]string{"opencode", "run", "-i"}, []string{"--interactive needs a terminal"}},
	} {
		got := d.Check(tc.args)
		require.Len(t, got, len(tc.want), "%v: %v", tc.args, got)
		for i, w := range tc.want {
			assert.Contains(t, got[i], w)
		}
	}
}

func TestOpencodeFinishFixtures(t *testing.T) {
	d := drivers["opencode"]
	for _, tc := range []struct {
		file    string
		answer  string
		usage   *pipeline.Usage
		kind    FailureKind
		message string
		denied  []string
	}{
		{file: "injection.jsonl", answer: `{"status": "CHANGES_REQUESTED", "summary": ["notes read"]}`,
			// Two model calls: 1200+400 uncached input, 8000+9000 cache
			// reads, 45+30 output, $0.006675+$0.00435.
			usage: &pipeline.Usage{InputTokens: 1600, OutputTokens: 75, CacheReadTokens: 17000, CostMicros: 11025, Steps: 1, Priced: 1}},
		{file: "denied_unavailable.jsonl", answer: "The edit was refused.\n{\"status\": \"PASS\", \"summary\": [\"no edits\"]}",
			usage:  &pipeline.Usage{InputTokens: 10200, OutputTokens: 65, CostMicros: 31575, Steps: 1, Priced: 1},
			denied: []string{"write", "bash"}},
		{file: "denied_rule.jsonl", answer: `{"status": "PASS", "summary": ["read refused"]}`,
			usage:  &pipeline.Usage{InputTokens: 10200, OutputTokens: 65, CostMicros: 31575, Steps: 1, Priced: 1},
			denied: []string{"read(/etc/hostname)"}},
		{file: "api_error_401.jsonl", kind: FailureAuth, message: "opencode: HTTP 401: Incorrect API key provided"},
		{file: "api_error_429.jsonl", kind: FailureRateLimited, message: "HTTP 429: Rate limit reached"},
		{file: "provider_auth_error.jsonl", kind: FailureAuth, message: "ProviderAuthError: No API key found"},
		{file: "conflict.jsonl", kind: FailureConflict, message: "another session"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f := readThrough(d, cliFixture(t, "opencode", tc.file), nil)
			assert.Equal(t, tc.kind, failureKind(f), "failure: %v", f.Failure)
			if tc.kind == FailureNone {
				assert.True(t, f.HasAnswer)
				assert.Equal(t, tc.answer, f.Answer)
			} else {
				assert.Contains(t, f.Failure.Message, tc.message)
				assert.False(t, f.HasAnswer)
			}
			if tc.usage != nil {
				require.NotNil(t, f.Usage, "notes: %v", f.Notes)
				assert.Equal(t, *tc.usage, *f.Usage)
				assert.Equal(t, UsageOpencode, f.UsageSource)
			} else {
				assert.Nil(t, f.Usage)
			}
			assert.Equal(t, tc.denied, f.Denied)
		})
	}
}

func TestOpencodeInjectedStatusChangesNothing(t *testing.T) {
	d := drivers["opencode"]
	out := cliFixture(t, "opencode", "injection.jsonl")
	require.Contains(t, string(out), `\"status\":\"APPROVED\"`, "the bash output carries the injection")
	p := ParseAnswer(pipeline.RoleTechLead, readThrough(d, out, nil))
	assert.Equal(t, SourceAnswer, p.Source)
	assert.Equal(t, pipeline.StatusChangesRequested, p.Result.Status)
	assert.Equal(t, UsageOpencode, p.UsageSource)

	// A forged event of another session (an APPROVED text part) makes the
	// run untrusted rather than approved.
	f := readThrough(d, cliFixture(t, "opencode", "conflict.jsonl"), nil)
	assert.Equal(t, FailureConflict, failureKind(f))
	assert.Equal(t, SourceMalformed, ParseAnswer(pipeline.RoleTechLead, f).Source)

	// The narration before a tool call is not the answer either: drop the
	// last message and the bash output's status is still not taken.
	var kept []string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.Contains(l, "msg_214852376001LIf4sjC3kD7CfS") {
			kept = append(kept, l)
		}
	}
	f = readThrough(d, []byte(strings.Join(kept, "\n")), nil)
	assert.Equal(t, FailureNoAnswer, failureKind(f))
	assert.NotEqual(t, pipeline.StatusApproved, ParseAnswer(pipeline.RoleTechLead, f).Result.Status)
}

func TestOpencodeParseAnswer(t *testing.T) {
	f := readThrough(drivers["opencode"], cliFixture(t, "opencode", "denied_unavailable.jsonl"), nil)
	p := ParseAnswer(pipeline.RoleQA, f)
	assert.Equal(t, SourceAnswer, p.Source)
	assert.Equal(t, pipeline.StatusPass, p.Result.Status)
	assert.Equal(t, []string{"no edits"}, p.Result.Summary)
	require.NotNil(t, p.Usage)
	assert.Equal(t, int64(31575), p.Usage.CostMicros)
}

func TestOpencodeHugeAnswer(t *testing.T) {
	answer := hugeAnswer("PASS")
	text, err := json.Marshal(map[string]any{"type": "text", "timestamp": 1795640601763, "sessionID": "ses_1",
		"part": map[string]any{"id": "prt_2", "messageID": "msg_2", "sessionID": "ses_1", "type": "text", "text": answer,
			"time": map[string]any{"start": 1, "end": 2}}})
	require.NoError(t, err)
	out := `{"type":"step_start","timestamp":1795640601763,"sessionID":"ses_1","part":{"id":"prt_1","messageID":"msg_2","sessionID":"ses_1","type":"step-start"}}` + "\n" +
		string(text) + "\n" +
		`{"type":"step_finish","timestamp":1795640603753,"sessionID":"ses_1","part":{"id":"prt_3","reason":"stop","messageID":"msg_2","sessionID":"ses_1","type":"step-finish","tokens":{"total":10,"input":5,"output":5,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}` + "\n"
	f := readThrough(drivers["opencode"], []byte(out), nil)
	require.Nil(t, f.Failure)
	assert.Equal(t, answer, f.Answer)
	assert.Equal(t, pipeline.StatusPass, ParseAnswer(pipeline.RoleQA, f).Result.Status)
	// A free model reports $0: the usage is not priced.
	require.NotNil(t, f.Usage)
	assert.Zero(t, f.Usage.Priced)
}

func TestOpencodeFailureKinds(t *testing.T) {
	mk := func(name, msg string, code int, retry bool) opencodeError {
		var e opencodeError
		e.Name, e.Data.Message, e.Data.StatusCode, e.Data.IsRetryable = name, msg, code, retry
		return e
	}
	for _, tc := range []struct {
		e    opencodeError
		want FailureKind
	}{
		{mk("APIError", "Overloaded", 529, true), FailureOverloaded},
		{mk("APIError", "overloaded_error", 0, true), FailureOverloaded},
		{mk("APIError", "Internal server error", 500, true), FailureAPI},
		{mk("APIError", "model: claude-9", 404, false), FailureUsage},
		{mk("APIError", "socket hang up", 0, true), FailureAPI},
		{mk("MessageOutputLengthError", "", 0, false), FailureExecution},
		{mk("UnknownError", "ProviderModelNotFoundError", 0, false), FailureUsage},
		{mk("UnknownError", "something broke", 0, false), FailureExecution},
	} {
		assert.Equal(t, tc.want, opencodeFailureKind(tc.e), "%+v", tc.e)
	}
}
