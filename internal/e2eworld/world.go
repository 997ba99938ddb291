// Package e2eworld is the end-to-end harness of the GitHub modes: a strict
// fake GitHub running the product's own workflow files, whose jobs run the
// bazinga binary (the test binary itself, see Main) with the scripted agent.
// The end-to-end tests live in more than one package (action, action/e2emoves)
// so that each stays well inside go test's ten minutes per package.
package e2eworld

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/bazinga-bot/bazinga/action"
	"github.com/bazinga-bot/bazinga/action/stepjob"
	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/scripted"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/server"
)

const (
	E2eOwner  = "acme"
	E2eName   = "widgets"
	E2eFull   = E2eOwner + "/" + E2eName
	E2eSecret = "e2e-webhook-secret"
	E2eBotTok = "ghs_e2e_app"
)

// The App's signing key (in production derived from its webhook secret),
// and the Action-only orchestrator's secret.
var (
	E2eSigningKey = codec.SigningKeyFromSecret([]byte("e2e-app-state-secret"))
	E2ePublicKey  = E2eSigningKey.Public().(ed25519.PublicKey)
	// As `openssl rand -hex 32` prints one (weak secrets are refused).
	E2eActionSecret  = "3b9f07c2a6e14d58b0c7e2f9a4d61b3c8e5f0a7d2c9b4e16f3a8d0c5b7e2f94a"
	E2eActionOnlyKey = codec.SigningKeyFromSecret([]byte(E2eActionSecret)).Public().(ed25519.PublicKey)
)

// The configuration the fake repository carries: a Go-free test command,
// so the gate, the harness's check and validation are real and fast.
const E2eConfig = `agent:
  command: "overridden-by-the-agent-command-input"
  timeout: 2m
tests:
  command: 'for f in *.txt; do grep -qx ok "$f" || exit 1; done'
  timeout: 1m
`

// Two groups in one phase; QA fails group A once.
const E2eScenario = `{
 "requirements": "Write a.txt and b.txt.",
 "steps": {
  "_/pm": [
   {"status": "PLANNING_COMPLETE", "summary": ["2 groups, one phase"],
    "usage": {"cost_usd": 0.42, "input_tokens": 12000, "output_tokens": 800},
    "handoff": {"plan": {"mode": "parallel", "groups": [
      {"id": "A", "name": "file a", "task": "Write a.txt saying ok, with notes.", "phase": 1},
      {"id": "B", "name": "file b", "task": "Write b.txt saying ok.", "phase": 1}],
     "success_criteria": ["a.txt and b.txt say ok"]}}},
   {"status": "BAZINGA", "summary": ["both groups merged"],
    "handoff": {"criteria": [{"criterion": "a.txt and b.txt say ok", "met": true, "evidence": "groups A and B merged; the gate checks every .txt"}]}}
  ],
  "A/developer": [
   {"status": "READY_FOR_QA", "summary": ["a.txt written"], "write": {"a.txt": "ok\n"},
    "handoff": {"files_changed": ["a.txt"], "tests": {"total": 1, "passing": 1, "failing": 0}}},
   {"status": "READY_FOR_QA", "summary": ["notes added for QA"], "write": {"a-notes.md": "a.txt says ok\n"},
    "handoff": {"files_changed": ["a-notes.md"], "tests": {"total": 1, "passing": 1, "failing": 0}}}
  ],
  "B/developer": [
   {"status": "READY_FOR_QA", "summary": ["b.txt written"], "write": {"b.txt": "ok\n"},
    "handoff": {"files_changed": ["b.txt"], "tests": {"total": 1, "passing": 1, "failing": 0}}}
  ],
  "A/qa": [
   {"status": "FAIL", "summary": ["a-notes.md is missing"], "handoff": {"failures": ["no notes for a.txt"], "tests": {"total": 1, "passing": 0, "failing": 1}}},
   {"status": "PASS", "summary": ["1/1 checks pass"], "handoff": {"tests": {"total": 1, "passing": 1, "failing": 0}}}
  ],
  "B/qa": [
   {"status": "PASS", "summary": ["1/1 checks pass"], "handoff": {"tests": {"total": 1, "passing": 1, "failing": 0}}}
  ],
  "*/tech_lead": [
   {"status": "APPROVED", "summary": ["clean"]}
  ]
 }
}`

