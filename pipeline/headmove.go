package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Only reviewed code merges (issue 28). The tech lead approves the head its
// step reported (Group.ReviewedHead); the merge step lands exactly that
// commit. When the group branch is somewhere else by then — a human pushed
// or force-pushed it after review — the merge lands nothing and reports the
// move as a fact (MERGE_HEAD_MOVED with a HeadMove), or a front-end reports
// the push (EventPushed); either way the group goes back through QA and
// review on the new head, and merges only once the tech lead approved that.

// Push is a push to a group branch that bazinga did not make.
type Push struct {
	Head string `json:"head"`
	// By is the login of who pushed it.
	By string `json:"by"`
}

// HeadMove is what a merge step reports when the group branch is no longer
// at the reviewed head: the MERGE_HEAD_MOVED handoff. It is a fact about the
// branch, not a failure of the group.
type HeadMove struct {
	// Reviewed is the head the tech lead approved; Head is where the branch is.
	Reviewed string `json:"reviewed_head"`
	Head     string `json:"head"`
	// PushedBy is the login of who pushed Head, when known: a push or pull
	// request synchronize event's sender, or the GitHub no-reply address the
	// commit carries.
	PushedBy string `json:"pushed_by,omitempty"`
	// Author is the commit's author as git records it ("Name <email>"),
	// when no login is known.
	Author string `json:"author,omitempty"`
}

// ParseHeadMove reads a MERGE_HEAD_MOVED handoff; fields it lacks are empty.
func ParseHeadMove(h json.RawMessage) HeadMove {
	var m HeadMove
	if len(h) > 0 {
		_ = json.Unmarshal(h, &m)
	}
	return m
}

// Handoff is the move as a MERGE_HEAD_MOVED handoff.
func (m HeadMove) Handoff() json.RawMessage {
	b, _ := json.Marshal(m)
	return b
}

// Sentence says what happened, for people: "B's branch moved from abc1234
// to def5678 (pushed by @alice) after review".
func (m HeadMove) Sentence(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s's branch moved", group)
	if m.Reviewed != "" {
		b.WriteString(" from " + abbrev(m.Reviewed))
	}
	if m.Head != "" {
		b.WriteString(" to " + abbrev(m.Head))
	}
	switch {
	case m.PushedBy != "":
		b.WriteString(" (pushed by @" + m.PushedBy + ")")
	case m.Author != "":
		b.WriteString(" (commit by " + m.Author + ")")
	}
	b.WriteString(" after review")
	return b.String()
}

// abbrev shortens a commit as git's default abbreviation does.
func abbrev(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// pushed learns that a group branch is at a head bazinga did not report.
// While a step of the group is at work the engine only remembers who pushed:
// the step's result names the head it left (a step whose start moved is
// refused as stale and runs again), and a merge reports the move itself.
// Otherwise the pushed head is the group's now, and code that waited to
// merge goes back through QA and review.
func (r *reconciler) pushed(ev Event) {
	g := r.s.Group(ev.Group)
	switch {
	case g == nil:
		r.report("ignored a push to unknown group %q", ev.Group)
		return
	case ev.Commit == "":
		r.report("ignored a push to group %s without a head", g.ID)
		return
	case g.Stage.Finished():
		return
	}
	if ev.Actor != "" && (g.Pushed == nil || *g.Pushed != Push{Head: ev.Commit, By: ev.Actor}) {
		g.Pushed = &Push{Head: ev.Commit, By: ev.Actor}
		r.changed = true
	}
	if ev.Commit == g.Head || g.InFlight != "" {
		return
	}
	r.changed = true
	from := g.ReviewedHead
	if from == "" {
		from = g.Head // approved while its head was unknown: the push came after
	}
	r.newHead(g, ev.Commit)
	staleChecks(g, RoleUnknown, ev.Commit)
	if g.Next != nil && g.Next.Role == RoleMerge {
		r.headMoved(&g.Track, g, g.Next.From, HeadMove{Reviewed: from, Head: ev.Commit, PushedBy: ev.Actor})
	}
}

// newHead makes commit the group's head; human approvals were for the code
// before it.
func (r *reconciler) newHead(g *Group, commit string) {
	g.Head = commit
	if len(g.Approvals) > 0 {
		r.s.Inbox = append(r.s.Inbox, Note{Group: g.ID, Text: fmt.Sprintf("The human approvals of group %s (%s) were for older code; they no longer count.",
			g.ID, strings.Join(g.Approvals, ", "))})
		g.Approvals = nil
	}
}

// unreviewed reports whether a group about to merge has a head other than
// the one the tech lead approved.
func unreviewed(g *Group) bool {
	return g.Next != nil && g.Next.Role == RoleMerge && g.InFlight == "" &&
		g.ReviewedHead != "" && g.Head != "" && g.Head != g.ReviewedHead
}

// headMoved sends a group whose branch moved after review back through QA
// and review on the new head, saying so where people see it. It is no
// failure of the group: no counter grows but those of the steps that run.
func (r *reconciler) headMoved(t *Track, g *Group, from string, m HeadMove) string {
	if m.PushedBy == "" && g.Pushed != nil && g.Pushed.Head == m.Head {
		m.PushedBy = g.Pushed.By
	}
	if m.Head != "" && m.Head != g.Head {
		r.newHead(g, m.Head)
		staleChecks(g, RoleUnknown, m.Head)
	}
	g.ReviewedHead = ""
	text := m.Sentence(g.ID)
	r.notify(NoticeInfo, text+"; sending it back through QA and review.")
	fb := text + ". Nothing was merged. Test (and review) the branch as it is now"
	if m.Reviewed != "" {
		fb += ": the commits after " + abbrev(m.Reviewed) + " were not reviewed"
	}
	return r.toQA(t, g, from, fb+".")
}

// toQA sends a group's code to QA, or straight to the tech lead's review
// when QA is off or the group is research.
func (r *reconciler) toQA(t *Track, g *Group, from, feedback string) string {
	if !r.cfg.QA || (g != nil && g.Type == GroupResearch) {
		return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: PurposeReview, From: from, Feedback: feedback})
	}
	return r.want(t, g, StepSpec{Role: RoleQA, Purpose: PurposeTest, From: from, Feedback: feedback})
}
