package stepjob

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// landFake is GitHub as the land job sees it, recording the merges asked.
type landFake struct {
	base     string
	pr       ghapi.PR
	found    bool
	settings ghapi.RepoSettings
	rules    ghapi.BranchRules
	mergeErr error
	merged   []string // "sha method"
}

func (f *landFake) GetRef(context.Context, ghapi.RepoRef, string) (string, error) { return f.base, nil }
func (f *landFake) FindPR(context.Context, ghapi.RepoRef, string) (ghapi.PR, bool, error) {
	return f.pr, f.found, nil
}
func (f *landFake) RepoSettings(context.Context, ghapi.RepoRef) (ghapi.RepoSettings, error) {
	return f.settings, nil
}
func (f *landFake) BranchRules(context.Context, ghapi.RepoRef, string) (ghapi.BranchRules, error) {
	return f.rules, nil
}
func (f *landFake) MergePR(_ context.Context, _ ghapi.RepoRef, _ int, sha, method, _ string) (string, error) {
	f.merged = append(f.merged, sha+" "+method)
	if f.mergeErr != nil {
		return "", f.mergeErr
	}
	return "c0ffee0000000000000000000000000000000000", nil
}

const (
	tBase = "1111111111111111111111111111111111111111"
	tHead = "2222222222222222222222222222222222222222"
)

func TestPRMergerMethods(t *testing.T) {
	all := ghapi.RepoSettings{AllowMerge: true, AllowSquash: true, AllowRebase: true}
	squashOnly := ghapi.RepoSettings{AllowSquash: true}
	linear := ghapi.BranchRules{PushRules: []ghapi.Rule{{Kind: "required_linear_history", Source: "ruleset 7"}}}
	tests := []struct {
		name     string
		pref     pipeline.PRMergeMethod
		settings ghapi.RepoSettings
		rules    ghapi.BranchRules
		method   string // asked of GitHub; "" none
		reason   string // a MERGE_BLOCKED reason
	}{
		{"auto takes a merge commit first", pipeline.PRMethodAuto, all, ghapi.BranchRules{}, "merge", ""},
		{"auto on a squash-only repository squashes", pipeline.PRMethodAuto, squashOnly, ghapi.BranchRules{}, "squash", ""},
		{"empty (an old state) is auto", "", ghapi.RepoSettings{AllowRebase: true}, ghapi.BranchRules{}, "rebase", ""},
		{"auto skips merge commits on a linear history", pipeline.PRMethodAuto, all, linear, "squash", ""},
		{"a preference the repository allows", pipeline.PRMethodRebase, all, ghapi.BranchRules{}, "rebase", ""},
		{"a preference the repository forbids names both", pipeline.PRMethodRebase, squashOnly, ghapi.BranchRules{}, "",
			"merge.pr_method is rebase, but the repository allows only squash merging"},
		{"merge commits on a linear history name the rule", pipeline.PRMethodMerge, all, linear, "",
			"merge.pr_method is merge, but a linear history is required (no merge commits) (ruleset 7)"},
		{"nothing usable", pipeline.PRMethodAuto, ghapi.RepoSettings{AllowMerge: true}, linear, "",
			"the repository allows no merge method bazinga can use (allowed: merge; a linear history is required"},
		{"signed commits take no rebase", pipeline.PRMethodRebase, all,
			ghapi.BranchRules{PushRules: []ghapi.Rule{{Kind: "required_signatures", Source: "ruleset 2"}}}, "",
			"merge.pr_method is rebase, but commits must be signed (ruleset 2)"},
		{"a ruleset's allowed methods", pipeline.PRMethodAuto, all,
			ghapi.BranchRules{MergeMethods: []string{"rebase"}, PushRules: []ghapi.Rule{{Kind: "pull_request", Source: "ruleset 5"}}}, "rebase", ""},
		{"a preference a ruleset does not allow", pipeline.PRMethodSquash, all,
			ghapi.BranchRules{MergeMethods: []string{"rebase"}, PushRules: []ghapi.Rule{{Kind: "pull_request", Source: "ruleset 5"}}}, "",
			"merge.pr_method is squash, but squash merging is not among the methods the pull request rule allows (ruleset 5)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &landFake{base: tBase, found: true, pr: ghapi.PR{Number: 4, State: "open"}, settings: tc.settings, rules: tc.rules}
			m := prMerger{gh: f, base: "main", pref: tc.pref, title: func(string) string { return "t" }}
			fr, _, err := m.land(context.Background(), "bazinga/1-A", tBase, tHead)
			require.NoError(t, err)
			if tc.reason != "" {
				assert.Equal(t, gitops.MergeBlocked, fr.Outcome)
				assert.Contains(t, fr.Reason, tc.reason)
				assert.Empty(t, f.merged, "nothing was asked of GitHub")
				return
			}
			assert.Equal(t, gitops.MergeSuccess, fr.Outcome)
			assert.Equal(t, plumbing.NewHash("c0ffee0000000000000000000000000000000000"), fr.Commit, "the merged commit is learned")
			assert.Equal(t, []string{tHead + " " + tc.method}, f.merged, "merged at exactly the tested head")
		})
	}
}

