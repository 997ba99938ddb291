// Package testcmd finds how a repository runs its tests, and whether that
// command can run here, before a session spends anything on a model.
//
// Detection is pure: it decides from a file listing and the contents of the
// few files it reads (package.json, a Makefile, pyproject.toml …), so local
// mode can run it on the base commit's tree, `bazinga init` on the working
// tree, and the tests on a map.
package testcmd

import (
	"encoding/json"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Files is what detection looks at: the repository's file paths
// (slash-separated, relative to its root; files only) and a way to read one.
type Files struct {
	Paths []string
	// Read returns a file's contents; an error counts as an empty file.
	Read func(path string) ([]byte, error)
}

// FromMap makes Files from paths and contents (tests, and small callers).
func FromMap(m map[string]string) Files {
	paths := make([]string, 0, len(m))
	for p := range m {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return Files{Paths: paths, Read: func(p string) ([]byte, error) { return []byte(m[p]), nil }}
}

// Detection is the test command found for a repository.
type Detection struct {
	// Command is the test command (tests.command); empty when nothing was found.
	Command string
	// Build installs what the tests need in a fresh clone (build.command), or "".
	Build string
	// JUnit is where the command writes JUnit XML reports (tests.junit), or "".
	JUnit string
	// Ecosystem names what was recognised: "Go", "Node (npm)", "Make" …
	Ecosystem string
	// Reason says which files decided it, for the person reading it.
	Reason string
	// Others are the other candidates found, "command (reason)", when a
	// repository holds more than one ecosystem.
	Others []string
}

// Found reports whether a command was detected.
func (d Detection) Found() bool { return d.Command != "" }

// Looked lists what detection looks for, for a message saying nothing was found.
const Looked = "a Makefile or justfile test target, go.mod, package.json scripts.test, deno.json, Cargo.toml, " +
	"Gradle or Maven build files, Python tests (pytest, tox, nox, unittest)"

// Detect returns the test command for the repository files describe. The
// repository's own entry point (a make or just `test` target) comes first:
// it is the command its people run. Then the ecosystems, in a fixed order;
// the ones not chosen are listed in Others.
func Detect(f Files) Detection {
	r := newRepo(f)
	var found []Detection
	for _, rule := range rules {
		if d, ok := rule(r); ok {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return Detection{}
	}
	d := found[0]
	for _, o := range found[1:] {
		d.Others = append(d.Others, o.Command+" ("+o.Reason+")")
	}
	return d
}

// repo indexes the listing.
type repo struct {
	f     Files
	paths []string
	has   map[string]bool
}

func newRepo(f Files) *repo {
	r := &repo{f: f, has: map[string]bool{}}
	for _, p := range f.Paths {
		p = strings.TrimPrefix(path.Clean(p), "./")
		r.paths = append(r.paths, p)
		r.has[p] = true
	}
	sort.Strings(r.paths)
	return r
}

// maxRead bounds what detection reads of one file.
const maxRead = 256 << 10

func (r *repo) read(p string) string {
	if !r.has[p] || r.f.Read == nil {
		return ""
	}
	b, err := r.f.Read(p)
	if err != nil {
		return ""
	}
	if len(b) > maxRead {
		b = b[:maxRead]
	}
	return string(b)
}

// first returns the first of names the root holds.
func (r *repo) first(names ...string) string {
	for _, n := range names {
		if r.has[n] {
			return n
		}
	}
	return ""
}

var rules = []func(*repo) (Detection, bool){detectMake, detectJust, detectGo, detectNode, detectDeno, detectRust, detectGradle, detectMaven, detectPython}

// makeTestRE matches a rule whose targets include test ("test:", "test
// check:", "unit test:"), not a variable assignment ("test := x").
var makeTestRE = regexp.MustCompile(`(?m)^([A-Za-z0-9_.%/-]+[ \t]+)*test([ \t]+[A-Za-z0-9_.%/-]+)*[ \t]*::?([^=]|$)`)

func detectMake(r *repo) (Detection, bool) {
	// GNU make's own search order.
	f := r.first("GNUmakefile", "makefile", "Makefile")
	if f == "" || !makeTestRE.MatchString(r.read(f)) {
		return Detection{}, false
	}
	return Detection{Command: "make test", Ecosystem: "Make", Reason: f + " has a test target"}, true
}

var justTestRE = regexp.MustCompile(`(?m)^@?test([ \t]+[^:=\n]*)?:([^=]|$)`)

func detectJust(r *repo) (Detection, bool) {
	f := r.first("justfile", "Justfile", ".justfile")
	if f == "" || !justTestRE.MatchString(r.read(f)) {
		return Detection{}, false
	}
	return Detection{Command: "just test", Ecosystem: "just", Reason: f + " has a test recipe"}, true
}

func detectGo(r *repo) (Detection, bool) {
	if !r.has["go.mod"] {
		return Detection{}, false
	}
	return Detection{Command: "go test ./...", Ecosystem: "Go", Reason: "go.mod"}, true
}

// npmPlaceholder is the test script `npm init` writes: not a test suite.
const npmPlaceholder = `echo "Error: no test specified" && exit 1`

func detectNode(r *repo) (Detection, bool) {
	if !r.has["package.json"] {
		return Detection{}, false
	}
	var pkg struct {
		Scripts         map[string]string `json:"scripts"`
		PackageManager  string            `json:"packageManager"`
		Dependencies    map[string]any    `json:"dependencies"`
		DevDependencies map[string]any    `json:"devDependencies"`
	}
	if json.Unmarshal([]byte(r.read("package.json")), &pkg) != nil {
		return Detection{}, false
	}
	test := strings.TrimSpace(pkg.Scripts["test"])
	if test == "" || test == npmPlaceholder {
		return Detection{}, false
	}
	pm, why := nodePackageManager(r, pkg.PackageManager)
	d := Detection{Ecosystem: "Node (" + pm + ")", Reason: "package.json scripts.test; " + why}
	switch pm {
	case "bun":
		d.Command = "bun run test" // `bun test` is bun's own runner, not the script
	default:
		d.Command = pm + " test"
	}
	if len(pkg.Dependencies)+len(pkg.DevDependencies) > 0 {
		// Each step tests in a fresh clone: the dependencies are installed first.
		switch pm {
		case "pnpm":
			d.Build = "pnpm install --frozen-lockfile"
		case "yarn":
			if r.has[".yarnrc.yml"] {
				d.Build = "yarn install --immutable" // Yarn 2+
			} else {
				d.Build = "yarn install --frozen-lockfile"
			}
		case "bun":
			d.Build = "bun install --frozen-lockfile"
		default:
			if r.has["package-lock.json"] || r.has["npm-shrinkwrap.json"] {
				d.Build = "npm ci"
			} else {
				d.Build = "npm install"
			}
		}
	}
	return d, true
}

// nodePackageManager picks the package manager: package.json's
// packageManager field (Corepack's), else the lockfile, else npm.
func nodePackageManager(r *repo, field string) (pm, why string) {
	if name, _, _ := strings.Cut(field, "@"); name != "" {
		switch name {
		case "npm", "pnpm", "yarn", "bun":
			return name, "packageManager " + field
		}
	}
	for _, l := range []struct{ file, pm string }{
		{"pnpm-lock.yaml", "pnpm"}, {"yarn.lock", "yarn"}, {"bun.lock", "bun"}, {"bun.lockb", "bun"},
		{"package-lock.json", "npm"}, {"npm-shrinkwrap.json", "npm"},
	} {
		if r.has[l.file] {
			return l.pm, l.file
		}
	}
	return "npm", "no lockfile: npm"
}

func detectDeno(r *repo) (Detection, bool) {
	f := r.first("deno.json", "deno.jsonc")
	if f == "" {
		return Detection{}, false
	}
	return Detection{Command: "deno test", Ecosystem: "Deno", Reason: f}, true
}

var cargoWorkspaceRE = regexp.MustCompile(`(?m)^\[workspace\]`)

func detectRust(r *repo) (Detection, bool) {
	if !r.has["Cargo.toml"] {
		return Detection{}, false
	}
	if cargoWorkspaceRE.MatchString(r.read("Cargo.toml")) {
		return Detection{Command: "cargo test --workspace", Ecosystem: "Rust", Reason: "Cargo.toml [workspace]"}, true
	}
	return Detection{Command: "cargo test", Ecosystem: "Rust", Reason: "Cargo.toml"}, true
}

func detectGradle(r *repo) (Detection, bool) {
	build := r.first("build.gradle.kts", "build.gradle", "settings.gradle.kts", "settings.gradle")
	if build == "" {
		return Detection{}, false
	}
	// Gradle writes one JUnit XML report per test class, per project.
	d := Detection{Command: "gradle test", Ecosystem: "Gradle", Reason: build, JUnit: "**/build/test-results/test/*.xml"}
	if r.has["gradlew"] {
		d.Command, d.Reason = "./gradlew test", build+"; the Gradle wrapper (gradlew)"
	}
	return d, true
}

func detectMaven(r *repo) (Detection, bool) {
	if !r.has["pom.xml"] {
		return Detection{}, false
	}
	// Surefire's reports, per module.
	d := Detection{Command: "mvn -B test", Ecosystem: "Maven", Reason: "pom.xml", JUnit: "**/target/surefire-reports/TEST-*.xml"}
	if r.has["mvnw"] {
		d.Command, d.Reason = "./mvnw -B test", "pom.xml; the Maven wrapper (mvnw)"
	}
	return d, true
}

// Python: pytest when the project says so (its configuration, a conftest.py,
// a dependency on it, a test importing it) — run through uv or Poetry when
// the project is managed by one; else the project's tox or nox; else, with
// test files but no sign of pytest, the standard library's unittest, which
// needs nothing installed.

var (
	pyTestFileRE  = regexp.MustCompile(`(^|/)(test_[^/]*|[^/]*_test)\.py$`)
	pyPytestDepRE = regexp.MustCompile(`(?m)(^|[\s"'\[,])pytest([\s"'<>=~!;\[,\]]|$)`)
	pyImportRE    = regexp.MustCompile(`(?m)^\s*(import pytest|from pytest\b)`)
	iniSectionRE  = func(name string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^\[` + regexp.QuoteMeta(name) + `\]`)
	}
	pyprojectPytestRE = iniSectionRE("tool.pytest.ini_options")
	setupCfgPytestRE  = iniSectionRE("tool:pytest")
	toxPytestRE       = iniSectionRE("pytest")
	toxEnvRE          = regexp.MustCompile(`(?m)^\[(tox|testenv)[^\]]*\]`)
)

// skipDirs are directories whose files say nothing about the project's own tests.
var skipDirs = []string{".git", "node_modules", "vendor", ".venv", "venv", ".tox", ".nox", "site-packages", "dist", "build", "target"}

func skipped(p string) bool {
	for _, part := range strings.Split(path.Dir(p), "/") {
		for _, s := range skipDirs {
			if part == s {
				return true
			}
		}
	}
	return false
}

// maxTestFilesRead bounds how many test files are read for an import of pytest.
const maxTestFilesRead = 20

func detectPython(r *repo) (Detection, bool) {
	var tests, conftest []string
	for _, p := range r.paths {
		if skipped(p) {
			continue
		}
		switch {
		case path.Base(p) == "conftest.py":
			conftest = append(conftest, p)
		case pyTestFileRE.MatchString(p):
			tests = append(tests, p)
		}
	}
	markers := r.first("pyproject.toml", "setup.py", "setup.cfg", "tox.ini", "noxfile.py", "Pipfile", "requirements.txt")
	if markers == "" && len(tests) == 0 && len(conftest) == 0 {
		return Detection{}, false
	}
	why := pytestReason(r, tests, conftest)
	if why != "" {
		d := Detection{Command: "python3 -m pytest", Ecosystem: "Python (pytest)", Reason: why}
		switch {
		case r.has["uv.lock"]:
			d.Command, d.Reason = "uv run pytest", why+"; uv.lock"
		case r.has["poetry.lock"]:
			d.Command, d.Build, d.Reason = "poetry run pytest", "poetry install", why+"; poetry.lock"
		}
		return d, true
	}
	if toxEnvRE.MatchString(r.read("tox.ini")) {
		return Detection{Command: "tox", Ecosystem: "Python (tox)", Reason: "tox.ini"}, true
	}
	if r.has["noxfile.py"] {
		return Detection{Command: "nox", Ecosystem: "Python (nox)", Reason: "noxfile.py"}, true
	}
	if len(tests) == 0 {
		return Detection{}, false
	}
	// unittest discovers test*.py below a start directory: the top
	// directory holding the tests.
	dir := topDir(tests)
	d := Detection{Command: "python3 -m unittest discover", Ecosystem: "Python (unittest)",
		Reason: "test files (" + tests[0] + ") and no sign of pytest"}
	if dir != "." {
		d.Command += " -s " + dir
		if r.has[dir+"/__init__.py"] {
			d.Command += " -t ." // a package: imported from the root
		}
	}
	return d, true
}

// pytestReason says why the project runs pytest, or "".
func pytestReason(r *repo, tests, conftest []string) string {
	switch {
	case r.has["pytest.ini"]:
		return "pytest.ini"
	case pyprojectPytestRE.MatchString(r.read("pyproject.toml")):
		return "pyproject.toml [tool.pytest.ini_options]"
	case setupCfgPytestRE.MatchString(r.read("setup.cfg")):
		return "setup.cfg [tool:pytest]"
	case toxPytestRE.MatchString(r.read("tox.ini")):
		return "tox.ini [pytest]"
	case len(conftest) > 0:
		return conftest[0]
	}
	deps := []string{"pyproject.toml", "setup.py", "setup.cfg", "Pipfile"}
	for _, p := range r.paths {
		if path.Dir(p) == "." && strings.HasPrefix(p, "requirements") && strings.HasSuffix(p, ".txt") {
			deps = append(deps, p)
		}
	}
	for _, f := range deps {
		if pyPytestDepRE.MatchString(r.read(f)) {
			return f + " names pytest"
		}
	}
	for _, t := range tests[:min(len(tests), maxTestFilesRead)] {
		if pyImportRE.MatchString(r.read(t)) {
			return t + " imports pytest"
		}
	}
	return ""
}

// topDir is the shallowest directory holding one of the files ("." for the root).
func topDir(files []string) string {
	best := ""
	for _, f := range files {
		d := path.Dir(f)
		if best == "" || strings.Count(d, "/") < strings.Count(best, "/") || d == "." {
			best = d
		}
		if d == "." {
			return "."
		}
	}
	return best
}
