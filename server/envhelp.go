package server

import "strings"

// envVar is one environment variable `bazinga serve` reads, with its help.
// The tables below are the one definition: `serve -h` is generated from them
// and a test holds them against the names ConfigFromEnv and
// GatewayConfigFromEnv actually read, so the help cannot drift (issue 25).
type envVar struct {
	name string
	help string
	// note is a line said after the variable's help.
	note string
}

var serveEnv = []envVar{
	{name: EnvAppID, help: "the GitHub App's numeric id (required, here or in the credentials file)"},
	{name: EnvPrivateKey, help: "the App's private key, PEM (this or _PATH is required, or the credentials file's)"},
	{name: EnvPrivateKeyPath, help: "a file holding the App's private key, PEM"},
	{name: EnvWebhookSecret, help: "the webhook secret (required: deliveries are verified with it; at least 32 random characters, e.g. openssl rand -hex 32)"},
	{name: EnvStateKey, help: "the random key the session state is signed with (required; openssl rand -hex 32; the setup page generates it). " +
		"Step jobs verify with the public key serve logs as state_public_key (the repository variable BAZINGA_STATE_PUBLIC_KEY)"},
	{name: EnvStatePreviousKeys, help: "comma-separated public keys of earlier state keys, still accepted while the key is rotated " +
		"(remove them once every session has been written since)",
		note: "Without App credentials, and with a listen address, serve offers the setup page."},
	{name: EnvCredentialsFile, help: "the file the setup page writes the App's credentials to, read for what the environment leaves unset " +
		"(default " + DefaultCredentialsFile + " in the working directory)"},
	{name: EnvPublicURL, help: "the base URL GitHub reaches this server at, for the setup page's App manifest (default: from the request)"},
	{name: EnvGitHubURL, help: "GitHub Enterprise Server base, e.g. https://ghe.example.com (default https://github.com)"},
	{name: EnvListen, help: "listen address (default :8080)"},
	{name: EnvWorkers, help: "webhook workers (default 4)"},
	{name: EnvQueueSize, help: "webhook queue capacity; full → 503 (default 1000)"},
	{name: EnvDatabaseURL, help: "the durable delivery queue: sqlite:PATH (default sqlite:bazinga-queue.db next to the credentials file) " +
		"or postgres://user:pass@host/db for several replicas; \"memory\" keeps deliveries in memory only (lost at a restart). See docs/queue.md"},
	{name: EnvQueueLease, help: "how long the sessions of a replica that died wait before another takes them (default 30s)"},
	{name: EnvSweepInterval, help: "period of the active-session sweep, e.g. 5m (default 5m)"},
	{name: EnvRateLimitWait, help: "longest GitHub rate-limit wait sat out before a session pauses until the reset (default 90s, at most 15m)"},
	{name: EnvRateLimitReserve, help: "requests of the hourly limit kept to say why a session stops (default 20; -1: none)"},
	{name: EnvLogLevel, help: "debug | info | warn | error (default info)"},
	{name: EnvMaxConns, help: "open connections; at the cap the longest-waiting one without a request in progress is closed " +
		"(default 4096, at most 3/4 of the open-file limit)"},
	{name: EnvMaxConnsPerIP, help: "connections of one client address, the same way (default 1024; -1: no per-address limits at all, " +
		"for a reverse proxy in front, where every client has its address)"},
	{name: EnvWebhookSources, help: `comma-separated CIDRs POST /webhook accepts deliveries from, e.g. the "hooks" of GitHub's GET /meta ` +
		"(default: any address; signatures are checked regardless)"},
	{name: EnvTokenExchange, help: "on | off: POST /token gives a privileged job of an installed repository an App token for its OIDC token (default on)"},
	{name: EnvOIDCIssuer, help: "issuer of job tokens (default https://token.actions.githubusercontent.com; " +
		"on GitHub Enterprise Server <BAZINGA_GITHUB_URL>/_services/token)"},
	{name: EnvOIDCAudience, help: "audience job tokens must carry (default bazinga; the action's token-exchange-audience)"},
	{name: EnvTokenWorkflows, help: "comma-separated workflows whose jobs may exchange, [owner/repo/].github/workflows/X.yml[@ref] " +
		"(default .github/workflows/bazinga-agent.yml,.github/workflows/bazinga.yml of the job's repository, on its default branch)"},
	{name: EnvTokenPermissions, help: "comma-separated name:level the exchanged token asks for, within the installation's " +
		"(default actions:write,checks:read,contents:write,issues:write,pull_requests:write,statuses:read)"},
	{name: EnvTokenEnvironment, help: "the deployment environment exchanging jobs must run in (their token's environment claim; default none required)"},
	{name: EnvTokenSpentFile, help: "with BAZINGA_DATABASE_URL=memory: where exchanged job tokens are remembered until they expire, so a " +
		"restart does not make them good again (default bazinga-spent-tokens next to the credentials file). With a queue database " +
		"they are kept in it instead, shared by every replica"},
}

