package gateway_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
)

func TestTokenRoundTrip(t *testing.T) {
	s, err := gateway.NewSigner(nil)
	require.NoError(t, err)
	tok, exp, err := s.Mint(scope, gateway.Limits{StepMicros: 5, SessionMicros: 9}, 10*time.Minute)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(10*time.Minute), exp, 2*time.Second)
	c, err := s.Verify(tok)
	require.NoError(t, err)
	assert.Equal(t, scope, c.Scope)
	assert.Equal(t, gateway.Limits{StepMicros: 5, SessionMicros: 9}, c.Limits)
	assert.Equal(t, jwt.ClaimStrings{gateway.Audience}, c.Audience)
}

func TestTokenRefused(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	s, err := gateway.NewSigner(clock)
	require.NoError(t, err)
	tok, _, err := s.Mint(scope, gateway.Limits{}, time.Hour)
	require.NoError(t, err)

	other, err := gateway.NewSigner(clock)
	require.NoError(t, err)
	_, err = other.Verify(tok)
	assert.ErrorIs(t, err, gateway.ErrBadToken, "another process's key")

	now = now.Add(2 * time.Hour)
	_, err = s.Verify(tok)
	assert.ErrorIs(t, err, gateway.ErrBadToken, "expired")
	assert.ErrorContains(t, err, "expired")

	_, err = s.Verify("")
	assert.ErrorIs(t, err, gateway.ErrBadToken)

	// A token is bound to a whole scope: none is minted without repository, session and step.
	_, _, err = s.Mint(gateway.Scope{Repository: "o/r"}, gateway.Limits{}, 0)
	assert.ErrorContains(t, err, "required")

	// alg=none and HS256 made with the public key as secret are refused.
	none := jwt.NewWithClaims(jwt.SigningMethodNone, gateway.Claims{Scope: scope,
		RegisteredClaims: jwt.RegisteredClaims{Issuer: gateway.Issuer, Audience: jwt.ClaimStrings{gateway.Audience}, ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}})
	raw, err := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	_, err = s.Verify(raw)
	assert.ErrorIs(t, err, gateway.ErrBadToken)
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, gateway.Claims{Scope: scope,
		RegisteredClaims: jwt.RegisteredClaims{Issuer: gateway.Issuer, Audience: jwt.ClaimStrings{gateway.Audience}, ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}})
	raw, err = hs.SignedString([]byte("guess"))
	require.NoError(t, err)
	_, err = s.Verify(raw)
	assert.ErrorIs(t, err, gateway.ErrBadToken)
}

func TestSignerFromSecretSharedAcrossReplicas(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef-replica-secret")
	a, err := gateway.NewSignerFromSecret(secret, nil)
	require.NoError(t, err)
	b, err := gateway.NewSignerFromSecret(append([]byte(nil), secret...), nil)
	require.NoError(t, err)
	assert.Equal(t, a.KeyID(), b.KeyID())

	tok, _, err := a.Mint(scope, gateway.Limits{SessionMicros: 7}, time.Minute)
	require.NoError(t, err)
	c, err := b.Verify(tok)
	require.NoError(t, err, "a token of one replica is good at another")
	assert.Equal(t, scope, c.Scope)
	tok2, _, err := b.Mint(scope, gateway.Limits{}, time.Minute)
	require.NoError(t, err)
	_, err = a.Verify(tok2)
	require.NoError(t, err)

	rotated, err := gateway.NewSignerFromSecret([]byte("fedcba9876543210fedcba9876543210-replica-secret"), nil)
	require.NoError(t, err)
	assert.NotEqual(t, a.KeyID(), rotated.KeyID())
	_, err = rotated.Verify(tok)
	require.ErrorIs(t, err, gateway.ErrBadToken, "another secret (a rotation) refuses the old tokens")
	assert.Contains(t, err.Error(), a.KeyID(), "the refusal names the token's key")
	_, err = a.Verify(mustMint(t, rotated))
	require.ErrorIs(t, err, gateway.ErrBadToken)

	random, err := gateway.NewSigner(nil)
	require.NoError(t, err)
	_, err = random.Verify(tok)
	require.ErrorIs(t, err, gateway.ErrBadToken)

	_, err = gateway.NewSignerFromSecret([]byte("short"), nil)
	require.ErrorContains(t, err, "at least 32")
}

