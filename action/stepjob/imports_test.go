package stepjob

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/bazinga-bot/bazinga"

// The step jobs run with a token that can write the repository (publish,
// land) next to code an agent wrote (agent, gate); they reach GitHub only
// through their own small interface (gitHub, landAPI), and none of the
// orchestrator's code (bot, or server which drives it) is linked into
// what they run, directly or through another package (issue 25).
func TestStepJobsDoNotImportBot(t *testing.T) {
	deps, err := moduleDeps(module + "/action/stepjob")
	require.NoError(t, err)
	require.Contains(t, deps, module+"/codec", "the walk follows the module's packages")
	for _, forbidden := range []string{module + "/bot", module + "/server", module + "/action"} {
		require.NotContains(t, deps, forbidden, "action/stepjob depends on %s", forbidden)
	}
}

// moduleDeps lists the module's packages that pkg imports, directly or
// not, in its non-test files, reading the sources (go/build) rather than
// asking the go command.
func moduleDeps(pkg string) ([]string, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	var deps []string
	seen := map[string]bool{pkg: true}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		bp, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(strings.TrimPrefix(p, module), "/")), 0)
		if err != nil {
			return nil, err
		}
		for _, imp := range bp.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") || seen[imp] {
				continue
			}
			seen[imp] = true
			deps = append(deps, imp)
			queue = append(queue, imp)
		}
	}
	slices.Sort(deps)
	return deps, nil
}
