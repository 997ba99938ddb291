package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// loaded is a session's state as load found it.
type loaded struct {
	st        codec.State
	found     bool
	commentID int64  // the tracking comment (0: none yet)
	body      string // its body as read
	rebuilt   bool
	// comments are the issue's comments as read.
	comments []ghapi.Comment
}

// load reads the session's state from the issue's comments: the newest
// tracking comment the bot wrote that verifies, else a rebuild from the
// log; found is false when the issue has no session. Nothing is kept
// between deliveries: GitHub holds the state, and an unchanged list is a
// free 304.
func (b *Bot) load(ctx context.Context, gh GitHub, ref sessionRef, exclude int64) (loaded, error) {
	comments, err := gh.ListComments(ctx, ref.repo, ref.issue)
	if err := checkTransferred(ctx, gh, ref, comments, err); err != nil {
		return loaded{}, err
	}
	best := loaded{comments: comments}
	var forged bool
	for _, c := range comments {
		if !strings.Contains(c.Body, codec.StateMarker) {
			continue
		}
		if !b.own(c.Author) {
			b.log.Warn("ignoring a state block not written by the bot", "repo", ref.repo.String(), "issue", ref.issue, "author", c.Author, "comment", c.ID)
			continue
		}
		st, err := codec.DecodeState(c.Body, b.publicKey(), b.o.PreviousKeys...)
		if err != nil || st.Issue != ref.issue || !st.Of(ref.repo) {
			b.log.Warn("ignoring a tracking comment that does not verify", "repo", ref.repo.String(), "issue", ref.issue, "comment", c.ID, "err", err)
			forged = true
			if best.commentID == 0 {
				best.commentID, best.body = c.ID, c.Body
			}
			continue
		}
		if !best.found || st.Session.Rev > best.st.Session.Rev {
			best = loaded{st: st, found: true, commentID: c.ID, body: c.Body, comments: comments}
		}
	}
	if best.found {
		// A signed state older than its own log (an old tracking comment
		// restored, or a newer one deleted) is not the session: rebuild.
		old, rev, seq, err := b.rolledBack(ctx, gh, ref, best.st, comments)
		if err != nil {
			return loaded{}, err
		}
		if old {
			b.log.Warn("the tracking comment is older than the session's log; rebuilding", "repo", ref.repo.String(), "issue", ref.issue,
				"rev", best.st.Session.Rev, "log_rev", rev, "step_seq", best.st.Session.StepSeq, "log_step", seq)
			forged, best.found = true, false
		} else {
			return best, nil
		}
	}
	if !forged && !hasLog(comments, b.o.Login) {
		return best, nil
	}
	st, ok, err := b.rebuild(ctx, gh, ref, comments, exclude)
	if err != nil {
		return loaded{}, fmt.Errorf("rebuild session %s: %w", ref.key(), err)
	}
	if !ok {
		return best, nil
	}
	b.log.Warn("session rebuilt from its log", "repo", ref.repo.String(), "issue", ref.issue, "rev", st.Session.Rev, "steps", len(st.Session.Steps))
	best.st, best.found, best.rebuilt = st, true, true
	return best, nil
}

// logFloor is what the session's log on the issue proves it reached: the
// highest revision the bot's own comments were posted at (their effect
// markers name it) and the highest step number of a trusted result there.
func (b *Bot) logFloor(comments []ghapi.Comment, ref sessionRef) (rev, seq int) {
	prefix := codec.EffectPrefix + "comment/" + strconv.Itoa(ref.issue) + "/"
	for _, c := range comments {
		if b.own(c.Author) {
			if _, rest, ok := strings.Cut(c.Body, prefix); ok {
				num, _, _ := strings.Cut(rest, "/")
				if n, err := strconv.Atoi(num); err == nil && n > rev {
					rev = n
				}
			}
			continue
		}
		if rec, ok := codec.ParseResultComment(c.Body); ok && b.trustedResultAuthor(c.Author, pipeline.DefaultConfig()) {
			if sr, ok := codec.ParseStepID(rec.Step); ok && issueOfStep(sr) == ref.issue && sr.N > seq {
				seq = sr.N
			}
		}
	}
	return rev, seq
}

// own reports whether login is the bot itself.
func (b *Bot) own(login string) bool { return strings.EqualFold(login, b.o.Login) }

