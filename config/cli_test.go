package config

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

func TestRecogniseCLI(t *testing.T) {
	tests := []struct {
		command string
		want    pipeline.AgentCLI
	}{
		{"claude -p --model {model} --output-format json", pipeline.CLIClaude},
		{"/usr/local/bin/claude -p", pipeline.CLIClaude},
		{"claude.exe -p", pipeline.CLIClaude},
		{`'C:\Users\me\AppData\Roaming\npm\claude.cmd' -p`, pipeline.CLIClaude}, // quoted: the command is split like a POSIX shell
		{"CLAUDE -p", pipeline.CLIClaude},
		{"npx @anthropic-ai/claude-code -p --model {model}", pipeline.CLIClaude},
		{"npx -y @anthropic-ai/claude-code@2.1.332 -p", pipeline.CLIClaude},
		{"npx --yes -- @anthropic-ai/claude-code -p", pipeline.CLIClaude},
		{"bunx @anthropic-ai/claude-code -p", pipeline.CLIClaude},
		{"env DISABLE_AUTOUPDATER=1 claude -p", pipeline.CLIClaude},
		{"env -i HOME=/tmp /opt/bin/claude", pipeline.CLIClaude},
		{"env -u ANTHROPIC_BASE_URL codex exec", pipeline.CLICodex},
		{"sh -c 'claude -p --model {model} < {prompt_file}'", pipeline.CLIClaude},
		{"node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js -p", pipeline.CLIClaude},
		{"codex exec --model {model}", pipeline.CLICodex},
		{"node_modules/.bin/codex exec", pipeline.CLICodex},
		{"./node_modules/.bin/codex exec", pipeline.CLICodex},
		{"npx @openai/codex exec", pipeline.CLICodex},
		{"npx -p @openai/codex codex exec", pipeline.CLICodex},
		{"npx --package=@openai/codex@latest codex exec", pipeline.CLICodex},
		{"pnpm dlx @openai/codex exec", pipeline.CLICodex},
		{"npm exec -- @openai/codex exec", pipeline.CLICodex},
		{"node node_modules/@openai/codex/bin/codex.js exec", pipeline.CLICodex},
		{"gemini -p -m {model}", pipeline.CLIGemini},
		{"npx @google/gemini-cli -m {model}", pipeline.CLIGemini},
		{"yarn dlx @google/gemini-cli", pipeline.CLIGemini},
		{"aider --model {model} --message-file {prompt_file}", pipeline.CLIAider},
		{"uvx --from aider-chat aider --yes", pipeline.CLIAider},
		{"uvx aider-chat --yes", pipeline.CLIAider},
		{"uv tool run --from aider-chat aider", pipeline.CLIAider},
		{"pipx run aider-chat --yes", pipeline.CLIAider},
		{"python -m aider --yes", pipeline.CLIAider},
		{"opencode run -m {model}", pipeline.CLIOpenCode},
		{"npx opencode-ai@latest run", pipeline.CLIOpenCode},
		{"./run-agent.sh", pipeline.CLIGeneric},
		{"claude-wrapper -p", pipeline.CLIGeneric},
		{"npx some-agent", pipeline.CLIGeneric},
		{"npx", pipeline.CLIGeneric},
		{"python agent.py", pipeline.CLIGeneric},
		{"node agent.js", pipeline.CLIGeneric},
		{"sh -c 'echo hi'", pipeline.CLIGeneric},
		{"sh run.sh", pipeline.CLIGeneric},
		{"", pipeline.CLIGeneric},
		{"claude 'unbalanced", pipeline.CLIGeneric},
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
		cli     pipeline.AgentCLI
		command string
		want    pipeline.AgentCLI
	}{
		{"auto recognises", pipeline.CLIAuto, "codex exec", pipeline.CLICodex},
		{"auto, unknown command", pipeline.CLIAuto, "./agent.sh", pipeline.CLIGeneric},
		{"configured wins", pipeline.CLIGemini, "./agent.sh", pipeline.CLIGemini},
		{"configured generic", pipeline.CLIGeneric, "claude -p", pipeline.CLIGeneric},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := pipeline.DefaultConfig()
			c.Agent.CLI, c.Agent.Command = tt.cli, tt.command
			assert.Equal(t, tt.want, AgentCLI(c))
		})
	}
	assert.Equal(t, pipeline.CLIClaude, AgentCLI(pipeline.DefaultConfig()))
}

