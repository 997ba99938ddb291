package bot

import (
	"testing"

	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/assert"
)

func TestParseCommands(t *testing.T) {
	type pc = ParsedCommand
	tests := []struct {
		name string
		body string
		want []ParsedCommand
	}{
		{"empty", "", nil},
		{"plain text", "Looks good to me.", nil},
		{"resume", "/bazinga resume", []pc{{Name: CmdResume, Raw: "/bazinga resume"}}},
		{"status", "/bazinga status", []pc{{Name: CmdStatus, Raw: "/bazinga status"}}},
		{"stop with reason", "/bazinga stop wrong approach", []pc{{Name: CmdStop, Text: "wrong approach", Raw: "/bazinga stop wrong approach"}}},
		{"help", "/bazinga help", []pc{{Name: CmdHelp, Raw: "/bazinga help"}}},
		{"alone is help", "/bazinga", []pc{{Name: CmdHelp, Raw: "/bazinga"}}},
		{"alone with trailing space", "/bazinga   \n", []pc{{Name: CmdHelp, Raw: "/bazinga"}}},
		{"case-insensitive word", "/bazinga RESUME", []pc{{Name: CmdResume, Raw: "/bazinga RESUME"}}},
		{"case-insensitive prefix", "/Bazinga Stop", []pc{{Name: CmdStop, Raw: "/Bazinga Stop"}}},
		{"leading spaces", "   /bazinga resume", []pc{{Name: CmdResume, Raw: "/bazinga resume"}}},
		{"tab separator", "/bazinga\tstatus", []pc{{Name: CmdStatus, Raw: "/bazinga\tstatus"}}},
		{"crlf", "hi\r\n/bazinga resume\r\n", []pc{{Name: CmdResume, Raw: "/bazinga resume"}}},
		{"not anchored", "please /bazinga resume", nil},
		{"word glued", "/bazingaresume", nil},
		{"other bot", "/bazinga-bot resume", nil},
		{"inline code", "run `/bazinga resume` to continue", nil},
		{"retry all", "/bazinga retry", []pc{{Name: CmdRetry, Raw: "/bazinga retry"}}},
		{"retry group", "/bazinga retry auth_2", []pc{{Name: CmdRetry, Group: "auth_2", Raw: "/bazinga retry auth_2"}}},
		{"retry bad group", "/bazinga retry a/b", []pc{{Name: CmdUnknown, Text: "a/b", Raw: "/bazinga retry a/b"}}},
		{"retry two groups", "/bazinga retry A B", []pc{{Name: CmdUnknown, Text: "A B", Raw: "/bazinga retry A B"}}},
		{"unknown word", "/bazinga frobnicate now", []pc{{Name: CmdUnknown, Text: "now", Raw: "/bazinga frobnicate now"}}},
		{"answer one line", "/bazinga answer Use PostgreSQL.", []pc{{Name: CmdAnswer, Text: "Use PostgreSQL.", Raw: "/bazinga answer Use PostgreSQL."}}},
		{"answer multi-line", "/bazinga answer Use PostgreSQL.\nVersion 16 at least.\n\nThanks!",
			[]pc{{Name: CmdAnswer, Text: "Use PostgreSQL.\nVersion 16 at least.", Raw: "/bazinga answer Use PostgreSQL.\nVersion 16 at least."}}},
		{"answer on next line", "/bazinga answer\nBoth, please.", []pc{{Name: CmdAnswer, Text: "Both, please.", Raw: "/bazinga answer\nBoth, please."}}},
		{"answer empty", "/bazinga answer\n\nlater", []pc{{Name: CmdUnknown, Raw: "/bazinga answer"}}},
		{"answer stops at command", "/bazinga answer yes\nand no\n/bazinga resume",
			[]pc{{Name: CmdAnswer, Text: "yes\nand no", Raw: "/bazinga answer yes\nand no"}, {Name: CmdResume, Raw: "/bazinga resume"}}},
		{"answer stops at quote", "/bazinga answer yes\n> quoted", []pc{{Name: CmdAnswer, Text: "yes", Raw: "/bazinga answer yes"}}},
		{"answer stops at fence", "/bazinga answer yes\n```\ncode\n```", []pc{{Name: CmdAnswer, Text: "yes", Raw: "/bazinga answer yes"}}},
		{"fenced backticks ignored", "```\n/bazinga stop\n```\n/bazinga resume", []pc{{Name: CmdResume, Raw: "/bazinga resume"}}},
		{"fenced tildes ignored", "~~~sh\n/bazinga stop\n~~~", nil},
		{"longer fence needs longer close", "````\n```\n/bazinga stop\n````\n/bazinga status", []pc{{Name: CmdStatus, Raw: "/bazinga status"}}},
		{"unclosed fence ignores rest", "```\n/bazinga stop", nil},
		{"quoted ignored", "> /bazinga stop\n>/bazinga stop\n  > /bazinga stop", nil},
		// Issue 21: what readers cannot see, or see as code, never runs.
		{"indented code block", "Run this later:\n\n    /bazinga stop\n", nil},
		{"indented code block, tab", "\t/bazinga stop", nil},
		{"html comment block", "<!--\n/bazinga stop\n-->\n", nil},
		{"html comment on one line", "<!-- /bazinga stop -->", nil},
		{"inline html comment across lines", "Looks fine <!--\n/bazinga stop\n--> to me.", nil},
		{"html block", "<details>\n/bazinga stop\n</details>", nil},
		{"lazy continuation of a quote", "> quoted\n/bazinga stop", nil},
		{"code span at the line start", "`/bazinga stop` stops a session", nil},
		{"emphasis", "*/bazinga stop*", nil},
		{"link text", "[/bazinga stop](https://example.com)", nil},
		{"setext heading is a heading", "/bazinga stop\n---", nil},
		{"after text in the same paragraph", "Thanks!\n/bazinga approve", []pc{{Name: CmdApprove, Raw: "/bazinga approve"}}},
		{"in a list item", "- first\n  /bazinga status", []pc{{Name: CmdStatus, Raw: "/bazinga status"}}},
		{"visible after a comment", "<!-- note -->\n\n/bazinga status", []pc{{Name: CmdStatus, Raw: "/bazinga status"}}},
		{"several commands", "Thanks!\n/bazinga retry api\n\n/bazinga status\n/bazinga help",
			[]pc{{Name: CmdRetry, Group: "api", Raw: "/bazinga retry api"}, {Name: CmdStatus, Raw: "/bazinga status"}, {Name: CmdHelp, Raw: "/bazinga help"}}},
		// checkpoints (issue 13)
		{"approve", "/bazinga approve", []pc{{Name: CmdApprove, Raw: "/bazinga approve"}}},
		{"approve case", "/Bazinga APPROVE", []pc{{Name: CmdApprove, Raw: "/Bazinga APPROVE"}}},
		{"approve a checkpoint", "/bazinga approve plan-2", []pc{{Name: CmdApprove, Checkpoint: "plan-2", Raw: "/bazinga approve plan-2"}}},
		{"approve a phase, upper case", "/bazinga approve Phase-3", []pc{{Name: CmdApprove, Checkpoint: "phase-3", Raw: "/bazinga approve Phase-3"}}},
		{"approve with a remark", "/bazinga approve plan-1 looks good",
			[]pc{{Name: CmdApprove, Checkpoint: "plan-1", Text: "looks good", Raw: "/bazinga approve plan-1 looks good"}}},
		{"approve, remark only", "/bazinga approve LGTM", []pc{{Name: CmdApprove, Text: "LGTM", Raw: "/bazinga approve LGTM"}}},
		{"approve, not an id", "/bazinga approve plan-x", []pc{{Name: CmdApprove, Text: "plan-x", Raw: "/bazinga approve plan-x"}}},
		{"resume a checkpoint", "/bazinga resume plan-1", []pc{{Name: CmdResume, Checkpoint: "plan-1", Raw: "/bazinga resume plan-1"}}},
		{"approve quoted", "> /bazinga approve", nil},
		{"approve fenced", "```\n/bazinga approve\n```", nil},
		{"approve glued", "/bazinga approved", []pc{{Name: CmdUnknown, Raw: "/bazinga approved"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ParseCommands(tc.body))
		})
	}
}

