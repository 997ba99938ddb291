package secretstrength

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name, secret, why string
	}{
		{"issue 21's webhook secret", "development", "too short"},
		{"issue 21's state key", "hunter2", "too short"},
		{"a word padded to length", "development-development-2024!!!!", "common words"},
		{"passwords with case and digits", "Password123Password123Password123", "common words"},
		{"the tests' kind of secret", "e2e-action-only-state-secret-value", "common words"},
		{"repetition", "abababababababababababababababab", "neighbouring"},
		{"one character", "                                        x", "too short"},
		{"an alphabet run", "abcdefghijklmnopqrstuvwxyz0123456789", "neighbouring"},
		{"a small alphabet", "1001010010100101001110101010010101001010", ""},
		{"a keyboard walk, repeated", "qazwsxedcrfvqazwsxedcrfvqazwsxedcrfv", "repetitive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.secret)
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), tc.why)
				assert.NotContains(t, err.Error(), tc.secret, "a refusal never quotes the secret")
			}
		})
	}
}

func TestCheckAcceptsRandomSecrets(t *testing.T) {
	for i := 0; i < 200; i++ {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		assert.NoError(t, Check(hex.EncodeToString(b)), "openssl rand -hex 32")
		assert.NoError(t, Check(base64.StdEncoding.EncodeToString(b)), "openssl rand -base64 32")
		assert.NoError(t, Check(hex.EncodeToString(b[:20])), "GitHub's manifest-generated webhook secret: 40 hex characters")
		assert.NoError(t, Check(hex.EncodeToString(b[:16])), "16 random bytes in hex: 128 bits")
	}
}
