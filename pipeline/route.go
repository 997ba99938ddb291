package pipeline

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// route interprets the routing table for one result and returns, in a few
// words, where the work went. Every route leaves the track with a step to
// dispatch, a finished group, or a named wait; schedule then dispatches.
func (r *reconciler) route(t *Track, g *Group, st *Step) string {
	res := st.Result
	row, ok := LookupFindings(st.Role, res.Status, st.Purpose, Worst(res.Findings))
	if !ok {
		// Unreachable while every allowed status has a row (a test checks it).
		return r.retry(t, st, fmt.Sprintf("no route for %s %s", st.Role, res.Status))
	}
	from := st.ID
	feedback := summaryText(res)
	if len(res.Findings) > 0 {
		// Whoever gets the work next reads the findings, worst first.
		feedback += "\nFindings:\n" + FindingsText(res.Findings)
	}
	switch row.Route {
	case RouteHighFinding:
		return r.highFinding(t, g, st, feedback)
	case RouteFindingsNoted:
		r.followUps(st)
		if st.Role == RoleQA {
			return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: PurposeReview, From: from,
				Feedback: "QA passed the group with findings that do not block it:\n" + FindingsText(res.Findings)})
		}
		return r.approved(t, g, st, feedback)
	case RoutePlan:
		return r.routePlan(st)
	case RouteContinue:
		return r.routeContinue(st)
	case RouteValidate:
		return r.routeBazinga(st)
	case RouteClarify:
		return r.routeClarify(st)
	case RouteSessionInvestigation:
		r.returnNotes(st)
		t.Blocked = RolePM
		return r.want(t, g, StepSpec{Role: RoleInvestigator, Purpose: PurposeInvestigate, From: from, Feedback: feedback})
	case RouteAnswersOnly:
		return r.routeAnswers(st)
	case RoutePMAgain:
		r.returnNotes(st)
		why := "your last result could not be used"
		if st.Note != "" {
			why += " (" + st.Note + ")"
		}
		return r.want(t, g, StepSpec{Role: RolePM, Purpose: st.Purpose, From: from, Feedback: why + ": " + feedback})
	case RouteToQA:
		return r.toQA(t, g, from, "")
	case RouteToReview, RouteQAInconclusive:
		return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: PurposeReview, From: from, Feedback: feedbackIf(row.Route == RouteQAInconclusive, feedback)})
	case RouteDeveloperRevision:
		t.Counters.Revisions++
		role := r.implementer(g)
		if t.Counters.Revisions >= 2 && role == RoleDeveloper {
			r.escalate(g)
			role = RoleSenior
		}
		return r.want(t, g, StepSpec{Role: role, Purpose: PurposeRevise, From: from, Feedback: feedback})
	case RouteSeniorRevision:
		t.Counters.SeniorRevisions++
		if t.Counters.SeniorRevisions >= 2 {
			t.Counters.SeniorRevisions = 0
			t.Blocked = RoleSenior
			return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: PurposeGuidance, From: from, Feedback: feedback})
		}
		return r.want(t, g, StepSpec{Role: RoleSenior, Purpose: PurposeRevise, From: from, Feedback: feedback})
	case RouteInvestigate:
		if st.Role != RoleTechLead || t.Blocked == RoleUnknown {
			t.Blocked = r.blockedRole(t, g, st.Role)
		}
		return r.want(t, g, StepSpec{Role: RoleInvestigator, Purpose: PurposeInvestigate, From: from, Feedback: feedback})
	case RouteGuidance:
		t.Blocked = st.Role
		return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: PurposeGuidance, From: from, Feedback: feedback})
	case RouteSenior:
		r.escalate(g)
		purpose := PurposeRevise
		if st.Role == RoleQA {
			purpose = PurposeFixQA
		}
		return r.want(t, g, StepSpec{Role: RoleSenior, Purpose: purpose, From: from, Feedback: feedback})
	case RouteQAFailed:
		return r.qaFailed(t, g, st, feedback)
	case RouteApproved:
		return r.approved(t, g, st, feedback)
	case RouteGuidanceApproved, RouteUnblock:
		return r.backToBlocked(t, g, st, feedback)
	case RouteChangesRequested:
		return r.changesRequested(t, g, st, feedback)
	case RouteEscalateModel:
		if st.Escalated {
			return r.toPM(t, g, "the tech lead asked for escalation again on the escalation model")
		}
		return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: st.Purpose, From: st.From, Escalated: true,
			Model: r.cfg.Models.Escalation, Feedback: feedback})
	case RouteTechLeadAgain:
		return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: st.Purpose, From: st.From,
			Feedback: "your last result could not be used (" + st.Note + "); " + feedback})
	case RouteValidateFindings:
		return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: PurposeValidateFindings, From: from, Feedback: feedback})
	case RouteDiagnostic:
		req := handoffField(res.Handoff, "diagnostic_request")
		if req == "" {
			req = feedback
		}
		return r.want(t, g, StepSpec{Role: RoleDeveloper, Purpose: PurposeDiagnostic, From: from, Feedback: req})
	case RouteDiagnosticDone, RouteInvestigateAgain:
		return r.want(t, g, StepSpec{Role: RoleInvestigator, Purpose: PurposeInvestigate, From: from, Feedback: feedback})
	case RouteRequirementsAgain:
		t.Counters.Revisions++
		return r.want(t, g, StepSpec{Role: RoleRequirements, Purpose: PurposeRevise, From: from, Feedback: feedback})
	case RouteMerged:
		if g == nil {
			return r.retry(t, st, "merge result on the session")
		}
		r.merged(g)
		g.MergeCommit = handoffField(res.Handoff, "merge_commit")
		return "merged"
	case RouteMergeFailed:
		return r.routeMergeFailed(t, g, st, feedback)
	case RouteMergeBlocked:
		spec := st.StepSpec
		spec.Attempt = 1
		t.Next = &spec
		t.Stage = StageBlocked
		r.pause(fmt.Sprintf("the merge of group %s was refused (%s); let it land, then resume", st.Group, feedback))
		return "paused"
	case RouteMergeAgain:
		// A base that requires up-to-date heads ("strict" required checks):
		// the land job pushed the tested merge of base and head to the group
		// branch (the result's commit, now the group's head). Nothing failed;
		// the merge waits for that head's checks like any other.
		if g == nil {
			return r.retry(t, st, "merge result on the session")
		}
		head := r.commit
		if head == "" {
			// The land job names the head in its handoff too.
			if head = handoffField(res.Handoff, "updated_head"); head != "" && head != g.Head {
				r.newHead(g, head)
				staleChecks(g, RoleUnknown, head)
			}
		}
		if head == "" || head == g.ReviewedHead {
			// The engine never trusts an omission (issue 23): without the
			// new head it cannot tell what would merge, so nothing merges on
			// the approvals and checks of the old one.
			return r.refuseMergeResult(t, st, "it reports the branch brought up to date but names no new head")
		}
		// The harness made that head itself: the reviewed head merged with
		// the base, the tree its gate tested. It is what merges now.
		g.ReviewedHead = g.Head
		return r.want(t, g, StepSpec{Role: RoleMerge, Purpose: PurposeMerge, From: st.From})
	case RouteHeadMoved:
		if g == nil {
			return r.retry(t, st, "merge result on the session")
		}
		m := ParseHeadMove(res.Handoff)
		if m.Reviewed == "" {
			m.Reviewed = g.ReviewedHead
		}
		if m.Head == "" {
			m.Head = g.Head // the event's commit, when the executor put it there
		}
		return r.headMoved(t, g, from, m)
	case RouteStepRetry:
		return r.retry(t, st, "no usable verdict: "+feedback)
	case RouteDone:
		r.notify(NoticeSummary, r.completionSummary())
		r.end(SessionDone, "BAZINGA verified")
		return "done"
	case RouteRejected:
		if r.s.Status == SessionValidating {
			r.s.Status = SessionRunning
		}
		r.s.Inbox = append(r.s.Inbox, Note{Urgent: true, Text: "Validation rejected BAZINGA: " + feedback + handoffText(res.Handoff)})
		return "pm"
	}
	return r.retry(t, st, "unhandled route "+row.Route.String())
}

