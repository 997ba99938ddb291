package pipeline

import (
	"fmt"
	"strings"
)

// The engine's enums are ints with a fixed order and a name table, so output
// never depends on map iteration and JSON carries readable names.

func enumName(names []string, i int) string {
	if i < 0 || i >= len(names) {
		return fmt.Sprintf("invalid(%d)", i)
	}
	return names[i]
}

func enumParse(kind string, names []string, s string) (int, error) {
	for i, n := range names {
		if n != "" && n == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q", kind, s)
}

func enumUnmarshal[E ~int](kind string, names []string, b []byte, e *E) error {
	if len(b) == 0 {
		*e = 0
		return nil
	}
	i, err := enumParse(kind, names, string(b))
	if err != nil {
		return err
	}
	*e = E(i)
	return nil
}

// Role is who runs a step: an agent role, or a step the harness runs itself.
type Role int

// Roles in their fixed order.
const (
	RoleUnknown Role = iota
	RolePM
	RoleDeveloper
	RoleSenior
	RoleQA
	RoleTechLead
	RoleInvestigator
	RoleRequirements
	RoleMerge    // harness: land the group on the base behind the test gate
	RoleValidate // harness: verify a BAZINGA claim
)

var roleNames = []string{"", "pm", "developer", "senior", "qa", "tech_lead", "investigator", "requirements", "merge", "validate"}

// Roles lists every role in order.
func Roles() []Role {
	return []Role{RolePM, RoleDeveloper, RoleSenior, RoleQA, RoleTechLead, RoleInvestigator, RoleRequirements, RoleMerge, RoleValidate}
}

func (r Role) String() string { return enumName(roleNames, int(r)) }

// IsAgent reports whether the role is run by an LLM agent (not the harness).
func (r Role) IsAgent() bool { return r >= RolePM && r <= RoleRequirements }

// IsImplementer reports whether the role's steps count against max_parallel.
func (r Role) IsImplementer() bool {
	return r == RoleDeveloper || r == RoleSenior || r == RoleRequirements
}

// ParseRole reads a role name such as "tech_lead".
func ParseRole(s string) (Role, error) {
	i, err := enumParse("role", roleNames, strings.ToLower(strings.TrimSpace(s)))
	return Role(i), err
}

func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

func (r *Role) UnmarshalText(b []byte) error { return enumUnmarshal("role", roleNames, b, r) }

// Status is what a step reports. Aliases are kept as values of their own so a
// result can be recorded as written, and Canonical maps them to what routes.
type Status int

// Statuses in their fixed order: every status of the routing table, then the aliases.
const (
	StatusUnknown Status = iota
	// pm
	StatusPlanningComplete
	StatusContinue
	StatusBazinga
	StatusNeedsClarification
	StatusInvestigationNeeded
	StatusInvestigationOnly
	// developer, senior, requirements
	StatusReadyForQA
	StatusReadyForReview
	StatusPartial
	StatusBlocked
	StatusEscalateSenior
	StatusSpawnInvestigator
	// qa
	StatusPass
	StatusFail
	StatusFlaky
	// tech_lead
	StatusApproved
	StatusApprovedWithNotes
	StatusChangesRequested
	StatusEscalateToOpus
	StatusUnblockingGuidance
	// investigator
	StatusRootCauseFound
	StatusInvestigationIncomplete
	StatusExhausted
	StatusNeedDeveloperDiagnostic
	StatusHypothesisEliminated
	StatusNeedMoreAnalysis
	// merge
	StatusMergeSuccess
	StatusMergeConflict
	StatusMergeTestFailure
	StatusMergeBlocked
	StatusMergeUpdated // the base requires an up-to-date head: the tested merge was pushed to the group branch
	// The group branch is no longer at the head the tech lead approved
	// (someone pushed after review): nothing was merged; a fact, not a failure.
	StatusMergeHeadMoved
	// validate
	StatusAccept
	StatusReject
	// aliases
	StatusIncomplete                 // → PARTIAL
	StatusWaitingForResults          // → NEED_DEVELOPER_DIAGNOSTIC
	StatusUnblockingGuidanceProvided // → UNBLOCKING_GUIDANCE
	StatusFailEscalate               // → ESCALATE_SENIOR
)

var statusNames = []string{"",
	"PLANNING_COMPLETE", "CONTINUE", "BAZINGA", "NEEDS_CLARIFICATION", "INVESTIGATION_NEEDED", "INVESTIGATION_ONLY",
	"READY_FOR_QA", "READY_FOR_REVIEW", "PARTIAL", "BLOCKED", "ESCALATE_SENIOR", "SPAWN_INVESTIGATOR",
	"PASS", "FAIL", "FLAKY",
	"APPROVED", "APPROVED_WITH_NOTES", "CHANGES_REQUESTED", "ESCALATE_TO_OPUS", "UNBLOCKING_GUIDANCE",
	"ROOT_CAUSE_FOUND", "INVESTIGATION_INCOMPLETE", "EXHAUSTED", "NEED_DEVELOPER_DIAGNOSTIC", "HYPOTHESIS_ELIMINATED", "NEED_MORE_ANALYSIS",
	"MERGE_SUCCESS", "MERGE_CONFLICT", "MERGE_TEST_FAILURE", "MERGE_BLOCKED", "MERGE_UPDATED", "MERGE_HEAD_MOVED",
	"ACCEPT", "REJECT",
	"INCOMPLETE", "WAITING_FOR_RESULTS", "UNBLOCKING_GUIDANCE_PROVIDED", "FAIL_ESCALATE",
}

func (s Status) String() string { return enumName(statusNames, int(s)) }

// Canonical maps an alias to the status it stands for; others map to themselves.
func (s Status) Canonical() Status {
	switch s {
	case StatusIncomplete:
		return StatusPartial
	case StatusWaitingForResults:
		return StatusNeedDeveloperDiagnostic
	case StatusUnblockingGuidanceProvided:
		return StatusUnblockingGuidance
	case StatusFailEscalate:
		return StatusEscalateSenior
	}
	return s
}

// IsAlias reports whether the status is an alias of another.
func (s Status) IsAlias() bool { return s.Canonical() != s }

// ParseStatus reads a status name, case-insensitively, accepting spaces or
// dashes for underscores ("ready for qa" → READY_FOR_QA). Aliases are kept.
func ParseStatus(s string) (Status, error) {
	norm := strings.ToUpper(strings.TrimSpace(s))
	norm = strings.NewReplacer(" ", "_", "-", "_").Replace(norm)
	i, err := enumParse("status", statusNames, norm)
	return Status(i), err
}

func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *Status) UnmarshalText(b []byte) error { return enumUnmarshal("status", statusNames, b, s) }

