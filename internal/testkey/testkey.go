// Package testkey gives tests a GitHub App private key: an RSA key in PEM
// (PKCS#1, as GitHub issues them), generated once per test binary.
package testkey

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"sync"
	"testing"
)

var (
	once   sync.Once
	pemKey []byte
)

// PEM returns the key.
func PEM(t testing.TB) []byte {
	t.Helper()
	once.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		pemKey = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	})
	return pemKey
}
