package pipeline

import (
	"fmt"
	"strings"
)

// Checkpoints (issue 13): with `checkpoints: [plan]` the session waits for a
// human's approval once the pm has planned, before any group starts; with
// `phase` it waits before each later phase starts. Opening is
// level-triggered like everything else: schedule opens the checkpoint the
// session has reached and holds the groups it covers, so no route can start
// work past it (a CONTINUE that plans from nothing reaches the plan
// checkpoint as PLANNING_COMPLETE does). Only a human passes a checkpoint:
// approve (or a resume that names it), or, at the plan checkpoint, an answer
// that sends the plan back to the pm.

// planCheckpointID names the checkpoint of the n-th plan.
func planCheckpointID(n int) string { return fmt.Sprintf("plan-%d", n) }

// phaseCheckpointID names the checkpoint before phase p.
func phaseCheckpointID(p int) string { return fmt.Sprintf("phase-%d", p) }

// approved reports whether the checkpoint id was approved.
func (s *Session) approved(id string) bool {
	for _, cp := range s.PassedCheckpoints {
		if cp.ID == id && cp.ApprovedBy != "" {
			return true
		}
	}
	return false
}

// passed returns the passed checkpoint with the id, or nil.
func (s *Session) passed(id string) *Checkpoint {
	for i := len(s.PassedCheckpoints) - 1; i >= 0; i-- {
		if s.PassedCheckpoints[i].ID == id {
			return &s.PassedCheckpoints[i]
		}
	}
	return nil
}

// Holds reports whether the checkpoint keeps group g from starting: a plan
// checkpoint holds every group, a phase checkpoint the groups of its phase
// that have not started.
func (cp *Checkpoint) Holds(g *Group) bool {
	if cp == nil || g.Stage.Finished() {
		return false
	}
	if g.Held != nil {
		// A group whose HIGH findings wait for a human waits on whichever
		// checkpoint is open: its own opens once that one passed.
		return true
	}
	if g.Started {
		return false
	}
	switch cp.Kind {
	case CheckpointPlan:
		return true
	case CheckpointPhase:
		return g.Phase == cp.Phase
	}
	return false
}

// checkpointWait is the wait detail of a track a checkpoint holds.
func checkpointWait(cp *Checkpoint) string {
	if cp.Kind == CheckpointFindings {
		return cp.ID + " waits for a human: accept the HIGH findings of group " + cp.Group + " or answer with direction"
	}
	if cp.Kind == CheckpointPlan {
		return cp.ID + " waits for approval (or feedback that sends it back to the pm)"
	}
	return fmt.Sprintf("%s waits for approval before phase %d starts", cp.ID, cp.Phase)
}

// checkpoints opens the checkpoint the session has reached, and drops a
// phase checkpoint whose phase has nothing left to start (its groups were
// closed or dropped while it waited). It runs before the groups are
// scheduled, so a checkpoint opened now holds them at once.
func (r *reconciler) checkpoints(phase int) {
	s := &r.s
	if cp := s.Checkpoint; cp != nil {
		if cp.Kind == CheckpointFindings {
			if g := s.Group(cp.Group); g != nil && g.Held != nil && g.Held.Step == cp.Step && !g.Stage.Finished() {
				return
			}
			// The group was given other work or ended while it waited
			// (a retry, the pm, its PR closed): nothing is left to decide.
			r.report("%s closed: group %s no longer waits on its findings", cp.ID, cp.Group)
			s.Checkpoint = nil
			r.changed = true
			if s.Status == SessionAwaitingInput {
				s.Status = r.liveStatus()
			}
		} else if cp.Kind == CheckpointPlan || r.startable(cp.Phase) {
			return
		}
	}
	if cp := s.Checkpoint; cp != nil {
		r.report("%s closed: phase %d has no group left to start", cp.ID, cp.Phase)
		s.Checkpoint = nil
		r.changed = true
		if s.Status == SessionAwaitingInput {
			s.Status = r.liveStatus()
		}
	}
	for i := range s.Groups {
		if g := &s.Groups[i]; g.Held != nil && !g.Stage.Finished() {
			r.openFindings(g)
			return
		}
	}
	// A plan waits once: approved, or sent back (its groups gone), it does
	// not open again; the pm's next plan is a new revision.
	if r.cfg.HasCheckpoint(CheckpointPlan) && len(s.Groups) > 0 && !anyStarted(s.Groups) && s.PlanRev > 0 && s.passed(planCheckpointID(s.PlanRev)) == nil {
		r.open(Checkpoint{ID: planCheckpointID(s.PlanRev), Kind: CheckpointPlan, Step: s.Lead.Last},
			fmt.Sprintf("The plan (%s) waits for approval before any work starts: %s.", planCheckpointID(s.PlanRev), r.planCounts()))
		return
	}
	if !r.cfg.HasCheckpoint(CheckpointPhase) || !r.startable(phase) || s.approved(phaseCheckpointID(phase)) {
		return
	}
	first := phase
	for _, g := range s.Groups {
		first = min(first, g.Phase)
	}
	if first == phase {
		return // the first phase starts with the plan
	}
	r.open(Checkpoint{ID: phaseCheckpointID(phase), Kind: CheckpointPhase, Phase: phase},
		fmt.Sprintf("Phase %d is done; phase %d (%s) waits for approval before it starts.", phase-1, phase, strings.Join(r.phaseGroups(phase), ", ")))
}

