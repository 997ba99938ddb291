package gateway_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/internal/modelfake"
	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/jobq/jobqtest"
)

// openDB opens the queue's database at url, as a replica of bazinga serve does.
func openDB(t *testing.T, url string) *jobq.Store {
	t.Helper()
	st, err := jobq.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

func sqlLedger(t *testing.T, st *jobq.Store) *gateway.SQLLedger {
	t.Helper()
	l, err := gateway.NewSQLLedger(context.Background(), st)
	require.NoError(t, err)
	return l
}

func forEachBackend(t *testing.T, f func(t *testing.T, url string)) {
	for _, b := range jobqtest.Backends() {
		t.Run(b.Name, func(t *testing.T) { f(t, b.URL(t)) })
	}
}

// The SQL ledger sums exactly what the in-memory one does, entry for entry: priced, unpriced (named, at the
// ceiling), estimated, refused; per step and per session.
func TestSQLLedgerSumsAsMemLedger(t *testing.T) {
	forEachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		sqlL, mem := sqlLedger(t, openDB(t, url)), gateway.NewMemLedger()
		r := rand.New(rand.NewPCG(1, 2))
		steps := []gateway.Scope{scope, {Installation: 7, Repository: "octo/repo", Session: "s1", Step: "qa-2"},
			{Installation: 7, Repository: "octo/repo", Session: "s2", Step: "dev-1"}, {Repository: "octo/other", Session: "s1", Step: "dev-1"}}
		models := []string{"claude-sonnet-4-5", "gpt-5", "mystery-model", "other-mystery"}
		for i := range 60 {
			e := gateway.Entry{Scope: steps[r.IntN(len(steps))], Time: time.Unix(1700000000+int64(i), 0), Provider: gateway.Anthropic,
				Model: models[r.IntN(len(models))], Outcome: gateway.Outcome(r.IntN(3)), Estimated: r.IntN(5) == 0,
				Tokens: gateway.Tokens{Input: r.Int64N(5000), Output: r.Int64N(900), CacheRead: r.Int64N(20000), CacheWrite: r.Int64N(300)}}
			if p, ok := gateway.DefaultPrices().Lookup(e.Model); ok {
				e.Priced, e.CostPicos, e.ChargedPicos = true, p.Cost(e.Tokens), p.Cost(e.Tokens)
			} else {
				e.ChargedPicos = gateway.DefaultPrices().Ceiling().Cost(e.Tokens)
			}
			require.NoError(t, sqlL.Record(ctx, e))
			require.NoError(t, mem.Record(ctx, e))
		}
		for _, s := range steps {
			want, err := mem.StepSpend(ctx, s)
			require.NoError(t, err)
			got, err := sqlL.StepSpend(ctx, s)
			require.NoError(t, err)
			assert.Equal(t, want, got, "step %v", s)
			wantS, err := mem.SessionSpend(ctx, s.SessionKey())
			require.NoError(t, err)
			gotS, err := sqlL.SessionSpend(ctx, s.SessionKey())
			require.NoError(t, err)
			assert.Equal(t, wantS, gotS, "session %v", s.SessionKey())
		}
		none, err := sqlL.SessionSpend(ctx, gateway.SessionKey{Repository: "octo/repo", Session: "nope"})
		require.NoError(t, err)
		assert.False(t, none.Metered())
	})
}

// Two replicas (two ledgers on one database) metering one session concurrently: each sees the sum of both, no
// increment is lost, and a restart (a new ledger on the same database) forgets nothing.
func TestSQLLedgerSharedByReplicas(t *testing.T) {
	forEachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		a, b := sqlLedger(t, openDB(t, url)), sqlLedger(t, openDB(t, url))
		const per = 25
		one := gateway.Entry{Scope: scope, Model: "claude-sonnet-4-5", Priced: true, Tokens: gateway.Tokens{Input: 10, Output: 1},
			CostPicos: 3_000_000, ChargedPicos: 3_000_000}
		var wg sync.WaitGroup
		for _, l := range []*gateway.SQLLedger{a, b} {
			for range 2 {
				wg.Go(func() {
					for range per {
						assert.NoError(t, l.Record(ctx, one))
					}
				})
			}
		}
		wg.Wait()
		for _, l := range []*gateway.SQLLedger{a, b, sqlLedger(t, openDB(t, url))} {
			sp, err := l.SessionSpend(ctx, scope.SessionKey())
			require.NoError(t, err)
			assert.Equal(t, 4*per, sp.Requests)
			assert.Equal(t, int64(4*per*3_000_000), sp.ChargedPicos)
			assert.Equal(t, gateway.Tokens{Input: 4 * per * 10, Output: 4 * per}, sp.Tokens)
		}
	})
}

