package stepexec

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/agent"
	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
)

func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// fixture is a bare repository with main, and a session whose group A has a
// step of the given role in flight.
type fixture struct {
	bare string
	s    pipeline.Session
}

func newFixture(t *testing.T, pathRole pipeline.Role) *fixture {
	t.Helper()
	work := t.TempDir()
	gitCLI(t, work, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(work, "ok.sh"), []byte("#!/bin/sh\ntest ! -f broken\n"), 0o755))
	gitCLI(t, work, "add", "-A")
	gitCLI(t, work, "commit", "-q", "-m", "init")
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitCLI(t, work, "clone", "-q", "--bare", ".", bare)
	f := &fixture{bare: bare}
	f.s = playTo(t, pathRole)
	return f
}

// playTo runs the engine until group A has a step of role in flight.
func playTo(t *testing.T, role pipeline.Role) pipeline.Session {
	cfg := pipeline.DefaultConfig()
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

func (f *fixture) exec(t *testing.T, agentScript string) *Executor {
	return f.execWith(t, agentScript, agent.RunnerConfig{Timeout: time.Minute})
}

// execWith is exec with the runner's timeout and grace given.
func (f *fixture) execWith(t *testing.T, agentScript string, rc agent.RunnerConfig) *Executor {
	cfg := pipeline.DefaultConfig()
	cfg.Tests.Command = "./ok.sh"
	e := &Executor{Remote: gitops.Remote{URL: f.bare}, Config: cfg, TempDir: t.TempDir()}
	if agentScript != "" {
		p := filepath.Join(t.TempDir(), "agent.sh")
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+agentScript), 0o755))
		rc.Command = p
		run, err := agent.NewRunner(rc)
		require.NoError(t, err)
		e.Runner = run
	}
	return e
}

func TestReadyClaimIsCheckedByTheHarness(t *testing.T) {
	f := newFixture(t, pipeline.RoleDeveloper)
	e := f.exec(t, `touch broken; echo '{"status":"READY_FOR_QA","summary":["all green, trust me"]}'`)
	ev, rep := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
	require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
	assert.Equal(t, pipeline.StatusPartial, ev.Result.Status)
	assert.Contains(t, ev.Result.Summary[0], "harness: the harness ran the tests after the READY_FOR_QA claim")
	assert.Contains(t, string(ev.Result.Handoff), `"claimed":"READY_FOR_QA"`)
	assert.NotEmpty(t, rep.Tests)
	// The work is still pushed, so the next developer continues from it.
	assert.NotEmpty(t, gitCLI(t, f.bare, "ls-tree", "--name-only", "bazinga/s1-A", "broken"))
}

func TestReadyClaimThatPassesIsPushedWithTheStepTrailer(t *testing.T) {
	f := newFixture(t, pipeline.RoleDeveloper)
	e := f.exec(t, `echo hi > hello.txt; echo '{"status":"READY_FOR_QA","summary":["hello"],"handoff":{"files_changed":["hello.txt"]}}'`)
	id := f.s.Groups[0].InFlight
	ev, rep := e.Run(context.Background(), f.s, id)
	require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
	assert.Equal(t, pipeline.StatusReadyForQA, ev.Result.Status)
	assert.Equal(t, []string{"hello.txt"}, rep.Files)
	assert.Contains(t, gitCLI(t, f.bare, "log", "-1", "--format=%B", "bazinga/s1-A"), "Bazinga-Step: "+id)
}

func TestWorkflowChangesAreARevision(t *testing.T) {
	f := newFixture(t, pipeline.RoleDeveloper)
	e := f.exec(t, `mkdir -p .github/workflows; echo 'on: push' > .github/workflows/x.yml; echo 'Status: READY_FOR_REVIEW'`)
	ev, _ := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
	require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
	assert.Equal(t, pipeline.StatusPartial, ev.Result.Status)
	assert.Contains(t, ev.Result.Summary[0], ".github/workflows/x.yml")
	assert.NotContains(t, gitCLI(t, f.bare, "ls-tree", "-r", "--name-only", "bazinga/s1-A"), ".github/workflows", "nothing under workflows reached the remote")
}