func TestPRMergerGuards(t *testing.T) {
	all := ghapi.RepoSettings{AllowMerge: true, AllowSquash: true, AllowRebase: true}
	open := ghapi.PR{Number: 4, State: "open"}
	tests := []struct {
		name   string
		f      landFake
		retry  bool
		out    gitops.LandOutcome
		reason string
		commit string
	}{
		{name: "the base moved since the gate: test again", f: landFake{base: "3333333333333333333333333333333333333333", found: true, pr: open}, retry: true},
		{name: "no pull request", f: landFake{base: tBase}, out: gitops.MergeBlocked, reason: "has no open pull request"},
		{name: "a draft", f: landFake{base: tBase, found: true, pr: ghapi.PR{Number: 4, State: "open", Draft: true}},
			out: gitops.MergeBlocked, reason: "pull request #4 is a draft"},
		{name: "merged by an earlier attempt", f: landFake{base: tBase, found: true,
			pr: ghapi.PR{Number: 4, State: "closed", Merged: true, MergeCommitSHA: "5555555555555555555555555555555555555555"}},
			out: gitops.MergeSuccess, commit: "5555555555555555555555555555555555555555"},
		// Issue 28: a head that moved after review is a fact to report, never
		// a retry (the retried gate would test, and land, what was pushed).
		{name: "the head moved (409)", f: landFake{base: tBase, found: true, pr: open, settings: all,
			mergeErr: &ghapi.MergeRefusal{Status: http.StatusConflict, Message: "Head branch was modified. Review and try the merge again."}},
			out: gitops.MergeHeadMoved},
		{name: "the base moved (405)", f: landFake{base: tBase, found: true, pr: open, settings: all,
			mergeErr: &ghapi.MergeRefusal{Status: http.StatusMethodNotAllowed, Message: "Base branch was modified. Review and try the merge again."}}, retry: true},
		{name: "protection refuses (405)", f: landFake{base: tBase, found: true, pr: open, settings: all,
			mergeErr: &ghapi.MergeRefusal{Status: http.StatusMethodNotAllowed, Message: "Required status check \"ci/test\" is expected."}},
			out: gitops.MergeBlocked, reason: `GitHub refused to merge pull request #4: Required status check "ci/test" is expected.`},
		{name: "strict: the head is behind the base (405)", f: landFake{base: tBase, found: true, pr: open, settings: all,
			mergeErr: &ghapi.MergeRefusal{Status: http.StatusMethodNotAllowed, Message: "Head branch is not up to date with the base branch"}},
			out: gitops.MergeBlocked, reason: "the base requires branches to be up to date before merging: update the PR's branch, or turn that setting off"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := prMerger{gh: &tc.f, base: "main", title: func(string) string { return "t" }}
			fr, _, err := m.land(context.Background(), "bazinga/1-A", tBase, tHead)
			require.NoError(t, err)
			assert.Equal(t, tc.retry, fr.Retry)
			if tc.retry {
				return
			}
			assert.Equal(t, tc.out, fr.Outcome)
			assert.Contains(t, fr.Reason, tc.reason)
			if tc.commit != "" {
				assert.Equal(t, tc.commit, fr.Commit.String())
			}
		})
	}
	t.Run("auto tries the next method when a rule it could not read refuses one", func(t *testing.T) {
		f := &methodFake{landFake: landFake{base: tBase, found: true, pr: open, settings: all}, refuse: map[string]string{
			"merge": "Merge commits are not allowed on this branch."}}
		fr, _, err := prMerger{gh: f, base: "main", title: func(string) string { return "t" }}.land(context.Background(), "b", tBase, tHead)
		require.NoError(t, err)
		assert.Equal(t, gitops.MergeSuccess, fr.Outcome)
		assert.Equal(t, []string{tHead + " merge", tHead + " squash"}, f.merged)

		f = &methodFake{landFake: landFake{base: tBase, found: true, pr: open, settings: all}, refuse: map[string]string{
			"merge": "Merge commits are not allowed on this branch.", "squash": "Merge method squash is not allowed by the ruleset.",
			"rebase": "Base branch requires signed commits. Rebase merges cannot be automatically signed by GitHub"}}
		fr, _, err = prMerger{gh: f, base: "main", title: func(string) string { return "t" }}.land(context.Background(), "b", tBase, tHead)
		require.NoError(t, err)
		assert.Equal(t, gitops.MergeBlocked, fr.Outcome)
		assert.Contains(t, fr.Reason, "GitHub refused every merge method for pull request #4 (merge: Merge commits are not allowed")
	})
	t.Run("another error is an error", func(t *testing.T) {
		f := landFake{base: tBase, found: true, pr: open, settings: all, mergeErr: errors.New("boom")}
		_, _, err := prMerger{gh: &f, base: "main", title: func(string) string { return "t" }}.land(context.Background(), "b", tBase, tHead)
		assert.ErrorContains(t, err, "boom")
	})
}

