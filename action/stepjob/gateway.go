package stepjob

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/sethvargo/go-githubactions"

	"github.com/bazinga-bot/bazinga/agent"
	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// GatewayAudience is the audience an agent job's OIDC token is requested with for bazinga serve's gateway
// (gateway.Audience; POST /token's is DefaultExchangeAudience, and neither endpoint takes the other's).
const GatewayAudience = "bazinga-gateway"

// readGatewayInputs reads gateway-url: bazinga serve's model gateway (App mode), for agent jobs only. With it the
// job must hold no provider key at all: the gateway holds them.
func readGatewayInputs(gha *githubactions.Action, getenv func(string) string, in *inputs) []string {
	in.gatewayURL = strings.TrimRight(strings.TrimSpace(input(gha, "gateway-url")), "/")
	if in.gatewayURL == "" {
		return nil
	}
	var problems []string
	if in.command != CommandAgent {
		problems = append(problems, "input `gateway-url` is set on a "+in.command+" job: only the agent job calls the model")
	}
	if err := checkExchangeURL(in.gatewayURL); err != nil {
		problems = append(problems, "input `gateway-url`: "+strings.ReplaceAll(err.Error(), "/token", "/gateway"))
	}
	if getenv(EnvIDTokenRequestURL) == "" || getenv(EnvIDTokenRequestToken) == "" {
		problems = append(problems, "input `gateway-url` is set but the job cannot request its OIDC token ("+EnvIDTokenRequestURL+" is not set): "+
			"add `permissions: id-token: write` to the agent job (bazinga serve then requires BAZINGA_TOKEN_ENVIRONMENT for POST /token)")
	}
	if keys := providerKeysIn(getenv); len(keys) > 0 {
		problems = append(problems, fmt.Sprintf("input `gateway-url` is set but this job's environment holds %s: with the gateway, the provider key "+
			"stays in bazinga serve (BAZINGA_GATEWAY_*_KEY); remove it from the workflow, where the agent could read it", strings.Join(keys, ", ")))
	}
	return problems
}

// providerKeysIn names the provider credentials set in the job's environment (the secret-bearing names of
// config.CLICredentials: keys, tokens, secrets and credential files).
func providerKeysIn(getenv func(string) string) []string {
	var out []string
	for _, n := range config.CLICredentials(pipeline.CLIGeneric) {
		if !(strings.Contains(n, "KEY") || strings.Contains(n, "TOKEN") || strings.Contains(n, "SECRET") || strings.Contains(n, "CREDENTIALS")) {
			continue
		}
		if strings.TrimSpace(getenv(n)) != "" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// gatewayToken is what POST <gateway-url>/token answers (server.GatewayToken).
type gatewayToken struct {
	Token   string `json:"token"`
	Step    string `json:"step"`
	Message string `json:"message"`
	Error   string `json:"error"`
}

// requestGatewayToken exchanges the job's OIDC token (audience GatewayAudience) for a gateway token bound to the
// step the App dispatched this run for; the token is masked in the log.
func requestGatewayToken(ctx context.Context, client *http.Client, gha *githubactions.Action, getenv func(string) string, in inputs) (string, error) {
	idToken, err := requestIDToken(ctx, client, getenv(EnvIDTokenRequestURL), getenv(EnvIDTokenRequestToken), GatewayAudience)
	if err != nil {
		return "", fmt.Errorf("requesting the job's OIDC token: %w", err)
	}
	gha.AddMask(idToken)
	u := in.gatewayURL + "/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+idToken)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("gateway token at %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxExchangeBody))
	if err != nil {
		return "", fmt.Errorf("gateway token at %s: %w", u, err)
	}
	var gt gatewayToken
	_ = json.Unmarshal(body, &gt)
	if resp.StatusCode/100 != 2 {
		if gt.Message != "" {
			return "", fmt.Errorf("the gateway at %s refused (%s, check %s): %s", u, resp.Status, gt.Error, gt.Message)
		}
		return "", fmt.Errorf("the gateway at %s answered %s", u, resp.Status)
	}
	if gt.Token == "" {
		return "", fmt.Errorf("the gateway at %s answered no token", u)
	}
	gha.AddMask(gt.Token)
	if gt.Step != in.step {
		return "", fmt.Errorf("the gateway bound its token to step %q, not this job's %q: the run's title and its step input disagree", gt.Step, in.step)
	}
	return gt.Token, nil
}

// remoteMeter points a step at bazinga serve's gateway. What the step cost is counted by the server's ledger; the
// job, which the agent can tamper with, has nothing to say about it, so it keeps the CLI's report as advisory.
type remoteMeter struct {
	base, token string
}

func (m remoteMeter) StepEnv(pipeline.Session, pipeline.Step) (map[string]string, error) {
	return agent.GatewayEnv(m.base, m.token), nil
}

func (m remoteMeter) StepUsage(pipeline.Session, pipeline.Step) (*pipeline.Usage, []string) {
	return nil, []string{"model calls went through the gateway at " + m.base + ", which metered them; the cost here is the CLI's own report"}
}
