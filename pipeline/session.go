package pipeline

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SchemaVersion is the version of the serialised session. A reader refuses a
// session written by a newer schema rather than silently dropping fields.
//
// Version 2 (issue 27) references the groups' tasks (Group.TaskRef) and
// leaves them out when stored: a version-1 reader would run agents on empty
// tasks, so it must refuse. Version 1 sessions (tasks copied) are read and
// work as they did; they are written back as version 2.
const SchemaVersion = 2

// LeadGroup is the group id of session-level steps (pm, validate, and the
// investigations the pm asks for).
const LeadGroup = "_"

// MaxGroups bounds how many groups a session may have, so a runaway plan
// cannot make a session endless.
const MaxGroups = 64

// MaxResearchInFlight caps research groups' steps in flight.
const MaxResearchInFlight = 2

var (
	groupIDPattern   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
)

// ValidGroupID reports whether id is a usable group id. Role names are
// reserved: a step id is <session>/<group>/<role>/<n>, and workflows route
// steps by its segments, so a group called "merge" must never look like a
// merge step.
func ValidGroupID(id string) bool {
	return groupIDPattern.MatchString(id) && id != LeadGroup && !reservedGroupID(id)
}

func reservedGroupID(id string) bool {
	for _, r := range Roles() {
		if strings.EqualFold(id, r.String()) {
			return true
		}
	}
	return false
}

// ValidSessionID reports whether id is a usable session id.
func ValidSessionID(id string) bool { return sessionIDPattern.MatchString(id) }

