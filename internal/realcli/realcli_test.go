package realcli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The constants, package.json and the lock file name the same versions, exactly.
func TestPins(t *testing.T) {
	t.Parallel()
	dir, err := Dir()
	require.NoError(t, err)
	want := map[string]string{"@anthropic-ai/claude-code": ClaudeVersion, "@openai/codex": CodexVersion}

	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
		AllowScripts map[string]bool   `json:"allowScripts"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &pkg))
	assert.Equal(t, want, pkg.Dependencies)
	assert.Equal(t, map[string]bool{"@anthropic-ai/claude-code": true}, pkg.AllowScripts, "only claude-code's postinstall runs")

	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	b, err = os.ReadFile(filepath.Join(dir, "package-lock.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &lock))
	for name, v := range want {
		assert.Equal(t, v, lock.Packages["node_modules/"+name].Version, name)
	}
}

// The installed binaries are the pinned ones.
func TestInstalledVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		bin  func(testing.TB) string
		want string
	}{
		{Claude, ClaudeVersion + " (Claude Code)"},
		{Codex, "codex-cli " + CodexVersion},
	} {
		bin := tc.bin(t)
		cmd := exec.Command(bin, "--version")
		cmd.Env = []string{"PATH=" + basePath(), "HOME=" + t.TempDir()}
		out, err := cmd.Output()
		require.NoError(t, err, bin)
		assert.Equal(t, tc.want, strings.TrimSpace(string(out)))
	}
}
