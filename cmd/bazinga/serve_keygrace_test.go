package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/internal/modelfake"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/bazinga-bot/bazinga/server"
)

// After the App's key is rotated, serve started with the former key in BAZINGA_PRIVATE_KEY_PREVIOUS keeps serving
// the gateway tokens minted under it for the grace, then refuses them; it mints under the new key, and a key it
// was never given is refused throughout.
func TestServeGatewayFormerKeyGrace(t *testing.T) {
	newKey := func() []byte {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		require.NoError(t, err)
		return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	}
	former, current, stranger := testkey.PEM(t), newKey(), newKey()
	model := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "hi", Usage: modelfake.Usage{InputTokens: 10, OutputTokens: 1}}))
	env := map[string]string{server.EnvGatewayAnthropicKey: "sk-real", server.EnvGatewayAnthropicURL: model.URL,
		server.EnvPreviousPrivateKey: string(former), server.EnvGatewayKeyGrace: "2s"}
	gwCfg, err := server.GatewayConfigFromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	cfg := server.Config{PrivateKey: current}
	gp, err := newGatewayParts(context.Background(), &cfg, gwCfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv := httptest.NewServer(gp.gw)
	t.Cleanup(srv.Close)

	signerOf := func(pemKey []byte) *gateway.Signer {
		sec, err := server.GatewaySecret(pemKey)
		require.NoError(t, err)
		s, err := gateway.NewSignerFromSecret(sec, nil)
		require.NoError(t, err)
		return s
	}
	sc := gateway.Scope{Installation: 1, Repository: "acme/widgets", Session: "1", Step: "1/_/pm/1"}
	mint := func(s *gateway.Signer) string {
		tok, _, err := s.Mint(sc, gateway.Limits{}, time.Hour)
		require.NoError(t, err)
		return tok
	}
	call := func(tok string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/anthropic/v1/messages",
			strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		req.Header.Set("x-api-key", tok)
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	formerTok, strangerTok := mint(signerOf(former)), mint(signerOf(stranger))
	code, body := call(formerTok)
	assert.Equal(t, http.StatusOK, code, "a former key's token within the grace: %s", body)
	code, _ = call(mint(gp.signer))
	assert.Equal(t, http.StatusOK, code)
	_, err = signerOf(former).Verify(mint(gp.signer))
	assert.ErrorIs(t, err, gateway.ErrBadToken, "minted under the current key, not the former")
	code, _ = call(strangerTok)
	assert.Equal(t, http.StatusUnauthorized, code, "a key never given")

	time.Sleep(2100 * time.Millisecond)
	code, body = call(formerTok)
	assert.Equal(t, http.StatusUnauthorized, code, "after the grace")
	assert.Contains(t, body, "accepted until")
	code, _ = call(mint(gp.signer))
	assert.Equal(t, http.StatusOK, code)
	assert.Len(t, model.Requests(), 3)
}
