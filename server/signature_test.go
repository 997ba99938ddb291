package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// GitHub's published test vector ("Validating webhook deliveries").
const (
	ghVectorSecret  = "It's a Secret to Everybody"
	ghVectorPayload = "Hello, World!"
	ghVectorSig     = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
)

func TestSignGitHubVector(t *testing.T) {
	assert.Equal(t, ghVectorSig, Sign([]byte(ghVectorSecret), []byte(ghVectorPayload)))
}

func TestVerifySignature(t *testing.T) {
	secret, payload := []byte(ghVectorSecret), []byte(ghVectorPayload)
	tests := []struct {
		name   string
		secret string
		body   string
		header string
		want   error
	}{
		{"github vector", ghVectorSecret, ghVectorPayload, ghVectorSig, nil},
		{"missing", ghVectorSecret, ghVectorPayload, "", ErrNoSignature},
		{"sha1 value in sha256 header", ghVectorSecret, ghVectorPayload, "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59", ErrMalformedSigHead},
		{"sha512 value in sha256 header", ghVectorSecret, ghVectorPayload, "sha512=" + strings.Repeat("ab", 64), ErrMalformedSigHead},
		{"sha256 prefix twice", ghVectorSecret, ghVectorPayload, "sha256=" + ghVectorSig, ErrMalformedSigHead},
		{"not hex", ghVectorSecret, ghVectorPayload, "sha256=zz", ErrMalformedSigHead},
		{"short", ghVectorSecret, ghVectorPayload, "sha256=757107ea", ErrMalformedSigHead},
		{"wrong secret", "another secret", ghVectorPayload, ghVectorSig, ErrBadSignature},
		{"tampered body", ghVectorSecret, "Hello, World?", ghVectorSig, ErrBadSignature},
		{"uppercase hex accepted", ghVectorSecret, ghVectorPayload, "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifySignature([]byte(tc.secret), []byte(tc.body), tc.header)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
	require.NoError(t, VerifySignature(secret, payload, Sign(secret, payload)))
}