// hasLog reports whether the issue's comments show a session ever ran:
// a result comment or a bot comment with an event block.
func hasLog(comments []ghapi.Comment, login string) bool {
	for _, c := range comments {
		if strings.Contains(c.Body, codec.ResultMarker) || (strings.EqualFold(c.Author, login) && strings.Contains(c.Body, codec.EventMarker)) {
			return true
		}
	}
	return false
}

// logEntry is one entry of a session's log, replayed in time order.
type logEntry struct {
	at     time.Time
	order  int64
	result *codec.ResultRecord
	events []pipeline.Event
}

// rebuild replays the session from its log: the start (issue title and
// body), then in time order the trusted result comments, the events the
// bot recorded in its own comments, and human reviews and PR closures read
// from the API. Reconcile is deterministic, so the replay routes as the
// live session did.
// exclude is the comment of the delivery being processed: it is applied
// live afterwards, so that its effects are carried out.
func (b *Bot) rebuild(ctx context.Context, gh GitHub, ref sessionRef, issueComments []ghapi.Comment, exclude int64) (codec.State, bool, error) {
	issue, err := gh.GetIssue(ctx, ref.repo, ref.issue)
	if err != nil {
		return codec.State{}, false, err
	}
	base, err := gh.DefaultBranch(ctx, ref.repo)
	if err != nil {
		return codec.State{}, false, err
	}
	cfg, cerr := b.readConfig(ctx, gh, ref.repo, base)
	if cerr != nil {
		return codec.State{}, false, cerr
	}
	prs, err := gh.ListPRs(ctx, ref.repo)
	if err != nil {
		return codec.State{}, false, err
	}
	st := codec.State{V: codec.StateVersion, Repo: ref.repo.String(), RepoID: ref.repo.ID, Issue: ref.issue, Config: cfg}
	var entries []logEntry
	addComments := func(cs []ghapi.Comment) {
		for _, c := range cs {
			if c.ID == exclude && exclude != 0 {
				continue
			}
			if rec, ok := codec.ParseResultComment(c.Body); ok && b.trustedResultAuthor(c.Author, cfg) {
				r := rec
				entries = append(entries, logEntry{at: c.CreatedAt, order: c.ID, result: &r})
				continue
			}
			if strings.EqualFold(c.Author, b.o.Login) {
				if er, ok := codec.ParseEventComment(c.Body); ok {
					entries = append(entries, logEntry{at: er.At, order: c.ID, events: er.Events})
				}
			}
		}
	}
	addComments(issueComments)
	session := strconv.Itoa(ref.issue)
	sort.Slice(prs, func(i, j int) bool { return prs[i].Number < prs[j].Number })
	for _, pr := range prs {
		n, group, ok := parseBranch(pr.Head)
		if !ok || n != ref.issue || !strings.EqualFold(pr.HeadRepo, ref.repo.String()) {
			continue // a fork's PR may carry a group branch's name
		}
		gp := st.PR(group)
		gp.Number, gp.Branch, gp.Tried = pr.Number, true, true
		cs, err := gh.ListComments(ctx, ref.repo, pr.Number)
		if err != nil {
			return codec.State{}, false, err
		}
		addComments(cs)
		reviews, err := gh.ListReviews(ctx, ref.repo, pr.Number)
		if err != nil {
			return codec.State{}, false, err
		}
		for _, rv := range reviews {
			var state pipeline.ReviewState
			switch strings.ToUpper(rv.State) {
			case "APPROVED":
				state = pipeline.ReviewApproved
			case "CHANGES_REQUESTED":
				state = pipeline.ReviewChangesRequested
			case "COMMENTED":
				state = pipeline.ReviewCommented
			case "DISMISSED":
				state = pipeline.ReviewDismissed
			default:
				continue
			}
			switch strings.ToUpper(rv.Association) {
			case "OWNER", "MEMBER", "COLLABORATOR":
			default:
				continue
			}
			if rv.AuthorType == "Bot" || strings.HasSuffix(rv.Author, "[bot]") {
				continue
			}
			entries = append(entries, logEntry{at: rv.SubmittedAt, order: rv.ID, events: []pipeline.Event{{Kind: pipeline.EventHumanReview,
				Session: session, Group: group, Actor: rv.Author, Review: state, Body: rv.Body, Commit: rv.CommitID}}})
		}
		if pr.State == "closed" {
			if pr.Merged && b.ownMerge(pr.MergedBy, cfg) {
				continue
			}
			at := pr.ClosedAt
			if pr.Merged && !pr.MergedAt.IsZero() {
				at = pr.MergedAt
			}
			ev := pipeline.Event{Kind: pipeline.EventPRClosed, Session: session, Group: group, Actor: pr.MergedBy, Merged: pr.Merged}
			if !pr.Merged {
				// Closed because its branch was deleted: the group waits to
				// be restored (branchesGone), as it did live.
				if _, err := gh.GetRef(ctx, ref.repo, "heads/"+pr.Head); errors.Is(err, ghapi.ErrNotFound) {
					ev = pipeline.BranchDeleted(session, group, pr.HeadSHA, "")
				}
			}
			entries = append(entries, logEntry{at: at, order: int64(pr.Number), events: []pipeline.Event{ev}})
		}
	}
	sort.SliceStable(entries, func(i, j int) bool {
		if !entries[i].at.Equal(entries[j].at) {
			return entries[i].at.Before(entries[j].at)
		}
		return entries[i].order < entries[j].order
	})
	known := stepsNamedInLog(entries)
	if runs, err := gh.ListRuns(ctx, ref.repo, agentWorkflow(cfg)); err == nil {
		for _, r := range runs {
			if _, sr, ok := codec.StepInText(r.Title); ok && issueOfStep(sr) == ref.issue {
				known = append(known, sr)
			}
		}
	} else {
		b.log.Info("rebuild: the step runs could not be read; results of one second replay in comment order", "repo", ref.repo.String(), "issue", ref.issue, "err", err)
	}
	orderTies(entries, known)
	t0 := b.o.Now().UTC()
	if len(entries) > 0 && entries[0].at.Before(t0) {
		t0 = entries[0].at
	}
	start := pipeline.Started(session, requirements(issue.Title, issue.Body), base)
	if rec, ok := recordedStart(entries); ok {
		start = rec
	}
	s, _ := pipeline.Reconcile(pipeline.Session{}, []pipeline.Event{start}, t0, cfg)
	for _, e := range entries {
		var evs []pipeline.Event
		if e.result != nil {
			if ev, ok := resultEvent(s, *e.result, true); ok {
				evs = append(evs, ev)
			}
		} else {
			for _, ev := range e.events {
				if ev.Kind == pipeline.EventStarted {
					continue // applied first
				}
				if ev.Kind == pipeline.EventStepFailed {
					if id, ok := matchInFlight(s, ev.Step, true); ok {
						ev.Step = id
					} else {
						continue
					}
				}
				evs = append(evs, ev)
			}
		}
		if len(evs) == 0 {
			continue
		}
		at := e.at
		if at.Before(s.UpdatedAt) {
			at = s.UpdatedAt
		}
		s, _ = pipeline.Reconcile(s, evs, at, cfg)
	}
	// The steps the replay started get the ids the live session gave them.
	if ids := liveIDs(s, known); len(ids) > 0 {
		if renumbered, err := pipeline.RenumberSteps(s, ids); err == nil {
			s = renumbered
		} else {
			b.log.Warn("rebuild: the steps keep the replay's numbering", "repo", ref.repo.String(), "issue", ref.issue, "err", err)
		}
	}
	st.Session = s
	// Views are written again: labels and PR texts are put right.
	for i := range st.PRs {
		st.PRs[i].BodyHash, st.PRs[i].Label = "", ""
	}
	return st, true, nil
}

