package bot

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/require"
)

// TestTrackingFitsEveryBudgetedSession (issue 27): whatever plan the
// budgets let in (up to MaxGroups groups, every text up to its limit),
// whatever issue body GitHub accepts (up to 65,536 characters of
// incompressible text) and however long the history, with results whose
// summaries and handoffs are as large as an agent may send, the tracking
// comment is written, fits under GitHub's limit and reads back.
func TestTrackingFitsEveryBudgetedSession(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	worst := 0
	views := map[string]int{} // how the comments fitted
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 27))
		groups := 1 + r.IntN(pipeline.MaxGroups)
		if seed%2 == 0 {
			groups = pipeline.MaxGroups
		}
		// Each group's share of the plan's total, up to the per-group limits.
		share := pipeline.MaxPlanTextBytes / groups
		name := min(pipeline.MaxGroupNameBytes, share/4)
		task := min(pipeline.MaxTaskBytes, share-name)
		sp := sizeSpec{
			groups: groups, nameBytes: name, taskBytes: task,
			criteria: 3, criterionBytes: pipeline.MaxCriteriaBytes / 3,
			reqBytes: r.IntN(codec.MaxCommentChars + 1),
			steps:    50 + r.IntN(400), summaryBytes: pipeline.MaxSummaryLineBytes,
			handoffBytes: 16 << 10, random: seed%3 == 0,
		}
		t.Run(fmt.Sprintf("seed%d-%dgroups-%dsteps", seed, groups, sp.steps), func(t *testing.T) {
			st := generated(r, sp)
			body, err := fitTracking(st, st.RepoURL, coreSigningKey)
			require.NoError(t, err)
			n := utf8.RuneCountInString(body)
			require.LessOrEqual(t, n, codec.CommentBudget)
			worst = max(worst, n)
			view := "full"
			switch {
			case strings.Contains(body, "The group table does not fit here"):
				view = "counts only"
			case strings.Contains(body, "| Group | PR | Stage |\n"):
				view = "compact"
			}
			got, err := codec.DecodeState(body, corePublicKey)
			require.NoError(t, err)
			require.Equal(t, routingOf(st.Session), routingOf(got.Session), "the stored session routes as the full one")
			require.Equal(t, st.Session.StepSeq, got.Session.StepSeq)
			cut := false
			for _, s := range got.Session.InFlight() {
				if s.From != "" {
					from := got.Session.Step(s.From)
					require.NotNil(t, from, "step %s's handoff step %s is stored", s.ID, s.From)
					want := st.Session.Step(s.From).Result
					require.NotNil(t, from.Result, "with its result")
					require.Equal(t, want.Status, from.Result.Status)
					require.Equal(t, want.Summary, from.Result.Summary, "and its summary")
					if len(want.Handoff) > 0 {
						require.True(t, json.Valid(from.Result.Handoff), "and a handoff that is JSON, cut at worst")
						var a, b any
						require.NoError(t, json.Unmarshal(want.Handoff, &a))
						require.NoError(t, json.Unmarshal(from.Result.Handoff, &b))
						cut = cut || !reflect.DeepEqual(a, b)
					}
				}
			}
			if cut {
				view += ", read handoffs cut"
			}
			views[view]++
		})
	}
	t.Logf("largest tracking comment: %d characters of %d; views: %v", worst, codec.MaxCommentChars, views)
}

// TestTrackingViewsGolden pins what the tracking comment shows when the
// whole view does not fit beside the state block: a compact table, then
// counts only (issue 27).
func TestTrackingViewsGolden(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 3})
	h.start()
	h.steps(10)
	st, _ := h.state()
	host := func(s string) string { return strings.ReplaceAll(s, h.f.URL(), "https://github.com") }
	golden(t, "tracking_compact.md", host(renderTrackingView(&st, "https://github.com/acme/widgets", 30, viewCompact, "<!-- state -->")))
	golden(t, "tracking_minimal.md", host(renderTrackingView(&st, "https://github.com/acme/widgets", 30, viewMinimal, "<!-- state -->")))
	full := renderTracking(&st, "https://github.com/acme/widgets", 30, "")
	compact := renderTrackingView(&st, "https://github.com/acme/widgets", 30, viewCompact, "")
	minimal := renderTrackingView(&st, "https://github.com/acme/widgets", 30, viewMinimal, "")
	require.Less(t, len(compact), len(full))
	require.Less(t, len(minimal), len(compact))
}
