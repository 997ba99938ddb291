package gitops

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// gitEnv isolates the git CLI used as a test oracle from the machine's
// configuration and gives it an identity, so tests work on a fresh CI box.
func gitEnv(home string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test Author",
		"GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Test Committer",
		"GIT_COMMITTER_EMAIL=committer@example.com",
		"GIT_AUTHOR_DATE=2024-01-01T00:00:00Z",
		"GIT_COMMITTER_DATE=2024-01-01T00:00:00Z",
		"LANG=C",
	}
	return env
}

// runGit runs git in dir and returns stdout; it fails the test on error.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, code, errOut := runGitCode(t, dir, args...)
	require.Equalf(t, 0, code, "git %s: %s", strings.Join(args, " "), errOut)
	return out
}

func runGitCode(t testing.TB, dir string, args ...string) (string, int, string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.Truef(t, ok, "git %v: %v", args, err)
		code = ee.ExitCode()
	}
	return stdout.String(), code, stderr.String()
}

func requireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not available")
	}
}

// initRepo creates a repository with branch main.
func initRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	return dir
}

// writeFiles writes path→content into dir; content "\x00rm" removes.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if c == "\x00rm" {
			require.NoError(t, os.RemoveAll(full))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(c), 0o644))
	}
}

func commitAll(t testing.TB, dir, msg string) string {
	t.Helper()
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", msg)
	return strings.TrimSpace(runGit(t, dir, "rev-parse", "HEAD"))
}

// gitMergeTree asks git for the merge of two branches: the tree, whether
// it is clean, and the conflicting paths.
func gitMergeTree(t testing.TB, dir, ours, theirs string) (tree string, clean bool, conflicts []string) {
	t.Helper()
	tree, clean, conflicts, _ = gitMergeTreeMessages(t, dir, ours, theirs)
	return tree, clean, conflicts
}

// gitMergeTreeMessages is gitMergeTree with git's informational messages.
func gitMergeTreeMessages(t testing.TB, dir, ours, theirs string) (tree string, clean bool, conflicts []string, messages string) {
	t.Helper()
	out, code, errOut := runGitCode(t, dir, "merge-tree", "--write-tree", "--name-only", ours, theirs)
	require.Truef(t, code == 0 || code == 1, "merge-tree failed (%d): %s", code, errOut)
	lines := strings.Split(out, "\n")
	tree = lines[0]
	seen := map[string]bool{}
	i := 1
	for ; i < len(lines) && lines[i] != ""; i++ {
		if l := lines[i]; !seen[l] {
			seen[l] = true
			conflicts = append(conflicts, l)
		}
	}
	if i < len(lines) {
		messages = strings.Join(lines[i+1:], "\n")
	}
	return tree, code == 0, conflicts, messages
}

// makeTempDir is for benchmarks' shared fixtures, which outlive one b.
func makeTempDir(prefix string) (string, error) { return os.MkdirTemp("", prefix) }
