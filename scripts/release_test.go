// Tests of the release path of the Action: scripts/fetch-release.sh against a
// fake release served over HTTP, and the agreement between .goreleaser.yaml
// (what a release publishes), the script (what it downloads) and action.yml
// (how the job uses it). Offline: the release is generated here.
package scripts_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

const (
	repoRoot    = ".."
	scriptPath  = "fetch-release.sh"
	actionRepo  = "bazinga-bot/bazinga"
	releasePath = "/" + actionRepo + "/releases/download"
)

// Exit statuses of fetch-release.sh (see its header).
const (
	exitInstalled = 0
	exitError     = 1
	exitUsage     = 2
	exitFallback  = 3
)

// goreleaserConfig is the part of .goreleaser.yaml the action depends on.
type goreleaserConfig struct {
	Version     int    `yaml:"version"`
	ProjectName string `yaml:"project_name"`
	Builds      []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
	} `yaml:"builds"`
	Archives []struct {
		ID           string   `yaml:"id"`
		IDs          []string `yaml:"ids"`
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
}

func loadGoreleaser(t testing.TB) goreleaserConfig {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, ".goreleaser.yaml"))
	require.NoError(t, err)
	var cfg goreleaserConfig
	require.NoError(t, yaml.Unmarshal(raw, &cfg), ".goreleaser.yaml")
	require.Len(t, cfg.Builds, 1, "one build: the bazinga binary")
	require.Len(t, cfg.Archives, 1, "one archive per platform")
	return cfg
}

// render executes a GoReleaser name template the way GoReleaser does (Go
// text/template over the release's fields) for one platform.
func render(t testing.TB, name, tmpl, version, goos, goarch string) string {
	t.Helper()
	tp, err := template.New(name).Option("missingkey=error").Parse(tmpl)
	require.NoError(t, err, "%s: %q", name, tmpl)
	var b strings.Builder
	require.NoError(t, tp.Execute(&b, struct{ ProjectName, Version, Os, Arch string }{"bazinga", version, goos, goarch}),
		"%s: %q uses a field or function this test does not model; extend render and fetch-release.sh together", name, tmpl)
	return b.String()
}

// archiveName and checksumsName are the asset names GoReleaser publishes.
func archiveName(t testing.TB, cfg goreleaserConfig, version, goos, goarch string) string {
	t.Helper()
	return render(t, "archive", cfg.Archives[0].NameTemplate, version, goos, goarch) + "." + cfg.Archives[0].Formats[0]
}

func checksumsName(t testing.TB, cfg goreleaserConfig, version string) string {
	t.Helper()
	return render(t, "checksum", cfg.Checksum.NameTemplate, version, "", "")
}

type platform struct{ goos, goarch, runnerOS, runnerArch string }

var platforms = []platform{
	{"linux", "amd64", "Linux", "X64"},
	{"linux", "arm64", "Linux", "ARM64"},
	{"darwin", "amd64", "macOS", "X64"},
	{"darwin", "arm64", "macOS", "ARM64"},
}

// fakeBinary stands in for bazinga: a shell script (so every platform's runs
// here) that answers `version` and says which platform it was built for.
func fakeBinary(says, goos, goarch string) []byte {
	return fmt.Appendf(nil, "#!/bin/sh\n# fake bazinga for %s/%s\necho '%s'\n", goos, goarch, says)
}

func tarGz(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: int64(len(files[n])), Typeflag: tar.TypeReg}))
		_, err := tw.Write(files[n])
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// release is a fake GitHub release on disk: <root>/<owner>/<name>/releases/download/<tag>/<asset>.
type release struct {
	dir       string            // the tag's directory
	binaries  map[string][]byte // archive name → the binary in it
	checksums string            // checksums file name
}

// makeRelease publishes archives for plats and a sha256 checksums file, as
// GoReleaser would for tag, under root. binaryVersion is what the binaries say.
func makeRelease(t testing.TB, cfg goreleaserConfig, root, tag, binaryVersion string, plats []platform) release {
	t.Helper()
	version := strings.TrimPrefix(tag, "v")
	r := release{dir: filepath.Join(root, filepath.FromSlash(releasePath), tag), binaries: map[string][]byte{}}
	require.NoError(t, os.MkdirAll(r.dir, 0o755))
	var sums []string
	for _, p := range plats {
		name := archiveName(t, cfg, version, p.goos, p.goarch)
		bin := fakeBinary("bazinga "+binaryVersion, p.goos, p.goarch)
		data := tarGz(t, map[string][]byte{cfg.Builds[0].Binary: bin, "README.md": []byte("# bazinga\n")})
		require.NoError(t, os.WriteFile(filepath.Join(r.dir, name), data, 0o644))
		sum := sha256.Sum256(data)
		sums = append(sums, hex.EncodeToString(sum[:])+"  "+name)
		r.binaries[name] = bin
	}
	sort.Strings(sums)
	r.checksums = checksumsName(t, cfg, version)
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, r.checksums), []byte(strings.Join(sums, "\n")+"\n"), 0o644))
	return r
}

