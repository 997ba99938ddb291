package pipeline

import (
	"fmt"
	"slices"
	"strings"
)

// The engine's enums are typed strings: each constant is the name it has
// on the wire (the signed state, events.jsonl, result comments), so no
// table of names can drift from the constants. Where an enum's zero value
// has a name of its own (a Group{} is pending), that constant is "" and
// the name is spelled once, in the enum's descriptor: it is what the zero
// value prints and encodes as, and reading either "" or the name gives the
// zero value, as when the enums were ints. Enums with an order (Severity,
// Size) say so with a rank method; comparing two of them with < would
// compare their names. TestEnumDescriptorsComplete holds each descriptor
// to the constants of its type.

// enum describes one enum for printing and reading.
type enum[E ~string] struct {
	kind   string // what an error calls a value: unknown <kind> "x"
	zero   string // the zero value's name ("" when it has none)
	values []E    // every value (reading refuses any other name)
}

// name is e as printed and encoded.
func (d enum[E]) name(e E) string {
	if e == "" {
		return d.zero
	}
	return string(e)
}

// parse reads a name; "" is refused, as an unnamed value is no name.
func (d enum[E]) parse(s string) (E, error) {
	if d.zero != "" && s == d.zero {
		return "", nil
	}
	for _, v := range d.values {
		if v != "" && string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("unknown %s %q", d.kind, s)
}

// unmarshal reads an encoded value: empty is the zero value.
func (d enum[E]) unmarshal(b []byte, e *E) error {
	if len(b) == 0 {
		*e = ""
		return nil
	}
	v, err := d.parse(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}

// Role is who runs a step: an agent role, or a step the harness runs itself.
type Role string

// Roles.
const (
	RoleUnknown      Role = ""
	RolePM           Role = "pm"
	RoleDeveloper    Role = "developer"
	RoleSenior       Role = "senior"
	RoleQA           Role = "qa"
	RoleTechLead     Role = "tech_lead"
	RoleInvestigator Role = "investigator"
	RoleRequirements Role = "requirements"
	RoleMerge        Role = "merge"    // harness: land the group on the base behind the test gate
	RoleValidate     Role = "validate" // harness: verify a BAZINGA claim
)

var roleEnum = enum[Role]{kind: "role", values: []Role{RoleUnknown,
	RolePM, RoleDeveloper, RoleSenior, RoleQA, RoleTechLead, RoleInvestigator, RoleRequirements, RoleMerge, RoleValidate}}

// Roles lists every role in order.
func Roles() []Role { return slices.Clone(roleEnum.values[1:]) }

func (r Role) String() string { return roleEnum.name(r) }

// IsAgent reports whether the role is run by an LLM agent (not the harness).
func (r Role) IsAgent() bool {
	switch r {
	case RolePM, RoleDeveloper, RoleSenior, RoleQA, RoleTechLead, RoleInvestigator, RoleRequirements:
		return true
	}
	return false
}

// IsImplementer reports whether the role's steps count against max_parallel.
func (r Role) IsImplementer() bool {
	return r == RoleDeveloper || r == RoleSenior || r == RoleRequirements
}

// ParseRole reads a role name such as "tech_lead".
func ParseRole(s string) (Role, error) {
	return roleEnum.parse(strings.ToLower(strings.TrimSpace(s)))
}

func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

func (r *Role) UnmarshalText(b []byte) error { return roleEnum.unmarshal(b, r) }

// Status is what a step reports. Aliases are kept as values of their own so a
// result can be recorded as written, and Canonical maps them to what routes.
type Status string

// Statuses in their fixed order: every status of the routing table, then the aliases.
const (
	StatusUnknown Status = ""
	// pm
	StatusPlanningComplete    Status = "PLANNING_COMPLETE"
	StatusContinue            Status = "CONTINUE"
	StatusBazinga             Status = "BAZINGA"
	StatusNeedsClarification  Status = "NEEDS_CLARIFICATION"
	StatusInvestigationNeeded Status = "INVESTIGATION_NEEDED"
	StatusInvestigationOnly   Status = "INVESTIGATION_ONLY"
	// developer, senior, requirements
	StatusReadyForQA        Status = "READY_FOR_QA"
	StatusReadyForReview    Status = "READY_FOR_REVIEW"
	StatusPartial           Status = "PARTIAL"
	StatusBlocked           Status = "BLOCKED"
	StatusEscalateSenior    Status = "ESCALATE_SENIOR"
	StatusSpawnInvestigator Status = "SPAWN_INVESTIGATOR"
	// qa
	StatusPass  Status = "PASS"
	StatusFail  Status = "FAIL"
	StatusFlaky Status = "FLAKY"
	// tech_lead
	StatusApproved           Status = "APPROVED"
	StatusApprovedWithNotes  Status = "APPROVED_WITH_NOTES"
	StatusChangesRequested   Status = "CHANGES_REQUESTED"
	StatusEscalateToOpus     Status = "ESCALATE_TO_OPUS"
	StatusUnblockingGuidance Status = "UNBLOCKING_GUIDANCE"
	// investigator
	StatusRootCauseFound          Status = "ROOT_CAUSE_FOUND"
	StatusInvestigationIncomplete Status = "INVESTIGATION_INCOMPLETE"
	StatusExhausted               Status = "EXHAUSTED"
	StatusNeedDeveloperDiagnostic Status = "NEED_DEVELOPER_DIAGNOSTIC"
	StatusHypothesisEliminated    Status = "HYPOTHESIS_ELIMINATED"
	StatusNeedMoreAnalysis        Status = "NEED_MORE_ANALYSIS"
	// merge
	StatusMergeSuccess     Status = "MERGE_SUCCESS"
	StatusMergeConflict    Status = "MERGE_CONFLICT"
	StatusMergeTestFailure Status = "MERGE_TEST_FAILURE"
	StatusMergeBlocked     Status = "MERGE_BLOCKED"
	StatusMergeUpdated     Status = "MERGE_UPDATED" // the base requires an up-to-date head: the tested merge was pushed to the group branch
	// The group branch is no longer at the head the tech lead approved
	// (someone pushed after review): nothing was merged; a fact, not a failure.
	StatusMergeHeadMoved Status = "MERGE_HEAD_MOVED"
	// validate
	StatusAccept Status = "ACCEPT"
	StatusReject Status = "REJECT"
	// aliases
	StatusIncomplete                 Status = "INCOMPLETE"                   // → PARTIAL
	StatusWaitingForResults          Status = "WAITING_FOR_RESULTS"          // → NEED_DEVELOPER_DIAGNOSTIC
	StatusUnblockingGuidanceProvided Status = "UNBLOCKING_GUIDANCE_PROVIDED" // → UNBLOCKING_GUIDANCE
	StatusFailEscalate               Status = "FAIL_ESCALATE"                // → ESCALATE_SENIOR
)

var statusEnum = enum[Status]{kind: "status", values: []Status{
	StatusUnknown, StatusPlanningComplete, StatusContinue, StatusBazinga, StatusNeedsClarification,
	StatusInvestigationNeeded, StatusInvestigationOnly, StatusReadyForQA, StatusReadyForReview, StatusPartial,
	StatusBlocked, StatusEscalateSenior, StatusSpawnInvestigator, StatusPass, StatusFail, StatusFlaky, StatusApproved,
	StatusApprovedWithNotes, StatusChangesRequested, StatusEscalateToOpus, StatusUnblockingGuidance,
	StatusRootCauseFound, StatusInvestigationIncomplete, StatusExhausted, StatusNeedDeveloperDiagnostic,
	StatusHypothesisEliminated, StatusNeedMoreAnalysis, StatusMergeSuccess, StatusMergeConflict,
	StatusMergeTestFailure, StatusMergeBlocked, StatusMergeUpdated, StatusMergeHeadMoved, StatusAccept, StatusReject,
	StatusIncomplete, StatusWaitingForResults, StatusUnblockingGuidanceProvided, StatusFailEscalate,
}}

func (s Status) String() string { return statusEnum.name(s) }

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
	return statusEnum.parse(norm)
}

func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *Status) UnmarshalText(b []byte) error { return statusEnum.unmarshal(b, s) }

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

