package demo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/internal/scripted"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// The test binary doubles as the scripted agent, as the bazinga binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "scripted-agent" {
		os.Exit(scripted.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestDemoScenarioEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the demo's tests need the go command")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	var out bytes.Buffer
	res, _, err := Run(context.Background(), Options{Agent: exe, Dir: dir, Out: &out})
	require.NoError(t, err, out.String())
	text := out.String()
	t.Log(text)
	require.True(t, res.Verified(), "%s: %s", res.Status, res.Reason)

	// What the scenario promises happened, for real.
	assert.Contains(t, text, "📋 Session [pm/opus] PLANNING_COMPLETE")
	// The plan checkpoint: the plan is shown, the scripted human approves
	// it, and only then does a developer start (issue 13).
	assert.Contains(t, text, "✋ plan-1 waits for approval before any work starts:\nPhase 1:\n  A subtract")
	assert.Contains(t, text, "🧑 (scripted human) reads plan-1: 3 groups, 3 success criteria; approves it.")
	assert.Contains(t, text, "plan-1 approved by reviewer: the work starts.")
	assert.Less(t, strings.Index(text, "plan-1 approved by reviewer"), strings.Index(text, "Group A [developer/haiku]"))
	assert.Contains(t, text, "🔨 Group A [developer/haiku] PARTIAL | Subtract written | tests still missing | $0.0210 · 13.2k tokens → developer")
	assert.Contains(t, text, "🧪 Group A [qa/sonnet] FAIL")
	assert.Contains(t, text, "👔 Group A [tech_lead/opus] CHANGES_REQUESTED")
	assert.Contains(t, text, "MERGE_CONFLICT")
	assert.Contains(t, text, "resolved the Operations conflict")
	assert.Contains(t, text, "📋 Session [pm/opus] BAZINGA")
	assert.Contains(t, text, "🏁 Session [validate/sonnet] ACCEPT")

	// --- harness-run checks (issue 13): a failing required check is fixed ---
	// B's developer claims READY with code gofmt would rewrite; the harness
	// runs the required gofmt check, the claim becomes PARTIAL naming it, and
	// the next developer step formats the file and passes.
	assert.Contains(t, text, "🔨 Group B [developer/haiku] PARTIAL | harness: the harness ran the checks after the READY_FOR_QA claim: required check(s) failed: gofmt")
	assert.Contains(t, text, "↳ group B checks (developer): gofmt ✗ (required)")
	assert.Contains(t, text, "calc/multiply.go")
	assert.Contains(t, text, "🔨 Group B [developer/haiku] READY_FOR_QA | gofmt-ed multiply.go")
	assert.Contains(t, text, "↳ group B checks (merge): gofmt ✓ (required)")
	assert.Contains(t, text, "↳ baseline: the tests pass on main@")
	// --- end checks ---

	// --- cost (issue 13 item 5) ---
	// Every agent step of the scenario reports its usage (a "usage" object
	// in its result, as a result file may carry it): the capsules show each
	// step's cost and tokens, the summary a USAGE column per group and the
	// session's total. The harness's own steps (merges, validation) cost
	// nothing. The demo sets no cost limit, so it never pauses for one.
	assert.Contains(t, text, "📋 Session [pm/opus] PLANNING_COMPLETE | 3 groups over 2 phases | A subtract, B multiply in parallel; C describe after both | $0.4120 · 30.1k tokens → groups A, B, C\n")
	assert.Contains(t, text, "🛠️ Group A [senior/sonnet] READY_FOR_QA | resolved the Operations conflict | kept both operations | $0.0830 · 15.9k tokens → qa\n")
	assert.Contains(t, text, "👔 Group C [tech_lead/opus] APPROVED_WITH_NOTES | fine; consider caching | $0.2030 · 12.5k tokens → merge\n")
	assert.Contains(t, text, "📋 Session [pm/opus] BAZINGA | all groups merged | every criterion met | $0.1870 · 24.8k tokens → validate\n")
	assert.Regexp(t, `🔀 Group B \[merge/harness\] MERGE_SUCCESS \| merged as [0-9a-f]{12}; tests pass in [^|$]*; checks: gofmt pass → merged\n`, text)
	assert.Regexp(t, `🏁 Session \[validate/sonnet\] ACCEPT \| 3 group\(s\) merged into main \| tests pass on main \([0-9a-f]{12}\) \| 3 criteria met with evidence → done\n`, text)
	assert.Contains(t, text, "\nGROUP  NAME      STAGE   STEPS  USAGE                   LAST\n"+
		"A      subtract  merged  13     $1.08 · 145.7k tokens   🔀 Group A [merge/harness] MERGE_SUCCESS")
	assert.Contains(t, text, "\nB      multiply  merged  5      $0.2660 · 42.0k tokens  🔀 Group B [merge/harness] MERGE_SUCCESS")
	assert.Contains(t, text, "\nC      describe  merged  4      $0.2640 · 33.2k tokens  🔀 Group C [merge/harness] MERGE_SUCCESS")
	assert.Contains(t, text, "\n_      session   done    3      $0.5990 · 55.0k tokens  \n")
	assert.Contains(t, text, "\nUsage: $2.21 · 275.8k tokens (in 231.8k, out 19.6k, cache read 24.4k).\n")
	assert.NotContains(t, text, "paused", "no cost limit: the demo never pauses")
	// --- end cost ---

	s := res.Session
	// The 20 agent steps, each priced; the harness steps report nothing.
	assert.Equal(t, pipeline.Usage{CostMicros: 2_212_000, InputTokens: 231_800, OutputTokens: 19_640, CacheReadTokens: 24_400, Steps: 20, Priced: 20}, s.Usage)
	require.Len(t, s.PassedCheckpoints, 1)
	assert.Equal(t, "reviewer", s.PassedCheckpoints[0].ApprovedBy)
	for _, g := range s.Groups {
		assert.Equal(t, pipeline.StageMerged, g.Stage, "group %s", g.ID)
	}
	conflicts := 0
	for _, st := range s.Steps {
		if st.Result != nil && st.Result.Status == pipeline.StatusMergeConflict {
			conflicts++
		}
	}
	assert.Equal(t, 1, conflicts, "exactly the second merge conflicts")
	// Phase 2 started only after both phase-1 groups merged.
	var cFirst, lastPhase1Merge int
	for i, st := range s.Steps {
		if st.Group == "C" && cFirst == 0 {
			cFirst = i
		}
		if (st.Group == "A" || st.Group == "B") && st.Result != nil && st.Result.Status == pipeline.StatusMergeSuccess {
			lastPhase1Merge = i
		}
	}
	assert.Greater(t, cFirst, lastPhase1Merge)

	// The base really has the work, and its tests pass.
	repo := filepath.Join(dir, "repo")
	for _, f := range []string{"calc/subtract.go", "calc/multiply.go", "calc/describe.go"} {
		assert.FileExists(t, filepath.Join(repo, f))
	}
	calc, err := os.ReadFile(filepath.Join(repo, "calc", "calc.go"))
	require.NoError(t, err)
	assert.Contains(t, string(calc), `"subtract",`)
	assert.Contains(t, string(calc), `"multiply",`)
	assert.NotContains(t, string(calc), "<<<<<<<")
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = repo
	outTest, err := cmd.CombinedOutput()
	require.NoError(t, err, string(outTest))
	status := exec.Command("git", "status", "--porcelain")
	status.Dir = repo
	st, err := status.Output()
	require.NoError(t, err)
	assert.Empty(t, strings.TrimSpace(string(st)), "the base working tree is left clean")
}