func TestDefaultModels(t *testing.T) {
	claude := pipeline.ModelsConfig{PM: "opus", Developer: "haiku", Senior: "sonnet", QA: "sonnet", TechLead: "opus",
		Investigator: "opus", Requirements: "sonnet", Validator: "sonnet", Escalation: "opus"}
	assert.Equal(t, claude, pipeline.DefaultModels(pipeline.CLIClaude), "the defaults of ARCHITECTURE.md §8")
	assert.Equal(t, claude, pipeline.DefaultConfig().Models)
	assert.Equal(t, claude, pipeline.DefaultModels(pipeline.CLIAider), "aider's own aliases")
	assert.Equal(t, claude, pipeline.DefaultModels(pipeline.CLIGeneric))
	assert.Equal(t, claude, pipeline.DefaultModels(pipeline.CLIAuto))
	codex := pipeline.DefaultModels(pipeline.CLICodex)
	assert.Equal(t, "gpt-6-astra", codex.PM)
	assert.Equal(t, "gpt-6.1-sol", codex.Senior)
	assert.Equal(t, "gpt-6-luna", codex.Developer)
	gemini := pipeline.DefaultModels(pipeline.CLIGemini)
	assert.Equal(t, "pro", gemini.TechLead)
	assert.Equal(t, "flash", gemini.Developer)
	assert.Equal(t, "anthropic/claude-sonnet-5-5", pipeline.DefaultModels(pipeline.CLIOpenCode).QA)
	for _, cli := range append(pipeline.AgentCLIs(), pipeline.CLIAuto) {
		m := pipeline.DefaultModels(cli)
		for _, name := range modelKeyNames {
			assert.Empty(t, cfgCheckModel(*modelField(&m, name)), "%s models.%s", cli, name)
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
		cli  pipeline.AgentCLI
		want func(*pipeline.ModelsConfig)
	}{
		{"claude by default", "", pipeline.CLIClaude, nil},
		{"codex command", "agent:\n  command: codex exec --model {model}\n", pipeline.CLICodex, nil},
		{"gemini through npx", "agent:\n  command: npx @google/gemini-cli -m {model}\n", pipeline.CLIGemini, nil},
		{"opencode", "agent:\n  command: opencode run -m {model}\n", pipeline.CLIOpenCode, nil},
		{"agent.cli names the CLI of a wrapper", "agent:\n  command: ./agent.sh {model}\n  cli: codex\n", pipeline.CLICodex, nil},
		{"agent.cli generic keeps the tier names", "agent:\n  command: codex exec\n  cli: generic\n", pipeline.CLIGeneric, nil},
		{"a key the file sets is kept", "agent:\n  command: codex exec\nmodels:\n  pm: o3\n  escalation: gpt-6-pro\n", pipeline.CLICodex,
			func(m *pipeline.ModelsConfig) { m.PM, m.Escalation = "o3", "gpt-6-pro" }},
		{"kept even when it is Claude's default", "models:\n  qa: sonnet\nagent:\n  command: codex exec\n", pipeline.CLICodex,
			func(m *pipeline.ModelsConfig) { m.QA = "sonnet" }},
		{"a null key takes the default", "agent:\n  command: codex exec\nmodels:\n  pm:\n", pipeline.CLICodex, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tt.in))
			require.NoError(t, err)
			require.NoError(t, Validate(cfg))
			assert.Equal(t, tt.cli, AgentCLI(cfg))
			want := pipeline.DefaultModels(tt.cli)
			if tt.want != nil {
				tt.want(&want)
			}
			assert.Equal(t, want, cfg.Models)
			// What Marshal writes reads back the same.
			out, err := Marshal(cfg)
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
		want func(*pipeline.Config)
	}{
		{"agent:\n  cli: auto\n", func(*pipeline.Config) {}},
		{"agent:\n  cli: \"\"\n", func(*pipeline.Config) {}},
		{"agent:\n  cli: claude\n", func(c *pipeline.Config) { c.Agent.CLI = pipeline.CLIClaude }},
		{"agent:\n  cli: aider\n", func(c *pipeline.Config) { c.Agent.CLI = pipeline.CLIAider }},
		{"agent:\n  cli: opencode\n", func(c *pipeline.Config) {
			c.Agent.CLI = pipeline.CLIOpenCode
			c.Models = pipeline.DefaultModels(pipeline.CLIOpenCode)
		}},
		{"agent:\n  max_turns: 0\n", func(*pipeline.Config) {}},
		{"agent:\n  max_turns: 40\n", func(c *pipeline.Config) { c.Agent.MaxTurns = 40 }},
		{"agent:\n  max_turns: 1000\n", func(c *pipeline.Config) { c.Agent.MaxTurns = 1000 }},
	}
	for _, tt := range ok {
		t.Run(tt.in, func(t *testing.T) {
			want := pipeline.DefaultConfig()
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
	c := pipeline.DefaultConfig()
	c.Agent.CLI = "cursor"
	c.Agent.MaxTurns = 5000
	err := Validate(c)
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
	out, err := Marshal(pipeline.DefaultConfig())
	require.NoError(t, err)
	assert.Contains(t, string(out), "\n  cli: auto ")
	assert.Contains(t, string(out), "\n  max_turns: 0 ")
	c := pipeline.DefaultConfig()
	c.Agent.CLI = pipeline.CLIGemini
	out, err = Marshal(c)
	require.NoError(t, err)
	assert.Contains(t, string(out), "\n  cli: gemini ")
}

func TestWithAgentCommand(t *testing.T) {
	codex := pipeline.DefaultModels(pipeline.CLICodex)
	tests := []struct {
		name    string
		file    string
		command string
		want    func(*pipeline.Config)
	}{
		{"the models follow the CLI", "", "codex exec --model {model}", func(c *pipeline.Config) { c.Models = codex }},
		{"a model the file set is kept", "models:\n  developer: gpt-5-mini\n", "codex exec", func(c *pipeline.Config) {
			c.Models = codex
			c.Models.Developer = "gpt-5-mini"
		}},
		{"from codex back to claude", "agent:\n  command: codex exec\n", "claude -p", func(*pipeline.Config) {}},
		{"the same CLI changes nothing", "models:\n  pm: claude-opus-5-5\n", "/opt/claude -p --verbose", func(c *pipeline.Config) {
			c.Models.PM = "claude-opus-5-5"
		}},
		{"agent.cli fixes the CLI", "agent:\n  cli: claude\n", "./wrapper.sh", func(c *pipeline.Config) { c.Agent.CLI = pipeline.CLIClaude }},
		{"claude to aider keeps the aliases", "", "aider --model {model}", func(*pipeline.Config) {}},
		{"to a generic command keeps the tier names", "agent:\n  command: gemini -m {model}\n", "./agent.sh",
			func(*pipeline.Config) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tt.file))
			require.NoError(t, err)
			got := WithAgentCommand(cfg, tt.command)
			want := pipeline.DefaultConfig()
			tt.want(&want)
			want.Agent.Command = tt.command
			assert.Equal(t, want, got)
			assert.NoError(t, Validate(got))
		})
	}
}

