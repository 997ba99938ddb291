package gitops

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goTestFunc renders a Go test function with a body of n statements;
// bodies repeat the same lines, as real tests do.
func goTestFunc(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "func Test%s(t *testing.T) {\n", name)
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			b.WriteString("\tif err != nil {\n\t\tt.Fatal(err)\n\t}\n")
		} else {
			fmt.Fprintf(&b, "\tx%d := run%s(%d)\n", i, name, i)
		}
	}
	b.WriteString("}\n\n")
	return b.String()
}

func goTestFile(funcs ...string) string {
	body := map[string]int{"A": 4, "B": 2, "C": 3, "New": 4}
	s := "package x\n\n"
	for _, f := range funcs {
		s += goTestFunc(f, body[f])
	}
	return s
}

// TestReorderedAdjacentTestsConflictAsGitReports is the real-history case
// where one side swaps two adjacent test functions and the other adds one
// after them: Myers aligns the moved block so that the merge is clean
// (git merge-file agrees), but git's ort merge diffs with histogram,
// which anchors on the moved block's unique lines and reports a conflict.
// A clean verdict here would land code git stops.
func TestReorderedAdjacentTestsConflictAsGitReports(t *testing.T) {
	requireGit(t)
	base := goTestFile("A", "B", "C")
	ours := goTestFile("A", "C", "B")
	theirs := goTestFile("A", "B", "C", "New")

	// The two diff algorithms really do disagree on this input.
	require.Zero(t, mergeTextWith([]byte(base), []byte(ours), []byte(theirs), "main", "topic", algoMyers, defaultMarkerSize).Conflicts,
		"Myers merges it cleanly")
	dir := initRepo(t)
	for name, c := range map[string]string{"base": base, "ours": ours, "theirs": theirs} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(c), 0o644))
	}
	_, code, _ := runGitCode(t, dir, "merge-file", "-p", "ours", "base", "theirs")
	require.Equal(t, 0, code, "git merge-file (Myers) merges it cleanly")

	// git merge-tree (ort, histogram) reports the conflict; so must we,
	// with the same markers in the same places.
	branches(t, dir, map[string]string{"x_test.go": base},
		map[string]string{"x_test.go": ours},
		map[string]string{"x_test.go": theirs})
	tree, clean, conflicts := gitMergeTree(t, dir, "ours", "theirs")
	require.False(t, clean)
	require.Equal(t, []string{"x_test.go"}, conflicts)
	want := runGit(t, dir, "cat-file", "blob", tree+":x_test.go")
	require.Contains(t, want, "<<<<<<< ours\nfunc TestB(t *testing.T) {\n")

	repo, err := git.PlainOpen(dir)
	require.NoError(t, err)
	oh := strings.TrimSpace(runGit(t, dir, "rev-parse", "ours"))
	th := strings.TrimSpace(runGit(t, dir, "rev-parse", "theirs"))
	res, err := ThreeWayMergeWith(repo, plumbing.NewHash(oh), plumbing.NewHash(th), MergeOptions{OursLabel: "ours", TheirsLabel: "theirs"})
	require.NoError(t, err)
	assert.False(t, res.Clean)
	assert.Equal(t, []string{"x_test.go"}, res.Conflicts)
	require.Len(t, res.Files, 1)
	assert.True(t, res.Files[0].Conflict)
	assert.Equal(t, want, string(res.Files[0].Content), "the conflicted file, markers included")
}

// histFile draws lines from a small alphabet with some frequent lines,
// sometimes more than histMaxChain copies of one, so that the Myers
// fallback is exercised too.
func histFile(rng *rand.Rand, n int, repetitive bool) []string {
	out := make([]string, n)
	for i := range out {
		r := rng.Intn(10)
		if repetitive {
			// Almost only two lines, each far more than histMaxChain
			// times: no region has an anchor, Myers takes over.
			r = min(r, 5)
			if rng.Intn(150) == 0 {
				r = 9
			}
		}
		switch {
		case r < 4:
			out[i] = "}"
		case r < 6:
			out[i] = ""
		default:
			out[i] = "l" + strconv.Itoa(rng.Intn(n/3+1))
		}
	}
	return out
}

