package ghfake

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRepoAtRootAndEnterprisePrefix(t *testing.T) {
	e := newEnv(t)
	// Enterprise URLs (/api/v3).
	got, _, err := e.gh.Repositories.Get(e.ctx, owner, repoName)
	require.NoError(t, err)
	assert.Equal(t, "main", got.GetDefaultBranch())
	assert.Equal(t, e.f.URL()+"/acme/widgets.git", got.GetCloneURL())
	assert.Equal(t, full, got.GetFullName())

	// Root, as github.com's api host serves it.
	root := github.NewClient(nil).WithAuthToken(botTok)
	root.BaseURL = mustURL(t, e.f.URL()+"/")
	got2, _, err := root.Repositories.Get(e.ctx, "ACME", "Widgets") // names are case-insensitive
	require.NoError(t, err)
	assert.Equal(t, got.GetID(), got2.GetID())

	_, _, err = e.gh.Repositories.Get(e.ctx, owner, "missing")
	assert.Equal(t, http.StatusNotFound, statusOf(err))

	fc, _, _, err := e.gh.Repositories.GetContents(e.ctx, owner, repoName, "src/a.txt", nil)
	require.NoError(t, err)
	content, err := fc.GetContent()
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\nthree\n", content)
	_, dir, _, err := e.gh.Repositories.GetContents(e.ctx, owner, repoName, "src", &github.RepositoryContentGetOptions{Ref: "main"})
	require.NoError(t, err)
	require.Len(t, dir, 1)
	assert.Equal(t, "src/a.txt", dir[0].GetPath())
	_, _, _, err = e.gh.Repositories.GetContents(e.ctx, owner, repoName, ".github/bazinga.yml", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
}

func TestUnknownRouteIsJSON404(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/api/v3/nope", "/repos/acme/widgets/frobnicate", "/api/v3/repos/acme/widgets/issues/abc"} {
		resp, body := rawGet(t, e.f.URL()+p, botTok, nil)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m), p)
		assert.Equal(t, "Not Found", m["message"])
		assert.NotEmpty(t, m["documentation_url"])
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		tok  string
		want int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"unknown token", "ghp_nope", http.StatusUnauthorized},
		{"bot", botTok, http.StatusOK},
		{"user", aliceTok, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := e.f.Client(tt.tok).Issues.ListByRepo(e.ctx, owner, repoName, nil)
			if tt.want == http.StatusOK {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, tt.want, statusOf(err))
		})
	}
	// "token X" works as well as "Bearer X".
	resp, _ := rawGet(t, e.f.APIURL()+"repos/acme/widgets", botTok, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestInstallationTokens(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &now
	f := Start(t, Options{Now: func() time.Time { return *clock }})
	_, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	const jwt = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiIxIn0.c2ln"
	app := f.Client(jwt)
	ctx := t.Context()

	list, _, err := app.Apps.ListInstallations(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list, 1)
	inst := list[0]
	assert.Equal(t, f.InstallationID(), inst.GetID())

	tok, _, err := app.Apps.CreateInstallationToken(ctx, inst.GetID(), nil)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(tok.GetToken(), "ghs_"))
	assert.Equal(t, now.Add(time.Hour), tok.GetExpiresAt().Time)

	bot := f.Client(tok.GetToken())
	n, err := f.CreateIssue("alice", "hi", "")
	require.NoError(t, err)
	c, _, err := bot.Issues.CreateComment(ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("hi")})
	require.NoError(t, err)
	assert.Equal(t, "bazinga[bot]", c.GetUser().GetLogin())
	assert.Equal(t, "Bot", c.GetUser().GetType())

	// The JWT is only good for /app endpoints, the token not for them.
	_, _, err = app.Issues.Get(ctx, "acme", "widgets", 1)
	assert.Equal(t, http.StatusForbidden, statusOf(err))
	_, _, err = bot.Apps.ListInstallations(ctx, nil)
	assert.Equal(t, http.StatusUnauthorized, statusOf(err))
	_, _, err = app.Apps.CreateInstallationToken(ctx, 999, nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))

	// Tokens expire.
	later := now.Add(61 * time.Minute)
	clock = &later
	_, _, err = bot.Issues.Get(ctx, "acme", "widgets", 1)
	assert.Equal(t, http.StatusUnauthorized, statusOf(err))
}

