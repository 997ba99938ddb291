package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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

// TestVerifySignature checks X-Hub-Signature-256 values at the webhook:
// a signature that verifies gets past the check (the body, not JSON here,
// is then a 400), one that does not is a 401 naming the reason.
func TestVerifySignature(t *testing.T) {
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
			s := newTestServer(t, Config{WebhookSecret: []byte(tc.secret)}, &fakeProcessor{})
			r := webhookRequest("ping", "d", []byte(tc.body))
			r.Header.Set("X-Hub-Signature-256", tc.header)
			w := serve(s, r)
			if tc.want == nil {
				assert.Equal(t, http.StatusBadRequest, w.Code, "verified, then refused as not JSON: %s", w.Body.String())
				assert.Contains(t, w.Body.String(), "malformed JSON payload")
				return
			}
			assert.Equal(t, http.StatusUnauthorized, w.Code)
			assert.Contains(t, w.Body.String(), tc.want.Error())
		})
	}
	// Sign and the check agree.
	s := newTestServer(t, Config{WebhookSecret: []byte(ghVectorSecret)}, &fakeProcessor{})
	r := webhookRequest("ping", "d", []byte("{}"))
	r.Header.Set("X-Hub-Signature-256", Sign([]byte(ghVectorSecret), []byte("{}")))
	assert.Equal(t, http.StatusAccepted, serve(s, r).Code)
}
