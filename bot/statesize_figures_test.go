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
	t.Logf("per group: %d characters", (last-first)/(lastN-firstN))

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