var gatewayEnv = []envVar{
	{name: EnvGatewayAnthropicKey, help: "the Anthropic key the gateway puts on forwarded requests (x-api-key)"},
	{name: EnvGatewayOpenAIKey, help: "the OpenAI key (Authorization: Bearer)"},
	{name: EnvGatewayGeminiKey, help: "the Gemini key (x-goog-api-key)"},
	{name: EnvGatewayAnthropicURL, help: "upstream base URL, e.g. an operator's LiteLLM (default https://api.anthropic.com)"},
	{name: EnvGatewayOpenAIURL, help: "upstream base URL, without /v1 (default https://api.openai.com)"},
	{name: EnvGatewayGeminiURL, help: "upstream base URL (default https://generativelanguage.googleapis.com)"},
	{name: EnvGatewayPrices, help: "a price file (gateway/prices.yaml's shape) laid over the built-in table"},
	{name: EnvGatewayStepLimit, help: "the operator's cap on one step's spend (default none)"},
	{name: EnvGatewaySessionLimit, help: "the operator's cap on one session's spend (default none)"},
	{name: EnvGatewayWorkflows, help: "workflows whose jobs may get gateway tokens at POST /gateway/token, as BAZINGA_TOKEN_WORKFLOWS " +
		"but on any ref (default .github/workflows/bazinga-agent.yml)"},
	{name: EnvGatewayTokenTTL, help: "lifetime of a gateway token (default 1h, at most 6h)"},
	{name: EnvPreviousPrivateKey, help: "after rotating the App's private key: the former key(s), PEM. Gateway tokens signed under them " +
		"(the token key is derived from the App's key) are still accepted, never minted, for the grace below, so steps in flight " +
		"do not fail; remove it afterwards"},
	{name: EnvPreviousPrivateKeyPath, help: "a file holding the former key(s), PEM"},
	{name: EnvGatewayKeyGrace, help: "how long, from the server's start, tokens of the former key(s) are accepted " +
		"(default and at most the tokens' lifetime, BAZINGA_GATEWAY_TOKEN_TTL)",
		note: "With the gateway on, the agent job needs id-token: write, so POST /token must require the privileged jobs' " +
			"environment (BAZINGA_TOKEN_ENVIRONMENT) or be off: serve refuses to start otherwise."},
}

// Layout of the generated help: the name column, and where lines wrap.
const (
	envHelpNameWidth = 34
	envHelpWidth     = 118
)

// envHelpText lays out a table of variables under a title: the name, its
// help wrapped beside it, and any note on a line of its own.
func envHelpText(title string, vars []envVar) string {
	var b strings.Builder
	b.WriteString(title + "\n")
	indent := strings.Repeat(" ", 2+envHelpNameWidth+1)
	for _, v := range vars {
		lines := wrapWords(v.help, envHelpWidth-len(indent))
		b.WriteString("  " + v.name + strings.Repeat(" ", max(1, envHelpNameWidth+1-len(v.name))) + lines[0] + "\n")
		for _, l := range lines[1:] {
			b.WriteString(indent + l + "\n")
		}
		if v.note != "" {
			for _, l := range wrapWords(v.note, envHelpWidth-2) {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	return b.String()
}

// wrapWords breaks text into lines of at most width bytes at spaces (a
// longer word gets a line of its own).
func wrapWords(text string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(text) {
		switch {
		case cur == "":
			cur = w
		case len(cur)+1+len(w) <= width:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	return append(lines, cur)
}
