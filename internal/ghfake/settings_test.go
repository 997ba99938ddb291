package ghfake

import (
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRepoSettings(t *testing.T) {
	e := newEnv(t)
	got, _, err := e.gh.Repositories.Get(e.ctx, owner, repoName)
	require.NoError(t, err)
	assert.False(t, got.GetPrivate(), "a new repository is public")
	assert.Equal(t, "public", got.GetVisibility())
	assert.True(t, got.GetAllowMergeCommit())
	assert.True(t, got.GetAllowSquashMerge())
	assert.True(t, got.GetAllowRebaseMerge())

	s := e.repo.Settings()
	s.Private, s.Plan, s.AllowMergeCommit, s.AllowRebaseMerge = true, PlanTeam, false, false
	require.NoError(t, e.repo.SetSettings(s))
	got, _, err = e.gh.Repositories.Get(e.ctx, owner, repoName)
	require.NoError(t, err)
	assert.True(t, got.GetPrivate())
	assert.Equal(t, "private", got.GetVisibility())
	assert.False(t, got.GetAllowMergeCommit())
	assert.True(t, got.GetAllowSquashMerge())
	assert.False(t, got.GetAllowRebaseMerge())

	assert.ErrorContains(t, e.repo.SetSettings(RepoSettings{}), "at least one merge method")
	assert.ErrorContains(t, e.repo.SetSettings(RepoSettings{AllowSquashMerge: true, Plan: "gold"}), `unknown plan "gold"`)
	assert.Equal(t, s, e.repo.Settings(), "a refused change changes nothing")
}

func TestDraftPullRequests(t *testing.T) {
	cases := []struct {
		private bool
		plan    Plan
		ok      bool
	}{
		{false, PlanFree, true},
		{false, PlanPro, true},
		{true, PlanFree, false},
		{true, PlanPro, false},
		{true, PlanTeam, true},
		{true, PlanEnterprise, true},
	}
	for _, tc := range cases {
		t.Run(tc.plan.String()+map[bool]string{true: "-private", false: "-public"}[tc.private], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := e.repo.Settings()
			s.Private, s.Plan = tc.private, tc.plan
			require.NoError(t, e.repo.SetSettings(s))
			e.branch(t, "feature", map[string]string{"f.txt": "f"})
			req := &github.NewPullRequest{Title: github.String("F"), Head: github.String("feature"), Base: github.String("main"), Draft: github.Bool(true)}
			pr, resp, err := e.gh.PullRequests.Create(e.ctx, owner, repoName, req)
			if tc.ok {
				require.NoError(t, err)
				assert.True(t, pr.GetDraft())
				assert.Equal(t, pr.GetURL(), resp.Header.Get("Location"), "a 201 names what it created")
				return
			}
			assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err))
			var er *github.ErrorResponse
			require.ErrorAs(t, err, &er)
			assert.Equal(t, "Validation Failed", er.Message)
			require.Len(t, er.Errors, 1)
			assert.Equal(t, "Draft pull requests are not supported in this repository.", er.Errors[0].Message)
			assert.Empty(t, e.repo.PRs(), "nothing was opened")
			// The same pull request as a normal one is fine.
			req.Draft = github.Bool(false)
			_, _, err = e.gh.PullRequests.Create(e.ctx, owner, repoName, req)
			require.NoError(t, err)
		})
	}
}

