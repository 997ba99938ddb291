package gitops

import (
	"bufio"
	"context"
	"fmt"
	"math/rand"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The working-copy benchmarks compare a step's git work done by bazinga
// (go-git) with the git CLI doing the same job, against a repository shaped
// like kubernetes-sigs/prow (17k commits on main, ~1,300 files, hundreds of
// branches and pull refs, tags) served over smart HTTP by git http-backend,
// as GitHub serves it. Each side runs in its own process, so that its peak
// RSS (the kernel's ru_maxrss of the process and everything it waited for)
// and wall time are its own. See BENCHMARKS.md for the commands.
//
//   BAZINGA_BENCH_REPO=/path/to/bare.git  use an existing repository instead
//                                         of generating one (its main branch)
//   BAZINGA_BENCH_ROUNDS=n                rounds per side (default 3; medians)

const prowShapeVersion = "v1"

// prowShape generates (once, cached under the temp directory) a bare
// repository of prow's shape with git fast-import.
func prowShape(b *testing.B) string {
	b.Helper()
	requireGit(b)
	if r := os.Getenv("BAZINGA_BENCH_REPO"); r != "" {
		return benchCopy(b, r)
	}
	dir := filepath.Join(os.TempDir(), "bazinga-bench-prow-"+prowShapeVersion+".git")
	if _, err := os.Stat(filepath.Join(dir, "bazinga-complete")); err == nil {
		return dir
	}
	_ = os.RemoveAll(dir)
	start := time.Now()
	runGit(b, os.TempDir(), "init", "-q", "--bare", "-b", "main", dir)
	cmd := exec.Command("git", "fast-import", "--quiet", "--done")
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	in, err := cmd.StdinPipe()
	require.NoError(b, err)
	cmd.Stderr = os.Stderr
	require.NoError(b, cmd.Start())
	w := bufio.NewWriterSize(in, 1<<20)
	writeProwShape(w)
	require.NoError(b, w.Flush())
	require.NoError(b, in.Close())
	require.NoError(b, cmd.Wait())
	// One pack with deltas and a bitmap, as a hosting server keeps it.
	runGit(b, dir, "repack", "-a", "-d", "-q", "--write-bitmap-index")
	runGit(b, dir, "config", "http.receivepack", "true")
	require.NoError(b, os.WriteFile(filepath.Join(dir, "bazinga-complete"), nil, 0o644))
	b.Logf("generated %s in %s: %s", dir, time.Since(start).Round(time.Second), strings.TrimSpace(runGit(b, dir, "count-objects", "-vH")))
	return dir
}

// benchCopy is a mirror of an existing repository (object files linked,
// so it is cheap) that the benchmarks may push to, with the branch the
// landing benchmark lands: 3 commits off main 30 commits back.
func benchCopy(b *testing.B, src string) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "bazinga-bench-copy-"+strings.NewReplacer("/", "_", "+", "_").Replace(filepath.Clean(src))+".git")
	if _, err := os.Stat(filepath.Join(dir, "bazinga-complete")); err == nil {
		return dir
	}
	_ = os.RemoveAll(dir)
	runGit(b, os.TempDir(), "clone", "-q", "--mirror", src, dir)
	runGit(b, dir, "config", "http.receivepack", "true")
	work := filepath.Join(os.TempDir(), "bazinga-bench-copy-work")
	_ = os.RemoveAll(work)
	defer os.RemoveAll(work)
	runGit(b, os.TempDir(), "clone", "-q", "--no-checkout", dir, work)
	runGit(b, work, "checkout", "-q", "-b", "bazinga/bench-land", "origin/main~30")
	for k := 0; k < 3; k++ {
		writeFiles(b, work, map[string]string{fmt.Sprintf("land/%d.txt", k): "land\n"})
		runGit(b, work, "add", "land")
		runGit(b, work, "commit", "-q", "-m", fmt.Sprintf("land %d", k))
	}
	runGit(b, work, "push", "-q", "origin", "bazinga/bench-land")
	require.NoError(b, os.WriteFile(filepath.Join(dir, "bazinga-complete"), nil, 0o644))
	return dir
}

