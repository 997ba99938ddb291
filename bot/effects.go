package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// reconcile is the loop of one delivery: load the session, turn the input
// into engine events, Reconcile, assert liveness, carry out the effects and
// write the tracking comment at most once.
func (b *Bot) reconcile(ctx context.Context, gh GitHub, ref sessionRef, in input) error {
	unlock := b.lock(ref.key())
	defer unlock()
	log := b.log.With("delivery", in.delivery, "repo", ref.repo.String(), "issue", ref.issue)
	session := strconv.Itoa(ref.issue)

	ld, err := b.load(ctx, gh, ref, in.commentID)
	if err != nil {
		return fmt.Errorf("load session %s: %w", ref.key(), err)
	}
	st := ld.st
	events := append([]pipeline.Event(nil), in.events...)
	record := append([]pipeline.Event(nil), in.record...)
	lines := append([]string(nil), in.replies...)
	switch {
	case !ld.found && in.start == nil:
		if in.command {
			_, err := gh.CreateComment(ctx, ref.repo, replyNumber(ref, in),
				"There is no bazinga session here. Label the issue `"+b.o.StartLabel+"` to start one.")
			if err != nil {
				return err
			}
		}
		return fmt.Errorf("%s: %w: no session", ref.key(), ErrIgnored)
	case !ld.found:
		cfg, err := b.readConfig(ctx, gh, ref.repo, in.start.base)
		var ce *configError
		if errors.As(err, &ce) {
			_, cerr := gh.CreateComment(ctx, ref.repo, ref.issue, renderConfigError(b.o.ConfigPath, ce.err))
			if cerr != nil {
				return cerr
			}
			log.Info("session not started: bad configuration", "err", ce.err)
			return nil
		}
		if err != nil {
			return err
		}
		st = codec.State{V: codec.StateVersion, Repo: ref.repo.String(), Issue: ref.issue, Config: cfg, RepoURL: in.start.repoURL}
		events = []pipeline.Event{pipeline.Started(session, requirements(in.start.title, in.start.body), in.start.base)}
		record = nil
	case in.start != nil:
		switch st.Session.Status {
		case pipeline.SessionPaused, pipeline.SessionStopped, pipeline.SessionFailed:
			record = append(record, events...)
		default:
			return fmt.Errorf("%s: %w: the session is already %s", ref.key(), ErrIgnored, st.Session.Status)
		}
	}
	// A merge bazinga made itself (the merge step's job, or the bot) is
	// reported by the merge step's result, not as a human closing the PR.
	kept := events[:0]
	for _, ev := range events {
		if ev.Kind == pipeline.EventPRClosed && ev.Merged && b.ownMerge(ev.Actor, st.Config) {
			continue
		}
		kept = append(kept, ev)
	}
	if len(kept) == 0 && len(events) > 0 && in.start == nil {
		return fmt.Errorf("%s: %w: bazinga's own merge", ref.key(), ErrIgnored)
	}
	events = kept
	if in.result != nil {
		ev, ok, err := b.checkResult(ctx, gh, ref, &ld, in)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s: %w: result for step %s not accepted", ref.key(), ErrIgnored, in.result.rec.Step)
		}
		st = ld.st
		events = append(events, ev)
	}
	if in.fail != nil {
		if _, ok := matchInFlight(st.Session, in.fail.Step, false); !ok {
			return fmt.Errorf("%s: %w: step %s is not in flight", ref.key(), ErrIgnored, in.fail.Step)
		}
		events = append(events, *in.fail)
		record = append(record, *in.fail)
	}

	now := b.o.Now().UTC()
	prev := st.Session
	next, actions := pipeline.Reconcile(prev, events, now, st.Config)
	if err := pipeline.CheckLiveness(next, st.Config); err != nil {
		log.Error("liveness invariant violated", "err", err, "rev", next.Rev)
	}
	st.Session = next

	// What happened that only the bot knows: failures and timeouts.
	timedOut := false
	for _, s := range next.Steps {
		old := prev.Step(s.ID)
		if old == nil || old.State != pipeline.StepInFlight || s.State != pipeline.StepFailed {
			continue
		}
		lines = append(lines, fmt.Sprintf("⚠️ Step `%s` ended without a result (%s) → %s", s.ID, codec.OneLine(s.Note), s.Routed))
		if in.fail == nil || in.fail.Step != s.ID {
			timedOut = true
		}
	}
	if prev.Clarification != nil && next.Clarification == nil && !hasCommand(events, pipeline.CommandAnswer) {
		timedOut = true
	}
	if timedOut {
		record = append(record, pipeline.Tick(session))
	}
	for _, a := range actions {
		switch a.Kind {
		case pipeline.ActionNotify:
			lines = append(lines, renderNotice(a.Notice, a.Text))
		case pipeline.ActionPause:
			lines = append(lines, "⏸️ **Paused** | "+codec.OneLine(a.Text)+" → `/bazinga resume` to continue")
		case pipeline.ActionComplete:
			if a.Status != pipeline.SessionDone {
				lines = append(lines, fmt.Sprintf("%s **Session %s** | %s", statusIcons[a.Status], a.Status, codec.OneLine(a.Text)))
			}
		case pipeline.ActionDispatch:
			st.Pending = append(st.Pending, codec.PendingEffect{ID: a.ID, Kind: "dispatch", Step: a.Step, Group: a.Group})
		case pipeline.ActionCancel:
			st.Pending = append(st.Pending, codec.PendingEffect{ID: a.ID, Kind: "cancel", Step: a.Step, Group: a.Group})
		case pipeline.ActionReport:
			log.Debug("engine report", "text", a.Text)
		}
	}
	if in.status {
		lines = append(lines, renderTracking(&st, st.RepoURL, 10, ""))
	}
	if len(lines) > 0 || len(record) > 0 {
		var er *codec.EventRecord
		if len(record) > 0 {
			er = &codec.EventRecord{At: now, Events: record}
		}
		if len(lines) == 0 {
			lines = append(lines, "ℹ️ Session updated.")
		}
		st.Pending = append(st.Pending, codec.PendingEffect{ID: fmt.Sprintf("comment/%s/%d/%s", session, next.Rev, in.delivery),
			Kind: "comment", Number: replyNumber(ref, in), Text: renderBotComment(lines, er)})
	}

	x := &executor{b: b, gh: gh, ref: ref, st: &st, in: in, log: log, key: ref.key()}
	x.run(ctx)

	// The tracking comment, written at most once.
	body, err := fitTracking(st, st.RepoURL, b.o.StateKey)
	if err != nil {
		return errors.Join(append(x.errs, err)...)
	}
	commentID, written := ld.commentID, ld.body
	if body != ld.body || commentID == 0 {
		var c ghapi.Comment
		var werr error
		if commentID != 0 {
			c, werr = gh.EditComment(ctx, ref.repo, commentID, body)
			if errors.Is(werr, ghapi.ErrNotFound) {
				commentID = 0
			}
		}
		if commentID == 0 {
			c, werr = gh.CreateComment(ctx, ref.repo, ref.issue, body)
		}
		if werr != nil {
			x.errs = append(x.errs, fmt.Errorf("write tracking comment: %w", werr))
			written = ""
		} else {
			commentID, written = c.ID, body
		}
	}
	b.mu.Lock()
	b.mem[ref.key()] = &memState{st: st, commentID: commentID, body: written, dirty: written != body}
	b.mu.Unlock()
	if len(x.errs) > 0 {
		err := errors.Join(x.errs...)
		log.Warn("reconcile left effects undone; the next event or sweep retries them", "err", err, "rev", next.Rev)
		return err
	}
	log.Debug("reconciled", "rev", next.Rev, "status", next.Status.String(), "actions", len(actions))
	return nil
}

