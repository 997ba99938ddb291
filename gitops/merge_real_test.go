package gitops

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

// realCase is one merge replayed from real history.
type realCase struct {
	kind          string // "merge" (a merge commit's parents) or "pair"
	ours, theirs  string
	mergeCommitID string // the merge commit, for kind "merge"
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// realCases lists the newest two-parent merge commits reachable from HEAD
// and a deterministic set of pairs of commits neither of which contains
// the other.
func realCases(t *testing.T, dir string, merges, pairs int) []realCase {
	t.Helper()
	var cases []realCase
	out := runGit(t, dir, "rev-list", "--merges", "--max-parents=2", "-n", strconv.Itoa(merges), "--parents", "HEAD")
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		cases = append(cases, realCase{kind: "merge", ours: f[1], theirs: f[2], mergeCommitID: f[0]})
	}
	if pairs == 0 {
		return cases
	}
	commits := strings.Fields(runGit(t, dir, "rev-list", "-n", "3000", "HEAD"))
	rng := rand.New(rand.NewSource(15))
	for tries := 0; len(cases) < merges+pairs && tries < 50*pairs && len(commits) > 1; tries++ {
		a, b := commits[rng.Intn(len(commits))], commits[rng.Intn(len(commits))]
		if a == b {
			continue
		}
		if _, code, _ := runGitCode(t, dir, "merge-base", "--is-ancestor", a, b); code == 0 {
			continue
		}
		if _, code, _ := runGitCode(t, dir, "merge-base", "--is-ancestor", b, a); code == 0 {
			continue
		}
		cases = append(cases, realCase{kind: "pair", ours: a, theirs: b})
	}
	return cases
}

// ourContent is what our merge leaves at path p: the merged file if it
// lists one, else ours' entry.
func ourContent(t *testing.T, repo *git.Repository, res *MergeResult, ours plumbing.Hash, p string) ([]byte, bool) {
	t.Helper()
	r := newTreeReader(repo.Storer)
	for _, f := range res.Files {
		if f.Path != p {
			continue
		}
		if f.Mode == 0 {
			return nil, false
		}
		if f.Content != nil {
			return f.Content, true
		}
		d, err := r.blob(f.Hash)
		require.NoError(t, err)
		return d, true
	}
	c, err := repo.CommitObject(ours)
	require.NoError(t, err)
	e, _, err := r.lookup(c.TreeHash, p)
	require.NoError(t, err)
	if e == nil {
		return nil, false
	}
	d, err := r.blob(e.Hash)
	require.NoError(t, err)
	return d, true
}

