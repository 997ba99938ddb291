package bot

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

func TestReviewMarkerStep(t *testing.T) {
	id, ok := reviewMarkerStep("text\n" + codec.EffectMarker("review/7/A/tech_lead/9"))
	require.True(t, ok)
	assert.Equal(t, "7/A/tech_lead/9", id)
	_, ok = reviewMarkerStep("text\n" + codec.EffectMarker("comment/7/3/x"))
	assert.False(t, ok, "another effect's marker")
	_, ok = reviewMarkerStep(codec.EffectPrefix + "review/")
	assert.False(t, ok, "a marker cut short")
}

// TestNextReviewResolvesFixedFindingsThreads: the tech lead's first review
// opens three threads (a HIGH, two LOWs); the developer revises; the
// second review reports one LOW again in the same file. The HIGH's thread
// is resolved, the LOWs' stay open (a LOW is still reported in their
// file), and the second review's own thread is open.
func TestNextReviewResolvesFixedFindingsThreads(t *testing.T) {
	again := []pipeline.Finding{{Severity: pipeline.SeverityLow, File: "widget.go", Line: 3, Problem: "imports still out of order"}}
	s := reviewSession(t, "", func(n int) (pipeline.Status, []pipeline.Finding) {
		if n == 1 {
			return pipeline.StatusApproved, reviewFindings
		}
		return pipeline.StatusApproved, again
	})
	require.Equal(t, pipeline.SessionDone, s.run(500))
	n, reviews := s.reviewsOn()
	require.Len(t, reviews, 2)
	assert.Equal(t, []string{"widget.go:14=true", "widget.go:3=false", "widget.go:25=false", "widget.go:3=false"}, s.gh.threadsOn(n))
	resolves := 0
	for _, c := range s.gh.recorded(true) {
		if c.Op == "ResolveReviewThread" {
			require.NoError(t, c.Err)
			resolves++
		}
	}
	assert.Equal(t, 1, resolves, "resolved once, across reconciles")
	st, _ := s.state()
	for _, p := range st.Pending {
		assert.NotEqual(t, codec.EffectResolve, p.Kind, "the effect is confirmed done")
	}
	s.assertVerifiedBazinga()
}

// TestCleanReviewResolvesEveryThread: a second review with no finding
// resolves the first review's three threads.
func TestCleanReviewResolvesEveryThread(t *testing.T) {
	s := reviewSession(t, "", func(n int) (pipeline.Status, []pipeline.Finding) {
		if n == 1 {
			return pipeline.StatusApproved, reviewFindings
		}
		return pipeline.StatusApproved, nil
	})
	require.Equal(t, pipeline.SessionDone, s.run(500))
	n, _ := s.reviewsOn()
	assert.Equal(t, []string{"widget.go:14=true", "widget.go:3=true", "widget.go:25=true"}, s.gh.threadsOn(n))
}