func TestMergeRules(t *testing.T) {
	type env2 struct {
		*env
		pr      int
		headSHA string
	}
	squashOnly := func(t *testing.T, e env2) {
		s := e.repo.Settings()
		s.AllowMergeCommit, s.AllowRebaseMerge = false, false
		require.NoError(t, e.repo.SetSettings(s))
	}
	protect := func(p Protection) func(*testing.T, env2) {
		return func(t *testing.T, e env2) { require.NoError(t, e.repo.Protect("main", p)) }
	}
	ruleset := func(rs Ruleset) func(*testing.T, env2) {
		return func(t *testing.T, e env2) {
			rs.Include = []string{"~DEFAULT_BRANCH"}
			_, err := e.repo.AddRuleset(rs)
			require.NoError(t, err)
		}
	}
	and := func(fs ...func(*testing.T, env2)) func(*testing.T, env2) {
		return func(t *testing.T, e env2) {
			for _, f := range fs {
				f(t, e)
			}
		}
	}
	check := func(name, conclusion string) func(*testing.T, env2) {
		return func(t *testing.T, e env2) {
			require.NoError(t, e.repo.SetCheck(e.headSHA, name, "completed", conclusion))
		}
	}
	review := func(user, state string) func(*testing.T, env2) {
		return func(t *testing.T, e env2) {
			_, err := e.repo.SubmitReview(user, e.pr, state, "")
			require.NoError(t, err)
		}
	}
	cases := []struct {
		name    string
		setup   func(*testing.T, env2)
		method  string
		tok     string
		message string // "" = merged
	}{
		{"no rules", func(*testing.T, env2) {}, "merge", "", ""},
		{"merge commits disallowed", squashOnly, "merge", "", "Merge commits are not allowed on this repository."},
		{"squash allowed", squashOnly, "squash", "", ""},
		{"rebase disallowed", squashOnly, "rebase", "", "Rebase merges are not allowed on this repository."},
		{"squash disallowed", func(t *testing.T, e env2) {
			s := e.repo.Settings()
			s.AllowSquashMerge = false
			require.NoError(t, e.repo.SetSettings(s))
		}, "squash", "", "Squash merges are not allowed on this repository."},
		{"pull requests may merge into a PR-only branch", protect(Protection{RequirePR: true}), "merge", "", ""},
		{"legacy ProtectBranch lets PRs merge", func(_ *testing.T, e env2) { e.repo.ProtectBranch("main") }, "merge", "", ""},
		{"required check expected", protect(Protection{RequiredChecks: []string{"ci"}}), "merge", "", `Required status check "ci" is expected.`},
		{"required check failing", and(protect(Protection{RequiredChecks: []string{"ci"}}), check("ci", "failure")), "merge", "", `Required status check "ci" is failing.`},
		{"required checks expected", protect(Protection{RequiredChecks: []string{"ci", "lint"}}), "merge", "", "2 of 2 required status checks are expected."},
		{"required check passed (check run)", and(protect(Protection{RequiredChecks: []string{"ci"}}), check("ci", "success")), "merge", "", ""},
		{"required check passed (status)", and(protect(Protection{RequiredChecks: []string{"ci"}}), func(t *testing.T, e env2) {
			require.NoError(t, e.repo.SetStatus(e.headSHA, "ci", "success"))
		}), "merge", "", ""},
		{"review required", protect(Protection{RequiredApprovals: 1}), "merge", "", "At least 1 approving review is required by reviewers with write access."},
		{"two reviews required", and(protect(Protection{RequiredApprovals: 2}), review("alice", "APPROVE")), "merge", "", "At least 2 approving reviews are required by reviewers with write access."},
		{"approved", and(protect(Protection{RequiredApprovals: 1}), review("alice", "APPROVE")), "merge", "", ""},
		{"approval without write access does not count", and(protect(Protection{RequiredApprovals: 1}), func(t *testing.T, e env2) {
			e.f.SetPermission("rita", "read")
		}, review("rita", "APPROVE")), "merge", "", "At least 1 approving review is required by reviewers with write access."},
		{"changes requested", and(protect(Protection{RequiredApprovals: 1}), func(t *testing.T, e env2) {
			e.f.SetPermission("bob", "write")
		}, review("alice", "APPROVE"), func(t *testing.T, e env2) {
			_, err := e.repo.SubmitReview("bob", e.pr, "REQUEST_CHANGES", "no")
			require.NoError(t, err)
		}), "merge", "", "Changes have been requested."},
		{"admins bypass reviews", protect(Protection{RequiredApprovals: 1}), "merge", "ghp_owner", ""},
		{"linear history refuses a merge commit", protect(Protection{LinearHistory: true}), "merge", "", "Merge commits are not allowed on this branch."},
		{"linear history takes a squash", protect(Protection{LinearHistory: true}), "squash", "", ""},
		{"signed commits refuse a rebase", protect(Protection{SignedCommits: true}), "rebase", "", "Base branch requires signed commits. Rebase merges cannot be automatically signed by GitHub"},
		{"signed commits take a merge (GitHub signs it)", protect(Protection{SignedCommits: true}), "merge", "", ""},
		{"strict: head behind base", and(protect(Protection{RequiredChecks: []string{"ci"}, Strict: true}), check("ci", "success"), func(t *testing.T, e env2) {
			e.branch(t, "main", map[string]string{"other.txt": "o"})
		}), "merge", "", `Required status check "ci" is expected.`},
		{"strict: up to date and green", and(protect(Protection{RequiredChecks: []string{"ci", "lint"}, Strict: true}), check("ci", "success"), check("lint", "success")), "merge", "", ""},
		{"strict: behind with two checks", and(protect(Protection{RequiredChecks: []string{"ci", "lint"}, Strict: true}), check("ci", "success"), check("lint", "success"), func(t *testing.T, e env2) {
			e.branch(t, "main", map[string]string{"other.txt": "o"})
		}), "squash", "", "2 of 2 required status checks are expected."},
		{"ruleset: checks", ruleset(Ruleset{RequiredChecks: []string{"ci"}}), "squash", "",
			"Repository rule violations found\n\nRequired status check \"ci\" is expected.\n\n"},
		{"ruleset: checks and reviews", ruleset(Ruleset{RequiredChecks: []string{"ci"}, RequiredApprovals: 1}), "squash", "ghp_owner",
			"Repository rule violations found\n\nAt least 1 approving review is required by reviewers with write access.\n\nRequired status check \"ci\" is expected.\n\n"},
		{"ruleset: merge method", ruleset(Ruleset{RequirePR: true, AllowedMergeMethods: []string{"squash"}}), "merge", "",
			"Repository rule violations found\n\nMerge method merge is not allowed by the ruleset.\n\n"},
		{"ruleset: bypass", ruleset(Ruleset{RequiredChecks: []string{"ci"}, Bypass: []string{"bazinga[bot]"}}), "merge", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.f.AddToken("ghp_owner", owner, User)
			head := e.branch(t, "feature", map[string]string{"f.txt": "f"})
			n, err := e.repo.CreatePR("carol", "feature", "main", "Feature", "", false)
			require.NoError(t, err)
			tc.setup(t, env2{env: e, pr: n, headSHA: head})
			gh := e.gh
			if tc.tok != "" {
				gh = e.f.Client(tc.tok)
			}
			before, _ := e.repo.Ref("refs/heads/main")
			res, _, err := gh.PullRequests.Merge(e.ctx, owner, repoName, n, "", &github.PullRequestOptions{MergeMethod: tc.method})
			after, _ := e.repo.Ref("refs/heads/main")
			if tc.message == "" {
				require.NoError(t, err)
				assert.True(t, res.GetMerged())
				assert.Equal(t, res.GetSHA(), after)
				return
			}
			assert.Equal(t, http.StatusMethodNotAllowed, statusOf(err))
			assert.Equal(t, tc.message, messageOf(err))
			assert.Equal(t, before, after)
			assert.False(t, e.repo.PR(n).GetMerged())
		})
	}
}

