package agent

import (
	"slices"
	"strings"

	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// GatewayEnv is what an agent's environment holds to reach bazinga's metering gateway at base (the gateway's
// root, e.g. https://bazinga.example.com/gateway): every supported CLI's base URL variable, and the step's
// gateway token in each key variable, so whichever CLI runs talks to the gateway with the token and never holds a
// provider key. Names for providers the gateway does not serve are harmless: the gateway answers them 404.
func GatewayEnv(base, token string) map[string]string {
	base = strings.TrimRight(base, "/")
	return map[string]string{
		"ANTHROPIC_BASE_URL":     base + "/anthropic",
		"ANTHROPIC_API_KEY":      token,
		"OPENAI_BASE_URL":        base + "/openai/v1",
		"OPENAI_API_KEY":         token,
		"CODEX_API_KEY":          token,
		"GOOGLE_GEMINI_BASE_URL": base + "/gemini",
		"GEMINI_API_KEY":         token,
	}
}

// WithoutCredentials drops every provider credential and base URL name (config.CLICredentials of every CLI)
// from names passed to an agent: with the gateway on, nothing of the harness's own credentials reaches it.
func WithoutCredentials(names []string) []string {
	creds := append(config.CLICredentials(pipeline.CLIGeneric), "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL")
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(creds, n) })
}
