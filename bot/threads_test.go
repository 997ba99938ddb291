package bot

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
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

// TestThreadErrorsNeverHoldTheSession: a refusal for good and GraphQL's own
// limit do not fail the reconcile; a secondary limit or a network error do.
func TestThreadErrorsNeverHoldTheSession(t *testing.T) {
	forbidden := fmt.Errorf("resolve: %w", ghapi.GraphQLErrors{{Type: "FORBIDDEN", Message: "Resource not accessible by integration"}})
	notFound := fmt.Errorf("list: %w", ghapi.GraphQLErrors{{Type: "NOT_FOUND", Message: "Could not resolve"}})
	gqlLimit := fmt.Errorf("list: %w", &ghapi.RateLimitedError{Resource: "graphql"})
	secondary := fmt.Errorf("list: %w", &ghapi.RateLimitedError{Resource: "content creation", Secondary: true})
	coreLimit := fmt.Errorf("list reviews: %w", &ghapi.RateLimitedError{Resource: "core"})
	assert.True(t, refusedForGood(forbidden))
	assert.True(t, refusedForGood(notFound))
	assert.False(t, refusedForGood(gqlLimit))
	assert.True(t, graphqlLimited(gqlLimit))
	assert.False(t, graphqlLimited(secondary), "a secondary limit counts REST and GraphQL alike")
	assert.False(t, graphqlLimited(coreLimit), "REST's limit holds the session as always")
	assert.False(t, refusedForGood(errors.New("connection reset")))
}
