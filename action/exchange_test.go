package action_test

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/bazinga-bot/bazinga/server"
)

// exchangeServer is `bazinga serve`'s token exchange for the unit's fake,
// trusting the fake's OIDC issuer.
func exchangeServer(t *testing.T, u *unit, cfg server.TokenExchangeConfig) (*ghfake.OIDCIssuer, string) {
	t.Helper()
	o := ghfake.StartOIDC(t, u.F)
	return o, exchangeServerFor(t, u, o, cfg)
}

func exchangeServerFor(t *testing.T, u *unit, o *ghfake.OIDCIssuer, cfg server.TokenExchangeConfig) string {
	t.Helper()
	factory, err := ghapi.NewClientFactory(ghapi.App{ID: u.F.AppID(), PrivateKey: testkey.PEM(t), APIURL: u.F.APIURL()}, u.F.Transport(),
		ghapi.TransportOptions{MaxRetries: -1, MaxRateLimitRetries: -1})
	require.NoError(t, err)
	cfg.Issuer = o.URL()
	x, err := server.NewTokenExchange(cfg, server.TokenExchangeOptions{GitHub: server.FactoryGitHub{F: factory}, Login: u.F.BotLogin()})
	require.NoError(t, err)
	srv := httptest.NewServer(x)
	t.Cleanup(srv.Close)
	return srv.URL + server.TokenPath
}

