package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Process handles one delivery in four steps: parse and translate (pure),
// resolve the session and authorise the actor (reads), acknowledge what
// needs no session, then drive the session.
func (b *Bot) Process(ctx context.Context, d Delivery) (err error) {
	switch d.Event {
	case "ping", "installation", "installation_repositories", "installation_target", "github_app_authorization":
		b.log.Info("acknowledged", "delivery", d.ID, "event", d.Event, "action", d.Action)
		return nil
	}
	p, err := payloadOf(d)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrIgnored, err)
	}
	full := p.Repository.FullName
	if full == "" {
		full = d.Repo
	}
	repo, ok := ghapi.ParseRepo(full)
	if !ok {
		return fmt.Errorf("delivery %s (%s): %w: no repository", d.ID, d.Event, ErrIgnored)
	}
	repo.ID = p.Repository.ID
	inst := p.Installation.ID
	if inst == 0 {
		inst = d.Installation
	}
	b.remember(inst, repo)
	if d.Event == "repository" {
		// renamed, transferred: remembered under the new name (by id), so
		// the sweep calls GitHub with it; a session's state follows at its
		// next reconcile.
		return fmt.Errorf("delivery %s (repository.%s): %w: %s remembered", d.ID, d.Action, ErrIgnored, repo)
	}
	if rl, ok := b.held(inst); ok {
		// Not applied: the first reconcile after the reset reads GitHub.
		return fmt.Errorf("delivery %s (%s): %w", d.ID, d.Event, &stillWaiting{rl: rl})
	}
	it, err := translator{login: b.o.Login, startLabel: b.o.StartLabel}.translate(d, p)
	if err != nil {
		return fmt.Errorf("delivery %s (%s.%s): %w", d.ID, d.Event, p.Action, err)
	}
	gh, err := b.o.Client(ctx, inst)
	if err != nil {
		return fmt.Errorf("delivery %s: client for installation %d: %w", d.ID, inst, err)
	}
	ref := sessionRef{inst: inst, repo: repo, issue: it.issue}
	defer func() { err = b.limited(ctx, gh, ref, err) }()
	if err := b.resolve(ctx, gh, &it, &ref); err != nil {
		return fmt.Errorf("delivery %s (%s.%s): %w", d.ID, d.Event, p.Action, err)
	}
	if it.actor != nil {
		ok, err := b.authorised(ctx, gh, repo, *it.actor)
		if err != nil {
			return fmt.Errorf("delivery %s: %w", d.ID, err)
		}
		if !ok {
			if it.refuse {
				if err := b.refuse(ctx, gh, inst, repo, replyNumber(ref, it.in), it.actor.Login); err != nil {
					return fmt.Errorf("delivery %s: refusal: %w", d.ID, err)
				}
			}
			return fmt.Errorf("delivery %s (%s.%s): %w: %s has no write access", d.ID, d.Event, p.Action, ErrIgnored, it.actor.Login)
		}
	}
	if it.help != "" {
		if err := b.replyOnce(ctx, gh, repo, replyNumber(ref, it.in), it.in.delivery, it.help); err != nil {
			return fmt.Errorf("delivery %s: help: %w", d.ID, err)
		}
		return nil
	}
	return b.drive(ctx, gh, ref, it.in)
}