// republish replaces archive in rel with one holding files, and the checksums
// file with one that lists it correctly: a consistent but wrong release.
func republish(t testing.TB, rel release, archive string, files map[string][]byte) {
	t.Helper()
	data := tarGz(t, files)
	require.NoError(t, os.WriteFile(filepath.Join(rel.dir, archive), data, 0o644))
	sum := sha256.Sum256(data)
	require.NoError(t, os.WriteFile(filepath.Join(rel.dir, rel.checksums), []byte(hex.EncodeToString(sum[:])+"  "+archive+"\n"), 0o644))
}

// server serves root and records the paths asked for.
type server struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func serve(t testing.TB, root string) *server {
	t.Helper()
	s := &server{}
	files := http.FileServer(http.Dir(root))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

func requireTools(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"sh", "bash", "curl", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: fetch-release.sh needs sh, curl and tar (every GitHub runner has them)", tool)
		}
	}
}

// runResult is one run of a shell script.
type runResult struct {
	code           int
	stdout, stderr string
	cpu            time.Duration // user+system of the script and the commands it waited for
}

// runShell runs argv with exactly env (plus PATH, HOME and a private TMPDIR),
// so nothing of the machine's own Actions environment leaks in.
func runShell(t testing.TB, dir string, env map[string]string, argv ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	code := 0
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else {
		require.NoError(t, err, "running %v", argv)
	}
	return runResult{code: code, stdout: stdout.String(), stderr: stderr.String(),
		cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
}

func fetch(t testing.TB, env map[string]string, dest string) runResult {
	t.Helper()
	return runShell(t, ".", env, "sh", scriptPath, dest)
}

// baseEnv is a runner on p using the action at ref, downloading from srv.
func baseEnv(srv *server, ref string, p platform) map[string]string {
	return map[string]string{
		"BAZINGA_ACTION_REF":        ref,
		"BAZINGA_ACTION_REPOSITORY": actionRepo,
		"BAZINGA_RELEASE_BASE_URL":  srv.URL + releasePath,
		"GITHUB_SERVER_URL":         srv.URL, // tags are listed here: never the real GitHub
		"RUNNER_OS":                 p.runnerOS,
		"RUNNER_ARCH":               p.runnerArch,
	}
}

func TestFetchReleaseChoosesTheRunnersAssetAndVerifiesIt(t *testing.T) {
	t.Parallel()
	requireTools(t)
	cfg := loadGoreleaser(t)
	root := t.TempDir()
	rel := makeRelease(t, cfg, root, "v1.2.3", "1.2.3", platforms)
	// Another release beside it: the script must take the one of its ref.
	makeRelease(t, cfg, root, "v1.2.4", "1.2.4", platforms)
	srv := serve(t, root)

	for _, p := range platforms {
		t.Run(p.runnerOS+"/"+p.runnerArch, func(t *testing.T) {
			srv.mu.Lock()
			srv.paths = nil
			srv.mu.Unlock()
			dest := filepath.Join(t.TempDir(), "bin", "bazinga")
			res := fetch(t, baseEnv(srv, "v1.2.3", p), dest)
			require.Equal(t, exitInstalled, res.code, "stderr: %s", res.stderr)

			archive := archiveName(t, cfg, "1.2.3", p.goos, p.goarch)
			got, err := os.ReadFile(dest)
			require.NoError(t, err)
			assert.Equal(t, string(rel.binaries[archive]), string(got), "installed the %s/%s binary", p.goos, p.goarch)
			info, err := os.Stat(dest)
			require.NoError(t, err)
			assert.NotZero(t, info.Mode().Perm()&0o100, "executable")
			assert.Contains(t, res.stderr, "sha256")
			assert.Contains(t, res.stderr, "verified")
			// Exactly the names GoReleaser publishes: the checksums file, then the archive.
			assert.Equal(t, []string{releasePath + "/v1.2.3/" + rel.checksums, releasePath + "/v1.2.3/" + archive}, srv.requested())
		})
	}
}

func TestFetchReleaseDefaultURLIsTheActionRepositorysReleases(t *testing.T) {
	t.Parallel()
	requireTools(t)
	cfg := loadGoreleaser(t)
	root := t.TempDir()
	makeRelease(t, cfg, root, "v2.0.0", "2.0.0", platforms[:1])
	srv := serve(t, root)
	env := baseEnv(srv, "v2.0.0", platforms[0])
	delete(env, "BAZINGA_RELEASE_BASE_URL")
	env["GITHUB_SERVER_URL"] = srv.URL // a GitHub Enterprise server, say
	dest := filepath.Join(t.TempDir(), "bazinga")

	res := fetch(t, env, dest)
	require.Equal(t, exitInstalled, res.code, "stderr: %s", res.stderr)
	assert.FileExists(t, dest)
	assert.Contains(t, res.stderr, srv.URL+releasePath+"/v2.0.0/")
}

func TestFetchReleaseUnameOutsideActions(t *testing.T) {
	t.Parallel()
	requireTools(t)
	var here *platform
	for i, p := range platforms {
		if p.goos == runtime.GOOS && p.goarch == runtime.GOARCH {
			here = &platforms[i]
		}
	}
	if here == nil {
		t.Skipf("no release is published for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	cfg := loadGoreleaser(t)
	root := t.TempDir()
	rel := makeRelease(t, cfg, root, "v1.0.0", "1.0.0", platforms)
	srv := serve(t, root)
	env := baseEnv(srv, "v1.0.0", *here)
	delete(env, "RUNNER_OS")
	delete(env, "RUNNER_ARCH")
	dest := filepath.Join(t.TempDir(), "bazinga")

	res := fetch(t, env, dest)
	require.Equal(t, exitInstalled, res.code, "stderr: %s", res.stderr)
	got, err := os.ReadFile(dest)
	require.NoError(t, err)
	assert.Equal(t, string(rel.binaries[archiveName(t, cfg, "1.0.0", here.goos, here.goarch)]), string(got))
}

func TestFetchReleaseFallsBackWhenNoReleaseApplies(t *testing.T) {
	t.Parallel()
	requireTools(t)
	cfg := loadGoreleaser(t)
	root := t.TempDir()
	// v1.2.3 exists for Linux only; its archive for arm64 was never uploaded
	// though the checksums list it (an upload cut short).
	rel := makeRelease(t, cfg, root, "v1.2.3", "1.2.3", platforms[:2])
	require.NoError(t, os.Remove(filepath.Join(rel.dir, archiveName(t, cfg, "1.2.3", "linux", "arm64"))))
	srv := serve(t, root)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	linux, mac := platforms[0], platforms[3]
	tests := []struct {
		name     string
		env      func() map[string]string
		stderr   string
		noAccess bool // decided without asking the server
	}{
		{"a branch ref", func() map[string]string { return baseEnv(srv, "main", linux) }, "'main' is not a release tag", true},
		{"a branch that looks like a version", func() map[string]string { return baseEnv(srv, "v1-fixes", linux) }, "'v1-fixes' is not a release tag", true},
		{"a short sha", func() map[string]string { return baseEnv(srv, "3f1c2a9", linux) }, "'3f1c2a9' is not a release tag", true},
		{"a sha when the tags cannot be listed", func() map[string]string {
			return baseEnv(srv, "3f1c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39", linux)
		}, "cannot list the tags of bazinga-bot/bazinga to resolve '3f1c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39'", false},
		{"no ref (a local action, uses: ./)", func() map[string]string { return baseEnv(srv, "", linux) }, "ref is unknown", true},
		{"no release for the tag (a fork)", func() map[string]string { return baseEnv(srv, "v9.9.9", linux) }, "no release v9.9.9", false},
		{"the release has no asset for the platform", func() map[string]string { return baseEnv(srv, "v1.2.3", mac) }, "lists no bazinga_1.2.3_darwin_arm64.tar.gz", false},
		{"the archive is missing", func() map[string]string { return baseEnv(srv, "v1.2.3", platforms[1]) }, "HTTP 404", false},
		{"Windows", func() map[string]string {
			return baseEnv(srv, "v1.2.3", platform{runnerOS: "Windows", runnerArch: "X64"})
		}, "no prebuilt release for OS 'Windows'", true},
		{"32-bit ARM", func() map[string]string {
			return baseEnv(srv, "v1.2.3", platform{runnerOS: "Linux", runnerArch: "ARM"})
		}, "no prebuilt release for architecture 'ARM'", true},
		{"the download fails", func() map[string]string {
			env := baseEnv(srv, "v1.2.3", linux)
			env["BAZINGA_RELEASE_BASE_URL"] = closedURL + releasePath
			return env
		}, "failed (curl exit", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(srv.requested())
			dest := filepath.Join(t.TempDir(), "bazinga")
			res := fetch(t, tc.env(), dest)
			assert.Equal(t, exitFallback, res.code, "stderr: %s", res.stderr)
			assert.Contains(t, res.stderr, tc.stderr)
			assert.Contains(t, res.stderr, "building bazinga from source")
			assert.NoFileExists(t, dest)
			if tc.noAccess {
				assert.Len(t, srv.requested(), before, "decided without a download")
			}
		})
	}
}

// commitOf is a made-up commit id for a name.
func commitOf(name string) string {
	sum := sha256.Sum256([]byte("commit " + name))
	return hex.EncodeToString(sum[:20])
}

// tagRef is one tag of the fake action repository.
type tagRef struct {
	name, commit string
	annotated    bool // advertised as a tag object plus its peeled (^{}) commit
}

// writeRefs serves the repository's ref advertisement as git's smart HTTP
// does (GET <repo>.git/info/refs?service=git-upload-pack, protocol v0
// pkt-lines), with HEAD, a branch and tags.
func writeRefs(t testing.TB, root string, tags []tagRef) {
	t.Helper()
	pkt := func(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }
	var b strings.Builder
	b.WriteString(pkt("# service=git-upload-pack\n") + "0000")
	b.WriteString(pkt(commitOf("main") + " HEAD\x00multi_ack thin-pack side-band side-band-64k ofs-delta shallow no-progress include-tag symref=HEAD:refs/heads/main agent=git/github\n"))
	b.WriteString(pkt(commitOf("main") + " refs/heads/main\n"))
	for _, tg := range tags {
		if tg.annotated {
			b.WriteString(pkt(commitOf("tag object "+tg.name) + " refs/tags/" + tg.name + "\n"))
			b.WriteString(pkt(tg.commit + " refs/tags/" + tg.name + "^{}\n"))
		} else {
			b.WriteString(pkt(tg.commit + " refs/tags/" + tg.name + "\n"))
		}
	}
	b.WriteString("0000")
	dir := filepath.Join(root, filepath.FromSlash(actionRepo)+".git", "info")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "refs"), []byte(b.String()), 0o644))
}

