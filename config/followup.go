package config

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// github.followup_label (issue 26): the label follow-ups are opened with as
// issues for a later session, "" for none (pipeline/followup_issues.go). A
// person may choose `bazinga` itself (each follow-up then starts a
// session; the docs say so); the `bazinga:…` status labels would make the
// front-end read the issue as a session's, so they are refused.

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
