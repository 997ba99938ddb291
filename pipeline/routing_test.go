package pipeline

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every status a role may report has a route.
func TestEveryAllowedStatusHasARoute(t *testing.T) {
	for _, role := range Roles() {
		for _, st := range append(AllowedStatuses(role), StatusPartial) {
			_, ok := Lookup(role, st, PurposeNone)
			assert.True(t, ok, "%s %s has no route", role, st)
		}
	}
}

func TestStatusAliasesNormalise(t *testing.T) {
	tests := []struct {
		role Role
		in   Status
		want Status
		ok   bool
	}{
		{RoleDeveloper, StatusIncomplete, StatusPartial, true},
		{RoleInvestigator, StatusWaitingForResults, StatusNeedDeveloperDiagnostic, true},
		{RoleTechLead, StatusUnblockingGuidanceProvided, StatusUnblockingGuidance, true},
		{RoleQA, StatusFailEscalate, StatusEscalateSenior, true},
		{RoleQA, StatusApproved, StatusPartial, false},
		{RolePM, StatusUnknown, StatusPartial, false},
	}
	for _, tt := range tests {
		got, ok := NormalizeStatus(tt.role, tt.in)
		assert.Equal(t, tt.want, got, "%s %s", tt.role, tt.in)
		assert.Equal(t, tt.ok, ok, "%s %s", tt.role, tt.in)
	}
	for _, s := range allStatuses() {
		parsed, err := ParseStatus(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, parsed)
	}
	got, err := ParseStatus(" ready for qa ")
	require.NoError(t, err)
	assert.Equal(t, StatusReadyForQA, got)
	_, err = ParseStatus("DONE-ISH")
	assert.ErrorContains(t, err, `unknown status "DONE_ISH"`)
}

// reach is a path of results from the plan that puts a step of some role in
// flight for group A.
type reach struct {
	research bool
	senior   bool
	path     []Status
}

var (
	atDeveloper    = reach{}
	atSenior       = reach{senior: true}
	atQA           = reach{path: []Status{StatusReadyForQA}}
	atReview       = reach{path: []Status{StatusReadyForReview}}
	atGuidance     = reach{senior: true, path: []Status{StatusBlocked}}
	atInvestigator = reach{path: []Status{StatusBlocked}}
	atValidateFind = reach{path: []Status{StatusBlocked, StatusRootCauseFound}}
	atDiagnostic   = reach{path: []Status{StatusBlocked, StatusNeedDeveloperDiagnostic}}
	atRequirements = reach{research: true}
	atMerge        = reach{path: []Status{StatusReadyForReview, StatusApproved}}
)

func (rc reach) setup(t *testing.T, cfg Config) *harness {
	h := newHarness(t, cfg)
	g := pg("A", 1)
	if rc.research {
		g.Type = "research"
	}
	if rc.senior {
		g.Tier = "senior"
	}
	h.plan(g)
	h.through("A", rc.path...)
	return h
}