// qaFailed sends a group QA failed back to its implementer, a senior after
// a revision or a hard challenge.
func (r *reconciler) qaFailed(t *Track, g *Group, st *Step, feedback string) string {
	level := challengeLevel(st.Result.Handoff)
	t.Counters.ChallengeLevel = level
	t.Counters.Revisions++
	role := r.implementer(g)
	if role == RoleDeveloper && (t.Counters.Revisions >= 2 || level >= 3) {
		r.escalate(g)
		role = RoleSenior
	}
	return r.want(t, g, StepSpec{Role: role, Purpose: PurposeFixQA, From: st.ID, Feedback: feedback})
}

// approved sends a group the tech lead approved to its merge.
func (r *reconciler) approved(t *Track, g *Group, st *Step, feedback string) string {
	if g == nil {
		return r.backToBlocked(t, g, st, feedback)
	}
	g.ApprovedRev = r.rev
	// What the tech lead reviewed is the head its step reported: the
	// merge lands that commit and nothing else.
	g.ReviewedHead = g.Head
	return r.want(t, g, StepSpec{Role: RoleMerge, Purpose: PurposeMerge, From: st.ID})
}

// changesRequested climbs the escalation ladder of requested changes.
func (r *reconciler) changesRequested(t *Track, g *Group, st *Step, feedback string) string {
	t.Counters.ChangesRequested++
	t.Counters.Revisions++
	n := t.Counters.ChangesRequested
	return r.escalationLadder(t, g, n, PurposeFixReview, st.ID, feedback,
		fmt.Sprintf("the tech lead requested changes %d times; simplify or split the group", n))
}