func histEdit(rng *rand.Rand, in []string) []string {
	out := append([]string(nil), in...)
	for e := 1 + rng.Intn(6); e > 0; e-- {
		pos := rng.Intn(len(out) + 1)
		switch rng.Intn(4) {
		case 0:
			if pos < len(out) {
				out[pos] = "m" + strconv.Itoa(rng.Intn(50))
			}
		case 1:
			out = append(out[:pos], append([]string{"i" + strconv.Itoa(rng.Intn(50)), "}"}, out[pos:]...)...)
		case 2:
			if pos < len(out) {
				out = append(out[:pos], out[min(len(out), pos+1+rng.Intn(4)):]...)
			}
		default: // move a block
			if pos+4 < len(out) {
				blk := append([]string(nil), out[pos:pos+4]...)
				out = append(out[:pos], out[pos+4:]...)
				to := rng.Intn(len(out) + 1)
				out = append(out[:to], append(blk, out[to:]...)...)
			}
		}
	}
	return out
}

// TestHistogramDiffAgreesWithGit compares the hunks of our histogram diff
// with git diff --histogram (without the indent heuristic, which merges
// do not use) on random files, small ones and ones with a line repeated
// more than histMaxChain times.
func TestHistogramDiffAgreesWithGit(t *testing.T) {
	requireGit(t)
	if gitVersionAtLeast(t, 2, 54) {
		// git 2.54 re-diffs histogram change groups that compaction made
		// overlap (commit e417277ae9); this implementation follows the
		// git before it (2.39 to 2.53).
		t.Skip("git >= 2.54 changed histogram compaction")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(64))
	n := 120
	if testing.Short() {
		n = 30
	}
	for i := 0; i < n; i++ {
		size := 5 + rng.Intn(40)
		if i%4 >= 2 {
			size = 200 + rng.Intn(200)
		}
		a := histFile(rng, size, i%4 == 3)
		b := histEdit(rng, a)
		at, bt := strings.Join(a, "\n")+"\n", strings.Join(b, "\n")+"\n"
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		require.NoError(t, os.WriteFile(pa, []byte(at), 0o644))
		require.NoError(t, os.WriteFile(pb, []byte(bt), 0o644))
		out, code, errOut := runGitCode(t, dir, "diff", "--no-index", "--histogram", "--no-indent-heuristic", "-U0", "a", "b")
		require.Truef(t, code <= 1, "git diff: %s", errOut)
		var want []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "@@") {
				want = append(want, strings.Fields(l)[1]+" "+strings.Fields(l)[2])
			}
		}
		script, _ := diffLinesWith(splitLines([]byte(at)), splitLines([]byte(bt)), algoHistogram)
		var got []string
		for _, c := range script {
			got = append(got, hunkHeader("-", c.i1, c.chg1)+" "+hunkHeader("+", c.i2, c.chg2))
		}
		require.Equalf(t, want, got, "case %d:\n--- a\n%s--- b\n%s", i, at, bt)
	}
}

// hunkHeader renders one side of a unified-diff hunk header as git does
// with -U0: start,count, the count left out when 1, the start being the
// line before when count is 0.
func hunkHeader(sign string, start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%s%d,0", sign, start)
	case 1:
		return fmt.Sprintf("%s%d", sign, start+1)
	}
	return fmt.Sprintf("%s%d,%d", sign, start+1, count)
}

// TestLandStopsAtTheConflictGitReports: the landing never lands the
// reordered-tests merge that only a Myers diff would call clean.
func TestLandStopsAtTheConflictGitReports(t *testing.T) {
	f := newRemote(t)
	f.commitOn(t, "main", map[string]string{"x_test.go": goTestFile("A", "B", "C")})
	f.commitOn(t, "bazinga/s1-A", map[string]string{"x_test.go": goTestFile("A", "B", "C", "New")})
	f.commitOn(t, "main", map[string]string{"x_test.go": goTestFile("A", "C", "B")})
	before := f.head(t, "main")
	res, err := Land(context.Background(), LandRequest{
		Remote: Remote{URL: f.bare}, Base: "main", Branch: "bazinga/s1-A",
		Author: Identity{Name: "Dev", Email: "dev@example.com"}, StepID: "s1/A/merge/1",
	})
	require.NoError(t, err)
	assert.Equal(t, MergeConflict, res.Outcome, res.Reason)
	assert.Equal(t, []string{"x_test.go"}, res.Conflicts)
	assert.Equal(t, before, f.head(t, "main"), "base must not move")
}

// gitVersionAtLeast reports whether the git CLI is at least major.minor.
func gitVersionAtLeast(t *testing.T, major, minor int) bool {
	t.Helper()
	out := runGit(t, t.TempDir(), "version") // "git version 2.39.5"
	f := strings.Fields(out)
	if len(f) < 3 {
		return false
	}
	parts := strings.SplitN(f[2], ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}
