package pipeline

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The seeds' stalls, as regression scenarios.

// Seed 001: PARTIAL for B and READY_FOR_REVIEW for C arrive together; the
// prompt orchestrator routed C and forgot B. One Reconcile must do both.
func TestParallelResultsAreAllRouted(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1), pg("C", 1))
	b, c := h.inFlight("B"), h.inFlight("C")
	acts := h.reconcile(
		StepResult("s1", b.ID, Result{Status: StatusPartial, Summary: []string{"69 failures remain"}}),
		StepResult("s1", c.ID, Result{Status: StatusReadyForReview}),
	)
	var got []string
	for _, a := range acts {
		if a.Kind == ActionDispatch {
			got = append(got, a.Group+":"+a.Role.String())
		}
	}
	assert.ElementsMatch(t, []string{"B:developer", "C:tech_lead"}, got)
	assert.Equal(t, "69 failures remain", h.inFlight("B").Feedback)
}

// Seed 002: the orchestrator answered PARTIAL with a message and stopped. A
// PARTIAL always yields a dispatch, at every point of the escalation ladder.
func TestPartialAlwaysDispatches(t *testing.T) {
	for _, tier := range []string{"developer", "senior"} {
		h := newHarness(t, DefaultConfig())
		g := pg("A", 1)
		g.Tier = tier
		h.plan(g)
		for i := 0; i < 12 && h.s.Status == SessionRunning; i++ {
			st, ok := h.maybeInFlight("A")
			if !ok {
				break
			}
			status := StatusPartial
			if st.Role == RoleTechLead {
				status = StatusUnblockingGuidance
			}
			h.report("A", status, "", "still failing")
			assert.NotEmpty(t, h.dispatched(), "tier %s, round %d: a PARTIAL produced no dispatch", tier, i)
		}
	}
}

// Five ready groups, a cap of four: the fifth starts as soon as one finishes.
func TestFifthGroupStartsWhenASlotFrees(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1), pg("C", 1), pg("D", 1), pg("E", 1))
	for _, id := range []string{"A", "B", "C", "D"} {
		assert.Equal(t, RoleDeveloper, h.inFlight(id).Role)
	}
	e := h.group("E")
	assert.Equal(t, WaitCap, e.Wait)
	assert.Equal(t, "4 of 4 implementation slots busy", e.WaitDetail)
	h.report("C", StatusReadyForQA, "")
	assert.Equal(t, RoleQA, h.inFlight("C").Role)
	assert.Equal(t, RoleDeveloper, h.inFlight("E").Role, "E starts in the same reconcile")
}

// Phase 2 starts by itself once phase 1 is merged.
func TestNextPhaseStartsByItself(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1), pg("C", 2), pg("D", 2, "C"))
	assert.Equal(t, WaitPhase, h.group("C").Wait)
	assert.Equal(t, WaitPhase, h.group("D").Wait)
	h.through("A", StatusReadyForReview, StatusApproved, StatusMergeSuccess)
	assert.Equal(t, WaitPhase, h.group("C").Wait, "B of phase 1 is not merged yet")
	h.through("B", StatusReadyForReview, StatusApproved, StatusMergeSuccess)
	assert.Equal(t, RoleDeveloper, h.inFlight("C").Role)
	assert.Equal(t, WaitDependencies, h.group("D").Wait)
	assert.Equal(t, "waits for C to merge", h.group("D").WaitDetail)
	h.through("C", StatusReadyForReview, StatusApproved, StatusMergeSuccess)
	assert.Equal(t, RoleDeveloper, h.inFlight("D").Role)
}

// Research groups have two slots of their own within the cap.
func TestResearchCap(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	var groups []PlanGroup
	for _, id := range []string{"R1", "R2", "R3"} {
		g := pg(id, 1)
		g.Type = "research"
		groups = append(groups, g)
	}
	h.plan(append(groups, pg("A", 1))...)
	assert.Equal(t, RoleRequirements, h.inFlight("R1").Role)
	assert.Equal(t, RoleRequirements, h.inFlight("R2").Role)
	assert.Equal(t, WaitCap, h.group("R3").Wait)
	assert.Equal(t, RoleDeveloper, h.inFlight("A").Role)
}

