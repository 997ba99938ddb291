package local

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/internal/modelfake"
	"github.com/bazinga-bot/bazinga/internal/realcli"
	"github.com/bazinga-bot/bazinga/internal/realteam"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// A full local session with the real CLI as every agent: the pm plans, a
// developer edits files and runs the tests with the CLI's own tools, QA and
// the tech lead pass it, it merges, and the pm's BAZINGA is verified — with
// the developer's real files on main (issue 19 item 9).
func TestRealCLISession(t *testing.T) {
	for _, cli := range []string{"claude", "codex"} {
		t.Run(cli, func(t *testing.T) {
			var bin string
			if cli == "claude" {
				bin = realcli.Claude(t)
			} else {
				bin = realcli.Codex(t)
			}
			tm := realteam.New(cli)
			srv := modelfake.Start(t, tm.Script)
			files := realteam.Repo()
			if cli == "codex" {
				// codex 0.169 talks to its catalogue's gpt-6 models in a "code
				// mode" (tools nested in an additional_tools input item, called
				// through JavaScript) that the scripted server does not play; for
				// gpt-5.5 it sends the Responses API's function and custom tools.
				files[".github/bazinga.yml"] = "models: {pm: gpt-5.5, developer: gpt-5.5, senior: gpt-5.5, qa: gpt-5.5, tech_lead: gpt-5.5, investigator: gpt-5.5, requirements: gpt-5.5, validator: gpt-5.5, escalation: gpt-5.5}\n"
			}
			repo := gitRepo(t, files)
			// A home of its own, as on a fresh runner: the machine's shell
			// profile (pyenv, nvm, …) is not the agent's. Go's build cache is
			// kept, so the tests do not rebuild the standard library.
			home := t.TempDir()
			gocache, err := exec.Command("go", "env", "GOCACHE").Output()
			require.NoError(t, err)
			t.Setenv("GOCACHE", strings.TrimSpace(string(gocache)))
			t.Setenv("HOME", home)
			var cmd string
			var pass []string
			switch cli {
			case "claude":
				t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
				t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
				t.Setenv("CLAUDE_CONFIG_DIR", filepath.Join(home, ".claude"))
				// The README's command, as written: the driver adds the rest.
				cmd = bin + " -p --model {model}"
				pass = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR", "GOCACHE"}
			case "codex":
				t.Setenv("CODEX_API_KEY", "sk-codex-test")
				t.Setenv("CODEX_HOME", filepath.Join(home, ".codex"))
				require.NoError(t, os.MkdirAll(filepath.Join(home, ".codex"), 0o755))
				// A provider of the user's own (as for a proxy or gateway): the
				// built-in one tries a WebSocket first.
				cmd = bin + ` exec -c model_provider=gw -c 'model_providers.gw={name="gw", base_url="` + srv.OpenAIBaseURL() +
					`", env_key="CODEX_API_KEY", wire_api="responses"}' --disable plugins`
				pass = []string{"CODEX_API_KEY", "CODEX_HOME", "GOCACHE"}
			}
			test := "go test ./..."
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			res, err := Run(ctx, Options{Repo: repo, Requirements: "Add Mul to calc", AgentCommand: cmd,
				TestCommand: &test, PassEnv: pass, Out: &out, JSON: true})
			require.NoError(t, err, out.String())
			require.True(t, res.Verified(), "%s: %s\n%s\nunhandled: %v", res.Status, res.Reason, out.String(), srv.Unhandled())

			// The developer's real edits, made with the CLI's own tools, are on main.
			b, err := os.ReadFile(filepath.Join(repo, "mul.go"))
			require.NoError(t, err)
			assert.Equal(t, realteam.MulGo, string(b))
			assert.Contains(t, gitCLI(t, repo, "log", "--format=%an %s", "main"), "developer: "+realteam.DeveloperSummary)
			assert.Empty(t, gitCLI(t, repo, "status", "--porcelain"))

			// Every step ran the real CLI, with the driver's flags, and reported
			// usage read from the CLI's own output.
			text := out.String()
			assert.Contains(t, text, `"type":"agent","cli":"`+cli+`"`)
			s := loadState(t, repo, res.ID)
			for _, st := range s.Steps {
				if st.Role == pipeline.RoleMerge || st.Role == pipeline.RoleValidate || st.State != pipeline.StepDone {
					continue
				}
				require.NotNil(t, st.Usage, "step %s has usage", st.ID)
				assert.Positive(t, st.Usage.OutputTokens, "step %s", st.ID)
			}
			reqs := srv.Requests()
			assert.NotEmpty(t, reqs)
			for _, r := range reqs {
				if role := realteam.RoleOf(r); role == "qa" || role == "tech_lead" || role == "pm" {
					assert.False(t, r.HasTool("Write") || r.HasTool("Edit"), "%s is offered no edit tool", role)
				}
			}
		})
	}
}

// loadState reads a session's saved state.
func loadState(t *testing.T, repo, id string) pipeline.Session {
	t.Helper()
	st, err := OpenStore(repo, id)
	require.NoError(t, err)
	s, _, err := st.Load()
	require.NoError(t, err)
	return s
}
