package pipeline

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecogniseCLI(t *testing.T) {
	tests := []struct {
		command string
		want    AgentCLI
	}{
		{"claude -p --model {model} --output-format json", CLIClaude},
		{"/usr/local/bin/claude -p", CLIClaude},
		{"claude.exe -p", CLIClaude},
		{`'C:\Users\me\AppData\Roaming\npm\claude.cmd' -p`, CLIClaude}, // quoted: the command is split like a POSIX shell
		{"CLAUDE -p", CLIClaude},
		{"npx @anthropic-ai/claude-code -p --model {model}", CLIClaude},
		{"npx -y @anthropic-ai/claude-code@2.1.332 -p", CLIClaude},
		{"npx --yes -- @anthropic-ai/claude-code -p", CLIClaude},
		{"bunx @anthropic-ai/claude-code -p", CLIClaude},
		{"env DISABLE_AUTOUPDATER=1 claude -p", CLIClaude},
		{"env -i HOME=/tmp /opt/bin/claude", CLIClaude},
		{"env -u ANTHROPIC_BASE_URL codex exec", CLICodex},
		{"sh -c 'claude -p --model {model} < {prompt_file}'", CLIClaude},
		{"node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js -p", CLIClaude},
		{"codex exec --model {model}", CLICodex},
		{"node_modules/.bin/codex exec", CLICodex},
		{"./node_modules/.bin/codex exec", CLICodex},
		{"npx @openai/codex exec", CLICodex},
		{"npx -p @openai/codex codex exec", CLICodex},
		{"npx --package=@openai/codex@latest codex exec", CLICodex},
		{"pnpm dlx @openai/codex exec", CLICodex},
		{"npm exec -- @openai/codex exec", CLICodex},
		{"node node_modules/@openai/codex/bin/codex.js exec", CLICodex},
		{"gemini -p -m {model}", CLIGemini},
		{"npx @google/gemini-cli -m {model}", CLIGemini},
		{"yarn dlx @google/gemini-cli", CLIGemini},
		{"aider --model {model} --message-file {prompt_file}", CLIAider},
		{"uvx --from aider-chat aider --yes", CLIAider},
		{"uvx aider-chat --yes", CLIAider},
		{"uv tool run --from aider-chat aider", CLIAider},
		{"pipx run aider-chat --yes", CLIAider},
		{"python -m aider --yes", CLIAider},
		{"opencode run -m {model}", CLIOpenCode},
		{"npx opencode-ai@latest run", CLIOpenCode},
		{"./run-agent.sh", CLIGeneric},
		{"claude-wrapper -p", CLIGeneric},
		{"npx some-agent", CLIGeneric},
		{"npx", CLIGeneric},
		{"python agent.py", CLIGeneric},
		{"node agent.js", CLIGeneric},
		{"sh -c 'echo hi'", CLIGeneric},
		{"sh run.sh", CLIGeneric},
		{"", CLIGeneric},
		{"claude 'unbalanced", CLIGeneric},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			assert.Equal(t, tt.want, RecogniseCLI(tt.command))
		})
	}
}

func TestConfigAgentCLI(t *testing.T) {
	tests := []struct {
		name    string
		cli     AgentCLI
		command string
		want    AgentCLI
	}{
		{"auto recognises", CLIAuto, "codex exec", CLICodex},
		{"auto, unknown command", CLIAuto, "./agent.sh", CLIGeneric},
		{"configured wins", CLIGemini, "./agent.sh", CLIGemini},
		{"configured generic", CLIGeneric, "claude -p", CLIGeneric},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Agent.CLI, c.Agent.Command = tt.cli, tt.command
			assert.Equal(t, tt.want, c.AgentCLI())
		})
	}
	assert.Equal(t, CLIClaude, DefaultConfig().AgentCLI())
}

