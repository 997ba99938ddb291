package local

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// findingsAgent: one group; the tech lead finds a HIGH issue and a LOW one
// at its first two reviews (the HIGH survives its revision), then approves.
const findingsAgent = `#!/bin/sh
set -e
count() { n=$(cat "$STATE/$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$STATE/$1"; echo $n; }
case "$BAZINGA_ROLE" in
pm)
  n=$(count pm)
  if [ "$n" = 1 ]; then
    echo '{"status":"PLANNING_COMPLETE","handoff":{"plan":{"groups":[{"id":"A","name":"widget","task":"add widget.go"}],"success_criteria":["it exists"]}}}'
  else
    echo '{"status":"BAZINGA","handoff":{"criteria":[{"criterion":"it exists","met":true,"evidence":"merged"}]}}'
  fi ;;
developer|senior)
  n=$(count dev)
  seq 1 20 > widget.go; echo "// revision $n" >> widget.go
  echo 'Status: READY_FOR_REVIEW' ;;
tech_lead)
  n=$(count tl)
  if [ "$n" -le 2 ]; then
    echo '{"status":"CHANGES_REQUESTED","summary":["the lock"],"findings":[{"severity":"low","file":"widget.go","line":2,"problem":"naming"},{"severity":"high","file":"widget.go","line":5,"end_line":6,"problem":"the lock is never released","fix":"defer the unlock"}]}'
  else
    echo '{"status":"APPROVED","findings":[{"severity":"medium","file":"widget.go","line":9,"problem":"no test for the empty widget"}]}'
  fi ;;
*) echo "unexpected role $BAZINGA_ROLE" >&2; exit 1 ;;
esac
`

func TestFindingsOnTheTerminal(t *testing.T) {
	for _, tc := range []struct {
		name, input string
		devSteps    int
		out         []string
	}{
		{"accepted", "a\n", 2, []string{"terminal accepted the findings of findings-A-", "- group A: MEDIUM widget.go:5-6: (HIGH, accepted by terminal) the lock is never released"}},
		{"direction", "f keep the lock, add a timeout\n", 3, []string{"group A goes back to its developer with the direction",
			"MEDIUM (1):\n      - widget.go:9: no test for the empty widget", "- group A: MEDIUM widget.go:9: no test for the empty widget"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := gitRepo(t, map[string]string{"README.md": "x\n"})
			agentCmd, state := writeAgent(t, findingsAgent)
			t.Setenv("STATE", state)
			test := "true"
			var out strings.Builder
			opts := Options{Repo: repo, Requirements: "a widget", AgentCommand: agentCmd, TestCommand: &test,
				PassEnv: []string{"STATE"}, Out: &out, Terminal: true, Input: strings.NewReader(tc.input)}
			res, err := Run(context.Background(), opts)
			require.NoError(t, err, out.String())
			require.Equal(t, pipeline.SessionDone, res.Status, out.String())
			got := out.String()
			// Under the review's capsule, grouped by severity, worst first.
			assert.Contains(t, got, "   HIGH (1):\n     - widget.go:5-6: the lock is never released (fix: defer the unlock)\n   LOW (1):\n     - widget.go:2: naming")
			assert.Contains(t, got, "findings-A-")
			assert.Contains(t, got, `Accept the findings? Type "a" to accept them and go on, "f <direction>" to send the group back with it, or "s" to stop:`)
			for _, want := range tc.out {
				assert.Contains(t, got, want)
			}
			s := res.Session
			n := 0
			for _, st := range s.Steps {
				if st.Role.IsImplementer() {
					n++
				}
			}
			assert.Equal(t, tc.devSteps, n)
			// The summary: the latest review's findings, and the follow-ups.
			assert.Contains(t, got, "Review findings (the latest review of each group):")
			assert.Contains(t, got, "Follow-ups (review findings the session went on with):")
		})
	}
}
