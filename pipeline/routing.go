package pipeline

import "slices"

// Route is what the engine does with a result. The routing table maps
// (role, status[, purpose]) to a Route; route() in reconcile.go interprets it.
type Route string

// Routes, one per kind of decision in ARCHITECTURE.md §3's table.
const (
	RouteNone                 Route = ""
	RoutePlan                 Route = "plan"                  // create the groups; start the first phase's ready groups
	RouteContinue             Route = "continue"              // dispatch the groups the pm names or adds, with its feedback
	RouteValidate             Route = "validate"              // BAZINGA: run the validate step
	RouteClarify              Route = "clarify"               // post the question; wait for an answer or the timeout
	RouteSessionInvestigation Route = "session_investigation" // investigator for the pm
	RouteAnswersOnly          Route = "answers_only"          // post the answers; the session is done
	RoutePMAgain              Route = "pm_again"              // the pm result was not usable: pm again with the reason
	RouteToQA                 Route = "to_qa"                 // qa (tech lead when QA is disabled or the group is research)
	RouteToReview             Route = "to_review"             // tech lead review
	RouteDeveloperRevision    Route = "developer_revision"    // developer again; from the 2nd revision on a senior
	RouteSeniorRevision       Route = "senior_revision"       // senior again; after 2 senior revisions tech lead guidance
	RouteInvestigate          Route = "investigate"           // investigator (tech lead when investigation is disabled)
	RouteGuidance             Route = "guidance"              // tech lead guidance for the blocked role
	RouteSenior               Route = "senior"                // senior
	RouteQAFailed             Route = "qa_failed"             // developer with the failures; senior after a revision or a hard challenge
	RouteQAInconclusive       Route = "qa_inconclusive"       // tech lead decides
	RouteApproved             Route = "approved"              // merge (after human approvals)
	RouteGuidanceApproved     Route = "guidance_approved"     // the blocked role implements the validated solution
	RouteChangesRequested     Route = "changes_requested"     // developer; 2nd round senior; 3rd tech lead guidance; beyond pm
	RouteEscalateModel        Route = "escalate_model"        // tech lead again with the escalation model
	RouteUnblock              Route = "unblock"               // back to the blocked role with the guidance
	RouteTechLeadAgain        Route = "tech_lead_again"       // the tech lead result was not usable: tech lead again
	RouteValidateFindings     Route = "validate_findings"     // tech lead validates the investigator's findings
	RouteDiagnostic           Route = "diagnostic"            // developer runs the investigator's diagnostic
	RouteDiagnosticDone       Route = "diagnostic_done"       // investigator again with the diagnostic's output
	RouteInvestigateAgain     Route = "investigate_again"     // investigator again while iterations remain, else tech lead
	RouteRequirementsAgain    Route = "requirements_again"    // requirements again
	RouteMerged               Route = "merged"                // group merged; start what it unblocks
	RouteMergeFailed          Route = "merge_failed"          // fix on the group branch: developer, senior, tech lead, then pm
	RouteMergeBlocked         Route = "merge_blocked"         // the base refused the merge: pause for a human
	RouteStepRetry            Route = "step_retry"            // a harness step gave no usable verdict: retry it
	RouteDone                 Route = "done"                  // validation accepted BAZINGA
	RouteRejected             Route = "rejected"              // validation rejected: pm with the failed checks
	RouteMergeAgain           Route = "merge_again"           // the group branch was brought up to date: its checks, then merge again
	RouteHeadMoved            Route = "head_moved"            // the branch moved after review: QA and review again on the new head
	RouteHighFinding          Route = "high_finding"          // a HIGH finding: back as a failure or requested changes; past the revisions allowed a human checkpoint
	RouteFindingsNoted        Route = "findings_noted"        // MEDIUM/LOW findings only: the group goes on, MEDIUM ones become follow-ups
)

