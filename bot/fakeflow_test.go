package bot

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/require"
)

// fakeHarness drives the bot against the in-memory fakeGitHub: the test
// plays GitHub's side (the state, and the deliveries it would send).
type fakeHarness struct {
	t     *testing.T
	gh    *fakeGitHub
	bot   *Bot
	clock *coreClock
	seq   int
}

const fakeBotLogin = "bazinga[bot]"

func newFakeHarness(t *testing.T, config string) *fakeHarness {
	t.Helper()
	clock := &coreClock{t: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)}
	gh := newFakeGitHub(coreOwner, coreRepo, fakeBotLogin, clock.Now)
	if config != "" {
		gh.push("main", map[string]string{".github/bazinga.yml": config})
	}
	gh.setRole("alice", "write")
	gh.setRole("mallory", "read")
	gh.addWorkflow("bazinga-agent.yml")
	b, err := New(Options{
		Client:     func(context.Context, int64) (GitHub, error) { return gh, nil },
		Login:      fakeBotLogin,
		Now:        clock.Now,
		SigningKey: coreSigningKey,
	})
	require.NoError(t, err)
	return &fakeHarness{t: t, gh: gh, bot: b, clock: clock}
}

// deliver hands the bot one delivery built from a recorded payload with
// edits, as the server would; ignored deliveries are not errors.
func (h *fakeHarness) deliver(event, fixtureName string, edits map[string]any) error {
	h.t.Helper()
	h.seq++
	h.clock.Advance(time.Second)
	payload := fixture(h.t, fixtureName, edits)
	action, _ := edits["action"].(string)
	d := Delivery{ID: fmt.Sprintf("delivery-%d", h.seq), Event: event, Action: action, Installation: 1,
		Repo: coreOwner + "/" + coreRepo, Payload: payload, Received: h.clock.Now()}
	err := h.bot.Process(context.Background(), d)
	if isIgnored(err) {
		return nil
	}
	return err
}

// openAndLabel is GitHub's side of a user opening issue n and labelling
// it "bazinga": the issue exists, then two deliveries.
func (h *fakeHarness) openAndLabel(user string) int {
	return h.openAndLabelBody(user, "Please add widget support.\n\n- [ ] criteria")
}

// openAndLabelBody is openAndLabel with the issue's body.
func (h *fakeHarness) openAndLabelBody(user, body string) int {
	h.t.Helper()
	n := h.gh.openIssue(user, "Add widgets", body)
	issue := func(labels ...string) map[string]any {
		ls := []any{}
		for _, l := range labels {
			ls = append(ls, map[string]any{"name": l})
		}
		return map[string]any{"number": n, "title": "Add widgets", "body": body,
			"state": "open", "user": map[string]any{"login": user, "type": "User"}, "labels": ls}
	}
	require.NoError(h.t, h.deliver("issues", "core_issues_labeled.json", map[string]any{
		"action": "opened", "issue": issue(), "sender.login": user, "label": nil}))
	require.NoError(h.t, h.gh.EditIssue(context.Background(), h.gh.repo, n, ghapi.IssueEdit{Labels: &[]string{"bazinga"}}))
	h.gh.mu.Lock()
	h.gh.calls = h.gh.calls[:len(h.gh.calls)-1] // GitHub's own change, not the bot's
	h.gh.mu.Unlock()
	require.NoError(h.t, h.deliver("issues", "core_issues_labeled.json", map[string]any{
		"action": "labeled", "issue": issue("bazinga"), "sender.login": user}))
	return n
}

func (h *fakeHarness) botComments(n int) []string {
	var out []string
	for _, c := range h.gh.commentsOn(n) {
		if c.Author == fakeBotLogin {
			out = append(out, c.Body)
		}
	}
	return out
}

func TestReadOnlyUserCannotStart(t *testing.T) {
	h := newFakeHarness(t, "")
	n := h.openAndLabel("mallory")
	require.Empty(t, h.botComments(n))
	require.Empty(t, h.gh.allRuns())
	require.Empty(t, h.gh.recorded(true), "no effect at all")
}

func TestBadConfigNamesKeyAndLine(t *testing.T) {
	h := newFakeHarness(t, "max_parallel: 4\nqa: maybe\n")
	n := h.openAndLabel("alice")
	got := h.botComments(n)
	require.Len(t, got, 1)
	require.Contains(t, got[0], "line 2")
	require.Contains(t, got[0], "qa")
	require.Empty(t, h.gh.allRuns())
}

