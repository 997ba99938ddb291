package local

import (
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// Checkpoints in local mode (issue 13): the run asks on the terminal
// (approve / feedback / stop) when it has one, approves at once with
// --approve, lets a Reviewer decide (the demo's scripted human), or else
// stops at the checkpoint, saved, for `bazinga run --resume ID --approve`
// (or --feedback "…").

// checkpoint returns the events of a decision taken without waiting
// (--approve, a Reviewer), or starts a terminal prompt. A checkpoint is put
// to the human once its pm is idle, and again after the pm acted on feedback.
func (r *runner) checkpoint() []pipeline.Event {
	cp := r.s.Checkpoint
	if cp == nil || r.s.Status != pipeline.SessionAwaitingInput || r.s.Clarification != nil || r.s.Lead.InFlight != "" {
		return nil
	}
	key := cp.ID + "/" + strconv.Itoa(r.s.StepSeq)
	if r.askedCP == key || r.reading {
		return nil
	}
	switch {
	case r.opts.Approve:
		r.askedCP = key
		r.view.checkpoint(r.s, "approved with --approve")
		return []pipeline.Event{pipeline.CommandEvent(r.s.ID, "--approve", pipeline.Command{Kind: pipeline.CommandApprove, Checkpoint: cp.ID})}
	case r.opts.Reviewer != nil:
		r.askedCP = key
		r.view.checkpoint(r.s, "")
		c := r.opts.Reviewer(r.s.Clone())
		if c.Kind == pipeline.CommandApprove && c.Checkpoint == "" {
			c.Checkpoint = cp.ID // the reviewer saw this one
		}
		return []pipeline.Event{pipeline.CommandEvent(r.s.ID, "reviewer", c)}
	case r.interactive():
		r.askedCP = key
		r.view.checkpoint(r.s, "")
		r.view.checkpointPrompt(cp)
		r.read("checkpoint " + cp.ID)
	}
	return nil
}

// stalled reports whether the run can only stop: a checkpoint waits, nothing
// runs, and nobody is being asked.
func (r *runner) stalled() bool {
	return r.s.Checkpoint != nil && r.s.Status == pipeline.SessionAwaitingInput && r.s.Clarification == nil &&
		len(r.running) == 0 && !r.reading && !r.opts.Approve && r.opts.Reviewer == nil && !r.interactive()
}

// reply turns a line read from the terminal into events.
func (r *runner) reply(rep termReply) []pipeline.Event {
	r.reading = false
	kind, id, _ := strings.Cut(rep.key, " ")
	if rep.err != nil && rep.line == "" {
		r.noInput = true // the input ended: nobody can answer from now on
		return nil
	}
	switch kind {
	case "question":
		if cl := r.s.Clarification; cl == nil || cl.Step != id || rep.line == "" {
			return nil // answered or timed out meanwhile; an empty line waits for the fallback
		}
		// Bound to the question the terminal showed (issue 23).
		return []pipeline.Event{pipeline.CommandEvent(r.s.ID, "terminal", pipeline.Command{Kind: pipeline.CommandAnswer, Text: rep.line, Question: id})}
	case "baseline":
		return r.baselineReply(id, rep.line)
	case "checkpoint":
		cp := r.s.Checkpoint
		if cp == nil || cp.ID != id {
			return nil
		}
		c, ok := parseCheckpointReply(rep.line, id)
		if !ok {
			r.view.warn(`type "a" to approve, "f <feedback>" to send it back to the pm, or "s" to stop`)
			r.askedCP = "" // ask again
			return nil
		}
		return []pipeline.Event{pipeline.CommandEvent(r.s.ID, "terminal", c)}
	}
	return nil
}

// parseCheckpointReply reads a person's answer at checkpoint id: a[pprove]
// (or y[es]), f[eedback] <text>, s[top].
func parseCheckpointReply(line, id string) (pipeline.Command, bool) {
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(word) {
	case "a", "approve", "y", "yes":
		return pipeline.Command{Kind: pipeline.CommandApprove, Checkpoint: id}, rest == ""
	case "f", "feedback":
		return pipeline.Command{Kind: pipeline.CommandAnswer, Text: rest, Checkpoint: id}, rest != ""
	case "s", "stop":
		return pipeline.Command{Kind: pipeline.CommandStop}, rest == ""
	}
	return pipeline.Command{}, false
}
