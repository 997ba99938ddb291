package agent

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// invisible reports runes a reader cannot see but a model reads: format
// characters (Cf: zero-width, bidi overrides and isolates, word joiners,
// the byte order mark, tag characters) and control characters other than
// newline and tab.
func invisible(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return unicode.Is(unicode.Cf, r) || unicode.IsControl(r) || r == utf8.RuneError
}

// stripInvisible drops invisible runes and invalid UTF-8 and makes line
// endings \n.
func stripInvisible(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Map(func(r rune) rune {
		if invisible(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
}

// stripHTMLComments removes <!-- … --> (GitHub hides them, a model reads
// them); an unterminated one runs to the end of the text. It repeats until
// nothing changes, so removing one comment cannot assemble another.
func stripHTMLComments(s string) string {
	for {
		i := strings.Index(s, "<!--")
		if i < 0 {
			return s
		}
		var b strings.Builder
		for i >= 0 {
			b.WriteString(s[:i])
			rest := s[i+4:]
			j := strings.Index(rest, "-->")
			if j < 0 {
				s = ""
				break
			}
			s = rest[j+3:]
			i = strings.Index(s, "<!--")
		}
		b.WriteString(s)
		s = b.String()
	}
}

// sanitizeUntrusted cleans text written by users or agents before it goes
// into a prompt.
func sanitizeUntrusted(s string) string {
	return strings.TrimSpace(stripHTMLComments(stripInvisible(s)))
}

// oneLine cleans a short field (a name, an id) to a single line of at most
// max runes.
func oneLine(s string, max int) string {
	s = stripHTMLComments(stripInvisible(s))
	s = strings.Join(strings.Fields(s), " ")
	return capRunes(s, max)
}

// capRunes shortens s to at most max runes, marking the cut with "…".
func capRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	if max <= 1 {
		return "…"
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// truncateMiddle keeps the head and the tail of s within max bytes, with a
// visible marker where the middle was cut: the head of a task or a review
// says what it is about, the tail of test output says what failed.
func truncateMiddle(s string, max int) string {
	if len(s) <= max {
		return s
	}
	marker := fmt.Sprintf("\n[truncated %d bytes]\n", len(s)-max)
	keep := max - len(marker)
	if keep < 0 {
		keep = 0
	}
	head := keep * 3 / 5
	tail := keep - head
	return pipeline.ValidPrefix(s, head) + marker + pipeline.ValidSuffix(s, tail)
}

// truncateHead keeps the start of s within max bytes, with a marker.
func truncateHead(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const marker = "\n[truncated]"
	keep := max - len(marker)
	if keep < 0 {
		keep = 0
	}
	return pipeline.ValidPrefix(s, keep) + marker
}

// fence wraps data in a code fence longer than any backtick run inside it,
// so nothing in the data can close the fence early.
func fence(info, data string) string {
	longest, run := 0, 0
	for i := 0; i < len(data); i++ {
		if data[i] == '`' {
			run++
			if run > longest {
				longest = run
			}
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + info + "\n" + data + "\n" + f + "\n"
}
