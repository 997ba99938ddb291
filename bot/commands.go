package bot

import (
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// CommandName is a slash command word.
type CommandName int

// Command names in their fixed order.
const (
	CmdUnknown CommandName = iota
	CmdResume
	CmdStatus
	CmdStop
	CmdRetry
	CmdAnswer
	CmdHelp
	CmdApprove // issue 13: approve the checkpoint waiting (the plan, a phase)
)

var commandNames = []string{"unknown", "resume", "status", "stop", "retry", "answer", "help", "approve"}

func (c CommandName) String() string {
	if c < 0 || int(c) >= len(commandNames) {
		return "unknown"
	}
	return commandNames[c]
}

// ParsedCommand is one `/bazinga …` command found in a comment, parsed into a
// plain value before any API call is made.
type ParsedCommand struct {
	Name CommandName
	// Group is the optional group of retry.
	Group string
	// Text is the answer of answer (several lines joined by "\n"); for the
	// other commands, whatever followed the command word.
	Text string
	// Raw is the command as written (the command line, plus an answer's
	// continuation lines).
	Raw string
	// Checkpoint is the checkpoint an approve or resume names ("plan-2"),
	// if written; otherwise the bot binds it to the checkpoint that waited
	// when the comment was written.
	Checkpoint string
}

// checkpointIDPattern is the syntax of checkpoint ids (pipeline.Checkpoint.ID).
var checkpointIDPattern = regexp.MustCompile(`^(plan|phase)-[0-9]{1,6}$`)

// commandPrefix is the word every command starts with.
const commandPrefix = "/bazinga"

// groupIDPattern is the engine's group id syntax (ARCHITECTURE.md §3).
var groupIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ParseCommands returns the commands of a comment body, in order. The body
// is parsed as GitHub renders it (CommonMark, with goldmark): a command is a
// line of a paragraph — at the top level, in a list item — that starts with
// "/bazinga" as plain text. Fenced and indented code blocks, HTML blocks and
// comments (`<!-- … -->`, also inline), block quotes and code spans are
// inert: what a reader cannot see, or sees as code or as a quotation of
// someone else, never runs (quoting a command in a reply does not run it
// again). An answer's text continues on the following lines of its
// paragraph, up to a blank line.
//
// This is the one definition of a command: the App and the Action-only
// orchestrator both call it; the Action-only route job only pre-filters
// comments that contain "/bazinga" at all.
func ParseCommands(body string) []ParsedCommand {
	src := []byte(strings.ReplaceAll(body, "\r\n", "\n"))
	doc := commandMarkdown.Parser().Parse(text.NewReader(src))
	var out []ParsedCommand
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.Kind() {
		case ast.KindBlockquote, ast.KindFencedCodeBlock, ast.KindCodeBlock, ast.KindHTMLBlock:
			return ast.WalkSkipChildren, nil
		case ast.KindParagraph, ast.KindTextBlock:
			out = append(out, paragraphCommands(n, src)...)
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	// An answer with no text at all is a malformed command: the core
	// replies with the help text.
	for i := range out {
		if out[i].Name == CmdAnswer && strings.TrimSpace(out[i].Text) == "" {
			out[i].Name = CmdUnknown
		}
	}
	return out
}

// commandMarkdown parses comments as CommonMark; GitHub's extensions
// (tables, strikethrough, autolinks) change no line into or out of a
// paragraph that starts with "/bazinga".
var commandMarkdown = goldmark.New()

// paragraphCommands returns the commands among a paragraph's lines.
func paragraphCommands(p ast.Node, src []byte) []ParsedCommand {
	// Where the paragraph's plain text starts: a line is a command only if
	// its first character is plain text (not a code span, raw HTML or a
	// link), as the reader sees it.
	plain := map[int]bool{}
	for c := p.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			plain[t.Segment.Start] = true
		}
	}
	var out []ParsedCommand
	answering := -1
	lines := p.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		raw := strings.TrimRight(string(seg.Value(src)), " \t\n")
		trimmed := strings.TrimLeft(raw, " \t")
		start := seg.Start + len(raw) - len(trimmed)
		if plain[start] {
			if c, ok := parseCommandLine(trimmed); ok {
				out = append(out, c)
				answering = -1
				if c.Name == CmdAnswer {
					answering = len(out) - 1
				}
				continue
			}
		}
		if answering >= 0 && trimmed != "" {
			a := &out[answering]
			if a.Text == "" {
				a.Text = trimmed
			} else {
				a.Text += "\n" + trimmed
			}
			a.Raw += "\n" + raw
		}
	}
	return out
}

