package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/server"
)

// BenchmarkVerifyJobToken is the verification of a job's OIDC token with
// the issuer's keys cached: what every exchange costs before GitHub is
// asked anything (RS256 signature and claims).
func BenchmarkVerifyJobToken(b *testing.B) {
	o, err := ghfake.NewOIDCIssuer(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	v, err := server.NewJobTokenVerifier(server.VerifierOptions{Issuer: o.URL(), Audience: "bazinga"})
	if err != nil {
		b.Fatal(err)
	}
	tok := o.Mint(ghfake.JobClaims{Audience: "bazinga", Repository: "acme/widgets", RepositoryOwner: "acme",
		RepositoryID: "1", WorkflowRef: "acme/widgets/.github/workflows/bazinga-agent.yml@refs/heads/main",
		JobWorkflowRef: "acme/widgets/.github/workflows/bazinga-agent.yml@refs/heads/main"})
	ctx := context.Background()
	if _, err := v.Verify(ctx, tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := v.Verify(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTokenExchange is a whole exchange against the fake GitHub: verify,
// find the installation, read the repository, mint the token.
func BenchmarkTokenExchange(b *testing.B) {
	w := newExchangeWorld(b, server.TokenExchangeConfig{Rate: time.Nanosecond, Burst: 1 << 30})
	// A job token is good for one exchange: one each, minted beforehand.
	toks := make([]string, b.N)
	for i := range toks {
		toks[i] = w.o.Mint(w.claims())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		rr := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, server.TokenPath, nil)
		req.Header.Set("Authorization", "Bearer "+toks[i])
		w.x.ServeHTTP(rr, req)
		if rr.Code != http.StatusCreated {
			b.Fatalf("%d %s", rr.Code, rr.Body)
		}
	}
}