func TestPRClosedUnmergedAbandonsGroup(t *testing.T) {
	s := newFakeSession(t, 2, "")
	s.start()
	for i := 0; i < 200 && len(s.prs()) == 0; i++ {
		s.steps(1)
	}
	require.NotEmpty(t, s.prs())
	pr := s.prs()[0]
	s.closePR("alice", pr.Number, false)
	s.drain()
	st, _ := s.state()
	_, group, _ := parseBranch(pr.Head)
	require.Equal(t, pipeline.StageAbandoned, st.Session.Group(group).Stage)
}

func TestFailedRunRetriesStep(t *testing.T) {
	s := newFakeSession(t, 1, "")
	failed := ""
	s.hold = func(step string) bool { return strings.Contains(step, "/qa/") && failed == "" }
	s.start()
	s.steps(60)
	for _, r := range s.gh.runs {
		if strings.Contains(r.inputs["step"], "/qa/") && r.Status != "completed" {
			failed = r.inputs["step"]
			s.ran[r.ID] = true
			s.completeRun(r.ID, "failure")
		}
	}
	require.NotEmpty(t, failed)
	s.drain()
	st, _ := s.state()
	require.Equal(t, pipeline.StepFailed, st.Session.Step(failed).State)
	require.Contains(t, s.botCommentsJoined(), "ended without a result")
	require.Equal(t, pipeline.SessionDone, s.run(500))
}

// TestFailureReportCarriesReason: a job that ends without a result posts
// its reason; the step fails with that reason (and is retried), and the
// run's failure that follows changes nothing more. A failure report by
// anyone but the job identity is ignored.
func TestFailureReportCarriesReason(t *testing.T) {
	s := newFakeSession(t, 1, "")
	var qa string
	s.hold = func(step string) bool { return strings.Contains(step, "/qa/") }
	s.start()
	s.steps(60)
	var run *fakeRun
	for _, r := range s.gh.runs {
		if strings.Contains(r.inputs["step"], "/qa/") && r.Status != "completed" {
			qa, run = r.inputs["step"], r
		}
	}
	require.NotEmpty(t, qa)
	ref, _ := codec.ParseStepID(qa)
	pr := 0
	for _, p := range s.prs() {
		pr = p.Number
	}
	report := func(login string) {
		body := codec.RenderFailureComment(codec.FailureRecord{Step: qa, Role: ref.Role, Group: ref.Group, Reason: "the agent timed out after 30m"})
		s.comment(login, pr, body)
		s.drain()
	}
	report("mallory")
	st, _ := s.state()
	require.Equal(t, pipeline.StepInFlight, st.Session.Step(qa).State, "a failure report by mallory is ignored")

	report(actionsLogin)
	st, _ = s.state()
	require.Equal(t, pipeline.StepFailed, st.Session.Step(qa).State)
	require.Contains(t, st.Session.Step(qa).Note, "the agent timed out after 30m")
	require.Contains(t, s.botCommentsJoined(), "the agent timed out after 30m")
	rev := st.Session.Rev
	s.ran[run.ID] = true
	s.completeRun(run.ID, "failure")
	s.drain()
	st, _ = s.state()
	require.Equal(t, rev, st.Session.Rev, "the run's failure after the report changes nothing")
	s.hold = nil
	require.Equal(t, pipeline.SessionDone, s.run(500))
}