// findingsCheckpointID names the findings checkpoint of a review step.
func findingsCheckpointID(group, step string) string {
	return "findings-" + group + "-" + step[strings.LastIndexByte(step, '/')+1:]
}

// FindingsNoticeMarker is in the text of every findings checkpoint's
// notice: front-ends that say how to answer a checkpoint tell this one
// apart by it (the notice carries no kind of checkpoint).
const FindingsNoticeMarker = "still finds HIGH issues"

// openFindings opens the findings checkpoint of a held group (issue 26).
func (r *reconciler) openFindings(g *Group) {
	h := g.Held
	what := "the review"
	var high []Finding
	if st := r.step(h.Step); st != nil && st.Result != nil {
		high = BySeverity(st.Result.Findings, SeverityHigh)
		what = fmt.Sprintf("%s step %s", st.Role, st.ID)
	}
	text := fmt.Sprintf("Group %s: %s "+FindingsNoticeMarker+" after %d revision(s) (limits.high_finding_revisions); "+
		"approve to accept the findings and go on, or answer with direction to send the group back with it:", g.ID, what, g.Counters.HighRounds)
	for _, f := range high {
		text += "\n- " + f.Text()
	}
	r.open(Checkpoint{ID: findingsCheckpointID(g.ID, h.Step), Kind: CheckpointFindings, Group: g.ID, Step: h.Step}, text)
}

// decideFindings applies a human's decision at a findings checkpoint:
// accepted, the group goes on as if the findings did not block it (its
// HIGH and MEDIUM ones become follow-ups); answered with direction, it goes
// back to its implementer with the human's words, its HIGH revisions
// counted afresh.
func (r *reconciler) decideFindings(cp Checkpoint, who, direction string) {
	g := r.s.Group(cp.Group)
	if g == nil || g.Held == nil {
		return
	}
	h := *g.Held
	g.Held = nil
	g.Counters.HighRounds = 0
	st := r.step(h.Step)
	findings := ""
	if st != nil && st.Result != nil {
		findings = FindingsText(st.Result.Findings)
	}
	if direction != "" {
		g.Counters.Revisions++
		purpose := PurposeFixReview
		if h.Role == RoleQA {
			purpose = PurposeFixQA
		}
		r.want(&g.Track, g, StepSpec{Role: r.implementer(g), Purpose: purpose, From: h.Step,
			Feedback: fmt.Sprintf("%s decided on the HIGH findings that survived their revision: %s\nFindings:\n%s", who, direction, findings)})
		r.notify(NoticeInfo, fmt.Sprintf("%s answered %s: group %s goes back to its %s with the direction.", who, cp.ID, g.ID, r.implementer(g)))
		return
	}
	if st != nil && st.Result != nil {
		for _, f := range st.Result.Findings {
			if f.Severity == SeverityHigh {
				f.Severity = SeverityMedium // accepted: a known issue from now on
				f.Problem = ValidPrefix("(HIGH, accepted by "+who+") "+f.Problem, MaxFindingTextBytes)
			}
			if f.Severity == SeverityMedium {
				r.followUp(FollowUp{Group: g.ID, Step: h.Step, Finding: f})
			}
		}
	}
	if h.Role == RoleQA {
		r.want(&g.Track, g, StepSpec{Role: RoleTechLead, Purpose: PurposeReview, From: h.Step,
			Feedback: "QA's HIGH findings were accepted by " + who + " as known issues:\n" + findings})
	} else if st != nil {
		r.approved(&g.Track, g, st, "")
	}
	r.notify(NoticeInfo, fmt.Sprintf("%s accepted the findings of %s: group %s goes on.", who, cp.ID, g.ID))
}