// A token that names the right key id but is signed by another key is still refused: the kid picks nothing.
func TestSignerKeyIDIsNotTrusted(t *testing.T) {
	a, err := gateway.NewSignerFromSecret([]byte("0123456789abcdef0123456789abcdef"), nil)
	require.NoError(t, err)
	forged := jwt.NewWithClaims(jwt.SigningMethodEdDSA, gateway.Claims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: gateway.Issuer, Audience: jwt.ClaimStrings{gateway.Audience},
			IssuedAt: jwt.NewNumericDate(time.Now()), ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))},
		Scope: scope})
	forged.Header["kid"] = a.KeyID()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	raw, err := forged.SignedString(priv)
	require.NoError(t, err)
	_, err = a.Verify(raw)
	require.ErrorIs(t, err, gateway.ErrBadToken)
}

func mustMint(t *testing.T, s *gateway.Signer) string {
	t.Helper()
	tok, _, err := s.Mint(scope, gateway.Limits{}, time.Minute)
	require.NoError(t, err)
	return tok
}

// After a rotation of the secret, tokens of the former key are good for the grace and no longer; the signer mints
// only with the current key, and a key it was never given stays refused.
func TestSignerKeyRotationGrace(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	now := t0
	clock := func() time.Time { return now }
	oldSecret := []byte("0123456789abcdef0123456789abcdef-before-rotation")
	old, err := gateway.NewSignerFromSecret(oldSecret, clock)
	require.NoError(t, err)
	oldTok, _, err := old.Mint(scope, gateway.Limits{StepMicros: 3}, time.Hour)
	require.NoError(t, err)
	shortTok, _, err := old.Mint(scope, gateway.Limits{}, 5*time.Minute)
	require.NoError(t, err)

	cur, err := gateway.NewSignerFromSecret([]byte("fedcba9876543210fedcba9876543210-after-rotation"), clock)
	require.NoError(t, err)
	kid, err := cur.AcceptPrevious(oldSecret, t0.Add(30*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, old.KeyID(), kid)
	self, err := cur.AcceptPrevious([]byte("fedcba9876543210fedcba9876543210-after-rotation"), t0.Add(time.Hour))
	require.NoError(t, err, "the current secret given again is harmless")
	assert.Equal(t, cur.KeyID(), self)
	_, err = cur.AcceptPrevious([]byte("short"), t0.Add(time.Hour))
	require.ErrorContains(t, err, "at least 32")

	now = t0.Add(10 * time.Minute)
	c, err := cur.Verify(oldTok)
	require.NoError(t, err, "within the grace, a token of the former key is good")
	assert.Equal(t, int64(3), c.Limits.StepMicros)
	_, err = cur.Verify(shortTok)
	require.ErrorIs(t, err, gateway.ErrBadToken, "the grace does not outlast the token's own expiry")
	newTok := mustMint(t, cur)
	parsed, _, err := jwt.NewParser().ParseUnverified(newTok, &gateway.Claims{})
	require.NoError(t, err)
	assert.Equal(t, cur.KeyID(), parsed.Header["kid"], "mints with the current key only")
	_, err = old.Verify(newTok)
	require.ErrorIs(t, err, gateway.ErrBadToken)

	unknown, err := gateway.NewSignerFromSecret([]byte("an unrelated secret of 32 bytes or more, never given"), clock)
	require.NoError(t, err)
	_, err = cur.Verify(mustMint(t, unknown))
	require.ErrorIs(t, err, gateway.ErrBadToken, "a key never configured is refused during the grace")

	// The former key's id on a token signed by another key: the kid picks the key, the signature still decides.
	forged := jwt.NewWithClaims(jwt.SigningMethodEdDSA, gateway.Claims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: gateway.Issuer, Audience: jwt.ClaimStrings{gateway.Audience},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))},
		Scope: scope})
	forged.Header["kid"] = old.KeyID()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	raw, err := forged.SignedString(priv)
	require.NoError(t, err)
	_, err = cur.Verify(raw)
	require.ErrorIs(t, err, gateway.ErrBadToken)

	now = t0.Add(30 * time.Minute)
	_, err = cur.Verify(oldTok)
	require.ErrorIs(t, err, gateway.ErrBadToken, "after the grace, refused though not expired")
	assert.Contains(t, err.Error(), "accepted until")
	_, err = cur.Verify(mustMint(t, cur))
	require.NoError(t, err)
}
