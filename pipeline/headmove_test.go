package pipeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 28: only reviewed code merges. Every test goes through the harness,
// whose property checker also holds that no merge is sent at a head other
// than the one the tech lead approved.

// reportAt sends a result for the group's step in flight with the head the
// executor reported after it.
func (h *harness) reportAt(group string, status Status, commit, handoff string) Step {
	h.t.Helper()
	st := h.inFlight(group)
	res := Result{Status: status, Summary: []string{status.String() + " done"}}
	if handoff != "" {
		res.Handoff = json.RawMessage(handoff)
	}
	ev := StepResult(h.s.ID, st.ID, res)
	ev.Commit = commit
	h.reconcile(ev)
	return *h.s.Step(st.ID)
}

// approvedAt drives group A from its developer to an approval of head c1:
// the tech lead's step reports the head it reviewed.
func approvedAt(t *testing.T, cfg Config, research bool) *harness {
	h := newHarness(t, cfg)
	g := pg("A", 1)
	if research {
		g.Type = "research"
	}
	h.plan(g)
	h.reportAt("A", StatusReadyForReview, "c1", "")
	h.reportAt("A", StatusApproved, "c1", "")
	return h
}

func noticeTexts(acts []Action) []string {
	var out []string
	for _, a := range acts {
		if a.Kind == ActionNotify {
			out = append(out, a.Text)
		}
	}
	return out
}

func TestTheTechLeadApprovesTheHeadItReviewed(t *testing.T) {
	h := approvedAt(t, DefaultConfig(), false)
	a := h.group("A")
	assert.Equal(t, "c1", a.ReviewedHead)
	assert.Equal(t, RoleMerge, h.inFlight("A").Role)
}

// The merge reports that the branch moved: nothing merged, the group goes
// back through QA (or straight to review) on the new head, people are told,
// and the new head merges once the tech lead approved it.
func TestMergeThatFindsTheBranchMovedSendsItBackThroughReview(t *testing.T) {
	move := `{"reviewed_head":"c1aaaaaaaa","head":"c2bbbbbbbb","pushed_by":"alice"}`
	tests := []struct {
		name     string
		qa       bool
		research bool
		commit   string // the head on the merge's event ("" : only in the handoff)
		handoff  string
		first    Role
		notice   string
	}{
		{name: "QA on", qa: true, commit: "c2bbbbbbbb", handoff: move, first: RoleQA,
			notice: "A's branch moved from c1aaaaa to c2bbbbb (pushed by @alice) after review; sending it back through QA and review."},
		{name: "QA off: straight to review", commit: "c2bbbbbbbb", handoff: move, first: RoleTechLead,
			notice: "A's branch moved from c1aaaaa to c2bbbbb (pushed by @alice) after review; sending it back through QA and review."},
		{name: "research group: review", qa: true, research: true, commit: "c2bbbbbbbb", handoff: move, first: RoleTechLead,
			notice: "A's branch moved from c1aaaaa to c2bbbbb (pushed by @alice) after review; sending it back through QA and review."},
		{name: "the head in the handoff only", qa: true, handoff: move, first: RoleQA,
			notice: "A's branch moved from c1aaaaa to c2bbbbb (pushed by @alice) after review; sending it back through QA and review."},
		{name: "the commit's author when no login is known", qa: true, commit: "c2bbbbbbbb",
			handoff: `{"reviewed_head":"c1","head":"c2bbbbbbbb","author":"Alice <alice@example.com>"}`, first: RoleQA,
			notice: "A's branch moved from c1 to c2bbbbb (commit by Alice <alice@example.com>) after review; sending it back through QA and review."},
		{name: "an empty handoff: the reviewed head and the event's commit", qa: true, commit: "c2bbbbbbbb", first: RoleQA,
			notice: "A's branch moved from c1 to c2bbbbb after review; sending it back through QA and review."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.QA = tt.qa
			h := approvedAt(t, cfg, tt.research)
			before := h.group("A").Counters
			merge := h.reportAt("A", StatusMergeHeadMoved, tt.commit, tt.handoff)
			assert.Equal(t, tt.first.String(), merge.Routed)
			a := h.group("A")
			assert.Equal(t, map[Role]Stage{RoleQA: StageQA, RoleTechLead: StageReview}[tt.first], a.Stage)
			assert.Empty(t, a.ReviewedHead, "nothing reviewed at the new head yet")
			assert.Equal(t, "c2bbbbbbbb", a.Head)
			assert.Equal(t, before.MergeFailures, a.Counters.MergeFailures, "a moved branch is no merge failure")
			assert.Equal(t, before.Revisions, a.Counters.Revisions)
			assert.Equal(t, []string{tt.notice}, noticeTexts(h.actions))
			next := h.inFlight("A")
			assert.Equal(t, tt.first, next.Role)
			assert.Equal(t, merge.ID, next.From, "the step gets the merge's account of the move")
			assert.Contains(t, next.Feedback, "Nothing was merged")

			// The new head goes through the normal route and merges.
			if tt.first == RoleQA {
				h.reportAt("A", StatusPass, "c2bbbbbbbb", "")
			}
			h.reportAt("A", StatusApproved, "c2bbbbbbbb", "")
			assert.Equal(t, "c2bbbbbbbb", h.group("A").ReviewedHead)
			require.Equal(t, RoleMerge, h.inFlight("A").Role)
			h.reportAt("A", StatusMergeSuccess, "", `{"merge_commit":"m1"}`)
			assert.Equal(t, StageMerged, h.group("A").Stage)
		})
	}
}