// withJobOIDC adds the runner's id-token variables of run to env.
func withJobOIDC(env map[string]string, o *ghfake.OIDCIssuer, run ghfake.Run) map[string]string {
	for _, kv := range o.JobEnv(run) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// pushSenders lists the senders of push deliveries to ref.
func pushSenders(f *ghfake.Fake, ref string) []string {
	var out []string
	for _, d := range f.Deliveries() {
		if d.Event != "push" {
			continue
		}
		var p struct {
			Ref    string `json:"ref"`
			Sender struct {
				Login string `json:"login"`
			} `json:"sender"`
		}
		if json.Unmarshal(d.Payload, &p) == nil && p.Ref == ref {
			out = append(out, p.Sender.Login)
		}
	}
	return out
}

func agentRuns(f *ghfake.Fake) int {
	n := 0
	for _, r := range f.Runs() {
		if r.Workflow == "bazinga-agent.yml" {
			n++
		}
	}
	return n
}

// ciRuns lists the CI runs pushes to group A's branch started (GitHub
// starts push workflows for branches and tags only; the fake also for
// refs/bazinga/claims/…).
func ciRuns(f *ghfake.Fake) []ghfake.Run {
	var out []ghfake.Run
	for _, r := range f.Runs() {
		var ev struct {
			Ref string `json:"ref"`
		}
		if r.Workflow == "ci.yml" && json.Unmarshal(r.EventPayload, &ev) == nil && ev.Ref == "refs/heads/bazinga/1-A" {
			out = append(out, r)
		}
	}
	return out
}

// A publish job that exchanges its OIDC token pushes and posts as the App:
// the push starts the repository's CI (a GITHUB_TOKEN's push starts none),
// and the orchestrator applies the result it posted.
func TestPublishActsAsTheAppThroughTheExchange(t *testing.T) {
	for _, viaExchange := range []bool{false, true} {
		name := "GITHUB_TOKEN"
		if viaExchange {
			name = "exchanged App token"
		}
		t.Run(name, func(t *testing.T) {
			u := newUnit(t)
			require.NoError(t, u.F.AddWorkflow(E2eFull, "ci.yml", ghfake.Workflow{Name: "CI", On: []string{"push"}}))
			o, url := exchangeServer(t, u, server.TokenExchangeConfig{})
			run, _ := groupStep(t, u, u.AgentCmd(t))
			step := run.Inputs["step"]
			// The orchestrator (the App) created the group branches: their
			// CI runs are not the publish's.
			ciBefore := len(ciRuns(u.F))
			dispatched := agentRuns(u.F)

			runTok := u.F.RunToken(run)
			inputs := map[string]string{"command": "publish", "step": step, "github-token": runTok}
			env := u.Env(inputs)
			if viaExchange {
				env = withJobOIDC(u.Env(map[string]string{"command": "publish", "step": step, "github-token": runTok, "token-exchange-url": url}), o, run)
			}
			r := u.action(env)
			require.Equal(t, 0, r.code, r.stdout)
			require.NoError(t, u.F.WaitWebhooks(10*time.Second))

			head, claimed, results := u.published(step)
			require.NotEmpty(t, head)
			assert.True(t, claimed)
			assert.Equal(t, 1, results)
			var author string
			for _, n := range append([]int{u.issue}, prNumbers(u.Repo)...) {
				for _, c := range u.Repo.Comments(n) {
					if rec, ok := codec.ParseResultComment(c.GetBody()); ok && rec.Step == step {
						author = c.GetUser().GetLogin()
					}
				}
			}
			senders := pushSenders(u.F, "refs/heads/bazinga/1-A")
			require.NotEmpty(t, senders)
			if !viaExchange {
				assert.Equal(t, ghfake.ActionsLogin, author)
				assert.Equal(t, ghfake.ActionsLogin, senders[len(senders)-1])
				assert.Len(t, ciRuns(u.F), ciBefore, "a GITHUB_TOKEN's push starts no workflow")
				return
			}
			assert.Equal(t, u.F.BotLogin(), author, "the result is the App's")
			assert.Equal(t, u.F.BotLogin(), senders[len(senders)-1], "the push is the App's")
			ci := ciRuns(u.F)
			require.Len(t, ci, ciBefore+1, "the App's push starts CI")
			started := ci[ciBefore]
			assert.Equal(t, "push", started.Event)
			assert.Equal(t, u.F.BotLogin(), started.Actor)
			var ev struct {
				Ref   string `json:"ref"`
				After string `json:"after"`
			}
			require.NoError(t, json.Unmarshal(started.EventPayload, &ev))
			assert.Equal(t, "refs/heads/bazinga/1-A", ev.Ref)
			assert.Equal(t, head, ev.After, "CI runs on the commit the step published")
			// Masked: both the job's OIDC token and the App token.
			masks := regexp.MustCompile(`(?m)^::add-mask::(.+)$`).FindAllStringSubmatch(r.stdout, -1)
			assert.GreaterOrEqual(t, len(masks), 3, "github-token, the OIDC token, the App token")
			for _, m := range masks {
				assert.Equal(t, 1, strings.Count(r.stdout, m[1]), "a masked value appears only in its mask command")
			}
			assert.Contains(t, r.stdout, "acting as bazinga[bot] with an App token for acme/widgets")
			// The orchestrator applied the App-posted result at once (by
			// webhook, not at the next sweep): the next step is dispatched.
			assert.Greater(t, agentRuns(u.F), dispatched, "the session moved on")
		})
	}
}

func TestTokenExchangeInputIsForPrivilegedJobsOnly(t *testing.T) {
	u := newUnit(t)
	o, url := exchangeServer(t, u, server.TokenExchangeConfig{})
	ro := u.readToken()
	for _, cmd := range []string{"agent", "gate", "validate"} {
		t.Run(cmd, func(t *testing.T) {
			step := "1/_/pm/1"
			switch cmd {
			case "gate":
				step = "1/A/merge/9"
			case "validate":
				step = "1/_/validate/9"
			}
			r := u.action(withJobOIDC(u.Env(map[string]string{"command": cmd, "step": step, "github-token": ro, "token-exchange-url": url}), o, u.Run))
			assert.Equal(t, 1, r.code, r.stdout)
			assert.Contains(t, r.stdout, "input `token-exchange-url` is set on a "+cmd+" job: only the privileged jobs (publish, land, reconcile) may act as the App")
			assert.Contains(t, r.stdout, "Trust boundary")
		})
	}
	assert.False(t, u.claimed("1/_/pm/1"))

	// An unprivileged job that merely holds id-token: write is warned.
	r := u.action(withJobOIDC(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": ro, "agent-command": u.AgentCmd(t)}), o, u.Run))
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, "::warning::bazinga agent: this job has `id-token: write`")

	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no id-token: write", u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "token-exchange-url": url}),
			"add `permissions: id-token: write` to this job"},
		{"plain http to another host", withJobOIDC(u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "token-exchange-url": "http://bazinga.example.com/token"}), o, u.Run),
			"must be https"},
		{"the wrong audience", withJobOIDC(u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "token-exchange-url": url, "token-exchange-audience": "someone-else"}), o, u.Run),
			"refused (401 Unauthorized, check audience): the token's audience is not \"bazinga\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := u.action(c.env)
			assert.Equal(t, 1, r.code, r.stdout)
			assert.Contains(t, r.stdout, c.want)
		})
	}
	assert.False(t, u.claimed("1/_/pm/1"), "nothing published")
	assert.Zero(t, u.resultComments())
}