func TestFetchReleaseResolvesMovingTagsAndShas(t *testing.T) {
	t.Parallel()
	requireTools(t)
	cfg := loadGoreleaser(t)
	root := t.TempDir()
	a, b, c, d := commitOf("a"), commitOf("b"), commitOf("c"), commitOf("d")
	rels := map[string]release{}
	for _, tag := range []string{"v1.2.3", "v1.3.0-rc.1", "v1.3.0", "v2.0.0"} {
		rels[tag] = makeRelease(t, cfg, root, tag, strings.TrimPrefix(tag, "v"), platforms)
	}
	writeRefs(t, root, []tagRef{
		{"v1.2.3", a, true},
		{"v1.2", a, true},
		{"v1.3.0-rc.1", b, false},
		{"v1.3.0", b, true},
		{"v1", b, false},
		{"v2.0.0", c, false},
		{"v2", d, false}, // moved past the last release
	})
	srv := serve(t, root)
	linux := platforms[0]
	archive := func(tag string) string {
		return archiveName(t, cfg, strings.TrimPrefix(tag, "v"), linux.goos, linux.goarch)
	}

	installs := []struct{ ref, release string }{
		{"v1", "v1.3.0"}, // the final release, not the pre-release on the same commit
		{"v1.2", "v1.2.3"},
		{a, "v1.2.3"},
		{strings.ToUpper(b), "v1.3.0"},
		{c, "v2.0.0"},
	}
	for _, tc := range installs {
		t.Run(tc.ref, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "bazinga")
			res := fetch(t, baseEnv(srv, tc.ref, linux), dest)
			require.Equal(t, exitInstalled, res.code, "stderr: %s", res.stderr)
			assert.Contains(t, res.stderr, "the action's ref '"+tc.ref+"' is release "+tc.release)
			got, err := os.ReadFile(dest)
			require.NoError(t, err)
			assert.Equal(t, string(rels[tc.release].binaries[archive(tc.release)]), string(got))
		})
	}

	fallbacks := []struct{ ref, stderr string }{
		{"v2", "no release tag (vX.Y.Z) of bazinga-bot/bazinga is at 'v2' (" + d + ")"},
		{"v3", "bazinga-bot/bazinga has no tag 'v3'"},
		{d, "no release tag (vX.Y.Z) of bazinga-bot/bazinga is at '" + d + "'"},
		{commitOf("main"), "no release tag"},
	}
	for _, tc := range fallbacks {
		t.Run(tc.ref, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "bazinga")
			res := fetch(t, baseEnv(srv, tc.ref, linux), dest)
			assert.Equal(t, exitFallback, res.code, "stderr: %s", res.stderr)
			assert.Contains(t, res.stderr, tc.stderr)
			assert.NoFileExists(t, dest)
		})
	}

	t.Run("no repository to list the tags of", func(t *testing.T) {
		env := baseEnv(srv, "v1", linux)
		delete(env, "BAZINGA_ACTION_REPOSITORY")
		res := fetch(t, env, filepath.Join(t.TempDir(), "bazinga"))
		assert.Equal(t, exitFallback, res.code, "stderr: %s", res.stderr)
		assert.Contains(t, res.stderr, "the action's repository is unknown")
	})
}

