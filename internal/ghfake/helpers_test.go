package ghfake

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"
)

const (
	owner    = "acme"
	repoName = "widgets"
	full     = owner + "/" + repoName
	botTok   = "ghs_bottoken"
	aliceTok = "ghp_alice"
)

// env is a fake with one seeded repository, a bot token and a user token,
// delivering webhooks synchronously to a recording receiver.
type env struct {
	f    *Fake
	repo *Repo
	gh   *github.Client // as the bot
	hook *receiver
	ctx  context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := Start(t, Options{WebhookMode: Sync})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# widgets\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "a.txt"), []byte("one\ntwo\nthree\n"), 0o644))
	r, err := f.CreateRepoFrom(owner, repoName, "main", dir)
	require.NoError(t, err)
	f.AddToken(botTok, f.BotLogin(), Bot)
	f.AddToken(aliceTok, "alice", User)
	f.SetPermission("alice", "write")
	rec := newReceiver(t, "s3cret")
	f.SetWebhook(rec.srv.URL, "s3cret")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &env{f: f, repo: r, gh: f.Client(botTok), hook: rec, ctx: ctx}
}

// event is a received, verified webhook.
type event struct {
	typ, action, delivery string
	payload               any
	raw                   []byte
}

type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	events []event
	bad    int
	status int
}

func newReceiver(t *testing.T, secret string) *receiver {
	rec := &receiver{status: http.StatusAccepted}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := github.ValidatePayload(r, []byte(secret))
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if err != nil {
			rec.bad++
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		ev, err := github.ParseWebHook(github.WebHookType(r), body)
		if err != nil {
			rec.bad++
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var a struct {
			Action string `json:"action"`
		}
		_ = json.Unmarshal(body, &a)
		rec.events = append(rec.events, event{typ: github.WebHookType(r), action: a.Action, delivery: github.DeliveryID(r), payload: ev, raw: body})
		w.WriteHeader(rec.status)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *receiver) all() []event {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]event(nil), rec.events...)
}

// kinds lists "type.action" of received events.
func (rec *receiver) kinds() []string {
	var out []string
	for _, e := range rec.all() {
		k := e.typ
		if e.action != "" {
			k += "." + e.action
		}
		out = append(out, k)
	}
	return out
}

func (rec *receiver) reset() {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.events = nil
}

func statusOf(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

func messageOf(err error) string {
	var er *github.ErrorResponse
	if errors.As(err, &er) {
		return er.Message
	}
	return ""
}

// get performs a raw GET for header-level checks.
func rawGet(t *testing.T, url, tok string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if tok != "" {
		req.Header.Set("Authorization", "token "+tok)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
