package server_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/server"
)

// gate holds the issuer's answers while closed, as a slow or stalled issuer
// does; it counts the requests that reached it.
type gate struct {
	base     http.RoundTripper
	mu       sync.Mutex
	open     chan struct{}
	requests atomic.Int32
}

func newGate(base http.RoundTripper) *gate {
	g := &gate{base: base, open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gate) hold() { g.mu.Lock(); g.open = make(chan struct{}); g.mu.Unlock() }
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	g.requests.Add(1)
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return g.base.RoundTrip(req)
}

// TestJWKSFetchNoClientCanCancelOrBlock is issue 21 item 4: a request that
// hangs up during a key fetch does not cancel it (nor make the next
// exchanges fail), a cached key is served while a fetch is stuck on the
// network, concurrent unknown kids share one fetch, and stale keys are
// served while the refresh runs.
func TestJWKSFetchNoClientCanCancelOrBlock(t *testing.T) {
	f := ghfake.Start(t, ghfake.Options{})
	clk := &clock{t: time.Now().Truncate(time.Second)}
	o := ghfake.StartOIDC(t, f)
	o.SetClock(clk.now)
	g := newGate(http.DefaultTransport)
	v, err := server.NewJobTokenVerifier(server.VerifierOptions{Issuer: o.URL(), Audience: "bazinga",
		Client: &http.Client{Transport: g}, Now: clk.now})
	require.NoError(t, err)
	run := ghfake.Run{ID: 1, Repo: "acme/widgets", Workflow: "bazinga-agent.yml", Ref: "main", Event: "workflow_dispatch", Actor: "bazinga[bot]"}
	mint := func() string { return o.Mint(o.ClaimsFor(run, "bazinga")) }
	verify := func(ctx context.Context, tok string) error { _, err := v.Verify(ctx, tok); return err }

	oldTok := mint()
	require.NoError(t, verify(context.Background(), oldTok))
	require.Equal(t, 1, o.JWKSFetches())

	// GitHub rotates; the issuer stalls.
	clk.add(server.DefaultJWKSMinRefresh)
	_, err = o.RotateKey()
	require.NoError(t, err)
	newTok := mint()
	g.hold()
	before := g.requests.Load()

	// An anonymous client presents the new kid and hangs up.
	ctx, cancel := context.WithCancel(context.Background())
	hungUp := make(chan error, 1)
	go func() { hungUp <- verify(ctx, newTok) }()
	require.Eventually(t, func() bool { return g.requests.Load() > before }, 5*time.Second, time.Millisecond, "a fetch started")
	cancel()
	select {
	case err := <-hungUp:
		var ve *server.VerifyError
		require.ErrorAs(t, err, &ve)
		assert.Equal(t, server.CheckKeys, ve.Check, "the client that left gets its own error")
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled request kept waiting")
	}

	// The fetch is stuck on the network: a cached key is still served at once.
	began := time.Now()
	require.NoError(t, verify(context.Background(), oldTok))
	assert.Less(t, time.Since(began), time.Second, "the key lock is not held across the fetch")

	// Ten genuine clients with the new kid join the fetch in flight.
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = verify(context.Background(), newTok) }()
	}
	time.Sleep(50 * time.Millisecond)
	g.release()
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err, "the hang-up cancelled nothing")
	}
	assert.Equal(t, 2, o.JWKSFetches(), "one fetch for all of them (singleflight)")
	require.NoError(t, verify(context.Background(), newTok), "no failure remembered")

	// Past the TTL with the issuer stalled again: the known key is served
	// at once while a refresh runs behind it.
	clk.add(server.DefaultJWKSTTL + time.Minute)
	g.hold()
	before = g.requests.Load()
	began = time.Now()
	require.NoError(t, verify(context.Background(), mint()))
	assert.Less(t, time.Since(began), time.Second, "a stale key is served while the refresh runs")
	require.Eventually(t, func() bool { return g.requests.Load() > before }, 5*time.Second, time.Millisecond, "a refresh started")
	g.release()
	require.Eventually(t, func() bool { return o.JWKSFetches() == 3 }, 5*time.Second, time.Millisecond)
	time.Sleep(200 * time.Millisecond) // the refresh stores its keys

	// Past the longest staleness, the keys are not served without a fetch.
	o.Close()
	clk.add(server.DefaultJWKSTTL + server.DefaultJWKSMaxStale)
	err = verify(context.Background(), mint())
	var ve *server.VerifyError
	require.True(t, errors.As(err, &ve), "%v", err)
	assert.Equal(t, server.CheckKeys, ve.Check)
}
