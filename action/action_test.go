package action_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/action"
	"github.com/bazinga-bot/bazinga/action/stepjob"
	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// unit is a repository with a session whose pm step is in flight: the bot
// runs in-process on synchronous webhooks; runs are left queued, and the
// tests play their jobs with action.Run in-process.
type unit struct {
	T     *testing.T
	F     *ghfake.Fake
	Repo  *ghfake.Repo
	issue int
	Run   ghfake.Run
	dir   string
}

func newUnit(t *testing.T) *unit { return newUnitWith(t, E2eConfig) }

// newUnitWith is newUnit with another .github/bazinga.yml.
func newUnitWith(t *testing.T, config string) *unit {
	t.Helper()
	f := ghfake.Start(t, ghfake.Options{WebhookMode: ghfake.Sync})
	repo, err := f.CreateRepo(E2eOwner, E2eName, "main")
	require.NoError(t, err)
	_, err = repo.Push(E2eOwner, "main", map[string]string{"README.md": "# widgets\n", "seed.txt": "ok\n", ".github/bazinga.yml": config}, "Initial commit")
	require.NoError(t, err)
	f.SetPermission("alice", "write")
	require.NoError(t, f.AddAppToken(E2eBotTok, "../app.yml"))
	// The real agent workflow: its jobs' tokens carry exactly their
	// permissions (readToken, writeToken).
	require.NoError(t, f.AddWorkflowFileFrom(E2eFull, AgentWorkflowFile))
	client, err := github.NewClient(nil).WithAuthToken(E2eBotTok).WithEnterpriseURLs(f.APIURL(), f.URL()+"/api/uploads/")
	require.NoError(t, err)
	gh := ghapi.New(client)
	b, err := bot.New(bot.Options{Client: func(context.Context, int64) (bot.GitHub, error) { return gh, nil },
		Login: f.BotLogin(), SigningKey: E2eSigningKey})
	require.NoError(t, err)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct {
			Action string `json:"action"`
		}
		_ = json.Unmarshal(body, &p)
		_ = b.Process(r.Context(), bot.Delivery{ID: r.Header.Get("X-GitHub-Delivery"), Event: r.Header.Get("X-GitHub-Event"),
			Action: p.Action, Repo: E2eFull, Payload: body, Received: time.Now()})
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(hook.Close)
	f.SetWebhook(hook.URL, E2eSecret)
	u := &unit{T: t, F: f, Repo: repo, dir: t.TempDir()}
	u.issue, err = repo.CreateIssue("alice", "Write a.txt", "Please.")
	require.NoError(t, err)
	require.NoError(t, repo.LabelIssue("alice", u.issue, "bazinga"))
	require.NoError(t, f.WaitWebhooks(10*time.Second))
	runs := f.Runs()
	require.Len(t, runs, 1, "the pm step is dispatched")
	u.Run = runs[0]
	require.Equal(t, "1/_/pm/1", u.Run.Inputs["step"])
	return u
}

