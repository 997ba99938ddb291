package ghapi

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGitHubURLs(t *testing.T) {
	tests := []struct{ in, web, api, upload string }{
		{"", "https://github.com", "https://api.github.com/", "https://uploads.github.com/"},
		{"https://github.com", "https://github.com", "https://api.github.com/", "https://uploads.github.com/"},
		{"https://api.github.com/", "https://github.com", "https://api.github.com/", "https://uploads.github.com/"},
		{"https://ghe.example.com", "https://ghe.example.com", "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/uploads/"},
		{"https://ghe.example.com/api/v3/", "https://ghe.example.com", "https://ghe.example.com/api/v3/", "https://ghe.example.com/api/uploads/"},
		{"http://127.0.0.1:8081", "http://127.0.0.1:8081", "http://127.0.0.1:8081/api/v3/", "http://127.0.0.1:8081/api/uploads/"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			web, api, upload, err := GitHubURLs(tc.in)
			require.NoError(t, err)
			assert.Equal(t, []string{tc.web, tc.api, tc.upload}, []string{web, api, upload})
		})
	}
}

func TestValidatePrivateKeyPKCS8(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	assert.NoError(t, ValidatePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
	assert.Error(t, ValidatePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("junk")})))
}
