package gitops

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/testgate"
)

// The merge gate as Land runs it: checks and the baseline (the gate itself
// is tested in package testgate).

// goTestFailures are the failing tests of ../testgate/testdata/gotest.json.
var goTestFailures = []string{
	"example.com/gj/broken (package)",
	"example.com/gj/calc.TestOld",
	"example.com/gj/calc.TestTable",
	"example.com/gj/calc.TestTable/bad",
}

// gotestCmd is a test command that prints the recorded go test -json output
// and fails, as the real command did.
func gotestCmd(t *testing.T) string {
	p, err := filepath.Abs("../testgate/testdata/gotest.json")
	require.NoError(t, err)
	return "cat '" + p + "'; exit 1"
}

// A required check that fails keeps the group off the base, as failing tests do.
func TestLandRunsChecks(t *testing.T) {
	tests := []struct {
		name   string
		checks []testgate.Check
		want   LandOutcome
	}{
		{"required check fails", []testgate.Check{{Name: "nofixme", Command: "! grep -rq FIXME .", Required: true}}, MergeTestFailure},
		{"optional check fails", []testgate.Check{{Name: "nofixme", Command: "! grep -rq FIXME .", Required: false}}, MergeSuccess},
		{"check passes", []testgate.Check{{Name: "hasc", Command: "test -f c.txt", Required: true}}, MergeSuccess},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newRemote(t)
			f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "FIXME later\n"})
			before := f.head(t, "main")
			res, err := Land(context.Background(), LandRequest{Remote: Remote{URL: f.bare}, Base: "main", Branch: "bazinga/s1-A",
				Gate: testgate.GateConfig{Checks: tc.checks, Timeout: time.Minute}, TempDir: t.TempDir()})
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Outcome, res.Reason)
			require.NotNil(t, res.Gate)
			require.Len(t, res.Gate.Checks, 1)
			if tc.want == MergeTestFailure {
				assert.Equal(t, before, f.head(t, "main"), "nothing lands")
				assert.Contains(t, res.Reason, "checks: nofixme fail (required)")
			} else {
				assert.NotEqual(t, before, f.head(t, "main"))
			}
		})
	}
}

// With a baseline, failures the base already has do not keep a group off it.
func TestLandComparesWithTheBaseline(t *testing.T) {
	f := newRemote(t)
	f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
	cmd := gotestCmd(t)
	req := LandRequest{Remote: Remote{URL: f.bare}, Base: "main", Branch: "bazinga/s1-A", TempDir: t.TempDir(),
		Gate: testgate.GateConfig{Command: cmd, Timeout: time.Minute, Known: &testgate.KnownFailures{Identity: testgate.IdentityGoTestJSON, Tests: goTestFailures[:3]}}}
	res, err := Land(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, MergeTestFailure, res.Outcome)
	assert.Contains(t, res.Reason, "new failures")
	assert.Contains(t, res.Reason, "--- FAIL example.com/gj/calc.TestTable/bad")

	req.Gate.Known.Tests = goTestFailures
	res, err = Land(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, MergeSuccess, res.Outcome, res.Reason)
	assert.Equal(t, testgate.GateFail, res.Gate.TestsOutcome)
	assert.Equal(t, goTestFailures, res.Gate.PreExisting)
}

func TestLandOutcomeStrings(t *testing.T) {
	assert.Equal(t, "MERGE_SUCCESS", MergeSuccess.String())
	assert.Equal(t, "MERGE_CONFLICT", MergeConflict.String())
	assert.Equal(t, "MERGE_TEST_FAILURE", MergeTestFailure.String())
	assert.Equal(t, "MERGE_BLOCKED", MergeBlocked.String())
}