func TestAgentWithoutResultIsAFailure(t *testing.T) {
	f := newFixture(t, pipeline.RoleDeveloper)
	e := f.exec(t, `exit 3`)
	ev, _ := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
	assert.Equal(t, pipeline.EventStepFailed, ev.Kind)
	assert.Contains(t, ev.Reason, "no result: the agent exited with code 3")
}

func TestMergeStep(t *testing.T) {
	f := newFixture(t, pipeline.RoleMerge)
	// Put work on the group branch first.
	work := t.TempDir()
	gitCLI(t, work, "clone", "-q", f.bare, ".")
	gitCLI(t, work, "checkout", "-q", "-b", "bazinga/s1-A")
	require.NoError(t, os.WriteFile(filepath.Join(work, "a.txt"), []byte("a\n"), 0o644))
	gitCLI(t, work, "add", "-A")
	gitCLI(t, work, "commit", "-q", "-m", "A")
	gitCLI(t, work, "push", "-q", "origin", "bazinga/s1-A")
	e := f.exec(t, "")
	ev, _ := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
	require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
	assert.Equal(t, pipeline.StatusMergeSuccess, ev.Result.Status)
	assert.Contains(t, string(ev.Result.Handoff), "merge_commit")
	assert.Equal(t, "a.txt\nok.sh", gitCLI(t, f.bare, "ls-tree", "--name-only", "main"))
}

func TestValidateRejectsWhatIsNotTrue(t *testing.T) {
	f := newFixture(t, pipeline.RoleMerge)
	s := f.s
	// Pretend the engine believed A merged and the pm claimed BAZINGA without evidence.
	s.Groups[0].Stage = pipeline.StageMerged
	s.Steps = append(s.Steps,
		pipeline.Step{ID: "s1/_/pm/90", Group: "_", N: 90, StepSpec: pipeline.StepSpec{Role: pipeline.RolePM}, State: pipeline.StepDone,
			Result: &pipeline.Result{Status: pipeline.StatusBazinga, Handoff: json.RawMessage(`{"criteria":[{"criterion":"It works","met":true,"evidence":""}]}`)}},
		pipeline.Step{ID: "s1/_/validate/91", Group: "_", N: 91, StepSpec: pipeline.StepSpec{Role: pipeline.RoleValidate, From: "s1/_/pm/90"}, State: pipeline.StepInFlight})
	s.StepSeq = 91
	e := f.exec(t, "")
	ev, _ := e.Run(context.Background(), s, "s1/_/validate/91")
	require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
	assert.Equal(t, pipeline.StatusReject, ev.Result.Status)
	var h struct{ Failed []string }
	require.NoError(t, json.Unmarshal(ev.Result.Handoff, &h))
	assert.Contains(t, strings.Join(h.Failed, "\n"), "group A: branch bazinga/s1-A is missing")
	assert.Contains(t, strings.Join(h.Failed, "\n"), `criterion "it works": claimed met without evidence`)
}

