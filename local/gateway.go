package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/agent"
	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// GatewayOptions turn on the metering gateway for a local session: bazinga serves it on loopback, the agent CLI
// gets its base URLs and a token for the step instead of the provider key, and the session's cost is what the
// gateway metered.
type GatewayOptions struct {
	// The upstreams and the real keys; a provider without a key is not served.
	Anthropic, OpenAI, Gemini gateway.UpstreamConfig
	// Prices overrides the built-in price table (nil: gateway.DefaultPrices()).
	Prices *gateway.Prices
}

// GatewayFromEnv reads the upstreams from bazinga's own environment: the keys (ANTHROPIC_API_KEY,
// OPENAI_API_KEY or CODEX_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY) and, when set, the base URLs the CLIs would
// have used (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL), which become the gateway's upstreams —
// an operator's own gateway keeps working behind bazinga's. BAZINGA_GATEWAY_PRICES names a price file.
func GatewayFromEnv(getenv func(string) string) (*GatewayOptions, error) {
	first := func(names ...string) string {
		for _, n := range names {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return v
			}
		}
		return ""
	}
	o := &GatewayOptions{
		Anthropic: gateway.UpstreamConfig{Key: first("ANTHROPIC_API_KEY"), BaseURL: first("ANTHROPIC_BASE_URL")},
		// The gateway's OpenAI paths carry /v1; OPENAI_BASE_URL conventionally ends with it.
		OpenAI: gateway.UpstreamConfig{Key: first("OPENAI_API_KEY", "CODEX_API_KEY"), BaseURL: strings.TrimSuffix(strings.TrimRight(first("OPENAI_BASE_URL"), "/"), "/v1")},
		Gemini: gateway.UpstreamConfig{Key: first("GEMINI_API_KEY", "GOOGLE_API_KEY"), BaseURL: first("GOOGLE_GEMINI_BASE_URL")},
	}
	if o.Anthropic.Key == "" && o.OpenAI.Key == "" && o.Gemini.Key == "" {
		return nil, errors.New("the gateway needs a provider key in bazinga's environment: ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY")
	}
	if f := first("BAZINGA_GATEWAY_PRICES"); f != "" {
		p, err := gateway.LoadPrices(f)
		if err != nil {
			return nil, err
		}
		o.Prices = p
	}
	return o, nil
}

// localGateway is the gateway of one local run, on 127.0.0.1.
type localGateway struct {
	gw     *gateway.Gateway
	signer *gateway.Signer
	ledger *gateway.MemLedger
	srv    *http.Server
	url    string
	repo   string // the repository's path, the scope's repository
	cfg    pipeline.Config
}

func startGateway(o GatewayOptions, repo string, cfg pipeline.Config) (*localGateway, error) {
	signer, err := gateway.NewSigner(nil)
	if err != nil {
		return nil, err
	}
	led := gateway.NewMemLedger()
	gw, err := gateway.New(gateway.Config{Anthropic: o.Anthropic, OpenAI: o.OpenAI, Gemini: o.Gemini, Signer: signer, Ledger: led, Prices: o.Prices,
		RaiseHint: "raise limits.step_cost_usd or limits.session_cost_usd in .github/bazinga.yml, commit, then bazinga run --resume"})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gateway: listen on loopback: %w", err)
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &localGateway{gw: gw, signer: signer, ledger: led, srv: srv, url: "http://" + ln.Addr().String(), repo: repo, cfg: cfg}, nil
}

func (g *localGateway) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = g.srv.Shutdown(ctx)
}

func (g *localGateway) scope(s pipeline.Session, st pipeline.Step) gateway.Scope {
	return gateway.Scope{Repository: g.repo, Session: s.ID, Step: st.ID}
}

// carry counts a resumed session's earlier spend against its limit.
func (g *localGateway) carry(s pipeline.Session) {
	g.ledger.Carry(gateway.SessionKey{Repository: g.repo, Session: s.ID}, s.Usage.CostMicros)
}

// gatewayEnvNames are the variables StepEnv sets; with the gateway on, no provider credential of bazinga's
// environment is passed to the agent (agentEnvWithoutCredentials).
func (g *localGateway) StepEnv(s pipeline.Session, st pipeline.Step) (map[string]string, error) {
	limits := gateway.Limits{StepMicros: pipeline.USDMicros(g.cfg.Limits.StepCostUSD), SessionMicros: pipeline.USDMicros(g.cfg.Limits.SessionCostUSD)}
	ttl := g.cfg.Agent.Timeout.D() + g.cfg.Agent.Grace.D() + time.Minute
	tok, _, err := g.signer.Mint(g.scope(s, st), limits, min(ttl, gateway.MaxTokenTTL))
	if err != nil {
		return nil, err
	}
	env := agent.GatewayEnv(g.url, tok)
	// Only the providers served: a CLI that finds no key for another provider says so, named.
	if !g.gw.Serves(gateway.UpstreamAnthropic) {
		delete(env, "ANTHROPIC_BASE_URL")
		delete(env, "ANTHROPIC_API_KEY")
	}
	if !g.gw.Serves(gateway.UpstreamOpenAI) {
		delete(env, "OPENAI_BASE_URL")
		delete(env, "OPENAI_API_KEY")
		delete(env, "CODEX_API_KEY")
	}
	if !g.gw.Serves(gateway.UpstreamGemini) {
		delete(env, "GOOGLE_GEMINI_BASE_URL")
		delete(env, "GEMINI_API_KEY")
	}
	return env, nil
}

// StepUsage ends the step at the gateway and reads what it metered.
func (g *localGateway) StepUsage(s pipeline.Session, st pipeline.Step) (*pipeline.Usage, []string) {
	sc := g.scope(s, st)
	g.gw.CloseScope(sc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var notes []string
	if err := g.gw.Settle(ctx, sc); err != nil {
		notes = append(notes, err.Error())
	}
	sp, err := g.ledger.StepSpend(ctx, sc)
	if err != nil {
		return nil, append(notes, "gateway ledger: "+err.Error())
	}
	return meteredUsage(sp), append(notes, spendNotes(sp)...)
}

func meteredUsage(sp gateway.Spend) *pipeline.Usage {
	u := sp.StepUsage()
	return &u
}

func spendNotes(sp gateway.Spend) []string {
	var notes []string
	for _, u := range sp.Unpriced {
		notes = append(notes, fmt.Sprintf("model %s is not in the price table: its %s tokens were charged at the table's highest prices", u.Model, pipeline.FormatTokens(u.Tokens.Total())))
	}
	if sp.Estimated {
		notes = append(notes, "some answers were cut off or reported no usage: their tokens are the gateway's conservative estimate")
	}
	if sp.Refused > 0 {
		notes = append(notes, fmt.Sprintf("the gateway refused %d request(s) over the cost limit", sp.Refused))
	}
	return notes
}

// agentEnvWithoutCredentials drops every provider credential name from the names passed to the agent: with the
// gateway on, the real keys stay in bazinga's process.
func agentEnvWithoutCredentials(names []string) []string { return agent.WithoutCredentials(names) }
