package server

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"os"
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
	// EnvPreviousPrivateKey (or _PATH, a file) holds the App's former private key(s), PEM, after a rotation: the
	// gateway tokens minted under them stay good for EnvGatewayKeyGrace.
	EnvPreviousPrivateKey     = "BAZINGA_PRIVATE_KEY_PREVIOUS"
	EnvPreviousPrivateKeyPath = "BAZINGA_PRIVATE_KEY_PREVIOUS_PATH"
	EnvGatewayKeyGrace        = "BAZINGA_GATEWAY_KEY_GRACE"
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
	// PreviousKeys are the secrets (GatewaySecret) of the App's former private keys: gateway tokens signed under
	// them are accepted, never minted, for KeyGrace from the server's start.
	PreviousKeys [][]byte
	// KeyGrace is at most the tokens' lifetime (default: that lifetime): by then every token minted under a former
	// key before this server started has expired.
	KeyGrace time.Duration
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
	c.PreviousKeys, c.KeyGrace, errs = previousKeysFromEnv(get, c.Exchange.TTL, errs)
	return c, errors.Join(errs...)
}

// previousKeysFromEnv reads the former App keys and their grace.
func previousKeysFromEnv(get func(string) string, ttl time.Duration, errs []error) ([][]byte, time.Duration, []error) {
	if ttl <= 0 {
		ttl = gateway.DefaultTokenTTL
	}
	pemText, from := get(EnvPreviousPrivateKey), EnvPreviousPrivateKey
	if path := get(EnvPreviousPrivateKeyPath); path != "" {
		if pemText != "" {
			return nil, 0, append(errs, fmt.Errorf("set only one of %s and %s", EnvPreviousPrivateKey, EnvPreviousPrivateKeyPath))
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, 0, append(errs, fmt.Errorf("%s: %w", EnvPreviousPrivateKeyPath, err))
		}
		pemText, from = string(b), EnvPreviousPrivateKeyPath
	}
	grace := get(EnvGatewayKeyGrace)
	if pemText == "" {
		if grace != "" {
			errs = append(errs, fmt.Errorf("%s is set without %s: there is no former key to give a grace to", EnvGatewayKeyGrace, EnvPreviousPrivateKey))
		}
		return nil, 0, errs
	}
	var keys [][]byte
	rest := []byte(pemText)
	for n := 1; ; n++ {
		block, r := pem.Decode(rest)
		if block == nil {
			if strings.TrimSpace(string(rest)) != "" || n == 1 {
				return nil, 0, append(errs, fmt.Errorf("%s: key %d is not PEM (one or more PEM private keys, one after the other)", from, n))
			}
			break
		}
		rest = r
		secret, err := GatewaySecret(pem.EncodeToMemory(block))
		if err != nil {
			return nil, 0, append(errs, fmt.Errorf("%s: key %d: %w", from, n, err))
		}
		keys = append(keys, secret)
	}
	d := ttl
	if grace != "" {
		var err error
		if d, err = time.ParseDuration(grace); err != nil || d <= 0 || d > ttl {
			return nil, 0, append(errs, fmt.Errorf("%s must be a duration above 0 and at most the gateway tokens' lifetime (%s), got %q", EnvGatewayKeyGrace, ttl, grace))
		}
	}
	return keys, d, errs
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