func TestTokenPermissions(t *testing.T) {
	e := newEnv(t)
	e.f.AddTokenWithPermissions("ghs_ro", "job[bot]", Bot, map[string]string{"contents": "read", "issues": "write"})
	c := e.f.Client("ghs_ro")
	n, err := e.f.CreateIssue("alice", "task", "")
	require.NoError(t, err)
	_, _, err = c.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("ok")})
	require.NoError(t, err)
	main, _ := e.repo.Ref("refs/heads/main")
	_, resp, err := c.Git.CreateRef(e.ctx, owner, repoName, &github.Reference{Ref: github.String("refs/heads/x"), Object: &github.GitObject{SHA: github.String(main)}})
	assert.Equal(t, http.StatusForbidden, statusOf(err))
	assert.Equal(t, "Resource not accessible by integration", messageOf(err))
	assert.Equal(t, "contents=write", resp.Header.Get("X-Accepted-GitHub-Permissions"))

	// A read-only user can comment, not label or push refs.
	e.f.AddToken("ghp_bob", "bob", User)
	e.f.SetPermission("bob", "read")
	bob := e.f.Client("ghp_bob")
	_, _, err = bob.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("hi")})
	require.NoError(t, err)
	_, _, err = bob.Issues.ReplaceLabelsForIssue(e.ctx, owner, repoName, n, []string{"x"})
	assert.Equal(t, http.StatusForbidden, statusOf(err))
	assert.Empty(t, e.f.Labels(n))
	e.f.SetPermission("bob", "none")
	_, _, err = bob.Issues.Get(e.ctx, owner, repoName, n)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
}

