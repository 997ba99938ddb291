package action

import (
	"os"

	"github.com/bazinga-bot/bazinga/action/stepjob"
	"github.com/bazinga-bot/bazinga/bot"
)

// route is the orchestrator workflow's first job: it names the session of
// the event (output session) with the bot's own rules, so the reconcile
// job's concurrency group is per session, and says when no reconcile is
// needed (session empty: a comment with no command, an edit of an issue
// without a session, a CI run on another branch). It needs no token and
// calls nothing.
func route(j *stepjob.Job) int {
	gha := j.Actions()
	eventName, eventPath := j.Event()
	session, why := "sweep", ""
	if eventName != "schedule" && eventPath != "" {
		raw, err := os.ReadFile(eventPath)
		if err != nil {
			gha.Errorf("bazinga route: reading the event: %v", err)
			return 1
		}
		r, err := bot.RouteEvent(eventName, raw)
		if err != nil {
			gha.Errorf("bazinga route: %v", err)
			return 1
		}
		session, why = r.Session, r.Why
	}
	if session == "" {
		gha.Infof("bazinga: no reconcile needed: %s", why)
	} else {
		gha.Infof("bazinga: session %s", session)
	}
	j.WriteOutput("session", session)
	return 0
}