// A push that a front-end reports (a pull request's synchronize, or the PR
// head it read) is decided from the whole state: while the group waits to
// merge it goes back through QA at once, no merge is sent; while a step of
// the group runs only the pusher is remembered, and the merge's own report
// of the move names them.
func TestPushToAGroupBranch(t *testing.T) {
	t.Run("while it waits for the merge lane", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1), pg("B", 1))
		h.reportAt("A", StatusReadyForReview, "a1", "")
		h.reportAt("B", StatusReadyForReview, "b1", "")
		h.reportAt("A", StatusApproved, "a1", "") // A merges
		h.reportAt("B", StatusApproved, "b1", "") // B waits for the lane
		require.Equal(t, WaitMergeLane, h.group("B").Wait)
		h.reconcile(Pushed("s1", "B", "b2cccccccc", "alice"))
		b := h.group("B")
		assert.Equal(t, "b2cccccccc", b.Head)
		assert.Empty(t, b.ReviewedHead)
		st := h.inFlight("B")
		assert.Equal(t, RoleQA, st.Role, "QA on the pushed head, not a merge")
		assert.Equal(t, []string{"B's branch moved from b1 to b2ccccc (pushed by @alice) after review; sending it back through QA and review."}, noticeTexts(h.actions))
		for _, a := range h.dispatched() {
			assert.NotEqual(t, RoleMerge, a.Role)
		}
	})
	t.Run("while it waits for human approvals, which were for the old head", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Merge.RequiredApprovals = 2
		h := approvedAt(t, cfg, false)
		h.reconcile(Event{Kind: EventHumanReview, Session: "s1", Group: "A", Actor: "bob", Review: ReviewApproved, Commit: "c1"})
		require.Equal(t, []string{"bob"}, h.group("A").Approvals)
		h.reconcile(Pushed("s1", "A", "c2", "alice"))
		a := h.group("A")
		assert.Empty(t, a.Approvals, "bob approved c1")
		assert.Equal(t, RoleQA, h.inFlight("A").Role)
	})
	t.Run("while its merge runs: the merge's report names the pusher", func(t *testing.T) {
		h := approvedAt(t, DefaultConfig(), false)
		merge := h.inFlight("A")
		h.reconcile(Pushed("s1", "A", "c2dddddddd", "alice"))
		a := h.group("A")
		assert.Equal(t, "c1", a.Head, "the merge in flight reports what it finds")
		assert.Equal(t, &Push{Head: "c2dddddddd", By: "alice"}, a.Pushed)
		assert.Equal(t, merge.ID, h.inFlight("A").ID)
		h.reportAt("A", StatusMergeHeadMoved, "c2dddddddd", `{"reviewed_head":"c1","head":"c2dddddddd"}`)
		assert.Equal(t, []string{"A's branch moved from c1 to c2ddddd (pushed by @alice) after review; sending it back through QA and review."}, noticeTexts(h.actions))
		assert.Equal(t, RoleQA, h.inFlight("A").Role)
	})
	t.Run("while a developer works: its result names the head", func(t *testing.T) {
		h := newHarness(t, DefaultConfig())
		h.plan(pg("A", 1))
		h.reconcile(Pushed("s1", "A", "x1", "alice"))
		assert.Empty(t, h.group("A").Head)
		h.reportAt("A", StatusReadyForQA, "x2", "")
		assert.Equal(t, "x2", h.group("A").Head)
	})
	t.Run("at the head already known, or to a merged group: nothing", func(t *testing.T) {
		h := approvedAt(t, DefaultConfig(), false)
		h.reportAt("A", StatusMergeSuccess, "", `{"merge_commit":"m1"}`)
		rev := h.s.Rev
		h.reconcile(Pushed("s1", "A", "c1", "alice"), Pushed("s1", "A", "c9", "alice"))
		assert.Equal(t, rev, h.s.Rev, "nothing changed")
		assert.Equal(t, StageMerged, h.group("A").Stage)
	})
	t.Run("to an unknown group, or without a head: reported", func(t *testing.T) {
		h := approvedAt(t, DefaultConfig(), false)
		h.reconcile(Pushed("s1", "Z", "c2", "alice"), Pushed("s1", "A", "", "alice"))
		var reports []string
		for _, a := range h.actions {
			if a.Kind == ActionReport {
				reports = append(reports, a.Text)
			}
		}
		assert.Equal(t, []string{`ignored a push to unknown group "Z"`, "ignored a push to group A without a head"}, reports)
		assert.Equal(t, RoleMerge, h.inFlight("A").Role)
	})
}