func TestIssuesCRUDAndList(t *testing.T) {
	e := newEnv(t)
	for i := 1; i <= 5; i++ {
		var labels []string
		if i%2 == 1 {
			labels = []string{"bazinga"}
		}
		n, err := e.f.CreateIssue("alice", "issue "+string(rune('0'+i)), "body", labels...)
		require.NoError(t, err)
		assert.Equal(t, i, n, "numbers start at 1")
	}
	is, _, err := e.gh.Issues.Get(e.ctx, owner, repoName, 3)
	require.NoError(t, err)
	assert.Equal(t, "issue 3", is.GetTitle())
	assert.Equal(t, "open", is.GetState())
	require.Len(t, is.Labels, 1)
	assert.Equal(t, "ededed", is.Labels[0].GetColor(), "labels are auto-created")

	// Filter by label and paginate with Link headers.
	list, resp, err := e.gh.Issues.ListByRepo(e.ctx, owner, repoName, &github.IssueListByRepoOptions{Labels: []string{"bazinga"}, ListOptions: github.ListOptions{PerPage: 2}})
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, []int{5, 3}, []int{list[0].GetNumber(), list[1].GetNumber()}, "newest first")
	assert.Equal(t, 2, resp.NextPage)
	assert.Equal(t, 2, resp.LastPage)
	list, resp, err = e.gh.Issues.ListByRepo(e.ctx, owner, repoName, &github.IssueListByRepoOptions{Labels: []string{"bazinga"}, ListOptions: github.ListOptions{PerPage: 2, Page: 2}})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, 0, resp.NextPage)
	assert.Equal(t, 1, resp.PrevPage)

	// Edit: title, body, close.
	e.hook.reset()
	is, _, err = e.gh.Issues.Edit(e.ctx, owner, repoName, 2, &github.IssueRequest{Title: github.String("renamed"), State: github.String("closed")})
	require.NoError(t, err)
	assert.Equal(t, "renamed", is.GetTitle())
	assert.Equal(t, "closed", is.GetState())
	assert.Equal(t, "completed", is.GetStateReason())
	assert.Equal(t, []string{"issues.edited", "issues.closed"}, e.hook.kinds())
	edited := e.hook.all()[0].payload.(*github.IssuesEvent)
	assert.Equal(t, "issue 2", edited.GetChanges().GetTitle().GetFrom())

	list, _, err = e.gh.Issues.ListByRepo(e.ctx, owner, repoName, &github.IssueListByRepoOptions{State: "closed"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	list, _, err = e.gh.Issues.ListByRepo(e.ctx, owner, repoName, &github.IssueListByRepoOptions{State: "all"})
	require.NoError(t, err)
	assert.Len(t, list, 5)

	_, _, err = e.gh.Issues.Get(e.ctx, owner, repoName, 99)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
	_, _, err = e.gh.Issues.Edit(e.ctx, owner, repoName, 1, &github.IssueRequest{State: github.String("weird")})
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
}

func TestComments(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	e := newEnv(t)
	e.f.now = func() time.Time { return now }
	n, err := e.f.CreateIssue("alice", "task", "do it")
	require.NoError(t, err)

	var ids []int64
	for i := 0; i < 35; i++ {
		now = now.Add(time.Minute)
		c, _, err := e.gh.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("c" + string(rune('a'+i%26)))})
		require.NoError(t, err)
		ids = append(ids, c.GetID())
	}
	for i := 1; i < len(ids); i++ {
		require.Greater(t, ids[i], ids[i-1], "comment ids increase")
	}
	page1, resp, err := e.gh.Issues.ListComments(e.ctx, owner, repoName, n, nil)
	require.NoError(t, err)
	assert.Len(t, page1, 30, "default page size")
	assert.Equal(t, ids[0], page1[0].GetID(), "oldest first")
	assert.Equal(t, 2, resp.NextPage)
	page2, _, err := e.gh.Issues.ListComments(e.ctx, owner, repoName, n, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{Page: 2}})
	require.NoError(t, err)
	assert.Len(t, page2, 5)

	since := time.Date(2025, 1, 1, 0, 33, 0, 0, time.UTC)
	recent, _, err := e.gh.Issues.ListComments(e.ctx, owner, repoName, n, &github.IssueListCommentsOptions{Since: &since})
	require.NoError(t, err)
	assert.Len(t, recent, 3, "comments updated at or after since")

	e.hook.reset()
	c, _, err := e.gh.Issues.EditComment(e.ctx, owner, repoName, ids[0], &github.IssueComment{Body: github.String("changed")})
	require.NoError(t, err)
	assert.Equal(t, "changed", c.GetBody())
	got, _, err := e.gh.Issues.GetComment(e.ctx, owner, repoName, ids[0])
	require.NoError(t, err)
	assert.Equal(t, "changed", got.GetBody())
	require.NoError(t, e.f.DeleteComment(e.f.BotLogin(), ids[1]))
	_, _, err = e.gh.Issues.GetComment(e.ctx, owner, repoName, ids[1])
	assert.Equal(t, http.StatusNotFound, statusOf(err))
	assert.Equal(t, []string{"issue_comment.edited", "issue_comment.deleted"}, e.hook.kinds())
	ev := e.hook.all()[0].payload.(*github.IssueCommentEvent)
	assert.Equal(t, "ca", ev.GetChanges().GetBody().GetFrom())
	assert.Len(t, e.f.Comments(n), 34)

	// GitHub's body limit.
	_, _, err = e.gh.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String(strings.Repeat("x", 65537))})
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
	_, _, err = e.gh.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String(strings.Repeat("é", 65536))})
	assert.NoError(t, err, "the limit counts characters")
	_, _, err = e.gh.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("")})
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))

	// Only the author or a writer may edit.
	e.f.AddToken("ghp_carol", "carol", User)
	e.f.SetPermission("carol", "read")
	_, _, err = e.f.Client("ghp_carol").Issues.EditComment(e.ctx, owner, repoName, ids[2], &github.IssueComment{Body: github.String("hijack")})
	assert.Equal(t, http.StatusForbidden, statusOf(err))
}

func TestLabels(t *testing.T) {
	e := newEnv(t)
	n, err := e.f.CreateIssue("alice", "task", "")
	require.NoError(t, err)

	e.hook.reset()
	got, _, err := e.gh.Issues.ReplaceLabelsForIssue(e.ctx, owner, repoName, n, []string{"bazinga", "bazinga:running"})
	require.NoError(t, err)
	assert.Len(t, got, 2)
	got, _, err = e.gh.Issues.ReplaceLabelsForIssue(e.ctx, owner, repoName, n, []string{"bazinga", "bazinga:done"})
	require.NoError(t, err)
	assert.Equal(t, []string{"bazinga", "bazinga:done"}, labelNames(got))
	assert.Equal(t, []string{"issues.labeled", "issues.labeled", "issues.unlabeled", "issues.labeled"}, e.hook.kinds())

	// Replacing with the same set changes nothing and emits nothing.
	e.hook.reset()
	_, _, err = e.gh.Issues.ReplaceLabelsForIssue(e.ctx, owner, repoName, n, []string{"bazinga:done", "bazinga"})
	require.NoError(t, err)
	assert.Empty(t, e.hook.kinds())

	got, _, err = e.gh.Issues.ReplaceLabelsForIssue(e.ctx, owner, repoName, n, []string{"BAZINGA"})
	require.NoError(t, err)
	assert.Equal(t, []string{"bazinga"}, labelNames(got), "label names are case-insensitive")
	assert.Equal(t, []string{"bazinga"}, e.f.Labels(n))
	got, _, err = e.gh.Issues.ReplaceLabelsForIssue(e.ctx, owner, repoName, n, []string{})
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Empty(t, e.f.Labels(n))

	// Human helpers emit the same events.
	e.hook.reset()
	require.NoError(t, e.f.LabelIssue("alice", n, "urgent"))
	require.NoError(t, e.f.UnlabelIssue("alice", n, "urgent"))
	assert.Equal(t, []string{"issues.labeled", "issues.unlabeled"}, e.hook.kinds())
	ev := e.hook.all()[0].payload.(*github.IssuesEvent)
	assert.Equal(t, "urgent", ev.GetLabel().GetName())
	assert.Equal(t, "alice", ev.GetSender().GetLogin())
	assert.Equal(t, e.f.InstallationID(), ev.GetInstallation().GetID())
	assert.Equal(t, full, ev.GetRepo().GetFullName())
}

