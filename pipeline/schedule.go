package pipeline

import (
	"fmt"
	"sort"
	"strings"
)

// schedule dispatches every track's next step that may run now and names the
// wait of every track that cannot: the never-silently-idle half of Reconcile.
func (r *reconciler) schedule() {
	s := &r.s
	if s.Status == SessionNew {
		return
	}
	if s.Status.Terminal() {
		for i := range s.Groups {
			if g := &s.Groups[i]; !g.Stage.Finished() {
				r.setWait(&g.Track, WaitEnded, "session "+s.Status.String())
			}
		}
		r.setWait(&s.Lead, WaitEnded, "session "+s.Status.String())
		return
	}
	paused := s.Status == SessionPaused
	phase := r.currentPhase()
	r.checkpoints(phase)
	cp := s.Checkpoint
	impl, research, merging := r.inFlightCounts()
	limit := r.cfg.MaxParallel
	if s.Mode == ModeSimple {
		limit = 1
	}
	var ready []*Group // groups whose next step goes out now
	for _, i := range r.groupOrder() {
		g := &s.Groups[i]
		if g.Stage.Finished() {
			r.setWait(&g.Track, WaitNone, "")
			continue
		}
		if g.InFlight != "" {
			r.setWait(&g.Track, WaitNone, "")
			continue
		}
		if paused {
			r.setWait(&g.Track, WaitPaused, s.Reason)
			continue
		}
		if g.Deleted != nil {
			r.setWait(&g.Track, WaitBranch, g.Deleted.wait(g))
			continue
		}
		if g.Next == nil && g.Wait == WaitPM {
			continue
		}
		if g.Held != nil && g.Next == nil && cp != nil {
			// Its HIGH findings wait for a human (issue 26).
			r.setWait(&g.Track, WaitCheckpoint, checkpointWait(cp))
			continue
		}
		if !g.Started {
			// Every path that gives a group work (the plan, a pm CONTINUE, a
			// human retry) goes through this gate: a group starts only in its
			// phase, after its dependencies merged, and past the checkpoints.
			if cp.Holds(g) {
				r.setWait(&g.Track, WaitCheckpoint, checkpointWait(cp))
				continue
			}
			if g.Phase > phase {
				r.setWait(&g.Track, WaitPhase, fmt.Sprintf("phase %d starts after phase %d", g.Phase, phase))
				continue
			}
			if dead := r.abandonedDeps(g); len(dead) > 0 {
				r.toPM(&g.Track, g, fmt.Sprintf("group %s depends on abandoned group(s) %s", g.ID, strings.Join(dead, ", ")))
				continue
			}
			if open := r.openDeps(g); len(open) > 0 {
				r.setWait(&g.Track, WaitDependencies, "waits for "+strings.Join(open, ", ")+" to merge")
				continue
			}
			if g.Next == nil {
				r.want(&g.Track, g, StepSpec{Role: r.implementer(g), Purpose: PurposeImplement})
			}
			if g.Next == nil {
				continue
			}
		} else if g.Next == nil {
			// A started group always has a next step or a wait; if not, the pm decides.
			r.toPM(&g.Track, g, fmt.Sprintf("group %s had nothing left to do but is not merged; decide", g.ID))
			continue
		}
		if unreviewed(g) {
			// Its head is not the one the tech lead approved (learned since
			// the approval): only reviewed code merges.
			r.headMoved(&g.Track, g, g.Next.From, HeadMove{Reviewed: g.ReviewedHead, Head: g.Head})
		}
		if g.Next.Role == RoleMerge && len(g.Approvals) >= r.cfg.Merge.RequiredApprovals && !r.checksGate(g) {
			// Pending required checks wait (named); failed ones sent the
			// group back to its implementer, who goes through the cap below.
			if g.Next == nil || g.Next.Role == RoleMerge {
				continue
			}
		}
		switch n := g.Next; {
		case n.Role.IsImplementer():
			if impl >= limit {
				r.setWait(&g.Track, WaitCap, fmt.Sprintf("%d of %d implementation slots busy", impl, limit))
				continue
			}
			if g.Type == GroupResearch && research >= MaxResearchInFlight {
				r.setWait(&g.Track, WaitCap, fmt.Sprintf("%d of %d research slots busy", research, MaxResearchInFlight))
				continue
			}
			impl++
			if g.Type == GroupResearch {
				research++
			}
		case n.Role == RoleMerge:
			if need := r.cfg.Merge.RequiredApprovals; len(g.Approvals) < need {
				r.setWait(&g.Track, WaitHumanReview, fmt.Sprintf("%d of %d human approvals", len(g.Approvals), need))
				continue
			}
			if merging > 0 {
				r.setWait(&g.Track, WaitMergeLane, "another merge into "+s.Base+" is in flight")
				continue
			}
			merging++
		}
		ready = append(ready, g)
	}
	// The lead decides before anything is sent: a pm out of rounds ends the
	// session, and an ended session sends nothing.
	lead := r.scheduleLead(paused, impl, limit)
	if s.Status.Terminal() {
		for _, g := range ready {
			r.setWait(&g.Track, WaitEnded, "session "+s.Status.String())
		}
		return
	}
	for _, g := range ready {
		r.dispatch(&g.Track, g)
	}
	if lead {
		r.dispatch(&s.Lead, nil)
	}
}

