package ghfake

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestETagAndRateLimit(t *testing.T) {
	e := newEnv(t)
	n, err := e.f.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	url := e.f.APIURL() + "repos/acme/widgets/issues/" + strconv.Itoa(n)

	resp, body := rawGet(t, url, botTok, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	etag := resp.Header.Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{64}"$`, etag, "a strong ETag")
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Used", "X-RateLimit-Reset", "X-RateLimit-Resource"} {
		assert.NotEmpty(t, resp.Header.Get(h), h)
	}
	remaining := resp.Header.Get("X-RateLimit-Remaining")
	assert.NotEmpty(t, body)

	resp2, body2 := rawGet(t, url, botTok, map[string]string{"If-None-Match": etag})
	assert.Equal(t, http.StatusNotModified, resp2.StatusCode)
	assert.Empty(t, body2)
	assert.Equal(t, etag, resp2.Header.Get("ETag"))
	assert.Equal(t, remaining, resp2.Header.Get("X-RateLimit-Remaining"), "a 304 is free")
	resp3, _ := rawGet(t, url, botTok, map[string]string{"If-None-Match": "W/" + etag})
	assert.Equal(t, http.StatusNotModified, resp3.StatusCode, "weak comparison")

	// A change gives a new ETag.
	_, err = e.f.Comment("alice", n, "hello")
	require.NoError(t, err)
	resp4, _ := rawGet(t, url, botTok, map[string]string{"If-None-Match": etag})
	assert.Equal(t, http.StatusOK, resp4.StatusCode)
	assert.NotEqual(t, etag, resp4.Header.Get("ETag"))

	calls := e.f.Calls()
	require.Len(t, calls, 4)
	assert.False(t, calls[0].NotModified)
	assert.True(t, calls[1].NotModified)
	assert.Equal(t, 2, e.f.Counts().NotModified)

	// Through go-github: the Response carries the rate.
	_, gr, err := e.gh.Issues.Get(e.ctx, owner, repoName, n)
	require.NoError(t, err)
	assert.Equal(t, 5000, gr.Rate.Limit)

	// Primary rate limit exhausted.
	require.NoError(t, e.f.SetRateRemaining(botTok, 0))
	_, _, err = e.gh.Issues.Get(e.ctx, owner, repoName, n)
	var rle *github.RateLimitError
	require.ErrorAs(t, err, &rle)
	assert.Equal(t, 0, rle.Rate.Remaining)
}