// World is the fake GitHub, the fake Actions runner and the scripted team.
// The runner plays the REAL workflow files (examples/workflows): the fake
// reads them, decides which runs an event starts, which jobs run (their
// needs and if), when (their concurrency groups) and with which token (each
// job's permissions:); the runner plays the jobs' steps.
type World struct {
	T        *testing.T
	F        *ghfake.Fake
	Repo     *ghfake.Repo
	Exe      string
	Root     string
	AgentCmd string
	// env is added to every bazinga step's environment.
	Env []string
	// secrets and vars are the repository's, as the workflows read them
	// (${{ secrets.X }}, ${{ vars.X }}): a job sees a secret only where its
	// file passes it.
	Secrets map[string]any
	Vars    map[string]any
	// beforePublish, when set, sees (and may tamper with) the hand-over
	// the privileged job downloaded, before its bazinga step reads it.
	BeforePublish func(r ghfake.Run, handover string)
	// beforeJob, when set, runs as a job starts, before its steps.
	BeforeJob func(r ghfake.Run, job string)
	// serial runs one job at a time, as if each job had its own machine
	// (on GitHub each job is a fresh VM; here all share one).
	Serial   bool
	SerialMu sync.Mutex
	// expectFail are runs a test made fail on purpose.
	ExpectFail map[int64]bool
	// orchestrator is the login whose signed state step jobs trust; its
	// public key is given to step jobs (the BAZINGA_STATE_PUBLIC_KEY
	// variable), its secret (Action-only) only to the orchestrator's job.
	Orchestrator string
	PublicKey    ed25519.PublicKey
	// actionInputs are the bazinga action's inputs (action.yml) with
	// their defaults.
	ActionInputs map[string]string
	// oidc, when set, is the runner's OIDC token service: a job whose
	// permissions grant id-Token: write gets its request variables, as on
	// GitHub (the token exchange of the privileged jobs).
	Oidc *ghfake.OIDCIssuer
	// jobIdentity is the login the privileged jobs post results as
	// (github.job_identity); "" is github-actions[bot].
	JobIdentity string

	Mu        sync.Mutex
	Running   int
	LastIdle  time.Time
	Jobs      []JobRecord
	Artifacts map[string]string // "<run id>/<name>" → stored copy
}

type JobRecord struct {
	Run      ghfake.Run
	Job      string // the job's id in its workflow file
	Command  string // the bazinga command its action step ran ("" if none)
	Exit     int
	Started  time.Time
	Duration time.Duration
	Output   string
	Token    string
}

// The workflow files the fake reads: the real ones.
var (
	AgentWorkflowFile        = repoPath("examples/workflows/bazinga-agent.yml")
	OrchestratorWorkflowFile = repoPath("examples/workflows/bazinga.yml")
	SweepWorkflowFile        = repoPath("examples/workflows/bazinga-sweep.yml")
	// SweepWorkflow carries the Action-only schedule (its own file: GitHub
	// disables an idle public repository's scheduled workflows).
	SweepWorkflow = "bazinga-sweep.yml"
)

func NewWorld(t *testing.T) *World { return NewWorldWith(t, E2eConfig) }

// NewWorldWith is NewWorld with another .github/bazinga.yml.
func NewWorldWith(t *testing.T, config string) *World {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	root := t.TempDir()
	f := ghfake.Start(t, ghfake.Options{WebhookMode: ghfake.Async})
	repo, err := f.CreateRepo(E2eOwner, E2eName, "main")
	require.NoError(t, err)
	_, err = repo.Push(E2eOwner, "main", map[string]string{
		"README.md": "# widgets\n", "seed.txt": "ok\n", ".github/bazinga.yml": config,
	}, "Initial commit")
	require.NoError(t, err)
	f.SetPermission("alice", "write")
	require.NoError(t, f.AddWorkflowFileFrom(E2eFull, AgentWorkflowFile))
	scenario := filepath.Join(root, "scenario.json")
	require.NoError(t, os.WriteFile(scenario, []byte(E2eScenario), 0o644))
	_, err = scripted.Load(scenario)
	require.NoError(t, err)
	w := &World{T: t, F: f, Repo: repo, Exe: exe, Root: root, LastIdle: time.Now(),
		AgentCmd:     fmt.Sprintf("'%s' scripted-agent --scenario '%s' --state '%s'", exe, scenario, filepath.Join(root, "agent-state")),
		Secrets:      map[string]any{"BAZINGA_STATE_KEY": E2eActionSecret},
		Vars:         map[string]any{},
		ActionInputs: ReadActionInputs(t),
		Artifacts:    map[string]string{},
	}
	// Every request the product sent and every answer the fake gave is
	// checked against GitHub's REST API description (issue 22).
	t.Cleanup(func() { CheckOpenAPI(t, f) })
	ctx := f.Context()
	f.OnJob(func(jctx context.Context, j ghfake.JobRun) {
		select {
		case <-ctx.Done():
			return
		default:
		}
		w.PlayJob(jctx, j)
	})
	return w
}

// actionOnly installs the orchestrator workflow (Action-only mode): no App,
// the state signed with the orchestrator job's secret.
func (w *World) ActionOnly() {
	require.NoError(w.T, w.F.AddWorkflowFileFrom(E2eFull, OrchestratorWorkflowFile))
	require.NoError(w.T, w.F.AddWorkflowFileFrom(E2eFull, SweepWorkflowFile))
	w.Orchestrator, w.PublicKey = ghfake.ActionsLogin, E2eActionOnlyKey
	// The orchestrator opens the group PRs as github-actions[bot].
	require.NoError(w.T, w.F.SetActionsCanCreatePullRequests(E2eFull, true))
}

