package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// This file holds what the configuration knows about the coding-agent CLIs
// agent.command runs: which one it is (agent.cli, RecogniseCLI), the models
// following the CLI (pipeline.DefaultModels holds each one's defaults) and the
// credentials each documents (CLICredentials, ModelKeys).

// AgentCLI is the CLI agent.command runs: agent.cli when it names one, else
// the one recognised from the command.
func AgentCLI(c pipeline.Config) pipeline.AgentCLI {
	if c.Agent.CLI != pipeline.CLIAuto {
		return c.Agent.CLI
	}
	return RecogniseCLI(c.Agent.Command)
}

// cliPrograms are the programs of the CLIs, as their packages install them.
var cliPrograms = map[string]pipeline.AgentCLI{
	"claude":   pipeline.CLIClaude,
	"codex":    pipeline.CLICodex,
	"gemini":   pipeline.CLIGemini,
	"aider":    pipeline.CLIAider,
	"opencode": pipeline.CLIOpenCode,
}

// cliPackages are the packages that install the CLIs (npm, and PyPI for
// aider), as a launcher such as npx or uvx names them.
var cliPackages = map[string]pipeline.AgentCLI{
	"@anthropic-ai/claude-code": pipeline.CLIClaude,
	"@openai/codex":             pipeline.CLICodex,
	"@google/gemini-cli":        pipeline.CLIGemini,
	"opencode-ai":               pipeline.CLIOpenCode,
	"aider-chat":                pipeline.CLIAider,
}

// RecogniseCLI tells from a command line which CLI it runs: the program's
// base name ("/usr/local/bin/claude", "node_modules/.bin/codex",
// "claude.exe", "gemini.cmd"), or the package a launcher runs ("npx -y
// @anthropic-ai/claude-code …", "bunx @openai/codex …", "pnpm dlx
// @google/gemini-cli", "uvx --from aider-chat aider", "pipx run aider-chat"),
// or the script node runs from a CLI's package; "env NAME=value cmd",
// "python -m aider" and "sh -c '…'" are looked through. Anything else,
// including a command that cannot be split, is CLIGeneric.
func RecogniseCLI(command string) pipeline.AgentCLI {
	words, err := SplitCommand(command)
	if err != nil {
		return pipeline.CLIGeneric
	}
	return cliRecognise(words, 0)
}

func cliRecognise(words []string, depth int) pipeline.AgentCLI {
	for len(words) > 0 && depth < 8 {
		depth++
		prog, args := cliProgramName(words[0]), words[1:]
		var (
			launched bool     // prog is a package runner (npx, uvx, pnpm dlx…)
			opts     []string // its options that name the package
		)
		switch prog {
		case "env":
			words = cliSkipEnv(args)
			continue
		case "npx", "bunx", "pnpx":
			launched, opts = true, []string{"-p", "--package"}
		case "uvx":
			launched, opts = true, []string{"--from"}
		case "npm", "pnpm", "yarn", "bun": // npm exec, pnpm dlx, yarn dlx, bun x
			if len(args) > 0 && (args[0] == "exec" || args[0] == "dlx" || args[0] == "x") {
				launched, opts, args = true, []string{"-p", "--package"}, args[1:]
			}
		case "uv": // uv tool run
			if len(args) > 1 && args[0] == "tool" && args[1] == "run" {
				launched, opts, args = true, []string{"--from"}, args[2:]
			}
		case "pipx": // pipx run
			if len(args) > 0 && args[0] == "run" {
				launched, opts, args = true, []string{"--spec"}, args[1:]
			}
		case "python", "python3":
			for i, a := range args {
				if a == "-m" && i+1 < len(args) {
					return cliByName(args[i+1])
				}
			}
			return pipeline.CLIGeneric
		case "node", "deno":
			// The script is the first word that is not an option.
			for _, a := range args {
				if !strings.HasPrefix(a, "-") {
					return cliByPath(a)
				}
			}
			return pipeline.CLIGeneric
		case "sh", "bash", "zsh", "dash":
			for i, a := range args {
				if a == "-c" && i+1 < len(args) {
					inner, err := SplitCommand(args[i+1])
					if err != nil {
						return pipeline.CLIGeneric
					}
					return cliRecognise(inner, depth)
				}
			}
			return pipeline.CLIGeneric
		}
		if launched {
			if pkg, ok := cliNamedPackage(args, opts); ok {
				if cli, ok := cliPackages[cliStripVersion(pkg)]; ok {
					return cli
				}
			}
			words = cliFirstWord(args, opts)
			continue
		}
		if cli, ok := cliPackages[cliStripVersion(words[0])]; ok {
			return cli
		}
		return cliByPath(words[0])
	}
	return pipeline.CLIGeneric
}

// cliNamedPackage returns the package a launcher's option names ("-p pkg",
// "--package=pkg").
func cliNamedPackage(args, opts []string) (string, bool) {
	for i, a := range args {
		for _, o := range opts {
			if a == o && i+1 < len(args) {
				return args[i+1], true
			}
			if v, ok := strings.CutPrefix(a, o+"="); ok {
				return v, true
			}
		}
	}
	return "", false
}

