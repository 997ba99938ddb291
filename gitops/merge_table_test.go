package gitops

import (
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lines makes a file of n numbered lines starting at from, so that two
// such files are similar enough to be renames of each other.
func lines(tag string, from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, "%s line %d\n", tag, i)
	}
	return b.String()
}

// gitlink is a submodule entry in commitState's file maps.
func gitlink(commit string) string { return "\x00gitlink " + commit }

// commitState commits files (contents, or gitlinks) on the current
// branch.
func commitState(t *testing.T, dir string, files map[string]string, msg string) string {
	t.Helper()
	args := []string{"commit-tree", indexTree(t, dir, files), "-m", msg}
	if head, code, _ := runGitCode(t, dir, "rev-parse", "-q", "--verify", "HEAD"); code == 0 {
		args = append(args, "-p", strings.TrimSpace(head))
	}
	c := strings.TrimSpace(runGit(t, dir, args...))
	runGit(t, dir, "update-ref", "HEAD", c)
	return c
}

// indexTree writes a tree holding exactly files.
func indexTree(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	runGit(t, dir, "rm", "-r", "-q", "--cached", "--ignore-unmatch", ".")
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		c := files[p]
		if commit, ok := strings.CutPrefix(c, "\x00gitlink "); ok {
			runGit(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+commit+","+p)
			continue
		}
		blob := hashObject(t, dir, c)
		runGit(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+p)
	}
	return strings.TrimSpace(runGit(t, dir, "write-tree"))
}

func hashObject(t *testing.T, dir, content string) string {
	t.Helper()
	cmd := exec.Command("git", "hash-object", "-w", "--stdin")
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	cmd.Stdin = strings.NewReader(content)
	out, err := cmd.Output()
	require.NoError(t, err, "git hash-object")
	return strings.TrimSpace(string(out))
}

// with returns files changed by edits; an empty value removes a path.
func with(files map[string]string, edits map[string]string) map[string]string {
	out := make(map[string]string, len(files)+len(edits))
	for p, c := range files {
		out[p] = c
	}
	for p, c := range edits {
		if c == "" {
			delete(out, p)
		} else {
			out[p] = c
		}
	}
	return out
}

// branches commits base on main and ours and theirs on branches of the
// same names, each a child of base.
func branches(t *testing.T, dir string, base, ours, theirs map[string]string) {
	t.Helper()
	b := commitState(t, dir, base, "base")
	runGit(t, dir, "branch", "-f", "ours", b)
	runGit(t, dir, "branch", "-f", "theirs", b)
	for _, side := range []struct {
		name  string
		files map[string]string
	}{{"ours", ours}, {"theirs", theirs}} {
		runGit(t, dir, "symbolic-ref", "HEAD", "refs/heads/"+side.name)
		commitState(t, dir, side.files, side.name)
	}
}