// A strict base: the land job pushed the tested merge of the reviewed head
// and the base to the group branch. That head is the harness's own and is
// what merges next, without another review.
func TestUpToDateHeadIsTheReviewedHead(t *testing.T) {
	h := approvedAt(t, DefaultConfig(), false)
	h.reportAt("A", StatusMergeUpdated, "u1", `{"updated_head":"u1"}`)
	a := h.group("A")
	assert.Equal(t, "u1", a.Head)
	assert.Equal(t, "u1", a.ReviewedHead)
	assert.Equal(t, RoleMerge, h.inFlight("A").Role)
}

func TestHeadMoveSentence(t *testing.T) {
	tests := []struct {
		move HeadMove
		want string
	}{
		{HeadMove{Reviewed: "abc1234ffff", Head: "def5678eeee", PushedBy: "alice"}, "B's branch moved from abc1234 to def5678 (pushed by @alice) after review"},
		{HeadMove{Reviewed: "abc1234ffff", Head: "def5678eeee", PushedBy: "alice", Author: "A <a@x>"}, "B's branch moved from abc1234 to def5678 (pushed by @alice) after review"},
		{HeadMove{Reviewed: "abc1234ffff", Head: "def5678eeee", Author: "Alice <alice@example.com>"}, "B's branch moved from abc1234 to def5678 (commit by Alice <alice@example.com>) after review"},
		{HeadMove{Head: "def5678eeee"}, "B's branch moved to def5678 after review"},
		{HeadMove{}, "B's branch moved after review"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.move.Sentence("B"))
			assert.Equal(t, tt.move, ParseHeadMove(tt.move.Handoff()), "the handoff round-trips")
		})
	}
	assert.Equal(t, HeadMove{}, ParseHeadMove(json.RawMessage(`not json`)))
}

