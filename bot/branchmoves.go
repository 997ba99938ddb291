package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Group branches people delete (issue 28). GitHub closes a pull request
// whose head branch is deleted; the closure alone looks like someone giving
// the group up, so the bot reads the branch: when it is gone, the engine
// hears of a deletion, and the group waits, named, for a human to restore
// it. A retry of that group is the restore: the bot recreates the branch
// at the head it had and reopens the PR, then the engine carries on.

// branchesGone turns the closure of a group PR whose branch is gone into
// the deletion of that branch.
func branchesGone(ctx context.Context, gh GitHub, ref sessionRef, s pipeline.Session, events []pipeline.Event, log *slog.Logger) []pipeline.Event {
	out := events[:0:0]
	for _, ev := range events {
		if g := s.Group(ev.Group); ev.Kind == pipeline.EventPRClosed && !ev.Merged && g != nil && !g.Stage.Finished() && g.Branch != "" {
			_, err := gh.GetRef(ctx, ref.repo, "heads/"+g.Branch)
			switch {
			case errors.Is(err, ghapi.ErrNotFound):
				log.Info("group branch deleted", "group", g.ID, "branch", g.Branch, "by", ev.Actor)
				ev = pipeline.BranchDeleted(s.ID, g.ID, ev.Commit, ev.Actor)
			case err != nil:
				log.Warn("reading a closed group PR's branch", "group", g.ID, "branch", g.Branch, "err", err)
			}
		}
		out = append(out, ev)
	}
	return out
}

// restoreBranches carries out the retries of groups whose branch was
// deleted: the branch again at the head it had, the PR reopened. A retry
// whose restore failed is not passed on; the reply says why, and the group
// keeps waiting. Both calls are safe to repeat.
func restoreBranches(ctx context.Context, gh GitHub, ref sessionRef, st *codec.State, events []pipeline.Event) ([]pipeline.Event, []string) {
	out := events[:0:0]
	var lines []string
	for _, ev := range events {
		c := ev.Command
		g := (*pipeline.Group)(nil)
		if ev.Kind == pipeline.EventCommand && c != nil && c.Kind == pipeline.CommandRetry && c.Group != "" {
			g = st.Session.Group(c.Group)
		}
		if g == nil || g.Deleted == nil {
			out = append(out, ev)
			continue
		}
		if err := restoreBranch(ctx, gh, ref, st, g); err != nil {
			lines = append(lines, fmt.Sprintf("⚠️ Group %s's branch could not be restored: %s. The group keeps waiting; restore branch `%s` at %s and reopen its PR, or try again.",
				g.ID, codec.OneLine(err.Error()), g.Branch, g.Deleted.Head))
			continue
		}
		out = append(out, ev)
	}
	return out, lines
}

func restoreBranch(ctx context.Context, gh GitHub, ref sessionRef, st *codec.State, g *pipeline.Group) error {
	err := gh.CreateRef(ctx, ref.repo, "refs/heads/"+g.Branch, g.Deleted.Head)
	if err != nil && !errors.Is(err, ghapi.ErrExists) {
		return err
	}
	n := st.PRNumber(g.ID)
	if n == 0 {
		return nil // no PR yet: the group's views open one
	}
	pr, err := gh.GetPR(ctx, ref.repo, n)
	if err != nil {
		return err
	}
	if pr.State == "open" {
		return nil
	}
	return gh.ReopenPR(ctx, ref.repo, n)
}

// editedPrefix starts the acknowledgement of an issue edit.
const editedPrefix = "✏️ The issue was edited"

// editedEvery is how often an issue's edits are acknowledged: an author
// who fixes a typo five times gets one reply, and anyone who may edit an
// issue (its author, without write access) cannot make the bot write at will.
const editedEvery = time.Hour

// editedReply is the acknowledgement of an issue edit, or "" when the
// session ended or one was given within the hour.
func (b *Bot) editedReply(ld loaded, by string) string {
	if !ld.found || ld.st.Session.Status.Terminal() {
		return ""
	}
	since := b.o.Now().Add(-editedEvery)
	for _, c := range ld.comments {
		if b.own(c.Author) && strings.HasPrefix(c.Body, editedPrefix) && c.CreatedAt.After(since) {
			return ""
		}
	}
	return fmt.Sprintf("%s by %s. This session keeps working on the requirements as they were when it started (its first comment records them). "+
		"To steer it, comment here: what people with write access say reaches the agents. To work on the new text instead, `/bazinga stop` and open a new issue.",
		editedPrefix, codec.OneLine("@"+by))
}

