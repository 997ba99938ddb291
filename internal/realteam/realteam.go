// Package realteam is the scripted "team" the real-CLI session tests play against the scripted model server
// (internal/modelfake): one model answering as every bazinga role of a one-group session, using the CLI's own
// tools. The pm plans one group (Mul), the developer writes mul.go and mul_test.go and runs `go test`, QA runs the
// tests, the tech lead reads the change and approves, and the pm checks main and says BAZINGA.
//
// It is the team of local/realcli_test.go, exported so that the local, Action-only and App-mode end-to-end tests
// play the same session; one difference: the pm's final check reads mul.go with claude's Read tool, since claude
// offers the read-only pm no Bash (the copy in local/ calls Bash there, which claude refuses).
package realteam

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/bazinga-bot/bazinga/internal/modelfake"
)

// Repo is the repository the real CLIs work on: a Go module with one function (a fresh copy each call).
func Repo() map[string]string { return maps.Clone(calcRepo) }

var calcRepo = map[string]string{
	"go.mod":       "module calc\n\ngo 1.22\n",
	"calc.go":      "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int { return a + b }\n",
	"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add\")\n\t}\n}\n",
}

// The files the developer writes.
const (
	MulGo   = "package calc\n\n// Mul returns a times b.\nfunc Mul(a, b int) int { return a * b }\n"
	MulTest = "package calc\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {\n\tif Mul(4, 5) != 20 {\n\t\tt.Fatal(\"Mul\")\n\t}\n}\n"
)

// DeveloperSummary is the first summary line of the developer's result (its commit's subject).
const DeveloperSummary = "Added Mul with a test"

var (
	roleRe = regexp.MustCompile(`(?m)^- Role: ([a-z_]+)`)
	cwdRe  = regexp.MustCompile(`(?:Primary working directory|Working directory|cwd)[:=]\s*(/[^\s<"]+)`)
)

// RoleOf reads which bazinga role a conversation is: the prompt says so.
func RoleOf(r modelfake.Request) string {
	for _, t := range r.UserTexts() {
		if m := roleRe.FindStringSubmatch(t); m != nil {
			return m[1]
		}
	}
	return ""
}

// WorkDirOf is the working directory the CLI told the model about.
func WorkDirOf(r modelfake.Request) string {
	texts := append([]string{r.System}, r.UserTexts()...)
	for _, t := range texts {
		if m := cwdRe.FindStringSubmatch(t); m != nil {
			return strings.TrimRight(m[1], ".,)")
		}
	}
	return ""
}

// Team is a scripted model playing every role of a one-group session with the CLI's own tools: the developer
// writes two files and runs the tests, QA runs them, the tech lead reads the change, the pm plans and checks.
type Team struct {
	cli string // "claude" or "codex"

	mu    sync.Mutex
	final map[string]time.Time // role → when its last final answer was sent
}

// New is the team for a CLI: "claude" or "codex".
func New(cli string) *Team { return &Team{cli: cli, final: map[string]time.Time{}} }

// Finals reports when each role last sent its final answer.
func (tm *Team) Finals() map[string]time.Time {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return maps.Clone(tm.final)
}

func (tm *Team) answer(r modelfake.Request, result map[string]any) modelfake.Reply {
	tm.mu.Lock()
	tm.final[RoleOf(r)] = time.Now()
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

func (tm *Team) write(r modelfake.Request, name, content string) modelfake.ToolCall {
	if tm.cli == "codex" {
		var b strings.Builder
		b.WriteString("*** Begin Patch\n*** Add File: " + name + "\n")
		for _, l := range strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n") {
			b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
		}
		b.WriteString("*** End Patch\n")
		return modelfake.ToolCall{Name: "apply_patch", Input: b.String()}
	}
	return modelfake.ToolCall{Name: "Write", Input: map[string]any{"file_path": filepath.Join(WorkDirOf(r), name), "content": content}}
}

func (tm *Team) shell(cmd string) modelfake.ToolCall {
	if tm.cli == "codex" {
		return modelfake.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": cmd}}
	}
	return modelfake.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run " + cmd}}
}

// Script is the modelfake.Script of the team.
func (tm *Team) Script(r modelfake.Request) modelfake.Reply {
	// Where a conversation is: how many tool results came back (a turn with
	// two tool calls is one assistant message in one API, two in another).
	turn := r.NumToolResults()
	prompt := strings.Join(r.UserTexts(), "\n")
	use := func(calls ...modelfake.ToolCall) modelfake.Reply {
		return modelfake.Reply{ToolCalls: calls, Usage: modelfake.Usage{InputTokens: 1500, OutputTokens: 60}}
	}
	switch RoleOf(r) {
	case "pm":
		if strings.Contains(prompt, "Every group is merged") {
			// The pm reads the repository only: claude offers it no Bash, so it
			// reads the merged file (codex runs its commands read-only).
			readOnly := tm.cli == "claude" && !r.HasTool("Bash")
			if turn == 0 {
				if readOnly {
					return use(modelfake.ToolCall{Name: "Read", Input: map[string]any{"file_path": filepath.Join(WorkDirOf(r), "mul.go")}})
				}
				return use(tm.shell("go test ./..."))
			}
			if last, _ := r.LastToolResult(); readOnly && !strings.Contains(last.Text, "func Mul(a, b int) int") {
				return tm.answer(r, map[string]any{"status": "NEEDS_CLARIFICATION", "summary": []string{"mul.go is not on main: " + firstLine(last.Text)},
					"handoff": map[string]any{"question": "Where is Mul?"}})
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
			return use(tm.write(r, "mul.go", MulGo), tm.write(r, "mul_test.go", MulTest))
		case 2:
			return use(tm.shell("go test ./..."))
		}
		last, _ := r.LastToolResult()
		if !strings.Contains(last.Text, "ok  \tcalc") {
			return tm.answer(r, map[string]any{"status": "BLOCKED", "summary": []string{"tests did not pass: " + firstLine(last.Text)}})
		}
		return tm.answer(r, map[string]any{"status": "READY_FOR_QA", "summary": []string{DeveloperSummary, "2 files", "tests pass"},
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
