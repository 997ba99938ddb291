package action_test

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
	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/scripted"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/server"
)

// The test binary doubles as the bazinga binary: `action` and the
// scripted agent, run as subprocesses by the fake Actions runner.
func TestMain(m *testing.M) {
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
	// GOMAXPROCS keeps the package well inside go test's ten minutes.
	// An explicit -parallel wins.
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit && runtime.GOMAXPROCS(0) < 4 {
		_ = flag.Set("test.parallel", "4")
	}
	os.Exit(m.Run())
}

const (
	e2eOwner  = "acme"
	e2eName   = "widgets"
	e2eFull   = e2eOwner + "/" + e2eName
	e2eSecret = "e2e-webhook-secret"
	e2eBotTok = "ghs_e2e_app"
)

// The App's signing key (in production derived from its webhook secret),
// and the Action-only orchestrator's secret.
var (
	e2eSigningKey = codec.SigningKeyFromSecret([]byte("e2e-app-state-secret"))
	e2ePublicKey  = e2eSigningKey.Public().(ed25519.PublicKey)
	// As `openssl rand -hex 32` prints one (weak secrets are refused).
	e2eActionSecret  = "3b9f07c2a6e14d58b0c7e2f9a4d61b3c8e5f0a7d2c9b4e16f3a8d0c5b7e2f94a"
	e2eActionOnlyKey = codec.SigningKeyFromSecret([]byte(e2eActionSecret)).Public().(ed25519.PublicKey)
)

// The configuration the fake repository carries: a Go-free test command,
// so the gate, the harness's check and validation are real and fast.
const e2eConfig = `agent:
  command: "overridden-by-the-agent-command-input"
  timeout: 2m
tests:
  command: 'for f in *.txt; do grep -qx ok "$f" || exit 1; done'
  timeout: 1m
`

