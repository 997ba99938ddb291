package bot

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Action-only route job decides with the bot's own parser and routing
// (issue 22): a command on any line counts, quoted or fenced ones do not.
func TestRouteEvent(t *testing.T) {
	comment := func(body string, pr bool) map[string]any {
		is := map[string]any{"number": 7, "title": "Add a widget"}
		if pr {
			is = map[string]any{"number": 12, "title": "[bazinga #7] A: widget", "pull_request": map[string]any{"url": "x"}}
		}
		return map[string]any{"action": "created", "issue": is, "comment": map[string]any{"id": 1, "body": body, "user": map[string]any{"login": "alice"}}}
	}
	for _, tc := range []struct {
		name, event string
		payload     map[string]any
		want        string
	}{
		{"command on the first line", "issue_comment", comment("/bazinga status", false), "7"},
		{"command on the second line", "issue_comment", comment("Looks good to me.\n/bazinga approve", false), "7"},
		{"command in a list item", "issue_comment", comment("- /bazinga resume", false), "7"},
		{"command on a group PR", "issue_comment", comment("/bazinga retry A", true), "7"},
		{"a fenced command is inert", "issue_comment", comment("```\n/bazinga stop\n```", false), ""},
		{"a quoted command is inert", "issue_comment", comment("> /bazinga stop", false), ""},
		{"a mention in text is not a command", "issue_comment", comment("we could run /bazinga later", false), ""},
		{"labelled issue", "issues", map[string]any{"action": "labeled", "issue": map[string]any{"number": 3}}, "3"},
		{"edit of an issue without a session", "issues", map[string]any{"action": "edited", "issue": map[string]any{"number": 3}}, ""},
		{"edit of a bazinga issue", "issues", map[string]any{"action": "edited", "issue": map[string]any{"number": 3, "labels": []any{map[string]any{"name": "bazinga"}}}}, "3"},
		{"review of a group PR", "pull_request_review", map[string]any{"action": "submitted", "pull_request": map[string]any{"number": 12, "head": map[string]any{"ref": "bazinga/7-A"}}}, "7"},
		{"CI run on a group branch", "workflow_run", map[string]any{"action": "completed", "workflow_run": map[string]any{"id": 1, "head_branch": "bazinga/7-B", "display_title": "CI"}}, "7"},
		{"CI run on main", "workflow_run", map[string]any{"action": "completed", "workflow_run": map[string]any{"id": 1, "head_branch": "main", "display_title": "CI"}}, ""},
		{"dispatch with an issue", "workflow_dispatch", map[string]any{"inputs": map[string]any{"issue": "9"}}, "9"},
		{"dispatch by hand", "workflow_dispatch", map[string]any{"inputs": map[string]any{}}, "sweep"},
		{"status on another branch", "status", map[string]any{"state": "success", "branches": []any{map[string]any{"name": "main"}}}, "sweep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.payload)
			require.NoError(t, err)
			r, err := RouteEvent(tc.event, raw)
			require.NoError(t, err)
			assert.Equal(t, tc.want, r.Session)
			if tc.want == "" {
				assert.NotEmpty(t, r.Why, "a skipped event says why")
			}
		})
	}
	_, err := RouteEvent("issue_comment", []byte("{not json"))
	assert.Error(t, err)
}
