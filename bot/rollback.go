package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// rolledBack reports whether st — a tracking comment's state that verifies —
// is older than what the session's log proves it reached: the bot's own
// comments (their effect markers name the revision they were posted at)
// and the trusted results (their step numbers), on the issue and on every
// group PR st records. An older signed state put back on the issue (an
// admin restoring an earlier body from the comment's history) is then
// rebuilt from the log, never believed and written back, even when all the
// newer progress was logged on the group PRs (issue 21). It returns the
// floor found, for the log line.
//
// The group PRs read are those st records, and for each planned group
// without one, the PR of its branch if there is one now (a PR opened after
// st, whose log st cannot know): only that search costs a request more than
// the logs themselves (conditional requests: an unchanged list is a free
// 304).
func (b *Bot) rolledBack(ctx context.Context, gh GitHub, ref sessionRef, st codec.State, issueComments []ghapi.Comment) (old bool, rev, seq int, err error) {
	rev, seq = b.logFloor(issueComments, ref)
	if st.Session.Rev < rev || st.Session.StepSeq < seq {
		return true, rev, seq, nil
	}
	var prs []int
	for _, p := range st.PRs {
		if p.Number > 0 && p.Number != ref.issue {
			prs = append(prs, p.Number)
		}
	}
	for _, g := range st.Session.Groups {
		if g.ID == pipeline.LeadGroup || g.Branch == "" || st.PRNumber(g.ID) != 0 {
			continue
		}
		pr, ok, err := gh.FindPR(ctx, ref.repo, g.Branch)
		if err != nil {
			return false, 0, 0, fmt.Errorf("finding the PR of group %s: %w", g.ID, err)
		}
		// A fork's PR may carry a group branch's name: not the session's.
		if ok && strings.EqualFold(pr.HeadRepo, ref.repo.String()) {
			prs = append(prs, pr.Number)
		}
	}
	sort.Ints(prs)
	prs = slices.Compact(prs)
	for _, n := range prs {
		cs, err := gh.ListComments(ctx, ref.repo, n)
		if errors.Is(err, ghapi.ErrNotFound) {
			continue // deleted: its log is gone with it
		}
		if err != nil {
			return false, 0, 0, fmt.Errorf("reading the log on group PR #%d: %w", n, err)
		}
		r, s := b.logFloor(cs, ref)
		rev, seq = max(rev, r), max(seq, s)
		if st.Session.Rev < rev || st.Session.StepSeq < seq {
			return true, rev, seq, nil
		}
	}
	return false, rev, seq, nil
}