// resolve names the session of an intent that the payload alone could not:
// a command on a PR (the group PR's head branch) or a failed job (its run's
// title). Every event then carries the session's id.
func (b *Bot) resolve(ctx context.Context, gh GitHub, it *intent, ref *sessionRef) error {
	if it.label != nil {
		// Label toggles coalesce: an event whose change a later toggle has
		// undone is not applied (the later one's delivery follows), so a
		// burst of toggles costs one acknowledgement, not one per toggle.
		is, err := gh.GetIssue(ctx, ref.repo, ref.issue)
		if err != nil {
			return err
		}
		has := false
		for _, l := range is.Labels {
			has = has || strings.EqualFold(l, it.label.name)
		}
		if has != it.label.added {
			return ignored("the %s label was changed again since", it.label.name)
		}
		it.in.labels = map[int][]string{ref.issue: is.Labels}
	}
	switch {
	case it.viaPR != 0:
		pr, err := gh.GetPR(ctx, ref.repo, it.viaPR)
		if err != nil {
			return err
		}
		n, group, ok := parseBranch(pr.Head)
		if !ok {
			return ignored("a pull request that is not a bazinga group PR")
		}
		if !strings.EqualFold(pr.HeadRepo, ref.repo.String()) {
			return ignored("PR #%d comes from another repository", pr.Number)
		}
		ref.issue, it.in.pr = n, &prRef{number: pr.Number, group: group}
	case it.viaRun != 0:
		run, err := gh.GetRun(ctx, ref.repo, it.viaRun)
		if err != nil {
			return err
		}
		failed, err := failedStep(run.Title, it.conclusion)
		if err != nil {
			return err
		}
		it.in.fail, ref.issue = failed.in.fail, failed.issue
		it.in.run = &runRef{path: run.Path, event: run.Event, actor: run.Actor}
	}
	session := strconv.Itoa(ref.issue)
	for i := range it.in.events {
		it.in.events[i].Session = session
	}
	for i := range it.in.record {
		it.in.record[i].Session = session
	}
	return nil
}

// authorised reports whether u may drive sessions: write, maintain or admin
// on the repository. Bots never are.
func (b *Bot) authorised(ctx context.Context, gh GitHub, repo ghapi.RepoRef, u hookUser) (bool, error) {
	if u.isBot() {
		return false, nil
	}
	role, err := gh.GetPermission(ctx, repo, u.Login)
	if errors.Is(err, ghapi.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch role {
	case "admin", "maintain", "write":
		return true, nil
	}
	return false, nil
}

// untrustedJobNotice tells the session, once per author, that a result for
// a step in flight came from a bot the configuration does not name as the
// job identity: the usual cause is step jobs acting as an App (a token
// exchange, an App token, a PAT) while github.job_identity still names
// github-actions[bot]. Without it the step would only time out. People's
// accounts cannot end in [bot], so only an installed App can cause it.
func (b *Bot) untrustedJobNotice(ctx context.Context, gh GitHub, ref sessionRef, st *codec.State, r *resultIn) error {
	if !strings.HasSuffix(strings.ToLower(r.author), "[bot]") {
		return nil
	}
	if step := st.Session.Step(r.rec.Step); step == nil || step.State != pipeline.StepInFlight {
		return nil
	}
	text := untrustedJobText(r.author, st.Config.GitHub.JobIdentity)
	cs, err := gh.ListComments(ctx, ref.repo, ref.issue)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if b.own(c.Author) && c.Body == text {
			return nil
		}
	}
	_, err = gh.CreateComment(ctx, ref.repo, ref.issue, text)
	return err
}

func untrustedJobText(author, job string) string {
	if job == "" {
		job = pipeline.DefaultConfig().GitHub.JobIdentity
	}
	return fmt.Sprintf("⚠️ A step result was posted by `%s`, but results are taken only from the orchestrator and "+
		"`github.job_identity` (`%s`), so it was ignored and the step will time out. If your step jobs act as `%s` "+
		"(a token exchange, an App token or a PAT), set `github.job_identity: %s` in `.github/bazinga.yml`.",
		codec.OneLine(author), codec.OneLine(job), codec.OneLine(author), codec.OneLine(author))
}

func replyNumber(ref sessionRef, in input) int {
	if in.replyTo != 0 {
		return in.replyTo
	}
	return ref.issue
}

// drive is one session's reconcile, in the phases of a turn: admit the
// input (load the session, turn the input into engine events), decide
// (Reconcile on the whole state), settle (the outbox and the gateway
// brought up to date with the decision), narrate (what GitHub will show:
// replies, effects, views), commit (the state with its outbox in one
// tracking-comment write, then the outbox carried out).
func (b *Bot) drive(ctx context.Context, gh GitHub, ref sessionRef, in input) error {
	unlock := b.lock(ref.key())
	defer unlock()
	t, err := b.admit(ctx, gh, ref, in)
	if t == nil {
		return err
	}
	b.decide(ctx, t)
	b.settle(ctx, t)
	b.narrate(ctx, t)
	return b.commit(ctx, t)
}