func TestMergeability(t *testing.T) {
	e := newEnv(t)
	s := e.repo.Settings()
	s.AsyncMergeability = true
	require.NoError(t, e.repo.SetSettings(s))
	get := func(n int) *github.PullRequest {
		t.Helper()
		pr, _, err := e.gh.PullRequests.Get(e.ctx, owner, repoName, n)
		require.NoError(t, err)
		return pr
	}
	unknown := func(pr *github.PullRequest) {
		t.Helper()
		assert.Nil(t, pr.Mergeable, "mergeable is null until computed")
		assert.Equal(t, "unknown", pr.GetMergeableState())
	}
	e.branch(t, "feature", map[string]string{"f.txt": "f"})
	n, err := e.repo.CreatePR("alice", "feature", "main", "F", "", false)
	require.NoError(t, err)
	unknown(get(n))
	pr := get(n)
	require.NotNil(t, pr.Mergeable)
	assert.True(t, pr.GetMergeable())
	assert.Equal(t, "clean", pr.GetMergeableState())
	assert.True(t, get(n).GetMergeable(), "stays computed")

	// The head moves: null again; the base moves: null again.
	e.branch(t, "feature", map[string]string{"g.txt": "g"})
	unknown(get(n))
	assert.True(t, get(n).GetMergeable())
	e.branch(t, "main", map[string]string{"f.txt": "conflicting"})
	unknown(get(n))
	pr = get(n)
	assert.False(t, pr.GetMergeable())
	assert.Equal(t, "dirty", pr.GetMergeableState())

	// ComputeMergeability finishes the job without a null answer.
	e.branch(t, "other", map[string]string{"o.txt": "o"})
	m, err := e.repo.CreatePR("alice", "other", "main", "O", "", false)
	require.NoError(t, err)
	e.f.ComputeMergeability()
	assert.True(t, get(m).GetMergeable())

	// The list endpoint never computes it.
	list, _, err := e.gh.PullRequests.List(e.ctx, owner, repoName, nil)
	require.NoError(t, err)
	for _, p := range list {
		assert.Nil(t, p.Mergeable)
	}
}