// ReadActionInputs reads the action's inputs and defaults from action.yml.
func ReadActionInputs(t *testing.T) map[string]string {
	b, err := os.ReadFile(repoPath("action.yml"))
	require.NoError(t, err)
	var a struct {
		Inputs map[string]struct {
			Default string `yaml:"default"`
		} `yaml:"inputs"`
	}
	require.NoError(t, yaml.Unmarshal(b, &a))
	out := map[string]string{}
	for name, in := range a.Inputs {
		out[name] = in.Default
	}
	return out
}

// RunStepsNotPlayed are `run:` steps of the example workflows that install
// tools on a real runner; the scripted agent needs none.
var RunStepsNotPlayed = map[string]bool{"Install the agent CLI": true}

// playJob is the fake Actions runner for one job the fake says may start:
// it starts the job (getting the job's own GITHUB_TOKEN), plays its steps
// in order with their if:, with: and Env: evaluated, and completes it with
// its steps' outputs.
func (w *World) PlayJob(ctx context.Context, j ghfake.JobRun) {
	w.Mu.Lock()
	w.Running++
	w.Mu.Unlock()
	defer func() {
		w.Mu.Lock()
		w.Running--
		w.LastIdle = time.Now()
		w.Mu.Unlock()
	}()
	if w.Serial {
		w.SerialMu.Lock()
		defer w.SerialMu.Unlock()
	}
	started, err := w.F.StartJob(j.ID)
	if err != nil {
		return // cancelled meanwhile (a concurrency group), or the fake is closing
	}
	if w.BeforeJob != nil {
		w.BeforeJob(started.Run, j.Spec.ID)
	}
	dir := filepath.Join(w.Root, "runs", strconv.FormatInt(j.RunID, 10), j.Spec.ID)
	env, err := w.F.RunEnv(started.Run, dir)
	if err != nil {
		w.T.Errorf("run %d job %s: %v", j.RunID, j.Spec.ID, err)
		_ = w.F.CompleteJob(j.ID, "failure", nil)
		return
	}
	env = append(env, "GITHUB_JOB="+j.Spec.ID, "PATH="+os.Getenv("PATH"), "HOME="+os.Getenv("HOME"), "TMPDIR="+os.TempDir())
	if w.Oidc != nil && started.Permissions["id-token"] == "write" {
		env = append(env, w.Oidc.JobEnv(started.Run)...)
	}
	w.Mu.Lock()
	vars := map[string]any{}
	for k, v := range w.Vars {
		vars[k] = v
	}
	if w.PublicKey != nil {
		vars[stepjob.EnvStatePublicKey] = codec.FormatPublicKey(w.PublicKey)
	}
	w.Mu.Unlock()
	steps := map[string]any{}
	ctxs := ghfake.Contexts{"secrets": w.Secrets, "vars": vars, "steps": steps,
		"runner": map[string]any{"temp": dir, "os": "Linux", "arch": "X64"}, "env": map[string]any{}}
	for k, v := range started.Contexts {
		ctxs[k] = v
	}
	start := time.Now()
	rec := JobRecord{Run: started.Run, Job: j.Spec.ID, Token: started.Token, Started: start}
	var out bytes.Buffer
	outputs := map[string]map[string]string{}
	failed := false
	for i, st := range j.Spec.Steps {
		run, err := ghfake.EvalCondition(st.If, ctxs, ghfake.JobStatus{Failed: failed, Cancelled: ctx.Err() != nil})
		if err != nil {
			w.T.Errorf("run %d job %s step %d: %v", j.RunID, j.Spec.ID, i, err)
			failed = true
			continue
		}
		if !run {
			continue
		}
		outFile := filepath.Join(dir, fmt.Sprintf("step-%d-output", i))
		if err := os.WriteFile(outFile, nil, 0o644); err != nil {
			w.T.Errorf("run %d: %v", j.RunID, err)
			failed = true
			break
		}
		stepEnv := append(append([]string(nil), env...), "GITHUB_OUTPUT="+outFile)
		for _, k := range SortedKeys(st.Env) {
			v, err := ghfake.InterpolateString(st.Env[k], ctxs, ghfake.JobStatus{})
			if err != nil {
				w.T.Errorf("run %d job %s env %s: %v", j.RunID, j.Spec.ID, k, err)
				failed = true
			}
			stepEnv = append(stepEnv, k+"="+v)
		}
		with := map[string]string{}
		for _, k := range SortedKeys(st.With) {
			v, err := ghfake.InterpolateString(st.With[k], ctxs, ghfake.JobStatus{})
			if err != nil {
				w.T.Errorf("run %d job %s with %s: %v", j.RunID, j.Spec.ID, k, err)
				failed = true
			}
			with[k] = v
		}
		exit := w.PlayStep(ctx, started, st, with, ctxs, stepEnv, &rec, &out)
		if st.ID != "" {
			outs := ReadOutputs(outFile)
			outputs[st.ID] = outs
			o := map[string]any{}
			for k, v := range outs {
				o[k] = v
			}
			steps[st.ID] = map[string]any{"outputs": o, "outcome": Conclusion(exit), "Conclusion": Conclusion(exit)}
		}
		if exit != 0 {
			failed = true
			if rec.Exit == 0 {
				rec.Exit = exit
			}
		}
	}
	rec.Duration, rec.Output = time.Since(start), out.String()
	w.Mu.Lock()
	w.Jobs = append(w.Jobs, rec)
	w.Mu.Unlock()
	c := "success"
	if failed {
		c = "failure"
	}
	// An error here is a job cancelled while it ran (its group's
	// cancel-in-progress): GitHub has concluded it already.
	_ = w.F.CompleteJob(j.ID, c, outputs)
}