// agentWorkflow is the workflow file the session's steps run in.
func agentWorkflow(cfg pipeline.Config) string {
	if wf := cfg.GitHub.AgentWorkflow; wf != "" {
		return wf
	}
	return pipeline.DefaultConfig().GitHub.AgentWorkflow
}

// stepsNamedInLog are the step ids the log's results name.
func stepsNamedInLog(entries []logEntry) []codec.StepRef {
	var out []codec.StepRef
	for _, e := range entries {
		if e.result != nil {
			if sr, ok := codec.ParseStepID(e.result.Step); ok {
				out = append(out, sr)
			}
		}
	}
	return out
}

// orderTies puts results logged in the same second (GitHub's timestamps
// have whole seconds) in the order the live session applied them, which
// their comments' order need not be: a result applied first started its
// group's next step first, so that step has the lower number. known are
// the step ids the log and the runs name; a result whose group's next
// step is not among them leaves that second in comment order. Other
// entries of that second keep their places.
func orderTies(entries []logEntry, known []codec.StepRef) {
	next := func(e logEntry) int {
		sr, ok := codec.ParseStepID(e.result.Step)
		if !ok {
			return 0
		}
		best := 0
		for _, k := range known {
			if k.Session == sr.Session && k.Group == sr.Group && k.N > sr.N && (best == 0 || k.N < best) {
				best = k.N
			}
		}
		return best
	}
	for lo := 0; lo < len(entries); {
		hi := lo + 1
		for hi < len(entries) && entries[hi].at.Equal(entries[lo].at) {
			hi++
		}
		var slots []int
		for i := lo; i < hi; i++ {
			if entries[i].result != nil {
				slots = append(slots, i)
			}
		}
		if len(slots) > 1 {
			rs := make([]logEntry, len(slots))
			keys := make([]int, len(slots))
			for k, i := range slots {
				rs[k], keys[k] = entries[i], next(entries[i])
			}
			idx := make([]int, len(slots))
			for k := range idx {
				idx[k] = k
			}
			if !slices.Contains(keys, 0) {
				sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
				for k, i := range slots {
					entries[i] = rs[idx[k]]
				}
			}
		}
		lo = hi
	}
}

