package e2eactiononly_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/server"
)

// Action-only mode on a protected base whose required check ci/test comes
// from the repository's CI (issue 11 items 3, 4, 7), with the real example
// workflows: CI runs on a push or an API-opened PR unless a GITHUB_TOKEN
// made it, as on GitHub.
//
//   - With every job on its GITHUB_TOKEN the group branches never get the
//     check: the session waits for it and pauses after merge.checks_timeout
//     naming it, and nothing reaches main.
//   - With the repository variable BAZINGA_TOKEN_EXCHANGE_URL set (the
//     example's publish and land jobs pass it as token-exchange-url), those
//     jobs exchange their OIDC token with `bazinga serve` for an App token:
//     their pushes start CI, the check passes on each group head, and the
//     group PRs are merged through the API at their tested heads.
func TestE2EActionOnlyRequiredCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		exchange bool
		// approve: alice approves the CI runs GitHub holds on the group
		// PRs (a GITHUB_TOKEN opened and updated them).
		approve bool
	}{
		{"GITHUB_TOKEN: CI waits for approval, the session pauses naming it", false, false},
		{"GITHUB_TOKEN: a person approves the CI runs", false, true},
		{"token exchange: the privileged jobs act as the App", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each its own fake; keeps the package's serial time down
			config := E2eConfig
			if tc.exchange {
				// The orchestrator stays github-actions[bot] (the example's
				// reconcile job has no exchange); the results the App posts
				// are trusted through github.job_identity.
				config += "github:\n  job_identity: bazinga[bot]\n"
			} else if !tc.approve {
				// Short, so the test sees the timeout (the default is 2h).
				config += "merge:\n  checks_timeout: 2s\n"
			}
			w := NewWorldWith(t, config)
			f := w.F
			w.ActionOnly()
			require.NoError(t, w.Repo.Protect("main", ghfake.Protection{RequirePR: true, RequiredChecks: []string{"ci/test"}}))
			// CI takes longer than a step: only its completion can wake the
			// session in time.
			require.NoError(t, w.Repo.AddCI(ghfake.CI{Name: "ci/test", Duration: 4 * time.Second}))
			if tc.exchange {
				require.Equal(t, "bazinga[bot]", f.BotLogin(), "the login job_identity names")
				w.Oidc = ghfake.StartOIDC(t, f)
				w.Vars["BAZINGA_TOKEN_EXCHANGE_URL"] = startTokenExchange(t, f, w.Oidc)
				w.JobIdentity = f.BotLogin()
			}
			mainBefore, ok := w.Repo.Ref("refs/heads/main")
			require.True(t, ok)

			var approvedMu sync.Mutex
			approved := map[int64]bool{}
			if tc.approve {
				stop := make(chan struct{})
				t.Cleanup(func() { close(stop) })
				go func() {
					for {
						select {
						case <-stop:
							return
						case <-time.After(100 * time.Millisecond):
						}
						for _, r := range f.Runs() {
							approvedMu.Lock()
							fresh := r.Conclusion == "action_required" && !approved[r.ID]
							approved[r.ID] = approved[r.ID] || fresh
							approvedMu.Unlock()
							if fresh {
								assert.NoError(t, w.Repo.ApproveRun("alice", r.ID))
							}
						}
					}
				}()
			}
			issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
			require.NoError(t, err)
			require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))
			sweeps := 0
			label := w.Wait(issue, 40*time.Second, func() {
				sweeps++
				_, _ = f.TriggerSchedule(E2eFull, SweepWorkflow)
			})
			w.Settle()
			var log strings.Builder
			for _, c := range w.Repo.Comments(issue) {
				log.WriteString(c.GetBody())
			}
			trust := codec.StateTrust{PublicKey: E2eActionOnlyKey, Authors: []string{ghfake.ActionsLogin}}

			if !tc.exchange && !tc.approve {
				if !assert.Equal(t, "bazinga:paused", label) {
					w.Dump(issue)
				}
				s := w.RequireSession(issue, trust)
				require.Equal(t, pipeline.SessionPaused, s.Status, s.Reason)
				assert.Contains(t, s.Reason, "(ci/test on ")
				assert.Contains(t, s.Reason, "merge.checks_timeout 2s")
				// GitHub holds the CI runs of the pull requests a GITHUB_TOKEN
				// opened or updated (since 2026-06-11): the pause names them
				// and what lets them run.
				assert.Contains(t, s.Reason, "workflow runs awaiting approval: CI http")
				assert.Contains(t, s.Reason, "Approve and run workflows")
				assert.Contains(t, log.String(), "waiting for required checks: ci/test")
				// Nothing reached main, no PR was merged, and CI never ran on
				// a group head: every push was the jobs' GITHUB_TOKEN's.
				mainAfter, _ := w.Repo.Ref("refs/heads/main")
				assert.Equal(t, mainBefore, mainAfter, "nothing was pushed to main")
				prs := w.Repo.PRs()
				assert.Len(t, prs, 2, "one PR per group")
				for _, pr := range prs {
					assert.False(t, pr.GetMerged(), "PR #%d", pr.GetNumber())
				}
				for _, g := range s.Groups {
					require.NotEmpty(t, g.Head, "group %s", g.ID)
					assert.Empty(t, w.Repo.CheckRuns(g.Head), "group %s's head %s has no check run", g.ID, g.Head)
				}
				for _, c := range f.Calls() {
					if c.Method == http.MethodPut && strings.HasSuffix(c.Route, "/pulls/{number}/merge") {
						t.Errorf("a merge was attempted: %s %s (%d)", c.Method, c.Path, c.Status)
					}
				}
				assertPushers(t, f, ghfake.ActionsLogin)
				t.Logf("paused after %d sweeps: %s", sweeps, s.Reason)
				return
			}

			if label != "bazinga:done" {
				w.Dump(issue)
			}
			require.Equal(t, "bazinga:done", label)
			// CI concludes after the push (as on GitHub): its run's
			// completion, not the schedule, wakes the session (issue 22).
			assert.Zero(t, sweeps, "schedule runs the session needed")
			// A wake is a workflow_run run of bazinga.yml whose reconcile
			// ran, or waited as pending and was replaced by a newer run of
			// the session's (GitHub keeps one pending run per concurrency
			// group), which then did its work: under load a step's result
			// can arrive just after CI's completion.
			ciWakes := 0
			for _, r := range w.F.Runs() {
				if r.Workflow != "bazinga.yml" || r.Event != "workflow_run" {
					continue
				}
				for _, j := range w.F.Jobs(r.ID) {
					if j.Spec.ID == "reconcile" && j.Status == "completed" && (j.Conclusion == "success" || j.Conclusion == "cancelled") {
						ciWakes++
					}
				}
			}
			assert.Positive(t, ciWakes, "a CI run's completion woke the orchestrator")
			s := w.AssertVerified(issue, trust)
			w.AssertJobs(s)
			w.LogActionsUse(s)
			// assertVerified checked each PR merged at the head the engine
			// recorded for its group; CI passed on exactly that head.
			for _, g := range s.Groups {
				runs := w.Repo.CheckRuns(g.Head)
				require.Len(t, runs, 1, "group %s's head %s has the CI's check run", g.ID, g.Head)
				assert.Equal(t, "ci/test", runs[0].GetName())
				assert.Equal(t, "success", runs[0].GetConclusion())
				// The orchestrator read that head's checks before the merge.
				read := false
				for _, c := range f.Calls() {
					if c.Method == http.MethodGet && strings.HasSuffix(c.Path, "/commits/"+g.Head+"/check-runs") && c.Status == http.StatusOK && c.Login == ghfake.ActionsLogin {
						read = true
					}
				}
				assert.True(t, read, "group %s: the orchestrator read the check runs of %s", g.ID, g.Head)
			}
			// Both merges went through the API, as the App, with nothing
			// refused; every push was the App's (the orchestrator's
			// github-actions[bot] only creates branches and opens PRs).
			jobs := f.BotLogin()
			if tc.approve {
				jobs = ghfake.ActionsLogin // no exchange: the jobs' GITHUB_TOKEN
				approvedMu.Lock()
				assert.NotEmpty(t, approved, "alice approved the held CI runs")
				approvedMu.Unlock()
			}
			merges := 0
			for _, c := range f.Calls() {
				if c.Method == http.MethodPut && strings.HasSuffix(c.Route, "/pulls/{number}/merge") {
					merges++
					assert.Equal(t, http.StatusOK, c.Status, "merge %s", c.Path)
					assert.Equal(t, jobs, c.Login, "merge %s", c.Path)
				}
			}
			assert.Equal(t, 2, merges)
			assertPushers(t, f, jobs)
			for _, pr := range w.Repo.PRs() {
				assert.Equal(t, ghfake.ActionsLogin, pr.GetUser().GetLogin(), "PR #%d is opened by the orchestrator", pr.GetNumber())
			}
			if !tc.exchange {
				return
			}
			// Each privileged job exchanged its own OIDC token.
			exchanged := 0
			for _, j := range w.JobsCopy() {
				if j.Command == "publish" || j.Command == "land" {
					exchanged++
					assert.Contains(t, j.Output, "acting as "+f.BotLogin()+" with an App token for "+E2eFull, "%s job of run %d", j.Command, j.Run.ID)
				}
			}
			assert.Positive(t, exchanged)
		})
	}
}