// SessionStatus is where a session stands. Its zero value SessionNew is ""
// in Go (a Session{} is new) and "new" on the wire.
type SessionStatus string

// Session statuses in order.
const (
	SessionNew           SessionStatus = "" // "new": not started
	SessionPlanning      SessionStatus = "planning"
	SessionRunning       SessionStatus = "running"
	SessionAwaitingInput SessionStatus = "awaiting_input"
	SessionPaused        SessionStatus = "paused"
	SessionValidating    SessionStatus = "validating"
	SessionDone          SessionStatus = "done"
	SessionFailed        SessionStatus = "failed"
	SessionStopped       SessionStatus = "stopped"
)

var sessionStatusEnum = enum[SessionStatus]{kind: "session status", zero: "new", values: []SessionStatus{
	SessionNew, SessionPlanning, SessionRunning, SessionAwaitingInput, SessionPaused, SessionValidating, SessionDone,
	SessionFailed, SessionStopped,
}}

func (s SessionStatus) String() string { return sessionStatusEnum.name(s) }

// Terminal reports whether the session has ended (a human may still resume a
// failed or stopped one).
func (s SessionStatus) Terminal() bool {
	return s == SessionDone || s == SessionFailed || s == SessionStopped
}

func (s SessionStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *SessionStatus) UnmarshalText(b []byte) error {
	return sessionStatusEnum.unmarshal(b, s)
}

