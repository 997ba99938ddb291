package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// ResultRecord is what a step's job posts as a comment on the group PR (on
// the issue for session-level steps): the step's compact result and its
// timings. The bot reads it back with ParseResultComment; the comments are
// the session's log, from which a lost tracking comment is rebuilt.
type ResultRecord struct {
	Step   string          `json:"step"`
	Role   pipeline.Role   `json:"role"`
	Group  string          `json:"group"`
	Model  string          `json:"model,omitempty"`
	Result pipeline.Result `json:"result"`
	// StartedAt and EndedAt are the job's timings.
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// RunURL links to the job's run.
	RunURL string `json:"run_url,omitempty"`
	// Note is a line shown in the details (e.g. "tests: 12/12 pass").
	Note string `json:"note,omitempty"`
	// Head is the group branch's head commit after the step, when the job
	// knows it: human approvals count only for the code that merges.
	Head string `json:"head,omitempty"`
	// Usage is what the step cost as its agent reported it (issue 13): it
	// reaches the orchestrator's totals through this record, and a rebuild
	// from the comments reaches the same totals.
	Usage *pipeline.Usage `json:"usage,omitempty"`
	// Harness is what the harness found beside the agent's result: the
	// baseline a first pm step took, the checks run on the group's code.
	Harness *pipeline.HarnessReport `json:"harness,omitempty"`
}

const (
	ResultMarker = "<!-- bazinga:result:v1 "
	EventMarker  = "<!-- bazinga:event:v1 "
	StateMarker  = "<!-- bazinga:state:v1 "
	BlockEnd     = " -->"
	// MaxCommentChars is GitHub's limit on a comment body, in characters.
	MaxCommentChars = 65536
	// CommentBudget leaves room for GitHub counting differently than we do.
	CommentBudget = 65000
)

// ClaimRefPrefix is where a step's privileged job claims the step before
// it publishes ("refs/" + ClaimRefPrefix + step id): the job creates the
// ref, and the orchestrator reads it to know a step was published.
const ClaimRefPrefix = "bazinga/claims/"

// StepRef is a step id split into its parts: <session>/<group>/<role>/<n>.
type StepRef struct {
	Session string
	Group   string
	Role    pipeline.Role
	N       int
}

// ParseStepID splits a step id. The session of a GitHub session is the
// issue number.
func ParseStepID(id string) (StepRef, bool) {
	parts := strings.Split(strings.TrimSpace(id), "/")
	if len(parts) != 4 {
		return StepRef{}, false
	}
	role, err := pipeline.ParseRole(parts[2])
	if err != nil || role == pipeline.RoleUnknown {
		return StepRef{}, false
	}
	n, err := strconv.Atoi(parts[3])
	if err != nil || n < 1 || !pipeline.ValidSessionID(parts[0]) {
		return StepRef{}, false
	}
	if parts[1] != pipeline.LeadGroup && !pipeline.ValidGroupID(parts[1]) {
		return StepRef{}, false
	}
	return StepRef{Session: parts[0], Group: parts[1], Role: role, N: n}, true
}

// StepInText finds a step id among the words of a run name.
func StepInText(s string) (string, StepRef, bool) {
	for _, w := range strings.Fields(s) {
		w = strings.Trim(w, "\"'`()[],")
		if ref, ok := ParseStepID(w); ok {
			return w, ref, true
		}
	}
	return "", StepRef{}, false
}

