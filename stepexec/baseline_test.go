package stepexec

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/agent"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/testgate"
)

// jsonTests is a test command that speaks `go test -json`: each name in the
// file "failing" fails, TestOK passes.
const jsonTests = `#!/bin/sh
rc=0
for n in $(cat failing 2>/dev/null); do
  printf '{"Action":"output","Package":"p","Test":"%s","Output":"%s broke\\n"}\n' "$n" "$n"
  printf '{"Action":"fail","Package":"p","Test":"%s"}\n' "$n"
  rc=1
done
echo '{"Action":"pass","Package":"p","Test":"TestOK"}'
exit $rc
`

// plainTests fails, saying so only in its exit status, when "failing" is not empty.
const plainTests = "#!/bin/sh\ntest ! -s failing\n"

// baseRepo makes a bare repository whose main holds the test script and the
// names of the tests that fail on it.
func baseRepo(t *testing.T, script string, failing ...string) (bare, head string) {
	t.Helper()
	work := t.TempDir()
	gitCLI(t, work, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(work, "t.sh"), []byte(script), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(work, "failing"), []byte(strings.Join(failing, "\n")), 0o644))
	gitCLI(t, work, "add", "-A")
	gitCLI(t, work, "commit", "-q", "-m", "init")
	bare = filepath.Join(t.TempDir(), "remote.git")
	gitCLI(t, work, "clone", "-q", "--bare", ".", bare)
	return bare, gitCLI(t, bare, "rev-parse", "main")
}

func executor(t *testing.T, bare string, cfg pipeline.Config, agentScript string) *Executor {
	t.Helper()
	e := &Executor{Remote: gitops.Remote{URL: bare}, Config: cfg, TempDir: t.TempDir()}
	if agentScript != "" {
		p := filepath.Join(t.TempDir(), "agent.sh")
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+agentScript), 0o755))
		run, err := agent.NewRunner(agent.RunnerConfig{Command: p, Timeout: time.Minute})
		require.NoError(t, err)
		e.Runner = run
	}
	return e
}

func testConfig() pipeline.Config {
	cfg := pipeline.DefaultConfig()
	cfg.Tests.Command = "./t.sh"
	return cfg
}

const planResult = `echo '{"status":"PLANNING_COMPLETE","summary":["one group"],"handoff":{"plan":{"groups":[{"id":"A","task":"do A"}],"success_criteria":["it works"]}}}'`

