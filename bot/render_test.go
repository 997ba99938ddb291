package bot

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files in testdata/")

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *updateGolden {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test -update")
	require.Equal(t, string(want), got)
}

// TestGoldenRenders pins the text users read: the tracking comment, a
// group PR body and a result comment, taken from a reference session.
func TestGoldenRenders(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 2})
	h.start()
	h.steps(24)
	st, _ := h.state()
	// Job runs link to the fake GitHub, whose port changes: the goldens read github.com.
	host := func(s string) string { return strings.ReplaceAll(s, h.f.URL(), "https://github.com") }
	golden(t, "tracking_running.md", host(renderTracking(&st, "https://github.com/acme/widgets", 30, "<!-- state -->")))
	// The state references the tasks (issue 27): filled, as the bot does,
	// from the pm's result comment on the issue.
	require.Empty(t, st.Session.Groups[0].Task)
	var comments []ghapi.Comment
	for _, c := range h.repo.Comments(h.issue) {
		comments = append(comments, ghapi.Comment{ID: c.GetID(), Body: c.GetBody(), URL: c.GetHTMLURL()})
	}
	require.NoError(t, st.Session.FillTasks(codec.ResultCandidates(comments)))
	g := st.Session.Groups[0]
	golden(t, "pr_body.md", prTitle(h.issue, g)+"\n\n"+prBody(h.issue, g))
	require.Equal(t, pipeline.SessionDone, h.run(500))
	st, _ = h.state()
	golden(t, "tracking_done.md", host(renderTracking(&st, "https://github.com/acme/widgets", 30, "<!-- state -->")))
	golden(t, "result_comment.md", codec.RenderResultComment(codec.ResultRecord{Step: "12/A/developer/3", Role: pipeline.RoleDeveloper, Group: "A", Model: "haiku",
		Result: pipeline.Result{Status: pipeline.StatusReadyForQA, Summary: []string{"Implemented JWT auth", "3 files", "12/12 tests pass"},
			Handoff: []byte(`{"files_changed":["jwt.go"]}`)}, StartedAt: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC), EndedAt: time.Date(2025, 3, 1, 9, 4, 0, 0, time.UTC)}))
}
