package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// Signature errors; all of them answer 401.
var (
	ErrNoSignature      = errors.New("missing X-Hub-Signature-256")
	ErrSHA1Only         = errors.New("only X-Hub-Signature (SHA-1) present; X-Hub-Signature-256 is required")
	ErrBadSignature     = errors.New("X-Hub-Signature-256 does not match the payload")
	ErrMalformedSigHead = errors.New("X-Hub-Signature-256 is not sha256=<hex>")
)

// Sign returns the X-Hub-Signature-256 value of a payload: "sha256=" and the
// hex HMAC-SHA256 of the raw body keyed with the webhook secret.
func Sign(secret, payload []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(payload)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature checks an X-Hub-Signature-256 header value against the raw
// payload, in constant time. SHA-1 signatures are never accepted: GitHub
// keeps sending them only for compatibility.
func VerifySignature(secret, payload []byte, header string) error {
	if header == "" {
		return ErrNoSignature
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return ErrMalformedSigHead
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return ErrMalformedSigHead
	}
	m := hmac.New(sha256.New, secret)
	m.Write(payload)
	if !hmac.Equal(got, m.Sum(nil)) {
		return ErrBadSignature
	}
	return nil
}