// turn is one reconcile of one session as it goes through drive's phases.
type turn struct {
	gh      GitHub
	ref     sessionRef
	in      input
	log     *slog.Logger
	session string // the session's id (the issue number)

	// admit's: the session as loaded and the state the turn works on.
	ld loaded
	st codec.State
	// events go to the engine; record is what the event log keeps of them
	// for a rebuild; lines are the reply's lines.
	events, record []pipeline.Event
	lines          []string

	// decide's.
	x          *executor
	now        time.Time
	prev, next pipeline.Session
	actions    []pipeline.Action
}

// admit loads the session and turns the input into the engine's events:
// the delivery's own, those GitHub shows and no delivery brought (branches
// deleted or renamed, approvals missed, pushes behind reviews), accepted
// results and failure reports. It reads GitHub. It writes only what needs
// no state: the answer to a command where there is no session, a bad
// configuration's report, the stop of a transferred issue, and the branch
// restores a retry asks for (safe to repeat). It returns no turn when the
// input ends here: handled, or ignored (an error wrapping ErrIgnored).
func (b *Bot) admit(ctx context.Context, gh GitHub, ref sessionRef, in input) (*turn, error) {
	t, err := b.admitSession(ctx, gh, ref, in)
	if t == nil {
		return nil, err
	}
	if ended, err := b.admitStart(ctx, t); ended {
		return nil, err
	}
	if err := b.admitObserved(ctx, t); err != nil {
		return nil, err
	}
	if err := b.admitReports(ctx, t); err != nil {
		return nil, err
	}
	// The steps whose result or failure is admitted have ended: their
	// gateway tokens go, and the gateway's figure replaces the usage their
	// jobs reported (before the ledger is read for it). A resume may have
	// raised the cost limits in the file.
	b.stepsEnded(ctx, t.ref, t.session, t.events, nil, nil)
	b.metered(ctx, t.ref, t.session, t.events)
	b.refreshCostLimits(ctx, t.gh, t.ref, &t.st, t.events, t.log)
	return t, nil
}

// admitSession loads the session under the repository's current name, marks
// what the delivery's reconcile already applied, and ends a wait on GitHub
// (rate limit, outage) with the time held. A transferred issue's session is
// stopped here, and a comment whose commands were applied is ignored.
func (b *Bot) admitSession(ctx context.Context, gh GitHub, ref sessionRef, in input) (*turn, error) {
	log := b.log.With("delivery", in.delivery, "repo", ref.repo.String(), "issue", ref.issue)
	session := strconv.Itoa(ref.issue)

	if in.transferred != nil {
		return nil, b.stopTransferred(ctx, gh, ref, *in.transferred, in.transferredBy)
	}
	ld, err := b.load(ctx, gh, ref, in.commentID)
	var gone *issueTransferredError
	if errors.As(err, &gone) {
		return nil, b.stopTransferred(ctx, gh, ref, gone.to, "")
	}
	if err != nil {
		return nil, fmt.Errorf("load session %s: %w", ref.key(), err)
	}
	moved := ""
	if ld.found && ref.repo.ID != 0 && ld.st.Repo != "" && !strings.EqualFold(ld.st.Repo, ref.repo.String()) {
		// The state and the delivery name the repository differently: a
		// rename or transfer, and deliveries sent before it arrive after
		// it. GitHub says which name is current; calls use it.
		cur, err := gh.RepoByID(ctx, ref.repo.ID)
		if err != nil {
			return nil, fmt.Errorf("%s: the repository's current name: %w", ref.key(), err)
		}
		ref.repo = cur
		b.remember(ref.inst, cur)
	}
	if line := movedRepo(&ld.st, ref.repo); line != "" {
		log.Info("the repository was renamed or transferred; the state is written under its new name", "to", ref.repo.String())
		moved = line
	}
	if in, err = b.applied(ctx, gh, ref, ld, in); err != nil {
		return nil, fmt.Errorf("%s: %w", ref.key(), err)
	}
	wait := ld.st.Waiting
	resumed, err := b.checkWait(&ld.st, ref)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref.key(), err)
	}
	if ld.st.Commands.Seen(in.cmdComment) {
		return nil, fmt.Errorf("%s: %w: comment %d's commands were already applied", ref.key(), ErrIgnored, in.cmdComment)
	}
	t := &turn{gh: gh, ref: ref, in: in, log: log, session: session, ld: ld, st: ld.st,
		events: append([]pipeline.Event(nil), in.events...),
		record: append([]pipeline.Event(nil), in.record...),
		lines:  append([]string(nil), in.replies...)}
	if resumed != "" {
		t.lines = append(t.lines, resumed)
		if now := b.o.Now().UTC(); wait != nil && !wait.Since.IsZero() && now.After(wait.Since) {
			// Nothing was read or dispatched while the session waited:
			// its steps in flight do not time out for the wait.
			held := pipeline.Held(session, wait.Since, now)
			t.events = append(t.events, held)
			t.record = append(t.record, held)
		}
	}
	if moved != "" {
		t.lines = append(t.lines, moved)
	}
	return t, nil
}