// playStep plays one step and returns its exit code.
func (w *World) PlayStep(ctx context.Context, j ghfake.JobRun, st ghfake.StepSpec, with map[string]string, ctxs ghfake.Contexts, env []string, rec *JobRecord, out *bytes.Buffer) int {
	key := func(name string) string { return strconv.FormatInt(j.RunID, 10) + "/" + name }
	switch {
	case strings.HasPrefix(st.Uses, "actions/setup-"):
		return 0 // the tools are on this machine already
	case strings.HasPrefix(st.Uses, "actions/upload-artifact@"):
		if _, err := os.Stat(with["path"]); err != nil {
			if with["if-no-files-found"] == "error" {
				fmt.Fprintf(out, "upload-artifact: no files found at %s\n", with["path"])
				return 1
			}
			return 0
		}
		stored := filepath.Join(w.Root, "artifacts", key(with["name"]))
		if err := CopyDir(with["path"], stored); err != nil {
			fmt.Fprintf(out, "upload-artifact: %v\n", err)
			return 1
		}
		w.Mu.Lock()
		w.Artifacts[key(with["name"])] = stored
		w.Mu.Unlock()
		return 0
	case strings.HasPrefix(st.Uses, "actions/download-artifact@"):
		w.Mu.Lock()
		stored, ok := w.Artifacts[key(with["name"])]
		w.Mu.Unlock()
		if !ok {
			fmt.Fprintf(out, "download-artifact: Artifact not found for name: %s\n", with["name"])
			return 1
		}
		if err := CopyDir(stored, with["path"]); err != nil {
			fmt.Fprintf(out, "download-artifact: %v\n", err)
			return 1
		}
		if w.BeforePublish != nil {
			w.BeforePublish(j.Run, with["path"])
		}
		return 0
	case strings.HasPrefix(st.Uses, "bazinga-bot/bazinga@"):
		return w.PlayBazinga(ctx, j, with, ctxs, env, rec, out)
	case st.Uses != "":
		w.T.Errorf("run %d job %s: the fake runner cannot play %s", j.RunID, j.Spec.ID, st.Uses)
		return 1
	case RunStepsNotPlayed[st.Name]:
		return 0
	}
	script := filepath.Join(EnvValue(env, "RUNNER_TEMP"), fmt.Sprintf("script-%d.sh", time.Now().UnixNano()))
	if err := os.WriteFile(script, []byte(st.Run), 0o644); err != nil {
		fmt.Fprintf(out, "%v\n", err)
		return 1
	}
	// GitHub's bash: bash --noprofile --norc -eo pipefail {0}.
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	return ExitCode(cmd.Run())
}

// EnvValue is the last value of name in env, as exec uses it.
func EnvValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// playBazinga runs the bazinga action: the test binary's `action` with the
// INPUT_* variables GitHub sets from with: and action.yml's defaults.
func (w *World) PlayBazinga(ctx context.Context, j ghfake.JobRun, with map[string]string, ctxs ghfake.Contexts, env []string, rec *JobRecord, out *bytes.Buffer) int {
	inputs := map[string]string{}
	for name, def := range w.ActionInputs {
		v, err := ghfake.InterpolateString(def, ctxs, ghfake.JobStatus{})
		if err != nil {
			w.T.Errorf("action.yml input %s: %v", name, err)
		}
		inputs[name] = v
	}
	for k, v := range with {
		if _, ok := w.ActionInputs[k]; !ok {
			w.T.Errorf("run %d job %s: the action has no input %q", j.RunID, j.Spec.ID, k)
		}
		inputs[k] = v
	}
	rec.Command = inputs["command"]
	if rec.Command == stepjob.CommandAgent {
		// The agent CLI of the job's runner: the scripted team.
		inputs["agent-command"] = w.AgentCmd
	}
	if rec.Command != stepjob.CommandReconcile && w.Orchestrator != "" && !strings.EqualFold(w.Orchestrator, ghfake.ActionsLogin) {
		// App mode: "also set `orchestrator: <your-app-slug>[bot]` on every step".
		inputs["orchestrator"] = w.Orchestrator
	}
	for _, name := range SortedKeys(inputs) {
		env = append(env, "INPUT_"+strings.ToUpper(strings.ReplaceAll(name, " ", "_"))+"="+inputs[name])
	}
	env = append(env, w.Env...)
	cmd := exec.CommandContext(ctx, w.Exe, "action")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	return ExitCode(cmd.Run())
}

