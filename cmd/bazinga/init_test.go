package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/testcmd"
)

func TestChooseInit(t *testing.T) {
	onPath := func(progs ...string) func(string) (string, error) {
		return func(p string) (string, error) {
			for _, x := range progs {
				if x == p {
					return "/usr/bin/" + p, nil
				}
			}
			return "", errors.New("not found")
		}
	}
	gradle := testcmd.FromMap(map[string]string{"build.gradle": "", "gradlew": ""})
	custom := "make check"
	tests := []struct {
		name      string
		files     testcmd.Files
		lookPath  func(string) (string, error)
		testFlag  *string
		agent     string
		env       []string
		tests     string
		junit     string
		set       []string
		warnCount int
	}{
		{"claude first", gradle, onPath("codex", "claude"), nil, "claude -p --model {model}", []string{"ANTHROPIC_API_KEY"}, "./gradlew test",
			"**/build/test-results/test/*.xml", []string{"agent.command", "agent.env", "tests.command", "tests.junit"}, 0},
		{"codex", gradle, onPath("codex"), nil, "codex exec", []string{"CODEX_API_KEY"}, "./gradlew test",
			"**/build/test-results/test/*.xml", []string{"agent.command", "agent.env", "tests.command", "tests.junit"}, 0},
		{"aider: no key named", testcmd.FromMap(nil), onPath("aider"), &custom, "aider --message-file {prompt_file}", nil, "make check", "",
			[]string{"agent.command", "tests.command"}, 0},
		{"nothing found", testcmd.FromMap(map[string]string{"README": ""}), onPath(), nil, "claude -p --model {model}", []string{"ANTHROPIC_API_KEY"}, "go test ./...", "",
			[]string{"agent.command", "agent.env"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := chooseInit(tt.files, tt.lookPath, nil, tt.testFlag)
			assert.Equal(t, tt.agent, c.cfg.Agent.Command)
			assert.Equal(t, tt.env, c.cfg.Agent.Env)
			assert.Equal(t, tt.tests, c.cfg.Tests.Command)
			assert.Equal(t, tt.junit, c.cfg.Tests.JUnit)
			var set []string
			for k := range c.set {
				set = append(set, k)
			}
			sort.Strings(set)
			assert.Equal(t, tt.set, set)
			assert.Len(t, c.warnings, tt.warnCount)
			require.NoError(t, config.Validate(c.cfg))
			// The file init writes reads back to the same configuration.
			got, err := config.ParseConfig(config.CommentedFile(c.cfg, "x", c.set))
			require.NoError(t, err)
			assert.Equal(t, c.cfg, got)
		})
	}
}

// init refuses to overwrite, writing nothing, unless --force; --action
// writes every workflow template the binary carries.
func TestInitWritesAndRefusesToOverwrite(t *testing.T) {
	repo := repoWithCommit(t)
	require.NoError(t, os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module x\n"), 0o644))
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"init", "--repo", repo, "--agent", "my-agent --role {role}"}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "  tests: go test ./... (detected: go.mod)")
	first, err := os.ReadFile(filepath.Join(repo, ".github", "bazinga.yml"))
	require.NoError(t, err)

	errOut.Reset()
	assert.Equal(t, 1, run([]string{"init", "--repo", repo, "--action"}, &out, &errOut))
	assert.Contains(t, errOut.String(), ".github/bazinga.yml; nothing written (--force overwrites)")
	tpl, err := workflowTemplates()
	require.NoError(t, err)
	require.NotEmpty(t, tpl)
	for name := range tpl {
		assert.NoFileExists(t, filepath.Join(repo, ".github", "workflows", name), "nothing written when one file exists")
	}

	out.Reset()
	require.Equal(t, 0, run([]string{"init", "--repo", repo, "--action", "--force", "--test-command", "make check"}, &out, &errOut), errOut.String())
	again, err := os.ReadFile(filepath.Join(repo, ".github", "bazinga.yml"))
	require.NoError(t, err)
	assert.NotEqual(t, string(first), string(again))
	assert.Contains(t, string(again), "  command: make check  # --test-command\n")
	for name, body := range tpl {
		got, err := os.ReadFile(filepath.Join(repo, ".github", "workflows", name))
		require.NoError(t, err)
		assert.Equal(t, string(body), string(got), name)
		assert.Contains(t, out.String(), "wrote .github/workflows/"+name)
	}
}

// config names where each value comes from.
func TestConfigSources(t *testing.T) {
	repo := repoWithCommit(t)
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".github"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".github", "bazinga.yml"), []byte("# mine\nmax_parallel: 2\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "Cargo.toml"), []byte("[package]\n"), 0o644))
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "config")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"config", "--repo", repo, "--agent", "codex exec", "--baseline", "accept"}, &out, &errOut), errOut.String())
	text := out.String()
	for _, re := range []string{
		`\nmax_parallel +2 +file line 2\n`,
		`\ntests\.command +cargo test +detected: Cargo\.toml\n`,
		`\nagent\.command +codex exec +flag --agent\n`,
		`\nmodels\.pm +gpt-6-astra +default of codex \(flag --agent\)\n`,
		`\ntests\.baseline +accept +flag --baseline\n`,
		`\nmerge\.method +push +local mode: merges land by push\n`,
		`\nagent\.timeout +30m +default\n`,
	} {
		assert.Regexp(t, re, text)
	}
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".github", "bazinga.yml"), []byte("max_parallel: 3\n"), 0o644))
	out.Reset()
	require.Equal(t, 0, run([]string{"config", "--repo", repo}, &out, &errOut))
	assert.Contains(t, out.String(), "note: .github/bazinga.yml in the working tree differs from the one committed on main: runs read the committed file, so commit it")

	errOut.Reset()
	assert.Equal(t, 2, run([]string{"config", "--repo", repo, "--baseline", "maybe"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "tests.baseline")
}
