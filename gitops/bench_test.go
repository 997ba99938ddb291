package gitops

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// benchRepo is a generated 10,000-file repository (100 directories of 100
// files) with branches ours and theirs that each change 100 files.
type benchRepo struct {
	dir          string
	ours, theirs plumbing.Hash
}

var (
	benchOnce sync.Once
	benchData benchRepo
	benchErr  error
)

func benchFile(i, variant int) string {
	var b strings.Builder
	for l := 0; l < 20; l++ {
		fmt.Fprintf(&b, "file %d line %d content\n", i, l)
		if variant != 0 && l == 10 {
			fmt.Fprintf(&b, "changed by variant %d\n", variant)
		}
	}
	return b.String()
}

func setupBenchRepo(b *testing.B) benchRepo {
	b.Helper()
	requireGit(b)
	benchOnce.Do(func() {
		dir, err := makeTempDir("bazinga-bench-")
		if err != nil {
			benchErr = err
			return
		}
		if _, err := git.PlainInit(dir, false); err != nil {
			benchErr = err
			return
		}
		var s strings.Builder
		writeCommit := func(ref string, mark int, from int, files map[int]int) {
			fmt.Fprintf(&s, "commit refs/heads/%s\nmark :%d\ncommitter T <t@example.com> 1700000000 +0000\ndata 2\nc\n", ref, mark)
			if from > 0 {
				fmt.Fprintf(&s, "from :%d\n", from)
			}
			for i, v := range files {
				c := benchFile(i, v)
				fmt.Fprintf(&s, "M 100644 inline d%02d/f%04d.txt\ndata %d\n%s\n", i/100, i, len(c), c)
			}
		}
		all := map[int]int{}
		for i := 0; i < 10000; i++ {
			all[i] = 0
		}
		writeCommit("main", 1, 0, all)
		ours, theirs := map[int]int{}, map[int]int{}
		for k := 0; k < 100; k++ {
			ours[k*97%10000] = 1
			theirs[(k*97+50)%10000] = 2
		}
		writeCommit("ours", 2, 1, ours)
		writeCommit("theirs", 3, 1, theirs)
		cmd := exec.Command("git", "fast-import", "--quiet")
		cmd.Dir = dir
		cmd.Env = gitEnv(dir)
		cmd.Stdin = strings.NewReader(s.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			benchErr = fmt.Errorf("fast-import: %v: %s", err, out)
			return
		}
		repo, err := git.PlainOpen(dir)
		if err != nil {
			benchErr = err
			return
		}
		o, _ := repo.Reference(plumbing.NewBranchReferenceName("ours"), true)
		t, _ := repo.Reference(plumbing.NewBranchReferenceName("theirs"), true)
		benchData = benchRepo{dir: dir, ours: o.Hash(), theirs: t.Hash()}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchData
}

// BenchmarkMerge10kGoGit merges two branches that each change 100 files
// of a 10,000-file repository with ThreeWayMergeWith.
func BenchmarkMerge10kGoGit(b *testing.B) {
	r := setupBenchRepo(b)
	repo, err := git.PlainOpen(r.dir)
	if err != nil {
		b.Fatal(err)
	}
	want := strings.Fields(runGit(b, r.dir, "merge-tree", "--write-tree", "ours", "theirs"))[0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := ThreeWayMergeWith(repo, r.ours, r.theirs, MergeOptions{})
		if err != nil || !res.Clean || res.Tree.String() != want {
			b.Fatalf("merge: %v %+v", err, res)
		}
	}
}

// BenchmarkMerge10kGitCLI is the same merge by `git merge-tree`.
func BenchmarkMerge10kGitCLI(b *testing.B) {
	r := setupBenchRepo(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runGit(b, r.dir, "merge-tree", "--write-tree", "ours", "theirs")
	}
}

// BenchmarkLand10kNoTests lands theirs on a bare copy whose main is ours,
// with an empty test command: fetch, merge, checkout, push.
func BenchmarkLand10kNoTests(b *testing.B) {
	r := setupBenchRepo(b)
	bare, err := makeTempDir("bazinga-bench-remote-")
	if err != nil {
		b.Fatal(err)
	}
	runGit(b, r.dir, "clone", "-q", "--bare", r.dir, bare)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runGit(b, bare, "update-ref", "refs/heads/main", r.ours.String())
		b.StartTimer()
		res, err := Land(context.Background(), LandRequest{Remote: Remote{URL: bare}, Base: "main", Branch: "theirs"})
		if err != nil || res.Outcome != MergeSuccess {
			b.Fatalf("land: %v %+v", err, res)
		}
	}
}
