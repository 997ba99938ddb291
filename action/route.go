package action

import (
	"os"

	"github.com/sethvargo/go-githubactions"

	"github.com/bazinga-bot/bazinga/bot"
)

// route is the orchestrator workflow's first job: it names the session of
// the event (output session) with the bot's own rules, so the reconcile
// job's concurrency group is per session, and says when no reconcile is
// needed (session empty: a comment with no command, an edit of an issue
// without a session, a CI run on another branch). It needs no token and
// calls nothing.
func route(gha *githubactions.Action, out *outputs, in inputs) int {
	session, why := "sweep", ""
	if in.eventName != "schedule" && in.eventPath != "" {
		raw, err := os.ReadFile(in.eventPath)
		if err != nil {
			gha.Errorf("bazinga route: reading the event: %v", err)
			return 1
		}
		r, err := bot.RouteEvent(in.eventName, raw)
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
	out.write("session", session)
	return 0
}