// One case per row of ARCHITECTURE.md §3's routing table (group rows; the pm and
// validate rows follow).
func TestRoutingRowsForGroups(t *testing.T) {
	tests := []struct {
		name        string
		at          reach
		status      Status
		role        Role
		purpose     Purpose
		cfg         func(*Config)
		wantStage   Stage
		wantBlocked Role
	}{
		{name: "developer READY_FOR_QA → qa", at: atDeveloper, status: StatusReadyForQA, role: RoleQA, purpose: PurposeTest},
		{name: "developer READY_FOR_QA, QA disabled → tech_lead", at: atDeveloper, status: StatusReadyForQA, role: RoleTechLead, purpose: PurposeReview,
			cfg: func(c *Config) { c.QA = false }},
		{name: "senior READY_FOR_QA → qa", at: atSenior, status: StatusReadyForQA, role: RoleQA, purpose: PurposeTest},
		{name: "developer READY_FOR_REVIEW → tech_lead", at: atDeveloper, status: StatusReadyForReview, role: RoleTechLead, purpose: PurposeReview},
		{name: "senior READY_FOR_REVIEW → tech_lead", at: atSenior, status: StatusReadyForReview, role: RoleTechLead, purpose: PurposeReview},
		{name: "developer PARTIAL → developer", at: atDeveloper, status: StatusPartial, role: RoleDeveloper, purpose: PurposeRevise},
		{name: "senior PARTIAL → senior", at: atSenior, status: StatusPartial, role: RoleSenior, purpose: PurposeRevise},
		{name: "developer BLOCKED → investigator", at: atDeveloper, status: StatusBlocked, role: RoleInvestigator, purpose: PurposeInvestigate, wantBlocked: RoleDeveloper},
		{name: "developer BLOCKED, investigation disabled → tech_lead", at: atDeveloper, status: StatusBlocked, role: RoleTechLead, purpose: PurposeGuidance,
			cfg: func(c *Config) { c.Limits.InvestigationIterations = 0 }, wantBlocked: RoleDeveloper},
		{name: "senior BLOCKED → tech_lead", at: atSenior, status: StatusBlocked, role: RoleTechLead, purpose: PurposeGuidance, wantBlocked: RoleSenior},
		{name: "developer ESCALATE_SENIOR → senior", at: atDeveloper, status: StatusEscalateSenior, role: RoleSenior, purpose: PurposeRevise},
		{name: "senior ESCALATE_SENIOR → senior", at: atSenior, status: StatusEscalateSenior, role: RoleSenior, purpose: PurposeRevise},
		{name: "developer SPAWN_INVESTIGATOR → investigator", at: atDeveloper, status: StatusSpawnInvestigator, role: RoleInvestigator, purpose: PurposeInvestigate},
		{name: "senior SPAWN_INVESTIGATOR → investigator", at: atSenior, status: StatusSpawnInvestigator, role: RoleInvestigator, purpose: PurposeInvestigate},
		{name: "qa PASS → tech_lead", at: atQA, status: StatusPass, role: RoleTechLead, purpose: PurposeReview},
		{name: "qa FAIL → developer", at: atQA, status: StatusFail, role: RoleDeveloper, purpose: PurposeFixQA},
		{name: "qa ESCALATE_SENIOR → senior", at: atQA, status: StatusEscalateSenior, role: RoleSenior, purpose: PurposeFixQA},
		{name: "qa FAIL_ESCALATE (alias) → senior", at: atQA, status: StatusFailEscalate, role: RoleSenior, purpose: PurposeFixQA},
		{name: "qa PARTIAL → tech_lead", at: atQA, status: StatusPartial, role: RoleTechLead, purpose: PurposeReview},
		{name: "qa BLOCKED → tech_lead", at: atQA, status: StatusBlocked, role: RoleTechLead, purpose: PurposeReview},
		{name: "qa FLAKY → tech_lead", at: atQA, status: StatusFlaky, role: RoleTechLead, purpose: PurposeReview},
		{name: "tech_lead APPROVED → merge", at: atReview, status: StatusApproved, role: RoleMerge, purpose: PurposeMerge, wantStage: StageMerging},
		{name: "tech_lead APPROVED_WITH_NOTES → merge", at: atReview, status: StatusApprovedWithNotes, role: RoleMerge, purpose: PurposeMerge},
		{name: "tech_lead APPROVED after guidance → the blocked senior", at: atGuidance, status: StatusApproved, role: RoleSenior, purpose: PurposeApplyGuidance},
		{name: "tech_lead APPROVED after validating findings → the blocked developer", at: atValidateFind, status: StatusApproved, role: RoleDeveloper, purpose: PurposeApplyGuidance},
		{name: "tech_lead CHANGES_REQUESTED → developer", at: atReview, status: StatusChangesRequested, role: RoleDeveloper, purpose: PurposeFixReview},
		{name: "tech_lead SPAWN_INVESTIGATOR → investigator", at: atReview, status: StatusSpawnInvestigator, role: RoleInvestigator, purpose: PurposeInvestigate},
		{name: "tech_lead ESCALATE_TO_OPUS → tech_lead on the escalation model", at: atReview, status: StatusEscalateToOpus, role: RoleTechLead, purpose: PurposeReview},
		{name: "tech_lead UNBLOCKING_GUIDANCE → the blocked senior", at: atGuidance, status: StatusUnblockingGuidance, role: RoleSenior, purpose: PurposeApplyGuidance},
		{name: "tech_lead UNBLOCKING_GUIDANCE_PROVIDED (alias) → the blocked senior", at: atGuidance, status: StatusUnblockingGuidanceProvided, role: RoleSenior, purpose: PurposeApplyGuidance},
		{name: "investigator ROOT_CAUSE_FOUND → tech_lead validates", at: atInvestigator, status: StatusRootCauseFound, role: RoleTechLead, purpose: PurposeValidateFindings},
		{name: "investigator INVESTIGATION_INCOMPLETE → tech_lead validates", at: atInvestigator, status: StatusInvestigationIncomplete, role: RoleTechLead, purpose: PurposeValidateFindings},
		{name: "investigator BLOCKED → tech_lead validates", at: atInvestigator, status: StatusBlocked, role: RoleTechLead, purpose: PurposeValidateFindings},
		{name: "investigator EXHAUSTED → tech_lead validates", at: atInvestigator, status: StatusExhausted, role: RoleTechLead, purpose: PurposeValidateFindings},
		{name: "investigator NEED_DEVELOPER_DIAGNOSTIC → developer diagnostic", at: atInvestigator, status: StatusNeedDeveloperDiagnostic, role: RoleDeveloper, purpose: PurposeDiagnostic},
		{name: "investigator WAITING_FOR_RESULTS (alias) → developer diagnostic", at: atInvestigator, status: StatusWaitingForResults, role: RoleDeveloper, purpose: PurposeDiagnostic},
		{name: "developer diagnostic done → investigator again", at: atDiagnostic, status: StatusReadyForReview, role: RoleInvestigator, purpose: PurposeInvestigate},
		{name: "investigator HYPOTHESIS_ELIMINATED → investigator", at: atInvestigator, status: StatusHypothesisEliminated, role: RoleInvestigator, purpose: PurposeInvestigate},
		{name: "investigator NEED_MORE_ANALYSIS → investigator", at: atInvestigator, status: StatusNeedMoreAnalysis, role: RoleInvestigator, purpose: PurposeInvestigate},
		{name: "requirements READY_FOR_REVIEW → tech_lead (no QA)", at: atRequirements, status: StatusReadyForReview, role: RoleTechLead, purpose: PurposeReview},
		{name: "requirements PARTIAL → requirements", at: atRequirements, status: StatusPartial, role: RoleRequirements, purpose: PurposeRevise},
		{name: "requirements BLOCKED → investigator", at: atRequirements, status: StatusBlocked, role: RoleInvestigator, purpose: PurposeInvestigate},
		{name: "merge MERGE_CONFLICT → developer fixes", at: atMerge, status: StatusMergeConflict, role: RoleDeveloper, purpose: PurposeFixMerge},
		{name: "merge MERGE_TEST_FAILURE → developer fixes", at: atMerge, status: StatusMergeTestFailure, role: RoleDeveloper, purpose: PurposeFixMerge},
		{name: "disallowed status counts as PARTIAL (developer)", at: atDeveloper, status: StatusPass, role: RoleDeveloper, purpose: PurposeRevise},
		{name: "unreadable result counts as PARTIAL (developer)", at: atDeveloper, status: StatusUnknown, role: RoleDeveloper, purpose: PurposeRevise},
		{name: "tech_lead PARTIAL → tech_lead again", at: atReview, status: StatusPartial, role: RoleTechLead, purpose: PurposeReview},
		{name: "investigator PARTIAL → investigator again", at: atInvestigator, status: StatusPartial, role: RoleInvestigator, purpose: PurposeInvestigate},
		{name: "merge without a verdict → merge retried", at: atMerge, status: StatusPartial, role: RoleMerge, purpose: PurposeMerge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			h := tt.at.setup(t, cfg)
			before := h.inFlight("A")
			h.report("A", tt.status, "", "did things")
			next := h.inFlight("A")
			assert.NotEqual(t, before.ID, next.ID)
			assert.Equal(t, tt.role, next.Role)
			assert.Equal(t, tt.purpose, next.Purpose)
			if again := tt.role == before.Role && tt.purpose == before.Purpose && (tt.role == RoleTechLead || tt.role == RoleMerge); again {
				assert.Equal(t, before.From, next.From, "a step done again receives the same input")
			} else {
				assert.Equal(t, before.ID, next.From, "the next step receives the previous handoff")
			}
			if tt.wantStage != StagePending {
				assert.Equal(t, tt.wantStage, h.group("A").Stage)
			}
			if tt.wantBlocked != RoleUnknown {
				assert.Equal(t, tt.wantBlocked, h.group("A").Blocked)
			}
			if tt.status == StatusEscalateToOpus {
				assert.Equal(t, "opus", next.Model)
				assert.True(t, next.Escalated)
			}
		})
	}
}

