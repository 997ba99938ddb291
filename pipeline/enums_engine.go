package pipeline

import "slices"

// WaitReason names why a track has nothing in flight. The liveness invariant
// requires one whenever an unfinished group has no step in flight.
type WaitReason string

// Wait reasons in order.
const (
	WaitNone          WaitReason = ""
	WaitPhase         WaitReason = "phase"         // its phase is not current yet
	WaitDependencies  WaitReason = "dependencies"  // a group it depends on has not merged
	WaitCap           WaitReason = "cap"           // max_parallel (or the research cap) is reached
	WaitMergeLane     WaitReason = "merge_lane"    // another merge on the base is in flight
	WaitHumanReview   WaitReason = "human_review"  // required human approvals are missing
	WaitClarification WaitReason = "clarification" // a question to the humans is open
	WaitPM            WaitReason = "pm"            // the pm must decide (a step is queued or in flight)
	WaitPaused        WaitReason = "paused"        // the session is paused; Session.Reason says why
	WaitEnded         WaitReason = "ended"         // the session ended
	WaitGroups        WaitReason = "groups"        // lead only: the groups are at work
	WaitCheckpoint    WaitReason = "checkpoint"    // a checkpoint waits for a human's approval; Session.Checkpoint names it
	WaitChecks        WaitReason = "checks"        // the group PR head's required checks (CI) have not passed yet
	WaitBranch        WaitReason = "branch"        // the group branch was deleted; a human restores it (retry) or gives the group up
)

var waitReasonEnum = enum[WaitReason]{kind: "wait reason", values: []WaitReason{
	WaitNone, WaitPhase, WaitDependencies, WaitCap, WaitMergeLane, WaitHumanReview, WaitClarification, WaitPM,
	WaitPaused, WaitEnded, WaitGroups, WaitCheckpoint, WaitChecks, WaitBranch,
}}

func (w WaitReason) String() string { return waitReasonEnum.name(w) }

func (w WaitReason) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

func (w *WaitReason) UnmarshalText(b []byte) error {
	return waitReasonEnum.unmarshal(b, w)
}

// Purpose says what a step is for; prompts and capsules use it.
type Purpose string

// Purposes in order.
const (
	PurposeNone             Purpose = ""
	PurposePlan             Purpose = "plan"
	PurposeCoordinate       Purpose = "coordinate"  // pm: hear the inbox (escalations, rejections, abandoned groups)
	PurposeAnswered         Purpose = "answered"    // pm: continue with a clarification answer or the fallback
	PurposeFinalCheck       Purpose = "final_check" // pm: all groups merged; BAZINGA or more work
	PurposeImplement        Purpose = "implement"
	PurposeRevise           Purpose = "revise"
	PurposeFixQA            Purpose = "fix_qa"
	PurposeFixReview        Purpose = "fix_review"
	PurposeFixMerge         Purpose = "fix_merge"
	PurposeApplyGuidance    Purpose = "apply_guidance"
	PurposeDiagnostic       Purpose = "diagnostic"
	PurposeTest             Purpose = "test"
	PurposeReview           Purpose = "review"
	PurposeGuidance         Purpose = "guidance"
	PurposeValidateFindings Purpose = "validate_findings"
	PurposeInvestigate      Purpose = "investigate"
	PurposeMerge            Purpose = "merge"
	PurposeValidate         Purpose = "validate"
)

var purposeEnum = enum[Purpose]{kind: "purpose", values: []Purpose{
	PurposeNone, PurposePlan, PurposeCoordinate, PurposeAnswered, PurposeFinalCheck, PurposeImplement, PurposeRevise,
	PurposeFixQA, PurposeFixReview, PurposeFixMerge, PurposeApplyGuidance, PurposeDiagnostic, PurposeTest,
	PurposeReview, PurposeGuidance, PurposeValidateFindings, PurposeInvestigate, PurposeMerge, PurposeValidate,
}}

// Purposes lists every purpose in order.
func Purposes() []Purpose { return slices.Clone(purposeEnum.values[1:]) }

func (p Purpose) String() string { return purposeEnum.name(p) }

func (p Purpose) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

