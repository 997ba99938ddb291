package server_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

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

func otherAppKeyPEM(t *testing.T) []byte {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

// The former App keys after a rotation: one or several PEM keys, inline or in a file; their grace defaults to the
// gateway tokens' lifetime and may not exceed it; every mistake names the variable.
func TestGatewayPreviousKeysFromEnv(t *testing.T) {
	old1, old2 := testkey.PEM(t), otherAppKeyPEM(t)
	sec1, err := server.GatewaySecret(old1)
	require.NoError(t, err)
	sec2, err := server.GatewaySecret(old2)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "old.pem")
	require.NoError(t, os.WriteFile(path, append(append([]byte{}, old1...), old2...), 0o600))

	read := func(env map[string]string) (server.GatewayServeConfig, error) {
		return server.GatewayConfigFromEnv(func(k string) string { return env[k] })
	}
	c, err := read(map[string]string{server.EnvPreviousPrivateKey: string(old1)})
	require.NoError(t, err)
	assert.Equal(t, [][]byte{sec1}, c.PreviousKeys)
	assert.Equal(t, gateway.DefaultTokenTTL, c.KeyGrace, "default: the tokens' lifetime")

	c, err = read(map[string]string{server.EnvPreviousPrivateKeyPath: path, server.EnvGatewayTokenTTL: "2h", server.EnvGatewayKeyGrace: "90m"})
	require.NoError(t, err)
	assert.Equal(t, [][]byte{sec1, sec2}, c.PreviousKeys, "a list: the keys one after the other")
	assert.Equal(t, 90*time.Minute, c.KeyGrace)

	c, err = read(map[string]string{})
	require.NoError(t, err)
	assert.Empty(t, c.PreviousKeys)

	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{server.EnvPreviousPrivateKey: string(old1), server.EnvGatewayKeyGrace: "61m"}, server.EnvGatewayKeyGrace + " must be a duration above 0 and at most the gateway tokens' lifetime (1h0m0s)"},
		{map[string]string{server.EnvPreviousPrivateKey: string(old1), server.EnvGatewayKeyGrace: "0s"}, server.EnvGatewayKeyGrace},
		{map[string]string{server.EnvPreviousPrivateKey: string(old1), server.EnvGatewayKeyGrace: "soon"}, server.EnvGatewayKeyGrace},
		{map[string]string{server.EnvGatewayKeyGrace: "10m"}, "without " + server.EnvPreviousPrivateKey},
		{map[string]string{server.EnvPreviousPrivateKey: "not a key"}, server.EnvPreviousPrivateKey + ": key 1 is not PEM"},
		{map[string]string{server.EnvPreviousPrivateKey: string(old1) + "trailing junk"}, server.EnvPreviousPrivateKey + ": key 2 is not PEM"},
		{map[string]string{server.EnvPreviousPrivateKey: "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"}, server.EnvPreviousPrivateKey + ": key 1"},
		{map[string]string{server.EnvPreviousPrivateKey: string(old1), server.EnvPreviousPrivateKeyPath: path}, "set only one of"},
		{map[string]string{server.EnvPreviousPrivateKeyPath: filepath.Join(t.TempDir(), "missing.pem")}, server.EnvPreviousPrivateKeyPath},
	} {
		_, err := read(tc.env)
		require.Error(t, err, "%v", tc.env)
		assert.Contains(t, err.Error(), tc.want)
		assert.NotContains(t, err.Error(), "MII", "no key material in errors")
	}
}
