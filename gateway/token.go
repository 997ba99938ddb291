package gateway

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Audience is the aud of every gateway token: the gateway accepts no other, and nothing else accepts it (POST
// /token verifies RS256 job tokens of GitHub's issuer against GitHub's keys; a gateway token is EdDSA-signed by
// a key that exists only in this process).
const Audience = "bazinga-gateway"

// Issuer is the iss of gateway tokens.
const Issuer = "bazinga-gateway-issuer"

// DefaultTokenTTL is how long a gateway token is good for: a step's time limit is 30 minutes by default; a
// longer step mints another.
const DefaultTokenTTL = time.Hour

// MaxTokenTTL bounds a requested lifetime.
const MaxTokenTTL = 6 * time.Hour

// maxTokenBytes bounds a presented token.
const maxTokenBytes = 8 << 10

// Limits are a step's and its session's cost limits, in millionths of a dollar; 0 is no limit.
type Limits struct {
	StepMicros    int64 `json:"step_micros,omitempty"`
	SessionMicros int64 `json:"session_micros,omitempty"`
}

// Claims are a gateway token's claims.
type Claims struct {
	jwt.RegisteredClaims
	Scope  Scope  `json:"scope"`
	Limits Limits `json:"limits"`
}

// Signer mints and verifies gateway tokens with an Ed25519 key made when it is created: tokens die with the
// process that minted them, and no key is stored anywhere an agent could read it.
type Signer struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	now  func() time.Time
}

// NewSigner makes a signer with a fresh key. now may be nil (time.Now).
func NewSigner(now func() time.Time) (*Signer, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("gateway signing key: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	return &Signer{priv: priv, pub: pub, now: now}, nil
}

// Mint returns a token for scope with limits, good for ttl (DefaultTokenTTL when 0, at most MaxTokenTTL).
func (s *Signer) Mint(scope Scope, limits Limits, ttl time.Duration) (string, time.Time, error) {
	if scope.Repository == "" || scope.Session == "" || scope.Step == "" {
		return "", time.Time{}, errors.New("gateway token: repository, session and step are required")
	}
	if limits.StepMicros < 0 || limits.SessionMicros < 0 {
		return "", time.Time{}, errors.New("gateway token: negative limit")
	}
	if ttl <= 0 {
		ttl = DefaultTokenTTL
	}
	ttl = min(ttl, MaxTokenTTL)
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", time.Time{}, fmt.Errorf("gateway token id: %w", err)
	}
	now := s.now()
	exp := now.Add(ttl).Truncate(time.Second)
	c := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Audience:  jwt.ClaimStrings{Audience},
			Subject:   scope.Repository + "/" + scope.Session + "/" + scope.Step,
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now.Add(-time.Second)),
			ExpiresAt: jwt.NewNumericDate(exp),
			ID:        hex.EncodeToString(id[:]),
		},
		Scope:  scope,
		Limits: limits,
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(s.priv)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sign gateway token: %w", err)
	}
	return tok, exp, nil
}

// ErrBadToken is wrapped by every refusal of Verify.
var ErrBadToken = errors.New("not a valid gateway token")

// Verify checks a presented token: EdDSA by this signer's key, issuer, audience, expiry; and returns its claims.
func (s *Signer) Verify(raw string) (*Claims, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, fmt.Errorf("%w: none presented", ErrBadToken)
	}
	if len(raw) > maxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrBadToken, maxTokenBytes)
	}
	c := &Claims{}
	p := jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithIssuer(Issuer),
		jwt.WithAudience(Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(5*time.Second),
		jwt.WithTimeFunc(s.now),
	)
	if _, err := p.ParseWithClaims(raw, c, func(*jwt.Token) (any, error) { return s.pub, nil }); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	if c.Scope.Repository == "" || c.Scope.Session == "" || c.Scope.Step == "" {
		return nil, fmt.Errorf("%w: no scope", ErrBadToken)
	}
	return c, nil
}
