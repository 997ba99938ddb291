package gitops

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// mergeVsGit times ThreeWayMerge (opening the repository afresh each
// time, as a landing does, so no cache carries over) against
// `git merge-tree --write-tree` on the same pair, alternating them in one
// run, and reports both and their ratio. want is git's tree (or "" when
// git reports conflicts), which ours must match.
func mergeVsGit(b *testing.B, dir string, ours, theirs plumbing.Hash) {
	b.Helper()
	want, clean, _ := gitMergeTree(b, dir, ours.String(), theirs.String())
	var oursTime, gitTime time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		repo, err := git.PlainOpen(dir)
		if err != nil {
			b.Fatal(err)
		}
		res, err := ThreeWayMergeWith(repo, ours, theirs, MergeOptions{})
		if err != nil || res.Clean != clean || (clean && res.Tree.String() != want) {
			b.Fatalf("merge: %v clean=%v (git %v) tree %s (git %s)", err, res != nil && res.Clean, clean, res.Tree, want)
		}
		oursTime += time.Since(start)
		b.StopTimer()
		start = time.Now()
		runGitCode(b, dir, "merge-tree", "--write-tree", ours.String(), theirs.String())
		gitTime += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(gitTime.Nanoseconds())/float64(b.N), "git-ns/op")
	b.ReportMetric(float64(oursTime)/float64(gitTime), "x-git")
}

// BenchmarkMergeRealRepo merges the parents of the newest merge commit of
// the bare repository named by BAZINGA_REAL_REPO (cloned into a
// temporary directory first), against git.
func BenchmarkMergeRealRepo(b *testing.B) {
	src := os.Getenv("BAZINGA_REAL_REPO")
	if src == "" {
		b.Skip("BAZINGA_REAL_REPO names no repository")
	}
	requireGit(b)
	dir := filepath.Join(b.TempDir(), "repo.git")
	runGit(b, filepath.Dir(dir), "clone", "-q", "--bare", src, dir)
	f := strings.Fields(runGit(b, dir, "rev-list", "--merges", "--max-parents=2", "-n", "1", "--parents", "HEAD"))
	if len(f) != 3 {
		b.Fatalf("no merge commit in %s", src)
	}
	mergeVsGit(b, dir, plumbing.NewHash(f[1]), plumbing.NewHash(f[2]))
}

// deepRepo is a generated repository with a deep history: a main line of
// commits into which topic branches merge, one every few commits, and a
// long-lived branch that forked early and kept moving.
type deepRepo struct {
	dir          string
	ours, theirs plumbing.Hash
}

var (
	deepOnce sync.Once
	deepData deepRepo
	deepErr  error
)

const (
	deepFiles   = 400  // files in the tree
	deepCommits = 6000 // commits on main, merges included
)

func deepFile(i, rev int) string {
	var b strings.Builder
	for l := 0; l < 30; l++ {
		if l == rev%30 {
			fmt.Fprintf(&b, "file %d line %d revision %d\n", i, l, rev)
			continue
		}
		fmt.Fprintf(&b, "file %d line %d\n", i, l)
	}
	return b.String()
}

// setupDeepRepo builds the repository once with git fast-import: main has
// deepCommits commits, a third of them merges of two-commit topic
// branches; branch "side" forked after the first tenth and has 300
// commits of its own, touching files main also touches (in other lines).
func setupDeepRepo(b *testing.B) deepRepo {
	b.Helper()
	requireGit(b)
	deepOnce.Do(func() {
		dir, err := makeTempDir("bazinga-deep-")
		if err != nil {
			deepErr = err
			return
		}
		runGit(b, dir, "init", "-q", "--bare")
		var s strings.Builder
		mark := 0
		when := int64(1600000000)
		commit := func(ref string, parents []int, files map[int]string) int {
			mark++
			when += 60
			fmt.Fprintf(&s, "commit refs/heads/%s\nmark :%d\ncommitter T <t@example.com> %d +0000\ndata 2\nc\n", ref, mark, when)
			for k, p := range parents {
				if k == 0 {
					fmt.Fprintf(&s, "from :%d\n", p)
				} else {
					fmt.Fprintf(&s, "merge :%d\n", p)
				}
			}
			for i := 0; i < deepFiles; i++ {
				if c, ok := files[i]; ok {
					fmt.Fprintf(&s, "M 100644 inline d%02d/f%04d.go\ndata %d\n%s\n", i/40, i, len(c), c)
				}
			}
			return mark
		}
		all := map[int]string{}
		for i := 0; i < deepFiles; i++ {
			all[i] = deepFile(i, 0)
		}
		head := commit("main", nil, all)
		side := 0
		for n := 1; n < deepCommits; n++ {
			if n == deepCommits/10 {
				side = head
			}
			f := n * 7919 % deepFiles
			if n%3 == 0 {
				// A topic branch of two commits, merged into main.
				g := (f + 1) % deepFiles
				t1 := commit("topic", []int{head}, map[int]string{f: deepFile(f, n*2)})
				t2 := commit("topic", []int{t1}, map[int]string{g: deepFile(g, n*2+1)})
				head = commit("main", []int{head, t2}, map[int]string{f: deepFile(f, n*2), g: deepFile(g, n*2+1)})
				continue
			}
			head = commit("main", []int{head}, map[int]string{f: deepFile(f, n*2)})
		}
		for n := 0; n < 300; n++ {
			f := n * 104729 % deepFiles
			side = commit("side", []int{side}, map[int]string{f: deepFile(f, 1000000+n)})
		}
		cmd := exec.Command("git", "fast-import", "--quiet")
		cmd.Dir = dir
		cmd.Env = gitEnv(dir)
		cmd.Stdin = strings.NewReader(s.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			deepErr = fmt.Errorf("fast-import: %v: %s", err, out)
			return
		}
		// One pack, as a fetched repository has.
		runGit(b, dir, "repack", "-adq")
		deepData = deepRepo{
			dir:    dir,
			ours:   plumbing.NewHash(strings.TrimSpace(runGit(b, dir, "rev-parse", "main"))),
			theirs: plumbing.NewHash(strings.TrimSpace(runGit(b, dir, "rev-parse", "side"))),
		}
	})
	if deepErr != nil {
		b.Fatal(deepErr)
	}
	return deepData
}

// BenchmarkMergeDeepHistory merges a long-lived branch into the main line
// of a generated repository with thousands of commits and merges, against
// git merge-tree in the same run.
func BenchmarkMergeDeepHistory(b *testing.B) {
	r := setupDeepRepo(b)
	mergeVsGit(b, r.dir, r.ours, r.theirs)
}
