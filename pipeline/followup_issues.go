package pipeline

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Follow-ups opened as issues (issue 26): with github.followup_label set,
// a GitHub front-end opens each of the session's follow-ups as an issue
// with that label, for a later session. The label is a person's choice:
// `bazinga` itself would start a session on every follow-up at once (the
// docs say so), and a status label (`bazinga:…`) would make the front-end
// read the issue as a session's, so those are refused.

// MaxLabelChars is GitHub's limit on a label's name.
const MaxLabelChars = 50

// cfgCheckFollowUpLabel checks github.followup_label.
func cfgCheckFollowUpLabel(s string) string {
	switch {
	case s == "":
		return ""
	case strings.TrimSpace(s) != s:
		return "a label has no leading or trailing spaces"
	case utf8.RuneCountInString(s) > MaxLabelChars:
		return fmt.Sprintf("a label has at most %d characters", MaxLabelChars)
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == ',' }):
		return "a label has no control characters or commas"
	case strings.HasPrefix(strings.ToLower(s), "bazinga:"):
		return "bazinga:… labels are the session's status labels; choose another (e.g. bazinga-followup)"
	}
	return ""
}

// FollowUpsToOpen returns the indexes in next.FollowUps of the follow-ups
// recorded since prev: follow-ups are only ever appended, so an index
// names one follow-up for the session's life.
func FollowUpsToOpen(prev, next Session) []int {
	var out []int
	for i := len(prev.FollowUps); i < len(next.FollowUps); i++ {
		out = append(out, i)
	}
	return out
}