func TestPipelineCommand(t *testing.T) {
	tests := []struct {
		in   ParsedCommand
		want pipeline.Command
		ok   bool
	}{
		{ParsedCommand{Name: CmdResume}, pipeline.Command{Kind: pipeline.CommandResume}, true},
		{ParsedCommand{Name: CmdStop, Text: "why"}, pipeline.Command{Kind: pipeline.CommandStop}, true},
		{ParsedCommand{Name: CmdRetry}, pipeline.Command{Kind: pipeline.CommandRetry}, true},
		{ParsedCommand{Name: CmdRetry, Group: "api"}, pipeline.Command{Kind: pipeline.CommandRetry, Group: "api"}, true},
		{ParsedCommand{Name: CmdAnswer, Text: "a\nb"}, pipeline.Command{Kind: pipeline.CommandAnswer, Text: "a\nb"}, true},
		{ParsedCommand{Name: CmdApprove}, pipeline.Command{Kind: pipeline.CommandApprove}, true},
		{ParsedCommand{Name: CmdApprove, Checkpoint: "plan-2", Text: "ok"}, pipeline.Command{Kind: pipeline.CommandApprove, Checkpoint: "plan-2"}, true},
		{ParsedCommand{Name: CmdResume, Checkpoint: "plan-1"}, pipeline.Command{Kind: pipeline.CommandResume, Checkpoint: "plan-1"}, true},
		{ParsedCommand{Name: CmdStatus}, pipeline.Command{}, false},
		{ParsedCommand{Name: CmdHelp}, pipeline.Command{}, false},
		{ParsedCommand{Name: CmdUnknown}, pipeline.Command{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.in.Name.String()+tc.in.Checkpoint, func(t *testing.T) {
			got, ok := tc.in.PipelineCommand()
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCommandNameString(t *testing.T) {
	want := []string{"unknown", "resume", "status", "stop", "retry", "answer", "help", "approve"}
	for i, w := range want {
		assert.Equal(t, w, CommandName(i).String())
	}
	assert.Equal(t, "unknown", CommandName(99).String())
}

func TestHelpTextListsEveryCommand(t *testing.T) {
	h := HelpText()
	for _, c := range []string{"resume", "status", "stop", "retry [group]", "answer <text>", "help", "approve [checkpoint]"} {
		assert.Contains(t, h, "/bazinga "+c)
	}
	// The help text's own examples are in code spans, so echoing it never
	// parses as commands.
	assert.Empty(t, ParseCommands(h))
}
