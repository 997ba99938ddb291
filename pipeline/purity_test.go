package pipeline

import (
	"go/build"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ioPackages are the standard library's doors to the outside world: the
// engine is handed everything it reads (ARCHITECTURE.md §2), so it opens none.
var ioPackages = []string{
	"database/sql", "io/fs", "io/ioutil", "log", "log/slog", "net", "net/http", "os", "os/exec",
	"os/signal", "path/filepath", "syscall",
}

// TestPipelineImportsOnlyPureStandardLibrary holds the engine to its cut: it
// imports the standard library only, and none of its I/O. A YAML parser, a
// GitHub or git type, or any package of ours would make the first check fail:
// the configuration file is read and parsed by the config package, which hands
// the engine a pipeline.Config.
func TestPipelineImportsOnlyPureStandardLibrary(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	require.NotEmpty(t, pkg.Imports, "the engine's imports were read")
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		assert.False(t, strings.Contains(first, "."), "pipeline imports %s: the engine imports the standard library only (a module path starts with a domain)", imp)
		assert.NotContains(t, strings.ToLower(imp), "yaml", "pipeline imports %s: configuration parsing belongs to the config package", imp)
		assert.NotContains(t, ioPackages, imp, "pipeline imports %s: the engine does no I/O", imp)
	}
}
