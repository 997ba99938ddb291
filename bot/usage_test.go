package bot

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// jobUsage is what the simulated job's agent reports (nil without a usage hook).
func (h *coreHarness) jobUsage(ref codec.StepRef) *pipeline.Usage {
	if h.usage == nil {
		return nil
	}
	return h.usage(ref)
}

// referenceUsage: agent steps report a cost that depends on the role and the
// step number, harness steps (merge, validate) nothing.
func referenceUsage(ref codec.StepRef) *pipeline.Usage {
	switch ref.Role {
	case pipeline.RoleMerge, pipeline.RoleValidate:
		return nil
	}
	return &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: int64(ref.N) * 10_000, InputTokens: int64(ref.N) * 1000,
		OutputTokens: 100, CacheReadTokens: 500}
}

// TestUsageThroughGitHub: usage reported by jobs reaches the session's
// totals through the result comments, shows in the tracking comment (total,
// limits, per group) with links to the job runs, and a rebuild from the
// comments after the tracking comment is lost reaches the same totals.
func TestUsageThroughGitHub(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 2, config: "limits:\n  session_cost_usd: 50\n  step_cost_usd: 5\n"})
	h.usage = referenceUsage
	h.start()
	h.steps(30)
	h.drain() // every posted result processed: the log and the state agree
	before, ok := h.state()
	require.True(t, ok)
	require.Equal(t, pipeline.SessionRunning, before.Session.Status)

	// The totals are the sum of what the finished steps reported.
	var want pipeline.Usage
	for _, st := range before.Session.Steps {
		if st.State == pipeline.StepInFlight {
			continue
		}
		ref, _ := codec.ParseStepID(st.ID)
		if u := referenceUsage(ref); u != nil {
			require.Equal(t, u, st.Usage, "step %s", st.ID)
			want.Add(*u)
		}
		require.Contains(t, st.RunURL, "/acme/widgets/actions/runs/", "step %s knows its run", st.ID)
	}
	require.False(t, want.IsZero())
	assert.Equal(t, want, before.Session.Usage)

	_, body := h.trackingComment()
	host := strings.ReplaceAll(body[:strings.Index(body, codec.StateMarker)], h.f.URL(), "https://github.com")
	golden(t, "tracking_usage.md", host)
	assert.Contains(t, host, "💰 **Usage:** "+want.Detail()+" · limits: $50.00 per session, $5.00 per step")

	// Lose the tracking comment: the rebuilt session has the same totals.
	id, _ := h.trackingComment()
	require.NoError(t, h.repo.DeleteComment("alice", id))
	h.bot = h.newBot()
	ld, err := h.bot.load(h.ctx, ghapi.New(h.botClient()), sessionRef{inst: 1, repo: ghapi.RepoRef{Owner: coreOwner, Name: coreRepo}, issue: h.issue}, 0)
	require.NoError(t, err)
	require.True(t, ld.rebuilt)
	assert.Equal(t, before.Session.Usage, ld.st.Session.Usage)
	assert.Equal(t, before.Session.Lead.Usage, ld.st.Session.Lead.Usage)
	for _, g := range before.Session.Groups {
		assert.Equal(t, g.Usage, ld.st.Session.Group(g.ID).Usage, "group %s", g.ID)
	}

	require.Equal(t, pipeline.SessionDone, h.run(500))
	h.assertVerifiedBazinga()
}

// TestSessionCostLimitOnGitHub: the session limit pauses the session with a
// comment naming the limit and the amount; /bazinga resume after raising the
// limit in .github/bazinga.yml continues to a verified BAZINGA.
func TestSessionCostLimitOnGitHub(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 2, config: "limits:\n  session_cost_usd: 0.05\n"})
	h.usage = referenceUsage
	h.start()
	h.steps(200) // until nothing moves: paused, waiting for a human
	st, ok := h.state()
	require.True(t, ok)
	require.Equal(t, pipeline.SessionPaused, st.Session.Status)
	require.Contains(t, st.Session.Reason, "limits.session_cost_usd $0.0500")
	assert.Contains(t, h.botCommentsJoined(), "reaching limits.session_cost_usd $0.0500")
	assert.Empty(t, st.Session.InFlight(), "nothing more was dispatched")

	_, err := h.repo.Push(coreOwner, "main", map[string]string{".github/bazinga.yml": "limits:\n  session_cost_usd: 100\n"}, "Raise the budget")
	require.NoError(t, err)
	h.clock.Advance(time.Minute)
	_, err = h.repo.Comment("alice", h.issue, "/bazinga resume")
	require.NoError(t, err)
	require.Equal(t, pipeline.SessionDone, h.run(500))
	h.assertVerifiedBazinga()
}