// admitStart starts a session the input asks for (a label, a resume of an
// ended one) or refuses what needs a session where there is none; an edited
// issue is acknowledged, and a command bound to a checkpoint. ended says the
// input ends here (err nil when it was handled, ErrIgnored when ignored).
func (b *Bot) admitStart(ctx context.Context, t *turn) (ended bool, err error) {
	ref, in, gh := t.ref, t.in, t.gh
	switch {
	case !t.ld.found && in.start == nil:
		if in.command {
			err := b.replyOnce(ctx, gh, ref.repo, replyNumber(ref, in), in.delivery,
				"There is no bazinga session here. Label the issue `"+b.o.StartLabel+"` to start one.")
			if err != nil {
				return true, err
			}
		}
		return true, fmt.Errorf("%s: %w: no session", ref.key(), ErrIgnored)
	case !t.ld.found:
		cfg, err := b.readConfig(ctx, gh, ref.repo, in.start.base)
		var ce *configError
		if errors.As(err, &ce) {
			cerr := b.replyOnce(ctx, gh, ref.repo, ref.issue, in.delivery, renderConfigError(b.o.ConfigPath, ce.err))
			if cerr != nil {
				return true, cerr
			}
			t.log.Info("session not started: bad configuration", "err", ce.err)
			return true, nil
		}
		if err != nil {
			return true, err
		}
		t.st = codec.State{V: codec.StateVersion, Repo: ref.repo.String(), RepoID: ref.repo.ID, Issue: ref.issue, Config: cfg, RepoURL: in.start.repoURL}
		// The requirements as they were when the label was added: the first
		// bot comment records them, and a rebuild replays them, not the
		// issue body as edited since.
		t.events = []pipeline.Event{startEvent(t.session, in.start.title, in.start.body, in.start.base)}
		t.record = append([]pipeline.Event(nil), t.events...)
		t.lines = append(t.lines, "🚀 **Session started** | the pm plans the work")
	case in.start != nil:
		switch t.st.Session.Status {
		case pipeline.SessionPaused, pipeline.SessionStopped, pipeline.SessionFailed:
			t.record = append(t.record, t.events...)
		default:
			return true, fmt.Errorf("%s: %w: the session is already %s", ref.key(), ErrIgnored, t.st.Session.Status)
		}
	}
	if in.edited != "" {
		text := b.editedReply(t.ld, in.edited)
		if text == "" {
			return true, fmt.Errorf("%s: %w: issue edit already acknowledged, or no session at work", ref.key(), ErrIgnored)
		}
		t.lines = append(t.lines, text)
	}
	if err := b.bound(t.st, in); err != nil {
		return true, fmt.Errorf("%s: %w", ref.key(), err)
	}
	bindCheckpoint(t.st.Session, in, b.o.Now(), t.events, t.record)
	return false, nil
}