// TestPermanentFailurePauses: a failure report that retrying cannot fix
// (the CLI's credentials refused) pauses the session at once, naming the
// step; after /bazinga resume the same work runs again.
func TestPermanentFailurePauses(t *testing.T) {
	s := newFakeSession(t, 1, "")
	s.hold = func(step string) bool { return strings.Contains(step, "/qa/") }
	s.start()
	s.steps(60)
	var qa string
	for _, r := range s.gh.runs {
		if strings.Contains(r.inputs["step"], "/qa/") && r.Status != "completed" {
			qa = r.inputs["step"]
		}
	}
	require.NotEmpty(t, qa)
	ref, _ := codec.ParseStepID(qa)
	pr := 0
	for _, p := range s.prs() {
		pr = p.Number
	}
	body := codec.RenderFailureComment(codec.FailureRecord{Step: qa, Role: ref.Role, Group: ref.Group,
		Reason: "claude: invalid API key", Permanent: true})
	s.comment(actionsLogin, pr, body)
	s.drain()
	st, _ := s.state()
	require.Equal(t, pipeline.SessionPaused, st.Session.Status)
	require.Contains(t, st.Session.Reason, qa)
	require.Contains(t, st.Session.Reason, "retrying will not fix it: claude: invalid API key")
	require.Equal(t, pipeline.StepFailed, st.Session.Step(qa).State)
	g := st.Session.Group(ref.Group)
	require.NotNil(t, g)
	require.NotNil(t, g.Next)
	require.Equal(t, st.Session.Step(qa).StepSpec, *g.Next, "no attempt spent")

	s.hold = nil
	s.comment("alice", s.issue, "/bazinga resume")
	s.drain()
	require.Equal(t, pipeline.SessionDone, s.run(500))
}

func TestCommandAuthorisation(t *testing.T) {
	s := newFakeSession(t, 2, "")
	s.start()
	s.steps(6)
	runs := len(s.gh.allRuns())
	before := len(s.botComments(s.issue))
	// A bot and the bot itself are ignored without a reply.
	for _, who := range []string{"dependabot[bot]", fakeBotLogin} {
		s.comment(who, s.issue, "/bazinga stop")
		s.drain()
	}
	require.Len(t, s.botComments(s.issue), before+1, "only the bot's own comment was added") // the one the bot "wrote"
	// A read-only user gets a short refusal and no effect.
	s.comment("mallory", s.issue, "/bazinga stop")
	s.drain()
	got := s.botComments(s.issue)
	require.Contains(t, got[len(got)-1], "@mallory only people with write")
	st, _ := s.state()
	require.False(t, st.Session.Status.Terminal())
	require.Len(t, s.gh.allRuns(), runs)
	// alice may stop it.
	s.comment("alice", s.issue, "/bazinga stop")
	s.drain()
	st, _ = s.state()
	require.Equal(t, pipeline.SessionStopped, st.Session.Status)
	require.Contains(t, s.labels(s.issue), "bazinga:stopped")
	// help and unknown commands answer with the help text.
	s.comment("alice", s.issue, "/bazinga frobnicate")
	s.drain()
	got = s.botComments(s.issue)
	require.Contains(t, got[len(got)-1], "bazinga commands")
	// status replies with the visible status; resume resumes.
	s.comment("alice", s.issue, "/bazinga status\n/bazinga resume")
	s.drain()
	got = s.botComments(s.issue)
	require.Contains(t, strings.Join(got, "\n"), "Resumed by alice")
	require.Equal(t, pipeline.SessionDone, s.run(500))
}

func TestSameDeliveryTwiceOneEffect(t *testing.T) {
	s := newFakeSession(t, 2, "")
	s.start()
	s.steps(30)
	s.drain()
	// Every delivery so far, again (as GitHub's redelivery would): nothing new.
	runs, comments, prs := len(s.gh.allRuns()), len(s.gh.commentsOn(s.issue)), len(s.prs())
	effects := len(s.gh.recorded(true))
	again := append([]Delivery(nil), s.all...)
	for _, d := range again {
		s.process(d)
	}
	s.drain()
	require.Equal(t, runs, len(s.gh.allRuns()), "no dispatch repeated")
	require.Equal(t, comments, len(s.gh.commentsOn(s.issue)), "no comment repeated")
	require.Equal(t, prs, len(s.prs()), "no PR repeated")
	for _, c := range s.gh.recorded(true)[effects:] {
		require.NotEqual(t, "CreateComment", c.Op, "no comment created: %s", c.Args)
		require.NotEqual(t, "DispatchWorkflow", c.Op, "no dispatch: %s", c.Args)
		require.NotEqual(t, "CreatePR", c.Op, "no PR: %s", c.Args)
	}
	// A restarted bot (nothing in memory) does not repeat them either.
	s.restart()
	for _, d := range again {
		s.process(d)
	}
	s.drain()
	require.Equal(t, runs, len(s.gh.allRuns()))
	require.Equal(t, pipeline.SessionDone, s.run(500))
	s.assertVerifiedBazinga()
}

