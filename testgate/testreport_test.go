package testgate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/gotest.json is real `go test -json ./...` output of a module with
// a passing, a failing, a skipped test, a table with one failing case and a
// package that does not build.
var goTestFailures = []string{
	"example.com/gj/broken (package)",
	"example.com/gj/calc.TestOld",
	"example.com/gj/calc.TestTable",
	"example.com/gj/calc.TestTable/bad",
}

func TestGoTestReader(t *testing.T) {
	data, err := os.ReadFile("testdata/gotest.json")
	require.NoError(t, err)
	tests := []struct {
		name  string
		write func(w *goTestReader)
	}{
		{"at once", func(w *goTestReader) { w.Write(data) }},
		{"byte by byte", func(w *goTestReader) {
			for i := range data {
				w.Write(data[i : i+1])
			}
		}},
		{"mixed with other output", func(w *goTestReader) {
			w.Write([]byte("building…\n{not json\n{\"no\":\"action\"}\n"))
			w.Write(data)
		}},
		{"a line too long is skipped", func(w *goTestReader) {
			w.Write([]byte(strings.Repeat("{", maxTestLine+10) + "\n"))
			w.Write(data)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newGoTestReader()
			tc.write(r)
			rep := r.report()
			require.NotNil(t, rep)
			assert.Equal(t, IdentityGoTestJSON, rep.Identity)
			assert.Equal(t, goTestFailures, rep.Names())
			assert.Equal(t, 2, rep.Passed, "TestAdd and TestTable/ok")
			byName := map[string]string{}
			for _, f := range rep.Failed {
				byName[f.Name] = f.Output
			}
			assert.Contains(t, byName["example.com/gj/calc.TestOld"], "old failure")
			assert.Contains(t, byName["example.com/gj/calc.TestTable/bad"], "bad case")
			assert.Contains(t, byName["example.com/gj/broken (package)"], "undefined: undefined")
		})
	}
	r := newGoTestReader()
	r.Write([]byte("--- FAIL: TestX (0.00s)\nFAIL\n"))
	assert.Nil(t, r.report(), "plain go test output is not -json")
}

func TestOutTailKeepsTheEnd(t *testing.T) {
	tl := &outTail{max: 10}
	for range 100 {
		tl.add("abcdefghé")
	}
	s := tl.String()
	assert.True(t, strings.HasPrefix(s, "…"))
	assert.True(t, strings.HasSuffix(s, "abcdefghé"))
	assert.LessOrEqual(t, len(s), 10+len("…"))
}

func TestReadJUnit(t *testing.T) {
	dir := t.TempDir()
	report, err := os.ReadFile("testdata/junit/report.xml")
	require.NoError(t, err)
	write := func(rel, s string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	}
	write("old/stale.xml", `<testsuite><testcase classname="Stale" name="t"><failure/></testcase></testsuite>`)
	before := fileStamps(dir, "**/*.xml")
	require.Len(t, before, 1)
	write("build/reports/a/report.xml", string(report))
	write("build/reports/b.xml", `<testsuite name="b"><testcase classname="B" name="ok"/></testsuite>`)
	write("build/reports/notes.txt", "not a report")

	rep, err := readJUnit(dir, "build/**/*.xml", before)
	require.NoError(t, err)
	require.NotNil(t, rep)
	assert.Equal(t, IdentityJUnit, rep.Identity)
	assert.Equal(t, []string{"com.example.CalcTest.divides", "com.example.IOTest.reads"}, rep.Names())
	assert.Equal(t, 3, rep.Passed, "adds, bare, B.ok; the skipped one is neither")
	assert.Contains(t, rep.Failed[0].Output, "expected 2 but was 3")
	assert.Contains(t, rep.Failed[0].Output, "CalcTest.java:12")
	assert.Equal(t, "2 JUnit report(s)", rep.Note)

	rep, err = readJUnit(dir, "**/*.xml", before)
	require.NoError(t, err)
	assert.NotContains(t, rep.Names(), "Stale.t", "a report older than the run is not read")

	rep, err = readJUnit(dir, "nothing/*.xml", nil)
	require.NoError(t, err)
	assert.Nil(t, rep)

	write("bad/x.xml", "<html><body>no</body></html>")
	_, err = readJUnit(dir, "bad/*.xml", nil)
	assert.ErrorContains(t, err, "not a JUnit report")
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		glob, path string
		want       bool
	}{
		{"*.xml", "a.xml", true},
		{"*.xml", "d/a.xml", false},
		{"**/*.xml", "a.xml", true},
		{"**/*.xml", "d/e/a.xml", true},
		{"build/**/TEST-*.xml", "build/test-results/test/TEST-x.xml", true},
		{"build/**/TEST-*.xml", "other/TEST-x.xml", false},
		{"r/?.xml", "r/a.xml", true},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, globMatch(strings.Split(tc.glob, "/"), strings.Split(tc.path, "/")), "%s ~ %s", tc.glob, tc.path)
	}
}

