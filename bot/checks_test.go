package bot

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

func TestChecksReport(t *testing.T) {
	req := []ghapi.RequiredCheck{{Context: "ci/test"}, {Context: "lint", AppID: 15368}}
	tests := []struct {
		name   string
		req    []ghapi.RequiredCheck
		checks []ghapi.Check
		want   pipeline.ChecksReport
	}{
		{"nothing required passes", nil, nil, pipeline.ChecksReport{State: pipeline.ChecksPassed}},
		{"not reported yet is pending", req, nil,
			pipeline.ChecksReport{State: pipeline.ChecksPending, Required: []string{"ci/test", "lint"}, Pending: []string{"ci/test", "lint"}}},
		{"all passed", req, []ghapi.Check{{Name: "ci/test", State: ghapi.CheckSuccess}, {Name: "lint", AppID: 15368, State: ghapi.CheckSuccess}},
			pipeline.ChecksReport{State: pipeline.ChecksPassed, Required: []string{"ci/test", "lint"}}},
		{"a check of the same name from another app does not count", req,
			[]ghapi.Check{{Name: "ci/test", State: ghapi.CheckSuccess}, {Name: "lint", AppID: 99, State: ghapi.CheckSuccess}},
			pipeline.ChecksReport{State: pipeline.ChecksPending, Required: []string{"ci/test", "lint"}, Pending: []string{"lint"}}},
		{"a failure wins, with its output", req,
			[]ghapi.Check{{Name: "ci/test", State: ghapi.CheckFailure, Detail: "2 tests failed", URL: "https://ci/1"},
				{Name: "lint", AppID: 15368, State: ghapi.CheckPending}},
			pipeline.ChecksReport{State: pipeline.ChecksFailed, Required: []string{"ci/test", "lint"}, Pending: []string{"lint"},
				Failed: []string{"ci/test"}, Summary: "ci/test: 2 tests failed (https://ci/1)"}},
		{"a status counts like a check run", []ghapi.RequiredCheck{{Context: "ci/test"}},
			[]ghapi.Check{{Name: "ci/test", State: ghapi.CheckFailure, Detail: "build broke"}},
			pipeline.ChecksReport{State: pipeline.ChecksFailed, Required: []string{"ci/test"}, Failed: []string{"ci/test"}, Summary: "ci/test: build broke"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, checksReport(tc.req, tc.checks))
		})
	}
}

func TestTranslateChecks(t *testing.T) {
	tr := translator{login: fakeBotLogin, startLabel: "bazinga"}
	deliver := func(event, body string) (intent, error) {
		d := Delivery{ID: "d1", Event: event, Payload: []byte(body)}
		p, err := payloadOf(d)
		require.NoError(t, err)
		return tr.translate(d, p)
	}
	repo := `"repository":{"full_name":"o/r"},"sender":{"login":"ci[bot]","type":"Bot"}`
	it, err := deliver("check_run", `{"action":"completed",`+repo+`,"check_run":{"name":"ci/test","head_sha":"abc","check_suite":{"head_branch":"bazinga/7-A"},"pull_requests":[]}}`)
	require.NoError(t, err)
	assert.Equal(t, 7, it.issue)
	require.Len(t, it.in.events, 1)
	assert.Equal(t, pipeline.EventTick, it.in.events[0].Kind)
	assert.Nil(t, it.actor, "CI is no human: nothing to authorise")

	it, err = deliver("check_suite", `{"action":"completed",`+repo+`,"check_suite":{"head_branch":null,"head_sha":"abc","pull_requests":[{"number":3,"head":{"ref":"bazinga/9-B"}}]}}`)
	require.NoError(t, err)
	assert.Equal(t, 9, it.issue)

	it, err = deliver("status", `{"state":"failure","sha":"abc","context":"ci/test",`+repo+`,"branches":[{"name":"main"},{"name":"bazinga/12-C"}]}`)
	require.NoError(t, err)
	assert.Equal(t, 12, it.issue)

	for name, c := range map[string][2]string{
		"a check still running": {"check_run", `{"action":"created",` + repo + `,"check_run":{"check_suite":{"head_branch":"bazinga/7-A"}}}`},
		"a pending status":      {"status", `{"state":"pending",` + repo + `,"branches":[{"name":"bazinga/7-A"}]}`},
		"not a group branch":    {"check_run", `{"action":"completed",` + repo + `,"check_run":{"check_suite":{"head_branch":"feature"}}}`},
	} {
		_, err := deliver(c[0], c[1])
		assert.ErrorIs(t, err, ErrIgnored, name)
	}
	var p payload
	require.NoError(t, json.Unmarshal([]byte(`{`+repo+`,"branches":[{"name":"bazinga/5-Z"}]}`), &p))
	assert.Equal(t, 5, sessionOf("status", &p), "deliveries of one session are serialised")
}

// until plays deliveries and jobs until pred holds of the state.
func (s *fakeSession) until(pred func(codec.State) bool, maxIter int) bool {
	s.t.Helper()
	for i := 0; i < maxIter; i++ {
		if st, ok := s.state(); ok && pred(st) {
			return true
		}
		if d, ok := s.pop(); ok {
			s.process(d)
			continue
		}
		if r, ok := s.nextRun(); ok {
			s.clock.Advance(time.Second)
			s.job(r)
			continue
		}
		return false
	}
	return false
}

