package ghapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runningClock is a fake clock that starts at from and runs with real
// time, so the transport's real waits move it.
func runningClock(from time.Time) func() time.Time {
	start := time.Now()
	return func() time.Time { return from.Add(time.Since(start)) }
}

// manualClock is a fake clock that moves only when told.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// limitServer answers 403 primary-limit refusals (reset at reset) while
// exhausted is set, else 200 with remaining as X-RateLimit-Remaining.
type limitServer struct {
	*httptest.Server
	n         atomic.Int32
	exhausted atomic.Bool
	remaining atomic.Int32
	reset     time.Time
}

func newLimitServer(t *testing.T, reset time.Time) *limitServer {
	s := &limitServer{reset: reset}
	s.remaining.Store(100)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.n.Add(1)
		w.Header().Set("X-RateLimit-Limit", "1000")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(s.reset.Unix(), 10))
		w.Header().Set("X-RateLimit-Resource", "core")
		if s.exhausted.Load() {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"message":"API rate limit exceeded for installation ID 7."}`)
			return
		}
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(int(s.remaining.Load())))
		fmt.Fprint(w, `{"number":3}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestTransportFarPrimaryLimitIsTypedError(t *testing.T) {
	reset := time.Date(2026, 3, 2, 15, 42, 0, 0, time.UTC)
	clock := &manualClock{t: reset.Add(-20 * time.Minute)}
	srv := newLimitServer(t, reset)
	srv.exhausted.Store(true)
	o := fastOpts()
	o.Now, o.Identity, o.MaxRateLimitWait = clock.Now, "installation/7", 90*time.Second
	tr := NewTransport(nil, o)
	c := New(tokenClient(t, srv.URL, tr))
	ctx := context.Background()
	repo := RepoRef{Owner: "acme", Name: "app"}

	start := time.Now()
	_, err := c.GetIssue(ctx, repo, 3)
	require.Error(t, err)
	assert.Less(t, time.Since(start), time.Second, "no wait for a far reset")
	rl, ok := AsRateLimited(err)
	require.True(t, ok, "a *RateLimitedError through go-github and the client: %v", err)
	assert.True(t, errors.Is(err, ErrRateLimited))
	assert.Equal(t, RateLimitedError{Identity: "installation/7", Resource: "core", Limit: 1000, Reset: reset}, *rl)
	assert.Contains(t, err.Error(), "GitHub rate limit for installation 7 (core) exhausted until 15:42:00 UTC")
	assert.Equal(t, int32(1), srv.n.Load(), "refused once, not retried")

	// Known exhausted: the next call spends no request.
	_, err = c.GetIssue(ctx, repo, 3)
	require.ErrorIs(t, err, ErrRateLimited)
	assert.Equal(t, int32(1), srv.n.Load(), "no request while the limit is known exhausted")

	// After the reset the transport asks again.
	srv.exhausted.Store(false)
	clock.Set(reset.Add(time.Second))
	_, err = c.GetIssue(ctx, repo, 3)
	require.NoError(t, err)
	assert.Equal(t, int32(2), srv.n.Load())
}

func TestTransportNearPrimaryLimitWaitsOnceThenGivesUp(t *testing.T) {
	reset := time.Date(2026, 3, 2, 15, 42, 0, 0, time.UTC)
	srv := newLimitServer(t, reset)
	srv.exhausted.Store(true) // still exhausted after the reset: a clock skew
	o := fastOpts()
	o.Now = runningClock(reset.Add(-30 * time.Millisecond))
	o.MaxRateLimitWait = time.Second
	tr := NewTransport(nil, o)
	tr.resetSlack = 0
	start := time.Now()
	resp, err := tr.RoundTrip(mustReq(t, http.MethodGet, srv.URL+"/repos/acme/app/issues/3"))
	if resp != nil {
		resp.Body.Close()
	}
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "waited for the reset")
	require.ErrorIs(t, err, ErrRateLimited)
	assert.Equal(t, int32(2), srv.n.Load(), "sent once more after the reset, then given up")
	assert.Equal(t, 1, tr.CallStats().RateLimitRetries)
}