// highFinding routes a review with a HIGH finding (issue 26, seed 004): the
// group goes back as for a QA failure or requested changes while it has
// revisions for HIGH findings left (limits.high_finding_revisions); a HIGH
// finding after them holds the group for a human (a findings checkpoint),
// never another silent loop.
func (r *reconciler) highFinding(t *Track, g *Group, st *Step, feedback string) string {
	if g != nil && t.Counters.HighRounds >= r.cfg.Limits.HighRevisions() {
		t.Next = nil
		t.Stage = StageBlocked
		g.Held = &FindingHold{Step: st.ID, Role: st.Role}
		r.changed = true
		r.report("group %s: a HIGH finding is still open after %d revision(s); a human decides", g.ID, t.Counters.HighRounds)
		return "checkpoint"
	}
	t.Counters.HighRounds++
	if st.Role == RoleQA {
		return r.qaFailed(t, g, st, feedback)
	}
	return r.changesRequested(t, g, st, feedback)
}

func feedbackIf(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}

// summaryText joins a result's summary lines.
func summaryText(res *Result) string {
	if len(res.Summary) == 0 {
		return res.Status.String()
	}
	return strings.Join(res.Summary, "; ")
}

// handoffText renders a handoff for a note, bounded so notes stay small.
func handoffText(h json.RawMessage) string {
	if len(h) == 0 {
		return ""
	}
	const max = 2000
	s := string(h)
	if len(s) > max {
		s = s[:max] + "…"
	}
	return "\n" + s
}

// implementer is who implements a group now.
func (r *reconciler) implementer(g *Group) Role {
	switch {
	case g == nil:
		return RoleDeveloper
	case g.Type == GroupResearch:
		return RoleRequirements
	case g.Tier == TierSenior || g.Escalated:
		return RoleSenior
	}
	return RoleDeveloper
}

func (r *reconciler) escalate(g *Group) {
	if g != nil && g.Type != GroupResearch {
		g.Escalated = true
	}
}

// blockedRole is the role that gets the work back after an investigation.
func (r *reconciler) blockedRole(t *Track, g *Group, asker Role) Role {
	switch {
	case g == nil:
		return RolePM
	case asker.IsImplementer():
		return asker
	case t.Blocked != RoleUnknown:
		return t.Blocked
	}
	return r.implementer(g)
}

// backToBlocked hands the work back to the role a tech lead or investigator was helping.
func (r *reconciler) backToBlocked(t *Track, g *Group, st *Step, feedback string) string {
	role := t.Blocked
	t.Blocked = RoleUnknown
	t.Counters.InvestigationIterations = 0
	if g == nil || role == RolePM {
		return r.want(t, nil, StepSpec{Role: RolePM, Purpose: PurposeCoordinate, From: st.ID,
			Feedback: "Findings for your question: " + feedback})
	}
	if !role.IsImplementer() {
		role = r.implementer(g)
	}
	if role == RoleDeveloper && g.Escalated {
		role = RoleSenior
	}
	return r.want(t, g, StepSpec{Role: role, Purpose: PurposeApplyGuidance, From: st.ID, Feedback: feedback})
}