// Session is the whole state of one bazinga session. It is a plain value: it
// serialises to JSON and back without loss, and Reconcile derives the next
// session from it without touching the original.
type Session struct {
	Schema int    `json:"schema"`
	ID     string `json:"id"`
	// Requirements are the session's requirements as it keeps them (at most
	// MaxRequirementsBytes: start and end of a longer text); RequirementsRef
	// references the full text at the session's source (issue 27), which
	// front-ends give the prompts (FillRequirements). Nil in sessions
	// written before references existed.
	Requirements    string        `json:"requirements"`
	RequirementsRef *TextRef      `json:"requirements_ref,omitempty"`
	Base            string        `json:"base"`
	Mode            Mode          `json:"mode"`
	Status          SessionStatus `json:"status"`
	Reason          string        `json:"reason,omitempty"`
	SuccessCriteria []string      `json:"success_criteria,omitempty"`
	Groups          []Group       `json:"groups"`
	// Lead is the session-level track: pm, validate, and investigations the pm asked for.
	Lead Track `json:"lead"`
	// Steps holds every step dispatched, in dispatch order (append-only; a
	// Snapshot may leave out old finished ones, counted in Pruned).
	Steps []Step `json:"steps"`
	// StepSeq numbers steps: the n of <session>/<group>/<role>/<n>.
	StepSeq int `json:"step_seq"`
	// Pruned counts finished steps a Snapshot left out.
	Pruned        int            `json:"pruned,omitempty"`
	Clarification *Clarification `json:"clarification,omitempty"`
	// Inbox holds what the next pm step must hear about.
	Inbox []Note `json:"inbox,omitempty"`
	// PMStreak counts pm steps since a group last merged; too many means no progress.
	PMStreak int `json:"pm_streak"`
	// Usage is the session's total: every step's reported usage (issue 13).
	Usage Usage `json:"usage,omitzero"`
	// Baseline is the test run on the base head at session start (issue 13):
	// nil until the harness reports one.
	Baseline    *Baseline `json:"baseline,omitempty"`
	Rev         int       `json:"rev"`
	StartedAt   time.Time `json:"started_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	CompletedAt time.Time `json:"completed_at,omitzero"`

	// --- checkpoints (issue 13) ---
	// Checkpoint is the approval the session waits for, if any: no group it
	// holds starts until a human approves it.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// PassedCheckpoints are the checkpoints humans approved or sent back, oldest first.
	PassedCheckpoints []Checkpoint `json:"passed_checkpoints,omitempty"`
	// PlanRev counts the plans the pm made; plan checkpoint ids carry it.
	PlanRev int `json:"plan_rev,omitempty"`

	// FollowUps are the MEDIUM findings (and HIGH ones a human accepted)
	// the session went on with (issue 26), at most MaxFollowUps;
	// FollowUpsDropped counts those past it.
	FollowUps        []FollowUp `json:"follow_ups,omitempty"`
	FollowUpsDropped int        `json:"follow_ups_dropped,omitempty"`
}

// Checkpoint is a point where the session waits for a human's approval: the
// plan (no group starts before it is approved) or the start of a phase.
type Checkpoint struct {
	// ID names it for humans and binds approvals: "plan-2" is the second
	// plan the pm made, "phase-3" the start of phase 3. An approval given
	// for one id never approves another.
	ID   string         `json:"id"`
	Kind CheckpointKind `json:"kind"`
	// Step is the pm step whose plan waits (plan checkpoints).
	Step string `json:"step,omitempty"`
	// Phase is the phase that starts once approved (phase checkpoints).
	Phase int `json:"phase,omitempty"`
	// Group is the group whose HIGH findings wait (findings checkpoints);
	// Step is then the review step that found them.
	Group string `json:"group,omitempty"`
	// Since is when it opened: a command written before then cannot have
	// been written about it.
	Since time.Time `json:"since"`
	// ApprovedBy, or RevisedBy with Feedback, say how a passed checkpoint
	// ended; Ended is when.
	ApprovedBy string    `json:"approved_by,omitempty"`
	RevisedBy  string    `json:"revised_by,omitempty"`
	Feedback   string    `json:"feedback,omitempty"`
	Ended      time.Time `json:"ended,omitzero"`
}

// NoCheckpoint is what CheckpointAt returns when no checkpoint was open:
// an approval bound to it approves nothing.
const NoCheckpoint = "none"

// CheckpointAt returns the id of the checkpoint that was waiting at time
// at: the open one if it had opened by then, else the passed one that was
// open then; NoCheckpoint when none was. Front-ends bind a human's approval
// (Command.Checkpoint) to what its author could have seen when writing it.
func (s *Session) CheckpointAt(at time.Time) string {
	if cp := s.Checkpoint; cp != nil && !at.Before(cp.Since) {
		return cp.ID
	}
	for i := len(s.PassedCheckpoints) - 1; i >= 0; i-- {
		cp := s.PassedCheckpoints[i]
		if !at.Before(cp.Since) && at.Before(cp.Ended) {
			return cp.ID
		}
	}
	return NoCheckpoint
}

// NoQuestion is what QuestionAt returns when no question was open: an
// answer bound to it answers nothing.
const NoQuestion = "none"

// QuestionAt returns the question an answer written at time at was about:
// the open question (the id of the pm step that asked it) if it had been
// asked by then, else NoQuestion. Front-ends bind a human's answer
// (Command.Question) to what its author could have seen, as approvals are.
func (s *Session) QuestionAt(at time.Time) string {
	if cl := s.Clarification; cl != nil && !at.Before(cl.AskedAt) {
		return cl.Step
	}
	return NoQuestion
}

// Group is one task group of the plan.
type Group struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Task is the group's task. A group planned since issue 27 references
	// it (TaskRef) and the stored session leaves it out (WithoutTexts):
	// a front-end fills it from the reference where it needs it.
	Task    string    `json:"task,omitempty"`
	TaskRef *TextRef  `json:"task_ref,omitempty"`
	Type    GroupType `json:"type"`
	Tier    Tier      `json:"tier"`
	// Size is the pm's estimate of the group's work (issue 23).
	Size      Size     `json:"size,omitempty"`
	Phase     int      `json:"phase"`
	DependsOn []string `json:"depends_on,omitempty"`
	Branch    string   `json:"branch"`
	// Started is set when the group's branch was requested and its first step dispatched.
	Started bool `json:"started,omitempty"`
	// Escalated groups go to a senior from then on.
	Escalated bool `json:"escalated,omitempty"`
	// Approvals are the logins of humans whose latest review approves the
	// group's current code: a result that may change the code clears them, and
	// an approval of a commit other than Head is not counted.
	Approvals []string `json:"approvals,omitempty"`
	// ApprovedRev is the session revision at which the tech lead last approved.
	ApprovedRev int `json:"approved_rev,omitempty"`
	// Head is the group branch's head commit as the executor last reported it
	// (Event.Commit of a step result); empty when unknown.
	Head string `json:"head,omitempty"`
	// ReviewedHead is the head the tech lead approved: the head its step
	// reported (what it reviewed, after QA passed the code). The merge step
	// lands exactly this commit or reports that the branch moved; empty when
	// the executor reported no head (then the branch merges as it is).
	ReviewedHead string `json:"reviewed_head,omitempty"`
	// Pushed is the last push to the group branch that a front-end saw
	// someone else make (EventPushed with its pusher): a merge that finds
	// the branch at that head names who pushed it.
	Pushed *Push `json:"pushed,omitempty"`
	// Deleted is set while the group branch is deleted (Head is where it
	// was, By who deleted it): the group waits until a human restores it.
	Deleted *Push `json:"branch_deleted,omitempty"`
	// Checks are the outcomes of the harness-run checks (checks:) on the
	// group's code, as the last step that ran them reported.
	Checks []CheckOutcome `json:"checks,omitempty"`
	// MergeCommit is the commit that landed the group on the base, as the
	// merge step (or GitHub, for a PR a human merged) reported it. A squash
	// or rebase merge leaves the branch head out of the base: validation
	// checks this commit instead.
	MergeCommit string `json:"merge_commit,omitempty"`
	// RequiredChecks is the last report of the group PR's required checks
	// (merge.method pull-request); it gates the merge of the head it is for.
	RequiredChecks *GroupChecks `json:"required_checks,omitempty"`
	// Abandoned is the decision that gave the group up: a pm drop naming it
	// or a human closing its PR (issue 23). Every abandoned group has one.
	Abandoned *Abandonment `json:"abandoned,omitempty"`
	// Held is set while a HIGH finding that survived its revisions waits
	// for a human (issue 26): a findings checkpoint opens for it.
	Held *FindingHold `json:"held,omitempty"`
	Track
}

// FindingHold is a group's HIGH findings waiting for a human: the review
// step that found them and its role.
type FindingHold struct {
	Step string `json:"step"`
	Role Role   `json:"role"`
}

// Track is the routing state shared by groups and the session lead.
type Track struct {
	Stage Stage `json:"stage"`
	// InFlight is the id of the step in flight, if any.
	InFlight string `json:"in_flight,omitempty"`
	// Next is the step this track needs and has not dispatched yet.
	Next *StepSpec `json:"next,omitempty"`
	// Wait names what the track waits for when nothing is in flight.
	Wait       WaitReason `json:"wait,omitempty"`
	WaitDetail string     `json:"wait_detail,omitempty"`
	// Blocked is the role a tech lead or investigator is helping; it gets the work back.
	Blocked  Role     `json:"blocked,omitempty"`
	Counters Counters `json:"counters"`
	// Last is the id of the last step that ended with a result.
	Last string `json:"last,omitempty"`
	// Usage is the total of the track's steps (a group's, or the lead's).
	Usage Usage `json:"usage,omitzero"`
}

// Counters are the revision and escalation counters of a track. They restart
// when the pm re-plans the group.
type Counters struct {
	Iterations              int `json:"iterations,omitempty"`
	Revisions               int `json:"revisions,omitempty"`
	SeniorRevisions         int `json:"senior_revisions,omitempty"`
	QAAttempts              int `json:"qa_attempts,omitempty"`
	ReviewAttempts          int `json:"review_attempts,omitempty"`
	ChangesRequested        int `json:"changes_requested,omitempty"`
	GuidanceSteps           int `json:"guidance_steps,omitempty"`
	MergeFailures           int `json:"merge_failures,omitempty"`
	InvestigationIterations int `json:"investigation_iterations,omitempty"`
	ChallengeLevel          int `json:"challenge_level,omitempty"`
	// HighRounds counts the revisions HIGH findings sent the group to (issue 26).
	HighRounds int `json:"high_rounds,omitempty"`
}

// StepSpec is what a step is asked to do; a Step is a dispatched StepSpec.
type StepSpec struct {
	Role    Role    `json:"role"`
	Purpose Purpose `json:"purpose"`
	Model   string  `json:"model,omitempty"`
	// Attempt counts tries of the same work after steps that ended without a result.
	Attempt  int    `json:"attempt"`
	Feedback string `json:"feedback,omitempty"`
	// From is the step whose result (handoff) this step receives.
	From string `json:"from,omitempty"`
	// Notes are the inbox notes delivered to a pm step.
	Notes []Note `json:"notes,omitempty"`
	// Escalated marks a tech lead step already running on the escalation model.
	Escalated bool `json:"escalated,omitempty"`
	// Baseline asks the harness to run the build and tests on the base head
	// alongside this (pm) step and report the baseline with its result.
	Baseline bool `json:"baseline,omitempty"`
}

// Step is one dispatched step.
type Step struct {
	ID    string `json:"id"`
	Group string `json:"group"`
	N     int    `json:"n"`
	StepSpec
	State        StepState `json:"state"`
	DispatchedAt time.Time `json:"dispatched_at"`
	EndedAt      time.Time `json:"ended_at,omitzero"`
	Result       *Result   `json:"result,omitempty"`
	// Reported is the status as the agent wrote it, when normalisation changed it.
	Reported Status `json:"reported,omitempty"`
	// Note says why a step failed or was cancelled, or how its result was read.
	Note string `json:"note,omitempty"`
	// Routed says where the result sent the work ("qa", "merged", "pm", …).
	Routed string `json:"routed,omitempty"`
	// Usage is what the step cost, when its agent reported it.
	Usage *Usage `json:"usage,omitempty"`
	// RunURL is the job run that carried the step out, when known.
	RunURL string `json:"run_url,omitempty"`
	// Took is how long the step ran, as measured from the event that ended
	// it (the job's own timings when the front-end sent them): the data the
	// scheduler corrects its size estimates with.
	Took Duration `json:"took,omitempty"`
	// Held is how long the front-end was held off GitHub (a rate limit's
	// wait) while the step was in flight: its result could not be read nor
	// its run dispatched, so its deadline moves by that much.
	Held Duration `json:"held,omitempty"`
}

// Note is something the pm must hear about at its next step.
type Note struct {
	Group string `json:"group,omitempty"`
	Text  string `json:"text"`
	// Urgent notes make the engine dispatch a pm step; others ride along with the next one.
	Urgent bool `json:"urgent,omitempty"`
}

// Clarification is a pm question waiting for a human answer.
type Clarification struct {
	Step     string    `json:"step"`
	Question string    `json:"question"`
	Options  []string  `json:"options,omitempty"`
	Fallback string    `json:"fallback,omitempty"`
	AskedAt  time.Time `json:"asked_at"`
	Deadline time.Time `json:"deadline"`
	// Resume is the session status to return to once answered.
	Resume SessionStatus `json:"resume"`
}

// Group returns the group with the given id, or nil.
func (s *Session) Group(id string) *Group {
	for i := range s.Groups {
		if s.Groups[i].ID == id {
			return &s.Groups[i]
		}
	}
	return nil
}

// Step returns the step with the given id, or nil.
func (s *Session) Step(id string) *Step { return findStep(s.Steps, id) }

// findStep finds a step by id. Steps are in dispatch order, so their numbers
// (the n of the id) ascend: a binary search finds it without an index.
func findStep(steps []Step, id string) *Step {
	slash := strings.LastIndexByte(id, '/')
	n, err := strconv.Atoi(id[slash+1:])
	if slash < 0 || err != nil {
		return nil
	}
	i := sort.Search(len(steps), func(i int) bool { return steps[i].N >= n })
	if i < len(steps) && steps[i].N == n && steps[i].ID == id {
		return &steps[i]
	}
	return nil
}

// InFlight returns the steps in flight, in dispatch order.
func (s *Session) InFlight() []Step {
	var out []Step
	for _, st := range s.Steps {
		if st.State == StepInFlight {
			out = append(out, st)
		}
	}
	return out
}

// BranchName is the branch of a group: bazinga/<session>-<group>.
func BranchName(session, group string) string {
	return "bazinga/" + session + "-" + group
}

// StepID builds a step id: <session>/<group>/<role>/<n>, n counting all the
// session's steps.
func StepID(session, group string, role Role, n int) string {
	return fmt.Sprintf("%s/%s/%s/%d", session, group, role, n)
}

// Clone returns a copy that shares nothing mutable with s. Results and
// handoffs are never modified after they are recorded, so they are shared.
func (s Session) Clone() Session {
	c := s
	c.SuccessCriteria = append([]string(nil), s.SuccessCriteria...)
	c.Groups = make([]Group, len(s.Groups))
	for i, g := range s.Groups {
		g.DependsOn = append([]string(nil), g.DependsOn...)
		g.Approvals = append([]string(nil), g.Approvals...)
		g.Checks = append([]CheckOutcome(nil), g.Checks...)
		g.Track = g.Track.clone()
		if g.RequiredChecks != nil {
			gc := g.RequiredChecks.clone()
			g.RequiredChecks = &gc
		}
		if g.Pushed != nil {
			p := *g.Pushed
			g.Pushed = &p
		}
		if g.Abandoned != nil {
			a := *g.Abandoned
			g.Abandoned = &a
		}
		if g.Held != nil {
			h := *g.Held
			g.Held = &h
		}
		c.Groups[i] = g
	}
	c.Lead = s.Lead.clone()
	// Steps are append-only; copy the slice so appends and state changes stay ours.
	c.Steps = make([]Step, len(s.Steps), len(s.Steps)+8)
	copy(c.Steps, s.Steps)
	if s.Clarification != nil {
		cl := *s.Clarification
		cl.Options = append([]string(nil), s.Clarification.Options...)
		c.Clarification = &cl
	}
	c.Inbox = append([]Note(nil), s.Inbox...)
	c.FollowUps = append([]FollowUp(nil), s.FollowUps...)
	if s.Checkpoint != nil {
		cp := *s.Checkpoint
		c.Checkpoint = &cp
	}
	c.PassedCheckpoints = append([]Checkpoint(nil), s.PassedCheckpoints...)
	if s.Baseline != nil {
		b := *s.Baseline
		b.Failed = append([]string(nil), b.Failed...)
		c.Baseline = &b
	}
	return c
}

func (t Track) clone() Track {
	if t.Next != nil {
		n := *t.Next
		n.Notes = append([]Note(nil), t.Next.Notes...)
		t.Next = &n
	}
	return t
}

// Marshal serialises the session as JSON.
func (s Session) Marshal() ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("marshal session %s: %w", s.ID, err)
	}
	return b, nil
}

// UnmarshalSession reads a session written by Marshal. It refuses sessions of
// an unknown schema and sessions whose internal references do not hold.
func UnmarshalSession(b []byte) (Session, error) {
	var s Session
	if err := json.Unmarshal(b, &s); err != nil {
		return Session{}, fmt.Errorf("read session: %w", err)
	}
	if s.Schema < 1 || s.Schema > SchemaVersion {
		return Session{}, fmt.Errorf("read session: schema version %d, this bazinga reads 1 to %d", s.Schema, SchemaVersion)
	}
	s.Schema = SchemaVersion // version 1 differs only in having no references
	if err := s.check(); err != nil {
		return Session{}, fmt.Errorf("read session %s: %w", s.ID, err)
	}
	return s, nil
}

// check verifies the references inside a session: in-flight ids name steps in
// flight, groups are unique and valid.
func (s *Session) check() error {
	if !ValidSessionID(s.ID) {
		return fmt.Errorf("invalid session id %q", s.ID)
	}
	seen := map[string]bool{}
	for _, g := range s.Groups {
		if !ValidGroupID(g.ID) {
			return fmt.Errorf("invalid group id %q", g.ID)
		}
		if seen[g.ID] {
			return fmt.Errorf("duplicate group %q", g.ID)
		}
		seen[g.ID] = true
	}
	steps := map[string]*Step{}
	for i := range s.Steps {
		st := &s.Steps[i]
		if steps[st.ID] != nil {
			return fmt.Errorf("duplicate step %q", st.ID)
		}
		if st.ID != StepID(s.ID, st.Group, st.Role, st.N) {
			return fmt.Errorf("step %q does not match its group, role and number", st.ID)
		}
		if i > 0 && st.N <= s.Steps[i-1].N {
			return fmt.Errorf("step %q is out of order", st.ID)
		}
		if st.N > s.StepSeq {
			return fmt.Errorf("step %q is numbered past the session's step count %d", st.ID, s.StepSeq)
		}
		steps[st.ID] = st
	}
	checkTrack := func(name string, t *Track) error {
		if t.InFlight == "" {
			return nil
		}
		st := steps[t.InFlight]
		if st == nil || st.State != StepInFlight {
			return fmt.Errorf("%s: step %q is not in flight", name, t.InFlight)
		}
		return nil
	}
	if err := checkTrack("lead", &s.Lead); err != nil {
		return err
	}
	for i := range s.Groups {
		if err := checkTrack("group "+s.Groups[i].ID, &s.Groups[i].Track); err != nil {
			return err
		}
	}
	return nil
}

// Snapshot returns a copy small enough to store in one place (a GitHub
// comment): at most keep finished steps, the most recent, plus every step the
// engine or an executor still refers to (in flight, a track's last step, the
// step a pending or running step receives its handoff from, the open
// question). Handoffs are kept only where a later step reads them: on the
// steps a pending or running step receives its handoff from, and on the open
// question's and checkpoint's steps (issue 27: a track's last step shows
// only its capsule, and 64 groups' last handoffs do not fit in a comment).
// Reconcile works the same on a snapshot as on the full session: it never
// looks at old steps or at a handoff after routing it.
func (s Session) Snapshot(keep int) Session {
	ref, read := s.stepRefs()
	finished := 0
	for _, st := range s.Steps {
		if st.State != StepInFlight {
			finished++
		}
	}
	c := s.Clone()
	drop := finished - keep
	out := c.Steps[:0:0]
	for _, st := range c.Steps {
		if ref[st.ID] && (read[st.ID] || st.State == StepInFlight) {
			out = append(out, st)
			continue
		}
		if !ref[st.ID] && drop > 0 && st.State != StepInFlight {
			drop--
			c.Pruned++
			continue
		}
		if st.Result != nil && len(st.Result.Handoff) > 0 {
			r := *st.Result
			r.Handoff = nil
			st.Result = &r
		}
		st.Notes = nil
		st.Feedback = "" // a finished step's own input; the next step has its own
		out = append(out, st)
	}
	c.Steps = out
	return c
}

// stepRefs returns the steps the engine or an executor still refers to, and
// among them those whose handoff a later step reads.
func (s Session) stepRefs() (ref, read map[string]bool) {
	ref, read = map[string]bool{}, map[string]bool{}
	mark := func(t Track) {
		ref[t.InFlight] = true
		ref[t.Last] = true
		if t.Next != nil {
			ref[t.Next.From] = true
			read[t.Next.From] = true
		}
	}
	mark(s.Lead)
	for _, g := range s.Groups {
		mark(g.Track)
	}
	if s.Clarification != nil {
		ref[s.Clarification.Step] = true
		read[s.Clarification.Step] = true
	}
	if s.Checkpoint != nil {
		ref[s.Checkpoint.Step] = true
		read[s.Checkpoint.Step] = true
	}
	for _, st := range s.Steps {
		if st.State == StepInFlight {
			ref[st.ID] = true
			ref[st.From] = true
			read[st.From] = true
		}
	}
	delete(ref, "")
	delete(read, "")
	return ref, read
}

// Progress is a track's counters with its step in flight counted, as a
// status view or a prompt shows them ("QA attempt 2" while it runs). The
// engine itself counts a step only when its result arrives.
func (s *Session) Progress(t Track) Counters {
	c := t.Counters
	if st := s.Step(t.InFlight); st != nil {
		countResult(&c, st.StepSpec)
	}
	return c
}