// env is the job's environment for the pm run, with inputs.
func (u *unit) Env(inputs map[string]string) map[string]string {
	list, err := u.F.RunEnv(u.Run, filepath.Join(u.dir, "runner"))
	require.NoError(u.T, err)
	env := map[string]string{}
	for _, kv := range list {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	// The unit's session runs under the App (the test's bot): step jobs
	// trust its login and key.
	env["INPUT_STATE-PUBLIC-KEY"] = codec.FormatPublicKey(E2ePublicKey)
	env["INPUT_ORCHESTRATOR"] = u.F.BotLogin()
	env[stepjob.EnvStateKey] = E2eActionSecret
	for k, v := range inputs {
		env["INPUT_"+strings.ToUpper(k)] = v
	}
	return env
}

type result struct {
	code    int
	stdout  string
	outputs string
	summary string
}

func (u *unit) action(env map[string]string) result {
	var out bytes.Buffer
	code := action.Run(context.Background(), action.Deps{
		Getenv: func(k string) string { return env[k] },
		Stdout: &out,
		Client: func(ctx context.Context, token, apiURL string) (*github.Client, error) {
			return stepjob.NewClient(token, apiURL, ghapi.TransportOptions{MaxRetries: -1, MaxRateLimitRetries: -1})
		},
	})
	r := result{code: code, stdout: out.String()}
	if p := env["GITHUB_OUTPUT"]; p != "" {
		b, _ := os.ReadFile(p)
		r.outputs = string(b)
	}
	if p := env["GITHUB_STEP_SUMMARY"]; p != "" {
		b, _ := os.ReadFile(p)
		r.summary = string(b)
	}
	return r
}

func (u *unit) AgentCmd(t *testing.T) string {
	exe, err := os.Executable()
	require.NoError(t, err)
	scenario := filepath.Join(u.dir, "scenario.json")
	require.NoError(t, os.WriteFile(scenario, []byte(E2eScenario), 0o644))
	return "'" + exe + "' scripted-agent --scenario '" + scenario + "' --state '" + filepath.Join(u.dir, "state") + "'"
}

func (u *unit) resultComments() int {
	n := 0
	for _, c := range u.Repo.Comments(u.issue) {
		if _, ok := codec.ParseResultComment(c.GetBody()); ok {
			n++
		}
	}
	return n
}

// readToken is the unprivileged job's token (agent, or harness for merge and
// validation steps), as the example workflow's permissions grant it: it can
// only read.
func (u *unit) readToken() string {
	job := "agent"
	if s := u.Run.Inputs["step"]; strings.Contains(s, "/merge/") || strings.Contains(s, "/validate/") {
		job = "harness"
	}
	return jobToken(u.T, u.F, u.Run, job)
}

// writeToken is the privileged job's token of run (publish, or land for
// merge and validation steps), as the example workflow grants it.
func (u *unit) writeToken(run ghfake.Run) string {
	job := "publish"
	if s := run.Inputs["step"]; strings.Contains(s, "/merge/") || strings.Contains(s, "/validate/") {
		job = "land"
	}
	return jobToken(u.T, u.F, run, job)
}

func (u *unit) claimed(step string) bool {
	_, ok := u.Repo.Ref(stepjob.ClaimRef(step))
	return ok
}

func TestStepRunsAndReports(t *testing.T) {
	u := newUnit(t)
	tok, ro := u.writeToken(u.Run), u.readToken()
	// The unprivileged job runs the step with a read-only token and hands over.
	r := u.action(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": ro, "agent-command": u.AgentCmd(t)}))
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::add-mask::"+ro)
	assert.Equal(t, 1, strings.Count(r.stdout, ro), "the token appears only in its mask command")
	assert.Contains(t, r.stdout, "::group::bazinga: pm step 1/_/pm/1")
	assert.Contains(t, r.stdout, "::endgroup::")
	assert.Contains(t, r.outputs, "status<<")
	assert.Contains(t, r.outputs, "PLANNING_COMPLETE")
	assert.Contains(t, r.outputs, "1/_/pm/1")
	assert.Contains(t, r.summary, "| Role | pm |")
	assert.Contains(t, r.summary, "| Status | **PLANNING_COMPLETE** |")
	assert.Contains(t, r.summary, "| Summary | 2 groups, one phase |")
	assert.Contains(t, r.summary, "| Duration |")
	assert.Contains(t, r.summary, "| Usage | $0.4200 · 12.8k tokens (in 12.0k, out 800) |")
	assert.False(t, u.claimed("1/_/pm/1"), "the unprivileged job claims nothing")
	assert.Zero(t, u.resultComments(), "and posts nothing")
	// The privileged job publishes it.
	r = u.action(u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "github-token": tok}))
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::add-mask::"+tok)
	assert.Equal(t, 1, strings.Count(r.stdout, tok), "the token appears only in its mask command")
	assert.Contains(t, r.outputs, "PLANNING_COMPLETE")
	assert.Contains(t, r.summary, "| Status | **PLANNING_COMPLETE** |")
	assert.True(t, u.claimed("1/_/pm/1"))
	// The result comment, on the issue (a session-level step), by the job.
	var rec codec.ResultRecord
	for _, c := range u.Repo.Comments(u.issue) {
		if got, ok := codec.ParseResultComment(c.GetBody()); ok {
			rec = got
			assert.Equal(t, ghfake.ActionsLogin, c.GetUser().GetLogin())
		}
	}
	assert.Equal(t, "PLANNING_COMPLETE", rec.Result.Status.String())
	assert.Equal(t, u.F.URL()+"/acme/widgets/actions/runs/"+itoa(u.Run.ID), rec.RunURL)
	assert.False(t, rec.StartedAt.IsZero())
	// The usage the agent reported crossed the hand-over into the record,
	// and the privileged job's summary shows it.
	assert.Equal(t, &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 420_000, InputTokens: 12000, OutputTokens: 800}, rec.Usage)
	assert.Contains(t, r.summary, "| Usage | $0.4200 · 12.8k tokens (in 12.0k, out 800) |")

	// The same step again: done now (the bot applied the result), so nothing to do.
	r = u.action(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": ro, "agent-command": u.AgentCmd(t)}))
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::notice::bazinga: step 1/_/pm/1 is not in flight (the step is done, not in flight)")
	r = u.action(u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "github-token": tok}))
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::notice::bazinga: step 1/_/pm/1 is not in flight (the step is done, not in flight)")
	assert.Equal(t, 1, u.resultComments())
}

