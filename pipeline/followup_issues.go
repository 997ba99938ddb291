package pipeline

// Follow-ups opened as issues (issue 26): with github.followup_label set,
// a GitHub front-end opens each of the session's follow-ups as an issue
// with that label, for a later session. The label is a person's choice:
// `bazinga` itself would start a session on every follow-up at once (the
// docs say so), and a status label (`bazinga:…`) would make the front-end
// read the issue as a session's, so those are refused (config).

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