// cliFirstWord returns a launcher's arguments from the first that is not an
// option (nor the value of an option naming the package): the package or
// program it runs, and that one's arguments.
func cliFirstWord(args, opts []string) []string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if cfgContains(opts, a) {
			i++ // its value
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		return args[i:]
	}
	return nil
}

// cliSkipEnv drops env's options (with the values of -u and -C) and
// NAME=value words.
func cliSkipEnv(args []string) []string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-u" || a == "--unset" || a == "-C" || a == "--chdir":
			i++
		case strings.HasPrefix(a, "-") || strings.Contains(a, "="):
		default:
			return args[i:]
		}
	}
	return nil
}

// cliProgramName is the base name of a program, lower case, without the
// extensions Windows and node give it.
func cliProgramName(w string) string {
	if i := strings.LastIndexAny(w, `/\`); i >= 0 {
		w = w[i+1:]
	}
	w = strings.ToLower(w)
	for _, ext := range []string{".exe", ".cmd", ".bat", ".ps1", ".js", ".mjs", ".cjs"} {
		if s, ok := strings.CutSuffix(w, ext); ok {
			return s
		}
	}
	return w
}

// cliByName is the CLI a program, package or module name is, else CLIGeneric.
func cliByName(w string) pipeline.AgentCLI {
	if cli, ok := cliPackages[cliStripVersion(w)]; ok {
		return cli
	}
	if cli, ok := cliPrograms[cliProgramName(w)]; ok {
		return cli
	}
	return pipeline.CLIGeneric
}

// cliByPath recognises a program or script: by its base name, or by the
// package directory it sits in (…/node_modules/@openai/codex/bin/codex.js).
func cliByPath(p string) pipeline.AgentCLI {
	if cli, ok := cliPrograms[cliProgramName(p)]; ok {
		return cli
	}
	parts := strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' })
	for i, part := range parts {
		if cli, ok := cliPackages[part]; ok {
			return cli
		}
		if i+1 < len(parts) {
			if cli, ok := cliPackages[part+"/"+parts[i+1]]; ok {
				return cli
			}
		}
	}
	return pipeline.CLIGeneric
}

// cliStripVersion drops a version or tag from a package name:
// "@openai/codex@0.169.0" → "@openai/codex", "opencode-ai@latest" →
// "opencode-ai", "aider-chat==0.86" → "aider-chat".
func cliStripVersion(pkg string) string {
	if i := strings.LastIndexByte(pkg, '@'); i > 0 {
		pkg = pkg[:i]
	}
	if i := strings.IndexAny(pkg, "=<>~!["); i > 0 {
		pkg = pkg[:i]
	}
	return pkg
}

// cfgCheckAgentCLI: agent.cli is auto or a known CLI.
func cfgCheckAgentCLI(s string) string {
	if s == "" || s == pipeline.CLIAutoName {
		return ""
	}
	names := []string{pipeline.CLIAutoName}
	for _, c := range pipeline.AgentCLIs() {
		if string(c) == s {
			return ""
		}
		names = append(names, string(c))
	}
	if best := cfgClosest(s, names); best != "" {
		return fmt.Sprintf("unknown CLI %q; did you mean %q?", s, best)
	}
	return fmt.Sprintf("want one of %s, got %q", strings.Join(names, ", "), s)
}

// cfgAgentCLIKey is agent.cli: "auto" in the file is CLIAuto in the Config.
func cfgAgentCLIKey(path string, comment string) cfgKey {
	field := func(c *pipeline.Config) *pipeline.AgentCLI { return &c.Agent.CLI }
	k := cfgStringKey(path, field, cfgCheckAgentCLI, comment)
	decode := k.decode
	k.decode = func(c *pipeline.Config, n *yaml.Node, path string) []*ConfigError {
		if errs := decode(c, n, path); len(errs) > 0 {
			return errs
		}
		if *field(c) == pipeline.CLIAutoName {
			*field(c) = pipeline.CLIAuto
		}
		return nil
	}
	k.encode = func(c *pipeline.Config) *yaml.Node { return cfgStringNode(field(c).String()) }
	return k
}

// MaxAgentTurns bounds agent.max_turns.
const MaxAgentTurns = 1000

// modelKeyNames are the keys of the models section, in file order.
var modelKeyNames = []string{"pm", "developer", "senior", "qa", "tech_lead", "investigator", "requirements", "validator", "escalation"}

// field returns the field of a models key ("tech_lead"); nil for another name.
func modelField(m *pipeline.ModelsConfig, name string) *string {
	switch name {
	case "pm":
		return &m.PM
	case "developer":
		return &m.Developer
	case "senior":
		return &m.Senior
	case "qa":
		return &m.QA
	case "tech_lead":
		return &m.TechLead
	case "investigator":
		return &m.Investigator
	case "requirements":
		return &m.Requirements
	case "validator":
		return &m.Validator
	case "escalation":
		return &m.Escalation
	}
	return nil
}

// WithAgentCommand returns the configuration with agent.command replaced (a
// command-line override such as local mode's --agent or the Action's
// agent-command input) and the models following the CLI: when the CLI
// changes (agent.cli is auto and the new command is another CLI), every model
// that is the old CLI's default for its role becomes the new CLI's default.
// A model set to anything else is kept; one the file set to exactly the old
// CLI's default is replaced too, as it is a name of the old CLI. The caller
// validates the result as before.
func WithAgentCommand(c pipeline.Config, command string) pipeline.Config {
	from := AgentCLI(c)
	c.Agent.Command = command
	to := AgentCLI(c)
	if from == to {
		return c
	}
	was, now := pipeline.DefaultModels(from), pipeline.DefaultModels(to)
	for _, name := range modelKeyNames {
		if m := modelField(&c.Models, name); *m == *modelField(&was, name) {
			*m = *modelField(&now, name)
		}
	}
	return c
}

// --- credentials per CLI -----------------------------------------------------

// cliCredentials are, per CLI, the environment variables its documentation
// names for authenticating to a model provider: API keys and tokens, and the
// provider switches, regions and projects that go with them. None of them
// can write to GitHub; GITHUB_TOKEN (which opencode documents for GitHub
// Copilot) is left out on purpose.
var cliCredentials = []struct {
	cli   pipeline.AgentCLI
	names []string
}{
	// code.claude.com/docs/en/env-vars, …/amazon-bedrock, …/google-vertex-ai,
	// …/microsoft-foundry; checked against the claude 2.1.332 binary.
	{pipeline.CLIClaude, []string{
		"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL",
		"CLAUDE_CODE_USE_BEDROCK", "AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "AWS_REGION", "AWS_PROFILE",
		"CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION", "GOOGLE_APPLICATION_CREDENTIALS",
		"CLAUDE_CODE_USE_FOUNDRY", "ANTHROPIC_FOUNDRY_API_KEY", "ANTHROPIC_FOUNDRY_RESOURCE",
	}},
	// developers.openai.com/codex/auth, …/codex/environment-variables,
	// …/codex/amazon-bedrock, …/codex/config-advanced (Azure's env_key).
	{pipeline.CLICodex, []string{
		"OPENAI_API_KEY", "CODEX_API_KEY", "CODEX_ACCESS_TOKEN", "AZURE_OPENAI_API_KEY",
		"AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_REGION", "AWS_PROFILE",
	}},
	// docs/get-started/authentication.mdx and README.md of google-gemini/gemini-cli.
	{pipeline.CLIGemini, []string{
		"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT",
		"GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS",
	}},
	// aider/website/docs/llms/*.md of Aider-AI/aider.
	{pipeline.CLIAider, []string{
		"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "MISTRAL_API_KEY", "OPENROUTER_API_KEY",
		"XAI_API_KEY", "DEEPSEEK_API_KEY", "GROQ_API_KEY", "COHERE_API_KEY", "OLLAMA_API_KEY",
		"AZURE_API_KEY", "AZURE_API_BASE", "AZURE_API_VERSION",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_PROFILE",
		"VERTEXAI_PROJECT", "VERTEXAI_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS",
	}},
	// The env of providers/*/provider.toml of anomalyco/models.dev, which
	// opencode reads.
	{pipeline.CLIOpenCode, []string{
		"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
		"OPENROUTER_API_KEY", "XAI_API_KEY", "GROQ_API_KEY", "DEEPSEEK_API_KEY", "MISTRAL_API_KEY",
		"OPENCODE_API_KEY", "AZURE_RESOURCE_NAME", "AZURE_API_KEY",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_BEARER_TOKEN_BEDROCK",
		"GOOGLE_VERTEX_PROJECT", "GOOGLE_VERTEX_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS",
	}},
}

// CLICredentials returns the environment variables a CLI documents for
// authenticating to its model provider (see cliCredentials), in a new
// slice. For generic and auto, which may run any of them, it returns every
// CLI's, in the order of AgentCLIs without repeats.
func CLICredentials(cli pipeline.AgentCLI) []string {
	for _, e := range cliCredentials {
		if e.cli == cli {
			return append([]string(nil), e.names...)
		}
	}
	var all []string
	for _, e := range cliCredentials {
		for _, n := range e.names {
			if !cfgContains(all, n) {
				all = append(all, n)
			}
		}
	}
	return all
}

// ModelKeys are the credential-named variables agent.env accepts: those of
// every CLI's CLICredentials that are named like a credential (*TOKEN*,
// *SECRET*, *KEY*) and would otherwise be refused. None can write to a
// repository. The list is fixed so that a repository's configuration cannot
// widen it; the other names of CLICredentials pass agent.env's checks anyway.
var ModelKeys = func() []string {
	var keys []string
	for _, n := range CLICredentials(pipeline.CLIGeneric) {
		if cfgCredentialWord(n) != "" {
			keys = append(keys, n)
		}
	}
	return keys
}()

// cfgCredentialWord is the word that makes a name look like a credential, or "".
func cfgCredentialWord(name string) string {
	up := strings.ToUpper(name)
	for _, word := range []string{"TOKEN", "SECRET", "KEY"} {
		if strings.Contains(up, word) {
			return word
		}
	}
	return ""
}