// TestFetchReleaseResolvesThroughGitHTTPBackend resolves refs against git's
// own smart HTTP server (git http-backend, the protocol GitHub speaks), so the
// parsing of the ref advertisement is checked on real bytes.
func TestFetchReleaseResolvesThroughGitHTTPBackend(t *testing.T) {
	t.Parallel()
	requireTools(t)
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: this test uses git http-backend as the server")
	}
	cfg := loadGoreleaser(t)
	root := t.TempDir()
	work := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command(gitPath, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_CONFIG_NOSYSTEM=1", "HOME="+work)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(work, "f"), []byte("1\n"), 0o644))
	git("add", "f")
	git("commit", "-q", "-m", "one")
	released := git("rev-parse", "HEAD")
	git("tag", "-a", "-m", "v1.4.0", "v1.4.0") // annotated: advertised peeled
	git("tag", "v1")                           // lightweight moving tag
	require.NoError(t, os.WriteFile(filepath.Join(work, "f"), []byte("2\n"), 0o644))
	git("commit", "-q", "-am", "two")
	unreleased := git("rev-parse", "HEAD")
	git("tag", "-a", "-m", "v2", "v2")
	git("clone", "-q", "--bare", work, filepath.Join(root, filepath.FromSlash(actionRepo)+".git"))
	rel := makeRelease(t, cfg, root, "v1.4.0", "1.4.0", platforms)

	files := http.FileServer(http.Dir(root))
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Dir: root,
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + work}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, ".git/") {
			backend.ServeHTTP(w, r)
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	env := func(ref string) map[string]string {
		return map[string]string{
			"BAZINGA_ACTION_REF": ref, "BAZINGA_ACTION_REPOSITORY": actionRepo, "GITHUB_SERVER_URL": srv.URL,
			"RUNNER_OS": "Linux", "RUNNER_ARCH": "X64",
		}
	}
	want := string(rel.binaries[archiveName(t, cfg, "1.4.0", "linux", "amd64")])

	for _, ref := range []string{"v1", released} {
		dest := filepath.Join(t.TempDir(), "bazinga")
		res := fetch(t, env(ref), dest)
		require.Equal(t, exitInstalled, res.code, "ref %s; stderr: %s", ref, res.stderr)
		assert.Contains(t, res.stderr, "is release v1.4.0 ("+released+")")
		got, err := os.ReadFile(dest)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
	for _, ref := range []string{"v2", unreleased} {
		res := fetch(t, env(ref), filepath.Join(t.TempDir(), "bazinga"))
		assert.Equal(t, exitFallback, res.code, "ref %s; stderr: %s", ref, res.stderr)
		assert.Contains(t, res.stderr, "no release tag (vX.Y.Z) of "+actionRepo+" is at '"+ref+"' ("+unreleased+")")
	}
}

func TestFetchReleaseRefusesAWrongRelease(t *testing.T) {
	t.Parallel()
	requireTools(t)
	cfg := loadGoreleaser(t)
	linux := platforms[0]
	archive := archiveName(t, cfg, "1.2.3", linux.goos, linux.goarch)

	tests := []struct {
		name   string
		spoil  func(t *testing.T, root string, rel release)
		stderr []string
	}{
		{"the archive does not match its checksum", func(t *testing.T, root string, rel release) {
			evil := tarGz(t, map[string][]byte{"bazinga": fakeBinary("bazinga 1.2.3", "evil", "evil")})
			require.NoError(t, os.WriteFile(filepath.Join(rel.dir, archive), evil, 0o644))
		}, []string{"checksum mismatch for " + archive, "refusing to run it"}},
		{"the checksum is malformed", func(t *testing.T, root string, rel release) {
			require.NoError(t, os.WriteFile(filepath.Join(rel.dir, rel.checksums), []byte("xyz  "+archive+"\n"), 0o644))
		}, []string{"malformed sha256"}},
		{"the binary is another version's", func(t *testing.T, root string, rel release) {
			// Re-publish consistently (matching checksum) with a binary of 1.2.4.
			makeRelease(t, cfg, root, "v1.2.3", "1.2.4", platforms)
		}, []string{"says 'bazinga 1.2.4', want 'bazinga 1.2.3'"}},
		{"the archive has no binary", func(t *testing.T, root string, rel release) {
			republish(t, rel, archive, map[string][]byte{"README.md": []byte("hi\n")})
		}, []string{"has no bazinga binary"}},
		{"the binary does not run", func(t *testing.T, root string, rel release) {
			republish(t, rel, archive, map[string][]byte{"bazinga": []byte("#!/bin/sh\necho 'cannot execute binary file' >&2\nexit 126\n")})
		}, []string{"the linux/amd64 binary of " + archive + " (checksum verified) does not run here: cannot execute binary file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			rel := makeRelease(t, cfg, root, "v1.2.3", "1.2.3", platforms)
			tc.spoil(t, root, rel)
			srv := serve(t, root)
			dest := filepath.Join(t.TempDir(), "bazinga")
			env := baseEnv(srv, "v1.2.3", linux)
			env["GITHUB_ACTIONS"] = "true"

			res := fetch(t, env, dest)
			assert.Equal(t, exitError, res.code, "a wrong release is an error, never a fallback; stderr: %s", res.stderr)
			assert.Contains(t, res.stderr, "::error title=bazinga binary::")
			for _, s := range tc.stderr {
				assert.Contains(t, res.stderr, s)
			}
			assert.NotContains(t, res.stderr, "building bazinga from source")
			assert.NoFileExists(t, dest)
		})
	}
}

func TestFetchReleaseUsage(t *testing.T) {
	t.Parallel()
	requireTools(t)
	res := fetch(t, nil, "")
	assert.Equal(t, exitUsage, res.code)
	assert.Contains(t, res.stderr, "usage: fetch-release.sh DEST")
}

// actionStep is one step of action.yml's composite run.
type actionStep struct {
	ID               string            `yaml:"id"`
	Name             string            `yaml:"name"`
	If               string            `yaml:"if"`
	Uses             string            `yaml:"uses"`
	Run              string            `yaml:"run"`
	Shell            string            `yaml:"shell"`
	WorkingDirectory string            `yaml:"working-directory"`
	Env              map[string]string `yaml:"env"`
}

type actionFile struct {
	Inputs map[string]any `yaml:"inputs"`
	Runs   struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

func loadAction(t testing.TB) actionFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "action.yml"))
	require.NoError(t, err)
	var a actionFile
	require.NoError(t, yaml.Unmarshal(raw, &a), "action.yml")
	return a
}

