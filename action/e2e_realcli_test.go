package action_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/modelfake"
	"github.com/bazinga-bot/bazinga/internal/realcli"
	"github.com/bazinga-bot/bazinga/internal/realteam"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// The user's .github/bazinga.yml: the README's agent command, the model key
// and the two settings that point claude at the model server passed to the
// agent, the module's own tests as the gate.
const realConfig = `agent:
  command: "claude -p --model {model}"
  timeout: 4m
  env: [ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, CLAUDE_CONFIG_DIR]
tests:
  command: "go test ./..."
  timeout: 3m
`

// The model key, a repository secret only the agent job reads.
const realModelKey = "sk-ant-e2e-repository-secret"

// The lines the user adds to the agent job's env: of the example agent
// workflow, beside its ANTHROPIC_API_KEY: where the model is (a repository
// variable; a gateway or proxy in real life, the scripted model server
// here) and a claude configuration directory in the job's temporary
// directory.
const (
	exampleKeyLine  = "          ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}\n"
	realWorkflowEnv = "          ANTHROPIC_BASE_URL: ${{ vars.ANTHROPIC_BASE_URL }}\n" +
		"          CLAUDE_CONFIG_DIR: ${{ runner.temp }}/claude\n"
)

// realWorld is the strict fake GitHub running the user's workflows with the
// real claude binary as the agent CLI of every agent job, against the
// scripted team (internal/realteam) on the scripted model server.
type realWorld struct {
	*World
	srv  *modelfake.Server
	team *realteam.Team
	seed string // main before the session
}

func newRealWorld(t *testing.T) *realWorld {
	t.Helper()
	claude := realcli.Claude(t)
	w := NewWorldWith(t, realConfig)
	tm := realteam.New("claude")
	srv := modelfake.Start(t, tm.Script)

	// The repository: a Go module (the example's seed files stay).
	seed, err := w.Repo.Push(E2eOwner, "main", realteam.Repo(), "calc")
	require.NoError(t, err)

	// The user's agent workflow: the example with the env lines above.
	b, err := os.ReadFile(AgentWorkflowFile)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(b), exampleKeyLine), "the example agent workflow passes ANTHROPIC_API_KEY from the secrets")
	wf := strings.Replace(string(b), exampleKeyLine, exampleKeyLine+realWorkflowEnv, 1)
	require.NoError(t, w.F.AddWorkflowFile(E2eFull, filepath.Base(AgentWorkflowFile), []byte(wf)))
	w.Secrets["ANTHROPIC_API_KEY"] = realModelKey
	w.Vars["ANTHROPIC_BASE_URL"] = srv.URL

	// The runner, as the workflow's "Install the agent CLI" step (npm
	// install -g) leaves it: `claude` on PATH. Its HOME is a runner's, not
	// this machine's user's (whose shell profile claude's Bash tool would
	// source), with this machine's Go build cache (a warm tool cache).
	bin := filepath.Join(w.Root, "npm-global", "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.Symlink(claude, filepath.Join(bin, "claude")))
	home := filepath.Join(w.Root, "home", "runner")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cache"), 0o755))
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil && strings.TrimSpace(string(out)) != "" {
		require.NoError(t, os.Symlink(strings.TrimSpace(string(out)), filepath.Join(home, ".cache", "go-build")))
	}
	w.Env = append(w.Env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+home)

	// The agent-command input, as the README shows it (the configuration
	// says the same): the bare name, found on PATH.
	w.AgentCmd = "claude -p --model {model}"
	return &realWorld{World: w, srv: srv, team: tm, seed: seed}
}

// session opens the issue, labels it and drives the World until the
// session ends; it returns the issue.
func (rw *realWorld) session(onIdle func()) int {
	t := rw.T
	issue, err := rw.Repo.CreateIssue("alice", "Add Mul to calc", "Add Mul(a, b int) int to the calc package, with a test.")
	require.NoError(t, err)
	require.NoError(t, rw.Repo.LabelIssue("alice", issue, "bazinga"))
	label := rw.Wait(issue, 170*time.Second, onIdle)
	if label != "bazinga:done" {
		rw.Dump(issue)
		t.Logf("model requests: %d, unhandled: %v", len(rw.srv.Requests()), rw.srv.Unhandled())
	}
	require.Equal(t, "bazinga:done", label)
	rw.Settle()
	return issue
}