// admitObserved adds what GitHub shows and no delivery brought: approvals
// whose reconcile never ran (a sweep), pushes behind reviews, deleted or
// renamed branches and base; branches a retry asks back are restored. A
// merge bazinga made itself is reported by its merge step, not as a human
// closing the PR.
func (b *Bot) admitObserved(ctx context.Context, t *turn) error {
	ref, in, gh, st, log := t.ref, t.in, t.gh, t.st, t.log
	kept := t.events[:0]
	for _, ev := range t.events {
		if ev.Kind == pipeline.EventPRClosed && ev.Merged && b.ownMerge(ev.Actor, st.Config) {
			continue
		}
		kept = append(kept, ev)
	}
	if len(kept) == 0 && len(t.events) > 0 && in.start == nil {
		return fmt.Errorf("%s: %w: bazinga's own merge", ref.key(), ErrIgnored)
	}
	if in.delivery == "sweep" {
		// A catch-up: approvals whose reconcile never ran (issue 22).
		kept = append(b.missedApprovals(ctx, gh, ref, st, log), kept...)
	}
	events := pushesBehindReviews(ctx, gh, ref, st.Session, kept, log)
	events = branchesGone(ctx, gh, ref, st.Session, events, log)
	events = baseRenames(ctx, gh, ref, st.Session, events, log)
	events, err := baseGone(ctx, gh, ref, st, events, log)
	if err != nil {
		return fmt.Errorf("%s: %w", ref.key(), err)
	}
	for _, ev := range events {
		if ev.Kind == pipeline.EventBaseRenamed {
			t.record = append(t.record, ev) // a rebuild replays the rename the bot saw
		}
	}
	var restored []string
	t.events, restored = restoreBranches(ctx, gh, ref, &t.st, events)
	t.lines = append(t.lines, restored...)
	return nil
}

// admitReports admits the step results the input carries (each checked:
// its author, its step in flight, its hand-over) and a job's failure
// report from a trusted author for a step in flight (or its late usage).
func (b *Bot) admitReports(ctx context.Context, t *turn) error {
	ref, in := t.ref, t.in
	if in.result != nil {
		accepted := 0
		for i := -1; i < len(in.more); i++ {
			one := in
			if i >= 0 {
				one.result = &in.more[i]
			}
			ev, ok, err := b.checkResult(ctx, t.gh, ref, &t.ld, one)
			if err != nil {
				return err
			}
			if ok {
				t.st = t.ld.st
				t.events = append(t.events, ev)
				accepted++
			}
		}
		if accepted == 0 {
			return fmt.Errorf("%s: %w: result for step %s not accepted", ref.key(), ErrIgnored, in.result.rec.Step)
		}
	}
	if in.fail != nil {
		if in.failAuthor != "" && !b.trustedResultAuthor(in.failAuthor, t.st.Config) {
			return fmt.Errorf("%s: %w: a failure report by %s, who is not trusted", ref.key(), ErrIgnored, in.failAuthor)
		}
		if _, ok := matchInFlight(t.st.Session, in.fail.Step, false); !ok && !lateUsage(t.st.Session, in.fail.Step, in.fail.Usage) {
			return fmt.Errorf("%s: %w: step %s is not in flight", ref.key(), ErrIgnored, in.fail.Step)
		}
		t.events = append(t.events, *in.fail)
		t.record = append(t.record, *in.fail)
	}
	return nil
}