func TestTransportReserve(t *testing.T) {
	reset := time.Date(2026, 3, 2, 15, 42, 0, 0, time.UTC)
	clock := &manualClock{t: reset.Add(-30 * time.Minute)}
	srv := newLimitServer(t, reset)
	srv.remaining.Store(5)
	o := fastOpts()
	o.Now, o.Reserve, o.Identity = clock.Now, 5, "installation/7"
	tr := NewTransport(nil, o)
	get := func(ctx context.Context) error {
		req := mustReq(t, http.MethodGet, srv.URL+"/repos/acme/app/issues/3").WithContext(ctx)
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	require.NoError(t, get(context.Background()), "GitHub has not said yet")
	err := get(context.Background())
	rl, ok := AsRateLimited(err)
	require.True(t, ok, "%v", err)
	assert.True(t, rl.Reserve)
	assert.Equal(t, reset, rl.Reset)
	assert.Equal(t, int32(1), srv.n.Load(), "refused without a request")
	require.NoError(t, get(WithReserve(context.Background())), "the reserve is for WithReserve calls")
	assert.Equal(t, int32(2), srv.n.Load())

	srv.remaining.Store(0)
	require.NoError(t, get(WithReserve(context.Background())))
	require.ErrorIs(t, get(WithReserve(context.Background())), ErrRateLimited, "an empty reserve refuses everyone")
	assert.Equal(t, int32(3), srv.n.Load())
}

func TestTransportSecondaryLimits(t *testing.T) {
	now := time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		retry     string // Retry-After, "" for none
		maxWait   time.Duration
		wantCalls int32
		// minGaps are the least gaps between the requests.
		minGaps   []time.Duration
		wantReset time.Time
	}{
		// Without Retry-After: SecondaryWait (10ms), then twice, four
		// times as long, never less; after MaxRateLimitRetries waits a
		// typed error.
		{"no retry-after, backoff", "", time.Second, 4, []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}, time.Time{}},
		// The second wait (20–30ms) exceeds MaxRateLimitWait: give up.
		{"no retry-after, beyond the longest wait", "", 16 * time.Millisecond, 2, []time.Duration{10 * time.Millisecond}, time.Time{}},
		{"retry-after far", "120", time.Second, 1, nil, now.Add(120 * time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var at []time.Time
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				at = append(at, time.Now())
				mu.Unlock()
				if tc.retry != "" {
					w.Header().Set("Retry-After", tc.retry)
				}
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprint(w, `{"message":"You have exceeded a secondary rate limit and have been temporarily blocked from content creation."}`)
			}))
			defer srv.Close()
			o := fastOpts()
			o.SecondaryWait, o.MaxRateLimitWait, o.MaxRateLimitRetries = 10*time.Millisecond, tc.maxWait, 3
			o.Now, o.Identity = func() time.Time { return now }, "installation/7"
			tr := NewTransport(nil, o)
			_, err := tr.RoundTrip(mustReq(t, http.MethodPost, srv.URL+"/repos/acme/app/issues/3/comments"))
			rl, ok := AsRateLimited(err)
			require.True(t, ok, "%v", err)
			assert.True(t, rl.Secondary)
			assert.Equal(t, "content creation", rl.Resource)
			if !tc.wantReset.IsZero() {
				assert.Equal(t, tc.wantReset, rl.Reset)
			} else {
				assert.True(t, rl.Reset.After(now), "the reset is the wait GitHub was not given")
			}
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, at, int(tc.wantCalls))
			for i, min := range tc.minGaps {
				assert.GreaterOrEqual(t, at[i+1].Sub(at[i]), min, "gap %d", i+1)
			}
		})
	}
}

// TestSecondaryBackoffBounds: the n-th wait without Retry-After lies in
// [SecondaryWait·2ⁿ⁻¹, 1.5·SecondaryWait·2ⁿ⁻¹]: never below GitHub's minute,
// jittered so that many clients do not retry together.
func TestSecondaryBackoffBounds(t *testing.T) {
	tr := NewTransport(nil, TransportOptions{})
	distinct := map[time.Duration]bool{}
	for range 200 {
		b := tr.secondaryBackoff()
		for n := 0; n < 4; n++ {
			d := b.NextBackOff()
			lo := time.Minute << n
			assert.GreaterOrEqual(t, d, lo, "wait %d", n+1)
			assert.LessOrEqual(t, d, lo*3/2, "wait %d", n+1)
			if n == 0 {
				distinct[d] = true
			}
		}
	}
	assert.Greater(t, len(distinct), 50, "jittered")
}

func TestTransportRateLimitWaitCancelled(t *testing.T) {
	reset := time.Date(2026, 3, 2, 15, 42, 0, 0, time.UTC)
	srv := newLimitServer(t, reset)
	srv.exhausted.Store(true)
	o := fastOpts()
	o.Now, o.MaxRateLimitWait = runningClock(reset.Add(-80*time.Second)), 90*time.Second
	tr := NewTransport(nil, o)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	start := time.Now()
	_, err := tr.RoundTrip(mustReq(t, http.MethodGet, srv.URL+"/repos/acme/app/issues/3").WithContext(ctx))
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 5*time.Second, "the 80s wait ends with the context")
	assert.Equal(t, int32(1), srv.n.Load())
}