func TestDuplicateClaimExitsQuietly(t *testing.T) {
	u := newUnit(t)
	tok := u.writeToken(u.Run)
	base, _ := u.Repo.Ref("refs/heads/main")
	_, _, err := u.F.Client(tok).Git.CreateRef(context.Background(), E2eOwner, E2eName,
		&github.Reference{Ref: github.String(stepjob.ClaimRef("1/_/pm/1")), Object: &github.GitObject{SHA: github.String(base)}})
	require.NoError(t, err, "another job claims the step first")
	r := u.action(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(), "agent-command": u.AgentCmd(t)}))
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::notice::bazinga: step 1/_/pm/1 is a duplicate")
	assert.Contains(t, r.outputs, "duplicate")
	assert.NotContains(t, r.stdout, "pm step", "the agent does not run")
	r = u.action(u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "github-token": tok}))
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.outputs, "duplicate")
	assert.Zero(t, u.resultComments())
}

// Another run claims the step while this one's agent runs: its publisher
// finds the claim and publishes nothing.
func TestDuplicateClaimAtPublishExitsQuietly(t *testing.T) {
	u := newUnit(t)
	tok := u.writeToken(u.Run)
	r := u.action(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(), "agent-command": u.AgentCmd(t)}))
	require.Equal(t, 0, r.code, r.stdout)
	base, _ := u.Repo.Ref("refs/heads/main")
	_, _, err := u.F.Client(tok).Git.CreateRef(context.Background(), E2eOwner, E2eName,
		&github.Reference{Ref: github.String(stepjob.ClaimRef("1/_/pm/1")), Object: &github.GitObject{SHA: github.String(base)}})
	require.NoError(t, err)
	r = u.action(u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "github-token": tok}))
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::notice::bazinga: step 1/_/pm/1 is a duplicate")
	assert.Zero(t, u.resultComments())
}

func TestBadInputFailsTheStep(t *testing.T) {
	u := newUnit(t)
	tok := u.writeToken(u.Run)
	cases := []struct {
		name   string
		inputs map[string]string
		unset  string
		want   string
	}{
		{"unknown command", map[string]string{"command": "deploy", "step": "1/_/pm/1", "github-token": tok}, "", `input ` + "`command`" + ` is "deploy"`},
		{"no command", map[string]string{"step": "1/_/pm/1", "github-token": tok}, "", "input `command` is required"},
		{"malformed step", map[string]string{"command": "agent", "step": "1/pm", "github-token": tok}, "", `input ` + "`step`" + ` is "1/pm", not a step id`},
		{"missing step", map[string]string{"command": "gate", "github-token": tok}, "", "input `step` is required for command gate"},
		{"missing step to publish", map[string]string{"command": "publish", "github-token": tok}, "", "input `step` is required for command publish"},
		{"wrong command for the step", map[string]string{"command": "gate", "step": "1/_/pm/1", "github-token": tok}, "", "run it with `command: agent`"},
		{"wrong privileged command for the step", map[string]string{"command": "land", "step": "1/_/pm/1", "github-token": tok}, "", "run it with `command: agent` then `command: publish`"},
		{"the one-job merge is gone", map[string]string{"command": "merge", "step": "1/A/merge/9", "github-token": tok}, "", "command `merge` is now two jobs: `gate`"},
		{"missing token", map[string]string{"command": "agent", "step": "1/_/pm/1"}, "", "input `github-token` is empty"},
		{"missing repository", map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": tok}, "GITHUB_REPOSITORY", "GITHUB_REPOSITORY is not set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := u.Env(c.inputs)
			delete(env, c.unset)
			r := u.action(env)
			assert.Equal(t, 1, r.code)
			assert.Contains(t, r.stdout, "::error title=bazinga%3A bad input::")
			assert.Contains(t, r.stdout, c.want)
		})
	}
	assert.False(t, u.claimed("1/_/pm/1"), "bad input has no effect")
	assert.Zero(t, u.resultComments())
}