// decide runs the engine on the whole state: pipeline.Reconcile of the
// session and the admitted events. A merge about to be sent, or a wait on
// required checks, needs the group PR head's checks: decide reads them and
// reconciles again with them (the engine is pure; the first pass is only a
// preview). Those reads are its only calls to GitHub; it writes nothing.
func (b *Bot) decide(ctx context.Context, t *turn) {
	t.now = b.o.Now().UTC()
	t.x = &executor{b: b, gh: t.gh, ref: t.ref, st: &t.st, in: t.in, now: t.now, log: t.log, comments: map[int][]ghapi.Comment{}}
	if t.ld.found {
		t.x.comments[t.ref.issue] = t.ld.comments
	}
	t.prev = t.st.Session
	t.next, t.actions = pipeline.Reconcile(t.prev, t.events, t.now, t.st.Config)
	if evs := t.x.checkEvents(ctx, t.next, t.actions); len(evs) > 0 {
		t.events = append(t.events, evs...)
		t.next, t.actions = pipeline.Reconcile(t.prev, t.events, t.now, t.st.Config)
		// A rebuild replays them: a failure sent the group back.
		t.record = append(t.record, evs...)
		t.lines = append(t.lines, checksLines(t.prev, t.next, evs)...)
	}
	if err := pipeline.CheckLiveness(t.next, t.st.Config); err != nil {
		t.log.Error("liveness invariant violated", "err", err, "rev", t.next.Rev)
	}
	t.st.Session = t.next
}

// settle brings what earlier turns left behind up to date with the
// decision, before narrate adds to it: the gateway tokens of the steps the
// decision ended go (Options.StepEnded), and the outbox drops what GitHub
// shows done or what no longer matters (like the dispatch of a step whose
// result just came); a rebuilt session's steps in flight that no run works
// on are enqueued again. It reads GitHub and writes nothing to it.
func (b *Bot) settle(ctx context.Context, t *turn) {
	b.stepsEnded(ctx, t.ref, t.session, nil, &t.prev, &t.next)
	t.x.confirm(ctx)
	if t.ld.rebuilt {
		t.x.redispatch(ctx, t.prev)
	}
}

// narrate turns the decision into what GitHub will show: the reply's
// lines (failures, timeouts, notices, pauses, the status), the record a
// rebuild replays, and the effects in the outbox (the reply, dispatches,
// cancels, the issue's label and state, reviews of findings). It changes
// the session only in its views. It writes to GitHub only the group PRs
// the dispatched jobs need (opened, or their texts edited), ahead of the
// state; everything else waits in the outbox for commit.
func (b *Bot) narrate(ctx context.Context, t *turn) {
	prev, next, x := t.prev, t.next, t.x
	// What happened that only the bot knows: failures and timeouts.
	timedOut := false
	for _, s := range next.Steps {
		old := prev.Step(s.ID)
		if old == nil || old.State != pipeline.StepInFlight || s.State != pipeline.StepFailed {
			continue
		}
		t.lines = append(t.lines, fmt.Sprintf("⚠️ Step `%s` ended without a result (%s) → %s", s.ID, codec.OneLine(s.Note), s.Routed))
		if t.in.fail == nil || t.in.fail.Step != s.ID {
			timedOut = true
		}
	}
	if prev.Clarification != nil && next.Clarification == nil && !hasCommand(t.events, pipeline.CommandAnswer) {
		timedOut = true
	}
	if timedOut {
		t.record = append(t.record, pipeline.Tick(t.session))
	}
	for _, a := range t.actions {
		switch a.Kind {
		case pipeline.ActionNotify:
			t.lines = append(t.lines, renderNotice(a.Notice, a.Text))
		case pipeline.ActionPause:
			t.lines = append(t.lines, "⏸️ **Paused** | "+codec.OneLine(a.Text)+" → `/bazinga resume` to continue")
		case pipeline.ActionComplete:
			if a.Status != pipeline.SessionDone {
				t.lines = append(t.lines, fmt.Sprintf("%s **Session %s** | %s → `/bazinga resume` to continue", statusIcons[a.Status], a.Status, codec.OneLine(a.Text)))
			}
		case pipeline.ActionDispatch:
			x.enqueue(codec.PendingEffect{ID: a.ID, Kind: codec.EffectDispatch, Step: a.Step, Group: a.Group})
		case pipeline.ActionCancel:
			x.enqueue(codec.PendingEffect{ID: a.ID, Kind: codec.EffectCancel, Step: a.Step, Group: a.Group})
		case pipeline.ActionReport:
			t.log.Debug("engine report", "text", a.Text)
		}
	}
	if t.in.status {
		t.lines = append(t.lines, renderTracking(&t.st, t.st.RepoURL, 10, ""))
	}
	if len(t.lines) == 0 && next.Rev == prev.Rev && t.in.start == nil {
		// Events that changed nothing need no record for a rebuild either:
		// a repeated pause costs no comment.
		t.record = nil
	}
	if len(t.lines) > 0 || len(t.record) > 0 {
		var er *codec.EventRecord
		if len(t.record) > 0 {
			er = &codec.EventRecord{At: t.now, Events: t.record}
		}
		if len(t.lines) == 0 {
			t.lines = append(t.lines, "ℹ️ Session updated.")
		}
		x.enqueue(codec.PendingEffect{ID: fmt.Sprintf("comment/%s/%d/%s", t.session, next.Rev, t.in.delivery),
			Kind: codec.EffectComment, Number: replyNumber(t.ref, t.in), Text: renderBotComment(t.lines, er)})
	}

	// The views first (the dispatched jobs need their group branch), then
	// the issue's label and state behind the outbox's comments.
	if hasCommand(t.events, pipeline.CommandResume) {
		// A resume tries again what was found pointless or refused (a
		// branch without commits; a PR GitHub refused because the
		// repository does not let Actions open PRs): the human may have
		// fixed it, and a merge about to be dispatched needs the PR.
		for i := range t.st.PRs {
			t.st.PRs[i].Tried = false
		}
	}
	x.groupViews(ctx)
	x.issueViews()
	// Findings as PR reviews (issue 26), once the group PRs exist.
	for _, e := range reviewsToPost(prev, next, &t.st) {
		x.enqueue(e)
	}
}