// writeProwShape writes the fast-import stream: 1,300 files of code-like
// text (~18 MB), 17,000 commits on main each rewriting a few lines of one
// or two files, 300 feature branches with a refs/pull/N/head each, 50 tags,
// and bazinga/bench-land: 3 commits (new files) off main 30 commits back.
func writeProwShape(w *bufio.Writer) {
	rng := rand.New(rand.NewSource(1))
	words := strings.Fields("func return if else for range err nil ctx string int struct type package import var const " +
		"the config client prow job plugin github status pull request branch merge test presubmit periodic tide hook " +
		"deck crier sinker horologium spyglass gerrit label review approve lgtm owners cluster pod build")
	line := func() string {
		n := 3 + rng.Intn(9)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = words[rng.Intn(len(words))]
		}
		return strings.Repeat("\t", rng.Intn(3)) + strings.Join(parts, " ")
	}
	const nFiles = 1300
	files := make([][]string, nFiles)
	paths := make([]string, nFiles)
	for i := range files {
		paths[i] = fmt.Sprintf("pkg/d%02d/s%02d/file%04d.go", i%40, (i/40)%8, i)
		n := 50 + rng.Intn(400)
		files[i] = make([]string, n)
		for l := range files[i] {
			files[i][l] = line()
		}
	}
	content := func(i int) string { return strings.Join(files[i], "\n") + "\n" }
	when := int64(1500000000)
	mark := 0
	commit := func(ref string, from string, msg string, changed map[string]string) string {
		mark++
		when += 1800
		fmt.Fprintf(w, "commit %s\nmark :%d\nauthor Dev <dev@example.com> %d +0000\ncommitter Dev <dev@example.com> %d +0000\ndata %d\n%s\n",
			ref, mark, when, when, len(msg), msg)
		if from != "" {
			fmt.Fprintf(w, "from %s\n", from)
		}
		ps := make([]string, 0, len(changed))
		for p := range changed {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		for _, p := range ps {
			fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n%s\n", p, len(changed[p]), changed[p])
		}
		return ":" + strconv.Itoa(mark)
	}
	all := map[string]string{}
	for i := range files {
		all[paths[i]] = content(i)
	}
	head := commit("refs/heads/main", "", "initial import", all)
	const nCommits = 17000
	mainMarks := []string{head}
	for c := 1; c < nCommits; c++ {
		changed := map[string]string{}
		for k := 0; k < 1+rng.Intn(2); k++ {
			i := rng.Intn(nFiles)
			f := files[i]
			for e := 0; e < 1+rng.Intn(4); e++ {
				f[rng.Intn(len(f))] = line()
			}
			if rng.Intn(4) == 0 {
				f = append(f, line())
			}
			files[i] = f
			changed[paths[i]] = content(i)
		}
		head = commit("refs/heads/main", head, fmt.Sprintf("change %d", c), changed)
		mainMarks = append(mainMarks, head)
	}
	for t := 0; t < 50; t++ {
		fmt.Fprintf(w, "reset refs/tags/v0.%d.0\nfrom %s\n\n", t, mainMarks[(t+1)*nCommits/51])
	}
	for br := 0; br < 300; br++ {
		from := mainMarks[nCommits-1-rng.Intn(2000)]
		tip := from
		for k := 0; k < 1+rng.Intn(2); k++ {
			p := fmt.Sprintf("feature/%03d/change%d.txt", br, k)
			tip = commit(fmt.Sprintf("refs/heads/feature-%03d", br), tip, fmt.Sprintf("feature %d.%d", br, k), map[string]string{p: line() + "\n"})
		}
		fmt.Fprintf(w, "reset refs/pull/%d/head\nfrom %s\n\n", 1000+br, tip)
	}
	tip := mainMarks[nCommits-31]
	for k := 0; k < 3; k++ {
		tip = commit("refs/heads/bazinga/bench-land", tip, fmt.Sprintf("land %d", k), map[string]string{fmt.Sprintf("land/%d.txt", k): line() + "\n"})
	}
	fmt.Fprintf(w, "done\n")
}