// startable reports whether phase has a group that has not started.
func (r *reconciler) startable(phase int) bool {
	for _, g := range r.s.Groups {
		if g.Phase == phase && !g.Started && !g.Stage.Finished() {
			return true
		}
	}
	return false
}

func (r *reconciler) phaseGroups(phase int) []string {
	var ids []string
	for _, g := range r.s.Groups {
		if g.Phase == phase && !g.Started && !g.Stage.Finished() {
			ids = append(ids, g.ID)
		}
	}
	return ids
}

func (r *reconciler) planCounts() string {
	phases := map[int]bool{}
	for _, g := range r.s.Groups {
		phases[g.Phase] = true
	}
	return fmt.Sprintf("%d group(s) in %d phase(s), %d success criteria", len(r.s.Groups), len(phases), len(r.s.SuccessCriteria))
}

// open opens a checkpoint; a paused session stays paused (resume finds it).
func (r *reconciler) open(cp Checkpoint, text string) {
	s := &r.s
	cp.Since = r.now
	s.Checkpoint = &cp
	if s.Status == SessionPlanning || s.Status == SessionRunning {
		s.Status = SessionAwaitingInput
	}
	how := "approve it to continue"
	switch cp.Kind {
	case CheckpointPlan:
		how = "approve it to start the work, or send feedback to send the plan back to the pm"
	case CheckpointFindings:
		r.notify(NoticeCheckpoint, text) // says how before the findings it lists
		return
	}
	r.notify(NoticeCheckpoint, text+" "+how+".")
}

// pass closes the open checkpoint with how it ended.
func (r *reconciler) pass(cp Checkpoint) {
	s := &r.s
	cp.Ended = r.now
	s.PassedCheckpoints = append(s.PassedCheckpoints, cp)
	s.Checkpoint = nil
	r.changed = true
	if s.Status == SessionAwaitingInput {
		s.Status = r.liveStatus()
	}
}

// approve passes the open checkpoint for who, if the command approves it:
// approve names it or nothing, resume must name it. It reports whether it
// did; a refusal is told.
func (r *reconciler) approve(who string, c *Command) bool {
	s := &r.s
	cp := s.Checkpoint
	if cp == nil {
		if c.Kind != CommandApprove {
			return false
		}
		msg := "Nothing waits for approval."
		if p := s.passed(c.Checkpoint); p != nil && p.ApprovedBy != "" {
			msg = fmt.Sprintf("%s was already approved by %s.", p.ID, p.ApprovedBy)
		}
		r.notify(NoticeInfo, msg)
		return false
	}
	bound := c.Checkpoint == cp.ID || c.Kind == CommandApprove && c.Checkpoint == ""
	if !bound {
		if c.Kind == CommandApprove {
			r.notify(NoticeInfo, r.staleApproval(who, c.Checkpoint, cp))
		}
		return false
	}
	done := *cp
	done.ApprovedBy = who
	r.pass(done)
	switch cp.Kind {
	case CheckpointFindings:
		r.decideFindings(done, who, "")
	case CheckpointPlan:
		r.notify(NoticeInfo, fmt.Sprintf("%s approved by %s: the work starts.", cp.ID, who))
	default:
		r.notify(NoticeInfo, fmt.Sprintf("%s approved by %s: phase %d starts.", cp.ID, who, cp.Phase))
	}
	return true
}

// staleApproval says why an approval bound to another checkpoint is refused.
func (r *reconciler) staleApproval(who, id string, cp *Checkpoint) string {
	what := "was written before " + cp.ID + " was shown"
	if p := r.s.passed(id); p != nil {
		what = "is for " + p.ID + ", which " + map[bool]string{true: "was already approved", false: "was sent back to the pm"}[p.ApprovedBy != ""]
	}
	return fmt.Sprintf("The approval by %s %s; it does not approve %s. Review %s, then approve again.", who, what, cp.ID, cp.ID)
}