// Sums saturate instead of overflowing, and negative counts lower nothing.
func TestSQLLedgerSaturates(t *testing.T) {
	forEachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		l := sqlLedger(t, openDB(t, url))
		big := gateway.Entry{Scope: scope, Model: "claude-sonnet-4-5", Priced: true, CostPicos: 1 << 62, ChargedPicos: 1 << 62}
		require.NoError(t, l.Record(ctx, big))
		require.NoError(t, l.Record(ctx, big))
		require.NoError(t, l.Record(ctx, gateway.Entry{Scope: scope, Model: "x", Priced: true, CostPicos: -5, ChargedPicos: -5,
			Tokens: gateway.Tokens{Input: -100}}))
		sp, err := l.StepSpend(ctx, scope)
		require.NoError(t, err)
		assert.Equal(t, int64(1<<62), sp.ChargedPicos)
		assert.Equal(t, int64(0), sp.Tokens.Input)
		assert.Equal(t, 3, sp.Requests)
	})
}

// Two gateways (two replicas of bazinga serve) on one database, each with its own signer from the same secret:
// a session's spend is counted once whichever replica forwarded the request, and its limit refuses on either.
func TestGatewaysShareSessionLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, url string) {
		fake := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "ok", Usage: modelfake.Usage{InputTokens: 1000, OutputTokens: 100}}))
		secret := []byte("a replica secret of thirty-two bytes or more")
		var srvs []*httptest.Server
		var ledgers []*gateway.SQLLedger
		for range 2 {
			signer, err := gateway.NewSignerFromSecret(secret, nil)
			require.NoError(t, err)
			led := sqlLedger(t, openDB(t, url))
			up := gateway.UpstreamConfig{BaseURL: fake.URL, Key: realKey}
			gw, err := gateway.New(gateway.Config{Anthropic: up, Signer: signer, Ledger: led})
			require.NoError(t, err)
			srv := httptest.NewServer(gw)
			t.Cleanup(srv.Close)
			srvs, ledgers = append(srvs, srv), append(ledgers, led)
		}
		// 1000 in × $3/M + 100 out × $15/M = $0.0045 a request; the session may spend $0.008: two requests.
		signer, err := gateway.NewSignerFromSecret(secret, nil)
		require.NoError(t, err)
		tok, _, err := signer.Mint(scope, gateway.Limits{SessionMicros: 8000}, 0)
		require.NoError(t, err)
		post := func(srv *httptest.Server) (int, string) {
			e := &env{t: t, srv: srv}
			resp, body := e.post("/anthropic/v1/messages", map[string]string{"x-api-key": tok, "anthropic-version": "2023-06-01"},
				anthropicBody("claude-sonnet-4-5", false))
			return resp.StatusCode, body
		}
		code, body := post(srvs[0])
		require.Equal(t, http.StatusOK, code, body)
		code, body = post(srvs[1])
		require.Equal(t, http.StatusOK, code, body, "a token minted with the shared secret is good at the other replica")
		for i, l := range ledgers {
			sp, err := l.SessionSpend(context.Background(), scope.SessionKey())
			require.NoError(t, err)
			assert.Equal(t, 2, sp.Requests, "replica %d sees both requests", i)
			assert.Equal(t, int64(9000), sp.ChargedMicros())
		}
		for i, srv := range srvs {
			code, body := post(srv)
			assert.Equal(t, http.StatusPaymentRequired, code, "replica %d", i)
			assert.Contains(t, body, "session s1 has spent $0.009")
			assert.Contains(t, body, "limits.session_cost_usd")
		}
		assert.Len(t, fake.Requests(), 2, "nothing over the limit went upstream")
	})
}