func replyNumber(ref sessionRef, in input) int {
	if in.replyTo != 0 {
		return in.replyTo
	}
	return ref.issue
}

func hasCommand(evs []pipeline.Event, k pipeline.CommandKind) bool {
	for _, e := range evs {
		if e.Kind == pipeline.EventCommand && e.Command != nil && e.Command.Kind == k {
			return true
		}
	}
	return false
}

// checkResult accepts a result comment: from a trusted author, posted on
// the issue or the group's PR, for a step in flight. A result for a step
// newer than the state knows means the state is behind the log: the
// session is rebuilt and the result applied to the rebuilt session.
func (b *Bot) checkResult(ctx context.Context, gh GitHub, ref sessionRef, ld *loaded, in input) (pipeline.Event, bool, error) {
	r := in.result
	st := &ld.st
	if !b.trustedResultAuthor(r.author, st.Config) {
		b.log.Warn("ignoring a result from an untrusted author", "delivery", in.delivery, "repo", ref.repo.String(),
			"issue", ref.issue, "step", r.rec.Step, "author", r.author)
		return pipeline.Event{}, false, nil
	}
	if pr := st.PRNumber(r.rec.Group); r.number != ref.issue && pr != 0 && r.number != pr {
		return pipeline.Event{}, false, nil
	}
	if ev, ok := resultEvent(st.Session, r.rec, false); ok {
		return ev, true, nil
	}
	sref, _ := codec.ParseStepID(r.rec.Step)
	if sref.N <= st.Session.StepSeq || ld.rebuilt {
		return pipeline.Event{}, false, nil
	}
	comments, err := gh.ListComments(ctx, ref.repo, ref.issue)
	if err != nil {
		return pipeline.Event{}, false, err
	}
	rebuilt, ok, err := b.rebuild(ctx, gh, ref, comments, in.commentID)
	if err != nil || !ok {
		return pipeline.Event{}, false, err
	}
	b.log.Warn("state was behind its log; rebuilt", "delivery", in.delivery, "repo", ref.repo.String(), "issue", ref.issue, "step", r.rec.Step)
	rebuilt.RepoURL = st.RepoURL
	ld.st, ld.rebuilt = rebuilt, true
	ev, ok := resultEvent(rebuilt.Session, r.rec, false)
	return ev, ok, nil
}

