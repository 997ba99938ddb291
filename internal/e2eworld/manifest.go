package e2eworld

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/action/stepjob"
	"github.com/bazinga-bot/bazinga/gitops"
)

// Manifest reads and writes a hand-over's manifest as generic JSON, as an
// attacker would edit it.
type Manifest map[string]any

func ReadManifest(t *testing.T, dir string) Manifest {
	b, err := os.ReadFile(filepath.Join(dir, stepjob.HandOverManifest))
	require.NoError(t, err)
	var m Manifest
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// Write writes it back.
func (m Manifest) Write(t *testing.T, dir string) {
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, stepjob.HandOverManifest), b, 0o644))
}

// Commit is its commit object.
func (m Manifest) Commit() map[string]any { return m["commit"].(map[string]any) }

// Files are the commit's changed files.
func (m Manifest) Files() []any { return m.Commit()["files"].([]any) }

// AddFile appends a changed file with its content, consistent in size and
// hash, so that only the path (or the size) is what is wrong.
func (m Manifest) AddFile(t *testing.T, dir, path string, data []byte) {
	files := m.Files()
	i := len(files)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "files", fmt.Sprint(i)), data, 0o644))
	m.Commit()["files"] = append(files, map[string]any{"path": path, "mode": "file", "data": fmt.Sprint(i),
		"size": len(data), "blob": gitops.BlobHash(data).String()})
}
