package ghapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fastOpts makes waits take milliseconds.
func fastOpts() TransportOptions {
	return TransportOptions{
		BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
		MaxRateLimitWait: 20 * time.Millisecond, SecondaryWait: 5 * time.Millisecond,
	}
}

// tokenClient is a go-github client over the chain with a static token, as
// the core's tests use it against the fake GitHub.
func tokenClient(t *testing.T, srvURL string, tr *Transport) *github.Client {
	t.Helper()
	c := github.NewClient(&http.Client{Transport: tr}).WithAuthToken("ghs_test")
	u, err := c.BaseURL.Parse(srvURL + "/")
	require.NoError(t, err)
	c.BaseURL = u
	return c
}

func TestTransportETag(t *testing.T) {
	var hits, notModified atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(5000-int(hits.Load())))
		if r.Header.Get("If-None-Match") == `"v1"` {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"number":12,"title":"Add CSV export"}`)
	}))
	defer srv.Close()
	tr := NewTransport(nil, fastOpts())
	c := tokenClient(t, srv.URL, tr)
	for i := 0; i < 3; i++ {
		is, resp, err := c.Issues.Get(context.Background(), "acme", "app", 12)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "Add CSV export", is.GetTitle())
	}
	assert.Equal(t, int32(3), hits.Load())
	assert.Equal(t, int32(2), notModified.Load())
	st := tr.CallStats()
	assert.Equal(t, 3, st.Total)
	assert.Equal(t, 2, st.NotModified)
	assert.Equal(t, 0, st.ContentCreating)
	assert.Equal(t, 4997, st.RateLimitRemaining)
	assert.Equal(t, map[string]int{"GET /repos/{owner}/{repo}/issues/{number}": 3}, st.ByKind)

	// Another identity never gets this identity's cached body.
	other := NewTransport(nil, TransportOptions{Cache: tr.o.Cache, Identity: "installation/2"})
	c2 := tokenClient(t, srv.URL, other)
	_, _, err := c2.Issues.Get(context.Background(), "acme", "app", 12)
	require.NoError(t, err)
	assert.Equal(t, 0, other.CallStats().NotModified)
}

func TestETagCacheBounded(t *testing.T) {
	c := NewETagCache(100, 60)
	c.put("a", etagEntry{etag: "1", body: make([]byte, 40)})
	c.put("b", etagEntry{etag: "2", body: make([]byte, 40)})
	_, ok := c.get("a") // a becomes most recent
	require.True(t, ok)
	c.put("c", etagEntry{etag: "3", body: make([]byte, 40)})
	_, okA := c.get("a")
	_, okB := c.get("b")
	assert.True(t, okA)
	assert.False(t, okB, "least recently used evicted")
	assert.Equal(t, 2, c.Len())
}

// TestTransportRetryAfter: limits whose wait is near are waited out and the
// request sent again, body included, whatever its method (GitHub refused it
// before applying it).
func TestTransportRetryAfter(t *testing.T) {
	// The fake clock runs with real time from a fixed instant, 20ms before
	// a whole second, so a reset or Retry-After date there is 20ms away.
	reset := time.Date(2026, 3, 2, 15, 42, 0, 0, time.UTC)
	tests := []struct {
		name   string
		method string
		limit  func(w http.ResponseWriter)
	}{
		{"retry-after date 403 POST", http.MethodPost, func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", reset.Format(http.TimeFormat))
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"message":"You have exceeded a secondary rate limit."}`)
		}},
		{"429 GET retry-after 0", http.MethodGet, func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		}},
		{"secondary without retry-after", http.MethodPatch, func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`)
		}},
		{"primary exhausted, reset near", http.MethodGet, func(w http.ResponseWriter) {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"message":"API rate limit exceeded"}`)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			var bodies []string
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, string(b))
				mu.Unlock()
				if n.Add(1) == 1 {
					tc.limit(w)
					return
				}
				w.WriteHeader(http.StatusOK)
				fmt.Fprint(w, `{}`)
			}))
			defer srv.Close()
			o := fastOpts()
			o.Now = runningClock(reset.Add(-20 * time.Millisecond))
			tr := NewTransport(nil, o)
			tr.resetSlack = 0
			req, err := http.NewRequest(tc.method, srv.URL+"/repos/acme/app/issues/3/comments", strings.NewReader(`{"body":"hi"}`))
			require.NoError(t, err)
			start := time.Now()
			resp, err := (&http.Client{Transport: tr}).Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Less(t, time.Since(start), 2*time.Second, "a near limit is a short wait")
			assert.Equal(t, int32(2), n.Load())
			assert.Equal(t, []string{`{"body":"hi"}`, `{"body":"hi"}`}, bodies, "body re-sent on retry")
			assert.Equal(t, 1, tr.CallStats().RateLimitRetries)
		})
	}
}