func TestCallRecording(t *testing.T) {
	e := newEnv(t)
	n, err := e.f.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	e.f.ResetCalls()
	_, _, err = e.gh.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("hi")})
	require.NoError(t, err)
	_, _, err = e.gh.Issues.ListComments(e.ctx, owner, repoName, n, nil)
	require.NoError(t, err)
	_, _, err = e.gh.Issues.Get(e.ctx, owner, repoName, 42)
	require.Error(t, err)

	calls := e.f.Calls()
	require.Len(t, calls, 3)
	assert.Equal(t, "POST /repos/{owner}/{repo}/issues/{number}/comments", calls[0].Route)
	assert.True(t, calls[0].ContentCreating)
	assert.Equal(t, http.StatusCreated, calls[0].Status)
	assert.Equal(t, "bazinga[bot]", calls[0].Login)
	assert.Equal(t, Bot, calls[0].Kind)
	assert.True(t, calls[0].Applied)
	assert.Equal(t, "GET /repos/{owner}/{repo}/issues/{number}/comments", calls[1].Route)
	assert.False(t, calls[1].ContentCreating)
	assert.Equal(t, http.StatusNotFound, calls[2].Status)
	assert.False(t, calls[2].Applied)

	cc := e.f.Counts()
	assert.Equal(t, 3, cc.Total)
	assert.Equal(t, 1, cc.ContentCreating)
	assert.Equal(t, []string{
		"GET /repos/{owner}/{repo}/issues/{number}",
		"GET /repos/{owner}/{repo}/issues/{number}/comments",
		"POST /repos/{owner}/{repo}/issues/{number}/comments",
	}, cc.Routes())
	assert.Empty(t, e.f.GitCalls())
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name    string
		fault   Fault
		applied bool
		check   func(t *testing.T, err error)
	}{
		{"500", Fault{Kind: Fault500}, false, func(t *testing.T, err error) {
			assert.Equal(t, http.StatusInternalServerError, statusOf(err))
		}},
		{"502", Fault{Kind: Fault502}, false, func(t *testing.T, err error) {
			assert.Equal(t, http.StatusBadGateway, statusOf(err))
		}},
		{"502 applied", AppliedThenFail(Fault502), true, func(t *testing.T, err error) {
			assert.Equal(t, http.StatusBadGateway, statusOf(err))
		}},
		{"secondary rate limit", Fault{Kind: FaultSecondaryRateLimit, RetryAfter: 7 * time.Second}, false, func(t *testing.T, err error) {
			var ae *github.AbuseRateLimitError
			require.ErrorAs(t, err, &ae)
			require.NotNil(t, ae.RetryAfter)
			assert.Equal(t, 7*time.Second, *ae.RetryAfter)
			assert.Contains(t, ae.Message, "You have exceeded a secondary rate limit")
		}},
		{"timeout", Fault{Kind: FaultTimeout}, false, func(t *testing.T, err error) {
			assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
		}},
		{"timeout with hold", Fault{Kind: FaultTimeout, Hold: 50 * time.Millisecond}, false, func(t *testing.T, err error) {
			assert.Error(t, err)
			assert.False(t, errors.Is(err, context.DeadlineExceeded), "the fake dropped the connection first: %v", err)
		}},
		{"timeout applied", AppliedThenFail(FaultTimeout), true, func(t *testing.T, err error) {
			assert.Error(t, err)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			n, err := e.f.CreateIssue("alice", "task", "")
			require.NoError(t, err)
			e.f.ResetCalls()
			e.hook.reset()
			e.f.FailCall(2, tt.fault)
			gh := e.f.Client(botTok) // a fresh client: go-github remembers secondary limits

			_, _, err = gh.Issues.Get(e.ctx, owner, repoName, n) // call 1
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
			defer cancel()
			_, _, err = gh.Issues.CreateComment(ctx, owner, repoName, n, &github.IssueComment{Body: github.String("x")}) // call 2
			require.Error(t, err)
			tt.check(t, err)

			want := 0
			if tt.applied {
				want = 1
			}
			assert.Len(t, e.f.Comments(n), want)
			assert.Len(t, e.hook.all(), want, "webhooks only for applied requests")
			calls := e.f.Calls()
			require.Len(t, calls, 2)
			assert.Equal(t, tt.fault.Kind, calls[1].Fault)
			assert.Equal(t, tt.applied, calls[1].Applied)
			assert.Equal(t, 1, e.f.Counts().Faulted)

			// Call 3 is normal again.
			_, _, err = e.f.Client(botTok).Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("y")})
			require.NoError(t, err)
		})
	}
}

func TestFailRoute(t *testing.T) {
	e := newEnv(t)
	n, err := e.f.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	e.f.FailRoute("POST /repos/{owner}/{repo}/issues/{number}/comments", Fault{Kind: Fault500}, 2)
	for i := 0; i < 2; i++ {
		_, _, err = e.gh.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("x")})
		assert.Equal(t, http.StatusInternalServerError, statusOf(err))
		_, _, err = e.gh.Issues.Get(e.ctx, owner, repoName, n)
		assert.NoError(t, err, "other routes are unaffected")
	}
	_, _, err = e.gh.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("x")})
	assert.NoError(t, err)
	e.f.FailRoute("*", Fault{Kind: Fault502}, 0)
	_, _, err = e.gh.Issues.Get(e.ctx, owner, repoName, n)
	assert.Equal(t, http.StatusBadGateway, statusOf(err))
	e.f.ClearFaults()
	_, _, err = e.gh.Issues.Get(e.ctx, owner, repoName, n)
	assert.NoError(t, err)
}

