package bot

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Required checks (merge.method pull-request, issue 11). GitHub merges a
// group PR only once its base's required checks passed on the PR head; the
// engine waits for them through EventChecks reports, which the bot reads
// here: for every group whose merge a reconcile is about to send, and for
// every group waiting on its checks (a check_run, check_suite or status
// webhook, or the sweep, wakes the session). Nothing is cached across
// reconciles: protection and check states change.

// checkEvents reads the required checks of the groups that need a report:
// those waiting on their checks, and those whose merge the reconcile just
// sent whose checks have not passed. It returns the reports that change
// what the engine decides (a merge that must wait, or a wait that ends).
func (x *executor) checkEvents(ctx context.Context, next pipeline.Session, actions []pipeline.Action) []pipeline.Event {
	if x.st.Config.Merge.Method != pipeline.MergePullRequest {
		return nil
	}
	merging := map[string]bool{}
	for _, a := range actions {
		if a.Kind == pipeline.ActionDispatch && a.Role == pipeline.RoleMerge {
			merging[a.Group] = true
		}
	}
	var rules *ghapi.BranchRules
	var out []pipeline.Event
	for i := range next.Groups {
		g := &next.Groups[i]
		if !merging[g.ID] && g.Wait != pipeline.WaitChecks {
			continue
		}
		number := x.st.PRNumber(g.ID)
		if number == 0 {
			continue // no PR yet: the merge step's land job says so
		}
		if rules == nil {
			r, err := x.gh.BranchRules(ctx, x.ref.repo, next.Base)
			if err != nil {
				// GitHub still refuses a merge whose checks did not pass;
				// a wait stays until the next event or sweep reads again.
				x.log.Warn("reading the rules of the base", "base", next.Base, "err", err)
				return out
			}
			rules = &r
		}
		pr, err := x.gh.GetPR(ctx, x.ref.repo, number)
		if err != nil || pr.HeadSHA == "" {
			x.log.Warn("reading the head of a group PR", "group", g.ID, "pr", number, "err", err)
			continue
		}
		if g.Head != "" && pr.HeadSHA != g.Head {
			// The PR is at a head no step reported (issue 28): someone
			// pushed. The branch itself says whether it really moved (a
			// pull request's head can lag its branch for a moment); if it
			// did, the engine sends the group back through review instead
			// of merging or waiting on the checks of code nobody reviewed.
			if ev, ok := x.branchMoved(ctx, next, g); ok {
				out = append(out, ev)
			}
			continue
		}
		var checks []ghapi.Check
		if len(rules.RequiredChecks) > 0 {
			if checks, err = x.gh.Checks(ctx, x.ref.repo, pr.HeadSHA); err != nil {
				x.log.Warn("reading the checks of a group PR head", "group", g.ID, "head", pr.HeadSHA, "err", err)
				continue
			}
		}
		rep := checksReport(rules.RequiredChecks, checks)
		if merging[g.ID] && rep.State == pipeline.ChecksPassed {
			continue // the merge goes as sent
		}
		if rep.State == pipeline.ChecksPending {
			rep.AwaitingApproval = x.awaitingApproval(ctx, pr.HeadSHA)
		}
		x.log.Info("required checks", "group", g.ID, "head", pr.HeadSHA, "state", rep.State.String(),
			"pending", strings.Join(rep.Pending, ","), "failed", strings.Join(rep.Failed, ","))
		out = append(out, pipeline.ChecksEvent(strconv.Itoa(x.ref.issue), g.ID, pr.HeadSHA, rep))
	}
	return out
}

// branchMoved reads a group branch's head and, when it is not the group's
// head, returns the push as an event (who pushed is not known here).
func (x *executor) branchMoved(ctx context.Context, s pipeline.Session, g *pipeline.Group) (pipeline.Event, bool) {
	head, err := x.gh.GetRef(ctx, x.ref.repo, "heads/"+g.Branch)
	if err != nil || head == "" || head == g.Head {
		if err != nil {
			x.log.Warn("reading a group branch", "group", g.ID, "branch", g.Branch, "err", err)
		}
		return pipeline.Event{}, false
	}
	x.log.Info("group branch moved", "group", g.ID, "head", head, "known", g.Head)
	return pipeline.Pushed(s.ID, g.ID, head, ""), true
}

