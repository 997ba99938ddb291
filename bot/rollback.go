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
//
// The group PRs' logs are read once per session per process: afterwards
// the newest revision this process has seen verified is the floor (a state
// below it was put back), which costs no request. A detected rollback
// forgets it, so the rebuilt session's next state is checked in full.
func (b *Bot) rolledBack(ctx context.Context, gh GitHub, ref sessionRef, st codec.State, issueComments []ghapi.Comment) (old bool, rev, seq int, err error) {
	defer func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch {
		case errors.Is(err, errSkipPRLog):
			err = nil
		case err != nil:
		case old:
			delete(b.seenRev, ref.key())
		default:
			if len(b.seenRev) >= maxSeenRevs {
				clear(b.seenRev) // a restart's worth: each session is read in full once more
			}
			b.seenRev[ref.key()] = max(b.seenRev[ref.key()], st.Session.Rev)
		}
	}()
	rev, seq = b.logFloor(issueComments, ref)
	if st.Session.Rev < rev || st.Session.StepSeq < seq {
		return true, rev, seq, nil
	}
	b.mu.Lock()
	seen, ok := b.seenRev[ref.key()]
	b.mu.Unlock()
	if ok {
		return st.Session.Rev < seen, max(rev, seen), seq, nil
	}
	if st.Waiting != nil && b.o.Now().Before(st.Waiting.Until) {
		// The session waits for a rate limit's reset: no request until
		// then (the group PRs are read at the first load after it).
		return false, rev, seq, errSkipPRLog
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

// errSkipPRLog ends rolledBack without reading the group PRs or
// remembering the revision; the caller sees no error.
var errSkipPRLog = errors.New("group PR logs not read")

// maxSeenRevs bounds the sessions whose newest revision is remembered.
const maxSeenRevs = 10000