// compareRealCase merges one case both ways; it returns "" when they
// agree exactly, else what differs.
// The times taken by both are added to *oursTime and *gitTime.
func compareRealCase(t *testing.T, dir string, repo *git.Repository, c realCase, oursTime, gitTime *time.Duration) (string, bool) {
	t.Helper()
	start := time.Now()
	res, err := ThreeWayMergeWith(repo, plumbing.NewHash(c.ours), plumbing.NewHash(c.theirs),
		MergeOptions{OursLabel: c.ours, TheirsLabel: c.theirs})
	*oursTime += time.Since(start)
	start = time.Now()
	_, code, errOut := runGitCode(t, dir, "merge-tree", "--write-tree", "--name-only", c.ours, c.theirs)
	*gitTime += time.Since(start)
	if code > 1 {
		// Real histories hold merges of unrelated histories, which git
		// refuses; so must we.
		if strings.Contains(errOut, "unrelated histories") && errors.Is(err, ErrUnrelatedHistories) {
			return "", false
		}
		return fmt.Sprintf("git failed (%d): %s; ours: %v", code, errOut, err), false
	}
	require.NoError(t, err)
	wantTree, wantClean, wantConflicts, _ := gitMergeTreeMessages(t, dir, c.ours, c.theirs)
	if res.Clean != wantClean {
		return fmt.Sprintf("verdict: git clean=%v %v, ours clean=%v %v", wantClean, wantConflicts, res.Clean, res.Conflicts), wantClean
	}
	if wantClean {
		if res.Tree.String() != wantTree {
			return fmt.Sprintf("clean tree: git %s, ours %s", wantTree, res.Tree), true
		}
		return "", true
	}
	if strings.Join(wantConflicts, "\n") != strings.Join(res.Conflicts, "\n") {
		return fmt.Sprintf("conflicting paths: git %v, ours %v", wantConflicts, res.Conflicts), false
	}
	// The conflicted tree git wrote holds every conflicting file with its
	// markers; ours must hold the same bytes.
	for _, p := range wantConflicts {
		ls := strings.TrimSpace(runGit(t, dir, "ls-tree", wantTree, "--", p))
		var want []byte
		gitHas := ls != "" && strings.Contains(ls, " blob ")
		if gitHas {
			want = []byte(runGit(t, dir, "cat-file", "blob", wantTree+":"+p))
		}
		got, has := ourContent(t, repo, res, plumbing.NewHash(c.ours), p)
		if has != gitHas {
			return fmt.Sprintf("%s: present in git's tree %v, in ours %v", p, gitHas, has), false
		}
		if gitHas && string(got) != string(want) {
			return fmt.Sprintf("%s: conflicted content differs\n--- git\n%s\n--- ours\n%s", p, want, got), false
		}
	}
	return "", false
}

// TestThreeWayMergeAgreesWithGitOnRealHistory replays real merges through
// ThreeWayMergeWith and git merge-tree --write-tree and requires exact
// agreement: the same tree for clean merges; for conflicts, the same
// paths and the same file contents, markers included. It needs bare
// repositories with real history, named (colon-separated) in
// BAZINGA_REAL_REPOS; BAZINGA_REAL_MERGES and BAZINGA_REAL_PAIRS set how
// many merge commits and non-ancestor pairs each contributes (default 100
// and 40). The repositories are cloned (hard links) into a temporary
// directory, so the merges' objects never land in them.
func TestThreeWayMergeAgreesWithGitOnRealHistory(t *testing.T) {
	repos := os.Getenv("BAZINGA_REAL_REPOS")
	if repos == "" {
		t.Skip("BAZINGA_REAL_REPOS names no repositories")
	}
	requireGit(t)
	merges := envInt("BAZINGA_REAL_MERGES", 100)
	pairs := envInt("BAZINGA_REAL_PAIRS", 40)
	total, agree, conflicted := 0, 0, 0
	for _, src := range filepath.SplitList(repos) {
		name := filepath.Base(strings.TrimSuffix(strings.TrimSuffix(src, "/"), "/repo"))
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo.git")
			runGit(t, filepath.Dir(dir), "clone", "-q", "--bare", src, dir)
			repo, err := git.PlainOpen(dir)
			require.NoError(t, err)
			cases := realCases(t, dir, merges, pairs)
			n, ok, nc := 0, 0, 0
			var oursTime, gitTime time.Duration
			for _, c := range cases {
				diff, gitClean := compareRealCase(t, dir, repo, c, &oursTime, &gitTime)
				n++
				if !gitClean {
					nc++
				}
				if diff == "" {
					ok++
					continue
				}
				t.Errorf("%s %s (ours %s, theirs %s) disagrees: %s", c.kind, c.mergeCommitID, c.ours, c.theirs, diff)
			}
			t.Logf("%s: %d of %d agree (%d conflicted in git); merge time ThreeWayMerge %v, git merge-tree %v (x%.2f)",
				name, ok, n, nc, oursTime.Round(time.Millisecond), gitTime.Round(time.Millisecond), float64(oursTime)/float64(gitTime))
			total, agree, conflicted = total+n, agree+ok, conflicted+nc
		})
	}
	t.Logf("real history: %d of %d agree (%d conflicted in git)", agree, total, conflicted)
}