func TestDefaultModels(t *testing.T) {
	claude := ModelsConfig{PM: "opus", Developer: "haiku", Senior: "sonnet", QA: "sonnet", TechLead: "opus",
		Investigator: "opus", Requirements: "sonnet", Validator: "sonnet", Escalation: "opus"}
	assert.Equal(t, claude, DefaultModels(CLIClaude), "the defaults of ARCHITECTURE.md §8")
	assert.Equal(t, claude, DefaultConfig().Models)
	assert.Equal(t, claude, DefaultModels(CLIAider), "aider's own aliases")
	assert.Equal(t, claude, DefaultModels(CLIGeneric))
	assert.Equal(t, claude, DefaultModels(CLIAuto))
	codex := DefaultModels(CLICodex)
	assert.Equal(t, "gpt-6-astra", codex.PM)
	assert.Equal(t, "gpt-6.1-sol", codex.Senior)
	assert.Equal(t, "gpt-6-luna", codex.Developer)
	gemini := DefaultModels(CLIGemini)
	assert.Equal(t, "pro", gemini.TechLead)
	assert.Equal(t, "flash", gemini.Developer)
	assert.Equal(t, "anthropic/claude-sonnet-5-5", DefaultModels(CLIOpenCode).QA)
	for _, cli := range append(AgentCLIs(), CLIAuto) {
		m := DefaultModels(cli)
		for _, name := range modelKeyNames {
			assert.Empty(t, cfgCheckModel(*m.field(name)), "%s models.%s", cli, name)
		}
		// One model per tier: the roles of a tier share it.
		assert.Equal(t, m.PM, m.Escalation, "%s", cli)
		assert.Equal(t, m.Senior, m.Validator, "%s", cli)
	}
}

func TestParseConfigModelsFollowTheCLI(t *testing.T) {
	tests := []struct {
		name string
		in   string
		cli  AgentCLI
		want func(*ModelsConfig)
	}{
		{"claude by default", "", CLIClaude, nil},
		{"codex command", "agent:\n  command: codex exec --model {model}\n", CLICodex, nil},
		{"gemini through npx", "agent:\n  command: npx @google/gemini-cli -m {model}\n", CLIGemini, nil},
		{"opencode", "agent:\n  command: opencode run -m {model}\n", CLIOpenCode, nil},
		{"agent.cli names the CLI of a wrapper", "agent:\n  command: ./agent.sh {model}\n  cli: codex\n", CLICodex, nil},
		{"agent.cli generic keeps the tier names", "agent:\n  command: codex exec\n  cli: generic\n", CLIGeneric, nil},
		{"a key the file sets is kept", "agent:\n  command: codex exec\nmodels:\n  pm: o3\n  escalation: gpt-6-pro\n", CLICodex,
			func(m *ModelsConfig) { m.PM, m.Escalation = "o3", "gpt-6-pro" }},
		{"kept even when it is Claude's default", "models:\n  qa: sonnet\nagent:\n  command: codex exec\n", CLICodex,
			func(m *ModelsConfig) { m.QA = "sonnet" }},
		{"a null key takes the default", "agent:\n  command: codex exec\nmodels:\n  pm:\n", CLICodex, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tt.in))
			require.NoError(t, err)
			require.NoError(t, cfg.Validate())
			assert.Equal(t, tt.cli, cfg.AgentCLI())
			want := DefaultModels(tt.cli)
			if tt.want != nil {
				tt.want(&want)
			}
			assert.Equal(t, want, cfg.Models)
			// What Marshal writes reads back the same.
			out, err := cfg.Marshal()
			require.NoError(t, err)
			back, err := ParseConfig(out)
			require.NoError(t, err)
			assert.Equal(t, cfg, back)
		})
	}
}

