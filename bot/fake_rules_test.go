package bot

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFakeGitHubRules: the in-memory fake keeps the rules of GitHub that
// the bot depends on, with the errors ghapi gives for them, and records
// every call.
func TestFakeGitHubRules(t *testing.T) {
	ctx := context.Background()
	now := func() time.Time { return time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC) }
	repo := ghapi.RepoRef{Owner: coreOwner, Name: coreRepo}
	setup := func() *fakeGitHub {
		f := newFakeGitHub(coreOwner, coreRepo, fakeBotLogin, now)
		f.addWorkflow("agent.yml")
		f.setRole("alice", "write")
		f.openIssue("alice", "one", "")
		return f
	}
	tests := []struct {
		name string
		do   func(f *fakeGitHub) error
		want error  // errors.Is target; nil: success
		msg  string // a substring of the error, when want is nil but it fails
	}{
		{"missing issue", func(f *fakeGitHub) error { _, err := f.GetIssue(ctx, repo, 9); return err }, ghapi.ErrNotFound, ""},
		{"other repository", func(f *fakeGitHub) error {
			_, err := f.GetIssue(ctx, ghapi.RepoRef{Owner: "acme", Name: "other"}, 1)
			return err
		}, ghapi.ErrNotFound, ""},
		{"missing comment", func(f *fakeGitHub) error { _, err := f.EditComment(ctx, repo, 5, "x"); return err }, ghapi.ErrNotFound, ""},
		{"comment too long", func(f *fakeGitHub) error {
			_, err := f.CreateComment(ctx, repo, 1, strings.Repeat("x", maxBody+1))
			return err
		}, nil, "body is too long"},
		{"unknown user's permission", func(f *fakeGitHub) error { _, err := f.GetPermission(ctx, repo, "bob"); return err }, ghapi.ErrNotFound, ""},
		{"missing file", func(f *fakeGitHub) error { _, err := f.GetFile(ctx, repo, "nope.txt", ""); return err }, ghapi.ErrNotFound, ""},
		{"file on a missing branch", func(f *fakeGitHub) error { _, err := f.GetFile(ctx, repo, "README.md", "nope"); return err }, ghapi.ErrNotFound, ""},
		{"missing ref", func(f *fakeGitHub) error { _, err := f.GetRef(ctx, repo, "heads/nope"); return err }, ghapi.ErrNotFound, ""},
		{"existing ref", func(f *fakeGitHub) error {
			sha, _ := f.GetRef(ctx, repo, "heads/main")
			return f.CreateRef(ctx, repo, "refs/heads/main", sha)
		}, ghapi.ErrExists, ""},
		{"ref name without two slashes", func(f *fakeGitHub) error {
			sha, _ := f.GetRef(ctx, repo, "heads/main")
			return f.CreateRef(ctx, repo, "refs/x", sha)
		}, nil, "at least two slashes"},
		{"ref to a missing object", func(f *fakeGitHub) error {
			return f.CreateRef(ctx, repo, "refs/heads/x", strings.Repeat("a", 40))
		}, nil, "Object does not exist"},
		{"PR without commits", func(f *fakeGitHub) error {
			sha, _ := f.GetRef(ctx, repo, "heads/main")
			require.NoError(t, f.CreateRef(ctx, repo, "refs/heads/feature", sha))
			_, err := f.CreatePR(ctx, repo, ghapi.NewPR{Title: "t", Head: "feature", Base: "main"})
			return err
		}, ghapi.ErrNoCommits, ""},
		{"second open PR for a head", func(f *fakeGitHub) error {
			f.push("feature", map[string]string{"a.txt": "a"})
			_, err := f.CreatePR(ctx, repo, ghapi.NewPR{Title: "t", Head: "feature", Base: "main"})
			require.NoError(t, err)
			_, err = f.CreatePR(ctx, repo, ghapi.NewPR{Title: "t2", Head: "feature", Base: "main"})
			return err
		}, ghapi.ErrExists, ""},
		{"PR from a missing branch", func(f *fakeGitHub) error {
			_, err := f.CreatePR(ctx, repo, ghapi.NewPR{Title: "t", Head: "nope", Base: "main"})
			return err
		}, nil, "422"},
		{"dispatch of a missing workflow", func(f *fakeGitHub) error {
			return f.DispatchWorkflow(ctx, repo, "nope.yml", "main", nil)
		}, ghapi.ErrNotFound, ""},
		{"dispatch on a missing ref", func(f *fakeGitHub) error {
			return f.DispatchWorkflow(ctx, repo, "agent.yml", "nope", nil)
		}, nil, "No ref found"},
		{"cancel a completed run", func(f *fakeGitHub) error {
			require.NoError(t, f.DispatchWorkflow(ctx, repo, "agent.yml", "main", nil))
			require.NoError(t, f.CancelRun(ctx, repo, 1))
			return f.CancelRun(ctx, repo, 1)
		}, nil, "409"},
		{"invalid issue state", func(f *fakeGitHub) error {
			s := "merged"
			return f.EditIssue(ctx, repo, 1, ghapi.IssueEdit{State: &s})
		}, nil, "422"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup()
			err := tt.do(f)
			require.Error(t, err)
			if tt.want != nil {
				assert.True(t, errors.Is(err, tt.want), "%v is not %v", err, tt.want)
			} else {
				assert.Contains(t, err.Error(), tt.msg)
				for _, sentinel := range []error{ghapi.ErrNotFound, ghapi.ErrExists, ghapi.ErrNoCommits} {
					assert.False(t, errors.Is(err, sentinel), "%v", err)
				}
			}
			calls := f.recorded(false)
			require.NotEmpty(t, calls)
			assert.Equal(t, err, calls[len(calls)-1].Err, "the failed call is recorded with its error")
		})
	}

	t.Run("labels are replaced as a set", func(t *testing.T) {
		f := setup()
		require.NoError(t, f.ReplaceLabels(ctx, repo, 1, []string{"a", "b", "a"}))
		is, err := f.GetIssue(ctx, repo, 1)
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, is.Labels)
		require.NoError(t, f.EditIssue(ctx, repo, 1, ghapi.IssueEdit{Labels: &[]string{"c"}}))
		is, _ = f.GetIssue(ctx, repo, 1)
		assert.Equal(t, []string{"c"}, is.Labels)
		require.NoError(t, f.ReplaceLabels(ctx, repo, 1, nil))
		is, _ = f.GetIssue(ctx, repo, 1)
		assert.Empty(t, is.Labels)
	})
	t.Run("issues and PRs share numbers; lists are newest first", func(t *testing.T) {
		f := setup()
		f.push("a", map[string]string{"a.txt": "a"})
		f.push("b", map[string]string{"b.txt": "b"})
		pa, err := f.CreatePR(ctx, repo, ghapi.NewPR{Title: "A", Head: "a", Base: "main"})
		require.NoError(t, err)
		pb, err := f.CreatePR(ctx, repo, ghapi.NewPR{Title: "B", Head: "b", Base: "main"})
		require.NoError(t, err)
		assert.Equal(t, []int{2, 3}, []int{pa.Number, pb.Number})
		prs, err := f.ListPRs(ctx, repo)
		require.NoError(t, err)
		require.Len(t, prs, 2)
		assert.Equal(t, "B", prs[0].Title)
		got, ok, err := f.FindPR(ctx, repo, "a")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, 2, got.Number)
		_, ok, err = f.FindPR(ctx, repo, "c")
		require.NoError(t, err)
		assert.False(t, ok)
		require.NoError(t, f.ReplaceLabels(ctx, repo, 3, []string{"x"}))
		require.NoError(t, f.ReplaceLabels(ctx, repo, 1, []string{"x"}))
		list, err := f.ListIssuesByLabel(ctx, repo, "x")
		require.NoError(t, err)
		require.Len(t, list, 2, "the issues list includes pull requests")
		assert.Equal(t, 3, list[0].Number)
		assert.True(t, list[0].IsPR)
		require.NoError(t, f.CloseIssue(ctx, repo, 3))
		p, err := f.GetPR(ctx, repo, 3)
		require.NoError(t, err)
		assert.Equal(t, "closed", p.State)
		list, _ = f.ListIssuesByLabel(ctx, repo, "x")
		assert.Len(t, list, 1, "only open issues")
	})
	t.Run("effects are recorded in order", func(t *testing.T) {
		f := setup()
		_, err := f.GetIssue(ctx, repo, 1)
		require.NoError(t, err)
		c, err := f.CreateComment(ctx, repo, 1, "hello")
		require.NoError(t, err)
		assert.Equal(t, fakeBotLogin, c.Author)
		_, err = f.EditComment(ctx, repo, c.ID, "hello again")
		require.NoError(t, err)
		require.NoError(t, f.DispatchWorkflow(ctx, repo, "agent.yml", "main", map[string]string{"step": "s1", "a": "b"}))
		var ops []string
		for _, c := range f.recorded(true) {
			ops = append(ops, c.Op+" "+c.Args)
		}
		assert.Equal(t, []string{"CreateComment 1 hello", "EditComment 1 hello again", "DispatchWorkflow agent.yml main a=b,step=s1"}, ops)
		assert.Len(t, f.recorded(false), 4)
		runs, err := f.ListRuns(ctx, repo, "agent.yml")
		require.NoError(t, err)
		require.Len(t, runs, 1)
		assert.Equal(t, "queued", runs[0].Status)
	})
}
