package config

import (
	"go/build"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigImports holds the package to its place in the graph
// (ARCHITECTURE.md §2): it knows the engine's types and a YAML parser, and
// nothing else of ours or of the outside world; the file's bytes are handed to it.
func TestConfigImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	require.NoError(t, err)
	allowed := map[string]bool{"github.com/bazinga-bot/bazinga/pipeline": true, "go.yaml.in/yaml/v3": true}
	io := []string{"database/sql", "io/fs", "io/ioutil", "net", "net/http", "os", "os/exec", "path/filepath", "syscall"}
	require.Contains(t, pkg.Imports, "go.yaml.in/yaml/v3", "the imports were read")
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		if strings.Contains(first, ".") {
			assert.True(t, allowed[imp], "config imports %s: it may import only the engine and the YAML parser", imp)
		}
		assert.NotContains(t, io, imp, "config imports %s: reading the file is the caller's job", imp)
	}
}
