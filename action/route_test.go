package action_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/action"
)

// command: route needs no token, no key and no step: it reads the event and
// writes the session (issue 22), or nothing when no reconcile is needed.
func TestRouteCommand(t *testing.T) {
	for _, tc := range []struct{ name, event, payload, want string }{
		{"a command on the second line", "issue_comment", `{"action":"created","issue":{"number":7},"comment":{"body":"Thanks.\n/bazinga status"}}`, "7"},
		{"a comment without a command", "issue_comment", `{"action":"created","issue":{"number":7},"comment":{"body":"see /bazinga docs"}}`, ""},
		{"the schedule", "schedule", ``, "sweep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			event, out := filepath.Join(dir, "event.json"), filepath.Join(dir, "output")
			require.NoError(t, os.WriteFile(event, []byte(tc.payload), 0o644))
			require.NoError(t, os.WriteFile(out, nil, 0o644))
			env := map[string]string{"INPUT_COMMAND": "route", "GITHUB_EVENT_NAME": tc.event, "GITHUB_EVENT_PATH": event,
				"GITHUB_OUTPUT": out, "GITHUB_REPOSITORY": "acme/widgets", "INPUT_GITHUB-TOKEN": "ghs_route"}
			var stdout bytes.Buffer
			code := action.Run(context.Background(), action.Deps{Getenv: func(k string) string { return env[k] }, Stdout: &stdout})
			require.Equal(t, 0, code, stdout.String())
			assert.Equal(t, tc.want, ReadOutputs(out)["session"])
			if tc.want == "" {
				assert.Contains(t, stdout.String(), "no reconcile needed")
			}
		})
	}
}