var routeEnum = enum[Route]{kind: "route", values: []Route{
	RouteNone, RoutePlan, RouteContinue, RouteValidate, RouteClarify, RouteSessionInvestigation, RouteAnswersOnly,
	RoutePMAgain, RouteToQA, RouteToReview, RouteDeveloperRevision, RouteSeniorRevision, RouteInvestigate,
	RouteGuidance, RouteSenior, RouteQAFailed, RouteQAInconclusive, RouteApproved, RouteGuidanceApproved,
	RouteChangesRequested, RouteEscalateModel, RouteUnblock, RouteTechLeadAgain, RouteValidateFindings,
	RouteDiagnostic, RouteDiagnosticDone, RouteInvestigateAgain, RouteRequirementsAgain, RouteMerged,
	RouteMergeFailed, RouteMergeBlocked, RouteStepRetry, RouteDone, RouteRejected, RouteMergeAgain, RouteHeadMoved,
	RouteHighFinding, RouteFindingsNoted,
}}

func (r Route) String() string { return routeEnum.name(r) }

// RoutingRow is one row of the routing table. A row with Purposes set applies
// only to steps with one of those purposes, a row with Worst set only to
// results whose worst finding has one of those severities (issue 26); the
// row that sets more of them wins, the first among equals.
type RoutingRow struct {
	Roles    []Role
	Statuses []Status
	Purposes []Purpose
	Worst    []Severity
	Route    Route
	// Next says in words where the work goes, as ARCHITECTURE.md §3 does.
	Next string
}

// anyStatus matches every canonical status of the role.
var anyStatus []Status

