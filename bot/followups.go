package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Follow-ups as issues (issue 26, github.followup_label). Each follow-up
// the session records is opened once as an issue with the configured
// label, linked to the session's issue and the group's PR. The issue
// carries the effect's marker: the outbox confirms it among the label's
// issues of every state (a person may close it at once), so a retried or
// replayed reconcile never opens it twice. Everything in a follow-up is an
// agent's text: inert in the body, mentions broken in the title.

// followUpEffects are the issues to open for the follow-ups recorded
// between prev and next, when the configuration asks for them.
func followUpEffects(prev, next pipeline.Session, st *codec.State) []codec.PendingEffect {
	label := st.Config.GitHub.FollowUpLabel
	if label == "" {
		return nil
	}
	var out []codec.PendingEffect
	for _, i := range pipeline.FollowUpsToOpen(prev, next) {
		u := next.FollowUps[i]
		out = append(out, codec.PendingEffect{ID: "followup/" + next.ID + "/" + strconv.Itoa(i), Kind: codec.EffectIssue,
			Step: u.Step, Group: u.Group, Number: i, Label: label})
	}
	return out
}

// maxFollowUpTitle bounds a follow-up issue's title (GitHub allows 256).
const maxFollowUpTitle = 120

// followUpIssue renders follow-up i as an issue.
func followUpIssue(st *codec.State, sessionIssue, i int) (ghapi.NewIssue, bool) {
	if i < 0 || i >= len(st.Session.FollowUps) {
		return ghapi.NewIssue{}, false
	}
	u := st.Session.FollowUps[i]
	f := u.Finding
	// A title is plain text: no HTML to escape, but @name still mentions.
	title := "Follow-up: " + strings.ReplaceAll(f.Problem, "@", "@\u2060")
	if r := []rune(title); len(r) > maxFollowUpTitle {
		title = string(r[:maxFollowUpTitle-1]) + "…"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "A review finding that bazinga session #%d went on with", sessionIssue)
	if pr := st.PRNumber(u.Group); pr != 0 {
		fmt.Fprintf(&b, " (group `%s`, PR #%d)", codec.EscapeHTML(u.Group), pr)
	}
	b.WriteString(", recorded for a later session.\n\n")
	where := f.Where()
	if where == "" {
		where = "the change"
	}
	fmt.Fprintf(&b, "- **%s** `%s`: %s\n", strings.ToUpper(f.Severity.String()), strings.ReplaceAll(codec.EscapeHTML(where), "`", "'"), codec.OneLine(f.Problem))
	if f.Fix != "" {
		fmt.Fprintf(&b, "- Suggested fix: %s\n", codec.OneLine(f.Fix))
	}
	fmt.Fprintf(&b, "\nFound by step `%s`. The text above is a reviewing agent's, unverified.\n", codec.EscapeHTML(u.Step))
	return ghapi.NewIssue{Title: title, Body: b.String(), Labels: []string{st.Config.GitHub.FollowUpLabel}}, true
}

// openFollowUp carries out an issue effect.
func (x *executor) openFollowUp(ctx context.Context, p codec.PendingEffect) error {
	is, ok := followUpIssue(x.st, x.ref.issue, p.Number)
	if !ok {
		return nil
	}
	is.Labels = []string{p.Label}
	is.Body += "\n" + codec.EffectMarker(p.ID)
	_, err := x.gh.CreateIssue(ctx, x.ref.repo, is)
	return err
}

// followUpDone reports whether the follow-up's issue is open or was closed.
func (x *executor) followUpDone(ctx context.Context, p codec.PendingEffect) (bool, error) {
	if p.Number < 0 || p.Number >= len(x.st.Session.FollowUps) {
		return true, nil
	}
	issues, err := x.gh.ListIssuesWithLabel(ctx, x.ref.repo, p.Label)
	if err != nil {
		return false, err
	}
	for _, is := range issues {
		if x.b.own(is.Author) && codec.HasEffectMarker(is.Body, p.ID) {
			return true, nil
		}
	}
	return false, nil
}