// movedRepo updates a state read under the repository's id to its current
// name (a rename or a transfer: GitHub keeps the id), once, and says so; it
// records the id in a state written before ids were kept.
func movedRepo(st *codec.State, repo ghapi.RepoRef) string {
	if st.Repo == "" {
		return ""
	}
	if st.RepoID == 0 {
		st.RepoID = repo.ID
	}
	if strings.EqualFold(st.Repo, repo.String()) {
		return ""
	}
	from := st.Repo
	if base, ok := strings.CutSuffix(st.RepoURL, "/"+from); ok {
		st.RepoURL = base + "/" + repo.String()
	}
	st.Repo = repo.String()
	return fmt.Sprintf("ℹ️ The repository moved from `%s` to `%s`; the session goes on there.", codec.OneLine(from), codec.OneLine(repo.String()))
}

// baseRenames keeps a group PR's new base as the session's only when the
// session's base is gone: GitHub retargets the open PRs of a renamed
// branch. A person who moves one PR to another base renamed nothing; the
// session keeps its base.
func baseRenames(ctx context.Context, gh GitHub, ref sessionRef, s pipeline.Session, events []pipeline.Event, log *slog.Logger) []pipeline.Event {
	out := events[:0:0]
	for _, ev := range events {
		if ev.Kind == pipeline.EventBaseRenamed {
			if ev.Body != s.Base {
				continue
			}
			_, err := gh.GetRef(ctx, ref.repo, "heads/"+ev.Body)
			if !errors.Is(err, ghapi.ErrNotFound) {
				log.Info("a group PR's base changed but the session's base is still there; it stays", "base", ev.Body, "pr_base", ev.Base, "err", err)
				continue
			}
			log.Info("the base branch was renamed", "from", ev.Body, "to", ev.Base)
		}
		out = append(out, ev)
	}
	return out
}

// baseGone finds a base renamed while no group PR was open to carry the
// news: GitHub retargets open PRs to the new name (pull_request.edited,
// which baseRenames reads), but with none open no event says it. A
// reconcile of an active session with no open group PR checks that its
// base is there; when it is gone and GitHub redirects its former name,
// the rename is applied like one a PR reported. One GET a reconcile, only
// until the first group PR opens.
func baseGone(ctx context.Context, gh GitHub, ref sessionRef, st codec.State, events []pipeline.Event, log *slog.Logger) ([]pipeline.Event, error) {
	s := st.Session
	if s.Base == "" || s.Status.Terminal() || s.Status == pipeline.SessionNew {
		return events, nil
	}
	for _, ev := range events {
		if ev.Kind == pipeline.EventBaseRenamed {
			return events, nil
		}
	}
	for _, p := range st.PRs {
		if g := s.Group(p.Group); p.Number != 0 && g != nil && g.Stage != pipeline.StageMerged && g.Stage != pipeline.StageAbandoned {
			return events, nil // an open PR: GitHub retargets it and says so
		}
	}
	// A read that fails (a rate limit) stops the reconcile, as every read
	// of it does: deciding without it could time out steps whose results
	// wait unread.
	_, err := gh.GetRef(ctx, ref.repo, "heads/"+s.Base)
	if err == nil {
		return events, nil
	}
	if !errors.Is(err, ghapi.ErrNotFound) {
		return nil, fmt.Errorf("reading the base %s: %w", s.Base, err)
	}
	to, moved, err := gh.BranchMoved(ctx, ref.repo, s.Base)
	if err != nil && !errors.Is(err, ghapi.ErrNotFound) {
		return nil, fmt.Errorf("where the base %s went: %w", s.Base, err)
	}
	if !moved {
		log.Info("the session's base branch is gone", "base", s.Base)
		return events, nil
	}
	log.Info("the base branch was renamed (found with no group PR open)", "from", s.Base, "to", to)
	return append(events, pipeline.BaseRenamed(strconv.Itoa(ref.issue), s.Base, to, "")), nil
}