func TestStepNotInFlightExitsWithoutEffect(t *testing.T) {
	u := newUnit(t)
	tok := u.writeToken(u.Run)
	// A step the session does not have (older than its state): nothing to do.
	step := "1/A/developer/1"
	r := u.action(u.Env(map[string]string{"command": "agent", "step": step, "github-token": tok, "agent-command": "false"}))
	assert.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::notice::bazinga: step "+step+" is not in flight")
	assert.Contains(t, r.outputs, "skipped")
	assert.False(t, u.claimed(step))
	// A step of an issue with no session cannot be the orchestrator's (it
	// writes the state before it dispatches): the job fails, so that its
	// run wakes the orchestrator (issue 28), and does nothing else.
	step = "7/_/pm/1"
	r = u.action(u.Env(map[string]string{"command": "agent", "step": step, "github-token": tok, "agent-command": "false"}))
	assert.Equal(t, 1, r.code, r.stdout)
	assert.Contains(t, r.stdout, "the session cannot be read: the issue has no trusted tracking comment")
	assert.Contains(t, r.outputs, "failed")
	assert.False(t, u.claimed(step))
	assert.Zero(t, u.resultComments())
}

func TestForgedTrackingCommentIsNotTrusted(t *testing.T) {
	u := newUnit(t)
	tok := u.writeToken(u.Run)
	// With the orchestrator's public key the bot's comment verifies; with
	// another key nothing does.
	other := codec.SigningKeyFromSecret([]byte("not the orchestrator")).Public().(ed25519.PublicKey)
	env := u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": tok, "agent-command": "false",
		"state-public-key": codec.FormatPublicKey(other)})
	r := u.action(env)
	assert.Equal(t, 1, r.code, r.stdout)
	assert.Contains(t, r.stdout, "the session cannot be read")
	assert.False(t, u.claimed("1/_/pm/1"))
	// Another login's copy of the bot's block is not trusted, nor is a state
	// any bot signed with another key — only the orchestrator's own.
	var body string
	for _, c := range u.Repo.Comments(u.issue) {
		if strings.Contains(c.GetBody(), "bazinga:state:v1") {
			body = c.GetBody()
		}
	}
	require.NotEmpty(t, body)
	trust := codec.StateTrust{PublicKey: E2ePublicKey, Authors: []string{u.F.BotLogin()}}
	repo := ghapi.RepoRef{Owner: E2eOwner, Name: E2eName}
	for _, author := range []string{"mallory", "github-actions[bot]", "other-app[bot]"} {
		_, _, err := codec.FindState([]ghapi.Comment{{ID: 1, Author: author, AuthorType: "Bot", Body: body}}, repo, u.issue, trust)
		assert.ErrorIs(t, err, codec.ErrNoSession, author)
	}
	st, _, err := codec.FindState([]ghapi.Comment{{ID: 1, Author: u.F.BotLogin(), AuthorType: "Bot", Body: body}}, repo, u.issue, trust)
	require.NoError(t, err)
	assert.NotNil(t, st.Session.Step("1/_/pm/1"))
}

