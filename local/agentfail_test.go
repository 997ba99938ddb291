package local

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// failingAgent is a CLI that cannot reach its model: it says why on stderr
// and exits non-zero, as a real one does.
const failingAgent = `#!/bin/sh
echo "starting $BAZINGA_ROLE"
echo "API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}" >&2
exit 3
`

// A failing agent's own words reach the user: on the terminal, in --json
// and in the session directory, not only "no result (exit code 3)".
func TestFailingAgentIsVisible(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		t.Run(map[bool]string{false: "terminal", true: "json"}[asJSON], func(t *testing.T) {
			repo := gitRepo(t, map[string]string{"README.md": "x\n"})
			agentCmd, _ := writeAgent(t, failingAgent)
			var out bytes.Buffer
			test := "true" // a repository without tests names its (empty) gate
			res, err := Run(context.Background(), Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd,
				TestCommand: &test, Baseline: pipeline.BaselineOff, Out: &out, JSON: asJSON})
			require.NoError(t, err, out.String())
			assert.False(t, res.Verified())
			assert.Equal(t, pipeline.SessionPaused, res.Status, res.Reason)
			assert.Contains(t, res.Reason, "invalid x-api-key", "the pause names the agent's own error")
			text := out.String()
			if asJSON {
				var seen int
				for line := range strings.SplitSeq(text, "\n") {
					var l jsonLine
					if json.Unmarshal([]byte(line), &l) != nil || l.Type != "step_output" {
						continue
					}
					seen++
					assert.Contains(t, l.Output, "invalid x-api-key")
					assert.Contains(t, l.Output, "starting pm")
					require.Len(t, l.Transcript, 2)
				}
				assert.Equal(t, 3, seen, "one step_output per failed attempt:\n%s", text)
			} else {
				assert.Contains(t, text, "failed: no result: the agent exited with code 3: API Error: 401")
				assert.Contains(t, text, "--- stderr (end) ---")
				assert.Contains(t, text, "starting pm")
				assert.Contains(t, text, "full output: ")
			}
			// The whole output of every attempt is kept with the session.
			files, err := filepath.Glob(filepath.Join(repo, StoreDir, "sessions", res.ID, "transcripts", "*.stderr"))
			require.NoError(t, err)
			require.Len(t, files, 3)
			b, err := os.ReadFile(files[0])
			require.NoError(t, err)
			assert.Contains(t, string(b), "invalid x-api-key")
		})
	}
}