func TestBaselineTakenBesideThePlanningStep(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		failing  []string
		mode     pipeline.BaselineMode
		junit    string
		want     *pipeline.Baseline // Commit filled in; Command is ./t.sh unless command is set
		wantNote string
		command  string // instead of ./t.sh
		wantTail string // in the output's tail
	}{
		{name: "red base, JUnit reports", junit: "out/*.xml",
			script: "#!/bin/sh\nmkdir -p out\nprintf '<testsuite><testcase classname=\"C\" name=\"ok\"/><testcase classname=\"C\" name=\"old\"><failure message=\"boom\"/></testcase></testsuite>' > out/r.xml\nexit 1\n",
			want:   &pipeline.Baseline{Identity: pipeline.IdentityJUnit, Failed: []string{"C.old"}}},
		{name: "green base", script: jsonTests, want: &pipeline.Baseline{Green: true, Identity: pipeline.IdentityGoTestJSON}},
		{name: "red base, tests named", script: jsonTests, failing: []string{"TestOld", "TestFlaky"},
			want: &pipeline.Baseline{Identity: pipeline.IdentityGoTestJSON, Failed: []string{"p.TestFlaky", "p.TestOld"}}},
		{name: "red base, exit status only", script: plainTests, failing: []string{"x"},
			want: &pipeline.Baseline{Identity: pipeline.IdentityExitStatus, Unnamed: true}},
		{name: "baseline off", script: jsonTests, failing: []string{"TestOld"}, mode: pipeline.BaselineOff},
		{name: "tests time out on the base", script: "#!/bin/sh\nsleep 30\n", wantNote: "timeout",
			want: &pipeline.Baseline{Identity: pipeline.IdentityExitStatus, Unnamed: true}},
		// issue 25: a command that cannot start is not a red base.
		{name: "test command not found", script: plainTests, command: "no-such-tool-xyz test", wantTail: "not found",
			want: &pipeline.Baseline{Identity: pipeline.IdentityExitStatus, Unnamed: true, CannotRun: true}},
		{name: "test script not executable", script: plainTests, command: "./failing", wantTail: "denied",
			want: &pipeline.Baseline{Identity: pipeline.IdentityExitStatus, Unnamed: true, CannotRun: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bare, head := baseRepo(t, tc.script, tc.failing...)
			cfg := testConfig()
			if tc.command != "" {
				cfg.Tests.Command = tc.command
			}
			if tc.mode != "" {
				cfg.Tests.Baseline = tc.mode
			}
			cfg.Tests.JUnit = tc.junit
			if tc.wantNote == "timeout" {
				cfg.Tests.Timeout = pipeline.Duration(300 * time.Millisecond)
			}
			s, _ := pipeline.Reconcile(pipeline.Session{}, []pipeline.Event{pipeline.Started("s1", "req", "main")}, time.Now(), cfg)
			pm := s.Step(s.Lead.InFlight)
			require.Equal(t, tc.mode != pipeline.BaselineOff, pm.Baseline)
			e := executor(t, bare, cfg, planResult)
			ev, rep := e.Run(context.Background(), s, pm.ID)
			require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
			assert.Equal(t, pipeline.StatusPlanningComplete, ev.Result.Status, "the pm's result is its own")
			if tc.want == nil {
				assert.Nil(t, ev.Harness)
				return
			}
			require.NotNil(t, ev.Harness)
			require.NotNil(t, ev.Harness.Baseline)
			got := *ev.Harness.Baseline
			assert.Equal(t, head, got.Commit)
			assert.NotEmpty(t, got.Summary)
			got.Summary = ""
			assert.Contains(t, got.Tail, tc.wantTail)
			if got.Green {
				assert.Empty(t, got.Tail, "a green run keeps no output")
			}
			got.Tail = ""
			want := *tc.want
			want.Commit = head
			want.Command = cfg.Tests.Command
			assert.Equal(t, want, got)
			if tc.wantNote != "" {
				assert.Contains(t, ev.Harness.Baseline.Summary, tc.wantNote)
			}
			assert.Contains(t, strings.Join(rep.Notes, "\n"), "baseline: ")

			// The engine takes it: a red one pauses the session.
			s2, _ := pipeline.Reconcile(s, []pipeline.Event{ev}, time.Now(), cfg)
			assert.Equal(t, !want.Green, s2.Status == pipeline.SessionPaused, s2.Reason)
		})
	}
}

// accepted gives a session at group A's developer step the accepted baseline.
func accepted(t *testing.T, cfg pipeline.Config, b pipeline.Baseline) pipeline.Session {
	s := playToWith(t, pipeline.RoleDeveloper, cfg)
	b.Accepted, b.AcceptedBy = true, "alice"
	s.Baseline = &b
	return s
}

func playToWith(t *testing.T, role pipeline.Role, cfg pipeline.Config) pipeline.Session {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, _ := pipeline.Reconcile(pipeline.Session{}, []pipeline.Event{pipeline.Started("s1", "req", "main")}, now, cfg)
	plan := `{"plan":{"groups":[{"id":"A","task":"do A"}],"success_criteria":["it works"]}}`
	s, _ = pipeline.Reconcile(s, []pipeline.Event{pipeline.StepResult("s1", s.Lead.InFlight, pipeline.Result{Status: pipeline.StatusPlanningComplete, Handoff: json.RawMessage(plan)})}, now, cfg)
	for _, st := range []pipeline.Status{pipeline.StatusReadyForReview, pipeline.StatusApproved} {
		if s.Step(s.Groups[0].InFlight).Role == role {
			break
		}
		s, _ = pipeline.Reconcile(s, []pipeline.Event{pipeline.StepResult("s1", s.Groups[0].InFlight, pipeline.Result{Status: st})}, now, cfg)
	}
	require.Equal(t, role, s.Step(s.Groups[0].InFlight).Role)
	return s
}