// TestGoldenResultWithUsage pins a result comment that carries usage and
// its job run.
func TestGoldenResultWithUsage(t *testing.T) {
	rec := codec.ResultRecord{Step: "12/A/developer/3", Role: pipeline.RoleDeveloper, Group: "A", Model: "haiku",
		Result:    pipeline.Result{Status: pipeline.StatusReadyForQA, Summary: []string{"Implemented JWT auth", "3 files", "12/12 tests pass"}},
		StartedAt: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC), EndedAt: time.Date(2025, 3, 1, 9, 4, 0, 0, time.UTC),
		RunURL: "https://github.com/acme/widgets/actions/runs/77",
		Usage:  &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 421_308, InputTokens: 12034, OutputTokens: 3201, CacheReadTokens: 40210, CacheWriteTokens: 8123}}
	body := codec.RenderResultComment(rec)
	golden(t, "result_comment_usage.md", body)
	back, ok := codec.ParseResultComment(body)
	require.True(t, ok)
	assert.Equal(t, rec.Usage, back.Usage, "the usage travels in the hidden record")
	s, _ := pipeline.Reconcile(pipeline.Session{}, []pipeline.Event{pipeline.Started("12", "x", "main")}, rec.StartedAt, pipeline.DefaultConfig())
	pm := s.Lead.InFlight
	ev, ok := resultEvent(s, codec.ResultRecord{Step: pm, Role: pipeline.RolePM, Group: pipeline.LeadGroup, Usage: rec.Usage, RunURL: rec.RunURL,
		Result: pipeline.Result{Status: pipeline.StatusNeedsClarification}}, false)
	require.True(t, ok)
	assert.Equal(t, rec.Usage, ev.Usage)
	assert.Equal(t, rec.RunURL, ev.RunURL)

	fail := codec.RenderFailureComment(codec.FailureRecord{Step: pm, Role: pipeline.RolePM, Group: pipeline.LeadGroup, Reason: "timed out", Usage: rec.Usage})
	fr, ok := codec.ParseFailureComment(fail)
	require.True(t, ok)
	assert.Equal(t, rec.Usage, fr.Usage)
}

// TestLateResultCarriesItsUsage: a result for a step that is no longer in
// flight (it timed out; a retry cancelled it and the job ran on) reaches
// the engine when it reports usage not yet counted, so the limits see what
// was spent (issue 23); without usage, or counted already, it is dropped.
func TestLateResultCarriesItsUsage(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	cfg := pipeline.DefaultConfig()
	s, _ := pipeline.Reconcile(pipeline.Session{}, []pipeline.Event{pipeline.Started("12", "x", "main")}, t0, cfg)
	pm := s.Lead.InFlight
	s, _ = pipeline.Reconcile(s, []pipeline.Event{pipeline.CommandEvent("12", "bob", pipeline.Command{Kind: pipeline.CommandStop})}, t0, cfg)
	require.Equal(t, pipeline.StepCancelled, s.Step(pm).State)
	u := &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 900_000, InputTokens: 10}
	rec := codec.ResultRecord{Step: pm, Role: pipeline.RolePM, Group: pipeline.LeadGroup, Usage: u,
		Result: pipeline.Result{Status: pipeline.StatusPlanningComplete}}
	ev, ok := resultEvent(s, rec, false)
	require.True(t, ok, "late, with usage")
	assert.Equal(t, pm, ev.Step)
	s2, _ := pipeline.Reconcile(s, []pipeline.Event{ev}, t0, cfg)
	assert.Equal(t, int64(900_000), s2.Usage.CostMicros)
	assert.Equal(t, pipeline.SessionStopped, s2.Status, "nothing else is applied")

	_, ok = resultEvent(s2, rec, false)
	assert.False(t, ok, "counted already")
	rec.Usage = nil
	_, ok = resultEvent(s, rec, false)
	assert.False(t, ok, "nothing to count")
}