// parseCommandLine parses one left-trimmed line that may be a command.
func parseCommandLine(trimmed string) (ParsedCommand, bool) {
	if len(trimmed) < len(commandPrefix) || !strings.EqualFold(trimmed[:len(commandPrefix)], commandPrefix) {
		return ParsedCommand{}, false
	}
	rest := trimmed[len(commandPrefix):]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return ParsedCommand{}, false // "/bazingas", "/bazinga-bot": not ours
	}
	c := ParsedCommand{Raw: trimmed}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		c.Name = CmdHelp
		return c, true
	}
	word, args := rest, ""
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		word, args = rest[:i], strings.TrimSpace(rest[i+1:])
	}
	c.Text = args
	switch strings.ToLower(word) {
	case "resume", "approve":
		c.Name = CmdResume
		if strings.EqualFold(word, "approve") {
			c.Name = CmdApprove
		}
		// An optional checkpoint id first; the rest is a remark.
		if f := strings.Fields(args); len(f) > 0 && checkpointIDPattern.MatchString(strings.ToLower(f[0])) {
			c.Checkpoint = strings.ToLower(f[0])
			c.Text = strings.TrimSpace(strings.TrimPrefix(args, f[0]))
		}
	case "status":
		c.Name = CmdStatus
	case "stop":
		c.Name = CmdStop
	case "help":
		c.Name = CmdHelp
	case "answer":
		c.Name = CmdAnswer
	case "retry":
		c.Name = CmdRetry
		if f := strings.Fields(args); len(f) > 0 {
			if len(f) > 1 || !groupIDPattern.MatchString(f[0]) {
				c.Name = CmdUnknown
				return c, true
			}
			c.Group = f[0]
			c.Text = ""
		}
	default:
		c.Name = CmdUnknown
	}
	return c, true
}

// PipelineCommand maps a command the engine acts on to its pipeline value;
// status, help and unknown are answered by the bot itself and return false.
func (c ParsedCommand) PipelineCommand() (pipeline.Command, bool) {
	switch c.Name {
	case CmdResume:
		return pipeline.Command{Kind: pipeline.CommandResume, Checkpoint: c.Checkpoint}, true
	case CmdStop:
		return pipeline.Command{Kind: pipeline.CommandStop}, true
	case CmdRetry:
		return pipeline.Command{Kind: pipeline.CommandRetry, Group: c.Group}, true
	case CmdAnswer:
		return pipeline.Command{Kind: pipeline.CommandAnswer, Text: c.Text}, true
	case CmdApprove:
		return pipeline.Command{Kind: pipeline.CommandApprove, Checkpoint: c.Checkpoint}, true
	}
	return pipeline.Command{}, false
}

// HelpText is the reply to `/bazinga help` and to an unknown command.
func HelpText() string {
	return strings.TrimLeft(`
**bazinga commands** — write one at the start of a line in a comment on the issue or a group PR:

| Command | What it does |
|---|---|
| `+"`/bazinga resume`"+` | pick up a paused or stalled session (at a checkpoint it also approves, like approve) |
| `+"`/bazinga status`"+` | refresh the tracking comment |
| `+"`/bazinga stop`"+` | stop the session (branches and PRs are kept) |
| `+"`/bazinga retry [group]`"+` | retry the failed step of a group, or every failed step |
| `+"`/bazinga answer <text>`"+` | answer the PM's clarification question (the text may continue on the next lines, up to a blank line); at the plan checkpoint, send the plan back to the PM with this feedback |
| `+"`/bazinga approve [checkpoint]`"+` | approve the plan (or the next phase) waiting at a checkpoint; it approves what was shown when you wrote it, or the checkpoint you name (`+"`plan-2`"+`) |
| `+"`/bazinga help`"+` | show this help |

Only people with write, maintain or admin permission on the repository can run commands.
Commands inside code (blocks or spans), quotes and HTML comments are ignored.
`, "\n")
}