func (p *Purpose) UnmarshalText(b []byte) error { return purposeEnum.unmarshal(b, p) }

// StepState is where a dispatched step stands. Its zero value StepInFlight
// is "" in Go (a Step{} is in flight until it ends) and "in_flight" on the
// wire.
type StepState string

// Step states.
const (
	StepInFlight  StepState = ""          // "in_flight"
	StepDone      StepState = "done"      // ended with a result
	StepFailed    StepState = "failed"    // ended without a result (crash, timeout, cancelled job)
	StepCancelled StepState = "cancelled" // withdrawn by the engine (stop, retry, PR closed)
)

var stepStateEnum = enum[StepState]{kind: "step state", zero: "in_flight", values: []StepState{
	StepInFlight, StepDone, StepFailed, StepCancelled,
}}

func (s StepState) String() string { return stepStateEnum.name(s) }

func (s StepState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *StepState) UnmarshalText(b []byte) error {
	return stepStateEnum.unmarshal(b, s)
}

// EventKind is what happened.
type EventKind string

// Event kinds.
const (
	EventUnknown       EventKind = ""
	EventStarted       EventKind = "started"        // a session begins
	EventStepResult    EventKind = "step_result"    // a step reported a result
	EventStepFailed    EventKind = "step_failed"    // a step ended without a result
	EventCommand       EventKind = "command"        // a human command
	EventHumanReview   EventKind = "human_review"   // a human reviewed a group PR
	EventPRClosed      EventKind = "pr_closed"      // a group PR was closed
	EventTick          EventKind = "tick"           // time passed
	EventChecks        EventKind = "checks"         // the state of a group PR head's required checks (CI)
	EventPushed        EventKind = "pushed"         // a group branch is at a head bazinga did not report: someone pushed to it
	EventBranchDeleted EventKind = "branch_deleted" // a group branch was deleted (GitHub closes its PR with it)
	EventPRReopened    EventKind = "pr_reopened"    // a closed group PR was reopened
	EventBaseRenamed   EventKind = "base_renamed"   // the base branch was renamed (Body: from, Base: to)
	EventHeld          EventKind = "held"           // the front-end could neither read nor act from StartedAt to EndedAt
)

var eventKindEnum = enum[EventKind]{kind: "event kind", values: []EventKind{
	EventUnknown, EventStarted, EventStepResult, EventStepFailed, EventCommand, EventHumanReview, EventPRClosed,
	EventTick, EventChecks, EventPushed, EventBranchDeleted, EventPRReopened, EventBaseRenamed, EventHeld,
}}

func (k EventKind) String() string { return eventKindEnum.name(k) }

func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *EventKind) UnmarshalText(b []byte) error {
	return eventKindEnum.unmarshal(b, k)
}

// CommandKind is a human command.
type CommandKind string

// Command kinds.
const (
	CommandUnknown CommandKind = ""
	CommandResume  CommandKind = "resume"
	CommandStop    CommandKind = "stop"
	CommandRetry   CommandKind = "retry"
	CommandAnswer  CommandKind = "answer"
	CommandPause   CommandKind = "pause"   // the bazinga label was removed, or a local interrupt
	CommandApprove CommandKind = "approve" // a human approves the open checkpoint
)

var commandKindEnum = enum[CommandKind]{kind: "command", values: []CommandKind{
	CommandUnknown, CommandResume, CommandStop, CommandRetry, CommandAnswer, CommandPause, CommandApprove,
}}

func (k CommandKind) String() string { return commandKindEnum.name(k) }

func (k CommandKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *CommandKind) UnmarshalText(b []byte) error {
	return commandKindEnum.unmarshal(b, k)
}

// ReviewState is a human review's verdict. Its zero value ReviewCommented
// is "" in Go and "commented" on the wire; an event without a review (the
// field is omitted when empty) is a comment, as it always was.
type ReviewState string

// Review states.
const (
	ReviewCommented        ReviewState = "" // "commented"
	ReviewApproved         ReviewState = "approved"
	ReviewChangesRequested ReviewState = "changes_requested"
	ReviewDismissed        ReviewState = "dismissed"
)