var allowedStatuses = map[Role][]Status{
	RolePM: {StatusPlanningComplete, StatusContinue, StatusBazinga, StatusNeedsClarification,
		StatusInvestigationNeeded, StatusInvestigationOnly},
	RoleDeveloper: {StatusReadyForQA, StatusReadyForReview, StatusPartial, StatusBlocked,
		StatusEscalateSenior, StatusSpawnInvestigator},
	RoleSenior: {StatusReadyForQA, StatusReadyForReview, StatusPartial, StatusBlocked,
		StatusEscalateSenior, StatusSpawnInvestigator},
	RoleQA: {StatusPass, StatusFail, StatusEscalateSenior, StatusPartial, StatusBlocked, StatusFlaky},
	RoleTechLead: {StatusApproved, StatusApprovedWithNotes, StatusChangesRequested,
		StatusSpawnInvestigator, StatusEscalateToOpus, StatusUnblockingGuidance},
	RoleInvestigator: {StatusRootCauseFound, StatusInvestigationIncomplete, StatusBlocked, StatusExhausted,
		StatusNeedDeveloperDiagnostic, StatusHypothesisEliminated, StatusNeedMoreAnalysis},
	RoleRequirements: {StatusReadyForReview, StatusPartial, StatusBlocked},
	RoleMerge:        {StatusMergeSuccess, StatusMergeConflict, StatusMergeTestFailure, StatusMergeBlocked, StatusMergeUpdated, StatusMergeHeadMoved},
	RoleValidate:     {StatusAccept, StatusReject},
}

// AllowedStatuses lists the canonical statuses a role may report, in order.
func AllowedStatuses(r Role) []Status {
	return append([]Status(nil), allowedStatuses[r]...)
}

