package gitops

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConflictMarkersAgreeWithGit compares conflicted files, markers and
// their labels included, with the files git merge-tree writes: labels are
// the branch names, or branch:path when a rename put the three versions
// at different paths.
func TestConflictMarkersAgreeWithGit(t *testing.T) {
	requireGit(t)
	a := lines("a", 0, 20)
	edit := func(s, from, to string) string { return strings.Replace(s, from, to, 1) }
	aOurs := edit(a, "a line 10\n", "a line 10 ours\n")
	aTheirs := edit(a, "a line 10\n", "a line 10 theirs\n")
	base := map[string]string{"a.txt": a, "keep.txt": lines("k", 0, 5)}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"both edit one line", func(t *testing.T, dir string) {
			branches(t, dir, base, with(base, map[string]string{"a.txt": aOurs}), with(base, map[string]string{"a.txt": aTheirs}))
		}},
		{"ours renames, both edit", func(t *testing.T, dir string) {
			branches(t, dir, base, with(base, map[string]string{"a.txt": "", "b.txt": aOurs}), with(base, map[string]string{"a.txt": aTheirs}))
		}},
		{"theirs renames, both edit", func(t *testing.T, dir string) {
			branches(t, dir, base, with(base, map[string]string{"a.txt": aOurs}), with(base, map[string]string{"a.txt": "", "sub/b.txt": aTheirs}))
		}},
		{"both rename the same way, both edit", func(t *testing.T, dir string) {
			branches(t, dir, base, with(base, map[string]string{"a.txt": "", "b.txt": aOurs}), with(base, map[string]string{"a.txt": "", "b.txt": aTheirs}))
		}},
		{"criss-cross: the bases conflict too", func(t *testing.T, dir string) {
			crissCross(t, dir, base,
				map[string]string{"a.txt": edit(a, "a line 3\n", "a line 3 o1\n")},
				map[string]string{"a.txt": edit(a, "a line 3\n", "a line 3 t1\n")},
				map[string]string{"a.txt": edit(aOurs, "a line 3\n", "a line 3 o1\n")},
				map[string]string{"a.txt": edit(aTheirs, "a line 3\n", "a line 3 t1\n")})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := initRepo(t)
			tc.setup(t, dir)
			tree, clean, conflicts := gitMergeTree(t, dir, "ours", "theirs")
			require.False(t, clean, "the case must conflict")
			repo, err := git.PlainOpen(dir)
			require.NoError(t, err)
			ours := strings.TrimSpace(runGit(t, dir, "rev-parse", "ours"))
			theirs := strings.TrimSpace(runGit(t, dir, "rev-parse", "theirs"))
			res, err := ThreeWayMergeWith(repo, plumbing.NewHash(ours), plumbing.NewHash(theirs), MergeOptions{OursLabel: "ours", TheirsLabel: "theirs"})
			require.NoError(t, err)
			require.False(t, res.Clean)
			require.Equal(t, conflicts, res.Conflicts)
			for _, p := range conflicts {
				want := runGit(t, dir, "cat-file", "blob", tree+":"+p)
				got, ok := ourContent(t, repo, res, plumbing.NewHash(ours), p)
				require.True(t, ok, p)
				assert.Equal(t, want, string(got), p)
			}
		})
	}
}
