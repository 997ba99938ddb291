package server

import (
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

// checkSignatureHeader accepts only a well-formed SHA-256 signature. It runs
// before the body is read, so a request that cannot be authenticated costs
// no body read. go-github would also accept sha1= and sha512= values;
// bazinga takes SHA-256 only (GitHub keeps SHA-1 for compatibility alone).
func checkSignatureHeader(header string) error {
	if header == "" {
		return ErrNoSignature
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return ErrMalformedSigHead
	}
	if got, err := hex.DecodeString(hexSig); err != nil || len(got) != sha256.Size {
		return ErrMalformedSigHead
	}
	return nil
}