func TestTransportNonRateLimit403NotRetried(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"message":"Resource not accessible by integration"}`)
	}))
	defer srv.Close()
	tr := NewTransport(nil, fastOpts())
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/repos/a/b")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, string(b), "Resource not accessible", "peeked body handed back whole")
	assert.Equal(t, int32(1), n.Load())
}

func TestTransportRateLimitRespectsContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	o := fastOpts()
	o.MaxRateLimitWait = time.Minute
	tr := NewTransport(nil, o)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/x", nil)
	start := time.Now()
	_, err := tr.RoundTrip(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestTransportServerErrorRetries(t *testing.T) {
	tests := []struct {
		method    string
		status    int
		wantCalls int32
		wantCode  int
	}{
		{http.MethodGet, http.StatusBadGateway, 2, http.StatusOK},
		{http.MethodPut, http.StatusInternalServerError, 2, http.StatusOK},
		{http.MethodDelete, http.StatusServiceUnavailable, 2, http.StatusOK},
		{http.MethodPost, http.StatusBadGateway, 1, http.StatusBadGateway},
		{http.MethodPatch, http.StatusBadGateway, 1, http.StatusBadGateway},
		{http.MethodGet, http.StatusNotFound, 1, http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s %d", tc.method, tc.status), func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.WriteHeader(tc.status)
					return
				}
				fmt.Fprint(w, `{}`)
			}))
			defer srv.Close()
			tr := NewTransport(nil, fastOpts())
			req, _ := http.NewRequest(tc.method, srv.URL+"/repos/acme/app/issues/1", strings.NewReader("{}"))
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.wantCode, resp.StatusCode)
			assert.Equal(t, tc.wantCalls, n.Load())
			assert.Equal(t, int(tc.wantCalls), tr.CallStats().Total, "every wire request counted")
		})
	}
}

func TestTransportRetriesBounded(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	o := fastOpts()
	o.MaxRetries = 2
	tr := NewTransport(nil, o)
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/x")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
	assert.Equal(t, int32(3), n.Load())
	assert.Equal(t, 2, tr.CallStats().ErrorRetries)
}

func TestTransportTimeoutRetriedForGETOnly(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			time.Sleep(200 * time.Millisecond)
		}
		fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()
	base := &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}
	defer base.CloseIdleConnections()
	tr := NewTransport(base, fastOpts())
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/x")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, int32(2), n.Load())

	n.Store(0)
	_, err = (&http.Client{Transport: tr}).Post(srv.URL+"/x", "application/json", strings.NewReader("{}"))
	require.Error(t, err, "a POST that timed out may have been applied: not retried")
	assert.Equal(t, int32(1), n.Load())
}

func TestCountingByRouteTemplate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"id":1}`)
		case strings.HasSuffix(r.URL.Path, "/comments"):
			fmt.Fprint(w, `[]`)
		default:
			fmt.Fprint(w, `{}`)
		}
	}))
	defer srv.Close()
	tr := NewTransport(nil, fastOpts())
	c := tokenClient(t, srv.URL, tr)
	ctx := context.Background()
	for _, n := range []int{3, 4} {
		_, _, err := c.Issues.CreateComment(ctx, "acme", "app", n, &github.IssueComment{Body: github.String("x")})
		require.NoError(t, err)
		_, _, err = c.Issues.ListComments(ctx, "acme", "app", n, nil)
		require.NoError(t, err)
	}
	_, _, err := c.Issues.EditComment(ctx, "o", "r", 77, &github.IssueComment{Body: github.String("y")})
	require.NoError(t, err)
	_, _, err = c.Git.GetRef(ctx, "o", "r", "heads/bazinga/7-api")
	require.NoError(t, err)
	_, err = c.Actions.CreateWorkflowDispatchEventByFileName(ctx, "o", "r", "bazinga.yml", github.CreateWorkflowDispatchEventRequest{Ref: "main"})
	require.NoError(t, err)
	st := tr.CallStats()
	assert.Equal(t, map[string]int{
		"POST /repos/{owner}/{repo}/issues/{number}/comments":                   2,
		"GET /repos/{owner}/{repo}/issues/{number}/comments":                    2,
		"PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}":              1,
		"GET /repos/{owner}/{repo}/git/ref/{ref}":                               1,
		"POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches": 1,
	}, st.ByKind)
	assert.Equal(t, 7, st.Total)
	assert.Equal(t, 4, st.ContentCreating)
}