// liveIDs pairs the steps of a replayed session with the ids the log names
// (results, run titles): within a group and role, the k-th step is the
// k-th named one, whatever order the replay numbered them in. Only pairs
// whose ids differ are returned.
func liveIDs(s pipeline.Session, known []codec.StepRef) map[string]string {
	type kind struct {
		group string
		role  pipeline.Role
	}
	named := map[kind][]int{}
	seen := map[string]bool{}
	session := s.ID
	for _, k := range known {
		id := pipeline.StepID(k.Session, k.Group, k.Role, k.N)
		if seen[id] || k.Session != session {
			continue
		}
		seen[id] = true
		named[kind{k.Group, k.Role}] = append(named[kind{k.Group, k.Role}], k.N)
	}
	for _, ns := range named {
		sort.Ints(ns)
	}
	out := map[string]string{}
	count := map[kind]int{}
	for _, st := range s.Steps {
		k := kind{st.Group, st.Role}
		i := count[k]
		count[k]++
		if ns := named[k]; i < len(ns) {
			if id := pipeline.StepID(session, st.Group, st.Role, ns[i]); id != st.ID {
				out[st.ID] = id
			}
		}
	}
	return out
}

// recordedStart is the start the bot recorded in its first comment (the
// requirements as they were when the session started), if any.
func recordedStart(entries []logEntry) (pipeline.Event, bool) {
	for _, e := range entries {
		for _, ev := range e.events {
			if ev.Kind == pipeline.EventStarted {
				return ev, true
			}
		}
	}
	return pipeline.Event{}, false
}

// requirements is what a session works on: the issue's title and body.
func requirements(title, body string) string {
	if strings.TrimSpace(body) == "" {
		return title
	}
	// Bounded as the session keeps them, so the recorded start (a comment)
	// fits too; the full text's size and hash are in it (issue 27).
	return pipeline.BoundRequirements(title + "\n\n" + body)
}

// trustedResultAuthor: the bot itself or the configured job identity.
func (b *Bot) trustedResultAuthor(login string, cfg pipeline.Config) bool {
	job := cfg.GitHub.JobIdentity
	if job == "" {
		job = pipeline.DefaultConfig().GitHub.JobIdentity
	}
	return strings.EqualFold(login, b.o.Login) || strings.EqualFold(login, job)
}

// ownMerge: a merge done by bazinga (the bot or a job), not a human.
func (b *Bot) ownMerge(login string, cfg pipeline.Config) bool {
	return login == "" || b.trustedResultAuthor(login, cfg)
}

