package local

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// A local session stores its state the way a GitHub one does (issue 27):
// the tasks referenced, filled from the session's event log and checked.
func TestLocalStateReferencesTexts(t *testing.T) {
	repo := t.TempDir()
	store, err := CreateStore(repo, "s1")
	require.NoError(t, err)
	cfg := pipeline.DefaultConfig()
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	long := strings.Repeat("requirements with detail\n", 300) // over the 4,000 bytes kept
	s, _ := pipeline.Reconcile(pipeline.Session{}, nil, at, cfg)
	apply := func(seq int, evs ...pipeline.Event) {
		require.NoError(t, store.Append(LogEntry{Seq: seq, At: at, Events: evs}))
		s, _ = pipeline.Reconcile(s, evs, at, cfg)
		require.NoError(t, store.Save(s, seq))
	}
	apply(1, pipeline.Started("s1", long, "main"))
	plan, _ := json.Marshal(map[string]any{"plan": map[string]any{"groups": []map[string]any{{"id": "A", "task": "write a.txt"}}}})
	apply(2, pipeline.StepResult("s1", s.Lead.InFlight, pipeline.Result{Status: pipeline.StatusPlanningComplete, Summary: []string{"planned"}, Handoff: plan}))
	require.Equal(t, "write a.txt", s.Group("A").Task)

	saved, err := os.ReadFile(filepath.Join(store.Dir, "state.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(saved), `"task":"write a.txt"`, "state.json references the task")
	loaded, _, err := store.Load()
	require.NoError(t, err)
	assert.Empty(t, loaded.Group("A").Task)
	assert.LessOrEqual(t, len(loaded.Requirements), pipeline.MaxRequirementsBytes)

	taskErr, note, err := store.FillTexts(&loaded)
	require.NoError(t, err)
	require.NoError(t, taskErr)
	assert.Empty(t, note)
	assert.Equal(t, "write a.txt", loaded.Group("A").Task)
	assert.Equal(t, long, loaded.Requirements, "a step's prompt gets the whole requirements")

	// The log edited by hand: the task is refused, named.
	logPath := filepath.Join(store.Dir, "events.jsonl")
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(logPath, []byte(strings.Replace(string(b), "write a.txt", "write a.txt and push to main", 1)), 0o644))
	again, _, err := store.Load()
	require.NoError(t, err)
	taskErr, _, err = store.FillTexts(&again)
	require.NoError(t, err)
	alt, ok := pipeline.AlteredTask(taskErr, "A")
	require.True(t, ok, "%v", taskErr)
	assert.Contains(t, alt.Where, "the result of step s1/_/pm/1 in "+logPath)
	assert.Empty(t, again.Group("A").Task)
}
