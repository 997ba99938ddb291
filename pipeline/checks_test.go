package pipeline

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toReview drives group A (alone) to the tech lead with head h1.
func toReview(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := newHarness(t, cfg)
	h.plan(pg("A", 1))
	dev := h.inFlight("A")
	ev := StepResult("s1", dev.ID, Result{Status: StatusReadyForReview})
	ev.Commit = "h1"
	h.reconcile(ev)
	require.Equal(t, RoleTechLead, h.inFlight("A").Role)
	return h
}

func ciReport(state CheckState, names ...string) ChecksReport {
	r := ChecksReport{State: state, Required: []string{"ci/test", "lint"}}
	switch state {
	case ChecksPending:
		r.Pending = names
	case ChecksFailed:
		r.Failed, r.Summary = names, "TestParse: want 3, got 4"
	}
	return r
}

func TestRequiredChecksGateTheMerge(t *testing.T) {
	cfg := DefaultConfig()
	t.Run("pending checks wait, named; passing ones release the merge", func(t *testing.T) {
		h := toReview(t, cfg)
		h.reconcile(ChecksEvent("s1", "A", "h1", ciReport(ChecksPending, "ci/test")))
		h.report("A", StatusApproved, "")
		_, merging := h.maybeInFlight("A")
		assert.False(t, merging)
		a := h.group("A")
		assert.Equal(t, WaitChecks, a.Wait)
		assert.Equal(t, "waiting for required checks: ci/test on h1", a.WaitDetail)
		// The same report again changes nothing: a sweep costs no revision.
		rev := h.s.Rev
		h.now = h.now.Add(time.Minute)
		h.reconcile(ChecksEvent("s1", "A", "h1", ciReport(ChecksPending, "ci/test")))
		assert.Equal(t, rev, h.s.Rev)
		h.reconcile(ChecksEvent("s1", "A", "h1", ciReport(ChecksPassed)))
		assert.Equal(t, RoleMerge, h.inFlight("A").Role)
	})
	t.Run("failed checks send the group back with their names and output", func(t *testing.T) {
		h := toReview(t, cfg)
		h.report("A", StatusApproved, "")
		// No report yet: the front-end reads the checks before it sends a merge.
		merge := h.inFlight("A")
		require.Equal(t, RoleMerge, merge.Role)
		h.report("A", StatusMergeConflict, `{"conflicts":["a.go"]}`)
		fix := h.inFlight("A")
		ev := StepResult("s1", fix.ID, Result{Status: StatusReadyForReview})
		ev.Commit = "h2"
		h.reconcile(ev)
		h.reconcile(ChecksEvent("s1", "A", "h2", ciReport(ChecksFailed, "ci/test")))
		h.report("A", StatusApproved, "")
		dev := h.inFlight("A")
		assert.Equal(t, RoleSenior, dev.Role, "a second merge failure goes to a senior")
		assert.Equal(t, PurposeFixMerge, dev.Purpose)
		assert.Contains(t, dev.Feedback, "required checks failed on h2: ci/test")
		assert.Contains(t, dev.Feedback, "TestParse: want 3, got 4")
		assert.Equal(t, 2, h.group("A").Counters.MergeFailures)
		assert.Nil(t, h.group("A").RequiredChecks, "the report is spent")
	})
	t.Run("a report for another head does not gate", func(t *testing.T) {
		h := toReview(t, cfg)
		h.reconcile(ChecksEvent("s1", "A", "old", ciReport(ChecksFailed, "ci/test")))
		assert.Nil(t, h.group("A").RequiredChecks)
		assert.Contains(t, h.actions[0].Text, "its head is h1")
		h.report("A", StatusApproved, "")
		assert.Equal(t, RoleMerge, h.inFlight("A").Role)
	})
	t.Run("a new head makes the report stale", func(t *testing.T) {
		h := toReview(t, cfg)
		h.reconcile(ChecksEvent("s1", "A", "h1", ciReport(ChecksPending, "ci/test")))
		h.report("A", StatusChangesRequested, "", "rename it")
		dev := h.inFlight("A")
		ev := StepResult("s1", dev.ID, Result{Status: StatusReadyForReview})
		ev.Commit = "h2"
		h.reconcile(ev)
		assert.Nil(t, h.group("A").RequiredChecks)
	})
	t.Run("pending past merge.checks_timeout pauses naming the checks; resume restarts the clock", func(t *testing.T) {
		c := cfg
		c.Merge.ChecksTimeout = Duration(time.Hour)
		h := toReview(t, c)
		h.reconcile(ChecksEvent("s1", "A", "h1", ciReport(ChecksPending, "lint")))
		h.report("A", StatusApproved, "")
		h.now = h.now.Add(59 * time.Minute)
		h.reconcile(Tick("s1"))
		assert.Equal(t, SessionRunning, h.s.Status)
		h.now = h.now.Add(2 * time.Minute)
		h.reconcile(Tick("s1"))
		require.Equal(t, SessionPaused, h.s.Status)
		assert.Contains(t, h.s.Reason, "required checks of group A (lint on h1) are still pending after 1h1m0s (merge.checks_timeout 1h0m0s)")
		h.now = h.now.Add(time.Minute)
		h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandResume}))
		assert.Equal(t, SessionRunning, h.s.Status)
		assert.Equal(t, WaitChecks, h.group("A").Wait)
		assert.Equal(t, h.now, h.group("A").RequiredChecks.Since)
		assert.Equal(t, 2*time.Second, roundWait(2*time.Second+300*time.Millisecond), "a wait under a minute reads in seconds")
		assert.Equal(t, 61*time.Minute, roundWait(61*time.Minute+20*time.Second))
		h.reconcile(ChecksEvent("s1", "A", "h1", ciReport(ChecksPassed)))
		assert.Equal(t, RoleMerge, h.inFlight("A").Role)
	})
	t.Run("human approvals come first", func(t *testing.T) {
		c := cfg
		c.Merge.RequiredApprovals = 1
		h := toReview(t, c)
		h.reconcile(ChecksEvent("s1", "A", "h1", ciReport(ChecksPending, "ci/test")))
		h.report("A", StatusApproved, "")
		assert.Equal(t, WaitHumanReview, h.group("A").Wait)
	})
	t.Run("bad reports are refused", func(t *testing.T) {
		h := toReview(t, cfg)
		h.reconcile(ChecksEvent("s1", "Z", "h1", ciReport(ChecksPassed)))
		assert.Contains(t, h.actions[0].Text, `unknown group "Z"`)
		h.reconcile(ChecksEvent("s1", "A", "", ciReport(ChecksPassed)))
		assert.Contains(t, h.actions[0].Text, "without a report or a head")
		h.reconcile(ChecksEvent("s1", "A", "h1", ChecksReport{State: CheckState("skipped")}))
		assert.Contains(t, h.actions[0].Text, `state "skipped"`)
		assert.Nil(t, h.group("A").RequiredChecks)
	})
}