// pushesBehindReviews: a human review of a commit that is not the group's
// head means someone pushed that commit (issue 28). Action-only mode hears
// of no push (its workflow does not run on them), and the App may hear of
// the review first. When the branch is at the reviewed commit, the push is
// put before the review: the engine sends the group back through QA and
// review, and the approval counts for the head it was given on.
func pushesBehindReviews(ctx context.Context, gh GitHub, ref sessionRef, s pipeline.Session, events []pipeline.Event, log *slog.Logger) []pipeline.Event {
	var out []pipeline.Event
	for _, ev := range events {
		g := s.Group(ev.Group)
		if ev.Kind == pipeline.EventHumanReview && ev.Commit != "" && g != nil && !g.Stage.Finished() && g.Head != "" && ev.Commit != g.Head {
			head, err := gh.GetRef(ctx, ref.repo, "heads/"+g.Branch)
			switch {
			case err != nil:
				log.Warn("reading a group branch", "group", g.ID, "branch", g.Branch, "err", err)
			case head == ev.Commit:
				log.Info("group branch moved", "group", g.ID, "head", head, "known", g.Head)
				out = append(out, pipeline.Pushed(s.ID, g.ID, head, ""))
			}
		}
		out = append(out, ev)
	}
	return out
}

// checksReport judges a head's required checks from what was reported on
// it: a required check passes when a matching check run or status passed
// and none failed; one that has not reported yet is pending (GitHub shows
// "Expected — Waiting for status to be reported").
func checksReport(required []ghapi.RequiredCheck, checks []ghapi.Check) pipeline.ChecksReport {
	rep := pipeline.ChecksReport{State: pipeline.ChecksPassed}
	var details []string
	for _, req := range required {
		rep.Required = append(rep.Required, req.Context)
		passed, failed := false, false
		for _, c := range checks {
			if c.Name != req.Context || (req.AppID != 0 && c.AppID != req.AppID) {
				continue
			}
			switch c.State {
			case ghapi.CheckSuccess:
				passed = true
			case ghapi.CheckFailure:
				if !failed {
					d := req.Context + ": " + strings.TrimSpace(c.Detail)
					if c.URL != "" {
						d += " (" + c.URL + ")"
					}
					details = append(details, d)
				}
				failed = true
			}
		}
		switch {
		case failed:
			rep.Failed = append(rep.Failed, req.Context)
		case !passed:
			rep.Pending = append(rep.Pending, req.Context)
		}
	}
	switch {
	case len(rep.Failed) > 0:
		rep.State = pipeline.ChecksFailed
		rep.Summary = strings.Join(details, "\n")
	case len(rep.Pending) > 0:
		rep.State = pipeline.ChecksPending
	}
	return rep
}

// checksBranches are the branches a check_run, check_suite or status
// delivery is about.
func checksBranches(event string, p *payload) []string {
	var out []string
	prs := func(list []hookCheckPR) {
		for _, pr := range list {
			out = append(out, pr.Head.Ref)
		}
	}
	switch event {
	case "check_run":
		if p.CheckRun != nil {
			out = append(out, p.CheckRun.CheckSuite.HeadBranch)
			prs(p.CheckRun.PullRequests)
		}
	case "check_suite":
		if p.CheckSuite != nil {
			out = append(out, p.CheckSuite.HeadBranch)
			prs(p.CheckSuite.PullRequests)
		}
	case "status":
		for _, b := range p.Branches {
			out = append(out, b.Name)
		}
	}
	return out
}