func TestActionObtainsTheBinaryFromTheReleaseOrBuildsIt(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	require.Equal(t, "composite", a.Runs.Using, "composite, so the agent CLI of earlier steps is on PATH")
	inputs := make([]string, 0, len(a.Inputs))
	for k := range a.Inputs {
		inputs = append(inputs, k)
	}
	sort.Strings(inputs)
	// Obtaining the binary needs no input of its own (the release URL is an env
	// override); the step's inputs are all still there.
	assert.Subset(t, inputs, []string{"agent-command", "command", "config", "github-token", "step", "working-directory"})
	for _, in := range inputs {
		assert.NotContains(t, strings.ToLower(in), "release", "no input for the release download")
	}

	steps := a.Runs.Steps
	require.GreaterOrEqual(t, len(steps), 4)
	fetchStep := steps[0]
	assert.Equal(t, "binary", fetchStep.ID, "the binary is fetched first")
	assert.Contains(t, fetchStep.Run, "scripts/"+scriptPath)
	assert.Equal(t, "${{ github.action_path }}", fetchStep.WorkingDirectory)
	assert.Equal(t, "${{ github.action_ref }}", fetchStep.Env["BAZINGA_ACTION_REF"])
	assert.Equal(t, "${{ github.action_repository }}", fetchStep.Env["BAZINGA_ACTION_REPOSITORY"])

	// Go is set up and bazinga built only on the fallback path.
	var setupGo, build, run *actionStep
	for i := range steps {
		s := &steps[i]
		switch {
		case strings.HasPrefix(s.Uses, "actions/setup-go@"):
			setupGo = s
		case strings.Contains(s.Run, "go build"):
			build = s
		case s.ID == "run":
			run = s
		}
	}
	require.NotNil(t, setupGo, "setup-go for the fallback")
	require.NotNil(t, build, "go build for the fallback")
	require.NotNil(t, run, "the bazinga step")
	const onBuild = "steps.binary.outputs.source == 'build'"
	assert.Equal(t, onBuild, setupGo.If)
	assert.Equal(t, onBuild, build.If)
	assert.Empty(t, run.If, "bazinga runs whichever way it was obtained")
	assert.Contains(t, build.Run, "./cmd/"+loadGoreleaser(t).Builds[0].Binary)

	// All three agree on where the binary is.
	const bin = `"$RUNNER_TEMP/bazinga"`
	assert.Contains(t, fetchStep.Run, bin)
	assert.Contains(t, build.Run, "-o "+bin)
	assert.Contains(t, run.Run, bin+" action")
}