// A developer that runs out of time gets SIGTERM and the grace to save its
// work; the harness commits what the working copy holds and reports PARTIAL,
// so the next developer step continues from it.
func TestTimedOutDeveloperKeepsItsWork(t *testing.T) {
	tests := []struct {
		name        string
		role        pipeline.Role
		script      string
		wantSummary []string
		wantFile    string
		killed      bool
	}{
		{
			name: "traps SIGTERM, saves and exits",
			role: pipeline.RoleDeveloper,
			script: `echo started > started.txt
trap 'echo "half of it" > progress.txt; exit 0' TERM
while :; do sleep 0.05; done`,
			wantSummary: []string{"harness: timed out after 400ms; partial work committed"},
			wantFile:    "progress.txt",
		},
		{
			name: "writes a result in its grace",
			role: pipeline.RoleDeveloper,
			script: `trap 'echo done > a.txt; echo "{\"status\":\"READY_FOR_QA\",\"summary\":[\"a.txt written\"],\"handoff\":{\"next\":\"b.txt\"}}" > "$BAZINGA_RESULT_FILE"; exit 0' TERM
while :; do sleep 0.05; done`,
			wantSummary: []string{"harness: timed out after 400ms; partial work committed", "a.txt written"},
			wantFile:    "a.txt",
		},
		{
			name: "ignores SIGTERM and is killed",
			role: pipeline.RoleSenior,
			script: `trap '' TERM
echo some > work.txt
while :; do sleep 0.05; done`,
			wantSummary: []string{"harness: timed out after 400ms (killed after the grace); partial work committed"},
			wantFile:    "work.txt",
			killed:      true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, pipeline.RoleDeveloper)
			s := f.s
			if tt.role == pipeline.RoleSenior {
				s.Step(s.Groups[0].InFlight).Role = pipeline.RoleSenior
			}
			e := f.execWith(t, tt.script, agent.RunnerConfig{Timeout: 400 * time.Millisecond, KillGrace: time.Second})
			id := s.Groups[0].InFlight
			start := time.Now()
			ev, rep := e.Run(context.Background(), s, id)
			assert.Less(t, time.Since(start), 20*time.Second)
			require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
			assert.Equal(t, pipeline.StatusPartial, ev.Result.Status)
			assert.Equal(t, tt.wantSummary, ev.Result.Summary)
			var h map[string]any
			require.NoError(t, json.Unmarshal(ev.Result.Handoff, &h))
			assert.Equal(t, true, h["timed_out"])
			assert.Contains(t, h["harness"], "partial work committed")
			assert.Empty(t, rep.Tests, "a step cut short is not tested")
			// The work reached the group branch, with the step's trailer.
			assert.Equal(t, tt.wantFile, gitCLI(t, f.bare, "ls-tree", "--name-only", "bazinga/s1-A", tt.wantFile))
			msg := gitCLI(t, f.bare, "log", "-1", "--format=%B", "bazinga/s1-A")
			assert.Contains(t, msg, "Bazinga-Step: "+id)
			assert.Contains(t, msg, "partial work committed")
			if tt.name == "writes a result in its grace" {
				assert.Equal(t, "READY_FOR_QA", h["claimed"])
				assert.Equal(t, map[string]any{"next": "b.txt"}, h["agent_handoff"])
			}
		})
	}
}

// Out of time with no change and no result is a failed attempt (retried), as
// is a timeout of a role that does not implement.
func TestTimedOutWithoutWorkIsAFailure(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		role         pipeline.Role
		want         string
	}{
		{"developer without changes", `while :; do sleep 0.05; done`, pipeline.RoleDeveloper,
			"the agent timed out after 300ms without a result; no changes"},
		{"tech lead", `echo x > review-notes.txt; while :; do sleep 0.05; done`, pipeline.RoleTechLead,
			"the agent timed out after 300ms without a result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.role)
			e := f.execWith(t, tc.script, agent.RunnerConfig{Timeout: 300 * time.Millisecond, KillGrace: time.Second})
			ev, _ := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
			assert.Equal(t, pipeline.EventStepFailed, ev.Kind)
			assert.Equal(t, tc.want, ev.Reason)
		})
	}
}

// A result written in the grace without any change is still reported, as
// PARTIAL: there was nothing to commit.
func TestTimedOutWithAResultButNoChange(t *testing.T) {
	f := newFixture(t, pipeline.RoleDeveloper)
	e := f.execWith(t, `trap 'echo "{\"status\":\"PARTIAL\",\"summary\":[\"read the code, no edits yet\"]}" > "$BAZINGA_RESULT_FILE"; exit 0' TERM
while :; do sleep 0.05; done`, agent.RunnerConfig{Timeout: 300 * time.Millisecond, KillGrace: 5 * time.Second})
	ev, _ := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
	require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
	assert.Equal(t, pipeline.StatusPartial, ev.Result.Status)
	assert.Equal(t, []string{"harness: timed out after 300ms; no changes to commit", "read the code, no edits yet"}, ev.Result.Summary)
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute: "30m", time.Hour: "1h", 90 * time.Minute: "1h30m", 10 * time.Second: "10s",
		300 * time.Millisecond: "300ms", time.Hour + time.Second: "1h0m1s", 2*time.Minute + 30*time.Second: "2m30s",
	} {
		assert.Equal(t, want, config.ShortDuration(d), d.String())
	}
}