// commit writes the state with its outbox in one write of the tracking
// comment, and only then carries the outbox out: an effect is never done
// before the state that owes it is on GitHub. A state too large for a
// comment pauses the session instead (issue 27). What the write or the
// effects leave undone is returned; the next event or sweep retries it.
func (b *Bot) commit(ctx context.Context, t *turn) error {
	x, next, log := t.x, t.next, t.log
	markCommands(&t.st, t.ld.comments, t.in)
	body, err := fitTracking(t.st, t.st.RepoURL, b.o.SigningKey)
	if tooLarge := (*errStateTooLarge)(nil); errors.As(err, &tooLarge) {
		return b.pauseTooLarge(ctx, t.gh, t.ref, t.ld, t.in, tooLarge, t.now, log) // issue 27
	}
	if err != nil {
		return errors.Join(append(x.errs, err)...)
	}
	commentID, err := x.write(ctx, t.ld, body)
	if err != nil {
		x.errs = append(x.errs, err)
		err := errors.Join(x.errs...)
		log.Warn("the state was not written; its effects wait for the next event or sweep", "err", err, "rev", next.Rev)
		return err
	}
	x.carryOut(ctx)
	x.recordFailures(ctx, commentID, b.o.SigningKey)
	if len(x.errs) > 0 {
		err := errors.Join(x.errs...)
		log.Warn("reconcile left effects undone; the next event or sweep carries them out", "err", err, "rev", next.Rev)
		return err
	}
	log.Debug("reconciled", "rev", next.Rev, "status", next.Status.String(), "actions", len(t.actions))
	return nil
}

// bound checks that what a delivery reports is the session's: a pull
// request event must be about the group's recorded PR (another PR whose head
// branch has the group's name — a fork's, a second PR — is not), and a
// failed run must be a workflow_dispatch run of the configured agent
// workflow (any other workflow can be given a step id as its title) that
// the orchestrator itself dispatched (a writer can dispatch the agent
// workflow by hand with any step as its input).
func (b *Bot) bound(st codec.State, in input) error {
	if in.pr != nil {
		if recorded := st.PRNumber(in.pr.group); recorded == 0 || recorded != in.pr.number {
			return ignored("PR #%d is not group %s's pull request", in.pr.number, in.pr.group)
		}
	}
	if in.run != nil {
		wf := st.Config.GitHub.AgentWorkflow
		if wf == "" {
			wf = pipeline.DefaultConfig().GitHub.AgentWorkflow
		}
		if path.Base(in.run.path) != wf || in.run.event != "workflow_dispatch" {
			return ignored("a %s run of %s, not a dispatched run of %s", in.run.event, in.run.path, wf)
		}
		if !b.own(in.run.actor) {
			return ignored("a run of %s dispatched by %q, not by %s", wf, in.run.actor, b.o.Login)
		}
	}
	return nil
}

