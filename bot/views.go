package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Views are what GitHub shows of a session: the group branches and PRs, their
// labels and texts, the issue's label and whether it is closed. The engine
// knows nothing of them; the bot computes what they should be from the
// session and converges on it (Prow Tide's takeAction), recording what it
// wrote so unchanged views cost no call.

// IssueLabel is the issue's label for a session status.
func IssueLabel(st pipeline.SessionStatus) string {
	switch st {
	case pipeline.SessionAwaitingInput:
		return "bazinga:needs-input"
	case pipeline.SessionPaused:
		return "bazinga:paused"
	case pipeline.SessionDone:
		return "bazinga:done"
	case pipeline.SessionFailed:
		return "bazinga:failed"
	case pipeline.SessionStopped:
		return "bazinga:stopped"
	}
	return "bazinga:running"
}

// GroupLabel is a group PR's label: only a group that needs a person
// carries one. The stages are in the tracking comment's table and graph and
// the steps in the PR's result comments; a label per stage cost a PR edit
// per stage change (issue 14: the installation's content-creating budget).
func GroupLabel(g *pipeline.Group) string {
	switch g.Stage {
	case pipeline.StageBlocked, pipeline.StageAbandoned:
		return "bazinga:blocked"
	}
	return ""
}

// IssueLabels lists every label bazinga manages on issues, in order.
func IssueLabels() []string {
	return []string{"bazinga:running", "bazinga:paused", "bazinga:needs-input", "bazinga:done", "bazinga:failed", "bazinga:stopped"}
}

// GroupLabels lists every label bazinga manages on group PRs, in order.
func GroupLabels() []string {
	return []string{"bazinga:blocked"}
}

// withLabel replaces the managed labels of current by label.
func withLabel(current, managed []string, label string) []string {
	out := []string{}
	for _, l := range current {
		if !slices.Contains(managed, l) && l != label {
			out = append(out, l)
		}
	}
	if label != "" {
		out = append(out, label)
	}
	return out
}

// hasOnlyLabel reports whether current carries label and no other of managed.
func hasOnlyLabel(current, managed []string, label string) bool {
	for _, l := range managed {
		if l != label && slices.Contains(current, l) {
			return false
		}
	}
	return slices.Contains(current, label)
}

// groupViews converges every started group on its PR and the PR's title,
// body and label. The group branch is the jobs' business: the first step
// that changes anything pushes it (a git push, no API call), so the PR is
// opened once a step has reported a head for the group, and tried again
// after each later step while GitHub finds no commits on it.
func (x *executor) groupViews(ctx context.Context) {
	s := &x.st.Session
	for i := range s.Groups {
		g := &s.Groups[i]
		if !g.Started || g.Head == "" {
			continue
		}
		gp := x.st.PR(g.ID)
		if gp.Number == 0 && !g.Stage.Finished() && (!gp.Tried || gp.TriedLast != g.Last) {
			x.openPR(ctx, g, gp)
		}
	}
	x.prTexts(ctx)
}

func (x *executor) openPR(ctx context.Context, g *pipeline.Group, gp *codec.GroupPR) {
	s := &x.st.Session
	// Draft until merged by push; merge.method pull-request merges the PR
	// through the API, which a draft refuses (and marking one ready takes GraphQL).
	draft := x.st.Config.Merge.Method != pipeline.MergePullRequest && !gp.NoDraft
	title, body := prTitle(x.ref.issue, *g), groupPRBody(x.ref.issue, *g, gp)
	pr, err := x.gh.CreatePR(ctx, x.ref.repo, ghapi.NewPR{Title: title, Body: body, Head: g.Branch, Base: s.Base, Draft: draft})
	if draft && errors.Is(err, ghapi.ErrDraftsUnsupported) {
		// A private repository on a free plan has no drafts (422): the PR
		// is opened ready for review, saying so, rather than tried forever.
		x.log.Info("the repository refuses draft PRs; opening the group PR ready for review", "group", g.ID)
		gp.NoDraft = true
		body = groupPRBody(x.ref.issue, *g, gp)
		pr, err = x.gh.CreatePR(ctx, x.ref.repo, ghapi.NewPR{Title: title, Body: body, Head: g.Branch, Base: s.Base})
	}
	switch {
	case err == nil:
		gp.Number, gp.BodyHash = pr.Number, textHash(title, body)
	case errors.Is(err, ghapi.ErrExists):
		found, ok, ferr := x.gh.FindPR(ctx, x.ref.repo, g.Branch)
		if ferr != nil {
			x.fail(fmt.Errorf("group %s: %w", g.ID, ferr))
			return
		}
		if ok {
			gp.Number = found.Number
			if found.Title == title && found.Body == body {
				gp.BodyHash = textHash(title, body)
			}
		}
	case errors.Is(err, ghapi.ErrNoCommits), errors.Is(err, ghapi.ErrNoBranch):
		gp.Tried, gp.TriedLast = true, g.Last
	case errors.Is(err, ghapi.ErrActionsMayNotOpenPRs):
		// A setting, not a failure: retrying on every event would only
		// repeat the 403. Try again at the group's next step (the setting
		// may have been turned on by then) and tell the humans, once per
		// session, what to change.
		gp.Tried, gp.TriedLast = true, g.Last
		id := "notice/actions-may-not-open-prs/" + strconv.Itoa(x.ref.issue)
		posted := false
		if cs, cerr := x.commentsOf(ctx, x.ref.issue); cerr == nil {
			for _, c := range cs {
				posted = posted || (x.b.own(c.Author) && codec.HasEffectMarker(c.Body, id))
			}
		}
		if !posted {
			x.enqueue(codec.PendingEffect{ID: id, Kind: codec.EffectComment, Number: x.ref.issue, Text: ActionsMayNotOpenPRsNotice})
		}
		x.log.Warn("GitHub Actions may not open pull requests in this repository", "group", g.ID)
	default:
		x.fail(fmt.Errorf("group %s: %w", g.ID, err))
	}
}

