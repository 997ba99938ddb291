package bot

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/codec"
)

// Route is where the Action-only orchestrator's event goes (issue 22):
// the session whose concurrency group its reconcile takes.
type Route struct {
	// Session is the session's issue number, "sweep" for an event of no
	// session (a dispatch without an issue, a status on another branch),
	// or "" when the event needs no reconcile at all.
	Session string
	// Why says why an event needs no reconcile.
	Why string
}

// RouteEvent routes an event payload with the bot's own rules: the session
// a delivery belongs to (Key), and what a command is (ParseCommands, the
// one definition: a command on any line of a comment counts). It reads only
// the payload, never GitHub.
func RouteEvent(event string, raw []byte) (Route, error) {
	p, err := payloadOf(Delivery{Event: event, Payload: raw})
	if err != nil {
		return Route{}, err
	}
	switch event {
	case "issue_comment":
		if p.Comment == nil {
			return Route{Why: "no comment"}, nil
		}
		_, result := codec.ParseResultComment(p.Comment.Body)
		_, failure := codec.ParseFailureComment(p.Comment.Body)
		if !result && !failure && len(ParseCommands(p.Comment.Body)) == 0 {
			return Route{Why: "the comment holds no /bazinga command"}, nil
		}
	case "issues":
		if p.Action == "edited" && (p.Issue == nil || !hasLabel(p.Issue.Labels, "bazinga")) {
			return Route{Why: "an edit of an issue without a session"}, nil
		}
	case "workflow_run":
		if sessionOf(event, p) == 0 {
			return Route{Why: "a run of no session (not on a group branch, no step id in its title)"}, nil
		}
	case "workflow_dispatch":
		var in struct {
			Inputs struct {
				Issue string `json:"issue"`
			} `json:"inputs"`
		}
		_ = json.Unmarshal(raw, &in)
		if n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(in.Inputs.Issue), "#")); err == nil && n > 0 {
			return Route{Session: strconv.Itoa(n)}, nil
		}
		return Route{Session: "sweep"}, nil
	}
	if n := sessionOf(event, p); n > 0 {
		return Route{Session: strconv.Itoa(n)}, nil
	}
	return Route{Session: "sweep"}, nil
}

func hasLabel(ls []hookLabel, name string) bool {
	for _, l := range ls {
		if strings.EqualFold(l.Name, name) {
			return true
		}
	}
	return false
}