// refuseMergeResult refuses a merge result the engine cannot act on
// safely: it reports why and holds the merge step for a human, who looks
// at the branch and resumes; the merge step then lands the reviewed head
// or reports where the branch is.
func (r *reconciler) refuseMergeResult(t *Track, st *Step, why string) string {
	r.report("refused the %s result of step %s: %s", st.Result.Status, st.ID, why)
	spec := st.StepSpec
	spec.Attempt = 1
	t.Next = &spec
	t.Stage = StageBlocked
	r.pause(fmt.Sprintf("the merge step %s of group %s returned %s, but %s; nothing was merged. Check the group branch, then resume",
		st.ID, st.Group, st.Result.Status, why))
	return "paused"
}

func (r *reconciler) routeMergeFailed(t *Track, g *Group, st *Step, feedback string) string {
	if g == nil {
		return r.retry(t, st, "merge result on the session")
	}
	return r.mergeFailed(t, g, st.ID, st.Result.Status.String()+": "+feedback+handoffText(st.Result.Handoff))
}

// mergeFailed sends a group that could not land (a conflict, a failed test
// gate, failed required checks) back to be fixed, escalating with each failure.
func (r *reconciler) mergeFailed(t *Track, g *Group, from, why string) string {
	t.Counters.MergeFailures++
	t.Counters.Revisions++
	n := t.Counters.MergeFailures
	return r.escalationLadder(t, g, n, PurposeFixMerge, from, why, fmt.Sprintf("group %s failed to merge %d times (%s)", g.ID, n, why))
}

// escalationLadder is the one ladder that the n-th repeated failure of a
// kind (changes requested, a merge that failed) climbs: the implementer
// fixes it, then a senior, then the tech lead guides the implementer, then
// the pm decides (pmWhy says why).
func (r *reconciler) escalationLadder(t *Track, g *Group, n int, purpose Purpose, from, feedback, pmWhy string) string {
	switch {
	case n <= 1:
		return r.want(t, g, StepSpec{Role: r.implementer(g), Purpose: purpose, From: from, Feedback: feedback})
	case n == 2:
		role := r.implementer(g)
		if role == RoleDeveloper {
			r.escalate(g)
			role = RoleSenior
		}
		return r.want(t, g, StepSpec{Role: role, Purpose: purpose, From: from, Feedback: feedback})
	case n == 3:
		t.Blocked = r.implementer(g)
		return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: PurposeGuidance, From: from, Feedback: feedback})
	}
	return r.toPM(t, g, pmWhy)
}

// want sets a track's next step, applying the stuck-detection thresholds:
// too many implementation iterations or review rounds go to the pm, QA
// attempts past the limit go to the tech lead, an exhausted investigation goes
// to the tech lead with partial findings. It returns where the work went.
func (r *reconciler) want(t *Track, g *Group, spec StepSpec) string {
	lim := r.cfg.Limits
	c := &t.Counters
	if g == nil && !leadRole(spec) {
		// The session lead has no branch to implement, test or merge on.
		return r.want(t, nil, StepSpec{Role: RolePM, Purpose: PurposeCoordinate, From: spec.From,
			Feedback: fmt.Sprintf("(a %s step was asked for at session level) %s", spec.Role, spec.Feedback)})
	}
	switch {
	case spec.Role.IsImplementer() && spec.Purpose != PurposeDiagnostic && c.Iterations >= lim.DeveloperIterations:
		return r.toPM(t, g, fmt.Sprintf("group %s is stuck after %d implementation iterations; split or simplify it", groupName(g), c.Iterations))
	case spec.Role == RoleQA && c.QAAttempts >= lim.QAAttempts:
		t.Blocked = r.implementer(g)
		return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: PurposeGuidance, From: spec.From,
			Feedback: fmt.Sprintf("QA ran %d times without passing; help the implementer meet the test requirements. %s", c.QAAttempts, spec.Feedback)})
	case spec.Role == RoleTechLead && spec.Purpose == PurposeReview && c.ReviewAttempts >= lim.ReviewAttempts:
		return r.toPM(t, g, fmt.Sprintf("group %s went through %d reviews without approval; mediate or simplify", groupName(g), c.ReviewAttempts))
	case spec.Role == RoleTechLead && spec.Purpose != PurposeReview && c.GuidanceSteps >= lim.ReviewAttempts:
		return r.toPM(t, g, fmt.Sprintf("group %s needed tech lead guidance %d times; decide how to proceed", groupName(g), c.GuidanceSteps))
	case spec.Role == RoleInvestigator && lim.InvestigationIterations == 0:
		if t.Blocked == RoleUnknown {
			t.Blocked = r.blockedRole(t, g, RoleUnknown)
		}
		return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: PurposeGuidance, From: spec.From,
			Feedback: "Investigation is disabled; unblock directly. " + spec.Feedback})
	case spec.Role == RoleInvestigator && c.InvestigationIterations >= lim.InvestigationIterations:
		return r.want(t, g, StepSpec{Role: RoleTechLead, Purpose: PurposeValidateFindings, From: spec.From,
			Feedback: fmt.Sprintf("The investigation used its %d iterations; judge the partial findings. %s", c.InvestigationIterations, spec.Feedback)})
	}
	if spec.Model == "" {
		spec.Model = r.cfg.Models.For(spec.Role)
	}
	if spec.Attempt == 0 {
		spec.Attempt = 1
	}
	spec.Feedback = cutMiddle(spec.Feedback, MaxFeedbackBytes) // issue 27: what a prompt shows of it
	if g != nil {
		g.Held = nil // new work (a retry, the pm, a human's direction) ends a findings hold
	}
	t.Next = &spec
	t.Stage = stageFor(spec.Role)
	if t.Wait == WaitPM {
		t.Wait = WaitNone
		t.WaitDetail = ""
	}
	r.changed = true
	return spec.Role.String()
}