var reviewStateEnum = enum[ReviewState]{kind: "review state", zero: "commented", values: []ReviewState{
	ReviewCommented, ReviewApproved, ReviewChangesRequested, ReviewDismissed,
}}

func (r ReviewState) String() string { return reviewStateEnum.name(r) }

func (r ReviewState) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

func (r *ReviewState) UnmarshalText(b []byte) error {
	return reviewStateEnum.unmarshal(b, r)
}

// ActionKind is an effect the front-end must carry out.
type ActionKind string

// Action kinds, in the order a front-end should apply one reconcile's actions.
const (
	ActionUnknown  ActionKind = ""
	ActionDispatch ActionKind = "dispatch" // run a step
	ActionCancel   ActionKind = "cancel"   // withdraw a step in flight (best effort; its result will be ignored)
	ActionNotify   ActionKind = "notify"   // post a message (question, answers, refusal, completion summary)
	ActionPause    ActionKind = "pause"    // the session paused; tell the humans why
	ActionComplete ActionKind = "complete" // the session ended
	ActionReport   ActionKind = "report"   // something was ignored; log it
)

// The engine emits only what it alone decides. What follows from the state
// (group branches and PRs, labels, the tracking comment or state file) each
// front-end derives from the session it holds and converges on.

var actionKindEnum = enum[ActionKind]{kind: "action kind", values: []ActionKind{
	ActionUnknown, ActionDispatch, ActionCancel, ActionNotify, ActionPause, ActionComplete, ActionReport,
}}

func (k ActionKind) String() string { return actionKindEnum.name(k) }

func (k ActionKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *ActionKind) UnmarshalText(b []byte) error {
	return actionKindEnum.unmarshal(b, k)
}

// NoticeKind says what an ActionNotify carries.
type NoticeKind string

// Notice kinds.
const (
	NoticeNone       NoticeKind = ""
	NoticeQuestion   NoticeKind = "question"   // the pm asks the humans; each front-end says how to answer
	NoticeAnswers    NoticeKind = "answers"    // the pm's answers for an investigation-only session
	NoticeSummary    NoticeKind = "summary"    // BAZINGA verified: the completion summary
	NoticeInfo       NoticeKind = "info"       // an acknowledgement or a refusal
	NoticeCheckpoint NoticeKind = "checkpoint" // a checkpoint opened: the humans review and approve (Text says what)
)

var noticeKindEnum = enum[NoticeKind]{kind: "notice kind", values: []NoticeKind{
	NoticeNone, NoticeQuestion, NoticeAnswers, NoticeSummary, NoticeInfo, NoticeCheckpoint,
}}

func (k NoticeKind) String() string { return noticeKindEnum.name(k) }

func (k NoticeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *NoticeKind) UnmarshalText(b []byte) error {
	return noticeKindEnum.unmarshal(b, k)
}

// --- checkpoints (issue 13) -------------------------------------------------

// CheckpointKind is a point where the session waits for a human's approval
// (the checkpoints key of the configuration).
type CheckpointKind string

// Checkpoint kinds in order.
const (
	CheckpointNone     CheckpointKind = ""
	CheckpointPlan     CheckpointKind = "plan"     // after PLANNING_COMPLETE, before any group starts
	CheckpointPhase    CheckpointKind = "phase"    // before each phase after the first starts
	CheckpointFindings CheckpointKind = "findings" // a group's HIGH finding survived its revisions (issue 26); not a configuration value
)

var checkpointKindEnum = enum[CheckpointKind]{kind: "checkpoint", values: []CheckpointKind{
	CheckpointNone, CheckpointPlan, CheckpointPhase, CheckpointFindings,
}}

// CheckpointKinds lists the kinds a configuration may name, in order.
func CheckpointKinds() []CheckpointKind { return []CheckpointKind{CheckpointPlan, CheckpointPhase} }

func (k CheckpointKind) String() string { return checkpointKindEnum.name(k) }

func (k CheckpointKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

func (k *CheckpointKind) UnmarshalText(b []byte) error {
	return checkpointKindEnum.unmarshal(b, k)
}

// ParseCheckpointKind reads a checkpoint name as the configuration writes it.
func ParseCheckpointKind(s string) (CheckpointKind, error) {
	return checkpointKindEnum.parse(s)
}