func TestMergeSuccessRow(t *testing.T) {
	h := atMerge.setup(t, DefaultConfig())
	h.report("A", StatusMergeSuccess, `{"merge_commit":"abc"}`)
	assert.Equal(t, StageMerged, h.group("A").Stage)
	assert.Equal(t, PurposeFinalCheck, h.inFlight(LeadGroup).Purpose, "all merged → pm final check")
}

func TestMergeBlockedPausesAndResumeRetries(t *testing.T) {
	h := atMerge.setup(t, DefaultConfig())
	h.report("A", StatusMergeBlocked, "", "protected branch hook declined")
	assert.Equal(t, SessionPaused, h.s.Status)
	assert.Contains(t, h.s.Reason, "merge of group A was refused")
	assert.Equal(t, WaitPaused, h.group("A").Wait)
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
	assert.Equal(t, SessionRunning, h.s.Status)
	assert.Equal(t, RoleMerge, h.inFlight("A").Role)
}

func TestPMRows(t *testing.T) {
	t.Run("PLANNING_COMPLETE creates groups and starts the first phase", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1), pg("B", 1), pg("C", 2, "A"))
		assert.Len(t, h.s.Groups, 3)
		assert.Equal(t, RoleDeveloper, h.inFlight("A").Role)
		assert.Equal(t, RoleDeveloper, h.inFlight("B").Role)
		assert.Equal(t, WaitPhase, h.group("C").Wait)
		// The started groups name their branches; front-ends create them.
		var branches []string
		for _, g := range h.s.Groups {
			if g.Started {
				branches = append(branches, g.Branch)
			}
		}
		assert.Equal(t, []string{"bazinga/s1-A", "bazinga/s1-B"}, branches)
	})
	t.Run("an invalid plan goes back to the pm with the problems", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.start("x")
		h.report(LeadGroup, StatusPlanningComplete, `{"plan":{"groups":[{"id":"A","task":"a","depends_on":["B"]},{"id":"B","task":"b","depends_on":["A"]},{"id":"bad id","task":""}]}}`)
		next := h.inFlight(LeadGroup)
		assert.Equal(t, PurposePlan, next.Purpose)
		assert.Contains(t, next.Feedback, `"bad id": id must match`)
		assert.Empty(t, h.s.Groups)
	})
	t.Run("CONTINUE dispatches named groups with feedback and adds new ones", func(t *testing.T) {
		h := stuckGroup(t)
		pm := h.inFlight(LeadGroup)
		require.Equal(t, PurposeCoordinate, pm.Purpose)
		require.Len(t, pm.Notes, 1)
		h.report(LeadGroup, StatusContinue, `{"groups":["A",{"id":"D","task":"the split-off part"}],"feedback":{"A":"only the parser"}}`)
		a := h.inFlight("A")
		assert.Equal(t, "only the parser", a.Feedback)
		assert.Equal(t, Counters{}, h.group("A").Counters, "counters restart after the pm re-plans")
		assert.Equal(t, RoleSenior, a.Role, "an escalated group stays with a senior")
		assert.Equal(t, RoleDeveloper, h.inFlight("D").Role)
	})
	t.Run("CONTINUE that drops a waiting group by name and adds a replacement", func(t *testing.T) {
		h := stuckGroup(t)
		pm := h.inFlight(LeadGroup)
		h.report(LeadGroup, StatusContinue, `{"groups":[{"id":"D","task":"replacement"}],"drop":["A"]}`)
		assert.Equal(t, StageAbandoned, h.group("A").Stage)
		assert.Equal(t, &Abandonment{Step: pm.ID}, h.group("A").Abandoned)
		assert.Equal(t, RoleDeveloper, h.inFlight("D").Role)
	})
	t.Run("BAZINGA → validate; ACCEPT ends; REJECT → pm with the failed checks", func(t *testing.T) {
		h := atMerge.setup(t, DefaultConfig())
		h.report("A", StatusMergeSuccess, "")
		h.report(LeadGroup, StatusBazinga, `{"criteria":[]}`)
		assert.Equal(t, RoleValidate, h.inFlight(LeadGroup).Role)
		h.report(LeadGroup, StatusReject, `{"failed":["tests red on main"]}`, "tests red on main")
		pm := h.inFlight(LeadGroup)
		assert.Equal(t, RolePM, pm.Role)
		require.Len(t, pm.Notes, 1)
		assert.Contains(t, pm.Notes[0].Text, "tests red on main")
		assert.Equal(t, SessionRunning, h.s.Status)
		h.report(LeadGroup, StatusBazinga, "")
		h.report(LeadGroup, StatusAccept, "")
		assert.Equal(t, SessionDone, h.s.Status)
		assert.Equal(t, ActionComplete, h.actions[len(h.actions)-1].Kind, "the last action ends the session")
	})
	t.Run("BAZINGA while groups are open is refused without a validate step", func(t *testing.T) {
		h := stuckGroup(t)
		h.report(LeadGroup, StatusBazinga, "")
		pm := h.inFlight(LeadGroup)
		assert.Equal(t, RolePM, pm.Role, "group A still waits on the pm, so the pm goes again")
		assert.Contains(t, fmt.Sprint(pm.Notes), "BAZINGA refused")
	})
	t.Run("NEEDS_CLARIFICATION → question; answer → pm", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.start("x")
		h.report(LeadGroup, StatusNeedsClarification, `{"question":"Postgres or SQLite?","options":["pg","sqlite"],"fallback":"SQLite"}`)
		assert.Equal(t, SessionAwaitingInput, h.s.Status)
		assert.Equal(t, WaitClarification, h.s.Lead.Wait)
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: "Postgres"}))
		pm := h.inFlight(LeadGroup)
		assert.Equal(t, PurposeAnswered, pm.Purpose)
		assert.Contains(t, pm.Feedback, "Answer from alice: Postgres")
		assert.Equal(t, SessionPlanning, h.s.Status)
	})
	t.Run("NEEDS_CLARIFICATION → timeout → pm with the fallback", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.start("x")
		h.report(LeadGroup, StatusNeedsClarification, `{"question":"Postgres or SQLite?","fallback":"SQLite"}`)
		h.now = h.now.Add(23 * 60 * 60e9)
		h.reconcile(Tick("s1"))
		assert.Equal(t, SessionAwaitingInput, h.s.Status)
		h.now = h.now.Add(2 * 60 * 60e9)
		h.reconcile(Tick("s1"))
		assert.Contains(t, h.inFlight(LeadGroup).Feedback, "Use your safe fallback: SQLite")
	})
	t.Run("INVESTIGATION_NEEDED → investigator → tech_lead → pm with the findings", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.start("why is it slow?")
		h.report(LeadGroup, StatusInvestigationNeeded, "")
		assert.Equal(t, RoleInvestigator, h.inFlight(LeadGroup).Role)
		h.report(LeadGroup, StatusRootCauseFound, `{"root_cause":"N+1 queries"}`, "N+1 queries")
		assert.Equal(t, RoleTechLead, h.inFlight(LeadGroup).Role)
		h.report(LeadGroup, StatusApproved, "", "confirmed")
		pm := h.inFlight(LeadGroup)
		assert.Equal(t, RolePM, pm.Role)
		assert.Contains(t, pm.Feedback, "confirmed")
	})
	t.Run("INVESTIGATION_ONLY → answers posted; done", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.start("how does auth work?")
		h.report(LeadGroup, StatusInvestigationOnly, `{"answers":"JWT in middleware.go"}`, "auth uses JWT")
		assert.Equal(t, SessionDone, h.s.Status)
		var notice Action
		for _, a := range h.actions {
			if a.Kind == ActionNotify {
				notice = a
			}
		}
		assert.Equal(t, NoticeAnswers, notice.Notice)
		assert.Contains(t, notice.Text, "JWT in middleware.go")
	})
	t.Run("pm PARTIAL → pm again", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.start("x")
		h.report(LeadGroup, StatusUnknown, "", "malformed output")
		pm := h.inFlight(LeadGroup)
		assert.Equal(t, PurposePlan, pm.Purpose)
		assert.Contains(t, pm.Feedback, "could not be used")
	})
}

// stuckGroup returns a session whose group A waits on a pm step in flight
// after too many implementation iterations.
func stuckGroup(t *testing.T) *harness {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	// developer, developer, senior, senior, tech lead guidance, senior: the 6th implementation step would be one too many.
	h.through("A", StatusPartial, StatusPartial, StatusPartial, StatusPartial, StatusUnblockingGuidance, StatusPartial)
	require.Equal(t, WaitPM, h.group("A").Wait)
	require.Equal(t, 5, h.group("A").Counters.Iterations)
	return h
}
