package stepexec

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/agent"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// claudeResult prints a result object in claude's stream-json shape.
func claudeResult(subtype string, isError bool, result string) string {
	r := "null"
	if result != "" {
		r = `"` + strings.ReplaceAll(result, `"`, `\"`) + `"`
	}
	return `printf '%s\n' '{"type":"result","subtype":"` + subtype + `","is_error":` + map[bool]string{true: "true", false: "false"}[isError] +
		`,"num_turns":12,"result":` + r + `,"total_cost_usd":0.25,"usage":{"input_tokens":1000,"output_tokens":100}}'`
}

// The CLI's own failures, read by its driver, decide what happens to the
// step (issue 19 items 4 and 5).
func TestCLIFailuresAreNamed(t *testing.T) {
	claude := agent.RunnerConfig{Timeout: time.Minute, CLI: "claude", RetryBackoff: 10 * time.Millisecond}
	t.Run("refused credentials pause at once", func(t *testing.T) {
		f := newFixture(t, pipeline.RoleDeveloper)
		e := f.execWith(t, claudeResult("success", true, `Invalid API key · Please run /login`)+"; exit 1", claude)
		ev, rep := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
		require.Equal(t, pipeline.EventStepFailed, ev.Kind)
		assert.True(t, ev.Permanent, "another attempt would be refused the same way")
		assert.Contains(t, ev.Reason, "Invalid API key")
		assert.Equal(t, "auth", rep.Failure)
	})
	t.Run("a developer stopped at its turn limit keeps its work", func(t *testing.T) {
		f := newFixture(t, pipeline.RoleDeveloper)
		e := f.execWith(t, "echo work > half.txt; "+claudeResult("error_max_turns", true, "")+"; exit 1", claude)
		ev, _ := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
		require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
		assert.Equal(t, pipeline.StatusPartial, ev.Result.Status)
		assert.Equal(t, "harness: claude stopped at its turn limit after 12 turns; partial work committed", ev.Result.Summary[0])
		assert.Contains(t, string(ev.Result.Handoff), `"cli_failure":"max_turns"`)
		assert.NotEmpty(t, gitCLI(t, f.bare, "ls-tree", "--name-only", "bazinga/s1-A", "half.txt"), "the edits are pushed")
		require.NotNil(t, ev.Usage, "what the cut-short step cost is counted")
		assert.Equal(t, int64(250_000), ev.Usage.CostMicros)
	})
	t.Run("an overloaded API is retried after a wait, every attempt counted", func(t *testing.T) {
		f := newFixture(t, pipeline.RoleDeveloper)
		count := filepath.Join(t.TempDir(), "n")
		script := `n=$(cat ` + count + ` 2>/dev/null || echo 0); n=$((n+1)); echo $n > ` + count + `
if [ $n = 1 ]; then ` + claudeResult("success", true, `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`) + `; exit 1; fi
echo hi > hello.txt
` + claudeResult("success", false, `{"status":"READY_FOR_QA","summary":["added hello.txt"]}`)
		e := f.execWith(t, script, claude)
		ev, rep := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
		require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
		assert.Equal(t, pipeline.StatusReadyForQA, ev.Result.Status)
		assert.Contains(t, strings.Join(rep.Notes, "\n"), "attempt 1: claude: API Error: 529")
		require.NotNil(t, ev.Usage)
		assert.Equal(t, int64(500_000), ev.Usage.CostMicros, "both attempts were paid for")
		assert.Equal(t, 1, ev.Usage.Steps)
	})
	t.Run("a reviewer's edits are not kept", func(t *testing.T) {
		f := newFixture(t, pipeline.RoleTechLead)
		e := f.execWith(t, "echo sneaky > backdoor.txt; "+claudeResult("success", false, `{"status":"APPROVED","summary":["fine"]}`), claude)
		ev, rep := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
		require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
		assert.Equal(t, pipeline.StatusApproved, ev.Result.Status)
		assert.Contains(t, strings.Join(rep.Notes, "\n"), "discarded 1 file(s) the tech_lead changed (backdoor.txt)")
		out := gitCLI(t, f.bare, "ls-tree", "-r", "--name-only", "bazinga/s1-A")
		assert.NotContains(t, out, "backdoor.txt")
	})
}