func leadRole(spec StepSpec) bool {
	switch spec.Role {
	case RolePM, RoleValidate, RoleInvestigator, RoleTechLead:
		return true
	case RoleDeveloper:
		return spec.Purpose == PurposeDiagnostic
	}
	return false
}

func groupName(g *Group) string {
	if g == nil {
		return "the session"
	}
	return g.ID
}

func stageFor(role Role) Stage {
	switch role {
	case RoleQA:
		return StageQA
	case RoleTechLead:
		return StageReview
	case RoleInvestigator:
		return StageInvestigation
	case RoleMerge:
		return StageApproved
	}
	return StageDev
}

// toPM parks a group until the pm decides, with an urgent note saying why.
func (r *reconciler) toPM(t *Track, g *Group, why string) string {
	r.changed = true
	if g == nil {
		spec := StepSpec{Role: RolePM, Purpose: PurposeCoordinate, Model: r.cfg.Models.PM, Attempt: 1, Feedback: why}
		t.Next = &spec
		return "pm"
	}
	t.Next = nil
	t.Stage = StageBlocked
	t.Wait = WaitPM
	t.WaitDetail = why
	r.s.Inbox = append(r.s.Inbox, Note{Group: g.ID, Text: why, Urgent: true})
	return "pm"
}

// returnNotes puts the notes a pm step received back in the inbox when its
// result did not deal with them.
func (r *reconciler) returnNotes(st *Step) {
	if len(st.Notes) == 0 {
		return
	}
	r.s.Inbox = append(append([]Note(nil), st.Notes...), r.s.Inbox...)
}

func (r *reconciler) routePlan(st *Step) string {
	s := &r.s
	plan, err := ParsePlan(st.Result.Handoff)
	if err == nil && len(s.Groups) > 0 {
		// A new plan mid-session adds groups; it cannot rewrite merged work.
		return r.applyContinue(st, continueDecision{added: plan.Groups})
	}
	var groups []Group
	if err == nil {
		groups, err = buildGroups(s.ID, st.ID, s.Groups, plan.Groups, 1)
		err = withProblems(err, criteriaBudgetProblems(plan.SuccessCriteria))
	}
	if err != nil {
		r.returnNotes(st)
		r.planRefused(err)
		return r.want(&s.Lead, nil, StepSpec{Role: RolePM, Purpose: st.Purpose, From: st.ID,
			Feedback: "Your plan could not be used: " + err.Error() + ". Send PLANNING_COMPLETE with a corrected plan."})
	}
	s.Groups = groups
	s.PlanRev++ // a plan checkpoint binds approvals to this revision
	if strings.EqualFold(plan.Mode, "simple") {
		s.Mode = ModeSimple
	} else {
		s.Mode = ModeParallel
	}
	s.SuccessCriteria = dedupe(plan.SuccessCriteria)
	if s.Status == SessionPlanning {
		s.Status = SessionRunning
	}
	ids := make([]string, len(groups))
	for i, g := range groups {
		ids[i] = g.ID
	}
	return "groups " + strings.Join(ids, ", ")
}