// matchInFlight returns the step a result or failure applies to: the step
// itself when in flight, else (lenient, for a replay) the step in flight of
// the same group and role.
func matchInFlight(s pipeline.Session, id string, lenient bool) (string, bool) {
	if st := s.Step(id); st != nil && st.State == pipeline.StepInFlight {
		return id, true
	}
	if !lenient {
		return "", false
	}
	ref, ok := codec.ParseStepID(id)
	if !ok {
		return "", false
	}
	for _, st := range s.Steps {
		if st.State == pipeline.StepInFlight && st.Group == ref.Group && st.Role == ref.Role {
			return st.ID, true
		}
	}
	return "", false
}

// lateUsage reports whether a result or failure for a step no longer in
// flight (it timed out, or a retry cancelled it and the job ran on) carries
// usage the session has not counted: the engine counts it and applies
// nothing else (issue 23).
func lateUsage(s pipeline.Session, id string, u *pipeline.Usage) bool {
	st := s.Step(id)
	return st != nil && st.State != pipeline.StepInFlight && u != nil && st.Usage == nil
}

// resultEvent turns a result record into the engine's event, if its step
// (or, leniently, its group and role) is in flight, or if it is a late
// report of what a step cost.
func resultEvent(s pipeline.Session, rec codec.ResultRecord, lenient bool) (pipeline.Event, bool) {
	id, ok := matchInFlight(s, rec.Step, lenient)
	if !ok && !lateUsage(s, rec.Step, rec.Usage) {
		return pipeline.Event{}, false
	}
	if !ok {
		id = rec.Step
	}
	ev := pipeline.StepResult(s.ID, id, rec.Result)
	ev.Commit = rec.Head
	ev.Usage, ev.RunURL = rec.Usage, rec.RunURL
	ev.Harness = rec.Harness
	// The job's own timings: the engine corrects its size estimates with
	// them (issue 23).
	ev.StartedAt, ev.EndedAt = rec.StartedAt, rec.EndedAt
	return ev, true
}

// readConfig reads .github/bazinga.yml on ref; absent means the defaults.
func (b *Bot) readConfig(ctx context.Context, gh GitHub, repo ghapi.RepoRef, ref string) (pipeline.Config, error) {
	data, err := gh.GetFile(ctx, repo, b.o.ConfigPath, ref)
	if errors.Is(err, ghapi.ErrNotFound) {
		return b.defaults(), nil
	}
	if err != nil {
		return pipeline.Config{}, err
	}
	cfg, err := config.ParseConfig(data)
	if err != nil {
		return pipeline.Config{}, &configError{err: err}
	}
	return cfg, nil
}

// configError is a bad configuration file: a user-facing failure.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// ApplyLoggedResults reads back result comments of steps in flight and
// applies them, in one reconcile, oldest first. It is for the Action-only
// orchestrator: a result comment written with a workflow's GITHUB_TOKEN
// starts no workflow, so the session learns of it when the step's run
// completes (workflow_run) or on the schedule sweep. It returns how many
// results were applied. Results that are not trusted or no longer in
// flight are skipped exactly as when delivered by a webhook.
func (b *Bot) ApplyLoggedResults(ctx context.Context, installation int64, repo ghapi.RepoRef, issue int) (int, error) {
	gh, err := b.o.Client(ctx, installation)
	if err != nil {
		return 0, fmt.Errorf("client for installation %d: %w", installation, err)
	}
	ref := sessionRef{inst: installation, repo: repo, issue: issue}
	b.remember(installation, repo)
	return b.applyLoggedResults(ctx, gh, ref)
}

