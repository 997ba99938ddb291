package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 28: a deleted group branch blocks its group, visibly, until a human
// restores it; a reopened group PR takes its group back into the session.

// deletedDuringQA plays group A to QA at head c1, then deletes its branch.
func deletedDuringQA(t *testing.T) (*harness, Step) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1))
	h.reportAt("A", StatusReadyForQA, "c1aaaaaaaa", "")
	qa := h.inFlight("A")
	require.Equal(t, RoleQA, qa.Role)
	h.reconcile(BranchDeleted(h.s.ID, "A", "", "alice"))
	return h, qa
}

func TestDeletedBranchBlocksTheGroupVisibly(t *testing.T) {
	h, qa := deletedDuringQA(t)
	a := h.group("A")
	assert.Equal(t, StepCancelled, h.s.Step(qa.ID).State, "the step at work on the branch is withdrawn")
	assert.Empty(t, a.InFlight)
	assert.Equal(t, WaitBranch, a.Wait)
	assert.Equal(t, "branch bazinga/s1-A was deleted by @alice; retry the group to restore it at c1aaaaa", a.WaitDetail)
	assert.NotEqual(t, StageAbandoned, a.Stage, "deleting a branch is not giving the group up")
	require.NotNil(t, a.Deleted)
	assert.Equal(t, Push{Head: "c1aaaaaaaa", By: "alice"}, *a.Deleted)
	texts := noticeTexts(h.actions)
	require.NotEmpty(t, texts)
	assert.Contains(t, texts[0], "Group A's branch bazinga/s1-A was deleted by @alice, and GitHub closed its PR with it")
	// Nothing else of A runs while it waits, however much time passes, and
	// the other group is not held up.
	h.now = h.now.Add(24 * 60 * 60 * 1e9)
	h.reconcile(Tick(h.s.ID))
	assert.Empty(t, h.group("A").InFlight)
	assert.NotEmpty(t, h.group("B").InFlight)
	assert.NotEqual(t, SessionDone, h.s.Status)
}

func TestRetryOfADeletedBranchGoesOnWithTheInterruptedStep(t *testing.T) {
	h, qa := deletedDuringQA(t)
	h.reconcile(CommandEvent(h.s.ID, "bob", Command{Kind: CommandRetry, Group: "A"}))
	a := h.group("A")
	assert.Nil(t, a.Deleted)
	again := h.inFlight("A")
	assert.Equal(t, RoleQA, again.Role, "the interrupted step goes again")
	assert.NotEqual(t, qa.ID, again.ID)
	assert.Contains(t, noticeTexts(h.actions), "Group A's branch was restored at c1aaaaa by @bob; the group goes on.")
	h.through("A", StatusPass, StatusApproved, StatusMergeSuccess)
	assert.Equal(t, StageMerged, h.group("A").Stage)
}

func TestReopenedPRTakesTheGroupBack(t *testing.T) {
	tests := []struct {
		name  string
		setup func(h *harness)
		first Role
	}{
		{"abandoned after work: back through QA", func(h *harness) {
			h.reportAt("A", StatusReadyForQA, "c1aaaaaaaa", "")
			h.reconcile(Event{Kind: EventPRClosed, Session: h.s.ID, Group: "A", Actor: "alice"})
		}, RoleQA},
		{"abandoned before any work: to its developer", func(h *harness) {
			h.reconcile(Event{Kind: EventPRClosed, Session: h.s.ID, Group: "A", Actor: "alice"})
		}, RoleDeveloper},
		{"branch deleted, restored and reopened by a human", func(h *harness) {
			h.reportAt("A", StatusReadyForQA, "c1aaaaaaaa", "")
			h.reconcile(BranchDeleted(h.s.ID, "A", "", "alice"))
		}, RoleQA},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, DefaultConfig())
			h.plan(pg("A", 1), pg("B", 1))
			tc.setup(h)
			require.Empty(t, h.group("A").InFlight)
			h.reconcile(PRReopened(h.s.ID, "A", "carol"))
			a := h.group("A")
			assert.NotEqual(t, StageAbandoned, a.Stage)
			assert.Nil(t, a.Deleted)
			assert.Equal(t, tc.first, h.inFlight("A").Role)
		})
	}
}

func TestBranchEventsThatChangeNothing(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	before := h.s
	// The branch had no work yet: nothing to restore; its next job makes it.
	h.reconcile(BranchDeleted(h.s.ID, "A", "", "alice"))
	assert.Nil(t, h.group("A").Deleted)
	assert.Equal(t, before.Group("A").InFlight, h.group("A").InFlight)
	// A PR reopened while its group is at work, or of no group.
	h.reconcile(PRReopened(h.s.ID, "A", "alice"))
	assert.Equal(t, before.Group("A").InFlight, h.group("A").InFlight)
	h.reconcile(PRReopened(h.s.ID, "Z", "alice"), BranchDeleted(h.s.ID, "Z", "c1", "alice"))
	assert.Equal(t, before.Group("A").InFlight, h.group("A").InFlight)
	// A merged group's branch may go: GitHub offers to delete it.
	h.through("A", StatusReadyForQA, StatusPass, StatusApproved, StatusMergeSuccess)
	h.reconcile(BranchDeleted(h.s.ID, "A", "c9", "alice"))
	assert.Equal(t, StageMerged, h.group("A").Stage)
	assert.Nil(t, h.group("A").Deleted)
}

func TestBaseRenamedMovesTheSession(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	h.reconcile(BaseRenamed(h.s.ID, "dev", "trunk", "alice"))
	assert.Equal(t, "main", h.s.Base, "another branch's rename changes nothing")
	h.reconcile(BaseRenamed(h.s.ID, "main", "trunk", "alice"))
	assert.Equal(t, "trunk", h.s.Base)
	assert.Contains(t, noticeTexts(h.actions), "The base branch main was renamed to trunk by @alice; the session merges into trunk now.")
	h.through("A", StatusReadyForQA, StatusPass, StatusApproved, StatusMergeSuccess)
	assert.Equal(t, StageMerged, h.group("A").Stage)
}
