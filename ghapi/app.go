package ghapi

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// The public GitHub's addresses.
const (
	DefaultGitHubURL = "https://github.com"
	DefaultAPIURL    = "https://api.github.com/"
	DefaultUploadURL = "https://uploads.github.com/"
)

// App is a GitHub App's identity and where its API is.
type App struct {
	ID int64
	// PrivateKey is the App's PEM-encoded RSA key.
	PrivateKey []byte
	// APIURL and UploadURL are the REST bases (default the public GitHub's).
	APIURL    string
	UploadURL string
}

// GitHubURLs derives the web, REST API and upload bases from a GitHub URL:
// "" or github.com → the public API; a GitHub Enterprise Server host
// (https://ghe.example.com) → https://ghe.example.com/api/v3/ and
// /api/uploads/. A URL that already ends in /api/v3 is taken as the API base.
func GitHubURLs(raw string) (web, api, upload string, err error) {
	if raw == "" {
		return DefaultGitHubURL, DefaultAPIURL, DefaultUploadURL, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", "", fmt.Errorf("not a URL: %w", err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", "", "", fmt.Errorf("must be an http(s) URL with a host, got %q", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", "", "", fmt.Errorf("must not carry credentials, a query or a fragment")
	}
	host := strings.ToLower(u.Host)
	if host == "github.com" || host == "www.github.com" || host == "api.github.com" {
		return DefaultGitHubURL, DefaultAPIURL, DefaultUploadURL, nil
	}
	path := strings.TrimRight(u.Path, "/")
	path = strings.TrimSuffix(path, "/api/v3")
	base := u.Scheme + "://" + u.Host + path
	return base, base + "/api/v3/", base + "/api/uploads/", nil
}

// ValidatePrivateKey checks that b is a PEM-encoded RSA private key (PKCS#1
// as GitHub issues it, or PKCS#8), so a bad key fails at start-up rather
// than at the first token exchange.
func ValidatePrivateKey(b []byte) error {
	block, _ := pem.Decode(b)
	if block == nil {
		return errors.New("not PEM: expected -----BEGIN RSA PRIVATE KEY-----")
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return fmt.Errorf("PEM block %q is not an RSA private key: %w", block.Type, err)
	}
	if _, ok := k.(*rsa.PrivateKey); !ok {
		return fmt.Errorf("PEM block %q is a %T, GitHub Apps use RSA keys", block.Type, k)
	}
	return nil
}