// RoutingTable is ARCHITECTURE.md §3's routing table as data, one row per row there,
// plus the rows that say what PARTIAL means for roles whose statuses do not
// include it (a disallowed or unreadable status counts as PARTIAL).
var RoutingTable = []RoutingRow{
	// Review findings by severity (issue 26, seed 004's consensus severity
	// routing): the agent's worst finding decides over its status word.
	{Roles: []Role{RoleQA}, Statuses: []Status{StatusPass, StatusFail}, Worst: []Severity{SeverityHigh}, Route: RouteHighFinding,
		Next: "a HIGH finding: developer with the findings as for FAIL; still HIGH after the revisions allowed (limits.high_finding_revisions): a human checkpoint"},
	{Roles: []Role{RoleQA}, Statuses: []Status{StatusPass, StatusFail}, Worst: []Severity{SeverityMedium, SeverityLow}, Route: RouteFindingsNoted,
		Next: "only MEDIUM/LOW findings: tech_lead; MEDIUM ones become session follow-ups"},
	{Roles: []Role{RoleTechLead}, Statuses: []Status{StatusApproved, StatusApprovedWithNotes, StatusChangesRequested},
		Purposes: []Purpose{PurposeReview}, Worst: []Severity{SeverityHigh}, Route: RouteHighFinding,
		Next: "a HIGH finding: as CHANGES_REQUESTED; still HIGH after the revisions allowed (limits.high_finding_revisions): a human checkpoint"},
	{Roles: []Role{RoleTechLead}, Statuses: []Status{StatusApproved, StatusApprovedWithNotes, StatusChangesRequested},
		Purposes: []Purpose{PurposeReview}, Worst: []Severity{SeverityMedium, SeverityLow}, Route: RouteFindingsNoted,
		Next: "only MEDIUM/LOW findings: merge as APPROVED_WITH_NOTES; MEDIUM ones become session follow-ups"},
	{Roles: []Role{RolePM}, Statuses: []Status{StatusPlanningComplete}, Route: RoutePlan,
		Next: "create groups; dispatch the first phase's ready groups up to the cap"},
	{Roles: []Role{RolePM}, Statuses: []Status{StatusContinue}, Route: RouteContinue,
		Next: "dispatch the groups the pm names or adds, with its feedback"},
	{Roles: []Role{RolePM}, Statuses: []Status{StatusBazinga}, Route: RouteValidate,
		Next: "validate: all groups merged, tests green on the base head, every criterion met with evidence"},
	{Roles: []Role{RolePM}, Statuses: []Status{StatusNeedsClarification}, Route: RouteClarify,
		Next: "post the question; pm again with the answer or the safe fallback"},
	{Roles: []Role{RolePM}, Statuses: []Status{StatusInvestigationNeeded}, Route: RouteSessionInvestigation,
		Next: "investigator"},
	{Roles: []Role{RolePM}, Statuses: []Status{StatusInvestigationOnly}, Route: RouteAnswersOnly,
		Next: "post the answers; done"},
	{Roles: []Role{RolePM}, Statuses: []Status{StatusPartial}, Route: RoutePMAgain,
		Next: "pm again with what was wrong"},
	{Roles: []Role{RoleDeveloper}, Statuses: anyStatus, Purposes: []Purpose{PurposeDiagnostic}, Route: RouteDiagnosticDone,
		Next: "investigator again with the diagnostic's output"},
	{Roles: []Role{RoleDeveloper, RoleSenior}, Statuses: []Status{StatusReadyForQA}, Route: RouteToQA,
		Next: "qa (tech_lead when QA is disabled)"},
	{Roles: []Role{RoleDeveloper, RoleSenior}, Statuses: []Status{StatusReadyForReview}, Route: RouteToReview,
		Next: "tech_lead"},
	{Roles: []Role{RoleDeveloper}, Statuses: []Status{StatusPartial}, Route: RouteDeveloperRevision,
		Next: "developer again with the remaining work; from the 2nd revision on: senior"},
	{Roles: []Role{RoleSenior}, Statuses: []Status{StatusPartial}, Route: RouteSeniorRevision,
		Next: "senior again; after 2 senior revisions: tech_lead for guidance"},
	{Roles: []Role{RoleDeveloper}, Statuses: []Status{StatusBlocked}, Route: RouteInvestigate,
		Next: "investigator (tech_lead if investigation is disabled)"},
	{Roles: []Role{RoleSenior}, Statuses: []Status{StatusBlocked}, Route: RouteGuidance,
		Next: "tech_lead"},
	{Roles: []Role{RoleDeveloper, RoleSenior}, Statuses: []Status{StatusEscalateSenior}, Route: RouteSenior,
		Next: "senior"},
	{Roles: []Role{RoleDeveloper, RoleSenior}, Statuses: []Status{StatusSpawnInvestigator}, Route: RouteInvestigate,
		Next: "investigator"},
	{Roles: []Role{RoleQA}, Statuses: []Status{StatusPass}, Route: RouteToReview,
		Next: "tech_lead"},
	{Roles: []Role{RoleQA}, Statuses: []Status{StatusFail}, Route: RouteQAFailed,
		Next: "developer with the failures; senior if the group already had a revision or a challenge level ≥ 3 failed"},
	{Roles: []Role{RoleQA}, Statuses: []Status{StatusEscalateSenior}, Route: RouteSenior,
		Next: "senior"},
	{Roles: []Role{RoleQA}, Statuses: []Status{StatusPartial, StatusBlocked, StatusFlaky}, Route: RouteQAInconclusive,
		Next: "tech_lead"},
	{Roles: []Role{RoleTechLead}, Statuses: []Status{StatusApproved, StatusApprovedWithNotes},
		Purposes: []Purpose{PurposeGuidance, PurposeValidateFindings}, Route: RouteGuidanceApproved,
		Next: "the role that was blocked implements the validated solution (not a merge)"},
	{Roles: []Role{RoleTechLead}, Statuses: []Status{StatusApproved, StatusApprovedWithNotes}, Route: RouteApproved,
		Next: "merge (after required human approvals, if configured)"},
	{Roles: []Role{RoleTechLead}, Statuses: []Status{StatusChangesRequested}, Route: RouteChangesRequested,
		Next: "developer; 2nd review round senior; 3rd tech_lead guidance; beyond: pm to simplify"},
	{Roles: []Role{RoleTechLead}, Statuses: []Status{StatusSpawnInvestigator}, Route: RouteInvestigate,
		Next: "investigator"},
	{Roles: []Role{RoleTechLead}, Statuses: []Status{StatusEscalateToOpus}, Route: RouteEscalateModel,
		Next: "tech_lead again with the escalation model"},
	{Roles: []Role{RoleTechLead}, Statuses: []Status{StatusUnblockingGuidance}, Route: RouteUnblock,
		Next: "back to the role that was blocked"},
	{Roles: []Role{RoleTechLead}, Statuses: []Status{StatusPartial}, Route: RouteTechLeadAgain,
		Next: "tech_lead again (counts as a review attempt)"},
	{Roles: []Role{RoleInvestigator}, Statuses: []Status{StatusRootCauseFound, StatusInvestigationIncomplete, StatusBlocked, StatusExhausted},
		Route: RouteValidateFindings, Next: "tech_lead validates"},
	{Roles: []Role{RoleInvestigator}, Statuses: []Status{StatusNeedDeveloperDiagnostic}, Route: RouteDiagnostic,
		Next: "developer runs the diagnostic, then investigator again"},
	{Roles: []Role{RoleInvestigator}, Statuses: []Status{StatusHypothesisEliminated, StatusNeedMoreAnalysis, StatusPartial},
		Route: RouteInvestigateAgain, Next: "investigator again while iterations < limit, else tech_lead with partial findings"},
	{Roles: []Role{RoleRequirements}, Statuses: []Status{StatusReadyForReview}, Route: RouteToReview,
		Next: "tech_lead (no QA)"},
	{Roles: []Role{RoleRequirements}, Statuses: []Status{StatusPartial}, Route: RouteRequirementsAgain,
		Next: "requirements again"},
	{Roles: []Role{RoleRequirements}, Statuses: []Status{StatusBlocked}, Route: RouteInvestigate,
		Next: "investigator"},
	{Roles: []Role{RoleMerge}, Statuses: []Status{StatusMergeSuccess}, Route: RouteMerged,
		Next: "group merged; start ready groups of this or the next phase; all merged → pm final check"},
	{Roles: []Role{RoleMerge}, Statuses: []Status{StatusMergeConflict, StatusMergeTestFailure}, Route: RouteMergeFailed,
		Next: "developer fixes on the group branch (base merged in) → qa → tech_lead → merge; 2nd senior, 3rd tech_lead, 4th+ pm"},
	{Roles: []Role{RoleMerge}, Statuses: []Status{StatusMergeBlocked}, Route: RouteMergeBlocked,
		Next: "pause: a human must let the merge land, then resume"},
	{Roles: []Role{RoleMerge}, Statuses: []Status{StatusMergeUpdated}, Route: RouteMergeAgain,
		Next: "the tested merge is the group head now: merge again once its required checks passed"},
	{Roles: []Role{RoleMerge}, Statuses: []Status{StatusMergeHeadMoved}, Route: RouteHeadMoved,
		Next: "nothing merged: the branch moved after review; qa (tech_lead when QA is disabled) → tech_lead → merge on the new head"},
	{Roles: []Role{RoleMerge, RoleValidate}, Statuses: []Status{StatusPartial}, Route: RouteStepRetry,
		Next: "retry the harness step"},
	{Roles: []Role{RoleValidate}, Statuses: []Status{StatusAccept}, Route: RouteDone,
		Next: "done"},
	{Roles: []Role{RoleValidate}, Statuses: []Status{StatusReject}, Route: RouteRejected,
		Next: "pm with the failed checks"},
}

