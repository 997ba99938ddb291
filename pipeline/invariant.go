package pipeline

import (
	"errors"
	"fmt"
)

// CheckLiveness verifies the liveness invariant of ARCHITECTURE.md §3 on a session that
// Reconcile returned: every group that is not merged or abandoned has exactly
// one step in flight or a named reason to wait; a live session always has
// something in flight or waits on a human; the caps hold (the session lead's
// developer diagnostics count against max_parallel). A configuration Reconcile
// refuses is an error here too. Front-ends may call it too; the tests call it
// after every Reconcile.
func CheckLiveness(s Session, cfg Config) error {
	if err := cfg.EngineError(); err != nil {
		return err
	}
	if s.Status == SessionNew {
		if len(s.Steps) > 0 || len(s.Groups) > 0 {
			return errors.New("a session that has not started has steps or groups")
		}
		return nil
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	inFlight := map[string][]string{} // group → steps in flight
	impl, research, merging := 0, 0, 0
	for _, st := range s.Steps {
		if st.State != StepInFlight {
			continue
		}
		inFlight[st.Group] = append(inFlight[st.Group], st.ID)
		switch {
		case st.Role.IsImplementer():
			impl++
			if g := s.Group(st.Group); g != nil && g.Type == GroupResearch {
				research++
			}
		case st.Role == RoleMerge:
			merging++
		}
	}
	total := 0
	for _, ids := range inFlight {
		total += len(ids)
	}
	if s.Status.Terminal() {
		if total > 0 {
			fail("session %s still has %d step(s) in flight", s.Status, total)
		}
		if s.Status != SessionDone && s.Reason == "" {
			fail("session %s without a reason", s.Status)
		}
		return errors.Join(errs...)
	}
	if s.Status == SessionPaused && s.Reason == "" {
		fail("session paused without a reason")
	}
	if (s.Status == SessionAwaitingInput) != (s.Clarification != nil || s.Checkpoint != nil) && s.Status != SessionPaused {
		fail("session %s but clarification open = %v, checkpoint open = %v", s.Status, s.Clarification != nil, s.Checkpoint != nil)
	}

	checkTrack := func(name, group string, t Track) {
		ids := inFlight[group]
		switch {
		case len(ids) > 1:
			fail("%s has %d steps in flight: %v", name, len(ids), ids)
		case len(ids) == 1 && t.InFlight != ids[0]:
			fail("%s: step %s is in flight but the track says %q", name, ids[0], t.InFlight)
		case len(ids) == 0 && t.InFlight != "":
			fail("%s: track says %s is in flight, but it is not", name, t.InFlight)
		case len(ids) == 0 && (t.Wait == WaitNone || t.WaitDetail == ""):
			fail("%s is idle without a named reason (wait %q, detail %q)", name, t.Wait, t.WaitDetail)
		case len(ids) == 1 && t.Wait != WaitNone:
			fail("%s has a step in flight and also waits on %s", name, t.Wait)
		}
	}
	humanWait := s.Status == SessionPaused || s.Clarification != nil || s.Checkpoint != nil
	pmPending := s.Lead.InFlight != "" || s.Lead.Next != nil || hasUrgent(s.Inbox) || s.Clarification != nil
	for _, g := range s.Groups {
		if g.Stage.Finished() {
			if ids := inFlight[g.ID]; len(ids) > 0 {
				fail("group %s is %s but has steps in flight: %v", g.ID, g.Stage, ids)
			}
			continue
		}
		checkTrack("group "+g.ID, g.ID, g.Track)
		switch g.Wait {
		case WaitHumanReview:
			humanWait = true
		case WaitChecks:
			// CI is outside the session like a human: the front-end reports it.
			humanWait = true
			if c := checksApply(&g); c == nil || c.State != ChecksPending {
				fail("group %s waits on required checks, but no pending report is recorded for its head", g.ID)
			}
		case WaitPM:
			if !pmPending && s.Status != SessionPaused {
				fail("group %s waits on the pm, but no pm step is in flight or due", g.ID)
			}
		case WaitCap:
			if impl == 0 {
				fail("group %s waits on the cap with no implementation step in flight", g.ID)
			}
		case WaitMergeLane:
			if merging == 0 {
				fail("group %s waits on the merge lane with no merge in flight", g.ID)
			}
		case WaitPaused:
			if s.Status != SessionPaused {
				fail("group %s waits on a pause, but the session is %s", g.ID, s.Status)
			}
		case WaitCheckpoint:
			// A checkpoint is a named wait only while one is open and holds the group.
			if !s.Checkpoint.Holds(&g) {
				fail("group %s waits on a checkpoint, but %s", g.ID, checkpointState(s.Checkpoint))
			}
		}
	}
	checkTrack("the session lead", LeadGroup, s.Lead)
	if s.Lead.Wait == WaitCheckpoint && s.Checkpoint == nil {
		fail("the session lead waits on a checkpoint, but none is open")
	}
	if cp := s.Checkpoint; cp != nil && total == 0 && s.Status != SessionPaused {
		// An open checkpoint that no track waits on would be an idle session
		// that only looks like it waits for a human.
		waiting := s.Lead.Wait == WaitCheckpoint
		for _, g := range s.Groups {
			waiting = waiting || g.Wait == WaitCheckpoint
		}
		if !waiting {
			fail("%s is open, but nothing waits on it", cp.ID)
		}
	}
	if s.Lead.Wait == WaitCap && impl == 0 {
		fail("the session lead waits on the cap with no implementation step in flight")
	}
	if total == 0 && !humanWait {
		fail("session %s has nothing in flight and waits on no human", s.Status)
	}
	limit := cfg.MaxParallel
	if s.Mode == ModeSimple {
		limit = 1
	}
	if impl > limit {
		fail("%d implementation steps in flight, cap %d", impl, limit)
	}
	if research > MaxResearchInFlight {
		fail("%d research steps in flight, cap %d", research, MaxResearchInFlight)
	}
	if merging > 1 {
		fail("%d merges in flight on %s", merging, s.Base)
	}
	return errors.Join(errs...)
}

func checkpointState(cp *Checkpoint) string {
	if cp == nil {
		return "none is open"
	}
	return cp.ID + " does not hold it"
}