func TestPushRefusals(t *testing.T) {
	rules := ghapi.BranchRules{PushRules: []ghapi.Rule{{Kind: "pull_request", Source: "ruleset 3"}, {Kind: "required_signatures", Source: "branch protection"}}}
	got := pushRefusal("main", pushRulesOf(rules))
	assert.Equal(t, "merge.method is push, but main refuses a pushed merge commit: changes must be made through a pull request (ruleset 3); "+
		"commits must be signed (branch protection); set merge.method: pull-request in .github/bazinga.yml (bazinga then merges the tested group PR through the API)", got)
	assert.Empty(t, pushRulesOf(ghapi.BranchRules{}))

	for _, msg := range []string{
		"push: command error on refs/heads/main: protected branch hook declined\nremote: error: GH006: Protected branch update failed for refs/heads/main.",
		"remote: error: GH013: Repository rule violations found for refs/heads/main.",
	} {
		got, ok := protectedPush(errors.New(msg))
		assert.True(t, ok, msg)
		assert.NotContains(t, got, "\n")
	}
	_, ok := protectedPush(errors.New("connection reset by peer"))
	assert.False(t, ok)
}

// methodFake refuses some merge methods as GitHub does (405).
type methodFake struct {
	landFake
	refuse map[string]string
}

func (f *methodFake) MergePR(ctx context.Context, repo ghapi.RepoRef, n int, sha, method, title string) (string, error) {
	if msg, ok := f.refuse[method]; ok {
		f.merged = append(f.merged, sha+" "+method)
		return "", &ghapi.MergeRefusal{Status: http.StatusMethodNotAllowed, Message: msg}
	}
	return f.landFake.MergePR(ctx, repo, n, sha, method, title)
}

