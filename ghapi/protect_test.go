package ghapi_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
)

// The protection slice of the client against the fake GitHub with its
// rules on: what the land job and the bot read before a merge, and the
// merge itself.

func protectWorld(t *testing.T) (*ghfake.Fake, *ghfake.Repo, *ghapi.Client) {
	t.Helper()
	f := ghfake.Start(t, ghfake.Options{})
	repo, err := f.CreateRepo("acme", "widgets", "main")
	require.NoError(t, err)
	_, err = repo.Push("acme", "main", map[string]string{"README.md": "# w\n"}, "init")
	require.NoError(t, err)
	f.AddToken("ghs_test", f.BotLogin(), ghfake.Bot)
	c, err := github.NewClient(&http.Client{Transport: f.Transport()}).WithAuthToken("ghs_test").WithEnterpriseURLs(f.APIURL(), f.URL()+"/api/uploads/")
	require.NoError(t, err)
	return f, repo, ghapi.New(c)
}

func TestRepoSettingsAndBranchRules(t *testing.T) {
	_, repo, gh := protectWorld(t)
	ctx := context.Background()
	ref := ghapi.RepoRef{Owner: "acme", Name: "widgets"}

	s, err := gh.RepoSettings(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, []string{"merge", "squash", "rebase"}, s.Allowed())
	st := repo.Settings()
	st.AllowMergeCommit, st.AllowRebaseMerge = false, false
	require.NoError(t, repo.SetSettings(st))
	s, err = gh.RepoSettings(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, []string{"squash"}, s.Allowed())

	r, err := gh.BranchRules(ctx, ref, "main")
	require.NoError(t, err)
	assert.Equal(t, ghapi.BranchRules{}, r, "an unprotected branch has no rules")

	require.NoError(t, repo.Protect("main", ghfake.Protection{RequirePR: true, RequiredChecks: []string{"lint", "ci/test"}}))
	id, err := repo.AddRuleset(ghfake.Ruleset{Name: "main", Include: []string{"~DEFAULT_BRANCH"}, LinearHistory: true,
		RequiredChecks: []string{"ci/test"}, Strict: true, AllowedMergeMethods: []string{"squash", "rebase"}})
	require.NoError(t, err)
	r, err = gh.BranchRules(ctx, ref, "main")
	require.NoError(t, err)
	assert.Equal(t, []ghapi.RequiredCheck{{Context: "ci/test"}, {Context: "lint"}}, r.RequiredChecks, "sorted, deduplicated")
	assert.True(t, r.Strict)
	assert.Equal(t, []string{"rebase", "squash"}, r.MergeMethods)
	src := "ruleset " + itoa(id)
	assert.Equal(t, []ghapi.Rule{{Kind: "pull_request", Source: src}, {Kind: "required_linear_history", Source: src},
		{Kind: "required_status_checks", Source: "branch protection"}, {Kind: "required_status_checks", Source: src}}, r.PushRules)

	_, err = gh.BranchRules(ctx, ref, "no-such-branch")
	assert.ErrorIs(t, err, ghapi.ErrNotFound)
}

func TestChecksAndMerge(t *testing.T) {
	_, repo, gh := protectWorld(t)
	ctx := context.Background()
	ref := ghapi.RepoRef{Owner: "acme", Name: "widgets"}
	require.NoError(t, repo.Protect("main", ghfake.Protection{RequiredChecks: []string{"ci/test", "lint"}}))
	head, err := repo.Push("acme", "feature", map[string]string{"a.txt": "ok\n"}, "a")
	require.NoError(t, err)
	n, err := repo.CreatePR("acme", "feature", "main", "Feature", "", false)
	require.NoError(t, err)

	checks, err := gh.Checks(ctx, ref, head)
	require.NoError(t, err)
	assert.Empty(t, checks)
	require.NoError(t, repo.SetCheck(head, "ci/test", "completed", "failure"))
	require.NoError(t, repo.SetStatus(head, "lint", "pending"))
	checks, err = gh.Checks(ctx, ref, head)
	require.NoError(t, err)
	require.Len(t, checks, 2)
	assert.Equal(t, "ci/test", checks[0].Name)
	assert.Equal(t, ghapi.CheckFailure, checks[0].State)
	assert.NotZero(t, checks[0].AppID, "a check run names its app")
	assert.Equal(t, ghapi.Check{Name: "lint", State: ghapi.CheckPending}, ghapi.Check{Name: checks[1].Name, State: checks[1].State})

	// GitHub refuses while a required check has not passed: a 405 naming it.
	_, err = gh.MergePR(ctx, ref, n, head, "squash", "t")
	var refusal *ghapi.MergeRefusal
	require.True(t, errors.As(err, &refusal), "%v", err)
	assert.Equal(t, http.StatusMethodNotAllowed, refusal.Status)
	assert.False(t, refusal.MethodRefused())

	require.NoError(t, repo.SetCheck(head, "ci/test", "completed", "success"))
	require.NoError(t, repo.SetStatus(head, "lint", "success"))
	// A sha that is not the head: 409.
	_, err = gh.MergePR(ctx, ref, n, "0000000000000000000000000000000000000001", "squash", "t")
	require.True(t, errors.As(err, &refusal), "%v", err)
	assert.True(t, refusal.HeadModified())

	sha, err := gh.MergePR(ctx, ref, n, head, "squash", "Feature (#1)")
	require.NoError(t, err)
	assert.NotEqual(t, head, sha, "a squash makes a new commit")
	pr, err := gh.GetPR(ctx, ref, n)
	require.NoError(t, err)
	assert.True(t, pr.Merged)
	assert.Equal(t, sha, pr.MergeCommitSHA)
	assert.Equal(t, head, pr.HeadSHA)
}

func TestMergeMethodRefused(t *testing.T) {
	_, repo, gh := protectWorld(t)
	ctx := context.Background()
	ref := ghapi.RepoRef{Owner: "acme", Name: "widgets"}
	st := repo.Settings()
	st.AllowMergeCommit = false
	require.NoError(t, repo.SetSettings(st))
	head, err := repo.Push("acme", "feature", map[string]string{"a.txt": "ok\n"}, "a")
	require.NoError(t, err)
	n, err := repo.CreatePR("acme", "feature", "main", "Feature", "", false)
	require.NoError(t, err)
	_, err = gh.MergePR(ctx, ref, n, head, "merge", "t")
	var refusal *ghapi.MergeRefusal
	require.True(t, errors.As(err, &refusal), "%v", err)
	assert.True(t, refusal.MethodRefused(), refusal.Message)
}

func TestDraftsRefusedOnFreePrivateRepositories(t *testing.T) {
	_, repo, gh := protectWorld(t)
	ctx := context.Background()
	ref := ghapi.RepoRef{Owner: "acme", Name: "widgets"}
	st := repo.Settings()
	st.Private, st.Plan = true, ghfake.PlanFree
	require.NoError(t, repo.SetSettings(st))
	_, err := repo.Push("acme", "feature", map[string]string{"a.txt": "ok\n"}, "a")
	require.NoError(t, err)
	_, err = gh.CreatePR(ctx, ref, ghapi.NewPR{Title: "F", Head: "feature", Base: "main", Draft: true})
	assert.ErrorIs(t, err, ghapi.ErrDraftsUnsupported)
	pr, err := gh.CreatePR(ctx, ref, ghapi.NewPR{Title: "F", Head: "feature", Base: "main"})
	require.NoError(t, err)
	assert.False(t, pr.Draft)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