// TestActionFetchStep runs action.yml's own fetch step script (as the runner
// would, with bash) and checks how it maps the script's outcome to the step's
// output and status.
func TestActionFetchStep(t *testing.T) {
	t.Parallel()
	requireTools(t)
	cfg := loadGoreleaser(t)
	a := loadAction(t)
	fetchStep := a.Runs.Steps[0]
	require.Equal(t, "bash", fetchStep.Shell)
	root := t.TempDir()
	rel := makeRelease(t, cfg, root, "v1.2.3", "1.2.3", platforms)
	srv := serve(t, root)

	tests := []struct {
		name   string
		ref    string
		spoil  bool
		code   int
		output string
		binary bool
	}{
		{"a release", "v1.2.3", false, 0, "source=release\n", true},
		{"a branch", "main", false, 0, "source=build\n", false},
		{"a mismatch", "v1.2.3", true, exitError, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.spoil {
				evil := tarGz(t, map[string][]byte{"bazinga": fakeBinary("bazinga 1.2.3", "x", "y")})
				require.NoError(t, os.WriteFile(filepath.Join(rel.dir, archiveName(t, cfg, "1.2.3", "linux", "amd64")), evil, 0o644))
			}
			runnerTemp := t.TempDir()
			output := filepath.Join(t.TempDir(), "github_output")
			require.NoError(t, os.WriteFile(output, nil, 0o644))
			env := baseEnv(srv, tc.ref, platforms[0])
			env["RUNNER_TEMP"] = runnerTemp
			env["GITHUB_OUTPUT"] = output
			script := filepath.Join(t.TempDir(), "step.sh")
			require.NoError(t, os.WriteFile(script, []byte(fetchStep.Run), 0o644))

			// The runner runs a bash step as bash --noprofile --norc -eo pipefail FILE.
			res := runShell(t, repoRoot, env, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
			assert.Equal(t, tc.code, res.code, "stderr: %s", res.stderr)
			out, err := os.ReadFile(output)
			require.NoError(t, err)
			assert.Equal(t, tc.output, string(out))
			if tc.binary {
				assert.FileExists(t, filepath.Join(runnerTemp, "bazinga"))
			} else {
				assert.NoFileExists(t, filepath.Join(runnerTemp, "bazinga"))
			}
		})
	}
}

