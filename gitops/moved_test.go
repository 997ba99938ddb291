package gitops

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/testgate"
)

// Issue 28: Land merges exactly the reviewed head of the group branch, or
// reports where the branch is instead, as a value; the base does not move.
func TestLandMergesOnlyTheReviewedHead(t *testing.T) {
	tests := []struct {
		name string
		// push: alice pushes to the group branch after review, before the
		// merge starts, or from the gate (while it runs).
		push      bool
		fromGate  bool
		want      LandOutcome
		movedHead bool
	}{
		{name: "the branch is at the reviewed head: it lands", want: MergeSuccess},
		{name: "pushed after review, before the merge", push: true, want: MergeHeadMoved, movedHead: true},
		{name: "pushed while the gate ran", push: true, fromGate: true, want: MergeHeadMoved, movedHead: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newRemote(t)
			reviewed := f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
			other := t.TempDir()
			runGit(t, other, "clone", "-q", "-b", "bazinga/s1-A", f.bare, ".")
			push := fmt.Sprintf(`cd %s && echo pushed > c.txt && git add c.txt && `+
				`git -c user.name=alice -c user.email=7+alice@users.noreply.github.com commit -qm pushed && git push -q origin HEAD:bazinga/s1-A`, other)
			gate := "true"
			switch {
			case tc.push && tc.fromGate:
				mark := filepath.Join(t.TempDir(), "pushed")
				gate = fmt.Sprintf(`if [ ! -f %[1]s ]; then touch %[1]s; %[2]s; fi`, mark, push)
			case tc.push:
				// As alice, with her own identity (the tests' git
				// environment would name a fixed committer).
				cmd := exec.Command("sh", "-c", push)
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s", out)
			}
			before := f.head(t, "main")
			res, err := Land(context.Background(), LandRequest{
				Remote: Remote{URL: f.bare}, Base: "main", Branch: "bazinga/s1-A", Head: plumbing.NewHash(reviewed),
				Gate: testgate.GateConfig{Command: gate, Timeout: time.Minute},
			})
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Outcome, res.Reason)
			if tc.want == MergeSuccess {
				assert.Equal(t, res.Commit.String(), f.head(t, "main"))
				assert.Equal(t, reviewed, f.head(t, res.Commit.String()+"^2"), "the reviewed head is what merged")
				return
			}
			assert.Equal(t, before, f.head(t, "main"), "nothing landed")
			require.NotNil(t, res.Moved)
			assert.Equal(t, reviewed, res.Moved.Reviewed.String())
			assert.Equal(t, f.head(t, "bazinga/s1-A"), res.Moved.Head.String())
			assert.Equal(t, "alice", res.Moved.Login, "the no-reply address names the login")
			assert.Equal(t, "alice <7+alice@users.noreply.github.com>", res.Moved.Author)
			assert.Contains(t, res.Summary(), "the branch moved from "+reviewed[:12]+" to "+res.Moved.Head.String()[:12])
			assert.Equal(t, 1, res.Attempts, "a moved branch is not retried")
		})
	}
}

func TestNoReplyLogin(t *testing.T) {
	tests := []struct {
		email, login string
	}{
		{"alice@users.noreply.github.com", "alice"},
		{"12345+alice-b@users.noreply.github.com", "alice-b"},
		{"bob@users.noreply.ghe.example.com", "bob"},
		{"alice@example.com", ""},
		{"noreply@github.com", ""},
		{"-bad@users.noreply.github.com", ""},
	}
	for _, tc := range tests {
		got, ok := NoReplyLogin(tc.email)
		assert.Equal(t, tc.login, got, tc.email)
		assert.Equal(t, tc.login != "", ok, tc.email)
	}
}

// The committer made the head (an amend, a rebase); a commit made in
// GitHub's web editor is committed by GitHub, and its author made it.
func TestDescribeMove(t *testing.T) {
	repo, err := git.Init(memory.NewStorage(), nil)
	require.NoError(t, err)
	commit := func(author, committer object.Signature) plumbing.Hash {
		obj := repo.Storer.NewEncodedObject()
		c := &object.Commit{Author: author, Committer: committer, Message: "x\n", TreeHash: plumbing.ZeroHash}
		require.NoError(t, c.Encode(obj))
		h, err := repo.Storer.SetEncodedObject(obj)
		require.NoError(t, err)
		return h
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	carol := object.Signature{Name: "Carol", Email: "carol@example.com", When: when}
	alice := object.Signature{Name: "alice", Email: "alice@users.noreply.github.com", When: when}
	web := object.Signature{Name: "GitHub", Email: "noreply@github.com", When: when}
	reviewed := plumbing.NewHash("1111111111111111111111111111111111111111")

	h := commit(carol, alice)
	assert.Equal(t, BranchMove{Reviewed: reviewed, Head: h, Author: "alice <alice@users.noreply.github.com>", Login: "alice"}, DescribeMove(repo, reviewed, h))
	h = commit(alice, web)
	assert.Equal(t, BranchMove{Reviewed: reviewed, Head: h, Author: "alice <alice@users.noreply.github.com>", Login: "alice"}, DescribeMove(repo, reviewed, h))
	h = commit(alice, carol)
	assert.Equal(t, BranchMove{Reviewed: reviewed, Head: h, Author: "Carol <carol@example.com>"}, DescribeMove(repo, reviewed, h))
	missing := plumbing.NewHash("2222222222222222222222222222222222222222")
	assert.Equal(t, BranchMove{Reviewed: reviewed, Head: missing}, DescribeMove(repo, reviewed, missing), "a commit not at hand: who made it is not known")
}