func (r *reconciler) routeContinue(st *Step) string {
	d, err := parseContinue(st.Result.Handoff)
	if err != nil {
		r.returnNotes(st)
		return r.want(&r.s.Lead, nil, StepSpec{Role: RolePM, Purpose: st.Purpose, From: st.ID,
			Feedback: err.Error() + `; send {"groups": ["A", {"id": "D", "task": "…"}], "feedback": {"A": "…"}, "drop": ["C"]}`})
	}
	if p := feedbackBudgetProblems(d); len(p) > 0 { // issue 27
		r.returnNotes(st)
		return r.want(&r.s.Lead, nil, StepSpec{Role: RolePM, Purpose: st.Purpose, From: st.ID,
			Feedback: "Your CONTINUE could not be used: it is " + overBudget(p) + ". Send it again with shorter feedback."})
	}
	return r.applyContinue(st, d)
}

// waitingOn lists the groups parked on the pm step st, in the order it heard of them.
func (r *reconciler) waitingOn(st *Step) []string {
	var out []string
	for _, n := range st.Notes {
		if g := r.s.Group(n.Group); g != nil && g.Wait == WaitPM && g.Next == nil && !slices.Contains(out, g.ID) {
			out = append(out, g.ID)
		}
	}
	return out
}

// applyContinue applies a pm decision that names only what it means: the
// groups it continues, the ones it adds and the waiting ones it drops. A
// decision with any problem is refused whole (decisionProblems): no group
// is ever given up because the pm left it out.
func (r *reconciler) applyContinue(st *Step, d continueDecision) string {
	s := &r.s
	if problems := r.decisionProblems(st, d); len(problems) > 0 {
		return r.refuseDecision(st, problems)
	}
	var added []Group
	if len(d.added) > 0 {
		groups, err := buildGroups(s.ID, st.ID, s.Groups, d.added, r.currentPhase())
		if err != nil {
			r.planRefused(err)
			return r.refuseDecision(st, []string{"the groups you added could not be used: " + err.Error()})
		}
		added = groups
	}
	var went []string
	if len(added) > 0 {
		if !anyStarted(s.Groups) {
			// Planned before any work started (from nothing, or after a plan
			// was sent back while a group ended by hand): a plan
			// checkpoint holds it too.
			s.PlanRev++
		}
		s.Groups = append(s.Groups, added...)
		for _, g := range added {
			went = append(went, "+"+g.ID)
		}
	}
	for _, id := range d.named {
		g := s.Group(id)
		fb := d.feedback[id]
		switch {
		case g.Stage == StageMerged:
			r.report("pm named group %s, which is merged already", id)
		case g.InFlight != "":
			// At work already; the feedback rides along with its next step.
			if g.Next == nil && fb != "" {
				r.report("pm feedback for group %s arrives while it is at work; kept for its next step", id)
			}
		case g.Wait == WaitPM || (g.Next == nil && g.Started):
			g.Counters = Counters{}
			g.DependsOn = r.liveDeps(g)
			purpose := PurposeRevise
			if !g.Started {
				purpose = PurposeImplement
			}
			r.want(&g.Track, g, StepSpec{Role: r.implementer(g), Purpose: purpose, From: st.ID, Feedback: fb})
			went = append(went, g.ID)
		case g.Next != nil && fb != "":
			g.Next.Feedback = strings.TrimSpace(g.Next.Feedback + "\nFrom the pm: " + fb)
		}
	}
	for _, id := range d.dropped {
		g := s.Group(id)
		g.Stage = StageAbandoned
		g.Abandoned = &Abandonment{Step: st.ID}
		g.Wait = WaitNone
		g.WaitDetail = ""
		went = append(went, "-"+g.ID)
	}
	if s.Status == SessionPlanning && len(s.Groups) > 0 {
		s.Status = SessionRunning
	}
	if len(went) == 0 {
		return "no change"
	}
	return strings.Join(went, " ")
}