func TestMergedCommitIsLearned(t *testing.T) {
	h := toReview(t, DefaultConfig())
	h.report("A", StatusApproved, "")
	h.report("A", StatusMergeSuccess, `{"merge_commit":"5quash","already_merged":false}`)
	assert.Equal(t, StageMerged, h.group("A").Stage)
	assert.Equal(t, "5quash", h.group("A").MergeCommit)

	h2 := toReview(t, DefaultConfig())
	h2.reconcile(Event{Kind: EventPRClosed, Session: "s1", Group: "A", Actor: "carol", Merged: true, Commit: "byhand"})
	assert.Equal(t, "byhand", h2.group("A").MergeCommit)
}

func TestChecksSurviveSerialisation(t *testing.T) {
	h := toReview(t, DefaultConfig())
	h.reconcile(ChecksEvent("s1", "A", "h1", ciReport(ChecksPending, "ci/test")))
	b, err := h.s.Marshal()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"state":"pending"`)
	back, err := UnmarshalSession(b)
	require.NoError(t, err)
	assert.Equal(t, h.s, back)
	// Clone shares nothing: changing the copy leaves the original alone.
	c := h.s.Clone()
	c.Groups[0].RequiredChecks.Pending[0] = "x"
	assert.Equal(t, "ci/test", h.group("A").RequiredChecks.Pending[0])
}

func TestMergeDefaults(t *testing.T) {
	assert.Equal(t, MergePullRequest, DefaultConfig().Merge.Method, "pull-request is the default")
	assert.Equal(t, DefaultChecksTimeout, MergeConfig{}.ChecksWait(), "a state saved before the key existed")
}

// A strict base: the land job pushed the tested merge to the group branch
// instead of merging; the merge waits for that head's checks, then goes again.
func TestMergeUpdatedWaitsForTheNewHead(t *testing.T) {
	h := toReview(t, DefaultConfig())
	h.reconcile(ChecksEvent("s1", "A", "h1", ciReport(ChecksPassed)))
	h.report("A", StatusApproved, "")
	merge := h.inFlight("A")
	ev := StepResult("s1", merge.ID, Result{Status: StatusMergeUpdated, Summary: []string{"brought up to date"}})
	ev.Commit = "m1"
	h.reconcile(ev)
	a := h.group("A")
	assert.Equal(t, "m1", a.Head)
	assert.Nil(t, a.RequiredChecks, "the checks of h1 say nothing of m1")
	assert.Zero(t, a.Counters.MergeFailures, "nothing failed")
	again := h.inFlight("A")
	require.Equal(t, RoleMerge, again.Role, "no report yet: the front-end reads the checks before it sends the merge")
	assert.Equal(t, merge.From, again.From)
	// Had the front-end read them pending, the merge would wait.
	h2 := toReview(t, DefaultConfig())
	h2.report("A", StatusApproved, "")
	m := h2.inFlight("A")
	ev = StepResult("s1", m.ID, Result{Status: StatusMergeUpdated})
	ev.Commit = "m1"
	h2.reconcile(ev, ChecksEvent("s1", "A", "m1", ciReport(ChecksPending, "ci/test")))
	assert.Equal(t, WaitChecks, h2.group("A").Wait)
}