// assertRealSession checks the session as it ended: a verified BAZINGA with
// the developer's files — written by claude's Write tool in the agent job —
// on main through the publish and land jobs, main's tree exactly the
// commit QA passed and the tech lead approved, every agent step run by the
// real claude with the repository's secret, and every step two jobs.
func (rw *realWorld) assertRealSession(issue int, trust codec.StateTrust) pipeline.Session {
	t := rw.T
	s := rw.RequireSession(issue, trust)
	require.Equal(t, pipeline.SessionDone, s.Status, s.Reason)
	assert.Equal(t, "BAZINGA verified", s.Reason)
	assert.Equal(t, "closed", rw.Repo.Issue(issue).GetState())
	assert.NotContains(t, rw.Repo.Labels(issue), "bazinga:running")
	require.Len(t, s.Groups, 1)
	g := s.Groups[0]
	require.Equal(t, pipeline.StageMerged, g.Stage)
	require.NotEmpty(t, g.Head)

	// The developer's files are on main, the seed's unchanged.
	for file, want := range map[string]string{"mul.go": realteam.MulGo, "mul_test.go": realteam.MulTest, "calc.go": realteam.Repo()["calc.go"]} {
		got, err := rw.Repo.ReadFile("main", file)
		require.NoError(t, err, "%s on main", file)
		assert.Equal(t, want, string(got), file)
	}

	// Nothing unreviewed on main: main's tree is the group head's, the head
	// QA and the tech lead saw (their result records say which), on top of
	// the seed; the group's PR merged at that head.
	main, ok := rw.Repo.Ref("refs/heads/main")
	require.True(t, ok)
	assert.Equal(t, rw.git("rev-parse", g.Head+"^{tree}"), rw.git("rev-parse", main+"^{tree}"), "main's tree is the reviewed head's")
	assert.Equal(t, "yes", rw.gitOK("merge-base", "--is-ancestor", g.Head, main), "the reviewed head is on main")
	assert.Equal(t, "yes", rw.gitOK("merge-base", "--is-ancestor", rw.seed, g.Head), "the group started from the seed")
	if g.MergeCommit != "" {
		assert.Equal(t, main, g.MergeCommit, "main is the merge the land job pushed")
	}
	// The commits the group added: the developer's, with its summary.
	log := rw.git("log", "--format=%an|%s", rw.seed+".."+g.Head)
	assert.Contains(t, log, "developer: "+realteam.DeveloperSummary)
	prs := rw.Repo.PRs()
	require.Len(t, prs, 1)
	assert.True(t, prs[0].GetMerged())
	assert.Equal(t, g.Head, prs[0].GetHead().GetSHA(), "the PR's head is the reviewed head")

	results := map[pipeline.Role][]codec.ResultRecord{}
	for _, n := range []int{issue, prs[0].GetNumber()} {
		for _, c := range rw.Repo.Comments(n) {
			assert.NotContains(t, c.GetBody(), realModelKey, "the model key never reaches GitHub")
			if rec, ok := codec.ParseResultComment(c.GetBody()); ok {
				results[rec.Role] = append(results[rec.Role], rec)
			}
		}
	}
	for _, role := range []pipeline.Role{pipeline.RoleDeveloper, pipeline.RoleQA, pipeline.RoleTechLead} {
		require.Len(t, results[role], 1, "one %s step", role)
		assert.Equal(t, g.Head, results[role][0].Head, "%s's head", role)
	}
	assert.Equal(t, pipeline.StatusPass, results[pipeline.RoleQA][0].Result.Status)
	assert.Equal(t, pipeline.StatusApproved, results[pipeline.RoleTechLead][0].Result.Status)

	// Every agent step ran claude and reported the usage claude read from
	// the model server's replies.
	for _, st := range s.Steps {
		if st.State != pipeline.StepDone || st.Role == pipeline.RoleMerge || st.Role == pipeline.RoleValidate {
			continue
		}
		require.NotNil(t, st.Usage, "step %s has usage", st.ID)
		assert.Positive(t, st.Usage.OutputTokens, "step %s", st.ID)
	}
	rw.assertRealJobs(s)

	// The model server saw claude: the repository's key, the developer's
	// Write calls carried out by claude itself, no edit tool for the
	// reviewers.
	reqs := rw.srv.Requests()
	require.NotEmpty(t, reqs)
	assert.Empty(t, rw.srv.Unhandled())
	wrote := map[string]bool{}
	for _, r := range reqs {
		assert.Equal(t, realModelKey, r.Header.Get("x-api-key"), "request %d", r.Seq)
		assert.Contains(t, r.Header.Get("User-Agent"), "claude", "request %d", r.Seq)
		role := realteam.RoleOf(r)
		// The team used only the tools claude offered the role, so each
		// call was claude's to carry out.
		for _, m := range r.Messages {
			for _, c := range m.ToolCalls {
				assert.True(t, r.HasTool(c.Name), "request %d (%s): %s is offered", r.Seq, role, c.Name)
			}
		}
		switch role {
		case "qa", "tech_lead", "pm":
			assert.False(t, r.HasTool("Write") || r.HasTool("Edit"), "%s is offered no edit tool", role)
		case "developer":
			for _, m := range r.Messages {
				for _, c := range m.ToolCalls {
					if c.Name == "Write" {
						in, _ := c.Input.(map[string]any)
						p, _ := in["file_path"].(string)
						wrote[filepath.Base(p)] = true
					}
				}
				for _, res := range m.ToolResults {
					assert.False(t, res.IsError, "developer tool result: %s", res.Text)
				}
			}
		}
	}
	assert.Equal(t, map[string]bool{"mul.go": true, "mul_test.go": true}, wrote, "the developer's files came from claude's Write tool")
	return s
}

