package bot

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steps drives the session for n iterations (deliveries, then jobs), with
// no sweeps and no time jumps.
func (h *coreHarness) steps(n int) {
	for i := 0; i < n; i++ {
		if d, ok := h.pop(); ok {
			_ = h.process(d)
			continue
		}
		if r, ok := h.nextRun(); ok {
			h.job(r)
			continue
		}
		return
	}
}

// routing is what must survive a rebuild: where every track stands.
type routing struct {
	Status  pipeline.SessionStatus
	StepSeq int
	Lead    string
	Groups  []string
}

func routingOf(s pipeline.Session) routing {
	r := routing{Status: s.Status, StepSeq: s.StepSeq, Lead: s.Lead.InFlight}
	for _, g := range s.Groups {
		next := ""
		if g.Next != nil {
			next = g.Next.Role.String()
		}
		r.Groups = append(r.Groups, strings.Join([]string{g.ID, g.Stage.String(), g.InFlight, next, g.Wait.String()}, "|"))
	}
	return r
}

func (h *coreHarness) trackingComment() (int64, string) {
	for _, c := range h.repo.Comments(h.issue) {
		if c.GetUser().GetLogin() == h.f.BotLogin() && strings.Contains(c.GetBody(), codec.StateMarker) {
			return c.GetID(), c.GetBody()
		}
	}
	return 0, ""
}

// TestRebuild plays a reference session half-way, loses the tracking
// comment (deleted, or its state block forged), restarts the bot, and checks
// the session rebuilt from the log routes the same and still ends in a
// verified BAZINGA.
func TestRebuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(h *coreHarness)
	}{
		{"deleted", func(h *coreHarness) {
			id, _ := h.trackingComment()
			require.NoError(t, h.repo.DeleteComment("alice", id))
		}},
		{"forged-mac", func(h *coreHarness) {
			id, body := h.trackingComment()
			i := strings.LastIndex(body, codec.BlockEnd)
			forged := body[:i-1] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", body[i-1])+1)%16]) + body[i:]
			require.NoError(t, h.repo.EditComment(h.f.BotLogin(), id, forged))
		}},
		{"forged-payload", func(h *coreHarness) {
			id, body := h.trackingComment()
			st, err := codec.DecodeState(body, corePublicKey)
			require.NoError(t, err)
			st.Session.Groups = st.Session.Groups[:1]
			block, err := codec.EncodeState(st, codec.SigningKeyFromSecret([]byte("not-the-key-at-all")))
			require.NoError(t, err)
			i := strings.Index(body, codec.StateMarker)
			require.NoError(t, h.repo.EditComment(h.f.BotLogin(), id, body[:i]+block))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newCoreHarness(t, coreOpts{groups: 3})
			h.start()
			h.steps(40)
			// Settle: every result posted so far is processed, so that the
			// log the rebuild reads and the state it replaces agree.
			for d, ok := h.pop(); ok; d, ok = h.pop() {
				_ = h.process(d)
			}
			before, ok := h.state()
			require.True(t, ok)
			require.Equal(t, pipeline.SessionRunning, before.Session.Status)
			require.NotEmpty(t, before.Session.InFlight())
			tc.lose(h)
			h.bot = h.newBot() // a restart: nothing in memory
			ld, err := h.bot.load(h.ctx, ghapi.New(h.botClient()), sessionRef{inst: 1, repo: ghapi.RepoRef{Owner: coreOwner, Name: coreRepo}, issue: h.issue}, 0)
			require.NoError(t, err)
			require.True(t, ld.found)
			require.True(t, ld.rebuilt)
			require.Equal(t, routingOf(before.Session), routingOf(ld.st.Session))
			for _, g := range before.Session.Groups {
				require.Equal(t, before.PRNumber(g.ID), ld.st.PRNumber(g.ID), "PR of group %s", g.ID)
			}
			require.NoError(t, pipeline.CheckLiveness(ld.st.Session, ld.st.Config))
			require.Equal(t, pipeline.SessionDone, h.run(500))
			h.assertVerifiedBazinga()
		})
	}
}