// executor carries out one reconcile's effects. Every effect is either
// level-triggered (branches, PRs, labels, closing: compared with what the
// state says was done) or a pending effect with a stable id.
type executor struct {
	b    *Bot
	gh   GitHub
	ref  sessionRef
	st   *codec.State
	in   input
	log  *slog.Logger
	key  string
	errs []error
	// baseSHA caches the base head for branch creation.
	baseSHA string
}

func (x *executor) fail(err error) {
	x.errs = append(x.errs, err)
}

func (x *executor) run(ctx context.Context) {
	x.branches(ctx)
	x.pending(ctx)
	x.prs(ctx)
	x.issueLabel(ctx)
	x.close(ctx)
}

func (x *executor) branches(ctx context.Context) {
	s := &x.st.Session
	for i := range s.Groups {
		g := &s.Groups[i]
		if !g.Started {
			continue
		}
		gp := x.st.PR(g.ID)
		if !gp.Branch && g.Stage != pipeline.StageMerged && g.Stage != pipeline.StageAbandoned {
			if x.baseSHA == "" {
				sha, err := x.gh.GetRef(ctx, x.ref.repo, "heads/"+s.Base)
				if err != nil {
					x.fail(fmt.Errorf("group %s: %w", g.ID, err))
					continue
				}
				x.baseSHA = sha
			}
			err := x.gh.CreateRef(ctx, x.ref.repo, "refs/heads/"+g.Branch, x.baseSHA)
			switch {
			case err == nil:
				// A new branch at the base head has no commits: no PR yet.
				gp.Branch, gp.Tried, gp.TriedLast = true, true, g.Last
			case errors.Is(err, ghapi.ErrExists):
				gp.Branch = true
			default:
				x.fail(fmt.Errorf("group %s: %w", g.ID, err))
				continue
			}
		}
		if gp.Branch && gp.Number == 0 && !g.Stage.Finished() && (!gp.Tried || gp.TriedLast != g.Last) {
			x.openPR(ctx, g, gp)
		}
	}
}

func (x *executor) openPR(ctx context.Context, g *pipeline.Group, gp *codec.GroupPR) {
	s := &x.st.Session
	title, body := prTitle(x.ref.issue, *g), prBody(x.ref.issue, *s, *g)
	// Draft until merged by push; merge.method pull-request merges the PR
	// through the API, which a draft refuses (and marking one ready takes GraphQL).
	draft := x.st.Config.Merge.Method != pipeline.MergePullRequest
	pr, err := x.gh.CreatePR(ctx, x.ref.repo, ghapi.NewPR{Title: title, Body: body, Head: g.Branch, Base: s.Base, Draft: draft})
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
	case errors.Is(err, ghapi.ErrNoCommits):
		gp.Tried, gp.TriedLast = true, g.Last
	default:
		x.fail(fmt.Errorf("group %s: %w", g.ID, err))
	}
}