func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
		return ee.ExitCode()
	}
	return 1
}

// ReadOutputs parses a GITHUB_OUTPUT file: name=value lines and
// name<<DELIMITER blocks.
func ReadOutputs(file string) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(file)
	if err != nil {
		return out
	}
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if name, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(name, "=") {
			var val []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				val = append(val, lines[i])
			}
			out[name] = strings.Join(val, "\n")
			continue
		}
		if name, val, ok := strings.Cut(line, "="); ok {
			out[name] = val
		}
	}
	return out
}

func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func Conclusion(exit int) string {
	if exit != 0 {
		return "failure"
	}
	return "success"
}

// CopyDir copies the regular files of a directory tree, as an artifact
// upload and download would.
func CopyDir(from, to string) error {
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// IdleFor is how long nothing has run: no job played here and no workflow
// run of the fake's own (a CI taking longer than a step) still going. A
// session waiting on a running CI is waiting for its completion event, not
// for the schedule; the time counts from when the last of them was seen.
func (w *World) IdleFor() time.Duration {
	fakeBusy := false
	for _, r := range w.F.Runs() { // before w.Mu: no call into the fake holds the world's lock
		if r.Status != "completed" {
			fakeBusy = true
		}
	}
	w.Mu.Lock()
	defer w.Mu.Unlock()
	if w.Running > 0 {
		return 0
	}
	if fakeBusy {
		w.LastIdle = time.Now()
		return 0
	}
	return time.Since(w.LastIdle)
}

func (w *World) JobsCopy() []JobRecord {
	w.Mu.Lock()
	defer w.Mu.Unlock()
	out := append([]JobRecord(nil), w.Jobs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Run.ID < out[j].Run.ID })
	return out
}

// done reports whether the session Ended: the issue closed as done, or a
// terminal label other than done.
func (w *World) Ended(issue int) (bool, string) {
	labels := w.Repo.Labels(issue)
	for _, l := range labels {
		switch l {
		case "bazinga:failed", "bazinga:stopped", "bazinga:paused", "bazinga:needs-input":
			return true, l
		}
	}
	is := w.Repo.Issue(issue)
	for _, l := range labels {
		if l == "bazinga:done" && is.GetState() == "closed" {
			return true, l
		}
	}
	return false, ""
}

