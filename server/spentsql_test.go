package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/jobq/jobqtest"
	"github.com/bazinga-bot/bazinga/server"
)

func forEachDB(t *testing.T, f func(t *testing.T, url string)) {
	for _, b := range jobqtest.Backends() {
		t.Run(b.Name, func(t *testing.T) { f(t, b.URL(t)) })
	}
}

// replicaDB opens the queue's database at url as one replica of bazinga serve does: its own handle.
func replicaDB(t *testing.T, url string) *jobq.Store {
	t.Helper()
	st, err := jobq.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

func spentStore(t *testing.T, st *jobq.Store, now func() time.Time) *server.SQLSpentTokens {
	t.Helper()
	s, err := server.NewSQLSpentTokens(context.Background(), st, now)
	require.NoError(t, err)
	return s
}

// post sends a bearer token to h and returns the status and the refusal's error (safe from any goroutine).
func post(h http.Handler, path, tok string) (int, string) {
	req := httptest.NewRequest(http.MethodPost, path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, req)
	var body struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(rr.Body.Bytes(), &body)
	return rr.Code, body.Error
}

// race posts tok to the handlers n times at once, alternating between them, and counts the answers by status.
func race(hs []http.Handler, path, tok string, n int) map[int]int {
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, _ := post(hs[i%len(hs)], path, tok)
			mu.Lock()
			got[code]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return got
}

// Two replicas on one database: a job token exchanged at POST /token of one is refused at the other, and of
// replicas racing with the same token exactly one issues an App token.
func TestTokenExchangeReplayAcrossReplicas(t *testing.T) {
	forEachDB(t, func(t *testing.T, url string) {
		w := newExchangeWorld(t, server.TokenExchangeConfig{Burst: 100})
		replica := func() *server.TokenExchange {
			o := w.opts
			o.Spent = spentStore(t, replicaDB(t, url), w.clk.now)
			x, err := server.NewTokenExchange(w.cfg, o)
			require.NoError(t, err)
			return x
		}
		a, b := replica(), replica()

		tok := w.o.Mint(w.claims())
		code, _ := post(a, server.TokenPath, tok)
		require.Equal(t, http.StatusCreated, code)
		code, why := post(b, server.TokenPath, tok)
		assert.Equal(t, http.StatusUnauthorized, code)
		assert.Equal(t, "replay", why, "spent at the other replica")
		c := replica() // a third replica, started after the spend
		code, why = post(c, server.TokenPath, tok)
		assert.Equal(t, "replay", why, "spent before this replica started: %d", code)
		require.Len(t, w.rec.scoped(), 1)

		fresh := w.o.Mint(w.claims())
		got := race([]http.Handler{a, b, c}, server.TokenPath, fresh, 24)
		assert.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusUnauthorized: 23}, got)
		assert.Len(t, w.rec.scoped(), 2, "one App token per job token, whichever replica answered")
	})
}

// The same for POST /gateway/token: one gateway token per job token across replicas.
func TestGatewayTokenReplayAcrossReplicas(t *testing.T) {
	forEachDB(t, func(t *testing.T, url string) {
		g := newGatewayWorld(t, server.GatewayExchangeConfig{}, nil)
		replica := func() *server.GatewayExchange {
			x, err := server.NewGatewayExchange(server.GatewayExchangeConfig{Issuer: g.o.URL(), Burst: 100},
				server.GatewayExchangeOptions{GitHub: server.FactoryGitHub{F: g.factory}, Signer: g.signer, Login: g.f.BotLogin(),
					Now: g.clk.now, Spent: spentStore(t, replicaDB(t, url), g.clk.now)})
			require.NoError(t, err)
			return x
		}
		a, b := replica(), replica()
		tok := g.o.Mint(g.o.ClaimsFor(g.agent, gateway.Audience))
		code, _ := post(a, server.GatewayTokenPath, tok)
		require.Equal(t, http.StatusCreated, code)
		code, why := post(b, server.GatewayTokenPath, tok)
		assert.Equal(t, http.StatusUnauthorized, code)
		assert.Equal(t, "replay", why)

		fresh := g.o.Mint(g.o.ClaimsFor(g.agent, gateway.Audience))
		got := race([]http.Handler{a, b}, server.GatewayTokenPath, fresh, 16)
		assert.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusUnauthorized: 15}, got)
	})
}

// A database that cannot record the spend refuses the exchange (a spend that is not recorded could be replayed
// at another replica) with 503, and the token is not spent by it.
func TestTokenExchangeSpentStoreDown(t *testing.T) {
	w := newExchangeWorld(t, server.TokenExchangeConfig{})
	st, err := jobq.Open(context.Background(), jobqtest.SQLiteURL(t))
	require.NoError(t, err)
	o := w.opts
	o.Spent = spentStore(t, st, w.clk.now)
	x, err := server.NewTokenExchange(w.cfg, o)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	tok := w.o.Mint(w.claims())
	code, _ := post(x, server.TokenPath, tok)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Empty(t, w.rec.scoped(), "no App token without a recorded spend")
}

// The store: a key is spent once; the record lasts until its expiry, is then taken over, and expired records are
// deleted.
func TestSQLSpentTokens(t *testing.T) {
	forEachDB(t, func(t *testing.T, url string) {
		ctx := context.Background()
		clk := &clock{t: time.Unix(1_800_000_000, 0)}
		st := replicaDB(t, url)
		a, b := spentStore(t, st, clk.now), spentStore(t, replicaDB(t, url), clk.now)
		exp := clk.now().Add(10 * time.Minute)
		spend := func(s *server.SQLSpentTokens, key string, exp time.Time) bool {
			fresh, err := s.Spend(ctx, key, exp)
			require.NoError(t, err)
			return fresh
		}
		assert.True(t, spend(a, "iss\x00jti-1", exp))
		assert.False(t, spend(b, "iss\x00jti-1", exp))
		assert.False(t, spend(a, "iss\x00jti-1", exp.Add(time.Hour)), "a later expiry does not make it fresh")
		assert.True(t, spend(b, "iss\x00jti-2", exp.Add(time.Hour)))

		rows := func() (n int) {
			require.NoError(t, st.DB().QueryRowContext(ctx, `SELECT COUNT(*) FROM bazinga_spent_tokens`).Scan(&n))
			return n
		}
		var hash string
		require.NoError(t, st.DB().QueryRowContext(ctx, `SELECT token_hash FROM bazinga_spent_tokens ORDER BY expires_ms LIMIT 1`).Scan(&hash))
		assert.Len(t, hash, 64, "a SHA-256, not the jti")
		assert.NotContains(t, hash, "jti-1")

		clk.add(11 * time.Minute)
		assert.True(t, spend(a, "iss\x00jti-1", clk.now().Add(10*time.Minute)), "its record expired: taken over")
		assert.False(t, spend(b, "iss\x00jti-1", clk.now().Add(10*time.Minute)))
		assert.False(t, spend(a, "iss\x00jti-2", exp.Add(time.Hour)))
		require.Equal(t, 2, rows())

		// Past both expiries and a purge interval: the next spend deletes what expired.
		clk.add(2 * time.Hour)
		assert.True(t, spend(a, "iss\x00jti-3", clk.now().Add(10*time.Minute)))
		assert.Equal(t, 1, rows(), "expired records are purged")
	})
}