// Two groups in one phase; QA fails group A once.
const e2eScenario = `{
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

// world is the fake GitHub, the fake Actions runner and the scripted team.
// The runner plays the REAL workflow files (examples/workflows): the fake
// reads them, decides which runs an event starts, which jobs run (their
// needs and if), when (their concurrency groups) and with which token (each
// job's permissions:); the runner plays the jobs' steps.
type world struct {
	t        *testing.T
	f        *ghfake.Fake
	repo     *ghfake.Repo
	exe      string
	root     string
	agentCmd string
	// env is added to every bazinga step's environment.
	env []string
	// secrets and vars are the repository's, as the workflows read them
	// (${{ secrets.X }}, ${{ vars.X }}): a job sees a secret only where its
	// file passes it.
	secrets map[string]any
	vars    map[string]any
	// beforePublish, when set, sees (and may tamper with) the hand-over
	// the privileged job downloaded, before its bazinga step reads it.
	beforePublish func(r ghfake.Run, handover string)
	// beforeJob, when set, runs as a job starts, before its steps.
	beforeJob func(r ghfake.Run, job string)
	// serial runs one job at a time, as if each job had its own machine
	// (on GitHub each job is a fresh VM; here all share one).
	serial   bool
	serialMu sync.Mutex
	// expectFail are runs a test made fail on purpose.
	expectFail map[int64]bool
	// orchestrator is the login whose signed state step jobs trust; its
	// public key is given to step jobs (the BAZINGA_STATE_PUBLIC_KEY
	// variable), its secret (Action-only) only to the orchestrator's job.
	orchestrator string
	publicKey    ed25519.PublicKey
	// actionInputs are the bazinga action's inputs (action.yml) with
	// their defaults.
	actionInputs map[string]string
	// oidc, when set, is the runner's OIDC token service: a job whose
	// permissions grant id-token: write gets its request variables, as on
	// GitHub (the token exchange of the privileged jobs).
	oidc *ghfake.OIDCIssuer
	// jobIdentity is the login the privileged jobs post results as
	// (github.job_identity); "" is github-actions[bot].
	jobIdentity string

	mu        sync.Mutex
	running   int
	lastIdle  time.Time
	jobs      []jobRecord
	artifacts map[string]string // "<run id>/<name>" → stored copy
}

type jobRecord struct {
	run      ghfake.Run
	job      string // the job's id in its workflow file
	command  string // the bazinga command its action step ran ("" if none)
	exit     int
	started  time.Time
	duration time.Duration
	output   string
	token    string
}

// The workflow files the fake reads: the real ones.
const (
	agentWorkflowFile        = "../examples/workflows/bazinga-agent.yml"
	orchestratorWorkflowFile = "../examples/workflows/bazinga.yml"
	sweepWorkflowFile        = "../examples/workflows/bazinga-sweep.yml"
	// sweepWorkflow carries the Action-only schedule (its own file: GitHub
	// disables an idle public repository's scheduled workflows).
	sweepWorkflow = "bazinga-sweep.yml"
)

func newWorld(t *testing.T) *world { return newWorldWith(t, e2eConfig) }

// newWorldWith is newWorld with another .github/bazinga.yml.
func newWorldWith(t *testing.T, config string) *world {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	root := t.TempDir()
	f := ghfake.Start(t, ghfake.Options{WebhookMode: ghfake.Async})
	repo, err := f.CreateRepo(e2eOwner, e2eName, "main")
	require.NoError(t, err)
	_, err = repo.Push(e2eOwner, "main", map[string]string{
		"README.md": "# widgets\n", "seed.txt": "ok\n", ".github/bazinga.yml": config,
	}, "Initial commit")
	require.NoError(t, err)
	f.SetPermission("alice", "write")
	require.NoError(t, f.AddWorkflowFileFrom(e2eFull, agentWorkflowFile))
	scenario := filepath.Join(root, "scenario.json")
	require.NoError(t, os.WriteFile(scenario, []byte(e2eScenario), 0o644))
	_, err = scripted.Load(scenario)
	require.NoError(t, err)
	w := &world{t: t, f: f, repo: repo, exe: exe, root: root, lastIdle: time.Now(),
		agentCmd:     fmt.Sprintf("'%s' scripted-agent --scenario '%s' --state '%s'", exe, scenario, filepath.Join(root, "agent-state")),
		secrets:      map[string]any{"BAZINGA_STATE_KEY": e2eActionSecret},
		vars:         map[string]any{},
		actionInputs: readActionInputs(t),
		artifacts:    map[string]string{},
	}
	// Every request the product sent and every answer the fake gave is
	// checked against GitHub's REST API description (issue 22).
	t.Cleanup(func() { checkOpenAPI(t, f) })
	ctx := f.Context()
	f.OnJob(func(jctx context.Context, j ghfake.JobRun) {
		select {
		case <-ctx.Done():
			return
		default:
		}
		w.playJob(jctx, j)
	})
	return w
}

// actionOnly installs the orchestrator workflow (Action-only mode): no App,
// the state signed with the orchestrator job's secret.
func (w *world) actionOnly() {
	require.NoError(w.t, w.f.AddWorkflowFileFrom(e2eFull, orchestratorWorkflowFile))
	require.NoError(w.t, w.f.AddWorkflowFileFrom(e2eFull, sweepWorkflowFile))
	w.orchestrator, w.publicKey = ghfake.ActionsLogin, e2eActionOnlyKey
	// The orchestrator opens the group PRs as github-actions[bot].
	require.NoError(w.t, w.f.SetActionsCanCreatePullRequests(e2eFull, true))
}

// readActionInputs reads the action's inputs and defaults from action.yml.
func readActionInputs(t *testing.T) map[string]string {
	b, err := os.ReadFile("../action.yml")
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

// runStepsNotPlayed are `run:` steps of the example workflows that install
// tools on a real runner; the scripted agent needs none.
var runStepsNotPlayed = map[string]bool{"Install the agent CLI": true}

// playJob is the fake Actions runner for one job the fake says may start:
// it starts the job (getting the job's own GITHUB_TOKEN), plays its steps
// in order with their if:, with: and env: evaluated, and completes it with
// its steps' outputs.
func (w *world) playJob(ctx context.Context, j ghfake.JobRun) {
	w.mu.Lock()
	w.running++
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.running--
		w.lastIdle = time.Now()
		w.mu.Unlock()
	}()
	if w.serial {
		w.serialMu.Lock()
		defer w.serialMu.Unlock()
	}
	started, err := w.f.StartJob(j.ID)
	if err != nil {
		return // cancelled meanwhile (a concurrency group), or the fake is closing
	}
	if w.beforeJob != nil {
		w.beforeJob(started.Run, j.Spec.ID)
	}
	dir := filepath.Join(w.root, "runs", strconv.FormatInt(j.RunID, 10), j.Spec.ID)
	env, err := w.f.RunEnv(started.Run, dir)
	if err != nil {
		w.t.Errorf("run %d job %s: %v", j.RunID, j.Spec.ID, err)
		_ = w.f.CompleteJob(j.ID, "failure", nil)
		return
	}
	env = append(env, "GITHUB_JOB="+j.Spec.ID, "PATH="+os.Getenv("PATH"), "HOME="+os.Getenv("HOME"), "TMPDIR="+os.TempDir())
	if w.oidc != nil && started.Permissions["id-token"] == "write" {
		env = append(env, w.oidc.JobEnv(started.Run)...)
	}
	w.mu.Lock()
	vars := map[string]any{}
	for k, v := range w.vars {
		vars[k] = v
	}
	if w.publicKey != nil {
		vars[action.EnvStatePublicKey] = codec.FormatPublicKey(w.publicKey)
	}
	w.mu.Unlock()
	steps := map[string]any{}
	ctxs := ghfake.Contexts{"secrets": w.secrets, "vars": vars, "steps": steps,
		"runner": map[string]any{"temp": dir, "os": "Linux", "arch": "X64"}, "env": map[string]any{}}
	for k, v := range started.Contexts {
		ctxs[k] = v
	}
	start := time.Now()
	rec := jobRecord{run: started.Run, job: j.Spec.ID, token: started.Token, started: start}
	var out bytes.Buffer
	outputs := map[string]map[string]string{}
	failed := false
	for i, st := range j.Spec.Steps {
		run, err := ghfake.EvalCondition(st.If, ctxs, ghfake.JobStatus{Failed: failed, Cancelled: ctx.Err() != nil})
		if err != nil {
			w.t.Errorf("run %d job %s step %d: %v", j.RunID, j.Spec.ID, i, err)
			failed = true
			continue
		}
		if !run {
			continue
		}
		outFile := filepath.Join(dir, fmt.Sprintf("step-%d-output", i))
		if err := os.WriteFile(outFile, nil, 0o644); err != nil {
			w.t.Errorf("run %d: %v", j.RunID, err)
			failed = true
			break
		}
		stepEnv := append(append([]string(nil), env...), "GITHUB_OUTPUT="+outFile)
		for _, k := range sortedKeys(st.Env) {
			v, err := ghfake.InterpolateString(st.Env[k], ctxs, ghfake.JobStatus{})
			if err != nil {
				w.t.Errorf("run %d job %s env %s: %v", j.RunID, j.Spec.ID, k, err)
				failed = true
			}
			stepEnv = append(stepEnv, k+"="+v)
		}
		with := map[string]string{}
		for _, k := range sortedKeys(st.With) {
			v, err := ghfake.InterpolateString(st.With[k], ctxs, ghfake.JobStatus{})
			if err != nil {
				w.t.Errorf("run %d job %s with %s: %v", j.RunID, j.Spec.ID, k, err)
				failed = true
			}
			with[k] = v
		}
		exit := w.playStep(ctx, started, st, with, ctxs, stepEnv, &rec, &out)
		if st.ID != "" {
			outs := readOutputs(outFile)
			outputs[st.ID] = outs
			o := map[string]any{}
			for k, v := range outs {
				o[k] = v
			}
			steps[st.ID] = map[string]any{"outputs": o, "outcome": conclusion(exit), "conclusion": conclusion(exit)}
		}
		if exit != 0 {
			failed = true
			if rec.exit == 0 {
				rec.exit = exit
			}
		}
	}
	rec.duration, rec.output = time.Since(start), out.String()
	w.mu.Lock()
	w.jobs = append(w.jobs, rec)
	w.mu.Unlock()
	c := "success"
	if failed {
		c = "failure"
	}
	// An error here is a job cancelled while it ran (its group's
	// cancel-in-progress): GitHub has concluded it already.
	_ = w.f.CompleteJob(j.ID, c, outputs)
}

// playStep plays one step and returns its exit code.
func (w *world) playStep(ctx context.Context, j ghfake.JobRun, st ghfake.StepSpec, with map[string]string, ctxs ghfake.Contexts, env []string, rec *jobRecord, out *bytes.Buffer) int {
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
		stored := filepath.Join(w.root, "artifacts", key(with["name"]))
		if err := copyDir(with["path"], stored); err != nil {
			fmt.Fprintf(out, "upload-artifact: %v\n", err)
			return 1
		}
		w.mu.Lock()
		w.artifacts[key(with["name"])] = stored
		w.mu.Unlock()
		return 0
	case strings.HasPrefix(st.Uses, "actions/download-artifact@"):
		w.mu.Lock()
		stored, ok := w.artifacts[key(with["name"])]
		w.mu.Unlock()
		if !ok {
			fmt.Fprintf(out, "download-artifact: Artifact not found for name: %s\n", with["name"])
			return 1
		}
		if err := copyDir(stored, with["path"]); err != nil {
			fmt.Fprintf(out, "download-artifact: %v\n", err)
			return 1
		}
		if w.beforePublish != nil {
			w.beforePublish(j.Run, with["path"])
		}
		return 0
	case strings.HasPrefix(st.Uses, "bazinga-bot/bazinga@"):
		return w.playBazinga(ctx, j, with, ctxs, env, rec, out)
	case st.Uses != "":
		w.t.Errorf("run %d job %s: the fake runner cannot play %s", j.RunID, j.Spec.ID, st.Uses)
		return 1
	case runStepsNotPlayed[st.Name]:
		return 0
	}
	script := filepath.Join(envValue(env, "RUNNER_TEMP"), fmt.Sprintf("script-%d.sh", time.Now().UnixNano()))
	if err := os.WriteFile(script, []byte(st.Run), 0o644); err != nil {
		fmt.Fprintf(out, "%v\n", err)
		return 1
	}
	// GitHub's bash: bash --noprofile --norc -eo pipefail {0}.
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	return exitCode(cmd.Run())
}

// envValue is the last value of name in env, as exec uses it.
func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// playBazinga runs the bazinga action: the test binary's `action` with the
// INPUT_* variables GitHub sets from with: and action.yml's defaults.
func (w *world) playBazinga(ctx context.Context, j ghfake.JobRun, with map[string]string, ctxs ghfake.Contexts, env []string, rec *jobRecord, out *bytes.Buffer) int {
	inputs := map[string]string{}
	for name, def := range w.actionInputs {
		v, err := ghfake.InterpolateString(def, ctxs, ghfake.JobStatus{})
		if err != nil {
			w.t.Errorf("action.yml input %s: %v", name, err)
		}
		inputs[name] = v
	}
	for k, v := range with {
		if _, ok := w.actionInputs[k]; !ok {
			w.t.Errorf("run %d job %s: the action has no input %q", j.RunID, j.Spec.ID, k)
		}
		inputs[k] = v
	}
	rec.command = inputs["command"]
	if rec.command == action.CommandAgent {
		// The agent CLI of the job's runner: the scripted team.
		inputs["agent-command"] = w.agentCmd
	}
	if rec.command != action.CommandReconcile && w.orchestrator != "" && !strings.EqualFold(w.orchestrator, ghfake.ActionsLogin) {
		// App mode: "also set `orchestrator: <your-app-slug>[bot]` on every step".
		inputs["orchestrator"] = w.orchestrator
	}
	for _, name := range sortedKeys(inputs) {
		env = append(env, "INPUT_"+strings.ToUpper(strings.ReplaceAll(name, " ", "_"))+"="+inputs[name])
	}
	env = append(env, w.env...)
	cmd := exec.CommandContext(ctx, w.exe, "action")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	return exitCode(cmd.Run())
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
		return ee.ExitCode()
	}
	return 1
}

// readOutputs parses a GITHUB_OUTPUT file: name=value lines and
// name<<DELIMITER blocks.
func readOutputs(file string) map[string]string {
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func conclusion(exit int) string {
	if exit != 0 {
		return "failure"
	}
	return "success"
}

// copyDir copies the regular files of a directory tree, as an artifact
// upload and download would.
func copyDir(from, to string) error {
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

func (w *world) idleFor() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running > 0 {
		return 0
	}
	return time.Since(w.lastIdle)
}

func (w *world) jobsCopy() []jobRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := append([]jobRecord(nil), w.jobs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].run.ID < out[j].run.ID })
	return out
}

// done reports whether the session ended: the issue closed as done, or a
// terminal label other than done.
func (w *world) ended(issue int) (bool, string) {
	labels := w.repo.Labels(issue)
	for _, l := range labels {
		switch l {
		case "bazinga:failed", "bazinga:stopped", "bazinga:paused", "bazinga:needs-input":
			return true, l
		}
	}
	is := w.repo.Issue(issue)
	for _, l := range labels {
		if l == "bazinga:done" && is.GetState() == "closed" {
			return true, l
		}
	}
	return false, ""
}

// wait drives the world until the session ends; idle calls onIdle (a sweep).
func (w *world) wait(issue int, limit time.Duration, onIdle func()) string {
	// The limit catches a session that stalls, not a slow one: on a shared
	// 2-core machine running the real agent CLIs' tests beside these, the
	// fake's jobs run several times slower than alone.
	limit *= 3
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if ok, label := w.ended(issue); ok {
			return label
		}
		if onIdle != nil && w.idleFor() > 1500*time.Millisecond {
			onIdle()
			w.mu.Lock()
			w.lastIdle = time.Now()
			w.mu.Unlock()
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.dump(issue)
	w.t.Fatalf("the session did not end within %s", limit)
	return ""
}

// settle waits for the runs still going (a job ends after its result
// comment, which may end the session).
func (w *world) settle() {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		busy := w.idleFor() == 0
		for _, r := range w.f.Runs() {
			if r.Status != "completed" {
				busy = true
			}
		}
		if !busy {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.t.Errorf("runs still going after the session ended")
}

// dump logs what happened, for a failing test.
func (w *world) dump(issue int) {
	for _, j := range w.jobsCopy() {
		w.t.Logf("run %d %s %q exit %d (%s)\n%s", j.run.ID, j.command, j.run.DisplayTitle, j.exit, j.duration.Round(time.Millisecond), j.output)
	}
	for _, c := range w.repo.Comments(issue) {
		w.t.Logf("comment %d by %s:\n%s", c.GetID(), c.GetUser().GetLogin(), c.GetBody())
	}
	w.t.Logf("labels %v", w.repo.Labels(issue))
}

// assertVerified checks a verified BAZINGA on the fake's repository.
func (w *world) assertVerified(issue int, trust codec.StateTrust) pipeline.Session {
	t := w.t
	// The session as the tracking comment holds it.
	var comments []ghapi.Comment
	for _, c := range w.repo.Comments(issue) {
		comments = append(comments, ghapi.Comment{ID: c.GetID(), Author: c.GetUser().GetLogin(), AuthorType: c.GetUser().GetType(), Body: c.GetBody()})
	}
	repo, _ := ghapi.ParseRepo(w.repo.FullName()) // renamed, in some tests
	st, _, err := codec.FindState(comments, repo, issue, trust)
	require.NoError(t, err)
	s := st.Session
	// The base holds both groups' work, and the tests pass on it.
	for file, want := range map[string]string{"a.txt": "ok\n", "b.txt": "ok\n", "a-notes.md": "a.txt says ok\n"} {
		got, err := w.repo.ReadFile(s.Base, file)
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
	assert.Equal(t, "closed", w.repo.Issue(issue).GetState())
	assert.Contains(t, w.repo.Labels(issue), "bazinga:done")
	assert.NotContains(t, w.repo.Labels(issue), "bazinga:running")
	// One PR per group, merged (its head landed on main), with no label.
	prs := w.repo.PRs()
	require.Len(t, prs, 2)
	heads := []string{}
	for _, pr := range prs {
		heads = append(heads, pr.GetHead().GetRef())
		assert.True(t, pr.GetMerged(), "PR #%d merged", pr.GetNumber())
		assert.NotContains(t, w.repo.Labels(pr.GetNumber()), "bazinga:blocked")
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
		for _, c := range w.repo.Comments(n) {
			if rec, ok := codec.ParseResultComment(c.GetBody()); ok {
				author := w.jobIdentity
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
	for _, ref := range w.repo.Refs() {
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

func TestE2EAppMode(t *testing.T) {
	t.Parallel()
	start := time.Now()
	w, s := playAppMode(t, e2eConfig)
	f := w.f
	t.Logf("App mode: %d steps, %d jobs, %d API calls (%d content-creating), %d webhooks, %s",
		len(s.Steps), len(w.jobsCopy()), f.Counts().Total, f.Counts().ContentCreating, len(f.Deliveries()), time.Since(start).Round(time.Millisecond))
}

// merge.method pull-request: the group PRs are opened ready for review and
// merged through the API at the tested head, not pushed.
func TestE2EAppModePullRequestMerges(t *testing.T) {
	t.Parallel()
	w, s := playAppMode(t, e2eConfig+"merge:\n  method: pull-request\n")
	merges := 0
	for _, c := range w.f.Calls() {
		if c.Method == http.MethodPut && strings.HasSuffix(c.Route, "/pulls/{number}/merge") && c.Status == http.StatusOK {
			merges++
		}
	}
	assert.Equal(t, 2, merges, "both groups merged through the API")
	for _, g := range s.Groups {
		assert.Equal(t, pipeline.StageMerged, g.Stage)
	}
	for _, pr := range w.f.PRs() {
		assert.True(t, pr.GetMerged(), "PR #%d", pr.GetNumber())
		assert.False(t, pr.GetDraft(), "PR #%d is opened ready for review", pr.GetNumber())
	}
}

// playAppMode runs a labelled issue to a verified BAZINGA with the App.
func playAppMode(t *testing.T, config string) (*world, pipeline.Session) {
	return playAppModeWith(t, config, nil)
}

// playAppModeWith is playAppMode with the world set up first.
func playAppModeWith(t *testing.T, config string, setup func(*world)) (*world, pipeline.Session) {
	w, b, logs := appModeWorld(t, config, setup)
	f := w.f
	issue, err := w.repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.Equal(t, 1, issue)
	require.NoError(t, w.repo.LabelIssue("alice", issue, "bazinga"))

	label := w.wait(issue, 60*time.Second, func() { _ = b.Sweep(context.Background()) })
	if label != "bazinga:done" {
		w.dump(issue)
		t.Log(logs())
	}
	require.Equal(t, "bazinga:done", label)
	w.settle()
	s := w.assertVerified(issue, codec.StateTrust{PublicKey: e2ePublicKey, Authors: []string{f.BotLogin()}})
	w.assertJobs(s)
	// The webhooks reached the server signed and were accepted.
	for _, d := range f.Deliveries() {
		assert.Equal(t, http.StatusAccepted, d.Status, "delivery %s %s", d.Event, d.ID)
	}
	return w, s
}

// appModeWorld is a world with the App's server in front of the fake's
// webhooks; logs returns the App's log so far.
func appModeWorld(t *testing.T, config string, setup func(*world)) (w *world, b *bot.Bot, appLog func() string) {
	w = newWorldWith(t, config)
	if setup != nil {
		setup(w)
	}
	f := w.f
	// The App's installation token carries exactly app.yml's permissions.
	require.NoError(t, f.AddAppToken(e2eBotTok, "../app.yml"))

	// The App: bot.New behind server.NewServer, over HTTP, webhooks signed.
	tr := ghapi.NewTransport(http.DefaultTransport, ghapi.TransportOptions{APIPrefix: "/api/v3", Identity: "app"})
	client, err := github.NewClient(&http.Client{Transport: tr}).WithAuthToken(e2eBotTok).WithEnterpriseURLs(f.APIURL(), f.URL()+"/api/uploads/")
	require.NoError(t, err)
	gh := ghapi.New(client)
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t.Cleanup(func() {
		if t.Failed() {
			logMu.Lock()
			t.Log(logs.String())
			logMu.Unlock()
		}
	})
	b, err = bot.New(bot.Options{Client: func(context.Context, int64) (bot.GitHub, error) { return gh, nil },
		Login: f.BotLogin(), SigningKey: e2eSigningKey, Logger: logger})
	w.orchestrator, w.publicKey = f.BotLogin(), e2ePublicKey
	require.NoError(t, err)
	srv, err := server.NewServer(server.Config{WebhookSecret: []byte(e2eSecret)}, b, logger)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		hs.Close()
	})
	f.SetWebhook(hs.URL+"/webhook", e2eSecret)
	return w, b, func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.String()
	}
}

// assertJobs: every step ran as exactly one run of two jobs (the
// unprivileged one, then the privileged one), which both succeeded.
func (w *world) assertJobs(s pipeline.Session) {
	t := w.t
	perStep := map[string][]string{}
	for _, j := range w.jobsCopy() {
		if j.run.Workflow != "bazinga-agent.yml" {
			continue
		}
		perStep[j.run.Inputs["step"]] = append(perStep[j.run.Inputs["step"]], j.command)
		w.mu.Lock()
		expected := w.expectFail[j.run.ID]
		w.mu.Unlock()
		if !expected && !assert.Zero(t, j.exit, "%s job of %s", j.command, j.run.Inputs["step"]) {
			t.Log(j.output)
		}
		if !expected || j.output != "" { // a run cancelled before its first step printed nothing
			assert.Contains(t, j.output, "::add-mask::", "the token is masked")
		}
		assert.NotContains(t, strings.ReplaceAll(j.output, "::add-mask::"+j.token, ""), j.token, "the token is never printed")
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
	// The planning step reported its usage: it reached the session's totals
	// through the hand-over, the result comment and the orchestrator.
	assert.Equal(t, pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 420_000, InputTokens: 12000, OutputTokens: 800}, s.Usage)
	assert.Equal(t, s.Usage, s.Lead.Usage)
}

func TestE2EActionOnlyMode(t *testing.T) {
	t.Parallel()
	start := time.Now()
	w := newWorld(t)
	f := w.f
	// The orchestrator workflow (examples/workflows/bazinga.yml), read by
	// the fake: the events it runs on, and workflow_dispatch with the
	// issue, which every step's privileged job sends; GitHub fires no
	// workflow_run for runs a GITHUB_TOKEN dispatch started, and starts
	// nothing for what a GITHUB_TOKEN writes; no App, no webhook receiver.
	w.actionOnly()
	issue, err := w.repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.repo.LabelIssue("alice", issue, "bazinga"))

	sweeps := 0
	label := w.wait(issue, 60*time.Second, func() {
		sweeps++
		_, _ = f.TriggerSchedule(e2eFull, sweepWorkflow)
	})
	require.Equal(t, "bazinga:done", label)
	assert.Zero(t, sweeps, "the steps' dispatches drive the session; the schedule is not needed")
	w.settle()
	// The tracking comment is github-actions[bot]'s, signed with the key
	// only the orchestrator's job holds.
	s := w.assertVerified(issue, codec.StateTrust{PublicKey: e2eActionOnlyKey, Authors: []string{ghfake.ActionsLogin}})
	w.assertJobs(s)
	reconciles := 0
	for _, j := range w.jobsCopy() {
		if j.command == "reconcile" {
			reconciles++
			if !assert.Zero(t, j.exit, "reconcile run %d (%s)", j.run.ID, j.run.Event) {
				t.Log(j.output)
			}
		}
	}
	// The reconcile job's concurrency group (one session here): never two
	// at once, and the route job ran before each.
	var recs []jobRecord
	routes := map[int64]bool{}
	for _, j := range w.jobsCopy() {
		switch j.job {
		case "reconcile":
			recs = append(recs, j)
		case "route":
			routes[j.run.ID] = true
		}
	}
	sort.Slice(recs, func(i, k int) bool { return recs[i].started.Before(recs[k].started) })
	for i := 1; i < len(recs); i++ {
		prev := recs[i-1]
		assert.False(t, recs[i].started.Before(prev.started.Add(prev.duration)), "reconcile of run %d started while run %d's ran", recs[i].run.ID, prev.run.ID)
	}
	for _, r := range recs {
		assert.True(t, routes[r.run.ID], "run %d: route ran before reconcile", r.run.ID)
	}
	assert.Empty(t, f.Deliveries(), "no App: no webhook deliveries")
	w.logActionsUse(s)
	t.Logf("Action-only mode: %d steps, %d jobs (%d reconciles, %d sweeps), %d API calls (%d content-creating), %s",
		len(s.Steps), len(w.jobsCopy()), reconciles, sweeps, f.Counts().Total, f.Counts().ContentCreating, time.Since(start).Round(time.Millisecond))
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// githubOpenAPI is GitHub's REST API description trimmed to the fake's
// endpoints (internal/ghfake/testdata; its info names the source).
const githubOpenAPI = "../internal/ghfake/testdata/github-rest-trimmed.json"

func checkOpenAPI(t *testing.T, f *ghfake.Fake) {
	t.Helper()
	o, err := ghfake.LoadOpenAPI(githubOpenAPI)
	require.NoError(t, err)
	for _, p := range o.Check(f.Calls()) {
		t.Errorf("OpenAPI: %s", p)
	}
}
