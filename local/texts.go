package local

import (
	"fmt"
	"path/filepath"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// Local mode keeps the texts the way a GitHub session does (issue 27): the
// saved state references the groups' tasks and the requirements, and what
// the references point at is the session's own event log, which holds each
// step's whole result and the whole requirements of the started event. A
// step's prompt is built from the texts filled from there and checked
// against their hashes, the same code path as on GitHub.

// FillTexts gives s what its references point at in the event log. A task
// that does not match its hash stays empty and is named in taskErr (a
// *pipeline.TextAltered per group, joined); note names requirements that
// differ from the session's start (not used). err is the log unreadable.
func (st *Store) FillTexts(s *pipeline.Session) (taskErr error, note string, err error) {
	if !s.TextsMissing() && s.RequirementsRef == nil {
		return nil, "", nil
	}
	log, err := st.Log()
	if err != nil {
		return nil, "", err
	}
	path := filepath.Join(st.Dir, "events.jsonl")
	taskErr = s.FillTasks(func(step string) []pipeline.Candidate {
		var out []pipeline.Candidate
		for _, e := range log {
			for _, ev := range e.Events {
				if ev.Kind == pipeline.EventStepResult && ev.Step == step && ev.Result != nil {
					out = append(out, pipeline.Candidate{Where: fmt.Sprintf("the result of step %s in %s (entry %d)", step, path, e.Seq), Result: *ev.Result})
				}
			}
		}
		return out
	})
	for _, e := range log {
		for _, ev := range e.Events {
			if ev.Kind == pipeline.EventStarted && ev.Session == s.ID {
				note = s.FillRequirements(ev.Requirements, fmt.Sprintf("the started event in %s (entry %d)", path, e.Seq))
				return taskErr, note, nil
			}
		}
	}
	return taskErr, note, nil
}