// A base requiring up-to-date heads: a head behind it is brought up to date
// (the tested merge pushed to the group branch) instead of merged, known
// from the rules beforehand or from GitHub's 405.
func TestPRMergerBringsUpToDate(t *testing.T) {
	all := ghapi.RepoSettings{AllowMerge: true, AllowSquash: true, AllowRebase: true}
	open := ghapi.PR{Number: 4, State: "open"}
	pushed := 0
	update := func(context.Context) (string, error) {
		pushed++
		return "4444444444444444444444444444444444444444", nil
	}
	t.Run("known from the rules: nothing asked of GitHub", func(t *testing.T) {
		pushed = 0
		f := &landFake{base: tBase, found: true, pr: open, settings: all, rules: ghapi.BranchRules{Strict: true}}
		m := prMerger{gh: f, base: "main", title: func(string) string { return "t" }, behind: true, update: update}
		_, updated, err := m.land(context.Background(), "b", tBase, tHead)
		require.NoError(t, err)
		assert.Equal(t, "4444444444444444444444444444444444444444", updated)
		assert.Empty(t, f.merged)
		assert.Equal(t, 1, pushed)
	})
	t.Run("told by GitHub", func(t *testing.T) {
		pushed = 0
		f := &landFake{base: tBase, found: true, pr: open, settings: all,
			mergeErr: &ghapi.MergeRefusal{Status: http.StatusMethodNotAllowed, Message: "Head branch is not up to date with the base branch"}}
		m := prMerger{gh: f, base: "main", title: func(string) string { return "t" }, behind: true, update: update}
		_, updated, err := m.land(context.Background(), "b", tBase, tHead)
		require.NoError(t, err)
		assert.NotEmpty(t, updated)
		assert.Len(t, f.merged, 1)
	})
	t.Run("told by GitHub: checks of a head behind a strict base are expected", func(t *testing.T) {
		pushed = 0
		f := &landFake{base: tBase, found: true, pr: open, settings: all,
			mergeErr: &ghapi.MergeRefusal{Status: http.StatusMethodNotAllowed, Message: `Required status check "ci/test" is expected.`}}
		m := prMerger{gh: f, base: "main", title: func(string) string { return "t" }, behind: true, update: update}
		_, updated, err := m.land(context.Background(), "b", tBase, tHead)
		require.NoError(t, err)
		assert.NotEmpty(t, updated)
		// A head that contains the base: the same refusal is about its checks.
		m.behind = false
		fr, updated, err := m.land(context.Background(), "b", tBase, tHead)
		require.NoError(t, err)
		assert.Empty(t, updated)
		assert.Equal(t, gitops.MergeBlocked, fr.Outcome)
		assert.NotContains(t, fr.Reason, "up to date")
	})
	t.Run("a head that contains the base is merged; strict or not", func(t *testing.T) {
		pushed = 0
		f := &landFake{base: tBase, found: true, pr: open, settings: all, rules: ghapi.BranchRules{Strict: true}}
		m := prMerger{gh: f, base: "main", title: func(string) string { return "t" }, update: update}
		fr, updated, err := m.land(context.Background(), "b", tBase, tHead)
		require.NoError(t, err)
		assert.Empty(t, updated)
		assert.Equal(t, gitops.MergeSuccess, fr.Outcome)
		assert.Zero(t, pushed)
	})
	t.Run("without an update (stepexec's merger) it pauses with what to do", func(t *testing.T) {
		f := &landFake{base: tBase, found: true, pr: open, settings: all, rules: ghapi.BranchRules{Strict: true}}
		m := prMerger{gh: f, base: "main", title: func(string) string { return "t" }, behind: true}
		fr, _, err := m.land(context.Background(), "b", tBase, tHead)
		require.NoError(t, err)
		assert.Equal(t, gitops.MergeBlocked, fr.Outcome)
		assert.Contains(t, fr.Reason, "its head is not up to date with main")
	})
}
