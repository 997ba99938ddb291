package pipeline

import "fmt"

// What people do to a group's branch and PR on GitHub mid-session (issue
// 28). Deleting the branch is not a decision to give the group up: GitHub
// closes the PR as a side effect, and the work is still at the recorded
// head, so the group waits for a human, who restores the branch (a retry of
// the group: the front-end recreates the branch at the head and reopens the
// PR, then the engine carries on with the step the deletion interrupted).
// Reopening a closed group PR takes the group back into the session.

// BranchDeleted is the event of a group branch deleted by who, at head
// (the branch's last head as the front-end knew it; "" for the group's).
func BranchDeleted(session, group, head, by string) Event {
	return Event{Kind: EventBranchDeleted, Session: session, Group: group, Commit: head, Actor: by}
}

// PRReopened is the event of a group PR reopened by who.
func PRReopened(session, group, by string) Event {
	return Event{Kind: EventPRReopened, Session: session, Group: group, Actor: by}
}

// wait is the detail of a group waiting for its deleted branch.
func (d *Push) wait(g *Group) string {
	return fmt.Sprintf("branch %s was deleted by %s; retry the group to restore it at %s", g.Branch, who(d.By), abbrev(d.Head))
}

func who(login string) string {
	if login == "" {
		return "someone"
	}
	return "@" + login
}

func (r *reconciler) branchDeleted(ev Event) {
	g := r.s.Group(ev.Group)
	switch {
	case g == nil:
		r.report("ignored the deletion of the branch of unknown group %q", ev.Group)
		return
	case g.Stage.Finished() || g.Deleted != nil:
		return
	}
	head := ev.Commit
	if head == "" {
		head = g.Head
	}
	if head == "" {
		// Nothing was pushed to it yet: nothing to restore, and the next
		// step's job creates the branch again.
		r.report("group %s's branch was deleted before it had work", g.ID)
		return
	}
	r.changed = true
	if g.InFlight != "" {
		if st := r.step(g.InFlight); st != nil {
			r.cancel(st, "group branch deleted") // its work goes again once the branch is back
		}
	}
	g.Deleted = &Push{Head: head, By: ev.Actor}
	if head != g.Head {
		r.newHead(g, head)
	}
	r.notify(NoticeInfo, fmt.Sprintf("⚠️ Group %s's branch %s was deleted by %s, and GitHub closed its PR with it. The group waits: "+
		"retry it to restore the branch at %s and go on.", g.ID, g.Branch, who(ev.Actor), abbrev(head)))
}

// branchRestored: a retry of a group whose branch was deleted. The
// front-end restored the branch (and reopened the PR) before it passed the
// retry on; the group goes on with the step the deletion interrupted.
func (r *reconciler) branchRestored(g *Group, by string) bool {
	if g.Deleted == nil {
		return false
	}
	r.changed = true
	r.notify(NoticeInfo, fmt.Sprintf("Group %s's branch was restored at %s by %s; the group goes on.", g.ID, abbrev(g.Deleted.Head), who(by)))
	g.Deleted = nil
	if g.Next == nil && g.InFlight == "" {
		r.toQA(&g.Track, g, "", "The group branch was deleted and restored. Test (and review) it as it is.")
	}
	return true
}

// prReopened takes a group back into the session: a reopened PR is a human
// saying the group's work is wanted after all. A group whose branch was
// deleted goes on when its PR is open again (which GitHub allows only once
// the branch is back); an abandoned group goes back through QA and review
// on its branch as it is, or to its implementer when it had no work yet.
func (r *reconciler) prReopened(ev Event) {
	g := r.s.Group(ev.Group)
	switch {
	case g == nil:
		r.report("ignored the reopening of the PR of unknown group %q", ev.Group)
		return
	case g.Deleted != nil:
		r.branchRestored(g, ev.Actor)
		return
	case g.Stage != StageAbandoned:
		return
	}
	r.changed = true
	g.Stage = StagePending
	g.Counters = Counters{}
	text := fmt.Sprintf("Group %s's PR was reopened by %s", g.ID, who(ev.Actor))
	if g.Head == "" {
		r.want(&g.Track, g, StepSpec{Role: r.implementer(g), Purpose: PurposeImplement, Feedback: text + "; implement the task."})
	} else {
		r.toQA(&g.Track, g, "", text+". Test (and review) the branch as it is.")
	}
	r.notify(NoticeInfo, text+"; the group is back in the session.")
	r.s.Inbox = append(r.s.Inbox, Note{Group: g.ID, Text: text + "; the group is back in the session."})
}

// BaseRenamed is the event of the base branch renamed from one name to
// another by who (GitHub moves the open PRs to the new name with it).
func BaseRenamed(session, from, to, by string) Event {
	return Event{Kind: EventBaseRenamed, Session: session, Body: from, Base: to, Actor: by}
}

// baseRenamed makes the new name the session's base: merges go there,
// steps are dispatched on it. A rename of another branch changes nothing.
func (r *reconciler) baseRenamed(ev Event) {
	s := &r.s
	switch {
	case ev.Base == "" || ev.Body != s.Base:
		r.report("ignored the rename of branch %q to %q: the base is %q", ev.Body, ev.Base, s.Base)
		return
	case ev.Base == s.Base:
		return
	}
	r.changed = true
	s.Base = ev.Base
	r.notify(NoticeInfo, fmt.Sprintf("The base branch %s was renamed to %s by %s; the session merges into %s now.", ev.Body, ev.Base, who(ev.Actor), ev.Base))
}