// RenderResultComment renders a result comment: the capsule, the details
// folded, and the hidden machine-readable block.
func RenderResultComment(r ResultRecord) string {
	st := pipeline.Step{ID: r.Step, Group: r.Group, StepSpec: pipeline.StepSpec{Role: r.Role, Model: r.Model},
		State: pipeline.StepDone, Result: &r.Result, Usage: r.Usage}
	var b strings.Builder
	b.WriteString(Text(pipeline.Capsule(st)))
	b.WriteString("\n\n<details><summary>Details of step <code>")
	b.WriteString(EscapeHTML(r.Step))
	b.WriteString("</code></summary>\n\n")
	for _, line := range r.Result.Summary {
		b.WriteString("- " + OneLine(line) + "\n")
	}
	if r.Note != "" {
		b.WriteString("\n" + OneLine(r.Note) + "\n")
	}
	b.WriteString(harnessLines(r))
	if !r.StartedAt.IsZero() && !r.EndedAt.IsZero() {
		fmt.Fprintf(&b, "\nRan %s (%s → %s).\n", r.EndedAt.Sub(r.StartedAt).Round(time.Second),
			r.StartedAt.UTC().Format(time.RFC3339), r.EndedAt.UTC().Format(time.RFC3339))
	}
	if r.Usage != nil {
		fmt.Fprintf(&b, "\nUsage: %s.\n", r.Usage.Detail())
	}
	if r.RunURL != "" {
		fmt.Fprintf(&b, "\n[Job run](%s)\n", r.RunURL)
	}
	handoff := ""
	if len(r.Result.Handoff) > 0 {
		// JSON with <, > and & as \u escapes: the handoff cannot open an
		// HTML comment (a fake hidden block) or close the fence.
		var esc bytes.Buffer
		json.HTMLEscape(&esc, r.Result.Handoff)
		handoff = "\n```json\n" + strings.ReplaceAll(esc.String(), "```", "` ` `") + "\n```\n"
	}
	block := resultBlock(r)
	if b.Len()+len(handoff)+len(block)+32 > CommentBudget {
		handoff = "\n(handoff too long to show)\n"
	}
	if b.Len()+len(handoff)+len(block)+32 > CommentBudget {
		r.Result.Handoff = nil
		block = resultBlock(r)
	}
	b.WriteString(handoff)
	b.WriteString("\n</details>\n\n")
	b.WriteString(block)
	return b.String()
}

func resultBlock(r ResultRecord) string {
	js, err := json.Marshal(r)
	if err != nil {
		// Unreachable: every field marshals.
		js = []byte("{}")
	}
	return ResultMarker + base64.StdEncoding.EncodeToString(js) + BlockEnd
}

// ParseResultComment reads the result block of a comment body.
func ParseResultComment(body string) (ResultRecord, bool) {
	raw, ok := HiddenBlock(body, ResultMarker)
	if !ok {
		return ResultRecord{}, false
	}
	js, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return ResultRecord{}, false
	}
	var r ResultRecord
	if err := json.Unmarshal(js, &r); err != nil {
		return ResultRecord{}, false
	}
	ref, ok := ParseStepID(r.Step)
	if !ok || ref.Role != r.Role || ref.Group != r.Group || r.Result.Status == pipeline.StatusUnknown {
		return ResultRecord{}, false
	}
	return r, true
}

// HiddenBlock returns the payload of the last block starting with marker.
func HiddenBlock(body, marker string) (string, bool) {
	i := strings.LastIndex(body, marker)
	if i < 0 {
		return "", false
	}
	rest := body[i+len(marker):]
	j := strings.Index(rest, BlockEnd)
	if j < 0 {
		return "", false
	}
	return strings.TrimSpace(rest[:j]), true
}

// EventRecord is the hidden record of events the bot itself applied, kept
// in the comments it posts anyway (acknowledgements, failure notices), so
// that a rebuild replays them.
type EventRecord struct {
	At     time.Time        `json:"at"`
	Events []pipeline.Event `json:"events"`
}

func EventBlock(r EventRecord) string {
	js, err := json.Marshal(r)
	if err != nil {
		js = []byte("{}")
	}
	return EventMarker + base64.StdEncoding.EncodeToString(js) + BlockEnd
}

// ParseEventComment reads the event block of a bot comment.
func ParseEventComment(body string) (EventRecord, bool) {
	raw, ok := HiddenBlock(body, EventMarker)
	if !ok {
		return EventRecord{}, false
	}
	js, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return EventRecord{}, false
	}
	var r EventRecord
	if err := json.Unmarshal(js, &r); err != nil || len(r.Events) == 0 {
		return EventRecord{}, false
	}
	return r, true
}

