package bot

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/require"
)

// TestStateSizeFigures measures the state's size per group and per step
// (BENCHMARKS.md, "bot: the state's size"): the signed state block as the
// tracking comment would store it whole, and the tracking comment that is
// written (fitted under GitHub's limit). Run with -v to see the figures.
func TestStateSizeFigures(t *testing.T) {
	block := func(st codec.State) int { return utf8.RuneCountInString(mustBlock(t, st)) }
	written := func(st codec.State) int {
		body, err := fitTracking(st, st.RepoURL, coreSigningKey)
		require.NoError(t, err)
		return utf8.RuneCountInString(body)
	}
	share := pipeline.MaxPlanTextBytes / pipeline.MaxGroups
	t.Logf("per group: right after planning, names of 15 and tasks of %d bytes of random text (the budget's share at %d groups), issue body 65,536 characters", share-15, pipeline.MaxGroups)
	t.Logf("| groups | state block (characters) | tracking comment written |")
	var first, last, firstN, lastN int
	for _, n := range []int{1, 8, 16, 32, 64} {
		st := generated(rand.New(rand.NewPCG(7, uint64(n))), sizeSpec{groups: n, nameBytes: 15, taskBytes: share - 15, criteria: 3, criterionBytes: 100,
			reqBytes: codec.MaxCommentChars, steps: 1, summaryBytes: 100})
		b := block(st)
		t.Logf("| %d | %d | %d |", n, b, written(st))
		if n == 1 {
			first, firstN = b, n
		}
		last, lastN = b, n
	}
	t.Logf("per group: %d characters (1 to %d groups)", (last-first)/(lastN-firstN), lastN)

	// Tasks are referenced, not copied (issue 27): the state's size per group
	// does not depend on how long the tasks are. The pm step's handoff (kept
	// at most MaxStoredHandoffBytes, a cost per step) is the only place the
	// plan's text is in the state.
	t.Logf("per group, by task length: names of 15 bytes, tasks of 20 or %d bytes (random text), issue body 65,536 characters", pipeline.MaxTaskBytes)
	t.Logf("| groups | state block, tasks of 20 bytes | state block, tasks of %d bytes | difference |", pipeline.MaxTaskBytes)
	var diffs []int
	for _, n := range []int{1, 3, 5} {
		var sizes []int
		for _, task := range []int{20, pipeline.MaxTaskBytes} {
			st := generated(rand.New(rand.NewPCG(7, uint64(n))), sizeSpec{groups: n, nameBytes: 15, taskBytes: task, criteria: 3, criterionBytes: 100,
				reqBytes: codec.MaxCommentChars, steps: 1, summaryBytes: 100})
			require.Len(t, st.Session.Groups, n, "the plan is within the budgets")
			sizes = append(sizes, block(st))
		}
		diffs = append(diffs, sizes[1]-sizes[0])
		t.Logf("| %d | %d | %d | %d |", n, sizes[0], sizes[1], sizes[1]-sizes[0])
	}
	// Copied, four more tasks of 2,000 random bytes would add about 8,800
	// characters (gzip keeps 83%, base64 adds a third); referenced, the
	// difference is the pm's handoff alone, capped per step.
	require.Less(t, diffs[2]-diffs[0], 400, "the state grows with the tasks' length")
	t.Logf("the difference does not grow with the groups: %d characters at 1 group, %d at 5 (the pm's stored handoff, capped at %d bytes)",
		diffs[0], diffs[2], pipeline.MaxStoredHandoffBytes)

	t.Logf("per step: %d groups at the budget, results with 1-3 summary lines of 200 bytes and handoffs of 0-1,000 bytes (random text)", pipeline.MaxGroups)
	t.Logf("| results fed | steps | state block whole (characters) | tracking comment written |")
	first, last = 0, 0
	var s0, s1 int
	for _, n := range []int{20, 60, 120, 240} {
		st := generated(rand.New(rand.NewPCG(7, 64)), sizeSpec{groups: pipeline.MaxGroups, nameBytes: 15, taskBytes: share - 15, criteria: 3, criterionBytes: 100,
			reqBytes: codec.MaxCommentChars, steps: n, summaryBytes: 200, handoffBytes: 1000})
		b := block(st)
		w := written(st)
		require.LessOrEqual(t, w, codec.MaxCommentChars)
		t.Logf("| %d | %d | %d | %d |", n, len(st.Session.Steps), b, w)
		if first == 0 {
			first, s0 = b, len(st.Session.Steps)
		}
		last, s1 = b, len(st.Session.Steps)
	}
	t.Logf("per step, stored whole: %d characters; the written comment stays under %d by dropping old steps", (last-first)/(s1-s0), codec.MaxCommentChars)
}

func mustBlock(t *testing.T, st codec.State) string {
	t.Helper()
	b, err := codec.EncodeState(st, coreSigningKey)
	require.NoError(t, err)
	return b
}