// serveBare serves a bare repository over smart HTTP with git http-backend.
func serveBare(b *testing.B, bare string) string {
	b.Helper()
	gitPath, err := exec.LookPath("git")
	require.NoError(b, err)
	h := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(bare), "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_PARAMETERS='http.receivepack=true'", "HOME=" + filepath.Dir(bare)},
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv.URL + "/" + filepath.Base(bare)
}

// measured is one run of one side: wall time and peak RSS.
type measured struct {
	wall time.Duration
	cpu  time.Duration // user + system, the process and its children
	rss  int64         // bytes
}

// measure runs cmd under GNU time and reads its wall time and peak RSS
// (the kernel's ru_maxrss of the process and every child it waited for).
// A child's own ru_maxrss cannot be read here directly: a process started
// by Go inherits the high-water mark of this (large) process at exec.
func measure(b *testing.B, cmd *exec.Cmd) measured {
	b.Helper()
	timeBin, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		b.Skip("GNU time (/usr/bin/time) is needed to measure peak RSS")
	}
	report := filepath.Join(b.TempDir(), "time")
	args := append([]string{"-f", "%e %M %U %S", "-o", report, cmd.Path}, cmd.Args[1:]...)
	timed := exec.Command(timeBin, args...)
	timed.Dir, timed.Env = cmd.Dir, cmd.Env
	var out strings.Builder
	timed.Stdout, timed.Stderr = &out, &out
	start := time.Now()
	err = timed.Run()
	wall := time.Since(start)
	require.NoError(b, err, out.String())
	data, err := os.ReadFile(report)
	require.NoError(b, err)
	f := strings.Fields(string(data))
	require.Len(b, f, 4, string(data))
	kb, err := strconv.ParseInt(f[1], 10, 64)
	require.NoError(b, err)
	user, err := strconv.ParseFloat(f[2], 64)
	require.NoError(b, err)
	sys, err := strconv.ParseFloat(f[3], 64)
	require.NoError(b, err)
	return measured{wall: wall, rss: kb * 1024, cpu: time.Duration((user + sys) * float64(time.Second))}
}

func median(ms []measured) measured {
	w := make([]time.Duration, len(ms))
	c := make([]time.Duration, len(ms))
	r := make([]int64, len(ms))
	for i, m := range ms {
		w[i], c[i], r[i] = m.wall, m.cpu, m.rss
	}
	sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	sort.Slice(r, func(i, j int) bool { return r[i] < r[j] })
	return measured{wall: w[len(w)/2], cpu: c[len(c)/2], rss: r[len(r)/2]}
}

func benchRounds() int {
	if n, err := strconv.Atoi(os.Getenv("BAZINGA_BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// child runs this test binary's TestBenchChild with the given job.
func child(job string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, "BAZINGA_BENCH_CHILD="+job)...)
	return cmd
}

func gitSide(dir, script string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	return cmd
}

// TestBenchChild is the bazinga side of a working-copy benchmark, run in a
// process of its own by the benchmark; it does nothing in a normal run.
func TestBenchChild(t *testing.T) {
	job := os.Getenv("BAZINGA_BENCH_CHILD")
	if job == "" {
		t.Skip("run by the working-copy benchmarks only")
	}
	ctx := context.Background()
	remote := Remote{URL: os.Getenv("BAZINGA_BENCH_URL")}
	dir := os.Getenv("BAZINGA_BENCH_DIR")
	branch := os.Getenv("BAZINGA_BENCH_BRANCH")
	switch job {
	case "prepare":
		// A step: its working copy (branch created from main), a change,
		// the commit and the push.
		repo, err := PrepareWorkingCopy(ctx, remote, "main", branch, dir)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "step.txt"), []byte("a step's change\n"), 0o644))
		_, err = CommitAll(repo, CommitOptions{StepID: "bench/A/developer/1"})
		require.NoError(t, err)
		require.NoError(t, Push(ctx, repo, remote, "main", branch, PushOptions{}))
	case "land":
		res, err := Land(ctx, LandRequest{Remote: remote, Base: "main", Branch: branch, TempDir: dir})
		require.NoError(t, err)
		require.Equal(t, MergeSuccess, res.Outcome, res.Reason)
	default:
		t.Fatalf("unknown job %q", job)
	}
}