// gotestCmd is a test command that prints the recorded go test -json output
// and fails, as the real command did.
func gotestCmd(t *testing.T) string {
	p, err := filepath.Abs("testdata/gotest.json")
	require.NoError(t, err)
	return "cat '" + p + "'; exit 1"
}

func TestRunGateBaseline(t *testing.T) {
	tests := []struct {
		name      string
		cmd       string
		junit     string
		known     *KnownFailures
		want      GateOutcome
		identity  TestIdentity
		pre, news []string
		compared  string
	}{
		{name: "no baseline: every failure counts", cmd: "gotest", want: GateFail, identity: IdentityGoTestJSON},
		{name: "all failures pre-existing", cmd: "gotest",
			known: &KnownFailures{Identity: IdentityGoTestJSON, Tests: append([]string{"other.TestGone"}, goTestFailures...), At: "main@abc"},
			want:  GatePass, identity: IdentityGoTestJSON, pre: goTestFailures, compared: "only failures the base main@abc already has (go test -json)"},
		{name: "one new failure", cmd: "gotest",
			known: &KnownFailures{Identity: IdentityGoTestJSON, Tests: goTestFailures[:3], At: "main@abc"},
			want:  GateFail, identity: IdentityGoTestJSON, pre: goTestFailures[:3], news: goTestFailures[3:],
			compared: "new failures (not failing on the base main@abc; go test -json): example.com/gj/calc.TestTable/bad"},
		{name: "base failed without names: any failure is pre-existing", cmd: "echo broken; exit 2",
			known: &KnownFailures{Identity: IdentityExitStatus, Unnamed: true, At: "main@abc"},
			want:  GatePass, identity: IdentityExitStatus, compared: "any failure counts as pre-existing"},
		{name: "failure without names against a named baseline", cmd: "echo compile error; exit 2",
			known: &KnownFailures{Identity: IdentityGoTestJSON, Tests: goTestFailures},
			want:  GateFail, identity: IdentityExitStatus, compared: "failing tests named by exit status, the baseline by go test -json"},
		{name: "passing run needs no comparison", cmd: "echo fine",
			known: &KnownFailures{Identity: IdentityGoTestJSON, Tests: goTestFailures}, want: GatePass},
		{name: "junit preferred when configured", cmd: "mkdir -p out && cp '" + mustAbs(t, "testdata/junit/report.xml") + "' out/r.xml && exit 1",
			junit: "out/*.xml", known: &KnownFailures{Identity: IdentityJUnit, Tests: []string{"com.example.CalcTest.divides"}},
			want: GateFail, identity: IdentityJUnit, pre: []string{"com.example.CalcTest.divides"}, news: []string{"com.example.IOTest.reads"}},
		{name: "junit configured but none written: falls back to go test -json", cmd: "gotest", junit: "out/*.xml",
			known: &KnownFailures{Identity: IdentityGoTestJSON, Tests: goTestFailures}, want: GatePass, identity: IdentityGoTestJSON, pre: goTestFailures},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := tc.cmd
			if cmd == "gotest" {
				cmd = gotestCmd(t)
			}
			res, err := RunGate(context.Background(), t.TempDir(), GateConfig{Command: cmd, JUnit: tc.junit, Known: tc.known, Timeout: time.Minute})
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Outcome, res.Summary())
			assert.Equal(t, tc.identity, res.Tests.Identity)
			assert.Equal(t, tc.pre, res.PreExisting)
			assert.Equal(t, tc.news, res.New)
			assert.Contains(t, res.Compared, tc.compared)
			if tc.compared != "" {
				assert.Contains(t, res.Summary(), tc.compared)
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}

func TestGateDigestNamesFailingTests(t *testing.T) {
	res, err := RunGate(context.Background(), t.TempDir(), GateConfig{Command: gotestCmd(t),
		Known: &KnownFailures{Identity: IdentityGoTestJSON, Tests: []string{"example.com/gj/calc.TestOld"}}})
	require.NoError(t, err)
	d := res.Digest(1 << 20)
	assert.Contains(t, d, "--- FAIL example.com/gj/calc.TestOld (fails on the base too)\n")
	assert.Contains(t, d, "--- FAIL example.com/gj/calc.TestTable/bad\n")
	assert.NotContains(t, d, `"Action"`, "the JSON is not shown to agents")
	assert.Contains(t, res.Summary(), "tests fail in")
	short := res.Digest(100)
	assert.LessOrEqual(t, len(short), 100+len("…"))
}