// liveDeps drops dependencies on abandoned groups: the pm has seen them.
func (r *reconciler) liveDeps(g *Group) []string {
	var out []string
	for _, d := range g.DependsOn {
		if dg := r.s.Group(d); dg != nil && dg.Stage != StageAbandoned {
			out = append(out, d)
		}
	}
	return out
}

func (r *reconciler) routeBazinga(st *Step) string {
	s := &r.s
	var open []string
	for _, g := range s.Groups {
		if !g.Stage.Finished() {
			open = append(open, fmt.Sprintf("%s (%s)", g.ID, g.Stage))
		}
	}
	if len(s.Groups) == 0 {
		open = append(open, "no groups were planned")
	}
	if len(open) > 0 {
		r.returnNotes(st)
		s.Inbox = append(s.Inbox, Note{Text: "BAZINGA refused: not all groups are merged: " + strings.Join(open, ", ")})
		return "refused: groups still open"
	}
	if s.Status != SessionPaused {
		// A paused session stays paused; resume finds the validate step queued.
		s.Status = SessionValidating
	}
	return r.want(&s.Lead, nil, StepSpec{Role: RoleValidate, Purpose: PurposeValidate, From: st.ID})
}

func (r *reconciler) routeClarify(st *Step) string {
	s := &r.s
	var h clarificationHandoff
	if len(st.Result.Handoff) > 0 {
		_ = json.Unmarshal(st.Result.Handoff, &h)
	}
	if strings.TrimSpace(h.Question) == "" {
		h.Question = summaryText(st.Result)
	}
	r.returnNotes(st)
	if p := clarificationBudgetProblems(h); len(p) > 0 { // issue 27
		return r.want(&s.Lead, nil, StepSpec{Role: RolePM, Purpose: st.Purpose, From: st.ID,
			Feedback: "Your question could not be asked: it is " + overBudget(p) + ". Ask it again, shorter."})
	}
	resume := s.Status
	if resume == SessionAwaitingInput || resume == SessionPaused {
		resume = SessionRunning
	}
	s.Clarification = &Clarification{Step: st.ID, Question: strings.TrimSpace(h.Question), Options: h.Options,
		Fallback: strings.TrimSpace(h.Fallback), AskedAt: r.now, Deadline: r.now.Add(r.cfg.ClarificationTimeout.D()), Resume: resume}
	if s.Status == SessionPlanning || s.Status == SessionRunning {
		s.Status = SessionAwaitingInput
	}
	text := s.Clarification.Question
	for i, o := range h.Options {
		text += fmt.Sprintf("\n%d. %s", i+1, o)
	}
	if h.Fallback != "" {
		text += "\nWithout an answer by " + s.Clarification.Deadline.Format("2006-01-02 15:04 MST") + ", the pm will: " + h.Fallback
	}
	r.notify(NoticeQuestion, text)
	return "question"
}

func (r *reconciler) routeAnswers(st *Step) string {
	s := &r.s
	for _, g := range s.Groups {
		if !g.Stage.Finished() {
			r.returnNotes(st)
			return r.want(&s.Lead, nil, StepSpec{Role: RolePM, Purpose: PurposeCoordinate, From: st.ID,
				Feedback: "INVESTIGATION_ONLY ends the session, but group " + g.ID + " is still open."})
		}
	}
	text := strings.Join(st.Result.Summary, "\n")
	if a := handoffField(st.Result.Handoff, "answers"); a != "" {
		text += "\n\n" + a
	}
	r.notify(NoticeAnswers, text)
	r.end(SessionDone, "investigation answered")
	return "done"
}

func (r *reconciler) completionSummary() string {
	s := &r.s
	var b strings.Builder
	merged := 0
	for _, g := range s.Groups {
		if g.Stage == StageMerged {
			merged++
		}
	}
	fmt.Fprintf(&b, "BAZINGA verified: %d of %d groups merged into %s in %d steps.", merged, len(s.Groups), s.Base, len(s.Steps))
	for _, g := range s.Groups {
		fmt.Fprintf(&b, "\n- %s %s: %s", g.ID, g.Name, g.Stage)
	}
	if f := FollowUpsText(*s); f != "" {
		b.WriteString("\n\n" + f)
	}
	return b.String()
}

// anyStarted reports whether any group started work.
func anyStarted(groups []Group) bool {
	for _, g := range groups {
		if g.Started {
			return true
		}
	}
	return false
}
