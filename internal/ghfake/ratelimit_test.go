package ghfake

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// get sends GET path as tok through the in-process transport.
func limitGet(t *testing.T, f *Fake, tok, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.APIURL()+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "token "+tok)
	resp, err := (&http.Client{Transport: f.Transport()}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// TestActionsTokenRateLimit: the GITHUB_TOKENs of a repository share 1,000
// requests an hour, answered as GitHub answers an exhausted primary limit;
// another repository's jobs and the App's installation keep their own.
func TestActionsTokenRateLimit(t *testing.T) {
	clock := &stepClock{t: time.Date(2026, 3, 2, 14, 42, 0, 500_000_000, time.UTC)}
	f := Start(t, Options{Now: clock.Now, RateLimit: 5000})
	for _, name := range []string{"widgets", "gadgets"} {
		r, err := f.CreateRepo("acme", name, "main")
		require.NoError(t, err)
		_, err = r.Push("acme", "main", map[string]string{"README.md": "# " + name + "\n"}, "Initial commit")
		require.NoError(t, err)
	}
	job1 := f.RunToken(Run{ID: 1, Repo: "acme/widgets"})
	job2 := f.RunToken(Run{ID: 2, Repo: "acme/widgets"})
	other := f.RunToken(Run{ID: 3, Repo: "acme/gadgets"})
	f.AddToken("ghs_app", f.BotLogin(), Bot)
	reset := clock.Now().Add(time.Hour).Truncate(time.Second)

	// 1,000 requests between the two jobs, then both are refused.
	for i := 0; i < 1000; i++ {
		tok := job1
		if i%2 == 1 {
			tok = job2
		}
		resp, body := limitGet(t, f, tok, "repos/acme/widgets")
		require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i+1, body)
		if i == 0 || i == 999 {
			assert.Equal(t, "1000", resp.Header.Get("X-RateLimit-Limit"))
			assert.Equal(t, strconv.Itoa(999-i), resp.Header.Get("X-RateLimit-Remaining"))
			assert.Equal(t, strconv.Itoa(i+1), resp.Header.Get("X-RateLimit-Used"))
			assert.Equal(t, strconv.FormatInt(reset.Unix(), 10), resp.Header.Get("X-RateLimit-Reset"))
			assert.Equal(t, "core", resp.Header.Get("X-RateLimit-Resource"))
		}
	}
	for _, tok := range []string{job1, job2} {
		resp, body := limitGet(t, f, tok, "repos/acme/widgets/issues")
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		assert.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))
		assert.Equal(t, strconv.FormatInt(reset.Unix(), 10), resp.Header.Get("X-RateLimit-Reset"))
		var msg struct {
			Message string `json:"message"`
			Doc     string `json:"documentation_url"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &msg))
		assert.Regexp(t, `^API rate limit exceeded for installation ID \d+\.$`, msg.Message)
		assert.Contains(t, msg.Doc, "primary-rate-limits")
	}

	resp, _ := limitGet(t, f, other, "repos/acme/gadgets")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "another repository's jobs have their own 1,000")
	assert.Equal(t, "999", resp.Header.Get("X-RateLimit-Remaining"))
	resp, _ = limitGet(t, f, "ghs_app", "repos/acme/widgets")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the App has its own limit")
	assert.Equal(t, "5000", resp.Header.Get("X-RateLimit-Limit"))

	// A new window at the reset.
	clock.Advance(time.Hour)
	resp, _ = limitGet(t, f, job2, "repos/acme/widgets")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "999", resp.Header.Get("X-RateLimit-Remaining"))
	assert.Equal(t, strconv.FormatInt(clock.Now().Add(time.Hour).Truncate(time.Second).Unix(), 10), resp.Header.Get("X-RateLimit-Reset"))

	f.SetActionsRateRemaining("acme/widgets", 0)
	resp, _ = limitGet(t, f, job1, "repos/acme/widgets")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// TestInstallationRateLimitSmall: Options.RateLimit bounds the App's
// installation token; the refusal carries the reset the clock gives.
func TestInstallationRateLimitSmall(t *testing.T) {
	clock := &stepClock{t: time.Date(2026, 3, 2, 14, 42, 0, 0, time.UTC)}
	f := Start(t, Options{Now: clock.Now, RateLimit: 3})
	r, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	_, err = r.Push("acme", "main", map[string]string{"README.md": "# w\n"}, "Initial commit")
	require.NoError(t, err)
	// An installation token, exchanged with a JWT-shaped App credential.
	jwt := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`)) + ".e30.sig"
	req, err := http.NewRequest(http.MethodPost, f.APIURL()+"app/installations/1/access_tokens", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+jwt)
	tresp, err := (&http.Client{Transport: f.Transport()}).Do(req)
	require.NoError(t, err)
	var it struct {
		Token string `json:"token"`
	}
	require.NoError(t, json.NewDecoder(tresp.Body).Decode(&it))
	tresp.Body.Close()
	tok := it.Token
	require.NotEmpty(t, tok)
	for i := 0; i < 3; i++ {
		resp, _ := limitGet(t, f, tok, "repos/acme/widgets")
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	resp, body := limitGet(t, f, tok, "repos/acme/widgets")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body, "API rate limit exceeded for installation ID 1.")
	assert.Equal(t, strconv.FormatInt(clock.Now().Add(time.Hour).Unix(), 10), resp.Header.Get("X-RateLimit-Reset"))
}

// TestActionsTokenContentLimitPerRepository: the secondary limit on content
// creation (80 a minute) counts a repository's jobs together, and another
// repository's apart.
func TestActionsTokenContentLimitPerRepository(t *testing.T) {
	clock := &stepClock{t: time.Date(2026, 3, 2, 14, 42, 0, 0, time.UTC)}
	f := Start(t, Options{Now: clock.Now, ContentLimits: true})
	issues := map[string]int{}
	for _, name := range []string{"widgets", "gadgets"} {
		r, err := f.CreateRepo("acme", name, "main")
		require.NoError(t, err)
		n, err := r.CreateIssue("alice", "t", "")
		require.NoError(t, err)
		issues[name] = n
	}
	comment := func(tok, repo string) int {
		req, err := http.NewRequest(http.MethodPost, f.APIURL()+"repos/acme/"+repo+"/issues/"+strconv.Itoa(issues[repo])+"/comments", strings.NewReader(`{"body":"x"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "token "+tok)
		resp, err := (&http.Client{Transport: f.Transport()}).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode == http.StatusForbidden {
			assert.Equal(t, "60", resp.Header.Get("Retry-After"))
		}
		return resp.StatusCode
	}
	job1 := f.RunToken(Run{ID: 1, Repo: "acme/widgets"})
	job2 := f.RunToken(Run{ID: 2, Repo: "acme/widgets"})
	for i := 0; i < 80; i++ {
		tok := job1
		if i%2 == 1 {
			tok = job2
		}
		require.Equal(t, http.StatusCreated, comment(tok, "widgets"), i)
	}
	assert.Equal(t, http.StatusForbidden, comment(job2, "widgets"))
	assert.Equal(t, http.StatusCreated, comment(f.RunToken(Run{ID: 3, Repo: "acme/gadgets"}), "gadgets"))
	clock.Advance(time.Minute)
	assert.Equal(t, http.StatusCreated, comment(job1, "widgets"))
}