func TestReadyClaimComparedWithTheBaseline(t *testing.T) {
	base := pipeline.Baseline{Identity: pipeline.IdentityGoTestJSON, Failed: []string{"p.TestOld"}}
	tests := []struct {
		name     string
		script   string
		baseline pipeline.Baseline
		failing  string // what the developer leaves failing
		want     pipeline.Status
		summary  string
		handoff  []string
	}{
		{"only the base's failures", jsonTests, base, "TestOld", pipeline.StatusReadyForQA, "",
			[]string{`"pre_existing":["p.TestOld"]`, `"tests_identity":"go test -json"`, `"files_changed":["f"]`}},
		{"a new failure", jsonTests, base, "TestOld\nTestNew", pipeline.StatusPartial,
			"harness: the harness ran the tests after the READY_FOR_QA claim: tests fail", []string{"new failures", "p.TestNew", "TestNew broke"}},
		{"all fixed", jsonTests, base, "", pipeline.StatusReadyForQA, "", []string{`"files_changed":["f"]`}},
		{"unnamed base: any failure is pre-existing", plainTests, pipeline.Baseline{Identity: pipeline.IdentityExitStatus, Unnamed: true},
			"anything", pipeline.StatusReadyForQA, "", []string{"any failure counts as pre-existing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bare, _ := baseRepo(t, tc.script, "TestOld")
			cfg := testConfig()
			s := accepted(t, cfg, tc.baseline)
			e := executor(t, bare, cfg, "printf '"+strings.ReplaceAll(tc.failing, "\n", `\n`)+"' > failing; echo f > f; "+
				`echo '{"status":"READY_FOR_QA","summary":["done"],"handoff":{"files_changed":["f"]}}'`)
			ev, rep := e.Run(context.Background(), s, s.Groups[0].InFlight)
			require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
			assert.Equal(t, tc.want, ev.Result.Status, rep.Tests)
			if tc.summary != "" {
				assert.Contains(t, ev.Result.Summary[0], tc.summary)
			}
			for _, h := range tc.handoff {
				assert.Contains(t, string(ev.Result.Handoff), h)
			}
			assert.True(t, json.Valid(ev.Result.Handoff))
		})
	}
}

