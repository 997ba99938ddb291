package testcmd

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Layouts as real repositories have them (the files that matter, and some
// that must not).
func TestDetect(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  Detection
		// others, when set, are the other candidates listed.
		others []string
	}{
		{"empty", map[string]string{}, Detection{}, nil},
		{"only a README", map[string]string{"README.md": "# hi", "LICENSE": ""}, Detection{}, nil},
		{"Go module", map[string]string{"go.mod": "module example.com/x\n", "main.go": "", "x/x_test.go": ""},
			Detection{Command: "go test ./...", Ecosystem: "Go", Reason: "go.mod"}, nil},
		{"Node, npm with lockfile and dependencies", map[string]string{
			"package.json":      `{"name":"web","scripts":{"test":"jest","build":"tsc"},"devDependencies":{"jest":"^29"}}`,
			"package-lock.json": "{}", "src/index.ts": "", "node_modules/left-pad/package.json": `{"scripts":{"test":"x"}}`,
		}, Detection{Command: "npm test", Build: "npm ci", Ecosystem: "Node (npm)", Reason: "package.json scripts.test; package-lock.json"}, nil},
		{"Node, no lockfile, no dependencies", map[string]string{
			"package.json": `{"name":"lib","scripts":{"test":"node --test"}}`, "index.js": "", "index.test.js": "",
		}, Detection{Command: "npm test", Ecosystem: "Node (npm)", Reason: "package.json scripts.test; no lockfile: npm"}, nil},
		{"Node, pnpm by lockfile", map[string]string{
			"package.json": `{"scripts":{"test":"vitest run"},"devDependencies":{"vitest":"1"}}`, "pnpm-lock.yaml": "lockfileVersion: '9.0'",
		}, Detection{Command: "pnpm test", Build: "pnpm install --frozen-lockfile", Ecosystem: "Node (pnpm)", Reason: "package.json scripts.test; pnpm-lock.yaml"}, nil},
		{"Node, yarn classic", map[string]string{
			"package.json": `{"scripts":{"test":"mocha"},"dependencies":{"express":"4"}}`, "yarn.lock": "# yarn lockfile v1",
		}, Detection{Command: "yarn test", Build: "yarn install --frozen-lockfile", Ecosystem: "Node (yarn)", Reason: "package.json scripts.test; yarn.lock"}, nil},
		{"Node, yarn berry", map[string]string{
			"package.json": `{"scripts":{"test":"jest"},"dependencies":{"a":"1"}}`, "yarn.lock": "", ".yarnrc.yml": "nodeLinker: node-modules",
		}, Detection{Command: "yarn test", Build: "yarn install --immutable", Ecosystem: "Node (yarn)", Reason: "package.json scripts.test; yarn.lock"}, nil},
		{"Node, packageManager field wins over a stray lockfile", map[string]string{
			"package.json": `{"packageManager":"pnpm@9.1.0","scripts":{"test":"vitest"}}`, "package-lock.json": "{}",
		}, Detection{Command: "pnpm test", Ecosystem: "Node (pnpm)", Reason: "package.json scripts.test; packageManager pnpm@9.1.0"}, nil},
		{"Node, bun", map[string]string{"package.json": `{"scripts":{"test":"bun test"}}`, "bun.lockb": ""},
			Detection{Command: "bun run test", Ecosystem: "Node (bun)", Reason: "package.json scripts.test; bun.lockb"}, nil},
		{"Node, npm init's placeholder is not a test suite", map[string]string{
			"package.json": `{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}`,
		}, Detection{}, nil},
		{"Node, package.json that is not JSON", map[string]string{"package.json": `{"scripts":`}, Detection{}, nil},
		{"Deno", map[string]string{"deno.json": `{"tasks":{}}`, "main_test.ts": ""},
			Detection{Command: "deno test", Ecosystem: "Deno", Reason: "deno.json"}, nil},
		{"Rust crate", map[string]string{"Cargo.toml": "[package]\nname = \"x\"\n", "Cargo.lock": "", "src/lib.rs": ""},
			Detection{Command: "cargo test", Ecosystem: "Rust", Reason: "Cargo.toml"}, nil},
		{"Rust workspace", map[string]string{"Cargo.toml": "[workspace]\nmembers = [\"a\", \"b\"]\n", "a/Cargo.toml": "", "b/Cargo.toml": ""},
			Detection{Command: "cargo test --workspace", Ecosystem: "Rust", Reason: "Cargo.toml [workspace]"}, nil},
		{"Gradle with wrapper", map[string]string{"build.gradle.kts": "", "settings.gradle.kts": "", "gradlew": "#!/bin/sh", "gradle/wrapper/gradle-wrapper.properties": ""},
			Detection{Command: "./gradlew test", Ecosystem: "Gradle", Reason: "build.gradle.kts; the Gradle wrapper (gradlew)", JUnit: "**/build/test-results/test/*.xml"}, nil},
		{"Gradle without wrapper", map[string]string{"build.gradle": "plugins { id 'java' }", "src/test/java/AppTest.java": ""},
			Detection{Command: "gradle test", Ecosystem: "Gradle", Reason: "build.gradle", JUnit: "**/build/test-results/test/*.xml"}, nil},
		{"Maven", map[string]string{"pom.xml": "<project/>", "src/test/java/AppTest.java": ""},
			Detection{Command: "mvn -B test", Ecosystem: "Maven", Reason: "pom.xml", JUnit: "**/target/surefire-reports/TEST-*.xml"}, nil},
		{"Maven with wrapper", map[string]string{"pom.xml": "<project/>", "mvnw": "", ".mvn/wrapper/maven-wrapper.properties": ""},
			Detection{Command: "./mvnw -B test", Ecosystem: "Maven", Reason: "pom.xml; the Maven wrapper (mvnw)", JUnit: "**/target/surefire-reports/TEST-*.xml"}, nil},
		{"Makefile test target wins, others listed", map[string]string{
			"Makefile": "GO ?= go\n\n.PHONY: build test\nbuild:\n\t$(GO) build ./...\ntest: build\n\t$(GO) test -race ./...\n", "go.mod": "module x",
		}, Detection{Command: "make test", Ecosystem: "Make", Reason: "Makefile has a test target"}, []string{"go test ./... (go.mod)"}},
		{"Makefile with a test variable only", map[string]string{"Makefile": "test := unit\nall:\n\techo $(test)\n", "go.mod": "module x"},
			Detection{Command: "go test ./...", Ecosystem: "Go", Reason: "go.mod"}, nil},
		{"Makefile with test among several targets", map[string]string{"makefile": "check test: lint\n\tpytest\n"},
			Detection{Command: "make test", Ecosystem: "Make", Reason: "makefile has a test target"}, nil},
		{"Makefile without test target", map[string]string{"Makefile": "build:\n\tcc -o x x.c\ntests/x:\n"}, Detection{}, nil},
		{"justfile", map[string]string{"justfile": "default:\n  just --list\n\ntest *args:\n  cargo test {{args}}\n", "Cargo.toml": "[package]"},
			Detection{Command: "just test", Ecosystem: "just", Reason: "justfile has a test recipe"}, []string{"cargo test (Cargo.toml)"}},
		{"Python, pytest configured in pyproject", map[string]string{
			"pyproject.toml": "[project]\nname = \"pkg\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n", "src/pkg/__init__.py": "", "tests/test_api.py": "",
		}, Detection{Command: "python3 -m pytest", Ecosystem: "Python (pytest)", Reason: "pyproject.toml [tool.pytest.ini_options]"}, nil},
		{"Python, pytest as a dev dependency", map[string]string{
			"requirements.txt": "requests==2.31\n", "requirements-dev.txt": "pytest>=8\nruff\n", "app.py": "", "tests/test_app.py": "def test_x():\n    assert True\n",
		}, Detection{Command: "python3 -m pytest", Ecosystem: "Python (pytest)", Reason: "requirements-dev.txt names pytest"}, nil},
		{"Python, pytest-cov alone does not count as pytest, a conftest does", map[string]string{
			"requirements.txt": "pytest-cov\n", "tests/conftest.py": "", "tests/test_a.py": "",
		}, Detection{Command: "python3 -m pytest", Ecosystem: "Python (pytest)", Reason: "tests/conftest.py"}, nil},
		{"Python, a test importing pytest", map[string]string{"setup.py": "from setuptools import setup\nsetup(name='x')\n", "test_x.py": "import pytest\n"},
			Detection{Command: "python3 -m pytest", Ecosystem: "Python (pytest)", Reason: "test_x.py imports pytest"}, nil},
		{"Python, uv project", map[string]string{"pyproject.toml": "[dependency-groups]\ndev = [\"pytest>=8\"]\n", "uv.lock": "", "tests/test_a.py": ""},
			Detection{Command: "uv run pytest", Ecosystem: "Python (pytest)", Reason: "pyproject.toml names pytest; uv.lock"}, nil},
		{"Python, Poetry project", map[string]string{"pyproject.toml": "[tool.poetry.group.dev.dependencies]\npytest = \"^8\"\n", "poetry.lock": ""},
			Detection{Command: "poetry run pytest", Build: "poetry install", Ecosystem: "Python (pytest)", Reason: "pyproject.toml names pytest; poetry.lock"}, nil},
		{"Python, tox", map[string]string{"tox.ini": "[tox]\nenv_list = py311\n\n[testenv]\ncommands = python -m unittest\n", "setup.cfg": "[metadata]\n", "tests/test_a.py": ""},
			Detection{Command: "tox", Ecosystem: "Python (tox)", Reason: "tox.ini"}, nil},
		{"Python, nox", map[string]string{"noxfile.py": "import nox\n", "pyproject.toml": "[project]\nname='x'\n"},
			Detection{Command: "nox", Ecosystem: "Python (nox)", Reason: "noxfile.py"}, nil},
		{"Python, unittest in tests/", map[string]string{"calc.py": "", "tests/test_calc.py": "import unittest\n", "README.md": ""},
			Detection{Command: "python3 -m unittest discover -s tests", Ecosystem: "Python (unittest)", Reason: "test files (tests/test_calc.py) and no sign of pytest"}, nil},
		{"Python, unittest in a tests package", map[string]string{"pyproject.toml": "[project]\nname='x'\n", "tests/__init__.py": "", "tests/unit/test_a.py": "", "tests/test_b.py": ""},
			Detection{Command: "python3 -m unittest discover -s tests -t .", Ecosystem: "Python (unittest)", Reason: "test files (tests/test_b.py) and no sign of pytest"}, nil},
		{"Python, tests at the root", map[string]string{"mod.py": "", "mod_test.py": ""},
			Detection{Command: "python3 -m unittest discover", Ecosystem: "Python (unittest)", Reason: "test files (mod_test.py) and no sign of pytest"}, nil},
		{"Python project without tests", map[string]string{"pyproject.toml": "[project]\nname='x'\n", "x.py": ""}, Detection{}, nil},
		{"vendored Python tests do not count", map[string]string{".venv/lib/site-packages/foo/test_foo.py": "", "node_modules/x/test_x.py": ""}, Detection{}, nil},
		{"Go and Node: Go first, Node listed", map[string]string{"go.mod": "module x", "web/package.json": "", "package.json": `{"scripts":{"test":"vitest"}}`},
			Detection{Command: "go test ./...", Ecosystem: "Go", Reason: "go.mod"}, []string{"npm test (package.json scripts.test; no lockfile: npm)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Detect(FromMap(tt.files))
			others := got.Others
			got.Others = nil
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.others, others)
			assert.Equal(t, tt.want.Command != "", got.Found())
		})
	}
}

