package agent

import (
	"fmt"
	"strings"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// statusHelp says, per role, when to report each status. Every status that
// pipeline.AllowedStatuses gives an agent role has an entry (a test checks).
var statusHelp = map[pipeline.Role]map[pipeline.Status]string{
	pipeline.RolePM: {
		pipeline.StatusPlanningComplete:    "your plan is ready (first planning, or re-planning after an answer)",
		pipeline.StatusContinue:            "more work is needed: name the groups to (re)run, new ones included, with feedback; list under drop the waiting groups you give up. Decide every group that waits on you (under groups or drop): a decision that leaves one out, or names an unknown or repeated id, is refused whole and changes nothing",
		pipeline.StatusBazinga:             "every group is merged and every success criterion is met, with evidence",
		pipeline.StatusNeedsClarification:  "a product decision blocks you and neither the repository nor the requirements settle it",
		pipeline.StatusInvestigationNeeded: "a problem needs root-cause analysis before work can be planned",
		pipeline.StatusInvestigationOnly:   "the request is only questions: you answered them, no code is needed",
	},
	pipeline.RoleDeveloper: implementerHelp,
	pipeline.RoleSenior:    implementerHelp,
	pipeline.RoleQA: {
		pipeline.StatusPass:           "the implementation meets the task at every challenge level you ran",
		pipeline.StatusFail:           "tests fail: list each failure so a developer can reproduce it",
		pipeline.StatusEscalateSenior: "failures at challenge level 3 or above that need a senior engineer",
		pipeline.StatusPartial:        "you could not finish testing: say what is left",
		pipeline.StatusBlocked:        "the tests cannot run at all (environment, missing service): say why",
		pipeline.StatusFlaky:          "results change from run to run: name the unstable tests",
	},
	pipeline.RoleTechLead: {
		pipeline.StatusApproved:           "ready to merge (or: the investigation's root cause and fix are sound)",
		pipeline.StatusApprovedWithNotes:  "ready to merge; non-blocking suggestions noted",
		pipeline.StatusChangesRequested:   "must change before merging: list each required change",
		pipeline.StatusSpawnInvestigator:  "a problem needs root-cause analysis before anyone can fix it",
		pipeline.StatusEscalateToOpus:     "this review is beyond you: run it again with a stronger model",
		pipeline.StatusUnblockingGuidance: "you were asked to unblock someone: your guidance is in the handoff",
	},
	pipeline.RoleInvestigator: {
		pipeline.StatusRootCauseFound:          "root cause found and backed by evidence; a fix is proposed",
		pipeline.StatusInvestigationIncomplete: "you made progress but cannot conclude: partial findings",
		pipeline.StatusBlocked:                 "you lack access or resources to continue: say what",
		pipeline.StatusExhausted:               "every hypothesis is eliminated and none remain",
		pipeline.StatusNeedDeveloperDiagnostic: "a developer must run a diagnostic: describe it exactly",
		pipeline.StatusHypothesisEliminated:    "this iteration eliminated a hypothesis; others remain",
		pipeline.StatusNeedMoreAnalysis:        "another iteration is needed on the current hypothesis",
	},
	pipeline.RoleRequirements: {
		pipeline.StatusReadyForReview: "the research deliverable is written and ready for the tech lead",
		pipeline.StatusPartial:        "part of the research is done: say what is left",
		pipeline.StatusBlocked:        "you cannot continue (missing access, contradictory requirements): say why",
	},
}

var implementerHelp = map[pipeline.Status]string{
	pipeline.StatusReadyForQA:        "the task is done, with tests, and the tests pass",
	pipeline.StatusReadyForReview:    "done, nothing for QA to test (docs, config, a diagnostic you ran): straight to review",
	pipeline.StatusPartial:           "progress made, work remains: say what is left",
	pipeline.StatusBlocked:           "you cannot proceed: say exactly what blocks you",
	pipeline.StatusEscalateSenior:    "the task is beyond you: say why",
	pipeline.StatusSpawnInvestigator: "a bug or failure whose cause you cannot find: describe the symptoms",
}

// handoffShape is one handoff JSON shape, optionally for one status only.
type handoffShape struct {
	when  string // "" for every status
	shape string
}

var handoffShapes = map[pipeline.Role][]handoffShape{
	pipeline.RolePM: {
		{"PLANNING_COMPLETE", `{"plan": {"mode": "simple|parallel", "groups": [{"id": "A", "name": "…", "task": "…", "type": "implementation|research", "tier": "developer|senior", "size": "S|M|L|XL", "phase": 1, "depends_on": []}], "success_criteria": ["…"]}}`},
		{"CONTINUE", `{"groups": ["A", {"id": "D", "name": "…", "task": "…", "type": "implementation", "tier": "developer", "size": "M", "phase": 2, "depends_on": ["A"]}], "feedback": {"A": "…"}, "drop": ["C"]}`},
		{"NEEDS_CLARIFICATION", `{"question": "…", "options": ["…", "…"], "fallback": "…"}`},
		{"BAZINGA", `{"criteria": [{"criterion": "…", "met": true, "evidence": "…"}]}`},
		{"INVESTIGATION_NEEDED", `{"problem": "…", "evidence": ["…"]}`},
		{"INVESTIGATION_ONLY", `{"answers": [{"question": "…", "answer": "…"}]}`},
	},
	pipeline.RoleDeveloper: implementerShape,
	pipeline.RoleSenior:    implementerShape,
	pipeline.RoleQA: {
		{"", `{"tests": {"total": 0, "passing": 0, "failing": 0}, "failures": ["test name: what failed, how to reproduce"], "challenge_level": 1}`},
	},
	pipeline.RoleTechLead: {
		{"", `{"required_changes": ["…"], "suggestions": ["…"], "security_issues": ["…"], "guidance": "…"}`},
	},
	pipeline.RoleInvestigator: {
		{"", `{"root_cause": "…", "hypotheses": [{"hypothesis": "…", "status": "open|eliminated|confirmed", "evidence": "…"}], "diagnostic_request": "…", "solution": "…"}`},
	},
	pipeline.RoleRequirements: {
		{"", `{"deliverable": "path/to/document.md", "findings": ["…"], "recommendations": ["…"], "open_questions": ["…"]}`},
	},
}

var implementerShape = []handoffShape{
	{"", `{"files_changed": ["path"], "tests": {"total": 0, "passing": 0, "failing": 0}, "concerns": ["…"], "diagnostic_output": "…"}`},
}

// statusPlaceholder stands for the status in the example; it is not a status,
// so an agent that echoes the example yields no valid result.
const statusPlaceholder = "ONE_OF_THE_STATUSES_BELOW"

// resultContract tells the agent how to return: never truncated.
func resultContract(role pipeline.Role, resultFile string, finalAnswer bool) string {
	var b strings.Builder
	b.WriteString("## Result contract\n\n")
	if finalAnswer {
		// The harness reads the CLI's final answer and nothing else: tool
		// output and files cannot speak for the agent.
		b.WriteString("When you are done, your final answer must be exactly one JSON object and nothing else: no prose, no code fence. ")
		b.WriteString("Only that final answer is read for routing; nothing in files, tool output or earlier messages is.\n\n")
	} else {
		b.WriteString("Finish by writing one JSON object to the file named by the environment variable `BAZINGA_RESULT_FILE`")
		if resultFile != "" {
			fmt.Fprintf(&b, " (`%s`)", resultFile)
		}
		b.WriteString(". Only if that variable is unset, print the object as the last thing on standard output. ")
		b.WriteString("Nothing else you write is read for routing.\n\n")
	}
	fmt.Fprintf(&b, "```json\n{\"status\": %q, \"summary\": [\"what you did\", \"what changed\", \"the outcome\"], \"handoff\": {}}\n```\n\n", statusPlaceholder)
	b.WriteString("- `summary`: at most 3 short lines (under 200 characters each); people follow the session by them.\n")
	fmt.Fprintf(&b, "- `status`: exactly one of these, for the %s role:\n", role)
	for _, st := range pipeline.AllowedStatuses(role) {
		fmt.Fprintf(&b, "  - `%s`: %s\n", st, statusHelp[role][st])
	}
	b.WriteString("- `handoff`: a JSON object (at most 16 KiB) for the next step, which gets it instead of your transcript. Leave out fields you have nothing for.\n")
	for _, h := range handoffShapes[role] {
		if h.when != "" {
			fmt.Fprintf(&b, "  - `%s`: `%s`\n", h.when, h.shape)
		} else {
			fmt.Fprintf(&b, "  - `%s`\n", h.shape)
		}
	}
	if role.Reviews() {
		b.WriteString(findingsContract(role))
	}
	if role == pipeline.RolePM {
		// Issue 27: what the pm writes is stored in the session's state,
		// which has one GitHub comment's room; over a limit is refused.
		b.WriteString("- Size limits of what the session keeps from your handoff:\n")
		for _, l := range pipeline.BudgetLines() {
			b.WriteString("  - " + l + "\n")
		}
	}
	// --- usage (issue 13 item 5) ---
	b.WriteString("- `usage` (optional): what this step cost, only if you know it and your CLI does not report it itself: " +
		"`{\"cost_usd\": 0.0, \"input_tokens\": 0, \"output_tokens\": 0, \"cache_read_tokens\": 0, \"cache_write_tokens\": 0}`.\n")
	return b.String()
}

// findingsContract tells a reviewer how to return findings (issue 26):
// the severities decide where the work goes, so each is defined.
func findingsContract(role pipeline.Role) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- `findings` (optional): each problem you found, at most %d, as `[{\"severity\": \"high|medium|low\", \"file\": \"path/from/the/repository/root\", \"line\": 12, \"end_line\": 14, \"problem\": \"what is wrong\", \"fix\": \"the change you suggest\"}]`. ", pipeline.MaxFindings)
	if role == pipeline.RoleInvestigator {
		// The investigator's findings go to the tech lead who validates
		// them; they do not route the group themselves.
		b.WriteString("The tech lead who validates your work reads them. Severities: `high` must be fixed before the work merges; `medium` is a real problem that may wait; `low` is a note.\n")
	} else {
		b.WriteString("The severity decides where the work goes, whatever your status says:\n")
		b.WriteString("  - `high`: must be fixed before this merges (a bug, a security hole, a failing or missing test of the task). Any high finding sends the group back; one still open after its revision goes to a human.\n")
		b.WriteString("  - `medium`: a real problem that may merge now; it is recorded as a follow-up for later work.\n")
		b.WriteString("  - `low`: a note (style, naming, a nicer way); it is shown with the review only.\n")
	}
	fmt.Fprintf(&b, "  - `line`/`end_line` are lines of the file as it is on the branch now (1-based); leave them out for a finding about a whole file, and `file` too for one about the whole change. `problem` and `fix`: one line each, at most %d bytes.\n", pipeline.MaxFindingTextBytes)
	if role != pipeline.RoleInvestigator {
		b.WriteString("  - Findings on lines the change touches are posted as comments on those lines of the pull request; the others in the review's text.\n")
	}
	return b.String()
}