// BenchmarkWorkingCopyProwShape: a step's working copy over HTTP — clone,
// branch, commit, push — by PrepareWorkingCopy/CommitAll/Push, by the git
// CLI's plain clone, and by the git CLI's shallow single-branch clone.
func BenchmarkWorkingCopyProwShape(b *testing.B) {
	bare := prowShape(b)
	url := serveBare(b, bare)
	tmp := b.TempDir()
	rounds := benchRounds()
	run := 0
	for i := 0; i < b.N; i++ {
		var goSide, gitFull, gitShallow []measured
		for r := 0; r < rounds; r++ {
			run++
			d := filepath.Join(tmp, fmt.Sprintf("go-%d", run))
			goSide = append(goSide, measure(b, child("prepare", "BAZINGA_BENCH_URL="+url, "BAZINGA_BENCH_DIR="+d,
				fmt.Sprintf("BAZINGA_BENCH_BRANCH=bazinga/bench-go-%d-%d", os.Getpid(), run))))
			require.NoError(b, os.RemoveAll(d))
			for _, side := range []struct {
				out   *[]measured
				clone string
			}{{&gitFull, "git clone -q"}, {&gitShallow, "git clone -q --depth 1 --single-branch --no-tags"}} {
				d := filepath.Join(tmp, fmt.Sprintf("git-%d", run))
				br := fmt.Sprintf("bazinga/bench-git-%d-%d-%d", os.Getpid(), run, len(*side.out))
				*side.out = append(*side.out, measure(b, gitSide(tmp, fmt.Sprintf(
					`set -e; %s %s %s; cd %s; git checkout -q -b %s; echo change > step.txt; git add step.txt; git commit -qm step; git push -q origin %s`,
					side.clone, url, d, d, br, br))))
				require.NoError(b, os.RemoveAll(d))
			}
		}
		report(b, median(goSide), median(gitFull), median(gitShallow))
	}
}

// BenchmarkLandProwShape: landing bazinga/bench-land (3 commits off main
// 30 commits back) with no test command, by Land and by the git CLI
// (single-branch clone of main, fetch of the branch, merge --no-ff, push).
// main is put back after every run.
func BenchmarkLandProwShape(b *testing.B) {
	bare := prowShape(b)
	url := serveBare(b, bare)
	tmp := b.TempDir()
	mainHead := strings.TrimSpace(runGit(b, bare, "rev-parse", "main"))
	b.Cleanup(func() { runGit(b, bare, "update-ref", "refs/heads/main", mainHead) })
	rounds := benchRounds()
	for i := 0; i < b.N; i++ {
		var goSide, gitFull, gitShallow []measured
		for r := 0; r < rounds; r++ {
			runGit(b, bare, "update-ref", "refs/heads/main", mainHead)
			goSide = append(goSide, measure(b, child("land", "BAZINGA_BENCH_URL="+url, "BAZINGA_BENCH_DIR="+tmp,
				"BAZINGA_BENCH_BRANCH=bazinga/bench-land")))
			for _, side := range []struct {
				out   *[]measured
				clone string
			}{{&gitFull, "git clone -q --single-branch --no-tags -b main"}, {&gitShallow, "git clone -q --depth 40 --single-branch --no-tags -b main"}} {
				runGit(b, bare, "update-ref", "refs/heads/main", mainHead)
				d := filepath.Join(tmp, fmt.Sprintf("git-%d", r))
				fetchDepth := ""
				if strings.Contains(side.clone, "--depth") {
					fetchDepth = "--depth 40"
				}
				*side.out = append(*side.out, measure(b, gitSide(tmp, fmt.Sprintf(
					`set -e; %s %s %s; cd %s; git fetch -q --no-tags %s origin bazinga/bench-land; git merge -q --no-ff -m land FETCH_HEAD; git push -q origin HEAD:main`,
					side.clone, url, d, d, fetchDepth))))
				require.NoError(b, os.RemoveAll(d))
			}
		}
		report(b, median(goSide), median(gitFull), median(gitShallow))
	}
}