// applyLoggedResults applies the results of steps in flight that the
// session's comments hold in one reconcile, oldest first, then their
// failure reports, one reconcile each.
func (b *Bot) applyLoggedResults(ctx context.Context, gh GitHub, ref sessionRef) (int, error) {
	repo, issue := ref.repo, ref.issue
	unlock := b.lock(ref.key())
	ld, err := b.load(ctx, gh, ref, 0)
	unlock()
	if errors.As(err, new(*issueTransferredError)) {
		return 0, nil // the reconcile that follows stops the session
	}
	if err != nil {
		return 0, fmt.Errorf("load session %s: %w", ref.key(), err)
	}
	if !ld.found {
		return 0, nil
	}
	s := ld.st.Session
	inFlight := map[string]bool{}
	groups := map[string]bool{}
	for _, st := range s.Steps {
		if st.State == pipeline.StepInFlight {
			inFlight[st.ID] = true
			groups[st.Group] = true
		}
	}
	if len(inFlight) == 0 {
		return 0, nil
	}
	type found struct {
		c      ghapi.Comment
		rec    codec.ResultRecord
		fail   *codec.FailureRecord
		number int
	}
	var results []found
	scan := func(number int) error {
		cs, err := gh.ListComments(ctx, repo, number)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if rec, ok := codec.ParseResultComment(c.Body); ok && inFlight[rec.Step] {
				results = append(results, found{c: c, rec: rec, number: number})
			} else if fr, ok := codec.ParseFailureComment(c.Body); ok && inFlight[fr.Step] {
				results = append(results, found{c: c, fail: &fr, number: number})
			}
		}
		return nil
	}
	if err := scan(issue); err != nil {
		return 0, err
	}
	for _, g := range sortedKeys(groups) {
		if g == pipeline.LeadGroup {
			continue
		}
		n := ld.st.PRNumber(g)
		if n == 0 {
			grp := s.Group(g)
			if grp == nil {
				continue
			}
			pr, ok, err := gh.FindPR(ctx, repo, grp.Branch)
			if err != nil {
				return 0, err
			}
			if !ok {
				continue
			}
			n = pr.Number
		}
		if err := scan(n); err != nil {
			return 0, err
		}
	}
	sort.Slice(results, func(i, j int) bool { return results[i].c.ID < results[j].c.ID })
	applied := 0
	var errs []error
	apply := func(in input, n int) {
		err := b.drive(ctx, gh, ref, in)
		switch {
		case err == nil:
			applied += n
		case errors.Is(err, ErrIgnored):
		default:
			errs = append(errs, err)
		}
	}
	// The results in one reconcile, oldest first (see input.more); then
	// the failure reports, one each.
	var batch input
	n := 0
	for _, r := range results {
		if r.fail != nil {
			continue
		}
		res := resultIn{rec: r.rec, author: r.c.Author, number: r.number}
		if n == 0 {
			batch = input{delivery: "logged-result-" + strconv.FormatInt(r.c.ID, 10), commentID: r.c.ID, result: &res}
		} else {
			batch.more = append(batch.more, res)
		}
		n++
	}
	if n > 0 {
		apply(batch, n)
	}
	for _, r := range results {
		if r.fail == nil {
			continue
		}
		ev := r.fail.Event()
		apply(input{delivery: "logged-result-" + strconv.FormatInt(r.c.ID, 10), commentID: r.c.ID, fail: &ev, failAuthor: r.c.Author}, 1)
	}
	return applied, errors.Join(errs...)
}

// applyFailedRuns fails the steps in flight whose dispatched run ended
// without success: in Action-only mode no workflow_run event reports them
// (GitHub fires none for runs a GITHUB_TOKEN dispatch started), so the
// orchestrator reads the agent workflow's runs when it catches up.
func (b *Bot) applyFailedRuns(ctx context.Context, gh GitHub, ref sessionRef) error {
	unlock := b.lock(ref.key())
	ld, err := b.load(ctx, gh, ref, 0)
	unlock()
	if errors.As(err, new(*issueTransferredError)) {
		return nil
	}
	if err != nil || !ld.found {
		return err
	}
	inFlight := map[string]bool{}
	for _, st := range ld.st.Session.Steps {
		if st.State == pipeline.StepInFlight {
			inFlight[st.ID] = true
		}
	}
	if len(inFlight) == 0 {
		return nil
	}
	wf := agentWorkflow(ld.st.Config)
	runs, err := gh.ListRuns(ctx, ref.repo, wf)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range runs {
		step, _, ok := codec.StepInText(r.Title)
		if !ok || !inFlight[step] || r.Status != "completed" {
			continue
		}
		it, ferr := failedStep(r.Title, r.Conclusion)
		if ferr != nil {
			continue // succeeded, skipped or waiting for approval
		}
		inFlight[step] = false
		in := it.in
		in.delivery = "run-" + strconv.FormatInt(r.ID, 10)
		in.run = &runRef{path: r.Path, event: r.Event, actor: r.Actor}
		if r.Path == "" {
			in.run.path = ".github/workflows/" + wf // the list is of that workflow's runs
		}
		if err := b.drive(ctx, gh, ref, in); err != nil && !errors.Is(err, ErrIgnored) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