// FailureRecord is what a step's job posts when the step ended without a
// result (the agent crashed or timed out, the clone failed): the reason
// reaches the orchestrator, which retries the step. The job still fails.
type FailureRecord struct {
	Step   string        `json:"step"`
	Role   pipeline.Role `json:"role"`
	Group  string        `json:"group"`
	Reason string        `json:"reason"`
	RunURL string        `json:"run_url,omitempty"`
	// Usage is what the step cost before it failed, when reported.
	Usage *pipeline.Usage `json:"usage,omitempty"`
	// Permanent marks a failure that retrying cannot fix (the CLI's
	// credentials refused, its command line rejected): the orchestrator
	// pauses the session instead of retrying. Records written before the
	// field existed are transient.
	Permanent bool `json:"permanent,omitempty"`
}

// Event is the step-failure event the record reports, in the session its
// step id names.
func (r FailureRecord) Event() pipeline.Event {
	ref, _ := ParseStepID(r.Step)
	ev := pipeline.StepFailure(ref.Session, r.Step, r.Reason)
	ev.Permanent, ev.Usage, ev.RunURL = r.Permanent, r.Usage, r.RunURL
	return ev
}

// FailureMarker starts a failure block.
const FailureMarker = "<!-- bazinga:failure:v1 "

// maxReasonChars bounds the reason kept in a failure record.
const maxReasonChars = 2000

// RenderFailureComment renders a failure comment: one visible line and the
// hidden block. The reason is agent-adjacent text: it is shown on one line
// and escaped.
func RenderFailureComment(r FailureRecord) string {
	if rs := []rune(r.Reason); len(rs) > maxReasonChars {
		r.Reason = string(rs[:maxReasonChars-1]) + "…"
	}
	js, err := json.Marshal(r)
	if err != nil {
		js = []byte("{}")
	}
	line := fmt.Sprintf("⚠️ Step `%s` ended without a result: %s", r.Step, OneLine(r.Reason))
	if r.Permanent {
		line = fmt.Sprintf("⛔ Step `%s` ended without a result, and retrying will not fix it: %s", r.Step, OneLine(r.Reason))
	}
	if r.RunURL != "" {
		line += fmt.Sprintf(" ([job run](%s))", r.RunURL)
	}
	return line + "\n\n" + FailureMarker + base64.StdEncoding.EncodeToString(js) + BlockEnd
}

// ParseFailureComment reads the failure block of a comment body.
func ParseFailureComment(body string) (FailureRecord, bool) {
	raw, ok := HiddenBlock(body, FailureMarker)
	if !ok {
		return FailureRecord{}, false
	}
	js, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return FailureRecord{}, false
	}
	var r FailureRecord
	if err := json.Unmarshal(js, &r); err != nil {
		return FailureRecord{}, false
	}
	ref, ok := ParseStepID(r.Step)
	if !ok || ref.Role != r.Role || ref.Group != r.Group || strings.TrimSpace(r.Reason) == "" {
		return FailureRecord{}, false
	}
	return r, true
}

// harnessLines shows the baseline and the check outcomes of a result: the
// failing tests named, each check's verdict (issue 13).
func harnessLines(r ResultRecord) string {
	h := r.Harness
	if h == nil {
		return ""
	}
	var b strings.Builder
	if bl := h.Baseline; bl != nil {
		icon := "🟢"
		if !bl.Green {
			icon = "🔴"
		}
		b.WriteString("\n" + icon + " Baseline: " + OneLine(bl.Describe("the base")) + "\n")
	}
	if len(h.Checks) > 0 {
		b.WriteString("\nChecks run by the harness:\n")
		for _, c := range h.Checks {
			mark, kind := "✅", "optional"
			if !c.Passed {
				mark = "❌"
			}
			if c.Required {
				kind = "required"
			}
			fmt.Fprintf(&b, "- %s %s (%s): %s\n", mark, OneLine(c.Name), kind, OneLine(c.Summary))
		}
	}
	return b.String()
}