func TestEventsOutOfOrder(t *testing.T) {
	s := newFakeSession(t, 3, "")
	s.start()
	// Plan, then let every queued job run before the bot hears of any.
	for i := 0; i < 200; i++ {
		if d, ok := s.pop(); ok {
			s.process(d)
			if st, _ := s.state(); len(st.Session.InFlight()) >= 3 {
				break
			}
			continue
		}
		if r, ok := s.nextRun(); ok {
			s.job(r)
		}
	}
	s.drain()
	for {
		r, ok := s.nextRun()
		if !ok {
			break
		}
		s.job(r)
	}
	// Deliver what queued in reverse order.
	q := s.queue
	s.queue = nil
	for i := len(q) - 1; i >= 0; i-- {
		s.process(q[i])
	}
	require.Equal(t, pipeline.SessionDone, s.run(500))
	s.assertVerifiedBazinga()
}

func TestUnlabelPausesAndReviewsAndClosures(t *testing.T) {
	s := newFakeSession(t, 2, "merge:\n  required_approvals: 1\n")
	s.start()
	s.steps(40)
	s.label("alice", s.issue, "bazinga", false)
	s.drain()
	st, _ := s.state()
	require.Equal(t, pipeline.SessionPaused, st.Session.Status)
	require.Contains(t, s.labels(s.issue), "bazinga:paused")
	s.label("alice", s.issue, "bazinga", true)
	s.drain()
	st, _ = s.state()
	require.False(t, st.Session.Status == pipeline.SessionPaused)
	// Groups wait for a human approval; alice approves both PRs.
	for i := 0; i < 200; i++ {
		s.steps(1)
		st, _ = s.state()
		waiting := 0
		for _, g := range st.Session.Groups {
			if g.Wait == pipeline.WaitHumanReview {
				waiting++
			}
		}
		if waiting == 2 {
			break
		}
	}
	for _, pr := range s.prs() {
		s.review("alice", pr.Number, "APPROVED")
	}
	require.Equal(t, pipeline.SessionDone, s.run(500))
	s.assertVerifiedBazinga()
}

// TestForeignStateIgnored: a state block in someone else's comment is never
// read, even when it would verify.
func TestForeignStateIgnored(t *testing.T) {
	s := newFakeSession(t, 2, "")
	s.start()
	s.steps(25)
	_, body := s.trackingComment()
	s.comment("mallory", s.issue, body)
	s.restart()
	ld, err := s.bot.load(context.Background(), s.gh, sessionRef{inst: 1, repo: s.gh.repo, issue: s.issue}, 0)
	require.NoError(t, err)
	require.False(t, ld.rebuilt, "the bot's own comment is found and verifies")
	s.drain()
	require.Equal(t, pipeline.SessionDone, s.run(500))
	s.assertVerifiedBazinga()
}

// Action-only mode: a result comment written with a GITHUB_TOKEN starts no
// workflow, and the reconcile that would have read it may be cancelled. The
// next run or the sweep reads the log and applies it.
func TestLoggedResultsAreAppliedWithoutTheirEvents(t *testing.T) {
	s := newFakeSession(t, 1, "")
	s.start()
	s.drain()
	r, ok := s.nextRun()
	require.True(t, ok, "the pm step was dispatched")
	s.job(r)      // posts the pm's PLANNING_COMPLETE as github-actions[bot]
	s.queue = nil // every delivery about it is lost

	before, ok := s.state()
	require.True(t, ok)
	require.Empty(t, before.Session.Groups)

	n, err := s.bot.ApplyLoggedResults(context.Background(), 1, s.gh.repo, s.issue)
	require.NoError(t, err)
	require.Equal(t, 1, n, "one logged result applied")
	after, _ := s.state()
	require.Len(t, after.Session.Groups, 1)
	require.Equal(t, pipeline.RoleDeveloper, after.Session.Step(after.Session.Groups[0].InFlight).Role)

	// Applying again finds nothing new.
	n, err = s.bot.ApplyLoggedResults(context.Background(), 1, s.gh.repo, s.issue)
	require.NoError(t, err)
	require.Zero(t, n)
	// And the session still runs to a verified BAZINGA.
	require.Equal(t, pipeline.SessionDone, s.run(400))
	s.assertVerifiedBazinga()
}