// wait drives the World until the session ends; idle calls onIdle (a sweep).
func (w *World) Wait(issue int, limit time.Duration, onIdle func()) string {
	// The limit catches a session that stalls, not a slow one: on a shared
	// 2-core machine running the real agent CLIs' tests beside these, the
	// fake's jobs run several times slower than alone.
	limit *= 3
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if ok, label := w.Ended(issue); ok {
			return label
		}
		if onIdle != nil && w.IdleFor() > 1500*time.Millisecond {
			onIdle()
			w.Mu.Lock()
			w.LastIdle = time.Now()
			w.Mu.Unlock()
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.Dump(issue)
	w.T.Fatalf("the session did not end within %s", limit)
	return ""
}

// settle waits for the runs still going (a job ends after its result
// comment, which may end the session).
func (w *World) Settle() {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		busy := w.IdleFor() == 0
		for _, r := range w.F.Runs() {
			if r.Status != "completed" {
				busy = true
			}
		}
		if !busy {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.T.Errorf("runs still going after the session ended")
}

// dump logs what happened, for a failing test.
func (w *World) Dump(issue int) {
	for _, j := range w.JobsCopy() {
		w.T.Logf("run %d %s %q exit %d (%s)\n%s", j.Run.ID, j.Command, j.Run.DisplayTitle, j.Exit, j.Duration.Round(time.Millisecond), j.Output)
	}
	for _, c := range w.Repo.Comments(issue) {
		w.T.Logf("comment %d by %s:\n%s", c.GetID(), c.GetUser().GetLogin(), c.GetBody())
	}
	w.T.Logf("labels %v", w.Repo.Labels(issue))
}

// assertVerified checks a verified BAZINGA on the fake's repository.
func (w *World) AssertVerified(issue int, trust codec.StateTrust) pipeline.Session {
	t := w.T
	// The session as the tracking comment holds it.
	var comments []ghapi.Comment
	for _, c := range w.Repo.Comments(issue) {
		comments = append(comments, ghapi.Comment{ID: c.GetID(), Author: c.GetUser().GetLogin(), AuthorType: c.GetUser().GetType(), Body: c.GetBody()})
	}
	repo, _ := ghapi.ParseRepo(w.Repo.FullName()) // renamed, in some tests
	st, _, err := codec.FindState(comments, repo, issue, trust)
	require.NoError(t, err)
	s := st.Session
	// The base holds both groups' work, and the tests pass on it.
	for file, want := range map[string]string{"a.txt": "ok\n", "b.txt": "ok\n", "a-notes.md": "a.txt says ok\n"} {
		got, err := w.Repo.ReadFile(s.Base, file)
		require.NoError(t, err, "%s on %s", file, s.Base)
		assert.Equal(t, want, string(got), file)
	}
	require.Equal(t, pipeline.SessionDone, s.Status, s.Reason)
	assert.Equal(t, "BAZINGA verified", s.Reason)
	require.Len(t, s.Groups, 2)
	for _, g := range s.Groups {
		assert.Equal(t, pipeline.StageMerged, g.Stage, "group %s", g.ID)
	}
	// The issue: closed, labelled done.
	assert.Equal(t, "closed", w.Repo.Issue(issue).GetState())
	assert.Contains(t, w.Repo.Labels(issue), "bazinga:done")
	assert.NotContains(t, w.Repo.Labels(issue), "bazinga:running")
	// One PR per group, merged (its head landed on main), with no label.
	prs := w.Repo.PRs()
	require.Len(t, prs, 2)
	heads := []string{}
	for _, pr := range prs {
		heads = append(heads, pr.GetHead().GetRef())
		assert.True(t, pr.GetMerged(), "PR #%d merged", pr.GetNumber())
		assert.NotContains(t, w.Repo.Labels(pr.GetNumber()), "bazinga:blocked")
	}
	sort.Strings(heads)
	assert.Equal(t, []string{"bazinga/1-A", "bazinga/1-B"}, heads)
	// The jobs reported each group's head after its steps: the engine's head
	// of a group is the head its PR merged at (human approvals bind to it).
	for _, pr := range prs {
		for _, g := range s.Groups {
			if g.Branch == pr.GetHead().GetRef() {
				assert.Equal(t, pr.GetHead().GetSHA(), g.Head, "group %s's head", g.ID)
			}
		}
	}
	// Result comments: one per step, by the job's identity; QA failed once.
	results := map[string]codec.ResultRecord{}
	where := []int{issue}
	for _, pr := range prs {
		where = append(where, pr.GetNumber())
	}
	for _, n := range where {
		for _, c := range w.Repo.Comments(n) {
			if rec, ok := codec.ParseResultComment(c.GetBody()); ok {
				author := w.JobIdentity
				if author == "" {
					author = ghfake.ActionsLogin
				}
				assert.Equal(t, author, c.GetUser().GetLogin())
				assert.NotContains(t, results, rec.Step, "one result per step")
				assert.NotEmpty(t, rec.RunURL)
				results[rec.Step] = rec
			}
		}
	}
	var done, qaFails int
	for _, st := range s.Steps {
		if st.State != pipeline.StepDone || st.Result == nil {
			continue
		}
		done++
		assert.Contains(t, results, st.ID, "result comment of %s", st.ID)
		if st.Role == pipeline.RoleQA && st.Result.Status == pipeline.StatusFail {
			qaFails++
		}
	}
	assert.Equal(t, 1, qaFails)
	assert.Equal(t, len(results), done)
	// Every step that ended with a result was claimed by a job; a claim
	// is for a step that ended (a failure a job recorded claims it too).
	claimed := map[string]bool{}
	for _, ref := range w.Repo.Refs() {
		if id, ok := strings.CutPrefix(ref, "refs/bazinga/claims/"); ok {
			claimed[id] = true
		}
	}
	for _, st := range s.Steps {
		switch st.State {
		case pipeline.StepDone:
			assert.True(t, claimed[st.ID], "step %s was claimed", st.ID)
		case pipeline.StepInFlight:
			assert.False(t, claimed[st.ID], "step %s in flight is not claimed", st.ID)
		}
		delete(claimed, st.ID)
	}
	assert.Empty(t, claimed, "claims of steps the session does not know")
	return s
}

// PlayAppMode runs a labelled issue to a verified BAZINGA with the App.
func PlayAppMode(t *testing.T, config string) (*World, pipeline.Session) {
	return PlayAppModeWith(t, config, nil)
}

// PlayAppModeWith is PlayAppMode with the World set up first.
func PlayAppModeWith(t *testing.T, config string, setup func(*World)) (*World, pipeline.Session) {
	w, b, logs := AppModeWorld(t, config, setup)
	f := w.F
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.Equal(t, 1, issue)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))

	label := w.Wait(issue, 60*time.Second, func() { _ = b.Sweep(context.Background()) })
	if label != "bazinga:done" {
		w.Dump(issue)
		t.Log(logs())
	}
	require.Equal(t, "bazinga:done", label)
	w.Settle()
	s := w.AssertVerified(issue, codec.StateTrust{PublicKey: E2ePublicKey, Authors: []string{f.BotLogin()}})
	w.AssertJobs(s)
	// The webhooks reached the server signed and were accepted.
	for _, d := range f.Deliveries() {
		assert.Equal(t, http.StatusAccepted, d.Status, "delivery %s %s", d.Event, d.ID)
	}
	return w, s
}

