package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Required checks (merge.method pull-request, issue 11). GitHub merges a
// group PR only once the checks its branch protection or rulesets require
// have passed on the PR head. The engine cannot read them: a front-end reads
// them (the App by check_run, check_suite and status webhooks and its sweep,
// Action-only mode by its reconcile) and reports them as an EventChecks for
// one head. A merge waits while the report for the group's head is pending
// (WaitChecks names the checks), a failure sends the group back to its
// implementer like a failed merge, and checks pending past
// merge.checks_timeout pause the session naming them.

// CheckState is the state of a head's required checks taken together.
type CheckState string

// Check states.
const (
	ChecksUnknown CheckState = ""
	ChecksPending CheckState = "pending" // some required check has not reported or is running
	ChecksPassed  CheckState = "passed"  // every required check passed (or none is required)
	ChecksFailed  CheckState = "failed"  // some required check failed
)

var checkStateEnum = enum[CheckState]{kind: "check state", values: []CheckState{
	ChecksUnknown, ChecksPending, ChecksPassed, ChecksFailed,
}}

func (c CheckState) String() string { return checkStateEnum.name(c) }

func (c CheckState) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

func (c *CheckState) UnmarshalText(b []byte) error {
	return checkStateEnum.unmarshal(b, c)
}

// Bounds of a checks report, so a noisy CI cannot grow the session.
const (
	MaxCheckNames    = 20
	MaxChecksSummary = 2000
)

// ChecksReport is what a front-end read of one head's required checks.
type ChecksReport struct {
	State CheckState `json:"state"`
	// Required names every required check; Pending and Failed those that
	// have not passed (sorted, at most MaxCheckNames each).
	Required []string `json:"required,omitempty"`
	Pending  []string `json:"pending,omitempty"`
	Failed   []string `json:"failed,omitempty"`
	// Summary is the failing checks' output (title, summary, link), bounded.
	Summary string `json:"summary,omitempty"`
	// AwaitingApproval names the workflow runs on the head that wait for a
	// person's approval before they run ("CI <url>"): GitHub's rule for
	// pull requests a GITHUB_TOKEN opened or updated (issue 22).
	AwaitingApproval []string `json:"awaiting_approval,omitempty"`
}

// GroupChecks is the last report for a group, with the head it is about.
type GroupChecks struct {
	Head string `json:"head"`
	ChecksReport
	// Since is when the checks of Head were first reported pending (or the
	// session resumed after their timeout): merge.checks_timeout counts from it.
	Since time.Time `json:"since,omitzero"`
}

func (c GroupChecks) clone() GroupChecks {
	c.Required = slices.Clone(c.Required)
	c.Pending = slices.Clone(c.Pending)
	c.Failed = slices.Clone(c.Failed)
	return c
}

// ChecksEvent returns the event of a group PR head's required checks.
func ChecksEvent(session, group, head string, rep ChecksReport) Event {
	return Event{Kind: EventChecks, Session: session, Group: group, Commit: head, Checks: &rep}
}

// normalised bounds and sorts a report so that equal reports compare equal.
func (c ChecksReport) normalised() ChecksReport {
	names := func(l []string) []string {
		out := slices.Clone(l)
		slices.Sort(out)
		out = slices.Compact(out)
		if len(out) > MaxCheckNames {
			out = out[:MaxCheckNames]
		}
		return out
	}
	c.Required, c.Pending, c.Failed = names(c.Required), names(c.Pending), names(c.Failed)
	c.AwaitingApproval = names(c.AwaitingApproval)
	for i, a := range c.AwaitingApproval {
		c.AwaitingApproval[i] = foldLine(a, 200)
	}
	if len(c.Summary) > MaxChecksSummary {
		c.Summary = c.Summary[:MaxChecksSummary] + "…"
	}
	return c
}

func (c ChecksReport) equal(o ChecksReport) bool {
	return c.State == o.State && slices.Equal(c.Required, o.Required) && slices.Equal(c.Pending, o.Pending) &&
		slices.Equal(c.Failed, o.Failed) && c.Summary == o.Summary && slices.Equal(c.AwaitingApproval, o.AwaitingApproval)
}

// approvalNote says which runs wait for a person's approval and how to let
// them run, or "".
func (c ChecksReport) approvalNote() string {
	if len(c.AwaitingApproval) == 0 {
		return ""
	}
	return "; workflow runs awaiting approval: " + strings.Join(c.AwaitingApproval, ", ") +
		" (GitHub holds the runs of pull requests a GITHUB_TOKEN opened or updated: a person with write access presses " +
		"\"Approve and run workflows\" on the PR, or the jobs act as an App through token-exchange-url)"
}