// A step's end, recorded on one replica, refuses its tokens there at once and on the others once their cached
// answer is older than the cache; it is never forgotten while a token of the step could live.
func TestSQLRevocations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		now := time.Unix(1700000000, 0)
		clock := func() time.Time { return now }
		a, err := gateway.NewSQLRevocations(ctx, openDB(t, url), clock)
		require.NoError(t, err)
		b, err := gateway.NewSQLRevocations(ctx, openDB(t, url), clock)
		require.NoError(t, err)
		other := scope
		other.Step = "qa-2"
		for _, r := range []*gateway.SQLRevocations{a, b} {
			ended, err := r.Revoked(ctx, scope)
			require.NoError(t, err)
			require.False(t, ended)
		}
		require.NoError(t, a.Revoke(ctx, scope.Repository, scope.Session, scope.Step))
		require.NoError(t, a.Revoke(ctx, scope.Repository, scope.Session, scope.Step), "idempotent")
		ended, err := a.Revoked(ctx, scope)
		require.NoError(t, err)
		assert.True(t, ended, "the replica that revoked knows at once")
		ended, err = b.Revoked(ctx, scope)
		require.NoError(t, err)
		assert.False(t, ended, "the other replica's cached answer is still fresh")
		now = now.Add(gateway.DefaultRevocationCache)
		ended, err = b.Revoked(ctx, scope)
		require.NoError(t, err)
		assert.True(t, ended, "and then it asks the database")
		ended, err = b.Revoked(ctx, other)
		require.NoError(t, err)
		assert.False(t, ended, "another step of the session is not touched")
		upper := scope
		upper.Repository = "Octo/Repo"
		ended, err = b.Revoked(ctx, upper)
		require.NoError(t, err)
		assert.True(t, ended, "GitHub's names are case-insensitive")

		// A later revocation prunes rows older than any token (the step's own stays while tokens could live).
		fresh, err := gateway.NewSQLRevocations(ctx, openDB(t, url), clock)
		require.NoError(t, err)
		now = now.Add(gateway.MaxTokenTTL)
		ended, err = fresh.Revoked(ctx, scope)
		require.NoError(t, err)
		assert.True(t, ended, "kept for the tokens' lifetime")
		now = now.Add(2 * time.Hour)
		require.NoError(t, fresh.Revoke(ctx, "octo/repo", "s9", "dev-1"))
		again, err := gateway.NewSQLRevocations(ctx, openDB(t, url), clock)
		require.NoError(t, err)
		ended, err = again.Revoked(ctx, scope)
		require.NoError(t, err)
		assert.False(t, ended, "pruned after every token of the step expired")
	})
}

// The gateway refuses a revoked step's token with an error naming the step.
func TestGatewayRefusesRevokedStep(t *testing.T) {
	fake := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "ok", Usage: modelfake.Usage{InputTokens: 10, OutputTokens: 1}}))
	st := openDB(t, jobqtest.SQLiteURL(t))
	rev, err := gateway.NewSQLRevocations(context.Background(), st, nil)
	require.NoError(t, err)
	signer, err := gateway.NewSigner(nil)
	require.NoError(t, err)
	gw, err := gateway.New(gateway.Config{Anthropic: gateway.UpstreamConfig{BaseURL: fake.URL, Key: realKey}, Signer: signer, Revocations: rev})
	require.NoError(t, err)
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	tok, _, err := signer.Mint(scope, gateway.Limits{}, 0)
	require.NoError(t, err)
	e := &env{t: t, srv: srv}
	hdr := map[string]string{"x-api-key": tok, "anthropic-version": "2023-06-01"}
	resp, body := e.post("/anthropic/v1/messages", hdr, anthropicBody("claude-sonnet-4-5", false))
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.NoError(t, rev.Revoke(context.Background(), scope.Repository, scope.Session, scope.Step))
	resp, body = e.post("/anthropic/v1/messages", hdr, anthropicBody("claude-sonnet-4-5", false))
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, body, fmt.Sprintf("step %s has ended", scope.Step))
	assert.Len(t, fake.Requests(), 1)
}

// What the ledger costs a metered request: the spend check before it is forwarded (the step's and the session's
// spend) and the record after, plus the revocation check (cached). The session has 20 earlier steps.
func BenchmarkLedgerRequest(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, l gateway.Ledger, rev gateway.Revocations) {
		e := gateway.Entry{Scope: scope, Model: "claude-sonnet-4-5", Priced: true, Tokens: gateway.Tokens{Input: 1000, Output: 100},
			CostPicos: 4_500_000_000, ChargedPicos: 4_500_000_000, Time: time.Now()}
		for i := range 20 {
			prev := e
			prev.Scope.Step = fmt.Sprintf("earlier-%d", i)
			require.NoError(b, l.Record(ctx, prev))
		}
		check := func() {
			if rev != nil {
				if _, err := rev.Revoked(ctx, scope); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := l.StepSpend(ctx, scope); err != nil {
				b.Fatal(err)
			}
			if _, err := l.SessionSpend(ctx, scope.SessionKey()); err != nil {
				b.Fatal(err)
			}
		}
		record := func() {
			if err := l.Record(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("check", func(b *testing.B) {
			for b.Loop() {
				check()
			}
		})
		b.Run("record", func(b *testing.B) {
			for b.Loop() {
				record()
			}
		})
		b.Run("request", func(b *testing.B) {
			for b.Loop() {
				check()
				record()
			}
		})
	}
	b.Run("mem", func(b *testing.B) { run(b, gateway.NewMemLedger(), nil) })
	for _, be := range jobqtest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			st, err := jobq.Open(ctx, be.URL(b))
			require.NoError(b, err)
			defer st.Close()
			l, err := gateway.NewSQLLedger(ctx, st)
			require.NoError(b, err)
			rev, err := gateway.NewSQLRevocations(ctx, st, nil)
			require.NoError(b, err)
			run(b, l, rev)
		})
	}
}
