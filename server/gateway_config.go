package server

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// The gateway's environment variables.
const (
	EnvGatewayAnthropicKey = "BAZINGA_GATEWAY_ANTHROPIC_KEY"
	EnvGatewayAnthropicURL = "BAZINGA_GATEWAY_ANTHROPIC_URL"
	EnvGatewayOpenAIKey    = "BAZINGA_GATEWAY_OPENAI_KEY"
	EnvGatewayOpenAIURL    = "BAZINGA_GATEWAY_OPENAI_URL"
	EnvGatewayGeminiKey    = "BAZINGA_GATEWAY_GEMINI_KEY"
	EnvGatewayGeminiURL    = "BAZINGA_GATEWAY_GEMINI_URL"
	EnvGatewayPrices       = "BAZINGA_GATEWAY_PRICES"
	EnvGatewayStepLimit    = "BAZINGA_GATEWAY_STEP_LIMIT_USD"
	EnvGatewaySessionLimit = "BAZINGA_GATEWAY_SESSION_LIMIT_USD"
	EnvGatewayWorkflows    = "BAZINGA_GATEWAY_WORKFLOWS"
	EnvGatewayTokenTTL     = "BAZINGA_GATEWAY_TOKEN_TTL"
)

// GatewayEnvHelp documents them, for `bazinga serve --help`: generated
// from gatewayEnv (envhelp.go).
var GatewayEnvHelp = envHelpText("Model gateway (docs/gateway.md; on when a provider key is set):", gatewayEnv)

// GatewayServeConfig is the gateway's configuration in `bazinga serve`.
type GatewayServeConfig struct {
	Enabled                   bool
	Anthropic, OpenAI, Gemini gateway.UpstreamConfig
	Prices                    *gateway.Prices // nil: the built-in table
	Exchange                  GatewayExchangeConfig
}

// GatewayConfigFromEnv reads the gateway's variables; every error names the variable at fault and never quotes
// a key.
func GatewayConfigFromEnv(getenv func(string) string) (GatewayServeConfig, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	var c GatewayServeConfig
	var errs []error
	c.Anthropic = gateway.UpstreamConfig{Key: get(EnvGatewayAnthropicKey), BaseURL: get(EnvGatewayAnthropicURL)}
	c.OpenAI = gateway.UpstreamConfig{Key: get(EnvGatewayOpenAIKey), BaseURL: strings.TrimSuffix(strings.TrimRight(get(EnvGatewayOpenAIURL), "/"), "/v1")}
	c.Gemini = gateway.UpstreamConfig{Key: get(EnvGatewayGeminiKey), BaseURL: get(EnvGatewayGeminiURL)}
	c.Enabled = c.Anthropic.Key != "" || c.OpenAI.Key != "" || c.Gemini.Key != ""
	for _, u := range []struct{ url, key, urlVar, keyVar string }{
		{c.Anthropic.BaseURL, c.Anthropic.Key, EnvGatewayAnthropicURL, EnvGatewayAnthropicKey},
		{c.OpenAI.BaseURL, c.OpenAI.Key, EnvGatewayOpenAIURL, EnvGatewayOpenAIKey},
		{c.Gemini.BaseURL, c.Gemini.Key, EnvGatewayGeminiURL, EnvGatewayGeminiKey},
	} {
		if u.url != "" && u.key == "" {
			errs = append(errs, fmt.Errorf("%s is set without %s: the gateway forwards nothing without a key", u.urlVar, u.keyVar))
		}
	}
	if f := get(EnvGatewayPrices); f != "" {
		p, err := gateway.LoadPrices(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvGatewayPrices, err))
		}
		c.Prices = p
	}
	usd := func(name string) int64 {
		v := get(name)
		if v == "" {
			return 0
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f <= 0 || f > pipeline.MaxCostLimitUSD {
			errs = append(errs, fmt.Errorf("%s must be a number of dollars above 0 and at most %d, got %q", name, pipeline.MaxCostLimitUSD, v))
			return 0
		}
		return pipeline.USDMicros(f)
	}
	c.Exchange.Limits = gateway.Limits{StepMicros: usd(EnvGatewayStepLimit), SessionMicros: usd(EnvGatewaySessionLimit)}
	if v := get(EnvGatewayWorkflows); v != "" {
		c.Exchange.Workflows = strings.Split(v, ",")
		if _, err := parseWorkflows(c.Exchange.Workflows); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvGatewayWorkflows, err))
		}
	}
	if v := get(EnvGatewayTokenTTL); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute || d > gateway.MaxTokenTTL {
			errs = append(errs, fmt.Errorf("%s must be a duration from 1m to %s such as 1h, got %q", EnvGatewayTokenTTL, gateway.MaxTokenTTL, v))
		} else {
			c.Exchange.TTL = d
		}
	}
	return c, errors.Join(errs...)
}

// CheckGatewayWithTokenExchange refuses a gateway beside a POST /token that any job of an allowed workflow may
// use: the agent job gets `id-token: write` for the gateway, and could then ask for an OIDC token of POST /token's
// audience — only the environment claim, which the agent job does not have, keeps it out.
func CheckGatewayWithTokenExchange(gw GatewayServeConfig, x TokenExchangeConfig) error {
	if gw.Enabled && !x.Disabled && strings.TrimSpace(x.Environment) == "" {
		return fmt.Errorf("the model gateway is on (%s, …) and POST /token takes any job of its workflows: set %s to the environment "+
			"of the privileged jobs (publish, land, reconcile), or %s=off; the agent job gets id-token: write for the gateway",
			EnvGatewayAnthropicKey, EnvTokenEnvironment, EnvTokenExchange)
	}
	return nil
}

// GatewaySecret is the secret bazinga serve derives the gateway's token key from (gateway.NewSignerFromSecret): the
// App's private key, as DER, whichever PEM form it came in. Every replica holds it already, it never leaves the
// server (GitHub keeps only its public half), it is a random 2048-bit RSA key rather than a chosen string, and whoever
// holds it can already act as the App, which is more than a gateway token buys: deriving from it stores no new secret
// and widens no exposure. Rotating the App's key (a new key in GitHub's settings, then the old one deleted) rotates
// the gateway's tokens with it. The webhook secret was the other candidate and is not used: GitHub holds it too,
// it is often a typed string, and today it only guards deliveries.
func GatewaySecret(privateKeyPEM []byte) ([]byte, error) {
	block, _ := pem.Decode(privateKeyPEM)
	if block == nil {
		return nil, errors.New("gateway key: the App's private key is not PEM")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return x509.MarshalPKCS1PrivateKey(k), nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("gateway key: the App's private key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("gateway key: the App's private key is a %T, not RSA", k)
	}
	return x509.MarshalPKCS1PrivateKey(rk), nil
}