func TestParseConfigAgentCLIAndMaxTurns(t *testing.T) {
	ok := []struct {
		in   string
		want func(*Config)
	}{
		{"agent:\n  cli: auto\n", func(*Config) {}},
		{"agent:\n  cli: \"\"\n", func(*Config) {}},
		{"agent:\n  cli: claude\n", func(c *Config) { c.Agent.CLI = CLIClaude }},
		{"agent:\n  cli: aider\n", func(c *Config) { c.Agent.CLI = CLIAider }},
		{"agent:\n  cli: opencode\n", func(c *Config) {
			c.Agent.CLI = CLIOpenCode
			c.Models = DefaultModels(CLIOpenCode)
		}},
		{"agent:\n  max_turns: 0\n", func(*Config) {}},
		{"agent:\n  max_turns: 40\n", func(c *Config) { c.Agent.MaxTurns = 40 }},
		{"agent:\n  max_turns: 1000\n", func(c *Config) { c.Agent.MaxTurns = 1000 }},
	}
	for _, tt := range ok {
		t.Run(tt.in, func(t *testing.T) {
			want := DefaultConfig()
			tt.want(&want)
			cfg, err := ParseConfig([]byte(tt.in))
			require.NoError(t, err)
			assert.Equal(t, want, cfg)
		})
	}
	bad := []struct {
		name, in, msg string
	}{
		{"typo", "agent:\n  cli: cladue\n", `bazinga.yml line 2: agent.cli: unknown CLI "cladue"; did you mean "claude"?`},
		{"upper case", "agent:\n  cli: Codex\n", `unknown CLI "Codex"; did you mean "codex"?`},
		{"unknown", "agent:\n  cli: cursor-agent\n",
			`agent.cli: want one of auto, claude, codex, gemini, aider, opencode, generic, got "cursor-agent"`},
		{"number", "agent:\n  cli: 3\n", `agent.cli: want a string, got 3`},
		{"turns over", "agent:\n  max_turns: 1001\n", `agent.max_turns: want a whole number from 0 to 1000 (0 = the CLI's default), got 1001`},
		{"turns negative", "agent:\n  max_turns: -1\n", `got -1`},
		{"turns word", "agent:\n  max_turns: many\n", `got "many"`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestValidateAgentCLIAndMaxTurns(t *testing.T) {
	c := DefaultConfig()
	c.Agent.CLI = "cursor"
	c.Agent.MaxTurns = 5000
	err := c.Validate()
	require.Error(t, err)
	var got []string
	for _, e := range configErrors(t, err) {
		got = append(got, e.Error())
	}
	assert.Equal(t, []string{
		`agent.cli: want one of auto, claude, codex, gemini, aider, opencode, generic, got "cursor"`,
		`agent.max_turns: want a whole number from 0 to 1000 (0 = the CLI's default), got 5000`,
	}, got)
}

func TestMarshalAgentCLI(t *testing.T) {
	out, err := DefaultConfig().Marshal()
	require.NoError(t, err)
	assert.Contains(t, string(out), "\n  cli: auto ")
	assert.Contains(t, string(out), "\n  max_turns: 0 ")
	c := DefaultConfig()
	c.Agent.CLI = CLIGemini
	out, err = c.Marshal()
	require.NoError(t, err)
	assert.Contains(t, string(out), "\n  cli: gemini ")
}

func TestWithAgentCommand(t *testing.T) {
	codex := DefaultModels(CLICodex)
	tests := []struct {
		name    string
		file    string
		command string
		want    func(*Config)
	}{
		{"the models follow the CLI", "", "codex exec --model {model}", func(c *Config) { c.Models = codex }},
		{"a model the file set is kept", "models:\n  developer: gpt-5-mini\n", "codex exec", func(c *Config) {
			c.Models = codex
			c.Models.Developer = "gpt-5-mini"
		}},
		{"from codex back to claude", "agent:\n  command: codex exec\n", "claude -p", func(*Config) {}},
		{"the same CLI changes nothing", "models:\n  pm: claude-opus-5-5\n", "/opt/claude -p --verbose", func(c *Config) {
			c.Models.PM = "claude-opus-5-5"
		}},
		{"agent.cli fixes the CLI", "agent:\n  cli: claude\n", "./wrapper.sh", func(c *Config) { c.Agent.CLI = CLIClaude }},
		{"claude to aider keeps the aliases", "", "aider --model {model}", func(*Config) {}},
		{"to a generic command keeps the tier names", "agent:\n  command: gemini -m {model}\n", "./agent.sh",
			func(*Config) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tt.file))
			require.NoError(t, err)
			got := cfg.WithAgentCommand(tt.command)
			want := DefaultConfig()
			tt.want(&want)
			want.Agent.Command = tt.command
			assert.Equal(t, want, got)
			assert.NoError(t, got.Validate())
		})
	}
}