func TestCLICredentials(t *testing.T) {
	gitHub := []string{"GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_PAT_TOKEN",
		"ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "INPUT_GITHUB_TOKEN", "INPUT_GITHUB-TOKEN", "BAZINGA_PRIVATE_KEY"}
	for _, cli := range append(pipeline.AgentCLIs(), pipeline.CLIAuto) {
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
	for cli, want := range map[pipeline.AgentCLI][]string{
		pipeline.CLIClaude: {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
			"AWS_SECRET_ACCESS_KEY", "CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_FOUNDRY_API_KEY"},
		pipeline.CLICodex:    {"OPENAI_API_KEY", "CODEX_API_KEY", "AZURE_OPENAI_API_KEY"},
		pipeline.CLIGemini:   {"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"},
		pipeline.CLIAider:    {"ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "AZURE_API_KEY"},
		pipeline.CLIOpenCode: {"ANTHROPIC_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "OPENCODE_API_KEY"},
	} {
		assert.Subset(t, CLICredentials(cli), want, "%s", cli)
	}
	assert.NotContains(t, CLICredentials(pipeline.CLICodex), "ANTHROPIC_API_KEY", "per CLI")
	all := CLICredentials(pipeline.CLIGeneric)
	assert.Equal(t, all, CLICredentials(pipeline.CLIAuto))
	for _, cli := range pipeline.AgentCLIs() {
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
	c := CLICredentials(pipeline.CLIClaude)
	c[0] = "GITHUB_TOKEN"
	assert.Equal(t, "ANTHROPIC_API_KEY", CLICredentials(pipeline.CLIClaude)[0])
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
	for _, cli := range pipeline.AgentCLIs() {
		m := pipeline.DefaultModels(cli)
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
	plan, err := pipeline.ParsePlan(res.Handoff)
	require.NoError(t, err)
	require.Len(t, plan.Groups, 2)
	assert.Equal(t, []string{"api"}, plan.Groups[1].DependsOn)
}
