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
	assert.Contains(t, text, "🔨 Group A [developer/haiku] PARTIAL | Subtract written | tests still missing → developer")
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

	s := res.Session
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