// AppModeWorld is a World with the App's server in front of the fake's
// webhooks; logs returns the App's log so far.
func AppModeWorld(t *testing.T, config string, setup func(*World)) (w *World, b *bot.Bot, appLog func() string) {
	w = NewWorldWith(t, config)
	if setup != nil {
		setup(w)
	}
	b, appLog = w.StartApp()
	return w, b, appLog
}

// StartApp starts the App on the world: bot.New behind server.NewServer,
// over HTTP, its installation token carrying exactly app.yml's permissions,
// receiving the fake's signed webhooks. It returns the bot and its log
// (also written to the test's log if the test fails).
func (w *World) StartApp() (*bot.Bot, func() string) {
	t, f := w.T, w.F
	require.NoError(t, f.AddAppToken(E2eBotTok, repoPath("app.yml")))
	tr := ghapi.NewTransport(http.DefaultTransport, ghapi.TransportOptions{APIPrefix: "/api/v3", Identity: "app"})
	client, err := github.NewClient(&http.Client{Transport: tr}).WithAuthToken(E2eBotTok).WithEnterpriseURLs(f.APIURL(), f.URL()+"/api/uploads/")
	require.NoError(t, err)
	gh := ghapi.New(client)
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&LockedWriter{W: &logs, Mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t.Cleanup(func() {
		if t.Failed() {
			logMu.Lock()
			t.Log(logs.String())
			logMu.Unlock()
		}
	})
	b, err := bot.New(bot.Options{Client: func(context.Context, int64) (bot.GitHub, error) { return gh, nil },
		Login: f.BotLogin(), SigningKey: E2eSigningKey, Logger: logger})
	require.NoError(t, err)
	w.Orchestrator, w.PublicKey = f.BotLogin(), E2ePublicKey
	srv, err := server.NewServer(server.Config{WebhookSecret: []byte(E2eSecret)}, b, logger)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
	})
	f.SetWebhook(hs.URL+"/webhook", E2eSecret)
	return b, func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.String()
	}
}

// AssertJobs: every step ran as exactly one run of two jobs (the
// unprivileged one, then the privileged one), which both succeeded.
func (w *World) AssertJobs(s pipeline.Session) {
	w.AssertStepJobs(s)
	// The planning step reported its usage: it reached the session's totals
	// through the hand-over, the result comment and the orchestrator.
	assert.Equal(w.T, pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 420_000, InputTokens: 12000, OutputTokens: 800}, s.Usage)
	assert.Equal(w.T, s.Usage, s.Lead.Usage)
}

// AssertStepJobs: every finished step ran as one run of its two jobs, which
// succeeded (but those expected to fail), masked their token and never
// printed it; every finished step knows its run.
func (w *World) AssertStepJobs(s pipeline.Session) {
	t := w.T
	perStep := map[string][]string{}
	for _, j := range w.JobsCopy() {
		if j.Run.Workflow != "bazinga-agent.yml" {
			continue
		}
		perStep[j.Run.Inputs["step"]] = append(perStep[j.Run.Inputs["step"]], j.Command)
		w.Mu.Lock()
		expected := w.ExpectFail[j.Run.ID]
		w.Mu.Unlock()
		if !expected && !assert.Zero(t, j.Exit, "%s job of %s", j.Command, j.Run.Inputs["step"]) {
			t.Log(j.Output)
		}
		if !expected || j.Output != "" { // a run cancelled before its first step printed nothing
			assert.Contains(t, j.Output, "::add-mask::", "the token is masked")
		}
		assert.NotContains(t, strings.ReplaceAll(j.Output, "::add-mask::"+j.Token, ""), j.Token, "the token is never printed")
	}
	for _, st := range s.Steps {
		if st.State != pipeline.StepDone {
			continue
		}
		want := []string{"agent", "publish"}
		switch st.Role {
		case pipeline.RoleMerge:
			want = []string{"gate", "land"}
		case pipeline.RoleValidate:
			want = []string{"validate", "publish"}
		}
		assert.Equal(t, want, perStep[st.ID], "jobs of %s", st.ID)
		// Every finished step knows the job run that carried it out.
		assert.Contains(t, st.RunURL, "/actions/runs/", "run of %s", st.ID)
	}
}