// checks records a report. A report for another head than the group's is
// about code that will not merge; one equal to the last changes nothing (the
// sweep re-reads pending checks without growing the session).
func (r *reconciler) checks(ev Event) {
	g := r.s.Group(ev.Group)
	switch {
	case g == nil:
		r.report("ignored checks of unknown group %q", ev.Group)
		return
	case ev.Checks == nil || ev.Commit == "":
		r.report("ignored checks of group %s without a report or a head", g.ID)
		return
	case g.Stage.Finished():
		return
	case ev.Checks.State != ChecksPending && ev.Checks.State != ChecksPassed && ev.Checks.State != ChecksFailed:
		r.report("ignored checks of group %s: state %q is not pending, passed or failed", g.ID, string(ev.Checks.State))
		return
	case g.Head != "" && ev.Commit != g.Head:
		r.report("ignored checks of group %s for %s: its head is %s", g.ID, shortSHA(ev.Commit), shortSHA(g.Head))
		return
	}
	rep := ev.Checks.normalised()
	prev := g.RequiredChecks
	if prev != nil && prev.Head == ev.Commit && prev.ChecksReport.equal(rep) {
		return
	}
	next := GroupChecks{Head: ev.Commit, ChecksReport: rep, Since: r.now}
	if prev != nil && prev.Head == ev.Commit && prev.State == ChecksPending && rep.State == ChecksPending {
		next.Since = prev.Since
	}
	g.RequiredChecks = &next
	r.changed = true
}

// checksApply returns the report that gates the group's merge: the one for
// its current head (or any, while the head is unknown).
func checksApply(g *Group) *GroupChecks {
	if g.RequiredChecks == nil || (g.Head != "" && g.RequiredChecks.Head != g.Head) {
		return nil
	}
	return g.RequiredChecks
}

// staleChecks drops a report the group's code has moved past: a new head,
// or an implementation step whose head the executor did not report.
func staleChecks(g *Group, role Role, commit string) {
	if g.RequiredChecks == nil {
		return
	}
	if (commit != "" && commit != g.RequiredChecks.Head) || (commit == "" && role.IsImplementer()) {
		g.RequiredChecks = nil
	}
}

// checksGate decides a merge that is otherwise ready: go (true), or wait on
// pending checks, or (failed checks) back to the implementer with their
// names and output. It runs in schedule; the timeout is checkTimeouts'.
func (r *reconciler) checksGate(g *Group) bool {
	c := checksApply(g)
	if c == nil {
		return true
	}
	switch c.State {
	case ChecksPending:
		r.setWait(&g.Track, WaitChecks, "waiting for required checks: "+checkNames(c.Pending, c.Required)+" on "+shortSHA(c.Head)+c.approvalNote())
		return false
	case ChecksFailed:
		why := fmt.Sprintf("required checks failed on %s: %s", shortSHA(c.Head), checkNames(c.Failed, c.Required))
		if c.Summary != "" {
			why += "\n" + c.Summary
		}
		from := ""
		if g.Next != nil {
			from = g.Next.From
		}
		// The report is spent: the fix brings a new head and a new report.
		g.RequiredChecks = nil
		r.changed = true
		r.mergeFailed(&g.Track, g, from, why)
		return false
	}
	return true
}

// checksTimeouts pauses a session whose merge has waited on pending checks
// longer than merge.checks_timeout, naming them.
func (r *reconciler) checksTimeouts() {
	limit := r.cfg.Merge.ChecksWait()
	for i := range r.s.Groups {
		g := &r.s.Groups[i]
		c := checksApply(g)
		if c == nil || c.State != ChecksPending || g.InFlight != "" || g.Next == nil || g.Next.Role != RoleMerge || g.Stage.Finished() {
			continue
		}
		if waited := r.now.Sub(c.Since); waited > limit {
			r.pause(fmt.Sprintf("the required checks of group %s (%s on %s) are still pending after %s (merge.checks_timeout %s)%s; see why they do not run or finish, then resume",
				g.ID, checkNames(c.Pending, c.Required), shortSHA(c.Head), roundWait(waited), limit, c.approvalNote()))
		}
	}
}

// restartChecksClocks gives pending checks their full time again after a
// human resumed the session.
func (r *reconciler) restartChecksClocks() {
	for i := range r.s.Groups {
		if c := r.s.Groups[i].RequiredChecks; c != nil && c.State == ChecksPending {
			c.Since = r.now
		}
	}
}

func checkNames(names, fallback []string) string {
	if len(names) == 0 {
		names = fallback
	}
	if len(names) == 0 {
		return "(unnamed)"
	}
	return strings.Join(names, ", ")
}

// roundWait rounds a wait for people: to the minute from a minute on, to
// the second below (a timeout of seconds must not read "after 0s").
func roundWait(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
