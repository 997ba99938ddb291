package codec

import (
	"regexp"
	"strings"
)

// Everything an agent writes (summaries, handoffs, group names and tasks,
// questions, answers, notes) is untrusted data wherever bazinga posts it:
// raw HTML could hide the rest of a comment (`<!--`) or fake a verdict
// (`<h1>✅ BAZINGA verified</h1>`), a mention (`@org/team`) would notify
// people, and an image would make every reader's browser fetch an address
// the agent chose. Text and OneLine make such text inert.

// EscapeHTML escapes the characters that start HTML.
func EscapeHTML(s string) string {
	return htmlEscaper.Replace(s)
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// mentionRE finds what GitHub turns into a mention: @user, @org/team.
var mentionRE = regexp.MustCompile(`@([A-Za-z0-9])`)

// Text makes untrusted text inert for a Markdown comment, keeping its lines:
// HTML escaped, mentions broken (a word joiner after the @: GitHub links
// only @ directly followed by the name), image syntax disarmed.
func Text(s string) string {
	s = EscapeHTML(s)
	s = mentionRE.ReplaceAllString(s, "@\u2060$1")
	s = strings.ReplaceAll(s, "![", `!\[`)
	return s
}

// maxLineRunes bounds one line of untrusted text.
const maxLineRunes = 300

// OneLine makes untrusted text inert (Text) and keeps it on one line of at
// most 300 characters.
func OneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxLineRunes {
		s = string(r[:maxLineRunes-1]) + "…"
	}
	return Text(s)
}