func TestWebhooks(t *testing.T) {
	e := newEnv(t)
	n, err := e.f.CreateIssue("alice", "Add a feature", "please")
	require.NoError(t, err)
	require.NoError(t, e.f.LabelIssue("alice", n, "bazinga"))
	id, err := e.f.Comment("alice", n, "/bazinga status")
	require.NoError(t, err)
	require.NoError(t, e.f.EditComment("alice", id, "/bazinga stop"))
	require.NoError(t, e.f.DeleteComment("alice", id))
	require.NoError(t, e.repo.EditIssue("alice", n, "Add a feature!", ""))
	require.NoError(t, e.repo.CloseIssue("alice", n))
	e.f.Ping()

	assert.Equal(t, []string{
		"issues.opened", "issues.labeled",
		"issue_comment.created", "issue_comment.edited", "issue_comment.deleted",
		"issues.edited", "issues.closed", "ping",
	}, e.hook.kinds())
	assert.Zero(t, e.hook.bad, "every signature verifies with github.ValidatePayload")

	ds := e.f.Deliveries()
	require.Len(t, ds, 8)
	seen := map[string]bool{}
	for _, d := range ds {
		assert.Equal(t, http.StatusAccepted, d.Status)
		assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-a[0-9a-f]{3}-[0-9a-f]{12}$`, d.ID)
		assert.False(t, seen[d.ID], "delivery ids are unique")
		seen[d.ID] = true
	}
	lab := e.hook.all()[1].payload.(*github.IssuesEvent)
	assert.Equal(t, "bazinga", lab.GetLabel().GetName())
	assert.Equal(t, "alice", lab.GetSender().GetLogin())
	assert.Equal(t, n, lab.GetIssue().GetNumber())

	// Redelivery keeps the delivery id.
	require.NoError(t, e.f.Redeliver(ds[1].ID))
	evs := e.hook.all()
	assert.Equal(t, ds[1].ID, evs[len(evs)-1].delivery)
	last := e.f.Deliveries()[8]
	assert.True(t, last.Redelivery)
	assert.Error(t, e.f.Redeliver("nope"))

	// Replayed and installation events go through the same signed path.
	e.hook.reset()
	id2 := e.f.SendEvent("issues", []byte(`{"action":"labeled","issue":{"number":99}}`))
	assert.NotEmpty(t, id2)
	e.f.SendInstallation("created", "acme")
	assert.Equal(t, []string{"issues.labeled", "installation.created"}, e.hook.kinds())
	inst := e.hook.all()[1].payload.(*github.InstallationEvent)
	assert.Len(t, inst.Repositories, 1)

	// A failing receiver is recorded.
	e.hook.mu.Lock()
	e.hook.status = http.StatusServiceUnavailable
	e.hook.mu.Unlock()
	_, err = e.f.Comment("alice", n, "again")
	require.NoError(t, err)
	ds = e.f.Deliveries()
	assert.Equal(t, http.StatusServiceUnavailable, ds[len(ds)-1].Status)

	// A wrong secret does not verify.
	e.f.SetWebhook(e.hook.srv.URL, "other")
	_, err = e.f.Comment("alice", n, "again")
	require.NoError(t, err)
	assert.Equal(t, 1, e.hook.bad)
}

func TestWebhooksAsync(t *testing.T) {
	f := Start(t, Options{})
	_, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	rec := newReceiver(t, "k")
	f.SetWebhook(rec.srv.URL, "k")
	for i := 0; i < 20; i++ {
		_, err := f.CreateIssue("alice", "t"+strconv.Itoa(i), "")
		require.NoError(t, err)
	}
	require.NoError(t, f.WaitWebhooks(5*time.Second))
	evs := rec.all()
	require.Len(t, evs, 20)
	for i, ev := range evs {
		assert.Equal(t, i+1, ev.payload.(*github.IssuesEvent).GetIssue().GetNumber(), "delivered in order")
	}
}

// TestWebhookReceiverCallsBack checks that a receiver may call the API
// synchronously from its handler in Sync mode without deadlocking.
func TestWebhookReceiverCallsBack(t *testing.T) {
	f := Start(t, Options{WebhookMode: Sync})
	_, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	f.AddToken(botTok, f.BotLogin(), Bot)
	gh := f.Client(botTok)
	var got []string
	srv := newReceiver(t, "")
	srv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, github.WebHookType(r))
		if github.WebHookType(r) == "issues" {
			_, _, err := gh.Issues.CreateComment(r.Context(), "acme", "widgets", 1, &github.IssueComment{Body: github.String("ack")})
			assert.NoError(t, err)
		}
		w.WriteHeader(http.StatusAccepted)
	})
	f.SetWebhook(srv.srv.URL, "")
	_, err = f.CreateIssue("alice", "t", "")
	require.NoError(t, err)
	require.NoError(t, f.WaitWebhooks(5*time.Second))
	assert.Equal(t, []string{"issues", "issue_comment"}, got)
}