// staleFeedback says why feedback bound to another checkpoint is refused.
func (r *reconciler) staleFeedback(who, id string, cp *Checkpoint) string {
	what := "was written before " + cp.ID + " was shown"
	if p := r.s.passed(id); p != nil {
		what = "is about " + p.ID + ", which no longer waits"
	}
	return fmt.Sprintf("The feedback by %s %s; it does not change %s. Review %s, then send your feedback again.", who, what, cp.ID, cp.ID)
}

// feedback is an answer at an open checkpoint with no question open: at the
// plan checkpoint the plan goes back to the pm with the feedback (the new
// plan reaches the checkpoint again); at a phase checkpoint the pm hears it
// and the checkpoint stays open.
func (r *reconciler) feedback(who, text string) {
	s := &r.s
	cp := s.Checkpoint
	text = strings.TrimSpace(text)
	if text == "" {
		r.notify(NoticeInfo, "The feedback is empty; say what to change.")
		return
	}
	if cp.Kind == CheckpointFindings {
		done := *cp
		done.RevisedBy, done.Feedback = who, text
		r.pass(done)
		r.decideFindings(done, who, text)
		return
	}
	if cp.Kind != CheckpointPlan {
		r.changed = true
		s.Inbox = append(s.Inbox, Note{Urgent: true, Text: fmt.Sprintf("Before phase %d starts, %s says: %s", cp.Phase, who, text)})
		r.notify(NoticeInfo, fmt.Sprintf("The feedback of %s goes to the pm; %s still waits for approval.", who, cp.ID))
		return
	}
	done := *cp
	done.RevisedBy, done.Feedback = who, text
	r.pass(done)
	// The plan under review goes back; a group a human merged meanwhile
	// (nothing started: the plan still waited) stays, since its work is on
	// the base, and the new plan adds to it as a plan mid-session does.
	var kept []Group
	for _, g := range s.Groups {
		if g.Stage == StageMerged {
			kept = append(kept, g)
		}
	}
	s.Groups = kept
	if len(kept) == 0 {
		s.SuccessCriteria, s.Mode = nil, ModeSimple
	}
	if s.Status == SessionRunning || s.Status == SessionAwaitingInput && s.Clarification == nil {
		s.Status = SessionPlanning
	}
	r.want(&s.Lead, nil, StepSpec{Role: RolePM, Purpose: PurposePlan, From: cp.Step,
		Feedback: fmt.Sprintf("%s reviewed your plan (%s) before any work started and asks for changes:\n%s\n"+
			"Send PLANNING_COMPLETE with the whole revised plan.", who, cp.ID, text)})
	r.notify(NoticeInfo, fmt.Sprintf("%s sent %s back to the pm: it plans again with the feedback.", who, cp.ID))
}

// PlanText renders the plan for a person to approve: the groups by phase
// with their tasks and dependencies, and the success criteria. Front-ends
// show it at the plan checkpoint (the bot renders its own Markdown).
func PlanText(s Session) string {
	var b strings.Builder
	phases := []int{}
	seen := map[int]bool{}
	for _, g := range s.Groups {
		if !seen[g.Phase] {
			seen[g.Phase] = true
			phases = append(phases, g.Phase)
		}
	}
	for _, p := range phases {
		fmt.Fprintf(&b, "Phase %d:\n", p)
		for _, g := range s.Groups {
			if g.Phase != p {
				continue
			}
			fmt.Fprintf(&b, "  %s %s (%s, %s", g.ID, g.Name, g.Type, g.Tier)
			if g.Size != SizeUnknown {
				fmt.Fprintf(&b, ", size %s", g.Size)
			}
			b.WriteString(")")
			if len(g.DependsOn) > 0 {
				fmt.Fprintf(&b, ", after %s", strings.Join(g.DependsOn, ", "))
			}
			fmt.Fprintf(&b, ": %s\n", foldLine(g.Task, 200))
		}
	}
	if len(s.SuccessCriteria) > 0 {
		b.WriteString("Success criteria:\n")
		for _, c := range s.SuccessCriteria {
			fmt.Fprintf(&b, "  - %s\n", foldLine(c, 200))
		}
	}
	return b.String()
}

// foldLine folds text onto one line of at most n runes.
func foldLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