func TestChecksAfterAReadyClaim(t *testing.T) {
	tests := []struct {
		name     string
		checks   []pipeline.CheckConfig
		agent    string
		want     pipeline.Status
		summary  string
		passed   []bool
		handoff  []string
		noOutput bool
	}{
		{name: "required check fails: PARTIAL with its output",
			checks: []pipeline.CheckConfig{{Name: "nofixme", Command: "! grep -n FIXME f", Required: true}, {Name: "vet", Command: "true", Required: true}},
			agent:  "echo 'x FIXME' > f", want: pipeline.StatusPartial,
			summary: "harness: the harness ran the checks after the READY_FOR_QA claim: required check(s) failed: nofixme",
			passed:  []bool{false, true}, handoff: []string{`"name":"nofixme"`, `1:x FIXME`, `"claimed":"READY_FOR_QA"`}},
		{name: "optional check fails: the claim holds, the outcome travels",
			checks: []pipeline.CheckConfig{{Name: "nofixme", Command: "! grep -n FIXME f", Required: false}},
			agent:  "echo 'x FIXME' > f", want: pipeline.StatusReadyForQA,
			passed: []bool{false}, handoff: []string{`"harness_checks"`, `"outcome":"fail"`, `"files_changed":["f"]`}},
		{name: "tests and a required check fail",
			checks: []pipeline.CheckConfig{{Name: "nofixme", Command: "! grep -n FIXME f", Required: true}},
			agent:  "echo 'x FIXME' > f; echo TestNew > failing", want: pipeline.StatusPartial,
			summary: "harness: the harness ran the tests and checks after the READY_FOR_QA claim: tests fail",
			passed:  []bool{false}},
		{name: "all pass",
			checks: []pipeline.CheckConfig{{Name: "nofixme", Command: "! grep -n FIXME f", Required: true}},
			agent:  "echo fine > f", want: pipeline.StatusReadyForQA, passed: []bool{true}, handoff: []string{`"outcome":"pass"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bare, _ := baseRepo(t, jsonTests)
			cfg := testConfig()
			cfg.Checks = tc.checks
			s := playToWith(t, pipeline.RoleDeveloper, cfg)
			e := executor(t, bare, cfg, tc.agent+`; echo '{"status":"READY_FOR_QA","summary":["done"],"handoff":{"files_changed":["f"]}}'`)
			ev, rep := e.Run(context.Background(), s, s.Groups[0].InFlight)
			require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
			assert.Equal(t, tc.want, ev.Result.Status)
			if tc.summary != "" {
				assert.Contains(t, ev.Result.Summary[0], tc.summary)
			}
			for _, h := range tc.handoff {
				assert.Contains(t, string(ev.Result.Handoff), h)
			}
			require.NotNil(t, ev.Harness)
			require.Len(t, ev.Harness.Checks, len(tc.passed))
			for i, p := range tc.passed {
				assert.Equal(t, p, ev.Harness.Checks[i].Passed)
				assert.Equal(t, tc.checks[i].Required, ev.Harness.Checks[i].Required)
				if !p {
					assert.NotEmpty(t, ev.Harness.Checks[i].Tail)
				}
			}
			assert.Contains(t, rep.Tests, "checks: ")

			// The engine keeps them on the group; the next QA or developer prompt shows them.
			s2, _ := pipeline.Reconcile(s, []pipeline.Event{ev}, time.Now(), cfg)
			g := s2.Group("A")
			require.Len(t, g.Checks, len(tc.passed))
			in := e.promptInput(s2, *s2.Step(g.InFlight), g)
			assert.Equal(t, g.Checks, in.Checks)
		})
	}
}

func TestMergeGateRunsChecksAndComparesWithTheBaseline(t *testing.T) {
	tests := []struct {
		name     string
		checks   []pipeline.CheckConfig
		baseline *pipeline.Baseline
		failing  string
		want     pipeline.Status
		handoff  string
	}{
		{name: "required check fails", checks: []pipeline.CheckConfig{{Name: "nofixme", Command: "! grep -rn FIXME a.txt", Required: true}},
			want: pipeline.StatusMergeTestFailure, handoff: "1:FIXME"},
		{name: "pre-existing failure only", baseline: &pipeline.Baseline{Identity: pipeline.IdentityGoTestJSON, Failed: []string{"p.TestOld"}},
			failing: "TestOld", want: pipeline.StatusMergeSuccess},
		{name: "new failure", baseline: &pipeline.Baseline{Identity: pipeline.IdentityGoTestJSON, Failed: []string{"p.TestOld"}},
			failing: "TestOld\nTestNew", want: pipeline.StatusMergeTestFailure, handoff: "TestNew broke"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bare, _ := baseRepo(t, jsonTests, "TestOld")
			cfg := testConfig()
			cfg.Checks = tc.checks
			s := playToWith(t, pipeline.RoleMerge, cfg)
			if tc.baseline != nil {
				b := *tc.baseline
				b.Accepted = true
				s.Baseline = &b
			}
			work := t.TempDir()
			gitCLI(t, work, "clone", "-q", bare, ".")
			gitCLI(t, work, "checkout", "-q", "-b", "bazinga/s1-A")
			require.NoError(t, os.WriteFile(filepath.Join(work, "a.txt"), []byte("FIXME\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(work, "failing"), []byte(tc.failing), 0o644))
			gitCLI(t, work, "add", "-A")
			gitCLI(t, work, "commit", "-q", "-m", "A")
			gitCLI(t, work, "push", "-q", "origin", "bazinga/s1-A")
			e := executor(t, bare, cfg, "")
			ev, _ := e.Run(context.Background(), s, s.Groups[0].InFlight)
			require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
			assert.Equal(t, tc.want, ev.Result.Status, ev.Result.Summary)
			assert.Contains(t, string(ev.Result.Handoff), tc.handoff)
			if len(tc.checks) > 0 {
				require.NotNil(t, ev.Harness)
				assert.False(t, ev.Harness.Checks[0].Passed)
			}
		})
	}
}

func TestValidateComparesWithTheBaseline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		accepted bool
		want     pipeline.Status
	}{{"accepted baseline", true, pipeline.StatusAccept}, {"no accepted baseline", false, pipeline.StatusReject}} {
		t.Run(tc.name, func(t *testing.T) {
			bare, _ := baseRepo(t, jsonTests, "TestOld")
			cfg := testConfig()
			s := playToWith(t, pipeline.RoleMerge, cfg)
			s.Groups[0].Stage = pipeline.StageAbandoned
			s.SuccessCriteria = nil
			s.Baseline = &pipeline.Baseline{Identity: pipeline.IdentityGoTestJSON, Failed: []string{"p.TestOld"}, Accepted: tc.accepted}
			s.Steps = append(s.Steps, pipeline.Step{ID: "s1/_/validate/91", Group: "_", N: 91,
				StepSpec: pipeline.StepSpec{Role: pipeline.RoleValidate}, State: pipeline.StepInFlight})
			s.StepSeq = 91
			ev, _ := executor(t, bare, cfg, "").Run(context.Background(), s, "s1/_/validate/91")
			require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
			assert.Equal(t, tc.want, ev.Result.Status, ev.Result.Summary)
			if tc.accepted {
				assert.Contains(t, string(ev.Result.Handoff), "only failures the base main already has (go test -json): p.TestOld")
			}
		})
	}
}

// A planning step that ends without a result stops its baseline rather than
// waiting for the tests: the retry takes it again.
func TestBaselineStoppedWhenTheStepFails(t *testing.T) {
	bare, _ := baseRepo(t, "#!/bin/sh\nsleep 60\n")
	cfg := testConfig()
	s, _ := pipeline.Reconcile(pipeline.Session{}, []pipeline.Event{pipeline.Started("s1", "req", "main")}, time.Now(), cfg)
	pm := s.Step(s.Lead.InFlight)
	require.True(t, pm.Baseline)
	start := time.Now()
	ev, rep := executor(t, bare, cfg, "exit 3").Run(context.Background(), s, pm.ID)
	assert.Equal(t, pipeline.EventStepFailed, ev.Kind)
	assert.Nil(t, ev.Harness)
	assert.Less(t, time.Since(start), 30*time.Second, "the 60s tests were stopped")
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "baseline not taken")
}

// TestIdentityBetweenGateAndSession: the gate's and the session's test
// identities are separate enums; each maps to the one of the same name and
// back, so a recorded baseline compares as it was taken.
func TestIdentityBetweenGateAndSession(t *testing.T) {
	for _, i := range []testgate.TestIdentity{testgate.IdentityExitStatus, testgate.IdentityGoTestJSON, testgate.IdentityJUnit} {
		s := sessionIdentity(i)
		assert.Equal(t, i.String(), s.String())
		assert.Equal(t, i, gateIdentity(s))
	}
	assert.Equal(t, pipeline.IdentityJUnit, sessionIdentity(testgate.IdentityJUnit))
}
