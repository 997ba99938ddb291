package agent

import "github.com/bazinga-bot/bazinga/pipeline"

// purposeText says what a step is for, from the engine's Purpose, so that
// every front-end tells agents the same thing.
var purposeText = map[pipeline.Purpose]string{
	pipeline.PurposePlan:             "Plan the work: study the requirements and the repository, then return the plan (PLANNING_COMPLETE), a question, or a request for investigation.",
	pipeline.PurposeCoordinate:       "The harness needs a decision from you: the feedback below says what happened (an escalation, a rejected BAZINGA, a stuck or abandoned group). Decide which groups run next and with what feedback.",
	pipeline.PurposeAnswered:         "You asked a question. The answer, or the instruction to use your safe fallback, is below: plan or continue accordingly.",
	pipeline.PurposeFinalCheck:       "Every group is merged. Check each success criterion against the base branch: BAZINGA with evidence for each, or CONTINUE with what is missing.",
	pipeline.PurposeImplement:        "Implement the group's task.",
	pipeline.PurposeRevise:           "Continue the group's task: the last attempt did not finish it, or its claim failed the harness's own test run. The previous handoff and the feedback say what is left.",
	pipeline.PurposeFixQA:            "Fix the failures QA reported (previous handoff and feedback), then hand back for testing.",
	pipeline.PurposeFixReview:        "Make the changes the tech lead required (previous handoff and feedback).",
	pipeline.PurposeFixMerge:         "The group did not merge into the base branch: conflicts, or tests failing after the merge. Fix it on this branch so that it merges cleanly and the tests pass.",
	pipeline.PurposeApplyGuidance:    "Implement the tech lead's guidance, or the solution the tech lead validated, from the previous handoff and the feedback.",
	pipeline.PurposeDiagnostic:       "Run the diagnostic the investigator asked for (the feedback), put its output in `diagnostic_output`, and remove any temporary instrumentation. Report READY_FOR_REVIEW when it ran, BLOCKED when it could not; the investigator gets your output either way.",
	pipeline.PurposeTest:             "Test the group's implementation.",
	pipeline.PurposeReview:           "Review the group's change before it is merged.",
	pipeline.PurposeGuidance:         "Someone working on this group is blocked or keeps failing (previous handoff and feedback): find what is in the way and give concrete guidance.",
	pipeline.PurposeValidateFindings: "Validate the investigator's findings: APPROVED if the root cause and the proposed fix are sound, CHANGES_REQUESTED if the investigation must go on.",
	pipeline.PurposeInvestigate:      "Investigate the problem described below: one iteration, then report what you found.",
}

// DescribePurpose is the sentence a prompt gives for an engine Purpose, or
// "" for purposes no agent runs (merge, validate, none).
func DescribePurpose(p pipeline.Purpose) string { return purposeText[p] }