func TestCLICredentials(t *testing.T) {
	gitHub := []string{"GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_PAT_TOKEN",
		"ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "INPUT_GITHUB_TOKEN", "INPUT_GITHUB-TOKEN", "BAZINGA_PRIVATE_KEY"}
	for _, cli := range append(AgentCLIs(), CLIAuto) {
		t.Run(cli.String(), func(t *testing.T) {
			names := CLICredentials(cli)
			require.NotEmpty(t, names)
			for _, n := range names {
				assert.NoError(t, CheckAgentEnvName(n), "%s documents %s", cli, n)
				up := strings.ToUpper(n)
				for _, p := range []string{"GITHUB", "GH_", "ACTIONS_", "INPUT_", "BAZINGA_"} {
					assert.False(t, strings.HasPrefix(up, p), "%s: %s", cli, n)
				}
			}
			for _, n := range gitHub {
				assert.Error(t, CheckAgentEnvName(n), "%s must stay refused", n)
			}
		})
	}
	for cli, want := range map[AgentCLI][]string{
		CLIClaude: {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
			"AWS_SECRET_ACCESS_KEY", "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_FOUNDRY_API_KEY"},
		CLICodex:    {"OPENAI_API_KEY", "CODEX_API_KEY", "AZURE_OPENAI_API_KEY"},
		CLIGemini:   {"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"},
		CLIAider:    {"ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "AZURE_API_KEY"},
		CLIOpenCode: {"ANTHROPIC_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "OPENCODE_API_KEY"},
	} {
		assert.Subset(t, CLICredentials(cli), want, "%s", cli)
	}
	assert.NotContains(t, CLICredentials(CLICodex), "ANTHROPIC_API_KEY", "per CLI")
	all := CLICredentials(CLIGeneric)
	assert.Equal(t, all, CLICredentials(CLIAuto))
	for _, cli := range AgentCLIs() {
		assert.Subset(t, all, CLICredentials(cli), "generic may run %s", cli)
	}

	// ModelKeys: the credential-named ones, every key accepted before included.
	assert.Subset(t, ModelKeys, []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY",
		"AZURE_OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "MISTRAL_API_KEY", "OPENROUTER_API_KEY",
		"XAI_API_KEY", "DEEPSEEK_API_KEY", "GROQ_API_KEY"})
	assert.Equal(t, "ANTHROPIC_API_KEY", ModelKeys[0])
	for _, k := range ModelKeys {
		assert.NotEmpty(t, cfgCredentialWord(k), k)
	}
	assert.NotContains(t, ModelKeys, "AWS_REGION", "not named like a credential: it passes anyway")

	// A copy each time.
	c := CLICredentials(CLIClaude)
	c[0] = "GITHUB_TOKEN"
	assert.Equal(t, "ANTHROPIC_API_KEY", CLICredentials(CLIClaude)[0])
}

// The configuration docs name every credential agent.env accepts and every
// CLI's default models.
func TestDocsListCredentialsAndModels(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	require.NoError(t, err)
	readme := string(b)
	for _, k := range ModelKeys {
		assert.Contains(t, readme, "`"+k+"`", "README lists %s", k)
	}
	for _, cli := range AgentCLIs() {
		m := DefaultModels(cli)
		for _, name := range []string{m.PM, m.Senior, m.Developer} {
			assert.Contains(t, readme, "`"+name+"`", "README names %s's model %s", cli, name)
		}
	}
}

// The README's example of the planning step's result is a plan the engine
// takes.
func TestREADMEPlanExampleParses(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "<!-- plan-example -->\n```json\n")
	require.True(t, ok, "the README shows the plan example")
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	var res struct {
		Status  string          `json:"status"`
		Handoff json.RawMessage `json:"handoff"`
	}
	require.NoError(t, json.Unmarshal([]byte(block), &res))
	assert.Equal(t, "PLANNING_COMPLETE", res.Status)
	plan, err := ParsePlan(res.Handoff)
	require.NoError(t, err)
	require.Len(t, plan.Groups, 2)
	assert.Equal(t, []string{"api"}, plan.Groups[1].DependsOn)
}
