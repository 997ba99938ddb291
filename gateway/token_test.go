package gateway_test

import (
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
