package scripts_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The two ways action.yml obtains bazinga, measured on this machine (see
// BENCHMARKS.md, "Action: job start"):
//
//	go test ./scripts -run XXX -bench FetchRelease -benchtime 10x -count 5
//	go test ./scripts -run XXX -bench BuildFromSource -benchtime 1x -count 5

// BenchmarkFetchRelease is the fast path: fetch-release.sh downloading the
// real, release-built binary (CGO_ENABLED=0 -trimpath -s -w, as
// .goreleaser.yaml builds it) from a local HTTP server, verifying its sha256,
// extracting it and checking its version.
func BenchmarkFetchRelease(b *testing.B) {
	requireTools(b)
	cfg := loadGoreleaser(b)
	var here *platform
	for i, p := range platforms {
		if p.goos == runtime.GOOS && p.goarch == runtime.GOARCH {
			here = &platforms[i]
		}
	}
	if here == nil {
		b.Skipf("no release is published for %s/%s", runtime.GOOS, runtime.GOARCH)
	}

	work := b.TempDir()
	bin := filepath.Join(work, "bazinga")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=1.2.3", "-o", bin, "./cmd/bazinga")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building bazinga: %v\n%s", err, out)
	}
	binData, err := os.ReadFile(bin)
	if err != nil {
		b.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		b.Fatal(err)
	}

	root := b.TempDir()
	rel := makeRelease(b, cfg, root, "v1.2.3", "1.2.3", platforms)
	archive := archiveName(b, cfg, "1.2.3", here.goos, here.goarch)
	republish(b, rel, archive, map[string][]byte{"bazinga": binData, "README.md": readme})
	st, err := os.Stat(filepath.Join(rel.dir, archive))
	if err != nil {
		b.Fatal(err)
	}
	// v1 is a moving tag at v1.2.3's commit: resolved through the ref advertisement.
	writeRefs(b, root, []tagRef{{"v1.2.3", commitOf("r"), true}, {"v1", commitOf("r"), false}})
	srv := serve(b, root)
	want := sha256.Sum256(binData)

	for _, ref := range []string{"v1.2.3", "v1"} {
		b.Run("ref="+ref, func(b *testing.B) {
			env := baseEnv(srv, ref, *here)
			b.SetBytes(st.Size())
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				dest := filepath.Join(work, fmt.Sprintf("%s-%d", ref, i), "bazinga")
				res := fetch(b, env, dest)
				if res.code != exitInstalled {
					b.Fatalf("fetch-release.sh exited %d: %s", res.code, res.stderr)
				}
				b.StopTimer()
				cpu += res.cpu
				got, err := os.ReadFile(dest)
				if err != nil {
					b.Fatal(err)
				}
				if sum := sha256.Sum256(got); sum != want {
					b.Fatalf("installed binary sha256 %s, want %s", hex.EncodeToString(sum[:]), hex.EncodeToString(want[:]))
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(st.Size())/(1<<20), "archive-MiB")
			// CPU time is what a busy machine distorts least (this one is shared).
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// BenchmarkBuildFromSource is the fallback: `go build -trimpath ./cmd/bazinga`
// with the module cache warm and an empty build cache, as on a runner whose
// setup-go cache holds the modules but whose build cache is cold.
func BenchmarkBuildFromSource(b *testing.B) {
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cache := b.TempDir()
		out := filepath.Join(b.TempDir(), "bazinga")
		build := exec.Command("go", "build", "-trimpath", "-o", out, "./cmd/bazinga")
		build.Dir = repoRoot
		build.Env = append(os.Environ(), "GOCACHE="+cache, "GOFLAGS=-mod=readonly", "GOPROXY=off")
		b.StartTimer()
		if o, err := build.CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, o)
		}
		cpu += build.ProcessState.UserTime() + build.ProcessState.SystemTime()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