// scheduleLead runs the session lead. Its developer diagnostics take an
// implementation slot like any group's step.
func (r *reconciler) scheduleLead(paused bool, impl, limit int) (dispatch bool) {
	s := &r.s
	l := &s.Lead
	if l.InFlight != "" {
		r.setWait(l, WaitNone, "")
		return false
	}
	if paused {
		r.setWait(l, WaitPaused, s.Reason)
		return false
	}
	if s.Clarification != nil {
		r.setWait(l, WaitClarification, s.Clarification.Question)
		return false
	}
	if cp := s.Checkpoint; cp != nil && cp.Kind == CheckpointPlan {
		// Nothing runs before the plan is approved or sent back.
		r.setWait(l, WaitCheckpoint, checkpointWait(cp))
		return false
	}
	if l.Next == nil {
		switch {
		case hasUrgent(s.Inbox):
			r.want(l, nil, StepSpec{Role: RolePM, Purpose: PurposeCoordinate})
		case len(s.Groups) > 0 && r.allFinished():
			r.want(l, nil, StepSpec{Role: RolePM, Purpose: PurposeFinalCheck,
				Feedback: "Every group is merged or abandoned. Say BAZINGA with evidence for each criterion, or CONTINUE with more work."})
		case len(s.Groups) == 0:
			r.want(l, nil, StepSpec{Role: RolePM, Purpose: PurposePlan})
		case s.Checkpoint != nil:
			r.setWait(l, WaitCheckpoint, checkpointWait(s.Checkpoint))
			return false
		default:
			r.setWait(l, WaitGroups, fmt.Sprintf("%d group(s) at work", r.openGroups()))
			return false
		}
	}
	if l.Next.Role.IsImplementer() && impl >= limit {
		r.setWait(l, WaitCap, fmt.Sprintf("%d of %d implementation slots busy", impl, limit))
		return false
	}
	if l.Next.Role == RolePM {
		if s.PMStreak >= r.pmLimit() {
			r.end(SessionFailed, fmt.Sprintf("the pm made no progress in %d rounds; resuming gives it more", s.PMStreak))
			r.setWait(l, WaitEnded, "session failed")
			return false
		}
		s.PMStreak++
		l.Next.Notes = append(l.Next.Notes, s.Inbox...)
		s.Inbox = nil
	}
	return true
}

func hasUrgent(inbox []Note) bool {
	for _, n := range inbox {
		if n.Urgent {
			return true
		}
	}
	return false
}

func (r *reconciler) allFinished() bool {
	return r.openGroups() == 0
}

func (r *reconciler) openGroups() int {
	n := 0
	for _, g := range r.s.Groups {
		if !g.Stage.Finished() {
			n++
		}
	}
	return n
}

// currentPhase is the lowest phase with an unfinished group.
func (r *reconciler) currentPhase() int {
	phase := 0
	for _, g := range r.s.Groups {
		if !g.Stage.Finished() && (phase == 0 || g.Phase < phase) {
			phase = g.Phase
		}
	}
	if phase == 0 {
		phase = 1
		for _, g := range r.s.Groups {
			if g.Phase > phase {
				phase = g.Phase
			}
		}
	}
	return phase
}

func (r *reconciler) openDeps(g *Group) []string {
	var out []string
	for _, d := range g.DependsOn {
		if dg := r.s.Group(d); dg != nil && dg.Stage != StageMerged && dg.Stage != StageAbandoned {
			out = append(out, d)
		}
	}
	return out
}

func (r *reconciler) abandonedDeps(g *Group) []string {
	var out []string
	for _, d := range g.DependsOn {
		if dg := r.s.Group(d); dg != nil && dg.Stage == StageAbandoned {
			out = append(out, d)
		}
	}
	return out
}

func (r *reconciler) inFlightCounts() (impl, research, merging int) {
	for _, st := range r.s.Steps {
		if st.State != StepInFlight {
			continue
		}
		switch {
		case st.Role.IsImplementer():
			impl++
			if g := r.s.Group(st.Group); g != nil && g.Type == GroupResearch {
				research++
			}
		case st.Role == RoleMerge:
			merging++
		}
	}
	return impl, research, merging
}