// ci reports a check on the PR head of branch and delivers its webhook.
func (s *fakeSession) ci(branch, name string, state ghapi.CheckState, detail string) string {
	head, err := s.gh.GetRef(s.t.Context(), s.gh.repo, "heads/"+branch)
	require.NoError(s.t, err)
	s.gh.setCheck(head, ghapi.Check{Name: name, State: state, Detail: detail, URL: "https://ci.example/" + head[:8]})
	s.enqueue("check_run", "completed", "ci-app[bot]", func(p *payload) {
		p.CheckRun = &hookCheckRun{Name: name, HeadSHA: head}
		p.CheckRun.CheckSuite.HeadBranch = branch
	})
	return head
}

func waits(group string, w pipeline.WaitReason) func(codec.State) bool {
	return func(st codec.State) bool {
		g := st.Session.Group(group)
		return g != nil && g.Wait == w
	}
}

// A group PR merges only once its base's required checks passed on its
// head: the merge waits (named in the tracking comment), a failure goes
// back to the developer with the check's output, a pass lets it land.
func TestRequiredChecksInTheSession(t *testing.T) {
	s := newFakeSession(t, 1, "")
	s.gh.protect("main", ghapi.BranchRules{RequiredChecks: []ghapi.RequiredCheck{{Context: "ci/test"}},
		PushRules: []ghapi.Rule{{Kind: "required_status_checks", Source: "branch protection"}}})
	s.start()
	branch := pipeline.BranchName("1", "A")

	require.True(t, s.until(waits("A", pipeline.WaitChecks), 200), "the merge waits for the checks")
	st, _ := s.state()
	assert.Equal(t, "waiting for required checks: ci/test on "+st.Session.Group("A").RequiredChecks.Head[:12], st.Session.Group("A").WaitDetail)
	_, tracking := s.trackingComment()
	assert.Contains(t, tracking, "waiting for required checks: ci/test")
	assert.Contains(t, s.botCommentsJoined(), "⏳ Group A | waiting for required checks: ci/test")
	for _, r := range s.gh.allRuns() {
		assert.NotContains(t, r.Title, "/merge/", "no merge was dispatched")
	}

	// CI fails: the group goes back to its developer with the output.
	s.ci(branch, "ci/test", ghapi.CheckFailure, "2 tests failed")
	require.True(t, s.until(func(st codec.State) bool {
		step := st.Session.Step(st.Session.Group("A").InFlight)
		return step != nil && step.Purpose == pipeline.PurposeFixMerge
	}, 20))
	st, _ = s.state()
	fix := st.Session.Step(st.Session.Group("A").InFlight)
	assert.Equal(t, pipeline.RoleDeveloper, fix.Role)
	assert.Contains(t, fix.Feedback, "required checks failed on")
	assert.Contains(t, fix.Feedback, "ci/test: 2 tests failed (https://ci.example/")
	assert.Contains(t, s.botCommentsJoined(), "❌ Group A | required checks failed on")

	// The fix is a new head: its checks are pending again, then pass.
	require.True(t, s.until(waits("A", pipeline.WaitChecks), 200))
	s.ci(branch, "ci/test", ghapi.CheckSuccess, "")
	require.Equal(t, pipeline.SessionDone, s.run(400))
	s.assertVerifiedBazinga()
}

// Checks pending past merge.checks_timeout pause the session, naming them;
// the sweep alone (no webhook) notices when they pass after a resume.
func TestRequiredChecksTimeoutAndSweep(t *testing.T) {
	s := newFakeSession(t, 1, "merge:\n  checks_timeout: 30m\n")
	s.gh.protect("main", ghapi.BranchRules{RequiredChecks: []ghapi.RequiredCheck{{Context: "ci/test"}}})
	s.start()
	require.True(t, s.until(waits("A", pipeline.WaitChecks), 200))
	s.clock.Advance(31 * time.Minute)
	require.NoError(t, s.bot.Sweep(t.Context()))
	st, _ := s.state()
	require.Equal(t, pipeline.SessionPaused, st.Session.Status)
	assert.Contains(t, st.Session.Reason, "required checks of group A (ci/test on")
	assert.Contains(t, st.Session.Reason, "merge.checks_timeout 30m")

	s.comment("alice", s.issue, "/bazinga resume")
	s.drain()
	head, err := s.gh.GetRef(t.Context(), s.gh.repo, "heads/"+pipeline.BranchName("1", "A"))
	require.NoError(t, err)
	s.gh.setCheck(head, ghapi.Check{Name: "ci/test", State: ghapi.CheckSuccess})
	require.NoError(t, s.bot.Sweep(t.Context()))
	st, _ = s.state()
	assert.Equal(t, pipeline.StageMerging, st.Session.Group("A").Stage, "the sweep read the passed check and sent the merge")
	require.Equal(t, pipeline.SessionDone, s.run(400))
}

// merge.method push keeps draft PRs; a repository that refuses drafts (a
// private one on a free plan) gets a normal PR with a note, not endless retries.
func TestDraftRefusedOpensReadyPR(t *testing.T) {
	s := newFakeSession(t, 1, "merge:\n  method: push\n")
	s.gh.noDrafts = true
	s.start()
	require.Equal(t, pipeline.SessionDone, s.run(400))
	prs := s.prs()
	require.Len(t, prs, 1)
	assert.False(t, prs[0].Draft)
	assert.True(t, strings.HasPrefix(prs[0].Body, "> [!NOTE]\n> This repository does not support draft pull requests"), prs[0].Body)
	creates := 0
	for _, c := range s.gh.recorded(true) {
		if c.Op == "CreatePR" {
			creates++
		}
	}
	assert.Equal(t, 2, creates, "one draft refused, one ready PR; never again")
	st, _ := s.state()
	assert.True(t, st.PR("A").NoDraft)
}
