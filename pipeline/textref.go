package pipeline

import (
	"errors"
	"fmt"
	"strings"
)

// Long texts the session references instead of copying (issue 27): the
// state lives in one GitHub comment, so its size must depend on the number
// of groups and steps, not on how much the pm or the author wrote.
//
// A group's task is referenced from the result of the pm step that planned
// it (TextRef.Step): that result exists before the group does (on GitHub,
// the pm's result comment the engine's event was read from; locally, the
// session's event log), so no task text is ever stored in the state, not
// even while a group waits for its phase. The session's requirements are
// referenced from where the session came from (the title and body;
// locally, the session's started event), with a bounded excerpt kept for
// narration and as the text the session works on if the source is edited.
//
// The engine keeps the text in memory where it has it (a reconcile that
// adds groups); the stored form (WithoutTexts) leaves it out, and a
// front-end that needs it (a prompt, a PR body) fills it back from its
// location and checks it against the hash (FillTasks, FillRequirements).
// Nothing the engine decides reads a referenced text, so a session decides
// the same whether its texts were filled or not.

// TextRef references a text by where it is and what it was.
type TextRef struct {
	// Step is the step whose result holds the text (a group's task: the pm
	// step that planned the group); empty for the session's requirements,
	// whose location is the session's source.
	Step string `json:"step,omitempty"`
	// Bytes and SHA256 are the text's length in bytes and its SHA-256 in hex.
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// RefOf references text, found in the result of step (empty: the source).
func RefOf(text, step string) *TextRef {
	return &TextRef{Step: step, Bytes: len(text), SHA256: RequirementsDigest(text)}
}

// Matches reports whether text is the referenced text.
func (r TextRef) Matches(text string) bool {
	return len(text) == r.Bytes && RequirementsDigest(text) == r.SHA256
}

// Short is the reference as people read it: size and the hash's start.
func (r TextRef) Short() string {
	return fmt.Sprintf("%d bytes, sha256 %s", r.Bytes, r.SHA256[:min(12, len(r.SHA256))])
}

// TaskBytes is the length of the group's task, whether it is held or referenced.
func (g Group) TaskBytes() int {
	if g.Task == "" && g.TaskRef != nil {
		return g.TaskRef.Bytes
	}
	return len(g.Task)
}

// WithoutTexts is the session as a front-end stores it: the groups' tasks
// that are referenced are left out. A session written before references
// existed keeps its copied tasks, and works as it did.
func (s Session) WithoutTexts() Session {
	out := s
	out.Groups = nil
	for _, g := range s.Groups {
		if g.TaskRef != nil {
			g.Task = ""
		}
		out.Groups = append(out.Groups, g)
	}
	if s.Groups == nil {
		out.Groups = nil
	}
	return out
}

// TextsMissing reports whether a group's referenced task is not filled.
func (s Session) TextsMissing() bool {
	for _, g := range s.Groups {
		if g.Task == "" && g.TaskRef != nil {
			return true
		}
	}
	return false
}

// TaskInResult returns group's task as the pm's result states it, trimmed
// as the engine keeps it: from a PLANNING_COMPLETE plan, or the groups a
// CONTINUE adds. ok is false when the result plans no such group.
func TaskInResult(res Result, group string) (string, bool) {
	t, ok := tasksInResult(res)[group]
	return t, ok
}

// tasksInResult is every task the pm's result plans, by group (the first
// of a repeated id: the engine refuses a plan that repeats one).
func tasksInResult(res Result) map[string]string {
	var groups []PlanGroup
	switch res.Status {
	case StatusPlanningComplete:
		p, err := ParsePlan(res.Handoff)
		if err != nil {
			return nil
		}
		groups = p.Groups
	case StatusContinue:
		d, err := parseContinue(res.Handoff)
		if err != nil {
			return nil
		}
		groups = d.added
	default:
		return nil
	}
	out := map[string]string{}
	for _, pg := range groups {
		if _, seen := out[pg.ID]; !seen {
			out[pg.ID] = strings.TrimSpace(pg.Task)
		}
	}
	return out
}

// Candidate is a result a front-end found for a step, and where it found
// it ("the result comment of step … (URL)"), for the reason if it differs.
type Candidate struct {
	Where  string
	Result Result
}

// TextAltered is a referenced text that cannot be used: what its location
// holds now is not the text the session recorded (edited, or deleted). A
// front-end never runs an agent on it: the step fails permanently, which
// pauses the session with this reason.
type TextAltered struct {
	// What is the text ("the task of group A"); Where its location.
	What, Where string
	// Group is the group whose task it is ("" for other texts).
	Group string
	Ref   TextRef
	// Found is what the location holds now ("" when nothing was found).
	Found string
}

func (e *TextAltered) Error() string {
	if e.Found == "" {
		return fmt.Sprintf("%s cannot be read: %s is not there any more (the session recorded %s); restore it, then resume the session",
			e.What, e.Where, e.Ref.Short())
	}
	return fmt.Sprintf("%s was changed after the session recorded it: %s holds %s, the session recorded %s; "+
		"nothing was run on the changed text: restore the text the session recorded (GitHub keeps an edited comment's history), then resume the session", e.What, e.Where, e.Found, e.Ref.Short())
}

// FillTasks fills the referenced tasks s holds no copy of from the results
// results finds for a step (every candidate is tried; one that matches the
// hash is used). A task no candidate matches stays empty and is named in
// the returned error (a *TextAltered per group, joined), so a front-end
// that needs it fails visibly while the other groups' tasks are filled.
func (s *Session) FillTasks(results func(step string) []Candidate) error {
	type found struct {
		where string
		tasks map[string]string
	}
	byStep := map[string][]found{} // each step's results, parsed once
	var errs []error
	for i := range s.Groups {
		g := &s.Groups[i]
		if g.Task != "" || g.TaskRef == nil {
			continue
		}
		ref := *g.TaskRef
		cands, ok := byStep[ref.Step]
		if !ok {
			for _, c := range results(ref.Step) {
				cands = append(cands, found{c.Where, tasksInResult(c.Result)})
			}
			byStep[ref.Step] = cands
		}
		alt := &TextAltered{Group: g.ID, What: fmt.Sprintf("the task of group %s", g.ID), Where: fmt.Sprintf("the result of step %s", ref.Step), Ref: ref}
		for _, c := range cands {
			t, ok := c.tasks[g.ID]
			if ok && ref.Matches(t) {
				g.Task = t
				break
			}
			alt.Where = c.where
			if ok {
				alt.Found = TextRef{Bytes: len(t), SHA256: RequirementsDigest(t)}.Short()
			} else {
				alt.Found = "no task for the group"
			}
		}
		if g.Task == "" {
			errs = append(errs, alt)
		}
	}
	return errors.Join(errs...)
}

// AlteredTask is the *TextAltered of group's task among the errors of
// FillTasks, if any.
func AlteredTask(err error, group string) (*TextAltered, bool) {
	if err == nil {
		return nil, false
	}
	all := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	}
	for _, e := range all {
		var alt *TextAltered
		if errors.As(e, &alt) && alt.Group == group {
			return alt, true
		}
	}
	return nil, false
}

// FillRequirements gives s the full requirements from its source when they
// are what the session started with (RequirementsRef), for the prompts.
// Requirements edited since the start are not used: the session works on
// what it started with (its kept excerpt), and the returned note, added to
// the kept text, says so and names both versions, so neither the agent nor
// the people reading the log are misled. A session without a reference
// (written before references existed) keeps its text; so does a session
// given no source (current "").
func (s *Session) FillRequirements(current, where string) (note string) {
	ref := s.RequirementsRef
	if ref == nil || current == "" || s.Requirements == current {
		return ""
	}
	if ref.Matches(current) {
		s.Requirements = current
		return ""
	}
	note = fmt.Sprintf("%s was edited after the session started: it now holds %s, the session started with %s. "+
		"This session works on the requirements as they were at its start (as kept above); a new session would work on the edited text.",
		where, TextRef{Bytes: len(current), SHA256: RequirementsDigest(current)}.Short(), ref.Short())
	s.Requirements += "\n\n[bazinga: " + note + "]"
	return note
}
