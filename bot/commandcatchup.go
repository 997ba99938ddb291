package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Commands a catch-up finds (issue 22). In Action-only mode a session's
// reconciles share a concurrency group that keeps one pending run, and a
// newer run cancels the pending one: the cancelled run's event, perhaps a
// `/bazinga approve`, is never delivered. So every catch-up reads the
// command comments on the issue and its group PRs that the session has
// not read (codec.CommandMark) and applies each as its own delivery would
// have, through Process; the mark makes a command count once, however it
// arrived.

// applyMissedCommands applies the command comments above the session's
// mark that no delivery applied, oldest first, and returns how far it read
// them (0: nothing new, or a state with no mark yet: its first write sets
// one, and commands older than it are not replayed).
func (b *Bot) applyMissedCommands(ctx context.Context, gh GitHub, ref sessionRef) (int64, error) {
	unlock := b.lock(ref.key())
	ld, err := b.load(ctx, gh, ref, 0)
	unlock()
	if errors.As(err, new(*issueTransferredError)) {
		return 0, nil // the reconcile that follows stops the session
	}
	if err != nil {
		return 0, fmt.Errorf("load session %s: %w", ref.key(), err)
	}
	mark := ld.st.Commands
	if !ld.found || mark == nil {
		return 0, nil
	}
	type found struct {
		c      ghapi.Comment
		number int
		onPR   bool
	}
	var cands []found
	scan := func(cs []ghapi.Comment, number int, onPR bool) {
		for _, c := range cs {
			if c.ID > mark.Through && b.isCommandComment(c) {
				cands = append(cands, found{c: c, number: number, onPR: onPR})
			}
		}
	}
	scan(ld.comments, ref.issue, false)
	for _, pr := range ld.st.PRs {
		if pr.Number == 0 {
			continue
		}
		cs, err := gh.ListComments(ctx, ref.repo, pr.Number)
		if err != nil {
			return 0, fmt.Errorf("%s: the comments of group PR #%d: %w", ref.key(), pr.Number, err)
		}
		scan(cs, pr.Number, true)
	}
	slices.SortFunc(cands, func(a, b found) int { return compareIDs(a.c.ID, b.c.ID) })
	var through int64
	for _, f := range cands {
		if !mark.Seen(f.c.ID) {
			err := b.Process(ctx, commentDelivery(ref, f.c, f.number, f.onPR))
			if err != nil && !errors.Is(err, ErrIgnored) {
				// Read again by the next catch-up; the ones before it
				// count as read.
				return through, fmt.Errorf("%s: a command in comment %d: %w", ref.key(), f.c.ID, err)
			}
			b.log.Info("command caught up", "repo", ref.repo.String(), "issue", ref.issue, "comment", f.c.ID, "author", f.c.Author, "ignored", err != nil)
		}
		through = f.c.ID
	}
	return through, nil
}

func compareIDs(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// isCommandComment: a person's comment that carries a command a session
// acts on (help alone, and an answer refused at the door as too long, are
// answered once by their own delivery and need no catch-up).
func (b *Bot) isCommandComment(c ghapi.Comment) bool {
	if c.AuthorType == "Bot" || strings.HasSuffix(c.Author, "[bot]") || b.own(c.Author) {
		return false
	}
	for _, cmd := range ParseCommands(c.Body) {
		if cmd.Name == CmdAnswer && pipeline.AnswerTooLong(strings.TrimSpace(cmd.Text)) != "" {
			continue
		}
		if _, ok := cmd.PipelineCommand(); ok || cmd.Name == CmdStatus {
			return true
		}
	}
	return false
}

// commentDelivery is the issue_comment delivery GitHub would have sent for
// c. It shows no labels, so the reconcile reads them.
func commentDelivery(ref sessionRef, c ghapi.Comment, number int, onPR bool) Delivery {
	type user struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	}
	authorType := c.AuthorType
	if authorType == "" {
		authorType = "User"
	}
	issue := map[string]any{"number": number}
	if onPR {
		issue["pull_request"] = map[string]any{"number": number}
	}
	p := map[string]any{
		"action":       "created",
		"installation": map[string]any{"id": ref.inst},
		"repository":   map[string]any{"id": ref.repo.ID, "full_name": ref.repo.String()},
		"sender":       user{Login: c.Author, Type: authorType},
		"issue":        issue,
		"comment": map[string]any{"id": c.ID, "body": c.Body, "user": user{Login: c.Author, Type: authorType},
			"created_at": c.CreatedAt, "author_association": c.Association},
	}
	raw, _ := json.Marshal(p) // maps of strings, numbers and times: no error
	return Delivery{ID: fmt.Sprintf("catchup-comment-%d", c.ID), Event: "issue_comment", Action: "created",
		Installation: ref.inst, Repo: ref.repo.String(), Payload: raw}
}

// markCommands records in the state what this reconcile read: the command
// comment it applied, how far a catch-up read. A state without a mark (a
// new session, or one written before marks were kept) starts at the newest
// comment the issue shows, so older commands are never replayed.
func markCommands(st *codec.State, comments []ghapi.Comment, in input) {
	if st.Commands == nil {
		m := &codec.CommandMark{}
		for _, c := range comments {
			m.Through = max(m.Through, c.ID)
		}
		m.Through = max(m.Through, in.cmdComment)
		st.Commands = m
		return
	}
	m := *st.Commands
	m.Applied = slices.Clone(m.Applied)
	if in.cmdComment > m.Through && !slices.Contains(m.Applied, in.cmdComment) {
		m.Applied = append(m.Applied, in.cmdComment)
		slices.Sort(m.Applied)
	}
	if in.through > m.Through {
		m.Through = in.through
		m.Applied = slices.DeleteFunc(m.Applied, func(id int64) bool { return id <= m.Through })
	}
	if len(m.Applied) == 0 {
		m.Applied = nil
	}
	st.Commands = &m
}