func TestGoreleaserBuildsWhatTheActionExpects(t *testing.T) {
	t.Parallel()
	cfg := loadGoreleaser(t)
	assert.Equal(t, 2, cfg.Version, "GoReleaser v2 schema")
	assert.Equal(t, "bazinga", cfg.ProjectName)
	b := cfg.Builds[0]
	assert.Equal(t, "./cmd/bazinga", b.Main)
	assert.Equal(t, "bazinga", b.Binary)
	assert.Contains(t, b.Env, "CGO_ENABLED=0", "static binaries")
	assert.Contains(t, b.Flags, "-trimpath")
	require.Len(t, b.Ldflags, 1)
	assert.Regexp(t, regexp.MustCompile(`-X main\.version=\{\{ ?\.Version ?\}\}`), b.Ldflags[0])
	assert.ElementsMatch(t, []string{"linux", "darwin"}, b.Goos)
	assert.ElementsMatch(t, []string{"amd64", "arm64"}, b.Goarch)

	ar := cfg.Archives[0]
	assert.Equal(t, []string{"tar.gz"}, ar.Formats, "fetch-release.sh extracts with tar -xz")
	assert.Equal(t, []string{b.ID}, ar.IDs)
	assert.Equal(t, "sha256", cfg.Checksum.Algorithm, "fetch-release.sh verifies sha256")

	// The names fetch-release.sh computes (the fetch tests serve these).
	assert.Equal(t, "bazinga_1.2.3_linux_amd64.tar.gz", archiveName(t, cfg, "1.2.3", "linux", "amd64"))
	assert.Equal(t, "bazinga_1.2.3-rc.1_darwin_arm64.tar.gz", archiveName(t, cfg, "1.2.3-rc.1", "darwin", "arm64"))
	assert.Equal(t, "bazinga_1.2.3_checksums.txt", checksumsName(t, cfg, "1.2.3"))

	// The ldflag stamps a variable that exists: main.version in cmd/bazinga.
	fset := token.NewFileSet()
	pkgDir := filepath.Join(repoRoot, filepath.FromSlash(b.Main))
	entries, err := os.ReadDir(pkgDir)
	require.NoError(t, err)
	found := false
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(pkgDir, e.Name()), nil, 0)
		require.NoError(t, err)
		if f.Name.Name != "main" {
			continue
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					found = found || n.Name == "version"
				}
			}
		}
	}
	assert.True(t, found, "package main of %s declares var version (set by -X main.version)", b.Main)
}

