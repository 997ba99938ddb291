package pipeline

import "time"

// Event is something that happened to a session. Events only wake the
// reconciler: it then looks at the whole session, so a lost event delays work
// but never loses it.
type Event struct {
	Kind    EventKind `json:"kind"`
	Session string    `json:"session"`
	// Step is the step a result or failure is for.
	Step   string  `json:"step,omitempty"`
	Result *Result `json:"result,omitempty"`
	// Reason says why a step failed.
	Reason string `json:"reason,omitempty"`
	// Permanent marks a step failure that retrying cannot fix (the CLI's
	// credentials were refused, its command line was rejected): the session
	// pauses at once instead of spending the step's attempts.
	Permanent bool `json:"permanent,omitempty"`
	// Command is set for EventCommand.
	Command *Command `json:"command,omitempty"`
	// Group is the group a review or PR closure is about.
	Group string `json:"group,omitempty"`
	// Actor is the human (or system) behind the event.
	Actor string `json:"actor,omitempty"`
	// Review is set for EventHumanReview; Body carries its text.
	Review ReviewState `json:"review,omitempty"`
	Body   string      `json:"body,omitempty"`
	// Commit is the group branch's head commit the event is about: the commit
	// a human review was submitted on, or the head after a step (set by the
	// executor when it knows it), or the head someone pushed (EventPushed).
	// Approvals count only for the head that merges.
	Commit string `json:"commit,omitempty"`
	// Merged is set for EventPRClosed when the PR was merged.
	Merged bool `json:"merged,omitempty"`
	// Checks is set for EventChecks: the required checks of the group PR at
	// head Commit, as the front-end read them from GitHub.
	Checks *ChecksReport `json:"checks,omitempty"`
	// Requirements and Base start a session (EventStarted).
	Requirements string `json:"requirements,omitempty"`
	Base         string `json:"base,omitempty"`
	// RequirementsRef references the full requirements when Requirements
	// is the front-end's bounded copy of a longer text (issue 27); nil when
	// Requirements is the whole text.
	RequirementsRef *TextRef `json:"requirements_ref,omitempty"`
	// Usage is what a step that ended (result or failure) cost, as its
	// agent reported it; RunURL is the job run that carried it out.
	Usage  *Usage `json:"usage,omitempty"`
	RunURL string `json:"run_url,omitempty"`
	// Harness is what the harness itself found during the step of a result
	// (the baseline, check outcomes); never taken from the agent's output.
	Harness *HarnessReport `json:"harness,omitempty"`
	// StartedAt and EndedAt are when the job of a step result or failure
	// started and ended, as the front-end measured them: the engine has no
	// clock, so the durations that correct its size estimates come as data.
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

// Command is a parsed human command.
type Command struct {
	Kind CommandKind `json:"kind"`
	// Group is the optional group of retry.
	Group string `json:"group,omitempty"`
	// Text is the answer of answer, or the reason of pause.
	Text string `json:"text,omitempty"`
	// Restart marks a resume whose sender knows the steps in flight are
	// lost (a local runner that was killed and started again): every one is
	// sent again at once. A plain resume on a live session re-sends only the
	// steps sent at least ResendAfter ago, so that repeated resumes do not
	// start a job per step each time.
	Restart bool `json:"restart,omitempty"`
	// Checkpoint is the checkpoint a human approves (approve, resume): the id
	// they saw. approve with a different id than the open checkpoint's is
	// refused, so an approval never passes a plan its author has not seen;
	// approve without one approves the open checkpoint (a terminal asks
	// about the one open). resume approves only the checkpoint it names.
	// An answer carries it too: feedback bound to a checkpoint other than
	// the open one sends nothing back (issue 23: feedback about plan-1
	// never returns plan-2).
	Checkpoint string `json:"checkpoint,omitempty"`
	// Question is the question an answer was written about: the pm step
	// that asked it (Session.QuestionAt), NoQuestion when none was open.
	// An answer bound to another question than the open one answers
	// nothing; an answer without one answers the open question (a terminal
	// asks about the one open).
	Question string `json:"question,omitempty"`
}

// Started returns the event that begins a session.
func Started(session, requirements, base string) Event {
	return Event{Kind: EventStarted, Session: session, Requirements: requirements, Base: base}
}

// StartedBounded returns the event that begins a session whose requirements
// may be long: the event carries them bounded (BoundRequirements), so that a
// front-end can record it in a comment, and references the whole text.
func StartedBounded(session, requirements, base string) Event {
	ev := Started(session, BoundRequirements(requirements), base)
	if ev.Requirements != requirements {
		ev.RequirementsRef = RefOf(requirements, "")
	}
	return ev
}

// StepResult returns the event of a step's result.
func StepResult(session, step string, r Result) Event {
	return Event{Kind: EventStepResult, Session: session, Step: step, Result: &r}
}

// StepFailure returns the event of a step that ended without a result.
func StepFailure(session, step, reason string) Event {
	return Event{Kind: EventStepFailed, Session: session, Step: step, Reason: reason}
}

// StepFailurePermanent returns the event of a step that ended without a
// result for a reason retrying cannot fix: the session pauses naming it.
func StepFailurePermanent(session, step, reason string) Event {
	ev := StepFailure(session, step, reason)
	ev.Permanent = true
	return ev
}

// CommandEvent returns the event of a human command.
func CommandEvent(session, actor string, c Command) Event {
	return Event{Kind: EventCommand, Session: session, Actor: actor, Command: &c}
}

// Pushed returns the event of a push to a group branch that bazinga did not
// make: the branch's head is now head, pushed by the login by ("" when not
// known). Front-ends send it from a pull request's synchronize event (its
// sender) or when the group PR's head they read is not the group's head.
func Pushed(session, group, head, by string) Event {
	return Event{Kind: EventPushed, Session: session, Group: group, Commit: head, Actor: by}
}

// Tick returns a tick event: time passed, check timeouts.
func Tick(session string) Event { return Event{Kind: EventTick, Session: session} }
