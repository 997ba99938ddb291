package bot

import (
	"context"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// The state references the groups' tasks and the requirements (issue 27):
// the bot fills the tasks it shows people (PR bodies, the plan at its
// checkpoint) from the pm's result comments it has just read, each checked
// against the hash the session recorded. A task that does not match is not
// shown: the place says so, and the group's next step, which checks the
// same way before its agent runs, fails with the reason, which pauses the
// session (action/texts.go).

// startEvent is the event that starts a session from its issue: the
// requirements bounded (the first comment records the event) with a
// reference to the whole title and body.
func startEvent(session, title, body, base string) pipeline.Event {
	return pipeline.StartedBounded(session, codec.IssueRequirements(title, body), base)
}

// load reads the session (loadStored) and fills the tasks it references
// from the issue's comments.
func (b *Bot) load(ctx context.Context, gh GitHub, ref sessionRef, exclude int64) (loaded, error) {
	ld, err := b.loadStored(ctx, gh, ref, exclude)
	if err != nil || !ld.found || !ld.st.Session.TextsMissing() {
		return ld, err
	}
	if ferr := ld.st.Session.FillTasks(codec.ResultCandidates(ld.comments)); ferr != nil {
		b.log.Warn("a group's task cannot be shown: its text does not match the session's record", "repo", ref.repo.String(), "issue", ref.issue, "err", ferr)
	}
	return ld, nil
}

// shownTask is a group's task as people are shown it: the task, or what
// keeps it from being shown.
func shownTask(g pipeline.Group) string {
	if g.Task == "" && g.TaskRef != nil {
		return "⚠️ This task cannot be shown: the result of step " + g.TaskRef.Step +
			", where the session keeps it, no longer holds the text the session recorded (" + g.TaskRef.Short() +
			"). No step of the group runs on a changed text; the issue says what to do."
	}
	return g.Task
}