// TestTrackingFitsHoweverLong: a session with thousands of steps still fits
// in one comment, with its state block.
func TestTrackingFitsHoweverLong(t *testing.T) {
	st := codec.State{V: codec.StateVersion, Repo: "a/b", Issue: 7, Config: pipeline.DefaultConfig()}
	s := pipeline.Session{Schema: pipeline.SchemaVersion, ID: "7", Requirements: "r", Base: "main", Status: pipeline.SessionRunning}
	for i := 1; i <= 3000; i++ {
		st := pipeline.Step{ID: pipeline.StepID("7", pipeline.LeadGroup, pipeline.RolePM, i), Group: pipeline.LeadGroup, N: i,
			StepSpec: pipeline.StepSpec{Role: pipeline.RolePM, Model: "opus"}, State: pipeline.StepDone,
			Result: &pipeline.Result{Status: pipeline.StatusContinue, Summary: []string{textHash(strconv.Itoa(i)) + textHash("s", strconv.Itoa(i))},
				Handoff: []byte(`{"feedback":{"A":"` + strings.Repeat(textHash("h", strconv.Itoa(i)), 8) + `"}}`)}}
		s.Steps = append(s.Steps, st)
	}
	s.StepSeq = 3000
	st.Session = s
	body, err := fitTracking(st, "https://example.com/a/b", coreSigningKey)
	require.NoError(t, err)
	require.LessOrEqual(t, len([]rune(body)), codec.MaxCommentChars)
	got, err := codec.DecodeState(body, corePublicKey)
	require.NoError(t, err)
	require.Less(t, len(got.Session.Steps), 3000)
	require.Equal(t, 3000, got.Session.StepSeq)
}

// TestRebuildSendsStepsNoRunWorksOn: the tracking comment is deleted, and
// the jobs of the steps in flight ended while it was gone without a result
// (as a job that could not read its session did before issue 28). The
// rebuild finds the steps in flight and sends each again at once, instead
// of leaving them to their timeout; a step whose run is still going is
// left to it.
func TestRebuildSendsStepsNoRunWorksOn(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 2})
	h.start()
	h.steps(12)
	h.drain()
	before, ok := h.state()
	require.True(t, ok)
	inFlight := before.Session.InFlight()
	require.Len(t, inFlight, 2, "both groups have a step in flight")
	// The first step's run ends with no result; the second's keeps going.
	runOf := map[string]int64{}
	for _, r := range h.f.Runs() {
		runOf[r.Inputs["step"]] = r.ID
	}
	ended, going := inFlight[0].ID, inFlight[1].ID
	require.NotZero(t, runOf[ended])
	require.NotZero(t, runOf[going])
	h.ran[runOf[ended]] = true
	require.NoError(t, h.f.CompleteRun(runOf[ended], "success"))
	h.ran[runOf[going]] = true // held: it is still running
	id, _ := h.trackingComment()
	require.NoError(t, h.repo.DeleteComment("alice", id))
	h.drain() // the run's completion: success, nothing to do

	h.bot = h.newBot()
	_, err := h.repo.Comment("alice", h.issue, "/bazinga status")
	require.NoError(t, err)
	h.drain()
	counts := map[string]int{}
	for _, r := range h.f.Runs() {
		counts[r.Inputs["step"]]++
	}
	assert.Equal(t, 2, counts[ended], "the step whose job ended without a result is sent again")
	assert.Equal(t, 1, counts[going], "the step whose run is going is left to it")
	st, ok := h.state()
	require.True(t, ok, "the rebuilt state is written")
	assert.Equal(t, pipeline.StepInFlight, st.Session.Step(ended).State)
	delete(h.ran, runOf[going])
	require.Equal(t, pipeline.SessionDone, h.run(500))
	st, _ = h.state()
	assert.Equal(t, "BAZINGA verified", st.Session.Reason)
	for _, s := range st.Session.Steps {
		assert.NotContains(t, s.Note, "no result within", "step %s waited out its timeout", s.ID)
	}
	assert.Zero(t, h.dupClaims, "the step sent again ran once: its first job ended without claiming")
}

// TestIssueEditIsAcknowledged: editing the issue does not change what the
// session works on; the bot says so, once an hour however many edits.
func TestIssueEditIsAcknowledged(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 1})
	h.start()
	h.steps(6)
	h.drain()
	acks := func() int {
		n := 0
		for _, c := range h.botComments(h.issue) {
			if strings.HasPrefix(c, editedPrefix) {
				n++
			}
		}
		return n
	}
	require.NoError(t, h.repo.EditIssue("alice", h.issue, "Add widgets", "Please add widget support, in blue."))
	h.drain()
	require.Equal(t, 1, acks())
	joined := h.botCommentsJoined()
	assert.Contains(t, joined, "✏️ The issue was edited by @\u2060alice. This session keeps working on the requirements as they were when it started")
	assert.Contains(t, joined, "`/bazinga stop` and open a new issue")
	require.NoError(t, h.repo.EditIssue("alice", h.issue, "Add widgets", "Please add widget support, in red."))
	h.drain()
	assert.Equal(t, 1, acks(), "one acknowledgement an hour")
	st, _ := h.state()
	assert.NotContains(t, st.Session.Requirements, "red", "the requirements are those the session started with")
	require.Equal(t, pipeline.SessionDone, h.run(500))
}
