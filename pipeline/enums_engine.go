package pipeline

// WaitReason names why a track has nothing in flight. The liveness invariant
// requires one whenever an unfinished group has no step in flight.
type WaitReason int

// Wait reasons in order.
const (
	WaitNone          WaitReason = iota
	WaitPhase                    // its phase is not current yet
	WaitDependencies             // a group it depends on has not merged
	WaitCap                      // max_parallel (or the research cap) is reached
	WaitMergeLane                // another merge on the base is in flight
	WaitHumanReview              // required human approvals are missing
	WaitClarification            // a question to the humans is open
	WaitPM                       // the pm must decide (a step is queued or in flight)
	WaitPaused                   // the session is paused; Session.Reason says why
	WaitEnded                    // the session ended
	WaitGroups                   // lead only: the groups are at work
	WaitCheckpoint               // a checkpoint waits for a human's approval; Session.Checkpoint names it
	WaitChecks                   // the group PR head's required checks (CI) have not passed yet
	WaitBranch                   // the group branch was deleted; a human restores it (retry) or gives the group up
)

var waitReasonNames = []string{"", "phase", "dependencies", "cap", "merge_lane", "human_review", "clarification", "pm", "paused", "ended", "groups",
	"checkpoint", "checks", "branch"}

func (w WaitReason) String() string { return enumName(waitReasonNames, int(w)) }

func (w WaitReason) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

func (w *WaitReason) UnmarshalText(b []byte) error {
	return enumUnmarshal("wait reason", waitReasonNames, b, w)
}

// Purpose says what a step is for; prompts and capsules use it.
type Purpose int

// Purposes in order.
const (
	PurposeNone Purpose = iota
	PurposePlan
	PurposeCoordinate // pm: hear the inbox (escalations, rejections, abandoned groups)
	PurposeAnswered   // pm: continue with a clarification answer or the fallback
	PurposeFinalCheck // pm: all groups merged; BAZINGA or more work
	PurposeImplement
	PurposeRevise
	PurposeFixQA
	PurposeFixReview
	PurposeFixMerge
	PurposeApplyGuidance
	PurposeDiagnostic
	PurposeTest
	PurposeReview
	PurposeGuidance
	PurposeValidateFindings
	PurposeInvestigate
	PurposeMerge
	PurposeValidate
)

var purposeNames = []string{"", "plan", "coordinate", "answered", "final_check", "implement", "revise", "fix_qa",
	"fix_review", "fix_merge", "apply_guidance", "diagnostic", "test", "review", "guidance", "validate_findings",
	"investigate", "merge", "validate"}

func (p Purpose) String() string { return enumName(purposeNames, int(p)) }

func (p Purpose) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

func (p *Purpose) UnmarshalText(b []byte) error { return enumUnmarshal("purpose", purposeNames, b, p) }

// StepState is where a dispatched step stands.
type StepState int

// Step states.
const (
	StepInFlight  StepState = iota
	StepDone                // ended with a result
	StepFailed              // ended without a result (crash, timeout, cancelled job)
	StepCancelled           // withdrawn by the engine (stop, retry, PR closed)
)

var stepStateNames = []string{"in_flight", "done", "failed", "cancelled"}

func (s StepState) String() string { return enumName(stepStateNames, int(s)) }

func (s StepState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *StepState) UnmarshalText(b []byte) error {
	return enumUnmarshal("step state", stepStateNames, b, s)
}

// EventKind is what happened.
type EventKind int

// Event kinds.
const (
	EventUnknown       EventKind = iota
	EventStarted                 // a session begins
	EventStepResult              // a step reported a result
	EventStepFailed              // a step ended without a result
	EventCommand                 // a human command
	EventHumanReview             // a human reviewed a group PR
	EventPRClosed                // a group PR was closed
	EventTick                    // time passed
	EventChecks                  // the state of a group PR head's required checks (CI)
	EventPushed                  // a group branch is at a head bazinga did not report: someone pushed to it
	EventBranchDeleted           // a group branch was deleted (GitHub closes its PR with it)
	EventPRReopened              // a closed group PR was reopened
	EventBaseRenamed             // the base branch was renamed (Body: from, Base: to)
	EventHeld                    // the front-end could neither read nor act from StartedAt to EndedAt
)

var eventKindNames = []string{"", "started", "step_result", "step_failed", "command", "human_review", "pr_closed", "tick", "checks", "pushed", "branch_deleted", "pr_reopened", "base_renamed", "held"}

func (k EventKind) String() string { return enumName(eventKindNames, int(k)) }