func labelNames(ls []*github.Label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return out
}

func TestPermissionLevel(t *testing.T) {
	e := newEnv(t)
	tests := []struct{ role, legacy string }{
		{"admin", "admin"}, {"maintain", "write"}, {"write", "write"}, {"triage", "read"}, {"read", "read"}, {"none", "none"},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			e.f.SetPermission("dave", tt.role)
			p, _, err := e.gh.Repositories.GetPermissionLevel(e.ctx, owner, repoName, "dave")
			require.NoError(t, err)
			assert.Equal(t, tt.legacy, p.GetPermission())
			assert.Equal(t, tt.role, p.GetRoleName())
			assert.Equal(t, "dave", p.GetUser().GetLogin())
		})
	}
	p, _, err := e.gh.Repositories.GetPermissionLevel(e.ctx, owner, repoName, owner)
	require.NoError(t, err)
	assert.Equal(t, "admin", p.GetPermission(), "the owner is admin")
	_, _, err = e.gh.Repositories.GetPermissionLevel(e.ctx, owner, repoName, "nobody-at-all")
	assert.Equal(t, http.StatusNotFound, statusOf(err))
}

func TestCreateIssueRules(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, func() error { _, err := e.repo.CreateIssue("alice", "seed", "", "triage"); return err }())

	// The App sets labels, creating a missing one; opened then labeled.
	e.hook.reset()
	is, resp, err := e.gh.Issues.Create(e.ctx, owner, repoName, &github.IssueRequest{
		Title: github.String("Follow-up"), Body: github.String("from a review"), Labels: &[]string{"bazinga-followup"}})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 2, is.GetNumber())
	assert.Equal(t, []string{"bazinga-followup"}, e.f.Labels(2))
	assert.Equal(t, []string{"issues.opened", "issues.labeled"}, e.hook.kinds())

	// A read-only user may open an issue; its labels are dropped, and a
	// label the repository lacks is refused.
	e.f.AddToken("ghp_bob", "bob", User)
	e.f.SetPermission("bob", "read")
	bob := e.f.Client("ghp_bob")
	is, _, err = bob.Issues.Create(e.ctx, owner, repoName, &github.IssueRequest{Title: github.String("q"), Labels: &[]string{"triage"}})
	require.NoError(t, err)
	assert.Empty(t, e.f.Labels(is.GetNumber()))
	_, _, err = bob.Issues.Create(e.ctx, owner, repoName, &github.IssueRequest{Title: github.String("q"), Labels: &[]string{"new-one"}})
	assert.Equal(t, http.StatusForbidden, statusOf(err))

	// A title is required; the body has the comments' limit.
	_, _, err = e.gh.Issues.Create(e.ctx, owner, repoName, &github.IssueRequest{Title: github.String("  ")})
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
	_, _, err = e.gh.Issues.Create(e.ctx, owner, repoName, &github.IssueRequest{Title: github.String("t"), Body: github.String(strings.Repeat("x", 65537))})
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))

	// Without access the repository is not there.
	e.f.SetPermission("bob", "none")
	_, _, err = bob.Issues.Create(e.ctx, owner, repoName, &github.IssueRequest{Title: github.String("q")})
	assert.Equal(t, http.StatusNotFound, statusOf(err))
}