func report(b *testing.B, goSide, gitFull, gitShallow measured) {
	mb := func(n int64) float64 { return float64(n) / (1 << 20) }
	b.ReportMetric(goSide.wall.Seconds(), "go-s")
	b.ReportMetric(goSide.cpu.Seconds(), "go-cpu-s")
	b.ReportMetric(mb(goSide.rss), "go-MB")
	b.ReportMetric(gitFull.wall.Seconds(), "git-s")
	b.ReportMetric(gitFull.cpu.Seconds(), "git-cpu-s")
	b.ReportMetric(mb(gitFull.rss), "git-MB")
	b.ReportMetric(gitShallow.wall.Seconds(), "gitshallow-s")
	b.ReportMetric(gitShallow.cpu.Seconds(), "gitshallow-cpu-s")
	b.ReportMetric(mb(gitShallow.rss), "gitshallow-MB")
	b.ReportMetric(goSide.wall.Seconds()/gitFull.wall.Seconds(), "time-x-git")
	b.ReportMetric(float64(goSide.rss)/float64(gitFull.rss), "rss-x-git")
	b.Logf("wall/cpu/peak RSS: bazinga %.2fs/%.2fs/%.0fMB | git %.2fs/%.2fs/%.0fMB | git shallow %.2fs/%.2fs/%.0fMB",
		goSide.wall.Seconds(), goSide.cpu.Seconds(), mb(goSide.rss), gitFull.wall.Seconds(), gitFull.cpu.Seconds(), mb(gitFull.rss),
		gitShallow.wall.Seconds(), gitShallow.cpu.Seconds(), mb(gitShallow.rss))
}

// BenchmarkWorkingCopyProwShapeLocal: the same step against the repository
// on this machine (local mode): PrepareWorkingCopy links its object files;
// git clone of a local path hard-links them too.
func BenchmarkWorkingCopyProwShapeLocal(b *testing.B) {
	bare := prowShape(b)
	tmp := b.TempDir()
	rounds := benchRounds()
	run := 0
	for i := 0; i < b.N; i++ {
		var goSide, gitRuns []measured
		for r := 0; r < rounds; r++ {
			run++
			d := filepath.Join(tmp, fmt.Sprintf("go-%d", run))
			goSide = append(goSide, measure(b, child("prepare", "BAZINGA_BENCH_URL="+bare, "BAZINGA_BENCH_DIR="+d,
				fmt.Sprintf("BAZINGA_BENCH_BRANCH=bazinga/bench-go-local-%d-%d", os.Getpid(), run))))
			require.NoError(b, os.RemoveAll(d))
			d = filepath.Join(tmp, fmt.Sprintf("git-%d", run))
			br := fmt.Sprintf("bazinga/bench-git-local-%d-%d", os.Getpid(), run)
			gitRuns = append(gitRuns, measure(b, gitSide(tmp, fmt.Sprintf(
				`set -e; git clone -q %s %s; cd %s; git checkout -q -b %s; echo change > step.txt; git add step.txt; git commit -qm step; git push -q origin %s`,
				bare, d, d, br, br))))
			require.NoError(b, os.RemoveAll(d))
		}
		g, c := median(goSide), median(gitRuns)
		mb := func(n int64) float64 { return float64(n) / (1 << 20) }
		b.ReportMetric(g.wall.Seconds(), "go-s")
		b.ReportMetric(g.cpu.Seconds(), "go-cpu-s")
		b.ReportMetric(mb(g.rss), "go-MB")
		b.ReportMetric(c.wall.Seconds(), "git-s")
		b.ReportMetric(c.cpu.Seconds(), "git-cpu-s")
		b.ReportMetric(mb(c.rss), "git-MB")
		b.Logf("wall/cpu/peak RSS: bazinga %.2fs/%.2fs/%.0fMB | git %.2fs/%.2fs/%.0fMB",
			g.wall.Seconds(), g.cpu.Seconds(), mb(g.rss), c.wall.Seconds(), c.cpu.Seconds(), mb(c.rss))
	}
}
