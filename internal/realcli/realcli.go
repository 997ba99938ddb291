// Package realcli finds the real coding-agent CLIs that tests run against a scripted model server
// (internal/modelfake). They are pinned in package.json / package-lock.json next to this file and installed with
// `npm ci --prefix internal/realcli` (CI does it in .ci/run); node_modules is git-ignored.
package realcli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// The pinned versions; package.json must say the same (TestPins checks).
const (
	ClaudeVersion = "2.1.332"
	CodexVersion  = "0.169.0"
)

// Claude returns the absolute path of the pinned claude binary.
func Claude(t testing.TB) string {
	t.Helper()
	return bin(t, "claude")
}

// Codex returns the absolute path of the pinned codex launcher.
func Codex(t testing.TB) string {
	t.Helper()
	return bin(t, "codex")
}

// Dir is the directory holding package.json (internal/realcli of the module), found from this source file.
func Dir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("realcli: cannot locate the package source")
	}
	dir := filepath.Dir(file)
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		return "", fmt.Errorf("realcli: package.json not beside %s: %w", file, err)
	}
	return dir, nil
}

// bin finds node_modules/.bin/<name>; without it the test fails in CI (which must test the real CLIs) and is
// skipped elsewhere.
func bin(t testing.TB, name string) string {
	t.Helper()
	dir, err := Dir()
	if err == nil {
		p := filepath.Join(dir, "node_modules", ".bin", name)
		var fi os.FileInfo
		fi, err = os.Stat(p)
		switch {
		case err != nil:
		case !fi.Mode().IsRegular():
			err = fmt.Errorf("%s is not a file", p)
		case name == "claude" && fi.Size() < 1<<20:
			// The package ships a small placeholder that its postinstall replaces with the native binary.
			err = fmt.Errorf("%s is the placeholder, not the native binary (did npm run with --ignore-scripts?)", p)
		default:
			return p
		}
	}
	msg := fmt.Sprintf("%s not installed (%v): run `npm ci --prefix internal/realcli` to test against the real CLI", name, err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