// checksSession is the session a checks delivery wakes: the issue of the
// first group branch it names.
func checksSession(event string, p *payload) int {
	for _, b := range checksBranches(event, p) {
		if n, _, ok := parseBranch(b); ok {
			return n
		}
	}
	return 0
}

// checks translates a check_run, check_suite or status delivery: a
// finished check of a group branch wakes its session, which then reads the
// checks of the groups waiting on them (level-triggered: the payload's
// verdict is not trusted, GitHub is read again).
func (t translator) checks(event string, p *payload) (intent, error) {
	switch event {
	case "check_run", "check_suite":
		if p.Action != "completed" {
			return intent{}, ignored("%s action %s", event, p.Action)
		}
	case "status":
		if p.State == "pending" {
			return intent{}, ignored("a pending status")
		}
	}
	n := checksSession(event, p)
	if n == 0 {
		return intent{}, ignored("%s of no group branch", event)
	}
	return intent{issue: n, in: input{events: []pipeline.Event{pipeline.Tick(strconv.Itoa(n))}}}, nil
}

// hookCheckPR is a pull request a check payload lists.
type hookCheckPR struct {
	Number int `json:"number"`
	Head   struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

type hookCheckRun struct {
	Name       string `json:"name"`
	HeadSHA    string `json:"head_sha"`
	CheckSuite struct {
		HeadBranch string `json:"head_branch"`
	} `json:"check_suite"`
	PullRequests []hookCheckPR `json:"pull_requests"`
}

type hookCheckSuite struct {
	HeadBranch   string        `json:"head_branch"`
	HeadSHA      string        `json:"head_sha"`
	PullRequests []hookCheckPR `json:"pull_requests"`
}

// checksLines are the log lines of the checks reports a reconcile applied:
// a new wait, and a failure that sent the group back.
func checksLines(prev, next pipeline.Session, evs []pipeline.Event) []string {
	var out []string
	for _, ev := range evs {
		g, old := next.Group(ev.Group), prev.Group(ev.Group)
		if g == nil || ev.Checks == nil {
			continue
		}
		head := ev.Commit
		if len(head) > 12 {
			head = head[:12]
		}
		switch {
		case ev.Checks.State == pipeline.ChecksFailed && g.Counters.MergeFailures > old.Counters.MergeFailures:
			out = append(out, fmt.Sprintf("❌ Group %s | required checks failed on %s: %s → back to %s",
				g.ID, head, strings.Join(ev.Checks.Failed, ", "), nextRole(g)))
		case g.Wait == pipeline.WaitChecks && (old == nil || old.Wait != pipeline.WaitChecks):
			out = append(out, fmt.Sprintf("⏳ Group %s | %s", g.ID, g.WaitDetail))
		}
	}
	return out
}

// nextRole names who a group's work went to.
func nextRole(g *pipeline.Group) string {
	if g.Next != nil {
		return g.Next.Role.String()
	}
	if g.Wait == pipeline.WaitPM {
		return "the pm"
	}
	return "its implementer"
}

// headRuns lists the workflow runs on a commit (ghapi.Client has it).
type headRuns interface {
	RunsForHead(ctx context.Context, repo ghapi.RepoRef, sha string) ([]ghapi.Run, error)
}

// awaitingApproval names the workflow runs on head that wait for a
// person's approval (conclusion action_required): since 2026-06-11 GitHub
// holds the pull_request runs of a pull request a GITHUB_TOKEN opened or
// updated until someone with write access approves them, so a required
// check they would report stays pending (issue 22).
func (x *executor) awaitingApproval(ctx context.Context, head string) []string {
	l, ok := x.gh.(headRuns)
	if !ok {
		return nil
	}
	runs, err := l.RunsForHead(ctx, x.ref.repo, head)
	if err != nil {
		x.log.Warn("listing the runs of a group PR head", "head", head, "err", err)
		return nil
	}
	var out []string
	for _, r := range runs {
		if r.Conclusion == "action_required" {
			out = append(out, strings.TrimSpace(r.Title+" "+r.URL))
		}
	}
	return out
}