// startTokenExchange starts `bazinga serve`'s POST /token for the fake's
// App, trusting the fake OIDC issuer, and returns its URL.
func startTokenExchange(t *testing.T, f *ghfake.Fake, o *ghfake.OIDCIssuer) string {
	t.Helper()
	factory, err := ghapi.NewClientFactory(ghapi.App{ID: f.AppID(), PrivateKey: testkey.PEM(t), APIURL: f.APIURL()}, f.Transport(),
		ghapi.TransportOptions{MaxRetries: -1, MaxRateLimitRetries: -1})
	require.NoError(t, err)
	x, err := server.NewTokenExchange(server.TokenExchangeConfig{Issuer: o.URL()},
		server.TokenExchangeOptions{GitHub: server.FactoryGitHub{F: factory}, Login: f.BotLogin()})
	require.NoError(t, err)
	srv := httptest.NewServer(x)
	t.Cleanup(srv.Close)
	return srv.URL + server.TokenPath
}

// assertPushers: every git push (receive-pack) was made by login.
func assertPushers(t *testing.T, f *ghfake.Fake, login string) {
	t.Helper()
	pushes := 0
	for _, c := range f.GitCalls() {
		if c.Method == http.MethodPost && strings.HasSuffix(c.Path, "/git-receive-pack") {
			pushes++
			assert.Equal(t, login, c.Login, "push %d", c.Seq)
		}
	}
	assert.Positive(t, pushes, "the jobs pushed")
}
