package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bazinga-bot/bazinga/gateway"
)

// GatewayMetrics are the gateway's families in the server's registry: spend and tokens by installation and
// repository, requests by outcome, token exchanges by outcome.
type GatewayMetrics struct {
	exchanges *prometheus.CounterVec
	spend     *prometheus.CounterVec
	tokens    *prometheus.CounterVec
	requests  *prometheus.CounterVec
}

// NewGatewayMetrics registers the gateway's families on m (once per server).
func (m *Metrics) NewGatewayMetrics() *GatewayMetrics {
	g := &GatewayMetrics{
		exchanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bazinga_gateway_token_exchanges_total",
			Help: "Gateway token exchanges (POST /gateway/token) by outcome: issued, or the check that refused the job's token.",
		}, []string{"outcome"}),
		spend: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bazinga_gateway_spend_usd_total",
			Help: "Model spend metered by the gateway, in US dollars, by installation and repository (unpriced models at the price table's highest prices).",
		}, []string{"installation", "repository"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bazinga_gateway_tokens_total",
			Help: "Tokens metered by the gateway by installation, repository and kind (input, output, cache_read, cache_write).",
		}, []string{"installation", "repository", "kind"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bazinga_gateway_requests_total",
			Help: "Model requests at the gateway by provider and outcome (forwarded, refused_budget, upstream_failed).",
		}, []string{"provider", "outcome"}),
	}
	m.reg.MustRegister(g.exchanges, g.spend, g.tokens, g.requests)
	return g
}

// Recorded counts one ledger entry: give it to the gateway's ledger (MemLedger.OnRecord).
func (g *GatewayMetrics) Recorded(e gateway.Entry) {
	inst, repo := strconv.FormatInt(e.Scope.Installation, 10), label(e.Scope.Repository)
	g.requests.WithLabelValues(e.Provider.String(), e.Outcome.String()).Inc()
	if e.ChargedPicos > 0 {
		g.spend.WithLabelValues(inst, repo).Add(float64(e.ChargedPicos) / 1e12)
	}
	for _, k := range []struct {
		kind string
		n    int64
	}{{"input", e.Tokens.Input}, {"output", e.Tokens.Output}, {"cache_read", e.Tokens.CacheRead}, {"cache_write", e.Tokens.CacheWrite}} {
		if k.n > 0 {
			g.tokens.WithLabelValues(inst, repo, k.kind).Add(float64(k.n))
		}
	}
}