func (x *executor) pending(ctx context.Context) {
	s := &x.st.Session
	var keep []codec.PendingEffect
	for _, p := range x.st.Pending {
		if x.b.isDone(x.key, p.ID) {
			continue
		}
		switch p.Kind {
		case "dispatch":
			st := s.Step(p.Step)
			if st == nil || st.State != pipeline.StepInFlight {
				continue // withdrawn meanwhile
			}
			if p.Group != pipeline.LeadGroup && p.Group != "" && !x.st.PR(p.Group).Branch {
				keep = append(keep, p) // the group branch comes first
				continue
			}
			wf := x.st.Config.GitHub.AgentWorkflow
			if wf == "" {
				wf = pipeline.DefaultConfig().GitHub.AgentWorkflow
			}
			if err := x.gh.DispatchWorkflow(ctx, x.ref.repo, wf, s.Base, map[string]string{"step": p.Step}); err != nil {
				x.fail(fmt.Errorf("dispatch %s: %w", p.Step, err))
				keep = append(keep, p)
				continue
			}
			x.log.Info("dispatched", "step", p.Step)
		case "cancel":
			x.cancel(ctx, p.Step)
		case "comment":
			if _, err := x.gh.CreateComment(ctx, x.ref.repo, p.Number, p.Text); err != nil {
				x.fail(fmt.Errorf("comment: %w", err))
				keep = append(keep, p)
				continue
			}
		default:
			continue
		}
		x.b.markDone(x.key, p.ID)
	}
	x.st.Pending = keep
}

// cancel withdraws a step's run, best effort: its result is ignored anyway.
func (x *executor) cancel(ctx context.Context, step string) {
	wf := x.st.Config.GitHub.AgentWorkflow
	runs, err := x.gh.ListRuns(ctx, x.ref.repo, wf)
	if err != nil {
		x.log.Info("cancel: listing runs failed", "step", step, "err", err)
		return
	}
	for _, r := range runs {
		if id, _, ok := codec.StepInText(r.Title); ok && id == step && r.Status != "completed" {
			if err := x.gh.CancelRun(ctx, x.ref.repo, r.ID); err != nil {
				x.log.Info("cancel failed", "step", step, "run", r.ID, "err", err)
			}
		}
	}
}

// labelsOf returns the current labels of an issue or PR: from the payload
// when it showed them, else one read.
func (x *executor) labelsOf(ctx context.Context, number int) ([]string, error) {
	if l, ok := x.in.labels[number]; ok {
		return l, nil
	}
	is, err := x.gh.GetIssue(ctx, x.ref.repo, number)
	if err != nil {
		return nil, err
	}
	return is.Labels, nil
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

// prs keeps every group PR's title, body and label right: one edit per
// group, only when something changed.
func (x *executor) prs(ctx context.Context) {
	s := &x.st.Session
	for i := range s.Groups {
		g := &s.Groups[i]
		gp := x.st.PR(g.ID)
		if gp.Number == 0 {
			continue
		}
		title, body := prTitle(x.ref.issue, *g), prBody(x.ref.issue, *s, *g)
		h := textHash(title, body)
		label := pipeline.GroupLabel(g)
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
			l := withLabel(cur, pipeline.GroupLabels(), label)
			edit.Labels = &l
		}
		if err := x.gh.EditIssue(ctx, x.ref.repo, gp.Number, edit); err != nil {
			x.fail(fmt.Errorf("group %s PR: %w", g.ID, err))
			continue
		}
		gp.BodyHash, gp.Label = h, label
	}
}

func (x *executor) issueLabel(ctx context.Context) {
	label := pipeline.IssueLabel(x.st.Session.Status)
	if label == x.st.IssueLabel {
		return
	}
	cur, err := x.labelsOf(ctx, x.ref.issue)
	if err != nil {
		x.fail(fmt.Errorf("issue labels: %w", err))
		return
	}
	if err := x.gh.ReplaceLabels(ctx, x.ref.repo, x.ref.issue, withLabel(cur, pipeline.IssueLabels(), label)); err != nil {
		x.fail(fmt.Errorf("issue labels: %w", err))
		return
	}
	x.st.IssueLabel = label
}

func (x *executor) close(ctx context.Context) {
	s := &x.st.Session
	if s.Status != pipeline.SessionDone || !x.st.Config.GitHub.CloseIssue || x.st.Closed {
		return
	}
	for _, p := range x.st.Pending {
		if p.Kind == "comment" {
			return // the summary comes first
		}
	}
	if err := x.gh.CloseIssue(ctx, x.ref.repo, x.ref.issue); err != nil {
		x.fail(fmt.Errorf("close issue: %w", err))
		return
	}
	x.st.Closed = true
}

// renderConfigError is the comment on a bad configuration file.
func renderConfigError(path string, err error) string {
	var b strings.Builder
	b.WriteString("❌ **bazinga did not start** | `" + path + "` has problems | fix them, then label the issue again\n\n")
	var ce *pipeline.ConfigError
	for _, e := range splitJoined(err) {
		if errors.As(e, &ce) {
			b.WriteString("- " + codec.OneLine(ce.Error()) + "\n")
		} else {
			b.WriteString("- " + codec.OneLine(e.Error()) + "\n")
		}
	}
	return b.String()
}

func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