// TestThreeWayMergeCasesAgreeWithGit checks hand-made merges of the hard
// kinds against git merge-tree: verdict, tree when clean, conflicting
// paths otherwise.
func TestThreeWayMergeCasesAgreeWithGit(t *testing.T) {
	requireGit(t)
	a, b, c := lines("a", 0, 20), lines("b", 0, 20), lines("c", 0, 20)
	base := map[string]string{"a.txt": a, "b.txt": b, "keep.txt": c}
	dirBase := map[string]string{"old/x.txt": a, "old/y.txt": b, "old/z.txt": c, "other/o.txt": lines("o", 0, 9)}
	moveOld := with(dirBase, map[string]string{
		"old/x.txt": "", "old/y.txt": "", "old/z.txt": "",
		"new/x.txt": a, "new/y.txt": b, "new/z.txt": c,
	})
	cases := []struct {
		name string
		// setup builds branches ours and theirs in dir.
		setup func(t *testing.T, dir string)
	}{
		{"file/dir: ours adds a file where theirs adds a directory", func(t *testing.T, dir string) {
			branches(t, dir, base,
				with(base, map[string]string{"p": "file\n"}),
				with(base, map[string]string{"p/q.txt": "in dir\n"}))
		}},
		{"file/dir: ours replaces a directory by a file, theirs edits in it", func(t *testing.T, dir string) {
			bb := with(base, map[string]string{"d/x.txt": a})
			branches(t, dir, bb,
				with(bb, map[string]string{"d/x.txt": "", "d": "now a file\n"}),
				with(bb, map[string]string{"d/x.txt": a + "more\n"}))
		}},
		{"file/dir: theirs replaces a file by a directory, ours untouched", func(t *testing.T, dir string) {
			branches(t, dir, base, with(base, map[string]string{"keep.txt": c + "x\n"}),
				with(base, map[string]string{"a.txt": "", "a.txt/inner": a}))
		}},
		{"rename/add", func(t *testing.T, dir string) {
			branches(t, dir, base,
				with(base, map[string]string{"a.txt": "", "moved.txt": a}),
				with(base, map[string]string{"moved.txt": lines("other", 0, 20)}))
		}},
		{"rename/rename(2to1)", func(t *testing.T, dir string) {
			branches(t, dir, base,
				with(base, map[string]string{"a.txt": "", "same.txt": a}),
				with(base, map[string]string{"b.txt": "", "same.txt": b}))
		}},
		{"rename/rename(1to2)", func(t *testing.T, dir string) {
			branches(t, dir, base,
				with(base, map[string]string{"a.txt": "", "a-ours.txt": a}),
				with(base, map[string]string{"a.txt": "", "a-theirs.txt": a}))
		}},
		{"rename/rename(1to1) with edits on both sides", func(t *testing.T, dir string) {
			branches(t, dir, base,
				with(base, map[string]string{"a.txt": "", "z.txt": "first\n" + a}),
				with(base, map[string]string{"a.txt": "", "z.txt": a + "last\n"}))
		}},
		{"submodule: both sides move the gitlink differently", func(t *testing.T, dir string) {
			bb := with(base, map[string]string{"sub": gitlink(strings.Repeat("1", 40))})
			branches(t, dir, bb,
				with(bb, map[string]string{"sub": gitlink(strings.Repeat("2", 40))}),
				with(bb, map[string]string{"sub": gitlink(strings.Repeat("3", 40))}))
		}},
		{"submodule: both sides move the gitlink alike", func(t *testing.T, dir string) {
			bb := with(base, map[string]string{"sub": gitlink(strings.Repeat("1", 40))})
			branches(t, dir, bb,
				with(bb, map[string]string{"sub": gitlink(strings.Repeat("2", 40)), "a.txt": a + "x\n"}),
				with(bb, map[string]string{"sub": gitlink(strings.Repeat("2", 40))}))
		}},
		{"submodule: one side moves the gitlink, the other deletes it", func(t *testing.T, dir string) {
			bb := with(base, map[string]string{"sub": gitlink(strings.Repeat("1", 40))})
			branches(t, dir, bb,
				with(bb, map[string]string{"sub": gitlink(strings.Repeat("2", 40))}),
				with(bb, map[string]string{"sub": ""}))
		}},
		{"criss-cross: two merge bases, clean", func(t *testing.T, dir string) {
			crissCross(t, dir, base,
				map[string]string{"a.txt": "ours first\n" + a},
				map[string]string{"b.txt": b + "theirs first\n"},
				map[string]string{"keep.txt": "ours again\n" + c},
				map[string]string{"a.txt": "ours first\n" + a + "theirs again\n"})
		}},
		{"criss-cross: two merge bases, conflicting", func(t *testing.T, dir string) {
			crissCross(t, dir, base,
				map[string]string{"a.txt": "ours first\n" + a},
				map[string]string{"b.txt": b + "theirs first\n"},
				map[string]string{"b.txt": b + "ours second\n"},
				map[string]string{"b.txt": b + "theirs second\n"})
		}},
		{"criss-cross: merge bases that conflict with each other", func(t *testing.T, dir string) {
			bLines := strings.SplitAfter(b, "\n")
			edit := func(s string) string {
				return strings.Join(bLines[:10], "") + s + "\n" + strings.Join(bLines[11:], "")
			}
			crissCross(t, dir, base,
				map[string]string{"b.txt": edit("ours first")},
				map[string]string{"b.txt": edit("theirs first")},
				map[string]string{"b.txt": edit("ours first") + "ours second\n"},
				map[string]string{"a.txt": a + "theirs second\n"})
		}},
		{"directory rename: theirs adds a file in the directory ours moved", func(t *testing.T, dir string) {
			branches(t, dir, dirBase, moveOld,
				with(dirBase, map[string]string{"old/added.txt": "added\n", "old/x.txt": a + "edit\n"}))
		}},
		{"directory rename: ours adds a file in the directory theirs moved", func(t *testing.T, dir string) {
			branches(t, dir, dirBase,
				with(dirBase, map[string]string{"old/added.txt": "added\n"}), moveOld)
		}},
		{"directory rename: theirs renames a file into the moved directory", func(t *testing.T, dir string) {
			branches(t, dir, dirBase, moveOld,
				with(dirBase, map[string]string{"other/o.txt": "", "old/o.txt": lines("o", 0, 9)}))
		}},
		{"directory rename: a file is in the way", func(t *testing.T, dir string) {
			bb := with(dirBase, map[string]string{"new/added.txt": "there\n"})
			branches(t, dir, bb, with(moveOld, map[string]string{"new/added.txt": "there\n"}),
				with(bb, map[string]string{"old/added.txt": "added\n"}))
		}},
		{"directory rename: split between two directories", func(t *testing.T, dir string) {
			branches(t, dir, dirBase,
				with(dirBase, map[string]string{"old/x.txt": "", "old/y.txt": "", "old/z.txt": "",
					"one/x.txt": a, "two/y.txt": b}),
				with(dirBase, map[string]string{"old/added.txt": "added\n"}))
		}},
		{"directory rename: both sides move the directory", func(t *testing.T, dir string) {
			branches(t, dir, dirBase, moveOld,
				with(dirBase, map[string]string{"old/x.txt": "", "old/y.txt": "", "old/z.txt": "",
					"elsewhere/x.txt": a, "elsewhere/y.txt": b, "elsewhere/z.txt": c}))
		}},
		{"directory rename: to the root, with a nested directory", func(t *testing.T, dir string) {
			bb := map[string]string{"src/pkg/f.txt": a, "src/g.txt": b, "top.txt": c}
			branches(t, dir, bb,
				map[string]string{"pkg/f.txt": a, "g.txt": b, "top.txt": c},
				with(bb, map[string]string{"src/new.txt": "new\n", "src/pkg/new2.txt": "new2\n"}))
		}},
		{"directory emptied by deletions only: no rename", func(t *testing.T, dir string) {
			branches(t, dir, dirBase,
				with(dirBase, map[string]string{"old/x.txt": "", "old/y.txt": "", "old/z.txt": ""}),
				with(dirBase, map[string]string{"old/added.txt": "added\n"}))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := initRepo(t)
			tc.setup(t, dir)
			wantTree, wantClean, wantConflicts, msgs := gitMergeTreeMessages(t, dir, "ours", "theirs")
			repo, err := git.PlainOpen(dir)
			require.NoError(t, err)
			ours := strings.TrimSpace(runGit(t, dir, "rev-parse", "ours"))
			theirs := strings.TrimSpace(runGit(t, dir, "rev-parse", "theirs"))
			res, err := ThreeWayMergeWith(repo, plumbing.NewHash(ours), plumbing.NewHash(theirs), MergeOptions{})
			require.NoError(t, err)
			t.Logf("git: clean %v, conflicts %v\n%s", wantClean, wantConflicts, msgs)
			require.Equal(t, wantClean, res.Clean, "verdict; git says:\n%s\nconflicts %v, ours %v", msgs, wantConflicts, res.Conflicts)
			if wantClean {
				assert.Equal(t, wantTree, res.Tree.String(), "tree of a clean merge; git says:\n%s", msgs)
			} else {
				assert.ElementsMatch(t, wantConflicts, res.Conflicts, "conflicting paths; git says:\n%s", msgs)
			}
		})
	}
}