type LockedWriter struct {
	W  *bytes.Buffer
	Mu *sync.Mutex
}

func (l *LockedWriter) Write(p []byte) (int, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return l.W.Write(p)
}

// GithubOpenAPI is GitHub's REST API description trimmed to the fake's
// endpoints (internal/ghfake/testdata; its info names the source).
var GithubOpenAPI = repoPath("internal/ghfake/testdata/github-rest-trimmed.json")

func CheckOpenAPI(t *testing.T, f *ghfake.Fake) {
	t.Helper()
	o, err := ghfake.LoadOpenAPI(GithubOpenAPI)
	require.NoError(t, err)
	calls := f.Calls()
	for _, p := range o.Check(calls) {
		t.Errorf("OpenAPI: %s", p)
	}
	checkBodies(t, o, calls)
}

// logActionsUse logs what the session cost in GitHub Actions (BENCHMARKS.md,
// issue 22): reconciles, jobs and billed minutes (GitHub bills each job
// rounded up to a whole minute), per step.
func (w *World) LogActionsUse(s pipeline.Session) {
	var jobs, reconciles, minutes int
	for _, j := range w.JobsCopy() {
		jobs++
		minutes += int((j.Duration + time.Minute - 1) / time.Minute)
		if j.Command == "reconcile" {
			reconciles++
		}
	}
	steps := len(s.Steps)
	if steps == 0 {
		steps = 1
	}
	w.T.Logf("actions use: %d steps, %d jobs, %d reconciles (%.2f per step), %d billed minutes (%.2f per step)",
		len(s.Steps), jobs, reconciles, float64(reconciles)/float64(steps), minutes, float64(minutes)/float64(steps))
}

// sessionNow reads the session from the issue's tracking comment.
func (w *World) SessionNow(issue int) (pipeline.Session, bool) {
	return w.SessionTrusting(issue, codec.StateTrust{PublicKey: w.PublicKey, Authors: []string{w.Orchestrator}})
}

// SessionTrusting is the session of the issue's tracking comment, read as
// the product reads it with trust (for callers that know the orchestrator
// before the world has set it).
func (w *World) SessionTrusting(issue int, trust codec.StateTrust) (pipeline.Session, bool) {
	var comments []ghapi.Comment
	for _, c := range w.Repo.Comments(issue) {
		comments = append(comments, ghapi.Comment{ID: c.GetID(), Author: c.GetUser().GetLogin(), AuthorType: c.GetUser().GetType(), Body: c.GetBody()})
	}
	st, _, err := codec.FindState(comments, ghapi.RepoRef{Owner: E2eOwner, Name: E2eName}, issue, trust)
	return st.Session, err == nil
}

// RequireSession is SessionTrusting for a tracking comment that must hold a
// session.
func (w *World) RequireSession(issue int, trust codec.StateTrust) pipeline.Session {
	w.T.Helper()
	s, ok := w.SessionTrusting(issue, trust)
	require.True(w.T, ok, "the tracking comment holds a session")
	return s
}

// waitSession waits until the session satisfies ok.
func (w *World) WaitSession(issue int, ok func(pipeline.Session) bool) bool {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if s, found := w.SessionNow(issue); found && ok(s) {
			return true
		}
		time.Sleep(30 * time.Millisecond)
	}
	return false
}

// prOf returns the number of a group branch's pull request.
func (w *World) PrOf(branch string) int {
	for _, p := range w.Repo.PRs() {
		if p.GetHead().GetRef() == branch {
			return p.GetNumber()
		}
	}
	return 0
}

// repoPath is a file of the repository, from the test package's directory
// (a test binary runs there): the directory above it holding go.mod. The
// paths are package variables, computed in every process of the binary.
func repoPath(rel string) string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, rel)
		}
		up := filepath.Dir(dir)
		if up == dir {
			// The test binary re-run as a job's process (Main), in a
			// working copy outside the repository: it reads none of
			// these files.
			return rel
		}
		dir = up
	}
}

// Main is the TestMain of a package of end-to-end tests: the test binary
// doubles as the bazinga binary (action and the scripted agent, run as
// subprocesses by the fake Actions runner).
func Main(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "action":
			os.Exit(action.Main(context.Background(), os.Args[2:], os.Stdout, os.Stderr))
		case "scripted-agent":
			os.Exit(scripted.Main(os.Args[2:], os.Stdout, os.Stderr))
		}
	}
	flag.Parse()
	// The end-to-end sessions mostly wait (for the fake's runs and the
	// jobs' processes): more of them at once than a 2-core machine's
	// GOMAXPROCS keeps a package well inside go test's ten minutes. An
	// explicit -parallel wins.
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit && runtime.GOMAXPROCS(0) < 4 {
		_ = flag.Set("test.parallel", "4")
	}
	os.Exit(m.Run())
}