func TestTransportNoRateLimitWaits(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	o := fastOpts()
	o.MaxRateLimitRetries = -1
	tr := NewTransport(nil, o)
	_, err := tr.RoundTrip(mustReq(t, http.MethodGet, srv.URL+"/x"))
	require.ErrorIs(t, err, ErrRateLimited, "MaxRateLimitRetries < 0: no waits at all")
}

// TestAPIErrMapsGoGithubRateLimits: go-github refuses calls itself once a
// response said the limit is spent; the client reports those as
// *RateLimitedError too.
func TestAPIErrMapsGoGithubRateLimits(t *testing.T) {
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	resp := &http.Response{StatusCode: http.StatusForbidden, Request: &http.Request{Method: http.MethodGet}}
	err := apiErr("get issue", nil, &github.RateLimitError{Rate: github.Rate{Limit: 5000, Remaining: 0,
		Reset: github.Timestamp{Time: reset}}, Response: resp, Message: "API rate limit exceeded"})
	rl, ok := AsRateLimited(err)
	require.True(t, ok)
	assert.Equal(t, reset, rl.Reset)
	assert.False(t, rl.Secondary)
	assert.Equal(t, 5000, rl.Limit)

	ra := 90 * time.Second
	err = apiErr("comment", nil, &github.AbuseRateLimitError{Response: resp, RetryAfter: &ra})
	rl, ok = AsRateLimited(err)
	require.True(t, ok)
	assert.True(t, rl.Secondary)
	assert.WithinDuration(t, time.Now().Add(ra), rl.Reset, 5*time.Second)
}

func mustReq(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	return req
}

// TestTransportNearResetOnFakeClock: with a fake clock (Now and Sleep) the
// wait for a near reset takes no time: the transport sleeps until a second
// past the reset and sends the request again, which GitHub then answers.
func TestTransportNearResetOnFakeClock(t *testing.T) {
	reset := time.Date(2026, 3, 2, 15, 42, 0, 0, time.UTC)
	clock := &manualClock{t: reset.Add(-60 * time.Second)}
	var slept []time.Duration
	srv := newLimitServer(t, reset)
	srv.exhausted.Store(true)
	o := fastOpts()
	o.Now = clock.Now
	o.Sleep = func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		clock.Set(clock.Now().Add(d))
		srv.exhausted.Store(clock.Now().Before(reset))
		return ctx.Err()
	}
	o.MaxRateLimitWait = 90 * time.Second
	tr := NewTransport(nil, o)
	start := time.Now()
	resp, err := tr.RoundTrip(mustReq(t, http.MethodGet, srv.URL+"/repos/acme/app/issues/3"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []time.Duration{61 * time.Second}, slept, "until a second past the reset")
	assert.Equal(t, int32(2), srv.n.Load())
	assert.Less(t, time.Since(start), 5*time.Second)

	// Cancelling the context during the wait ends it with its error.
	srv2 := newLimitServer(t, clock.Now().Add(30*time.Second).Truncate(time.Second))
	srv2.exhausted.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	o.Sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}
	tr = NewTransport(nil, o)
	_, err = tr.RoundTrip(mustReq(t, http.MethodGet, srv2.URL+"/repos/acme/app/issues/3").WithContext(ctx))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int32(1), srv2.n.Load())
}

// TestTransportReserveNearResetWaits: down to the reserve with the reset
// near, an ordinary call waits for the reset rather than failing.
func TestTransportReserveNearResetWaits(t *testing.T) {
	reset := time.Date(2026, 3, 2, 15, 42, 0, 0, time.UTC)
	clock := &manualClock{t: reset.Add(-40 * time.Second)}
	srv := newLimitServer(t, reset)
	srv.remaining.Store(3)
	o := fastOpts()
	o.Now, o.Reserve, o.MaxRateLimitWait = clock.Now, 5, 90*time.Second
	var slept time.Duration
	o.Sleep = func(ctx context.Context, d time.Duration) error {
		slept += d
		clock.Set(clock.Now().Add(d))
		return nil
	}
	tr := NewTransport(nil, o)
	for i := 0; i < 2; i++ {
		resp, err := tr.RoundTrip(mustReq(t, http.MethodGet, srv.URL+"/repos/acme/app/issues/3"))
		require.NoError(t, err)
		resp.Body.Close()
	}
	assert.Equal(t, 41*time.Second, slept, "the second call waited for the reset")
	assert.Equal(t, int32(2), srv.n.Load())
}
