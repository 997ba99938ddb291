package local

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/internal/modelfake"
	"github.com/bazinga-bot/bazinga/internal/realcli"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// The repository the real CLIs work on: a Go module with one function.
var calcRepo = map[string]string{
	"go.mod":       "module calc\n\ngo 1.22\n",
	"calc.go":      "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int { return a + b }\n",
	"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n",
}

const mulGo = "package calc\n\n// Mul returns a times b.\nfunc Mul(a, b int) int { return a * b }\n"
const mulTest = "package calc\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {\n\tif Mul(4, 5) != 20 {\n\t\tt.Fatal(\"Mul\")\n\t}\n}\n"

var (
	roleRe = regexp.MustCompile(`(?m)^- Role: ([a-z_]+)`)
	cwdRe  = regexp.MustCompile(`(?:Primary working directory|Working directory|cwd)[:=]\s*(/[^\s<"]+)`)
)

// roleOf reads which bazinga role a conversation is: the prompt says so.
func roleOf(r modelfake.Request) string {
	for _, t := range r.UserTexts() {
		if m := roleRe.FindStringSubmatch(t); m != nil {
			return m[1]
		}
	}
	return ""
}

// workDirOf is the working directory the CLI told the model about.
func workDirOf(r modelfake.Request) string {
	texts := append([]string{r.System}, r.UserTexts()...)
	for _, t := range texts {
		if m := cwdRe.FindStringSubmatch(t); m != nil {
			return strings.TrimRight(m[1], ".,)")
		}
	}
	return ""
}

// team is a scripted model playing every role of a one-group session with
// the CLI's own tools: the developer writes two files and runs the tests,
// QA runs them, the tech lead reads the change, the pm plans and checks.
type team struct {
	cli string // "claude" or "codex"

	mu    sync.Mutex
	final map[string]time.Time // role → when its last final answer was sent
}

func (tm *team) answer(r modelfake.Request, result map[string]any) modelfake.Reply {
	tm.mu.Lock()
	tm.final[roleOf(r)] = time.Now()
	tm.mu.Unlock()
	b, _ := json.Marshal(result)
	if tm.cli == "claude" {
		// claude --json-schema offers a tool whose call is the answer.
		if r.HasTool("StructuredOutput") {
			return modelfake.Reply{ToolCalls: []modelfake.ToolCall{{Name: "StructuredOutput", Input: json.RawMessage(b)}},
				Usage: modelfake.Usage{InputTokens: 2000, OutputTokens: 120}}
		}
	}
	return modelfake.Reply{Text: string(b), Usage: modelfake.Usage{InputTokens: 2000, OutputTokens: 120}}
}

func (tm *team) write(r modelfake.Request, name, content string) modelfake.ToolCall {
	if tm.cli == "codex" {
		var b strings.Builder
		b.WriteString("*** Begin Patch\n*** Add File: " + name + "\n")
		for _, l := range strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n") {
			b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
		}
		b.WriteString("*** End Patch\n")
		return modelfake.ToolCall{Name: "apply_patch", Input: b.String()}
	}
	return modelfake.ToolCall{Name: "Write", Input: map[string]any{"file_path": filepath.Join(workDirOf(r), name), "content": content}}
}

func (tm *team) shell(cmd string) modelfake.ToolCall {
	if tm.cli == "codex" {
		return modelfake.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": cmd}}
	}
	return modelfake.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run " + cmd}}
}

func (tm *team) script(r modelfake.Request) modelfake.Reply {
	// Where a conversation is: how many tool results came back (a turn with
	// two tool calls is one assistant message in one API, two in another).
	turn := r.NumToolResults()
	prompt := strings.Join(r.UserTexts(), "\n")
	use := func(calls ...modelfake.ToolCall) modelfake.Reply {
		return modelfake.Reply{ToolCalls: calls, Usage: modelfake.Usage{InputTokens: 1500, OutputTokens: 60}}
	}
	switch roleOf(r) {
	case "pm":
		if strings.Contains(prompt, "Every group is merged") {
			if turn == 0 {
				return use(tm.shell("go test ./..."))
			}
			return tm.answer(r, map[string]any{"status": "BAZINGA", "summary": []string{"Mul is merged and tested"},
				"handoff": map[string]any{"criteria": []any{map[string]any{"criterion": "Mul multiplies", "met": true, "evidence": "TestMul passes on main"}}}})
		}
		return tm.answer(r, map[string]any{"status": "PLANNING_COMPLETE", "summary": []string{"one group: Mul"},
			"handoff": map[string]any{"plan": map[string]any{"mode": "simple",
				"groups":           []any{map[string]any{"id": "A", "name": "mul", "task": "Add Mul(a, b int) int to calc with a test", "type": "implementation", "tier": "developer", "phase": 1}},
				"success_criteria": []string{"Mul multiplies"}}}})
	case "developer":
		switch turn {
		case 0:
			return use(tm.write(r, "mul.go", mulGo), tm.write(r, "mul_test.go", mulTest))
		case 2:
			return use(tm.shell("go test ./..."))
		}
		last, _ := r.LastToolResult()
		if !strings.Contains(last.Text, "ok  \tcalc") {
			return tm.answer(r, map[string]any{"status": "BLOCKED", "summary": []string{"tests did not pass: " + firstLine(last.Text)}})
		}
		return tm.answer(r, map[string]any{"status": "READY_FOR_QA", "summary": []string{"Added Mul with a test", "2 files", "tests pass"},
			"handoff": map[string]any{"files_changed": []string{"mul.go", "mul_test.go"}}})
	case "qa":
		if turn == 0 {
			return use(tm.shell("go test -run TestMul -v ./..."))
		}
		last, _ := r.LastToolResult()
		if !strings.Contains(last.Text, "PASS") {
			return tm.answer(r, map[string]any{"status": "FAIL", "summary": []string{"TestMul does not pass"}})
		}
		return tm.answer(r, map[string]any{"status": "PASS", "summary": []string{"TestMul passes"},
			"handoff": map[string]any{"tests": map[string]any{"total": 2, "passing": 2, "failing": 0}}})
	case "tech_lead":
		if turn == 0 {
			return use(tm.shell("cat mul.go"))
		}
		return tm.answer(r, map[string]any{"status": "APPROVED", "summary": []string{"Mul is right and tested"}})
	}
	// Anything else the CLI asks (a title, a summary) gets a short answer.
	return modelfake.Reply{Text: "ok", Usage: modelfake.Usage{InputTokens: 10, OutputTokens: 1}}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

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
			tm := &team{cli: cli, final: map[string]time.Time{}}
			srv := modelfake.Start(t, tm.script)
			files := maps.Clone(calcRepo)
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
			assert.Equal(t, mulGo, string(b))
			assert.Contains(t, gitCLI(t, repo, "log", "--format=%an %s", "main"), "developer: Added Mul with a test")
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
				if roleOf(r) == "qa" || roleOf(r) == "tech_lead" || roleOf(r) == "pm" {
					assert.False(t, r.HasTool("Write") || r.HasTool("Edit"), "%s is offered no edit tool", roleOf(r))
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