// assertRealJobs: every step ran as exactly one run of two jobs, which
// succeeded, and five were agents' (claude's usage is its own, not the
// scripted team's).
func (rw *realWorld) assertRealJobs(s pipeline.Session) {
	t := rw.T
	rw.AssertStepJobs(s)
	// Planning, development, QA, review, the pm's check.
	agents := 0
	for _, st := range s.Steps {
		if st.State == pipeline.StepDone && st.Role != pipeline.RoleMerge && st.Role != pipeline.RoleValidate {
			agents++
		}
	}
	assert.Equal(t, 5, agents, "agent steps")
}

// git runs git on the fake's bare repository.
func (rw *realWorld) git(args ...string) string {
	rw.T.Helper()
	out, err := exec.Command("git", append([]string{"--git-dir", rw.Repo.Path()}, args...)...).CombinedOutput()
	require.NoError(rw.T, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// gitOK runs git and says whether it succeeded.
func (rw *realWorld) gitOK(args ...string) string {
	if exec.Command("git", append([]string{"--git-dir", rw.Repo.Path()}, args...)...).Run() != nil {
		return "no"
	}
	return "yes"
}

// Action-only mode with the real claude binary as the agent CLI, as a
// user's workflows run it (issue 19 item 9): the orchestrator workflow
// (examples/workflows/bazinga.yml) drives the session, each step's agent
// job runs `claude -p --model {model}` from PATH with the repository's
// secret and variable, the developer's files — written by claude's Write
// tool — reach main through the publish and land jobs, and the pm's
// BAZINGA is verified.
func TestE2ERealClaudeActionOnly(t *testing.T) {
	start := time.Now()
	rw := newRealWorld(t)
	rw.ActionOnly()
	sweeps := 0
	issue := rw.session(func() {
		sweeps++
		_, _ = rw.F.TriggerSchedule(E2eFull, SweepWorkflow)
	})
	s := rw.assertRealSession(issue, codec.StateTrust{PublicKey: E2eActionOnlyKey, Authors: []string{ghfake.ActionsLogin}})
	assert.Zero(t, sweeps, "the steps' dispatches drive the session; the schedule is not needed")
	assert.Empty(t, rw.F.Deliveries(), "no App: no webhook deliveries")
	t.Logf("Action-only mode with claude: %d steps, %d jobs, %d model requests, %s",
		len(s.Steps), len(rw.JobsCopy()), len(rw.srv.Requests()), time.Since(start).Round(time.Millisecond))
}

// App mode with the real claude binary: the same session, the App
// (bot.New behind server.NewServer, webhooks signed) orchestrating.
func TestE2ERealClaudeAppMode(t *testing.T) {
	start := time.Now()
	rw := newRealWorld(t)
	b, _ := rw.StartApp()
	issue := rw.session(func() { _ = b.Sweep(context.Background()) })
	s := rw.assertRealSession(issue, codec.StateTrust{PublicKey: E2ePublicKey, Authors: []string{rw.F.BotLogin()}})
	for _, d := range rw.F.Deliveries() {
		assert.Equal(t, http.StatusAccepted, d.Status, "delivery %s %s", d.Event, d.ID)
	}
	t.Logf("App mode with claude: %d steps, %d jobs, %d model requests, %d webhooks, %s",
		len(s.Steps), len(rw.JobsCopy()), len(rw.srv.Requests()), len(rw.F.Deliveries()), time.Since(start).Round(time.Millisecond))
}