func TestReleaseWorkflow(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(repoRoot, ".github", "workflows", "release.yml"))
	require.NoError(t, err)
	var wf struct {
		On struct {
			Push struct {
				Tags []string `yaml:"tags"`
			} `yaml:"push"`
		} `yaml:"on"`
		Permissions map[string]string `yaml:"permissions"`
		Jobs        map[string]struct {
			Permissions map[string]string `yaml:"permissions"`
			Steps       []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
				Env  map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &wf), "release.yml")
	require.Len(t, wf.On.Push.Tags, 1)
	// GitHub's filter pattern for the tags that are releases: v1.2.3, v1.2.3-rc.1, not v1.
	filter := regexp.MustCompile("^" + strings.NewReplacer(".", `\.`, "*", ".*").Replace(wf.On.Push.Tags[0]) + "$")
	for tag, release := range map[string]bool{"v1.2.3": true, "v10.0.1-rc.1": true, "v1": false, "v1.2": false, "main": false} {
		assert.Equal(t, release, filter.MatchString(tag), "tag %s starts a release: %v", tag, release)
	}
	assert.Equal(t, map[string]string{"contents": "write"}, wf.Permissions, "contents: write and nothing else")
	found := false
	for name, job := range wf.Jobs {
		assert.Empty(t, job.Permissions, "job %s widens no permission", name)
		for _, s := range job.Steps {
			if !strings.HasPrefix(s.Uses, "goreleaser/goreleaser-action@") {
				continue
			}
			found = true
			assert.Regexp(t, `^v2\.\d+\.\d+$`, s.With["version"], "a pinned GoReleaser v2")
			assert.Contains(t, s.With["args"], "release")
			assert.Equal(t, "${{ secrets.GITHUB_TOKEN }}", s.Env["GITHUB_TOKEN"])
			assert.Equal(t, "${{ github.ref_name }}", s.Env["GORELEASER_CURRENT_TAG"], "the pushed tag, not a moving tag at the same commit")
		}
	}
	assert.True(t, found, "a job runs goreleaser-action")
}
