package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHappyPathToBazinga(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1))
	require.Equal(t, SessionRunning, h.s.Status)
	assert.Equal(t, RoleDeveloper, h.inFlight("A").Role)
	assert.Equal(t, RoleDeveloper, h.inFlight("B").Role)
	for _, g := range []string{"A", "B"} {
		h.through(g, StatusReadyForQA, StatusPass, StatusApproved)
	}
	// A's merge is in flight; B waits for the merge lane.
	assert.Equal(t, RoleMerge, h.inFlight("A").Role)
	assert.Equal(t, WaitMergeLane, h.group("B").Wait)
	h.report("A", StatusMergeSuccess, "")
	assert.Equal(t, RoleMerge, h.inFlight("B").Role)
	h.report("B", StatusMergeSuccess, "")
	pm := h.inFlight(LeadGroup)
	assert.Equal(t, PurposeFinalCheck, pm.Purpose)
	h.report(LeadGroup, StatusBazinga, `{"criteria":[{"criterion":"it works","met":true,"evidence":"tests"}]}`)
	assert.Equal(t, SessionValidating, h.s.Status)
	assert.Equal(t, RoleValidate, h.inFlight(LeadGroup).Role)
	h.report(LeadGroup, StatusAccept, "", "all checks pass")
	assert.Equal(t, SessionDone, h.s.Status)
}