// ActionsMayNotOpenPRsNotice is what the session says when GitHub refuses
// the orchestrator's group PR because the repository does not allow GitHub
// Actions to create pull requests.
const ActionsMayNotOpenPRsNotice = "⚠️ **bazinga could not open the group pull requests**: this repository does not allow GitHub Actions to create pull requests " +
	"(GitHub answered 403 \"GitHub Actions is not permitted to create or approve pull requests.\"). " +
	"Steps go on without them (merge.method push lands on the base directly), but there is nothing to review or to run CI on, " +
	"and merge.method pull-request cannot merge.\n\n" +
	"To get them, a repository admin turns on **Allow GitHub Actions to create and approve pull requests** in " +
	"**Settings → Actions → General → Workflow permissions** (in an organisation, the organisation's Actions settings must allow it first); " +
	"the next step of each group opens its PR, and `/bazinga resume` opens them at once."

// prTexts keeps every group PR's title, body and label right: one edit per
// group, only when something changed.
func (x *executor) prTexts(ctx context.Context) {
	s := &x.st.Session
	for i := range s.Groups {
		g := &s.Groups[i]
		gp := x.st.PR(g.ID)
		if gp.Number == 0 {
			continue
		}
		title, body := prTitle(x.ref.issue, *g), groupPRBody(x.ref.issue, *g, gp)
		h := textHash(title, body)
		label := GroupLabel(g)
		if h == gp.BodyHash && label == gp.Label {
			continue
		}
		edit := ghapi.IssueEdit{}
		if h != gp.BodyHash {
			edit.Title, edit.Body = &title, &body
		}
		if label != gp.Label {
			cur, err := x.labelsOf(ctx, gp.Number)
			if err != nil {
				x.fail(fmt.Errorf("group %s PR labels: %w", g.ID, err))
				continue
			}
			l := withLabel(cur, GroupLabels(), label)
			edit.Labels = &l
		}
		if err := x.gh.EditIssue(ctx, x.ref.repo, gp.Number, edit); err != nil {
			x.fail(fmt.Errorf("group %s PR: %w", g.ID, err))
			continue
		}
		gp.BodyHash, gp.Label = h, label
	}
}

// issueViews puts the issue's label and state in the outbox when they are
// not what the session says: they come after the comments (the summary is
// read before the issue closes), and a session whose effects are not all
// carried out keeps its old label, so the sweep finds it again.
func (x *executor) issueViews() {
	st := x.st
	// Closing comes before the label: a session keeps its old label until
	// every effect is carried out, and the sweep finds it by that label.
	if st.Session.Status == pipeline.SessionDone && st.Config.GitHub.CloseIssue && !st.Closed {
		x.enqueue(codec.PendingEffect{ID: "close", Kind: codec.EffectClose})
		st.Closed = true
	}
	if label := IssueLabel(st.Session.Status); label != st.IssueLabel {
		x.enqueue(codec.PendingEffect{ID: "labels/" + label + "/" + strconv.Itoa(st.Session.Rev), Kind: codec.EffectLabels, Label: label})
		st.IssueLabel = label
	}
}

// labelsOf returns the current labels of an issue or PR: from the payload
// when it showed them, else one read (kept for the rest of the reconcile).
func (x *executor) labelsOf(ctx context.Context, number int) ([]string, error) {
	if l, ok := x.in.labels[number]; ok {
		return l, nil
	}
	is, err := x.issue(ctx, number)
	if err != nil {
		return nil, err
	}
	return is.Labels, nil
}

// issue reads an issue or PR once per reconcile.
func (x *executor) issue(ctx context.Context, number int) (ghapi.Issue, error) {
	if is, ok := x.issues[number]; ok {
		return is, nil
	}
	is, err := x.gh.GetIssue(ctx, x.ref.repo, number)
	if err != nil {
		return ghapi.Issue{}, err
	}
	if x.issues == nil {
		x.issues = map[int]ghapi.Issue{}
	}
	x.issues[number] = is
	return is, nil
}

// noDraftNote is added to a group PR the repository would not let be a draft.
const noDraftNote = "> [!NOTE]\n> This repository does not support draft pull requests (a private repository on a free plan), so bazinga opened this one ready for review. Please do not merge it by hand: bazinga merges it once the group is approved and tested.\n\n"

// groupPRBody is a group PR's body, with the note when it could not be a draft.
func groupPRBody(issue int, g pipeline.Group, gp *codec.GroupPR) string {
	body := prBody(issue, g)
	if gp != nil && gp.NoDraft {
		body = noDraftNote + body
	}
	return body
}