func TestMaxParallelAndSimpleMode(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxParallel = 2
	h := newHarness(t, cfg)
	h.plan(pg("A", 1), pg("B", 1), pg("C", 1))
	assert.Equal(t, WaitCap, h.group("C").Wait)

	h = newHarness(t, DefaultConfig())
	h.start("x")
	b, _ := json.Marshal(map[string]any{"plan": Plan{Mode: "simple", Groups: []PlanGroup{pg("A", 1), pg("B", 1)}}})
	h.report(LeadGroup, StatusPlanningComplete, string(b))
	assert.Equal(t, WaitCap, h.group("B").Wait, "simple mode runs one implementation at a time")
}

// One merge in flight per base; QA and review are not capped.
func TestMergeLaneAndUncappedReviews(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxParallel = 1
	h := newHarness(t, cfg)
	h.plan(pg("A", 1), pg("B", 1), pg("C", 1))
	h.report("A", StatusReadyForReview, "")
	h.report("B", StatusReadyForReview, "")
	assert.Equal(t, RoleTechLead, h.inFlight("A").Role)
	assert.Equal(t, RoleTechLead, h.inFlight("B").Role)
	assert.Equal(t, RoleDeveloper, h.inFlight("C").Role)
	h.report("A", StatusApproved, "")
	h.report("B", StatusApproved, "")
	assert.Equal(t, RoleMerge, h.inFlight("A").Role)
	assert.Equal(t, WaitMergeLane, h.group("B").Wait)
	h.report("A", StatusMergeConflict, "")
	assert.Equal(t, RoleMerge, h.inFlight("B").Role, "the lane frees as soon as A's merge ends")
}

func TestRequiredApprovalsGateMerges(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Merge.RequiredApprovals = 2
	h := newHarness(t, cfg)
	h.plan(pg("A", 1))
	h.through("A", StatusReadyForReview, StatusApproved)
	a := h.group("A")
	assert.Equal(t, WaitHumanReview, a.Wait)
	assert.Equal(t, "0 of 2 human approvals", a.WaitDetail)
	h.reconcile(Event{Kind: EventHumanReview, Session: "s1", Group: "A", Actor: "alice", Review: ReviewApproved})
	h.reconcile(Event{Kind: EventHumanReview, Session: "s1", Group: "A", Actor: "alice", Review: ReviewApproved})
	assert.Equal(t, "1 of 2 human approvals", h.group("A").WaitDetail, "one person approving twice counts once")
	h.reconcile(Event{Kind: EventHumanReview, Session: "s1", Group: "A", Actor: "bob", Review: ReviewApproved})
	assert.Equal(t, RoleMerge, h.inFlight("A").Role)
}

func TestHumanChangesRequestedSendsTheGroupBack(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Merge.RequiredApprovals = 1
	h := newHarness(t, cfg)
	h.plan(pg("A", 1))
	h.through("A", StatusReadyForReview, StatusApproved)
	h.reconcile(Event{Kind: EventHumanReview, Session: "s1", Group: "A", Actor: "alice", Review: ReviewChangesRequested, Body: "rename Foo"})
	st := h.inFlight("A")
	assert.Equal(t, PurposeFixReview, st.Purpose)
	assert.Contains(t, st.Feedback, "rename Foo")
}

func TestPRClosedByHumanAbandonsAndTellsPM(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1), pg("C", 2, "A"))
	a := h.inFlight("A")
	acts := h.reconcile(Event{Kind: EventPRClosed, Session: "s1", Group: "A", Actor: "carol"})
	assert.Equal(t, StageAbandoned, h.group("A").Stage)
	assert.Equal(t, StepCancelled, h.s.Step(a.ID).State)
	assert.Contains(t, fmt.Sprint(acts), "cancel/"+a.ID)
	pm := h.inFlight(LeadGroup)
	require.Len(t, pm.Notes, 1)
	assert.Contains(t, pm.Notes[0].Text, "closed without merging by carol")
	// A late result of the cancelled step is ignored and reported.
	acts = h.reconcile(StepResult("s1", a.ID, Result{Status: StatusReadyForQA}))
	assert.Equal(t, ActionReport, acts[0].Kind)
	assert.Contains(t, acts[0].Text, "not in flight")
}

func TestMergedByHumanCountsAsMerged(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	h.reconcile(Event{Kind: EventPRClosed, Session: "s1", Group: "A", Actor: "carol", Merged: true})
	assert.Equal(t, StageMerged, h.group("A").Stage)
	assert.Equal(t, PurposeFinalCheck, h.inFlight(LeadGroup).Purpose)
}
