package action_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/action"
	"github.com/bazinga-bot/bazinga/action/stepjob"
	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
)

type jobClock struct {
	Mu sync.Mutex
	T  time.Time
}

func (c *jobClock) Now() time.Time {
	c.Mu.Lock()
	defer c.Mu.Unlock()
	return c.T
}

func (c *jobClock) Advance(d time.Duration) {
	c.Mu.Lock()
	c.T = c.T.Add(d)
	c.Mu.Unlock()
}

// TestActionOnlyReconcileWaitsForTheRateLimit: in Action-only mode every
// job of the repository shares its GITHUB_TOKENs' 1,000 requests an hour.
// When they are spent, the orchestrator's job pauses the session — said on
// the issue, naming the limit and its reset — and ends well (a red run
// invites a re-run); until the reset further reconciles do nothing; the
// first one after it resumes the session.
func TestActionOnlyReconcileWaitsForTheRateLimit(t *testing.T) {
	clock := &jobClock{T: time.Date(2026, 3, 2, 14, 0, 0, 0, time.UTC)}
	f := ghfake.Start(t, ghfake.Options{WebhookMode: ghfake.Sync, Now: clock.Now})
	repo, err := f.CreateRepo(E2eOwner, E2eName, "main")
	require.NoError(t, err)
	_, err = repo.Push(E2eOwner, "main", map[string]string{"README.md": "# widgets\n", "seed.txt": "ok\n", ".github/bazinga.yml": E2eConfig}, "Initial commit")
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
	u := &unit{T: t, F: f, Repo: repo, issue: issue, Run: runs[0], dir: t.TempDir()}
	run := func(inputs map[string]string, event string) result {
		env := u.Env(inputs)
		env["INPUT_STATE-PUBLIC-KEY"] = codec.FormatPublicKey(E2eActionOnlyKey)
		env["INPUT_ORCHESTRATOR"] = ghfake.ActionsLogin
		if event != "" {
			env["GITHUB_EVENT_NAME"] = event
		}
		var out bytes.Buffer
		code := action.Run(context.Background(), action.Deps{
			Getenv: func(k string) string { return env[k] }, Stdout: &out, Now: clock.Now,
			Client: func(ctx context.Context, token, apiURL string) (*github.Client, error) {
				return stepjob.NewClient(token, apiURL, ghapi.TransportOptions{MaxRetries: -1, Now: clock.Now,
					Sleep: func(ctx context.Context, d time.Duration) error { clock.Advance(d); return ctx.Err() }})
			},
		})
		r := result{code: code, stdout: out.String()}
		b, _ := os.ReadFile(env["GITHUB_OUTPUT"])
		r.outputs = string(b)
		return r
	}
	notices := func(s string) int {
		n := 0
		for _, c := range repo.Comments(issue) {
			if c.GetUser().GetLogin() == ghfake.ActionsLogin && strings.Contains(c.GetBody(), s) {
				n++
			}
		}
		return n
	}

	// The session starts and its pm step runs and publishes.
	r := run(map[string]string{"command": "reconcile", "github-token": jobToken(t, f, runs[0], "reconcile")}, "")
	require.Equal(t, 0, r.code, r.stdout)
	var pm ghfake.Run
	for _, rn := range f.Runs() {
		if rn.Workflow == "bazinga-agent.yml" {
			pm = rn
		}
	}
	require.Equal(t, "1/_/pm/1", pm.Inputs["step"])
	u.Run = pm
	r = run(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(), "agent-command": u.AgentCmd(t)}, "")
	require.Equal(t, 0, r.code, r.stdout)
	r = run(map[string]string{"command": "publish", "step": "1/_/pm/1", "github-token": u.writeToken(pm)}, "")
	require.Equal(t, 0, r.code, r.stdout)
	require.Equal(t, 1, u.resultComments())

	// The repository's jobs have spent their hour but for the reserve the
	// transport keeps: the schedule's reconcile pauses the session.
	f.SetActionsRateRemaining(E2eFull, 21)
	r = run(map[string]string{"command": "reconcile", "github-token": jobToken(t, f, runs[0], "reconcile")}, "schedule")
	assert.Equal(t, 0, r.code, "a rate limit is not a failed run: %s", r.stdout)
	assert.Contains(t, r.outputs, "rate-limited")
	assert.Contains(t, r.stdout, "::warning title=bazinga%3A rate limited::GitHub rate limit for the workflow token")
	reset := clock.Now().Add(time.Hour).Truncate(time.Second)
	require.Equal(t, 1, notices("⏸️ **Paused** | GitHub rate limit for the workflow token exhausted until "+reset.Add(time.Minute-time.Nanosecond).Truncate(time.Minute).Format("15:04")+" UTC; resuming after it"))
	agentRuns := func() int {
		n := 0
		for _, rn := range f.Runs() {
			if rn.Workflow == "bazinga-agent.yml" {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, agentRuns(), "nothing dispatched while limited")

	// Before the reset another reconcile does nothing more.
	clock.Advance(20 * time.Minute)
	r = run(map[string]string{"command": "reconcile", "github-token": jobToken(t, f, runs[0], "reconcile")}, "schedule")
	assert.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.outputs, "rate-limited")
	assert.Equal(t, 1, notices("⏸️ **Paused**"), "told once")
	assert.Equal(t, 1, agentRuns())

	// After the reset the schedule resumes the session: the pm's plan is
	// applied and its group dispatched.
	clock.Advance(time.Hour)
	r = run(map[string]string{"command": "reconcile", "github-token": jobToken(t, f, runs[0], "reconcile")}, "schedule")
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.outputs, "handled")
	assert.Equal(t, 1, notices("▶️ **Resumed** | the GitHub rate limit for the workflow token reset at"))
	assert.Greater(t, agentRuns(), 1, "the session moved on")
}
