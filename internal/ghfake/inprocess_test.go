package ghfake

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The in-process transport answers exactly as the server does over TCP:
// status, the headers clients act on, and the body.
func TestInProcessTransportMatchesTCP(t *testing.T) {
	e := newEnv(t)
	n, err := e.f.CreateIssue("alice", "task", "body")
	require.NoError(t, err)
	for _, body := range []string{"one", "two"} {
		_, err := e.f.Comment("alice", n, body)
		require.NoError(t, err)
	}
	tcp := &http.Client{}
	mem := &http.Client{Transport: e.f.Transport()}
	tests := []struct {
		name, method, path, body, tok string
	}{
		{"issue", http.MethodGet, "/api/v3/repos/acme/widgets/issues/1", "", botTok},
		{"missing", http.MethodGet, "/api/v3/repos/acme/widgets/issues/99", "", botTok},
		{"paged", http.MethodGet, "/api/v3/repos/acme/widgets/issues/1/comments?per_page=1", "", botTok},
		{"contents", http.MethodGet, "/api/v3/repos/acme/widgets/contents/src/a.txt?ref=main", "", botTok},
		{"unauthenticated", http.MethodGet, "/api/v3/repos/acme/widgets/issues/1", "", "bad"},
		{"bad json", http.MethodPost, "/api/v3/repos/acme/widgets/issues/1/comments", "{", botTok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			do := func(c *http.Client) (*http.Response, string) {
				req, err := http.NewRequest(tt.method, e.f.URL()+tt.path, strings.NewReader(tt.body))
				require.NoError(t, err)
				req.Header.Set("Authorization", "token "+tt.tok)
				resp, err := c.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				return resp, string(b)
			}
			r1, b1 := do(tcp)
			r2, b2 := do(mem)
			assert.Equal(t, r1.StatusCode, r2.StatusCode)
			if tt.name == "paged" {
				assert.NotEmpty(t, r1.Header.Get("Link"), "the paged case pages")
			}
			assert.Equal(t, b1, b2)
			for _, h := range []string{"Content-Type", "ETag", "Link", "X-RateLimit-Limit", "X-GitHub-Media-Type"} {
				assert.Equal(t, r1.Header.Get(h), r2.Header.Get(h), h)
			}
		})
	}
	// A client over the in-process transport works, and conditional
	// requests are answered 304 as over TCP.
	is, resp, err := e.f.Client(botTok).Issues.Get(e.ctx, owner, repoName, n)
	require.NoError(t, err)
	assert.Equal(t, "task", is.GetTitle())
	for _, c := range []*http.Client{tcp, mem} {
		req, err := http.NewRequest(http.MethodGet, e.f.URL()+"/api/v3/repos/acme/widgets/issues/1", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "token "+botTok)
		req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
		got, err := c.Do(req)
		require.NoError(t, err)
		_ = got.Body.Close()
		assert.Equal(t, http.StatusNotModified, got.StatusCode)
	}
}

// Webhooks to an in-process handler carry GitHub's headers and signature.
func TestWebhookHandlerInProcess(t *testing.T) {
	f := Start(t, Options{WebhookMode: Sync})
	_, err := f.CreateRepo(owner, repoName, "main")
	require.NoError(t, err)
	var got []string
	f.SetWebhookHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := github.ValidatePayload(r, []byte("s3cret"))
		require.NoError(t, err)
		got = append(got, r.Header.Get("X-GitHub-Event"))
		w.WriteHeader(http.StatusAccepted)
	}), "s3cret")
	_, err = f.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	require.Equal(t, []string{"issues"}, got)
	d := f.Deliveries()
	require.Len(t, d, 1)
	assert.Equal(t, http.StatusAccepted, d[0].Status)
}