func TestRouteTemplate(t *testing.T) {
	tests := []struct{ prefix, path, want string }{
		{"", "/repos/acme/app/issues/12/comments", "/repos/{owner}/{repo}/issues/{number}/comments"},
		{"/api/v3", "/api/v3/repos/acme/app/issues/12", "/repos/{owner}/{repo}/issues/{number}"},
		{"", "/repos/acme/app/issues/comments/991", "/repos/{owner}/{repo}/issues/comments/{comment_id}"},
		{"", "/repos/acme/app/issues/12/labels/bazinga:running", "/repos/{owner}/{repo}/issues/{number}/labels/{name}"},
		{"", "/repos/acme/app/pulls/5/reviews", "/repos/{owner}/{repo}/pulls/{number}/reviews"},
		{"", "/repos/acme/app/pulls/5/merge", "/repos/{owner}/{repo}/pulls/{number}/merge"},
		{"", "/repos/acme/app/git/refs/bazinga/claims/s1/api/developer/1", "/repos/{owner}/{repo}/git/refs/{ref}"},
		{"", "/repos/acme/app/git/refs", "/repos/{owner}/{repo}/git/refs"},
		{"", "/repos/acme/app/git/matching-refs/heads/bazinga/", "/repos/{owner}/{repo}/git/matching-refs/{ref}"},
		{"", "/repos/acme/app/contents/.github/bazinga.yml", "/repos/{owner}/{repo}/contents/{path}"},
		{"", "/repos/acme/app/branches/feature/x", "/repos/{owner}/{repo}/branches/{branch}"},
		{"", "/repos/acme/app/actions/runs/123/jobs", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"},
		{"", "/repos/acme/app/collaborators/octocat/permission", "/repos/{owner}/{repo}/collaborators/{username}/permission"},
		{"", "/app/installations/42/access_tokens", "/app/installations/{installation_id}/access_tokens"},
		{"", "/app/installations", "/app/installations"},
		{"", "/repos/acme/app", "/repos/{owner}/{repo}"},
		{"", "/rate_limit", "/rate_limit"},
		{"", "/", "/"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			assert.Equal(t, tc.want, RouteTemplate(tc.prefix, tc.path))
		})
	}
}

func TestClientFactory(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+strings.SplitN(r.Header.Get("Authorization"), " ", 2)[0])
		mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/access_tokens"):
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(map[string]any{"token": "ghs_inst", "expires_at": time.Now().Add(time.Hour).Format(time.RFC3339)})
		case r.URL.Path == "/api/v3/app/installations":
			fmt.Fprint(w, `[{"id":42}]`)
		default:
			fmt.Fprint(w, `{"number":1}`)
		}
	}))
	defer srv.Close()
	_, api, upload, err := GitHubURLs(srv.URL)
	require.NoError(t, err)
	f, err := NewClientFactory(App{ID: 7, PrivateKey: testkey.PEM(t), APIURL: api, UploadURL: upload}, nil, fastOpts())
	require.NoError(t, err)

	app, err := f.App()
	require.NoError(t, err)
	inst, _, err := app.Apps.ListInstallations(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, inst, 1)

	var wg sync.WaitGroup
	clients := make([]*github.Client, 8)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := f.Installation(42)
			assert.NoError(t, err)
			clients[i] = c
		}()
	}
	wg.Wait()
	for _, c := range clients {
		assert.Same(t, clients[0], c, "one client per installation")
	}
	other, err := f.Installation(43)
	require.NoError(t, err)
	assert.NotSame(t, clients[0], other)
	_, err = f.Installation(0)
	assert.Error(t, err)

	_, _, err = clients[0].Issues.Get(context.Background(), "acme", "app", 1)
	require.NoError(t, err)
	_, _, err = clients[0].Issues.Get(context.Background(), "acme", "app", 2)
	require.NoError(t, err)
	mu.Lock()
	assert.Equal(t, []string{
		"GET /api/v3/app/installations Bearer",
		"POST /api/v3/app/installations/42/access_tokens Bearer",
		"GET /api/v3/repos/acme/app/issues/1 token",
		"GET /api/v3/repos/acme/app/issues/2 token",
	}, seen, "token fetched once and reused; GHES /api/v3 base")
	mu.Unlock()
	st := f.CallStats()
	assert.Equal(t, 4, st.Total)
	assert.Equal(t, 2, st.ByKind["GET /repos/{owner}/{repo}/issues/{number}"], "the /api/v3 prefix is not part of the kind")
	assert.Equal(t, 1, st.ByKind["POST /app/installations/{installation_id}/access_tokens"])
}