func TestMergeableStates(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, e *env, pr int, head string)
		draft bool
		want  string
	}{
		{"clean", func(*testing.T, *env, int, string) {}, false, "clean"},
		{"draft", func(*testing.T, *env, int, string) {}, true, "draft"},
		{"blocked by a missing check", func(t *testing.T, e *env, _ int, _ string) {
			require.NoError(t, e.repo.Protect("main", Protection{RequiredChecks: []string{"ci"}}))
		}, false, "blocked"},
		{"blocked by a review", func(t *testing.T, e *env, _ int, _ string) {
			_, err := e.repo.AddRuleset(Ruleset{Include: []string{"~ALL"}, RequiredApprovals: 1})
			require.NoError(t, err)
		}, false, "blocked"},
		{"behind", func(t *testing.T, e *env, _ int, head string) {
			require.NoError(t, e.repo.Protect("main", Protection{RequiredChecks: []string{"ci"}, Strict: true}))
			require.NoError(t, e.repo.SetCheck(head, "ci", "completed", "success"))
			e.branch(t, "main", map[string]string{"m.txt": "m"})
		}, false, "behind"},
		{"unstable", func(t *testing.T, e *env, _ int, head string) {
			require.NoError(t, e.repo.Protect("main", Protection{RequiredChecks: []string{"ci"}}))
			require.NoError(t, e.repo.SetCheck(head, "ci", "completed", "success"))
			require.NoError(t, e.repo.SetStatus(head, "coverage", "failure"))
		}, false, "unstable"},
		{"clean with checks", func(t *testing.T, e *env, _ int, head string) {
			require.NoError(t, e.repo.Protect("main", Protection{RequiredChecks: []string{"ci"}}))
			require.NoError(t, e.repo.SetCheck(head, "ci", "completed", "success"))
			require.NoError(t, e.repo.SetCheck(head, "docs", "completed", "skipped"))
		}, false, "clean"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			head := e.branch(t, "feature", map[string]string{"f.txt": "f"})
			n, err := e.repo.CreatePR("alice", "feature", "main", "F", "", tc.draft)
			require.NoError(t, err)
			tc.setup(t, e, n, head)
			pr, _, err := e.gh.PullRequests.Get(e.ctx, owner, repoName, n)
			require.NoError(t, err)
			assert.True(t, pr.GetMergeable())
			assert.Equal(t, tc.want, pr.GetMergeableState())
		})
	}
}

func TestUpdateBranch(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.repo.Protect("main", Protection{RequiredChecks: []string{"ci"}, Strict: true}))
	head := e.branch(t, "feature", map[string]string{"f.txt": "f"})
	n, err := e.repo.CreatePR("alice", "feature", "main", "F", "", false)
	require.NoError(t, err)
	require.NoError(t, e.repo.SetCheck(head, "ci", "completed", "success"))

	_, _, err = e.gh.PullRequests.UpdateBranch(e.ctx, owner, repoName, n, nil)
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err), "nothing new on the base")

	base := e.branch(t, "main", map[string]string{"m.txt": "m"})
	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, n, "", nil)
	assert.Equal(t, `Required status check "ci" is expected.`, messageOf(err), "behind")

	_, _, err = e.gh.PullRequests.UpdateBranch(e.ctx, owner, repoName, n, &github.PullRequestBranchUpdateOptions{ExpectedHeadSHA: github.String(base)})
	assert.Equal(t, http.StatusUnprocessableEntity, statusOf(err), "wrong expected head")
	e.hook.reset()
	_, resp, err := e.gh.PullRequests.UpdateBranch(e.ctx, owner, repoName, n, &github.PullRequestBranchUpdateOptions{ExpectedHeadSHA: github.String(head)})
	require.Error(t, err, "go-github reports a 202 as AcceptedError")
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, []string{"push", "pull_request.synchronize"}, e.hook.kinds())
	newHead := e.repo.PR(n).GetHead().GetSHA()
	assert.True(t, e.repo.isAncestor(base, newHead))
	assert.True(t, e.repo.isAncestor(head, newHead))

	// The new head needs its own checks.
	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, n, "", nil)
	assert.Equal(t, `Required status check "ci" is expected.`, messageOf(err))
	require.NoError(t, e.repo.SetCheck(newHead, "ci", "completed", "success"))
	_, _, err = e.gh.PullRequests.Merge(e.ctx, owner, repoName, n, "", nil)
	require.NoError(t, err)
}
