package gateway

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Audience is the aud of every gateway token: the gateway accepts no other, and nothing else accepts it (POST
// /token verifies RS256 job tokens of GitHub's issuer against GitHub's keys; a gateway token is EdDSA-signed by
// a key that exists only in bazinga's own processes, never stored).
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

// Signer mints and verifies gateway tokens with an Ed25519 key that is never stored anywhere: made at random when
// it is created (NewSigner: tokens die with the process), or derived from a secret every replica of a server already
// holds (NewSignerFromSecret: replicas verify each other's tokens, and rotating the secret rotates them).
type Signer struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	kid  string
	now  func() time.Time
	// previous are keys of before a rotation, verified (never minted with) until their grace ends.
	previous []previousKey
}

// previousKey is a former key and the end of its grace.
type previousKey struct {
	pub   ed25519.PublicKey
	kid   string
	until time.Time
}

// SignerKeyInfo is the HKDF info label of the gateway's key: a new version of the label derives an unrelated key,
// ending every token of the old one.
const SignerKeyInfo = "bazinga gateway token signing key v1"

// MinSecretBytes is the shortest secret NewSignerFromSecret accepts.
const MinSecretBytes = 32

// NewSigner makes a signer with a fresh key. now may be nil (time.Now).
func NewSigner(now func() time.Time) (*Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("gateway signing key: %w", err)
	}
	return newSigner(priv, now), nil
}

// NewSignerFromSecret derives the signing key from secret with HKDF-SHA256 (info SignerKeyInfo): every process
// given the same secret signs and verifies the same tokens. The secret must be high-entropy and at least
// MinSecretBytes long; it is used only as HKDF input, so the key says nothing about it.
func NewSignerFromSecret(secret []byte, now func() time.Time) (*Signer, error) {
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("gateway signing key: the secret is %d bytes, at least %d are needed", len(secret), MinSecretBytes)
	}
	seed, err := hkdf.Key(sha256.New, secret, nil, SignerKeyInfo, ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("gateway signing key: %w", err)
	}
	return newSigner(ed25519.NewKeyFromSeed(seed), now), nil
}

func newSigner(priv ed25519.PrivateKey, now func() time.Time) *Signer {
	if now == nil {
		now = time.Now
	}
	pub := priv.Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	return &Signer{priv: priv, pub: pub, kid: hex.EncodeToString(sum[:8]), now: now}
}

// AcceptPrevious makes the signer accept, until until, tokens of the key secret derives (NewSignerFromSecret's
// derivation): the key of before a rotation, so that tokens minted just before it do not all die at once. It
// never mints with that key. A secret deriving the current key is ignored. Call it before the signer is in use;
// it returns the former key's id.
func (s *Signer) AcceptPrevious(secret []byte, until time.Time) (string, error) {
	old, err := NewSignerFromSecret(secret, nil)
	if err != nil {
		return "", fmt.Errorf("previous key: %w", err)
	}
	if old.kid != s.kid {
		s.previous = append(s.previous, previousKey{pub: old.pub, kid: old.kid, until: until})
	}
	return old.kid, nil
}

// KeyID names the signer's key (a hash of its public key, safe to log): tokens carry it as kid, so a refusal can
// tell a token of another key (another server, or before a rotation) from a forged one.
func (s *Signer) KeyID() string { return s.kid }

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
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	t.Header["kid"] = s.kid
	tok, err := t.SignedString(s.priv)
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
	if _, err := p.ParseWithClaims(raw, c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == s.kid {
			return s.pub, nil
		}
		for _, p := range s.previous {
			if kid != p.kid {
				continue
			}
			if !s.now().Before(p.until) {
				return nil, fmt.Errorf("signed by the key of before a rotation (%q), accepted until %s only; this server's is %q",
					kid, p.until.UTC().Format(time.RFC3339), s.kid)
			}
			return p.pub, nil
		}
		// Said before the signature is checked, but it tells nothing an attacker could use: the key ids are
		// hashes of public keys.
		return nil, fmt.Errorf("signed by key %q, not this server's %q (a token of another server, or of before a key rotation)", kid, s.kid)
	}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	if c.Scope.Repository == "" || c.Scope.Session == "" || c.Scope.Step == "" {
		return nil, fmt.Errorf("%w: no scope", ErrBadToken)
	}
	return c, nil
}