func TestHeadMovedRow(t *testing.T) {
	row, ok := Lookup(RoleMerge, StatusMergeHeadMoved, PurposeMerge)
	require.True(t, ok)
	assert.Equal(t, RouteHeadMoved, row.Route)
	assert.True(t, strings.Contains(row.Next, "nothing merged"))
	s, allowed := NormalizeStatus(RoleMerge, StatusMergeHeadMoved)
	assert.True(t, allowed)
	assert.Equal(t, StatusMergeHeadMoved, s)
	p, err := ParseStatus("merge head moved")
	require.NoError(t, err)
	assert.Equal(t, StatusMergeHeadMoved, p)
}

// Decided from the whole state, not from one event: a session whose group
// waits to merge at a head other than the reviewed one (however it got
// there) sends no merge; the next reconcile sends the group back through
// QA, naming who pushed when it was heard of.
func TestUnreviewedHeadNeverMerges(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Merge.RequiredApprovals = 1
	h := approvedAt(t, cfg, false)
	require.Equal(t, WaitHumanReview, h.group("A").Wait)
	g := h.s.Group("A")
	g.Head = "c3ffffffff"
	g.Pushed = &Push{Head: "c3ffffffff", By: "carol"}
	h.reconcile(Tick("s1"))
	assert.Equal(t, RoleQA, h.inFlight("A").Role)
	assert.Equal(t, []string{"A's branch moved from c1 to c3fffff (pushed by @carol) after review; sending it back through QA and review."}, noticeTexts(h.actions))
	assert.Empty(t, h.group("A").ReviewedHead)
}

// Issue 23: a merge result that says the branch was brought up to date but
// names no new head is refused with a report: nothing merges on the
// approvals and checks of the old head, and a human looks.
func TestMergeUpdatedWithoutHeadIsRefused(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Merge.RequiredApprovals = 1
	h := newHarness(t, cfg)
	h.plan(pg("A", 1))
	dev := h.inFlight("A")
	ev := StepResult("s1", dev.ID, Result{Status: StatusReadyForQA})
	ev.Commit = "c1"
	h.reconcile(ev)
	h.through("A", StatusPass, StatusApproved)
	h.reconcile(Event{Kind: EventHumanReview, Session: "s1", Group: "A", Actor: "alice", Review: ReviewApproved, Commit: "c1"})
	merge := h.inFlight("A")
	require.Equal(t, RoleMerge, merge.Role)

	h.report("A", StatusMergeUpdated, "", "brought up to date")
	assert.Equal(t, SessionPaused, h.s.Status)
	assert.Contains(t, h.s.Reason, "names no new head; nothing was merged")
	_, running := h.maybeInFlight("A")
	assert.False(t, running, "no merge goes out")
	var reports []string
	for _, a := range h.actions {
		if a.Kind == ActionReport {
			reports = append(reports, a.Text)
		}
	}
	assert.Contains(t, strings.Join(reports, "\n"), "refused the MERGE_UPDATED result of step "+merge.ID)

	// Resumed, the merge step goes again: it lands the reviewed head or
	// reports where the branch is.
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
	again := h.inFlight("A")
	assert.Equal(t, RoleMerge, again.Role)
	assert.Equal(t, "c1", h.group("A").ReviewedHead)

	// The head in the handoff is enough: the new head waits for approval.
	h.report("A", StatusMergeUpdated, `{"updated_head":"m9"}`)
	assert.Equal(t, "m9", h.group("A").Head)
	assert.Empty(t, h.group("A").Approvals, "the approvals were for c1")
	assert.Equal(t, WaitHumanReview, h.group("A").Wait)
}