// crissCross builds a history where ours and theirs have two merge
// bases: each side's first commit is merged into the other, then each
// side commits again.
func crissCross(t *testing.T, dir string, base, ours1, theirs1, ours2, theirs2 map[string]string) {
	t.Helper()
	b := commitState(t, dir, base, "base")
	o1State, t1State := with(base, ours1), with(base, theirs1)
	runGit(t, dir, "update-ref", "HEAD", b)
	o1 := commitState(t, dir, o1State, "ours 1")
	runGit(t, dir, "update-ref", "HEAD", b)
	t1 := commitState(t, dir, t1State, "theirs 1")
	merged := with(o1State, theirs1)
	mergeCommit := func(parent1, parent2 string, files map[string]string, msg string) string {
		return strings.TrimSpace(runGit(t, dir, "commit-tree", indexTree(t, dir, files), "-p", parent1, "-p", parent2, "-m", msg))
	}
	o2 := mergeCommit(o1, t1, merged, "ours merges theirs")
	t2 := mergeCommit(t1, o1, merged, "theirs merges ours")
	runGit(t, dir, "update-ref", "HEAD", o2)
	o3 := commitState(t, dir, with(merged, ours2), "ours 2")
	runGit(t, dir, "update-ref", "HEAD", t2)
	t3 := commitState(t, dir, with(merged, theirs2), "theirs 2")
	runGit(t, dir, "branch", "-f", "ours", o3)
	runGit(t, dir, "branch", "-f", "theirs", t3)
	bases := strings.Fields(runGit(t, dir, "merge-base", "--all", "ours", "theirs"))
	require.Len(t, bases, 2, "criss-cross history must have two merge bases")
}
