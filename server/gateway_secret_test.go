package server_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/bazinga-bot/bazinga/server"
)

// Replicas given the App's key in either PEM form (PKCS#1 as GitHub issues it, or PKCS#8) sign and verify the same
// gateway tokens; another App key (a rotation) verifies none of them.
func TestGatewaySecretFromTheAppKey(t *testing.T) {
	pkcs1 := testkey.PEM(t)
	block, _ := pem.Decode(pkcs1)
	k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	pkcs8 := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})

	signer := func(pemKey []byte) *gateway.Signer {
		sec, err := server.GatewaySecret(pemKey)
		require.NoError(t, err)
		s, err := gateway.NewSignerFromSecret(sec, nil)
		require.NoError(t, err)
		return s
	}
	a, b := signer(pkcs1), signer(pkcs8)
	sc := gateway.Scope{Repository: "o/r", Session: "1", Step: "1/A/developer/2"}
	tok, _, err := a.Mint(sc, gateway.Limits{}, 0)
	require.NoError(t, err)
	_, err = b.Verify(tok)
	require.NoError(t, err)

	k2, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rotated := signer(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k2)}))
	_, err = rotated.Verify(tok)
	assert.ErrorIs(t, err, gateway.ErrBadToken)

	_, err = server.GatewaySecret([]byte("not a key"))
	assert.ErrorContains(t, err, "not PEM")
}