// TestStateKeyRotationInStepJobs: during a rotation of the state key,
// state-public-key lists the new key first and the old one after it; a
// state the old key signed is still read (and the orchestrator re-signs it
// with the new key at its next write).
func TestStateKeyRotationInStepJobs(t *testing.T) {
	u := newUnit(t)
	tok := u.writeToken(u.Run)
	next := codec.SigningKeyFromSecret([]byte("9c2e7a41f0b83d65c1e9a7f2b4d08e36a5c7f1e9b2d4a6c8e0f3b5d7a9c1e3f5")).Public().(ed25519.PublicKey)
	env := u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": tok, "agent-command": "false",
		"state-public-key": codec.FormatPublicKey(next) + ", " + codec.FormatPublicKey(E2ePublicKey)})
	r := u.action(env)
	assert.NotContains(t, r.stdout, "is not in flight")
	assert.Contains(t, r.stdout, `msg="session loaded" command=agent step=1/_/pm/1`, "the state signed with the previous key was read")
	// Without the previous key it is not.
	env["INPUT_STATE-PUBLIC-KEY"] = codec.FormatPublicKey(next)
	r = u.action(env)
	assert.Contains(t, r.stdout, "state block does not verify")
	assert.NotContains(t, r.stdout, `msg="session loaded"`)
}

// TestStateKeysAreRequired: a step job without the public key, and the
// Action-only orchestrator without its secret, refuse to run and name what
// is missing.
func TestStateKeysAreRequired(t *testing.T) {
	u := newUnit(t)
	env := u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(), "agent-command": "false"})
	delete(env, "INPUT_STATE-PUBLIC-KEY")
	r := u.action(env)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "input `state-public-key` is empty")
	env = u.Env(map[string]string{"command": "reconcile", "github-token": u.F.RunToken(u.Run)})
	delete(env, stepjob.EnvStateKey)
	r = u.action(env)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "the secret BAZINGA_STATE_KEY is not set")
	// Issue 21: a guessable state key is refused, with how to make a good one.
	env = u.Env(map[string]string{"command": "reconcile", "github-token": u.F.RunToken(u.Run)})
	env[stepjob.EnvStateKey] = "hunter2"
	r = u.action(env)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "the secret BAZINGA_STATE_KEY is weak")
	assert.Contains(t, r.stdout, "openssl rand -hex 32")
	assert.Contains(t, r.stdout, "::add-mask::hunter2", "masked before anything is printed")
	assert.Equal(t, 1, strings.Count(r.stdout, "hunter2"), "never quoted by the refusal")
	env = u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(), "agent-command": "false",
		"state-public-key": "c2hvcnQ="})
	r = u.action(env)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "not a state public key")
}

func TestMissingPermissionIsNamed(t *testing.T) {
	u := newUnit(t)
	tok := "ghs_readonly_contents"
	u.F.AddTokenWithPermissions(tok, ghfake.ActionsLogin, ghfake.Bot, map[string]string{"contents": "read", "issues": "write", "pull_requests": "write"})
	r := u.action(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(), "agent-command": "false"}))
	assert.Equal(t, 1, r.code, r.stdout)
	// The publishing job was given a token that cannot write contents.
	r = u.action(u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "github-token": tok}))
	assert.Equal(t, 1, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::error title=bazinga publish::claiming step 1/_/pm/1: the token lacks contents: write; add `permissions: contents: write` to the job")
	// The unprivileged job without issues: read cannot read the session.
	tok2 := "ghs_contents_only"
	u.F.AddTokenWithPermissions(tok2, ghfake.ActionsLogin, ghfake.Bot, map[string]string{"contents": "read"})
	r = u.action(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": tok2, "agent-command": "false"}))
	assert.Equal(t, 1, r.code, r.stdout)
	assert.Contains(t, r.stdout, "the token lacks issues: read or pull_requests: read; add `permissions: issues: read` to the job")
	assert.False(t, u.claimed("1/_/pm/1"))

	msg, ok := stepjob.MissingPermission(errors.New("plain"))
	assert.False(t, ok)
	assert.Empty(t, msg)
}

func TestStepWithoutResultFailsTheJob(t *testing.T) {
	u := newUnit(t)
	tok := u.writeToken(u.Run)
	r := u.action(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(), "agent-command": "sh -c 'exit 3'"}))
	assert.Equal(t, 1, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::error title=bazinga%3A step 1/_/pm/1 ended without a result::no result: the agent exited with code 3")
	assert.Contains(t, r.outputs, "failed")
	assert.Contains(t, r.summary, "| Status | **failed** |")
	// The privileged job (it runs after a failed first job) publishes the failure.
	r = u.action(u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "github-token": tok}))
	assert.Equal(t, 1, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::error title=bazinga%3A step 1/_/pm/1 ended without a result::no result: the agent exited with code 3")
	assert.Contains(t, r.outputs, "failed")
	assert.True(t, u.claimed("1/_/pm/1"), "the step was claimed; the bot retries it as a new step")
	assert.Zero(t, u.resultComments(), "no result comment")
	failures := 0
	for _, c := range u.Repo.Comments(u.issue) {
		if fr, ok := codec.ParseFailureComment(c.GetBody()); ok {
			failures++
			assert.Contains(t, fr.Reason, "exited with code 3")
		}
	}
	assert.Equal(t, 1, failures, "the failure reaches the orchestrator")
}

