package gitops

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The merge-base walk on shallow clones of a criss-cross history
// (root - base - {o1, t1} - {o2, t2} - {o3, t3}, o2 and t2 each merging
// both firsts): git's answer when the history at hand holds it, and
// "undecided" exactly when a deeper history could change what the merge
// computes, including the merge base of the two merge bases.
func TestMergeBaseOnShallowHistory(t *testing.T) {
	requireGit(t)
	dir := initRepo(t)
	commitState(t, dir, map[string]string{"root.txt": "r\n"}, "root")
	crissCross(t, dir, map[string]string{"a.txt": "a\n"},
		map[string]string{"a.txt": "ours\n"}, map[string]string{"b.txt": "theirs\n"},
		map[string]string{"c.txt": "ours 2\n"}, map[string]string{"d.txt": "theirs 2\n"})
	rev := func(name string) plumbing.Hash {
		return plumbing.NewHash(strings.TrimSpace(runGit(t, dir, "rev-parse", name)))
	}
	o3, t3 := rev("ours"), rev("theirs")
	o1, t1 := rev("ours~1^1"), rev("theirs~1^1")
	wantBases := strings.Fields(runGit(t, dir, "merge-base", "--all", "ours", "theirs"))
	sort.Strings(wantBases)
	require.ElementsMatch(t, []string{o1.String(), t1.String()}, wantBases)

	cases := []struct {
		depth       int // 0: the whole history
		bases       []string
		basesKnown  bool // mergeBases decided
		mergeKnown  bool // mergeDecided: the bases' own merge base too
		t3InO3      bool
		t3InO3Error bool // isAncestor cannot tell
	}{
		{depth: 0, bases: wantBases, basesKnown: true, mergeKnown: true},
		{depth: 1, bases: nil, t3InO3Error: true},
		{depth: 2, bases: nil, t3InO3Error: true},
		// o1 and t1 are the boundary: the bases are known, their own
		// merge base (base) is not, so the virtual base is not either.
		{depth: 3, bases: wantBases, basesKnown: true},
		{depth: 4, bases: wantBases, basesKnown: true, mergeKnown: true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("depth %d", c.depth), func(t *testing.T) {
			clone := filepath.Join(t.TempDir(), "c")
			args := []string{"clone", "-q", "--no-single-branch", "file://" + dir, clone}
			if c.depth > 0 {
				args = append(args[:2], append([]string{"--depth", fmt.Sprint(c.depth)}, args[2:]...)...)
			}
			runGit(t, dir, args...)
			repo, err := git.PlainOpen(clone)
			require.NoError(t, err)

			g, err := newHistoryGraph(repo.Storer)
			require.NoError(t, err)
			co3, err := g.commit(o3)
			require.NoError(t, err)
			ct3, err := g.commit(t3)
			require.NoError(t, err)
			bases, decided, err := g.mergeBases(co3, ct3)
			require.NoError(t, err)
			var got []string
			for _, b := range bases {
				got = append(got, b.hash.String())
			}
			sort.Strings(got)
			assert.Equal(t, c.bases, got)
			assert.Equal(t, c.basesKnown, decided, "merge bases decided")

			ok, err := g.mergeDecidedHashes(o3, t3)
			require.NoError(t, err)
			assert.Equal(t, c.mergeKnown, ok, "merge decided")

			in, err := g.isAncestor(t3, o3)
			if c.t3InO3Error {
				require.ErrorIs(t, err, ErrShallowHistory)
			} else {
				require.NoError(t, err)
				assert.Equal(t, c.t3InO3, in)
			}
			in, err = g.isAncestor(o3, o3)
			require.NoError(t, err)
			assert.True(t, in)
			if c.depth == 0 || c.depth >= 3 {
				in, err = g.isAncestor(o1, o3)
				require.NoError(t, err)
				assert.True(t, in, "o1 is below o3")
				in, err = g.isAncestor(t1, o3)
				require.NoError(t, err)
				assert.True(t, in, "t1 is below o3 through the merge")
			}
		})
	}
}

// A base found within the history at hand is not final while a path only
// one side painted ends at the shallow boundary: more history below it
// could hold another common ancestor. Here ours also merged a separate
// line (x1-x2-x3) whose bottom a shallow clone cuts off.
func TestMergeBaseUndecidedBelowOneSidedBoundary(t *testing.T) {
	requireGit(t)
	dir := initRepo(t)
	c := commitState(t, dir, map[string]string{"a.txt": "a\n"}, "common")
	tree := indexTree(t, dir, map[string]string{"x.txt": "x\n"})
	commit := func(msg string, parents ...string) string {
		args := []string{"commit-tree", tree, "-m", msg}
		for _, p := range parents {
			args = append(args, "-p", p)
		}
		return strings.TrimSpace(runGit(t, dir, args...))
	}
	x1 := commit("x1")
	x3 := commit("x3", commit("x2", x1))
	ours, theirs := commit("ours", c, x3), commit("theirs", c)
	runGit(t, dir, "branch", "-f", "ours", ours)
	runGit(t, dir, "branch", "-f", "theirs", theirs)
	require.Equal(t, c+"\n", runGit(t, dir, "merge-base", "--all", "ours", "theirs"))

	for _, tc := range []struct {
		depth   int
		decided bool
	}{{0, true}, {2, false}, {3, false}, {5, true}} {
		t.Run(fmt.Sprintf("depth %d", tc.depth), func(t *testing.T) {
			clone := filepath.Join(t.TempDir(), "c")
			args := []string{"clone", "-q", "--no-single-branch"}
			if tc.depth > 0 {
				args = append(args, "--depth", fmt.Sprint(tc.depth))
			}
			runGit(t, dir, append(args, "file://"+dir, clone)...)
			repo, err := git.PlainOpen(clone)
			require.NoError(t, err)
			g, err := newHistoryGraph(repo.Storer)
			require.NoError(t, err)
			co, err := g.commit(plumbing.NewHash(ours))
			require.NoError(t, err)
			ct, err := g.commit(plumbing.NewHash(theirs))
			require.NoError(t, err)
			bases, decided, err := g.mergeBases(co, ct)
			require.NoError(t, err)
			require.Len(t, bases, 1)
			assert.Equal(t, c, bases[0].hash.String())
			assert.Equal(t, tc.decided, decided)
		})
	}
}