func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *EventKind) UnmarshalText(b []byte) error {
	return enumUnmarshal("event kind", eventKindNames, b, k)
}

// CommandKind is a human command.
type CommandKind int

// Command kinds.
const (
	CommandUnknown CommandKind = iota
	CommandResume
	CommandStop
	CommandRetry
	CommandAnswer
	CommandPause   // the bazinga label was removed, or a local interrupt
	CommandApprove // a human approves the open checkpoint
)

var commandKindNames = []string{"", "resume", "stop", "retry", "answer", "pause", "approve"}

func (k CommandKind) String() string { return enumName(commandKindNames, int(k)) }

func (k CommandKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *CommandKind) UnmarshalText(b []byte) error {
	return enumUnmarshal("command", commandKindNames, b, k)
}

// ReviewState is a human review's verdict.
type ReviewState int

// Review states.
const (
	ReviewCommented ReviewState = iota
	ReviewApproved
	ReviewChangesRequested
	ReviewDismissed
)

var reviewStateNames = []string{"commented", "approved", "changes_requested", "dismissed"}

func (r ReviewState) String() string { return enumName(reviewStateNames, int(r)) }

func (r ReviewState) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

func (r *ReviewState) UnmarshalText(b []byte) error {
	return enumUnmarshal("review state", reviewStateNames, b, r)
}

// ActionKind is an effect the front-end must carry out.
type ActionKind int

// Action kinds, in the order a front-end should apply one reconcile's actions.
const (
	ActionUnknown  ActionKind = iota
	ActionDispatch            // run a step
	ActionCancel              // withdraw a step in flight (best effort; its result will be ignored)
	ActionNotify              // post a message (question, answers, refusal, completion summary)
	ActionPause               // the session paused; tell the humans why
	ActionComplete            // the session ended
	ActionReport              // something was ignored; log it
)

// The engine emits only what it alone decides. What follows from the state
// (group branches and PRs, labels, the tracking comment or state file) each
// front-end derives from the session it holds and converges on.

var actionKindNames = []string{"", "dispatch", "cancel", "notify", "pause", "complete", "report"}

func (k ActionKind) String() string { return enumName(actionKindNames, int(k)) }

func (k ActionKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *ActionKind) UnmarshalText(b []byte) error {
	return enumUnmarshal("action kind", actionKindNames, b, k)
}

// NoticeKind says what an ActionNotify carries.
type NoticeKind int

// Notice kinds.
const (
	NoticeNone       NoticeKind = iota
	NoticeQuestion              // the pm asks the humans; each front-end says how to answer
	NoticeAnswers               // the pm's answers for an investigation-only session
	NoticeSummary               // BAZINGA verified: the completion summary
	NoticeInfo                  // an acknowledgement or a refusal
	NoticeCheckpoint            // a checkpoint opened: the humans review and approve (Text says what)
)

var noticeKindNames = []string{"", "question", "answers", "summary", "info", "checkpoint"}

func (k NoticeKind) String() string { return enumName(noticeKindNames, int(k)) }

func (k NoticeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *NoticeKind) UnmarshalText(b []byte) error {
	return enumUnmarshal("notice kind", noticeKindNames, b, k)
}

// --- checkpoints (issue 13) -------------------------------------------------

// CheckpointKind is a point where the session waits for a human's approval
// (the checkpoints key of the configuration).
type CheckpointKind int

// Checkpoint kinds in order.
const (
	CheckpointNone     CheckpointKind = iota
	CheckpointPlan                    // after PLANNING_COMPLETE, before any group starts
	CheckpointPhase                   // before each phase after the first starts
	CheckpointFindings                // a group's HIGH finding survived its revisions (issue 26); not a configuration value
)

var checkpointKindNames = []string{"", "plan", "phase", "findings"}

// CheckpointKinds lists the kinds a configuration may name, in order.
func CheckpointKinds() []CheckpointKind { return []CheckpointKind{CheckpointPlan, CheckpointPhase} }

func (k CheckpointKind) String() string { return enumName(checkpointKindNames, int(k)) }

func (k CheckpointKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *CheckpointKind) UnmarshalText(b []byte) error {
	return enumUnmarshal("checkpoint", checkpointKindNames, b, k)
}

// ParseCheckpointKind reads a checkpoint name as the configuration writes it.
func ParseCheckpointKind(s string) (CheckpointKind, error) {
	i, err := enumParse("checkpoint", checkpointKindNames, s)
	return CheckpointKind(i), err
}
