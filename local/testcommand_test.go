package local

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// With no tests.command in the file and no flag, the test command is
// detected from the base's files and shown before the first step (issue 25).
func TestDetectedTestCommandShownBeforeThePM(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README.md": "demo\n", "Makefile": "test:\n\ttest -f hello.txt\n"})
	agentCmd, state := writeAgent(t, scriptAgent)
	t.Setenv("STATE", state)
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd,
		Baseline: pipeline.BaselineOff, PassEnv: []string{"STATE"}, Out: &out})
	require.NoError(t, err, out.String())
	require.True(t, res.Verified(), "%s: %s\n%s", res.Status, res.Reason, out.String())
	text := out.String()
	line := "tests: make test (detected: Makefile has a test target)"
	require.Contains(t, text, line)
	assert.Less(t, strings.Index(text, line), strings.Index(text, "[pm/"), "shown before the pm's step:\n%s", text)
	st, err := OpenStore(repo, res.ID)
	require.NoError(t, err)
	cfg, err := st.Config()
	require.NoError(t, err)
	assert.Equal(t, "make test", cfg.Tests.Command, "the session keeps the detected command")
}

// The file's tests.command wins over detection, and says where it is.
func TestFileTestCommandWinsOverDetection(t *testing.T) {
	repo := gitRepo(t, map[string]string{"go.mod": "module x\n", ".github/bazinga.yml": "# tests\ntests:\n  command: test -f hello.txt\n"})
	agentCmd, state := writeAgent(t, scriptAgent)
	t.Setenv("STATE", state)
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd,
		Baseline: pipeline.BaselineOff, PassEnv: []string{"STATE"}, Out: &out, JSON: true})
	require.NoError(t, err, out.String())
	assert.Contains(t, out.String(), `{"type":"tests","reason":".github/bazinga.yml line 3","command":"test -f hello.txt"}`)
	assert.True(t, res.Verified(), res.Reason)
}

// Everything that cannot work is refused before a session exists, so
// nothing is paid for (issue 25).
func TestTestCommandProblemsBeforeAnythingRuns(t *testing.T) {
	agentCmd, _ := writeAgent(t, scriptAgent)
	plain := gitRepo(t, map[string]string{"README.md": "hi\n"})
	cargo := gitRepo(t, map[string]string{"Cargo.toml": "[package]\nname = \"x\"\n"})
	missing, script := "no-such-tool-xyz test", "./run-tests.sh"
	tests := []struct {
		name string
		opts Options
		path string // PATH for the run, when set
		want string
	}{
		{"nothing says how the tests run", Options{Repo: plain}, "", "no test command: .github/bazinga.yml does not set tests.command and nothing in the repository says how its tests run"},
		{"the flag's program is not installed", Options{Repo: plain, TestCommand: &missing}, "",
			`the test command "no-such-tool-xyz test" cannot run: no-such-tool-xyz is not installed (not found on PATH)`},
		{"the detected program is not installed", Options{Repo: cargo}, "/nonexistent", `the test command "cargo test" cannot run: cargo is not installed`},
		{"the script is not committed", Options{Repo: plain, TestCommand: &script}, "", `the test command "./run-tests.sh" cannot run: ./run-tests.sh is not in the repository`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.path != "" {
				// The agent is found by its path; the tests' program is looked up on PATH.
				t.Setenv("PATH", tt.path)
			}
			tt.opts.Requirements, tt.opts.AgentCommand = "x", agentCmd
			_, err := Run(context.Background(), tt.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NoDirExists(t, filepath.Join(tt.opts.Repo, StoreDir), "nothing may be written before the checks pass")
		})
	}
}

// A command that starts but whose own program is missing fails the
// baseline with the shell's 127: the run names the command, shows its
// output and does not offer to accept it as pre-existing failures.
func TestBaselineThatCannotRunIsNotOfferedForAcceptance(t *testing.T) {
	repo := gitRepo(t, map[string]string{"README.md": "hi\n"})
	agentCmd, state := writeAgent(t, scriptAgent)
	t.Setenv("STATE", state)
	test := "sh -c 'no-such-tool-xyz --run'"
	for _, mode := range []pipeline.BaselineMode{pipeline.BaselinePause, pipeline.BaselineAccept} {
		t.Run(string(mode), func(t *testing.T) {
			var out bytes.Buffer
			res, err := Run(context.Background(), Options{Repo: repo, Requirements: "say hello", AgentCommand: agentCmd, TestCommand: &test,
				Baseline: mode, PassEnv: []string{"STATE"}, Out: &out, Terminal: true, Input: strings.NewReader("a\n")})
			require.NoError(t, err, out.String())
			text := out.String()
			assert.Equal(t, pipeline.SessionPaused, res.Status, text)
			require.NotNil(t, res.Session.Baseline)
			assert.True(t, res.Session.Baseline.CannotRun)
			assert.False(t, res.Session.Baseline.Accepted, "even tests.baseline accept does not accept a command that cannot run")
			assert.Contains(t, text, "🧱 The test command cannot run on main@")
			assert.Contains(t, text, ": sh -c 'no-such-tool-xyz --run'\nOutput (the end):\n  | sh: 1: no-such-tool-xyz: not found")
			assert.Contains(t, text, "Set tests.command in .github/bazinga.yml")
			assert.NotContains(t, text, "Accept these failures")
			assert.NotContains(t, text, "--baseline accept")
			assert.NoFileExists(t, filepath.Join(repo, "hello.txt"), "no work on tests that cannot run")
		})
	}
}

// bazinga runs from any directory of the repository, as git does; an empty
// repository and a missing branch say what is wrong.
func TestRepositoryFromASubdirectoryAndEmptyRepositories(t *testing.T) {
	repo := gitRepo(t, map[string]string{"src/pkg/a.txt": "a\n"})
	root, err := RepoRoot(filepath.Join(repo, "src", "pkg"))
	require.NoError(t, err)
	want, _ := filepath.EvalSymlinks(repo)
	got, _ := filepath.EvalSymlinks(root)
	assert.Equal(t, want, got)

	agentCmd, state := writeAgent(t, scriptAgent)
	t.Setenv("STATE", state)
	test := "test -f hello.txt"
	res, err := Run(context.Background(), Options{Repo: filepath.Join(repo, "src"), Requirements: "say hello", AgentCommand: agentCmd,
		TestCommand: &test, Baseline: pipeline.BaselineOff, PassEnv: []string{"STATE"}})
	require.NoError(t, err)
	assert.True(t, res.Verified(), res.Reason)
	assert.DirExists(t, filepath.Join(repo, StoreDir, "sessions", res.ID), "the session lives at the root")
	assert.NoDirExists(t, filepath.Join(repo, "src", StoreDir))

	empty := t.TempDir()
	gitCLI(t, empty, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(empty, "a.txt"), []byte("a"), 0o644))
	_, err = Run(context.Background(), Options{Repo: empty, Requirements: "x", AgentCommand: agentCmd, TestCommand: &test})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has no commits yet: bazinga works on the head of a branch, so commit your code first")

	_, err = Run(context.Background(), Options{Repo: repo, Base: "develop", Requirements: "x", AgentCommand: agentCmd, TestCommand: &test})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `base branch "develop" not found in `)
	assert.Contains(t, err.Error(), "(its branches: main; say which with --base)")
}