// A file that cannot be read counts as empty; a huge one is read in part.
func TestDetectReadErrors(t *testing.T) {
	f := Files{Paths: []string{"Makefile", "go.mod"}, Read: func(string) ([]byte, error) { return nil, errors.New("boom") }}
	assert.Equal(t, "go test ./...", Detect(f).Command)
}

func TestProgram(t *testing.T) {
	tests := []struct{ cmd, want string }{
		{"npm test", "npm"},
		{"go test ./...", "go"},
		{"CI=1 GOFLAGS=-count=1 go test ./...", "go"},
		{"./gradlew test", "./gradlew"},
		{"/usr/bin/make test", "/usr/bin/make"},
		{"test -f a.txt", ""},
		{"cd sub && make", ""},
		{"(cd sub; make)", ""},
		{"$TOOL test", ""},
		{"'unbalanced", ""},
		{"", ""},
		{"python3 -m pytest -q", "python3"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Program(tt.cmd), tt.cmd)
	}
}

func TestCanRun(t *testing.T) {
	onPath := map[string]bool{"go": true, "/usr/bin/make": true}
	lookPath := func(p string) (string, error) {
		if onPath[p] {
			return p, nil
		}
		return "", errors.New("not found")
	}
	inRepo := func(p string) bool { return p == "gradlew" }
	tests := []struct{ cmd, err string }{
		{"go test ./...", ""},
		{"npm test", `the test command "npm test" cannot run: npm is not installed (not found on PATH)`},
		{"./gradlew test", ""},
		{"./mvnw -B test", `the test command "./mvnw -B test" cannot run: ./mvnw is not in the repository`},
		{"/usr/bin/make test", ""},
		{"/opt/nowhere/tox", `the test command "/opt/nowhere/tox" cannot run: /opt/nowhere/tox is not an executable file`},
		{"test -f x && npm test", ""}, // the shell decides
	}
	for _, tt := range tests {
		err := CanRun("test command", tt.cmd, lookPath, inRepo)
		if tt.err == "" {
			assert.NoError(t, err, tt.cmd)
		} else {
			assert.EqualError(t, err, tt.err, tt.cmd)
		}
	}
}