func TestReconcileNeedsItsEvent(t *testing.T) {
	u := newUnit(t)
	tok := u.writeToken(u.Run)
	env := u.Env(map[string]string{"command": "reconcile", "github-token": tok})
	delete(env, "GITHUB_EVENT_NAME")
	r := u.action(env)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "GITHUB_EVENT_NAME is not set")
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, action.Main(context.Background(), []string{"-h"}, &out, &errOut))
	assert.Contains(t, out.String(), "agent | gate | validate")
	assert.Contains(t, out.String(), "publish (after agent, validate) | land (after gate)") // action.yml's words (issue 25)
	assert.Contains(t, out.String(), "Action-only orchestrator")
	assert.Equal(t, 2, action.Main(context.Background(), []string{"--bogus"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "unexpected argument")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestReconcileNamesAMissingPermission(t *testing.T) {
	f := ghfake.Start(t, ghfake.Options{WebhookMode: ghfake.Sync})
	repo, err := f.CreateRepo(E2eOwner, E2eName, "main")
	require.NoError(t, err)
	_, err = repo.Push(E2eOwner, "main", map[string]string{"README.md": "# widgets\n"}, "Initial commit")
	require.NoError(t, err)
	f.SetPermission("alice", "write")
	// The real workflow files; their jobs are played here by hand.
	require.NoError(t, f.AddWorkflowFileFrom(E2eFull, AgentWorkflowFile))
	require.NoError(t, f.AddWorkflowFileFrom(E2eFull, OrchestratorWorkflowFile))
	issue, err := repo.CreateIssue("alice", "Write a.txt", "Please.")
	require.NoError(t, err)
	require.NoError(t, repo.LabelIssue("alice", issue, "bazinga"))
	runs := f.Runs()
	require.Len(t, runs, 1)
	require.Equal(t, "issues", runs[0].Event)

	// The orchestrator's job forgot `actions: write`: it cannot dispatch.
	tok := "ghs_no_actions"
	f.AddTokenWithPermissions(tok, ghfake.ActionsLogin, ghfake.Bot, map[string]string{"contents": "write", "issues": "write", "pull_requests": "write"})
	u := &unit{T: t, F: f, Repo: repo, issue: issue, Run: runs[0], dir: t.TempDir()}
	r := u.action(u.Env(map[string]string{"command": "reconcile", "github-token": tok}))
	assert.Equal(t, 1, r.code, r.stdout)
	assert.Contains(t, r.stdout, "the token lacks actions: write; add `permissions: actions: write` to the job")

	// With the permission, the schedule's sweep carries out the dispatch
	// the state kept pending.
	env := u.Env(map[string]string{"command": "reconcile", "github-token": jobToken(t, f, runs[0], "reconcile")})
	env["GITHUB_EVENT_NAME"] = "schedule"
	r = u.action(env)
	assert.Equal(t, 0, r.code, r.stdout)
	steps := []string{}
	for _, run := range f.Runs() {
		if run.Workflow == "bazinga-agent.yml" {
			steps = append(steps, run.Inputs["step"])
		}
	}
	assert.Equal(t, []string{"1/_/pm/1"}, steps)
}

// TestDispatchedReconcileAppliesTheStepsResult: in Action-only mode a
// step's result comment (written with a GITHUB_TOKEN) starts no workflow;
// the orchestrator dispatched with the issue reads the result back and
// moves the session on.
func TestDispatchedReconcileAppliesTheStepsResult(t *testing.T) {
	f := ghfake.Start(t, ghfake.Options{WebhookMode: ghfake.Sync})
	repo, err := f.CreateRepo(E2eOwner, E2eName, "main")
	require.NoError(t, err)
	_, err = repo.Push(E2eOwner, "main", map[string]string{"README.md": "# widgets\n", "seed.txt": "ok\n", ".github/bazinga.yml": E2eConfig}, "Initial commit")
	require.NoError(t, err)
	f.SetPermission("alice", "write")
	require.NoError(t, f.AddWorkflowFileFrom(E2eFull, AgentWorkflowFile))
	require.NoError(t, f.AddWorkflowFileFrom(E2eFull, OrchestratorWorkflowFile))
	issue, err := repo.CreateIssue("alice", "Write a.txt", "Please.")
	require.NoError(t, err)
	require.NoError(t, repo.LabelIssue("alice", issue, "bazinga"))
	runs := f.Runs()
	require.Len(t, runs, 1)
	u := &unit{T: t, F: f, Repo: repo, issue: issue, Run: runs[0], dir: t.TempDir()}
	actionOnly := func(env map[string]string) map[string]string {
		env["INPUT_STATE-PUBLIC-KEY"] = codec.FormatPublicKey(E2eActionOnlyKey)
		env["INPUT_ORCHESTRATOR"] = ghfake.ActionsLogin
		return env
	}
	r := u.action(actionOnly(u.Env(map[string]string{"command": "reconcile", "github-token": jobToken(t, f, runs[0], "reconcile")})))
	require.Equal(t, 0, r.code, r.stdout)
	var pm ghfake.Run
	for _, run := range f.Runs() {
		if run.Workflow == "bazinga-agent.yml" {
			pm = run
		}
	}
	require.Equal(t, "1/_/pm/1", pm.Inputs["step"])
	u.Run = pm
	r = u.action(actionOnly(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(), "agent-command": u.AgentCmd(t)})))
	require.Equal(t, 0, r.code, r.stdout)
	orchestratorRuns := func() int {
		n := 0
		for _, run := range f.Runs() {
			if run.Workflow == "bazinga.yml" {
				n++
			}
		}
		return n
	}
	before := orchestratorRuns()
	r = u.action(actionOnly(u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "github-token": jobToken(t, f, pm, "publish")})))
	require.Equal(t, 0, r.code, r.stdout)
	require.Equal(t, 1, u.resultComments())
	require.Equal(t, before+1, orchestratorRuns(), "the publish job dispatched the orchestrator")
	assert.Contains(t, r.stdout, "dispatched the orchestrator (bazinga.yml) for #1")

	// That dispatch's run: the orchestrator with the issue.
	dispatchOrchestrator := func(issueInput string) ghfake.Run {
		_, err := f.Client(jobToken(t, f, pm, "publish")).Actions.CreateWorkflowDispatchEventByFileName(context.Background(), E2eOwner, E2eName, "bazinga.yml",
			github.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"issue": issueInput}})
		require.NoError(t, err)
		var last ghfake.Run
		for _, run := range f.Runs() {
			if run.Workflow == "bazinga.yml" && run.ID > last.ID {
				last = run
			}
		}
		require.Equal(t, "workflow_dispatch", last.Event)
		return last
	}
	dispatch := dispatchOrchestrator(strconv.Itoa(issue))
	u.Run = dispatch
	r = u.action(actionOnly(u.Env(map[string]string{"command": "reconcile", "github-token": jobToken(t, f, dispatch, "reconcile")})))
	require.Equal(t, 0, r.code, r.stdout)
	var steps []string
	for _, run := range f.Runs() {
		if run.Workflow == "bazinga-agent.yml" {
			steps = append(steps, run.Inputs["step"])
		}
	}
	assert.Greater(t, len(steps), 1, "the pm's plan was applied and its groups dispatched: %v", steps)

	bad := dispatchOrchestrator("twelve")
	u.Run = bad
	r = u.action(actionOnly(u.Env(map[string]string{"command": "reconcile", "github-token": jobToken(t, f, bad, "reconcile")})))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, `the workflow_dispatch input issue is "twelve"`)
}

// jobToken is the GITHUB_TOKEN of job of run, with exactly that job's
// permissions in its workflow file.
func jobToken(t *testing.T, f *ghfake.Fake, run ghfake.Run, job string) string {
	t.Helper()
	tok, err := f.JobToken(run, job)
	require.NoError(t, err)
	return tok
}