// NormalizeStatus maps an alias to its canonical status and checks that the
// role may report it. A status the role may not report becomes PARTIAL (the
// routing table treats it as a revision), and ok is false.
func NormalizeStatus(r Role, s Status) (normalized Status, ok bool) {
	c := s.Canonical()
	for _, a := range allowedStatuses[r] {
		if a == c {
			return c, true
		}
	}
	return StatusPartial, false
}

// SessionStatus is where a session stands.
type SessionStatus int

// Session statuses in order.
const (
	SessionNew SessionStatus = iota
	SessionPlanning
	SessionRunning
	SessionAwaitingInput
	SessionPaused
	SessionValidating
	SessionDone
	SessionFailed
	SessionStopped
)

var sessionStatusNames = []string{"new", "planning", "running", "awaiting_input", "paused", "validating", "done", "failed", "stopped"}

func (s SessionStatus) String() string { return enumName(sessionStatusNames, int(s)) }

// Terminal reports whether the session has ended (a human may still resume a
// failed or stopped one).
func (s SessionStatus) Terminal() bool {
	return s == SessionDone || s == SessionFailed || s == SessionStopped
}

func (s SessionStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *SessionStatus) UnmarshalText(b []byte) error {
	return enumUnmarshal("session status", sessionStatusNames, b, s)
}

// Stage is where a group stands; labels on the group PR are a view of it.
type Stage int

// Group stages in order.
const (
	StagePending       Stage = iota // not started: waiting for its phase, dependencies or a slot
	StageDev                        // developer, senior or requirements at work
	StageQA                         // QA testing
	StageReview                     // tech lead reviewing or guiding
	StageInvestigation              // investigator at work
	StageApproved                   // approved; waiting for human approvals or the merge lane
	StageMerging                    // merge step in flight
	StageMerged                     // landed on the base
	StageBlocked                    // waiting on the pm or on a human (pause, failed step)
	StageAbandoned                  // dropped: PR closed unmerged, or the pm dropped it
)

var stageNames = []string{"pending", "dev", "qa", "review", "investigation", "approved", "merging", "merged", "blocked", "abandoned"}

func (s Stage) String() string { return enumName(stageNames, int(s)) }

// Finished reports whether the group needs nothing more.
func (s Stage) Finished() bool { return s == StageMerged || s == StageAbandoned }

func (s Stage) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *Stage) UnmarshalText(b []byte) error { return enumUnmarshal("stage", stageNames, b, s) }

// GroupType says whether a group implements or researches.
type GroupType int

// Group types.
const (
	GroupImplementation GroupType = iota
	GroupResearch
)

var groupTypeNames = []string{"implementation", "research"}

func (t GroupType) String() string { return enumName(groupTypeNames, int(t)) }

func (t GroupType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

func (t *GroupType) UnmarshalText(b []byte) error {
	return enumUnmarshal("group type", groupTypeNames, b, t)
}

// Tier is who implements a group first.
type Tier int

// Tiers.
const (
	TierDeveloper Tier = iota
	TierSenior
)

var tierNames = []string{"developer", "senior"}

func (t Tier) String() string { return enumName(tierNames, int(t)) }

func (t Tier) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

func (t *Tier) UnmarshalText(b []byte) error { return enumUnmarshal("tier", tierNames, b, t) }

// Mode is the pm's execution mode.
type Mode int

// Modes.
const (
	ModeSimple Mode = iota
	ModeParallel
)

var modeNames = []string{"simple", "parallel"}

func (m Mode) String() string { return enumName(modeNames, int(m)) }

func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

func (m *Mode) UnmarshalText(b []byte) error { return enumUnmarshal("mode", modeNames, b, m) }

// For returns the model configured for a role.
func (m ModelsConfig) For(r Role) string {
	switch r {
	case RolePM:
		return m.PM
	case RoleDeveloper:
		return m.Developer
	case RoleSenior:
		return m.Senior
	case RoleQA:
		return m.QA
	case RoleTechLead:
		return m.TechLead
	case RoleInvestigator:
		return m.Investigator
	case RoleRequirements:
		return m.Requirements
	case RoleValidate:
		return m.Validator
	}
	return ""
}