// The orchestrator's job can act as the App too: what it writes is the
// App's, and it reads the App's state.
func TestReconcileActsAsTheAppThroughTheExchange(t *testing.T) {
	u := newUnit(t)
	o, url := exchangeServer(t, u, server.TokenExchangeConfig{})
	run := u.Run
	run.Workflow = "bazinga.yml"
	env := withJobOIDC(u.Env(map[string]string{"command": "reconcile", "token-exchange-url": url}), o, run)
	env["GITHUB_EVENT_NAME"] = "schedule"
	r := u.action(env)
	require.Equal(t, 0, r.code, r.stdout)
	assert.Contains(t, r.stdout, "acting as bazinga[bot]")
	// With the agent workflow as the run's, the same job is refused if the
	// server allows only the orchestrator's workflow.
	url2 := exchangeServerFor(t, u, o, server.TokenExchangeConfig{Workflows: []string{".github/workflows/bazinga.yml"}})
	run.Workflow = "bazinga-agent.yml"
	env = withJobOIDC(u.Env(map[string]string{"command": "reconcile", "token-exchange-url": url2}), o, run)
	env["GITHUB_EVENT_NAME"] = "schedule"
	r = u.action(env)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "check workflow")
}

// The examples give `id-token: write` to the privileged jobs only, which
// pass token-exchange-url; action.yml declares the inputs and hands them to
// the binary.
func TestExamplesGiveIDTokensToPrivilegedJobsOnly(t *testing.T) {
	b, err := os.ReadFile("../examples/workflows/bazinga-agent.yml")
	require.NoError(t, err)
	var wf struct {
		Jobs map[string]struct {
			Permissions map[string]string `yaml:"permissions"`
			Steps       []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal(b, &wf))
	withToken := []string{}
	for name, job := range wf.Jobs {
		for _, st := range job.Steps {
			if !strings.HasPrefix(st.Uses, "bazinga-bot/bazinga@") {
				continue
			}
			cmd := st.With["command"]
			if strings.Contains(cmd, "publish") || strings.Contains(cmd, "land") {
				assert.Equal(t, "write", job.Permissions["id-token"], "job %s", name)
				assert.Equal(t, "${{ vars.BAZINGA_TOKEN_EXCHANGE_URL }}", st.With["token-exchange-url"], "job %s", name)
				withToken = append(withToken, name)
			} else {
				assert.Empty(t, job.Permissions["id-token"], "job %s runs agent code: no id-token", name)
				assert.Empty(t, st.With["token-exchange-url"], "job %s", name)
			}
		}
	}
	assert.ElementsMatch(t, []string{"publish", "land"}, withToken)

	b, err = os.ReadFile("../action.yml")
	require.NoError(t, err)
	var act struct {
		Inputs map[string]struct {
			Default string `yaml:"default"`
		} `yaml:"inputs"`
		Runs struct {
			Steps []struct {
				ID  string            `yaml:"id"`
				Env map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	require.NoError(t, yaml.Unmarshal(b, &act))
	require.Contains(t, act.Inputs, "token-exchange-url")
	assert.Equal(t, "bazinga", act.Inputs["token-exchange-audience"].Default)
	for _, st := range act.Runs.Steps {
		if st.ID != "run" {
			continue
		}
		for _, in := range []string{"token-exchange-url", "token-exchange-audience"} {
			for _, k := range []string{"INPUT_" + strings.ToUpper(in), "INPUT_" + strings.ToUpper(strings.ReplaceAll(in, "-", "_"))} {
				assert.Equal(t, "${{ inputs."+in+" }}", st.Env[k], k)
			}
		}
	}
}