// groupOrder gives started groups the first claim on free slots (work in
// progress finishes before new work starts); within each kind, the group
// with the longest chain of estimated work behind it goes first, so the
// critical path starts early; ties keep plan order.
func (r *reconciler) groupOrder() []int {
	gs := r.s.Groups
	chain := remainingChains(gs, estimates(gs, r.s.Steps))
	order := make([]int, len(gs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ga, gb := &gs[order[a]], &gs[order[b]]
		if ga.Started != gb.Started {
			return ga.Started
		}
		return chain[order[a]] > chain[order[b]]
	})
	return order
}

// remainingChains gives, for each unfinished group, the estimated work on
// the longest chain of unfinished groups that starts with it (est: each
// group's own work left, from its size corrected by what was measured): a
// group waits for the ones it depends on and for every group of an earlier
// phase.
func remainingChains(gs []Group, est []float64) []float64 {
	chain := make([]float64, len(gs))
	state := make([]byte, len(gs)) // 0 new, 1 visiting, 2 done
	index := make(map[string]int, len(gs))
	for i := range gs {
		index[gs[i].ID] = i
	}
	// dependents[i] lists the unfinished groups that name group i.
	dependents := make([][]int, len(gs))
	for j := range gs {
		if gs[j].Stage.Finished() {
			continue
		}
		for _, d := range gs[j].DependsOn {
			if i, ok := index[d]; ok {
				dependents[i] = append(dependents[i], j)
			}
		}
	}
	var visit func(i int) float64
	visit = func(i int) float64 {
		switch state[i] {
		case 1:
			return 0 // a cycle (refused at planning); do not loop
		case 2:
			return chain[i]
		}
		state[i] = 1
		best := 0.0
		for _, j := range dependents[i] {
			best = max(best, visit(j))
		}
		for j := range gs {
			if !gs[j].Stage.Finished() && gs[j].Phase > gs[i].Phase {
				best = max(best, visit(j))
			}
		}
		chain[i] = est[i] + best
		state[i] = 2
		return chain[i]
	}
	for i := range gs {
		if !gs[i].Stage.Finished() {
			visit(i)
		}
	}
	return chain
}

func (r *reconciler) setWait(t *Track, w WaitReason, detail string) {
	if t.Wait != w || t.WaitDetail != detail {
		t.Wait = w
		t.WaitDetail = detail
		r.changed = true
	}
}

// dispatch turns a track's next step into a step in flight.
func (r *reconciler) dispatch(t *Track, g *Group) {
	s := &r.s
	spec := *t.Next
	spec.Baseline = spec.Role == RolePM && r.wantBaseline()
	group := LeadGroup
	if g != nil {
		group = g.ID
		if !g.Started {
			g.Started = true
			if g.Branch == "" {
				g.Branch = BranchName(s.ID, g.ID)
			}
		}
	}
	// Step numbers count every step of the session, so they stay unique
	// when old steps are dropped from a snapshot.
	s.StepSeq++
	n := s.StepSeq
	st := Step{ID: StepID(s.ID, group, spec.Role, n), Group: group, N: n, StepSpec: spec,
		State: StepInFlight, DispatchedAt: r.now}
	s.Steps = append(s.Steps, st)
	t.InFlight = st.ID
	t.Next = nil
	t.Wait = WaitNone
	t.WaitDetail = ""
	t.Stage = stageFor(spec.Role)
	if spec.Role == RoleMerge {
		t.Stage = StageMerging
	}
	r.changed = true
	r.add(dispatchAction(st))
}

func dispatchAction(st Step) Action {
	return Action{Kind: ActionDispatch, ID: "dispatch/" + st.ID, Step: st.ID, Group: st.Group, Role: st.Role,
		Model: st.Model, Purpose: st.Purpose, Attempt: st.Attempt}
}

// finish records the revision when anything changed, and sends again the
// steps in flight that a resume re-sends.
func (r *reconciler) finish() {
	s := &r.s
	if s.Status == SessionNew {
		return
	}
	if r.resend && s.Status != SessionPaused && !s.Status.Terminal() {
		// A step sent again gets its full time again.
		for i := range s.Steps {
			st := &s.Steps[i]
			if st.State != StepInFlight || r.dispatchedNow(st.ID) {
				continue
			}
			if !r.restart && r.now.Sub(st.DispatchedAt) < ResendAfter {
				continue
			}
			st.DispatchedAt = r.now
			r.changed = true
			r.add(dispatchAction(*st))
		}
	}
	if !r.changed {
		return
	}
	s.Rev = r.rev
	s.UpdatedAt = r.now
}

func (r *reconciler) dispatchedNow(id string) bool {
	for _, a := range r.actions {
		if a.Kind == ActionDispatch && a.Step == id {
			return true
		}
	}
	return false
}
