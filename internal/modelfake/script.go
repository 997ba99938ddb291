package modelfake

import "strings"

// injectedPrefixes start the text blocks the CLIs add to the user's turn themselves (context, reminders), which
// FirstUserText skips to find what the user wrote.
var injectedPrefixes = []string{
	"<system-reminder>",
	"<environment_context>",
	"<user_instructions>",
	"<permissions instructions>",
	"<skills_instructions>",
	"# AGENTS.md instructions",
	"<INSTRUCTIONS>",
}

func injected(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range injectedPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// FirstUserText is the first text block of a user message that the CLI did not inject itself: the prompt.
func (r Request) FirstUserText() string {
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, t := range m.Texts {
			if !injected(t) {
				return t
			}
		}
	}
	return ""
}

// UserTexts returns every text block of the user messages, in order, injected ones included.
func (r Request) UserTexts() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "user" {
			out = append(out, m.Texts...)
		}
	}
	return out
}

// ToolResults returns every tool result in the conversation, in order.
func (r Request) ToolResults() []ToolResult {
	var out []ToolResult
	for _, m := range r.Messages {
		out = append(out, m.ToolResults...)
	}
	return out
}

// NumToolResults is how many tool results the conversation holds.
func (r Request) NumToolResults() int { return len(r.ToolResults()) }

// LastToolResult is the most recent tool result; ok is false when there is none.
func (r Request) LastToolResult() (res ToolResult, ok bool) {
	all := r.ToolResults()
	if len(all) == 0 {
		return ToolResult{}, false
	}
	return all[len(all)-1], true
}

// Turns is how many assistant turns the conversation already holds: 0 for the first request of a conversation.
// A retried request has the same Turns as the one it retries.
func (r Request) Turns() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// HasTool reports whether the request offers a tool of that name.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// ByTurn is a script answering the n-th request of a conversation (by Turns) with replies[n]; past the end it
// repeats the last. Retries get the same answer as the request they retry.
func ByTurn(replies ...Reply) Script {
	return func(r Request) Reply {
		if len(replies) == 0 {
			return Reply{Text: "done"}
		}
		return replies[min(r.Turns(), len(replies)-1)]
	}
}

// FailFirst answers the first n requests (by Seq) with the error reply fail, then hands over to next.
func FailFirst(n int, fail Reply, next Script) Script {
	return func(r Request) Reply {
		if r.Seq <= n {
			return fail
		}
		return next(r)
	}
}