// Stage is where a group stands; labels on the group PR are a view of it.
// Its zero value StagePending is "" in Go (a Group{} and a Track{} are
// pending) and "pending" on the wire.
type Stage string

// Group stages in order.
const (
	StagePending       Stage = ""              // "pending": not started: waiting for its phase, dependencies or a slot
	StageDev           Stage = "dev"           // developer, senior or requirements at work
	StageQA            Stage = "qa"            // QA testing
	StageReview        Stage = "review"        // tech lead reviewing or guiding
	StageInvestigation Stage = "investigation" // investigator at work
	StageApproved      Stage = "approved"      // approved; waiting for human approvals or the merge lane
	StageMerging       Stage = "merging"       // merge step in flight
	StageMerged        Stage = "merged"        // landed on the base
	StageBlocked       Stage = "blocked"       // waiting on the pm or on a human (pause, failed step)
	StageAbandoned     Stage = "abandoned"     // dropped: PR closed unmerged, or the pm dropped it
)

var stageEnum = enum[Stage]{kind: "stage", zero: "pending", values: []Stage{
	StagePending, StageDev, StageQA, StageReview, StageInvestigation, StageApproved, StageMerging, StageMerged,
	StageBlocked, StageAbandoned,
}}

func (s Stage) String() string { return stageEnum.name(s) }

// Finished reports whether the group needs nothing more.
func (s Stage) Finished() bool { return s == StageMerged || s == StageAbandoned }

func (s Stage) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *Stage) UnmarshalText(b []byte) error { return stageEnum.unmarshal(b, s) }

// GroupType says whether a group implements or researches. Its zero value
// GroupImplementation is "" in Go (a group the pm did not type implements)
// and "implementation" on the wire.
type GroupType string

// Group types.
const (
	GroupImplementation GroupType = "" // "implementation"
	GroupResearch       GroupType = "research"
)

var groupTypeEnum = enum[GroupType]{kind: "group type", zero: "implementation", values: []GroupType{
	GroupImplementation, GroupResearch,
}}

func (t GroupType) String() string { return groupTypeEnum.name(t) }

func (t GroupType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

func (t *GroupType) UnmarshalText(b []byte) error {
	return groupTypeEnum.unmarshal(b, t)
}

// Tier is who implements a group first. Its zero value TierDeveloper is ""
// in Go (a group starts with a developer unless the pm says otherwise) and
// "developer" on the wire.
type Tier string

// Tiers.
const (
	TierDeveloper Tier = "" // "developer"
	TierSenior    Tier = "senior"
)

var tierEnum = enum[Tier]{kind: "tier", zero: "developer", values: []Tier{TierDeveloper, TierSenior}}

func (t Tier) String() string { return tierEnum.name(t) }

func (t Tier) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

func (t *Tier) UnmarshalText(b []byte) error { return tierEnum.unmarshal(b, t) }

// Mode is the pm's execution mode. Its zero value ModeSimple is "" in Go
// (a session starts simple) and "simple" on the wire.
type Mode string

// Modes.
const (
	ModeSimple   Mode = "" // "simple"
	ModeParallel Mode = "parallel"
)

var modeEnum = enum[Mode]{kind: "mode", zero: "simple", values: []Mode{ModeSimple, ModeParallel}}

func (m Mode) String() string { return modeEnum.name(m) }

func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

func (m *Mode) UnmarshalText(b []byte) error { return modeEnum.unmarshal(b, m) }

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
