package pipeline

// AgentCLI and the default models of each CLI are data of the Config the
// engine carries; recognising a CLI from a command line, agent.cli's key and
// the credentials each CLI documents are the config package's.

// AgentCLI names the coding-agent CLI that agent.command runs. The agent
// drivers use it to build the CLI's command line and read its output; the
// configuration uses it for the default models.
type AgentCLI string

const (
	// CLIAuto (written "auto" in the file) recognises the CLI from
	// agent.command (RecogniseCLI).
	CLIAuto     AgentCLI = ""
	CLIClaude   AgentCLI = "claude"
	CLICodex    AgentCLI = "codex"
	CLIGemini   AgentCLI = "gemini"
	CLIAider    AgentCLI = "aider"
	CLIOpenCode AgentCLI = "opencode"
	// CLIGeneric is any other command: a script, a wrapper, a CLI bazinga
	// has no driver for.
	CLIGeneric AgentCLI = "generic"
)

// CLIAutoName is how the file writes CLIAuto.
const CLIAutoName = "auto"

// AgentCLIs lists the CLIs agent.cli may name, auto aside, in the order the
// documentation gives them.
func AgentCLIs() []AgentCLI {
	return []AgentCLI{CLIClaude, CLICodex, CLIGemini, CLIAider, CLIOpenCode, CLIGeneric}
}

// String is the name the file uses: "auto" for CLIAuto.
func (c AgentCLI) String() string {
	if c == CLIAuto {
		return CLIAutoName
	}
	return string(c)
}

// DefaultModels returns the models each role runs with by default under a
// CLI, in names that CLI takes. The three tiers are those of the Claude
// aliases: opus (pm, tech lead, investigator, escalation), sonnet (senior, QA,
// requirements, validator) and haiku (developer).
//
//   - claude, generic and auto: Claude Code's aliases opus, sonnet, haiku,
//     which follow the newest model of each tier (a generic wrapper gets
//     tier names it can map as it likes).
//   - codex: gpt-6-astra ("Frontier intelligence for the most demanding
//     work"), gpt-6.1-sol ("Latest workhorse model for coding and everyday
//     work", the catalogue's first) and gpt-6-luna ("Fast and affordable model
//     for easier tasks"), from the model catalogue bundled with
//     @openai/codex 0.169.0 (codex-rs/models-manager/models.json of
//     openai/codex), all supported with an API key.
//   - gemini: the aliases pro and flash, which Gemini CLI resolves to the
//     newest Pro and Flash models the account may use (docs/cli/cli-reference.md
//     of google-gemini/gemini-cli, "Model aliases"); Gemini has no third tier
//     between them, so sonnet's roles get pro.
//   - aider: aider's built-in aliases opus, sonnet, haiku (MODEL_ALIASES in
//     aider/models.py, docs/config/model-aliases.md of Aider-AI/aider).
//   - opencode: provider/model ids of models.dev, the catalogue opencode reads
//     (providers/anthropic/models of anomalyco/models.dev, October 2026):
//     anthropic/claude-opus-5-5, anthropic/claude-sonnet-5-5,
//     anthropic/claude-haiku-4-5.
func DefaultModels(cli AgentCLI) ModelsConfig {
	var top, mid, low string
	switch cli {
	case CLICodex:
		top, mid, low = "gpt-6-astra", "gpt-6.1-sol", "gpt-6-luna"
	case CLIGemini:
		top, mid, low = "pro", "pro", "flash"
	case CLIOpenCode:
		top, mid, low = "anthropic/claude-opus-5-5", "anthropic/claude-sonnet-5-5", "anthropic/claude-haiku-4-5"
	default: // claude, aider, generic, auto
		top, mid, low = "opus", "sonnet", "haiku"
	}
	return ModelsConfig{
		PM:           top,
		Developer:    low,
		Senior:       mid,
		QA:           mid,
		TechLead:     top,
		Investigator: top,
		Requirements: mid,
		Validator:    mid,
		Escalation:   top,
	}
}