// bindCheckpoint binds the approve, resume and answer commands of a comment to the
// checkpoint that waited when the comment was written (issue 13), in the
// events applied now and in those recorded for a rebuild alike: an approval
// written about plan-1 never approves plan-2, which the pm made after it,
// and the replay decides as the live reconcile did. A command that names
// its checkpoint keeps it.
func bindCheckpoint(s pipeline.Session, in input, now time.Time, lists ...[]pipeline.Event) {
	if !in.command {
		return
	}
	at := in.written
	if at.IsZero() {
		at = now
	}
	id, question := s.CheckpointAt(at), s.QuestionAt(at)
	if !in.written.IsZero() && in.written.Nanosecond() == 0 {
		// GitHub's timestamps have whole seconds: a comment stamped 12:00:00
		// may have been written at 12:00:00.9, after a checkpoint (or
		// question) that opened at 12:00:00.4 by the orchestrator's clock.
		// Only when nothing was open at the start of that second does the
		// rest of it count (issue 22).
		end := at.Add(time.Second - time.Nanosecond)
		if id == pipeline.NoCheckpoint {
			id = s.CheckpointAt(end)
		}
		if question == pipeline.NoQuestion {
			question = s.QuestionAt(end)
		}
	}
	for _, evs := range lists {
		for i := range evs {
			c := evs[i].Command
			if evs[i].Kind == pipeline.EventCommand && c != nil && c.Kind == pipeline.CommandAnswer && c.Checkpoint == "" && c.Question == "" {
				// An answer is bound likewise (issue 23): to the question, or the
				// plan its author could see, never to one asked or made later.
				bound := *c
				bound.Checkpoint, bound.Question = id, question
				evs[i].Command = &bound
				continue
			}
			if evs[i].Kind != pipeline.EventCommand || c == nil || c.Checkpoint != "" {
				continue
			}
			// A resume binds only when a checkpoint waited: otherwise it is a plain resume.
			if c.Kind == pipeline.CommandApprove || c.Kind == pipeline.CommandResume && id != pipeline.NoCheckpoint {
				bound := *c
				bound.Checkpoint = id
				evs[i].Command = &bound
			}
		}
	}
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
		if err := b.untrustedJobNotice(ctx, gh, ref, st, r); err != nil {
			return pipeline.Event{}, false, err
		}
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
	rebuilt, ok, err := b.rebuild(ctx, gh, ref, ld.comments, in.commentID)
	if err != nil || !ok {
		return pipeline.Event{}, false, err
	}
	b.log.Warn("state was behind its log; rebuilt", "delivery", in.delivery, "repo", ref.repo.String(), "issue", ref.issue, "step", r.rec.Step)
	rebuilt.RepoURL = st.RepoURL
	ld.st, ld.rebuilt = rebuilt, true
	ev, ok := resultEvent(rebuilt.Session, r.rec, false)
	return ev, ok, nil
}

// renderConfigError is the comment on a bad configuration file.
func renderConfigError(path string, err error) string {
	var b strings.Builder
	b.WriteString("❌ **bazinga did not start** | `" + path + "` has problems | fix them, then label the issue again\n\n")
	var ce *config.ConfigError
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

// metered puts the gateway's figure on the results and failures of steps it metered, in place of what their jobs
// reported: the agent's job can write anything in its hand-over.
func (b *Bot) metered(ctx context.Context, ref sessionRef, session string, events []pipeline.Event) {
	if b.o.Meter == nil {
		return
	}
	for i, ev := range events {
		if ev.Kind != pipeline.EventStepResult && ev.Kind != pipeline.EventStepFailed {
			continue
		}
		if u, ok := b.o.Meter.StepUsage(ctx, ref.inst, ref.repo.String(), session, ev.Step); ok {
			events[i].Usage = &u
		}
	}
}