func TestNewClientFactoryErrors(t *testing.T) {
	_, err := NewClientFactory(App{PrivateKey: testkey.PEM(t)}, nil, TransportOptions{})
	assert.ErrorContains(t, err, "app id")
	_, err = NewClientFactory(App{ID: 1, PrivateKey: []byte("nope")}, nil, TransportOptions{})
	assert.ErrorContains(t, err, "private key")
}

func TestTransportAttemptTimeoutAndDroppedConnection(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		first     func(w http.ResponseWriter, r *http.Request)
		wantCalls int32
		wantErr   bool
	}{
		{"hung GET retried", http.MethodGet, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, 2, false},
		{"dropped GET retried", http.MethodGet, hangUp, 2, false},
		{"dropped PUT retried", http.MethodPut, hangUp, 2, false},
		{"dropped POST not retried", http.MethodPost, hangUp, 1, true},
		{"hung PATCH not retried", http.MethodPatch, func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if n.Add(1) == 1 {
					tc.first(w, r)
					return
				}
				fmt.Fprint(w, `{}`)
			}))
			defer srv.Close()
			o := fastOpts()
			o.AttemptTimeout = 50 * time.Millisecond
			tr := NewTransport(&http.Transport{DisableKeepAlives: true}, o)
			req, _ := http.NewRequest(tc.method, srv.URL+"/repos/a/b/issues/1", strings.NewReader("{}"))
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err, "the attempt timeout does not cut a body read in time")
				resp.Body.Close()
				assert.Equal(t, "{}", string(b))
			}
			assert.Equal(t, tc.wantCalls, n.Load())
		})
	}
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// A write answered 301 (a renamed repository) is repeated at the new
// location with its method and body, on the same host only; net/http alone
// would repeat it as a GET without its body.
func TestTransportFollowsMovedWrites(t *testing.T) {
	var got []string
	var mu sync.Mutex
	var other *httptest.Server
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+string(body))
		mu.Unlock()
		switch {
		case strings.HasPrefix(r.URL.Path, "/repos/acme/old/"):
			w.Header().Set("Location", "/repositories/7/"+strings.TrimPrefix(r.URL.Path, "/repos/acme/old/"))
			w.WriteHeader(http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, "/repos/acme/away/"):
			w.Header().Set("Location", other.URL+"/steal")
			w.WriteHeader(http.StatusMovedPermanently)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"id":1,"body":"hi"}`)
		}
	}))
	defer srv.Close()
	var stolen atomic.Int32
	other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			stolen.Add(1)
		}
	}))
	defer other.Close()
	c := tokenClient(t, srv.URL, NewTransport(nil, fastOpts()))
	cm, _, err := c.Issues.CreateComment(context.Background(), "acme", "old", 3, &github.IssueComment{Body: github.String("hi")})
	require.NoError(t, err)
	assert.Equal(t, int64(1), cm.GetID())
	require.Len(t, got, 2)
	assert.Equal(t, `POST /repositories/7/issues/3/comments {"body":"hi"}`+"\n", got[1])
	_, _, _ = c.Issues.CreateComment(context.Background(), "acme", "away", 3, &github.IssueComment{Body: github.String("hi")})
	assert.Zero(t, stolen.Load(), "a write is never repeated at another host")
}
