package bot

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// missedApprovals reads the reviews of the group PRs that wait for human
// approvals and returns the approvals the session has not counted (issue
// 22). In Action-only mode a review's reconcile can be cancelled while it
// is pending (a concurrency group keeps one pending run, a newer one
// replaces it), so its event never arrives; every catch-up reads what
// GitHub shows instead. Only a reviewer's latest verdict counts (GitHub's
// rule: a later "changes requested" or dismissal replaces an approval), only
// on the group's head, and only from a person with write access, as live.
// An approval counted twice is harmless (the engine keeps a set).
func (b *Bot) missedApprovals(ctx context.Context, gh GitHub, ref sessionRef, st codec.State, log *slog.Logger) []pipeline.Event {
	need := st.Config.Merge.RequiredApprovals
	if need == 0 {
		return nil
	}
	var out []pipeline.Event
	for _, g := range st.Session.Groups {
		if g.Stage.Finished() || g.Next == nil || g.Next.Role != pipeline.RoleMerge || len(g.Approvals) >= need || g.Head == "" {
			continue
		}
		number := st.PRNumber(g.ID)
		if number == 0 {
			continue
		}
		reviews, err := gh.ListReviews(ctx, ref.repo, number)
		if err != nil {
			log.Warn("reading the reviews of a group PR", "group", g.ID, "pr", number, "err", err)
			continue
		}
		sort.SliceStable(reviews, func(i, j int) bool { return reviews[i].SubmittedAt.Before(reviews[j].SubmittedAt) })
		latest := map[string]string{} // reviewer → commit approved ("" when not approving)
		var order []string
		for _, rv := range reviews {
			if rv.AuthorType == "Bot" || strings.HasSuffix(rv.Author, "[bot]") {
				continue
			}
			switch strings.ToUpper(rv.State) {
			case "APPROVED":
				if _, seen := latest[rv.Author]; !seen {
					order = append(order, rv.Author)
				}
				latest[rv.Author] = rv.CommitID
			case "CHANGES_REQUESTED", "DISMISSED":
				latest[rv.Author] = ""
			}
		}
		for _, who := range order {
			commit := latest[who]
			if commit == "" || commit != g.Head || slices.Contains(g.Approvals, who) {
				continue
			}
			ok, err := b.authorised(ctx, gh, ref.repo, hookUser{Login: who})
			if err != nil {
				log.Warn("reading a reviewer's permission", "group", g.ID, "reviewer", who, "err", err)
				continue
			}
			if !ok {
				continue
			}
			log.Info("approval caught up", "group", g.ID, "reviewer", who, "head", commit)
			out = append(out, pipeline.Event{Kind: pipeline.EventHumanReview, Session: strconv.Itoa(ref.issue), Group: g.ID,
				Actor: who, Review: pipeline.ReviewApproved, Commit: commit})
		}
	}
	return out
}