// Lookup finds the route for a role's canonical status and the step's
// purpose, for a result without findings. Rows bound to a purpose win over
// general rows.
func Lookup(role Role, status Status, purpose Purpose) (RoutingRow, bool) {
	return LookupFindings(role, status, purpose, SeverityNone)
}

// LookupFindings is Lookup for a result whose worst finding is worst.
func LookupFindings(role Role, status Status, purpose Purpose, worst Severity) (RoutingRow, bool) {
	i := lookupIndex(role, status, purpose, worst)
	if i < 0 {
		return RoutingRow{}, false
	}
	return RoutingTable[i], true
}

// lookupIndex is LookupFindings' row index in RoutingTable, -1 when none applies.
func lookupIndex(role Role, status Status, purpose Purpose, worst Severity) int {
	best, bestScore := -1, -1
	for i := range RoutingTable {
		row := &RoutingTable[i]
		if !slices.Contains(row.Roles, role) || (row.Statuses != nil && !slices.Contains(row.Statuses, status)) {
			continue
		}
		score := 0
		if row.Purposes != nil {
			if !slices.Contains(row.Purposes, purpose) {
				continue
			}
			score++
		}
		if row.Worst != nil {
			if !slices.Contains(row.Worst, worst) {
				continue
			}
			score++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}
