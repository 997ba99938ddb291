package ghapi

import "time"

// The wire contract of `bazinga serve`'s POST /token, which exchanges a
// GitHub Actions job's OIDC token for an installation token of the App:
// the server writes these and the Action's privileged jobs read them, so
// both sides share one definition.

// ExchangedToken is the answer to an accepted exchange.
type ExchangedToken struct {
	Token       string            `json:"token"`
	ExpiresAt   time.Time         `json:"expires_at"`
	Repository  string            `json:"repository"`
	Permissions map[string]string `json:"permissions"`
	// Login is who the token acts as, e.g. "bazinga[bot]".
	Login string `json:"login,omitempty"`
}

// ExchangeRefusal is the body of a refused exchange: the check that failed
// and a message for people.
type ExchangeRefusal struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}
