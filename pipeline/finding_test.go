package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBoundFindings(t *testing.T) {
	long := strings.Repeat("é", MaxFindingTextBytes) // 2 bytes each
	tests := []struct {
		name  string
		in    FindingInput
		want  []Finding
		notes []string
	}{
		{"whole", FindingInput{Severity: "HIGH", File: "./a/b.go", Line: 3, EndLine: 5, Problem: " nil\nderef ", Fix: "check it"},
			[]Finding{{Severity: SeverityHigh, File: "a/b.go", Line: 3, EndLine: 5, Problem: "nil deref", Fix: "check it"}}, nil},
		{"end before start is one line", FindingInput{Severity: "low", File: "a.go", Line: 9, EndLine: 2, Problem: "x"},
			[]Finding{{Severity: SeverityLow, File: "a.go", Line: 9, Problem: "x"}}, nil},
		{"a line without a file is about the change", FindingInput{Severity: "medium", Line: 4, Problem: "x"},
			[]Finding{{Severity: SeverityMedium, Problem: "x"}}, nil},
		{"line out of range: the whole file", FindingInput{Severity: "low", File: "a.go", Line: MaxFindingLine + 1, Problem: "x"},
			[]Finding{{Severity: SeverityLow, File: "a.go", Problem: "x"}}, nil},
		{"unknown severity", FindingInput{Severity: "critical", Problem: "x"}, nil,
			[]string{`finding 1: severity "critical" is not high, medium or low; dropped`}},
		{"no problem", FindingInput{Severity: "low", Problem: " \u200b "}, nil, []string{"finding 1: no problem given; dropped"}},
		{"outside the repository", FindingInput{Severity: "low", File: "../../etc/passwd", Problem: "x"}, nil,
			[]string{`finding 1: file "../../etc/passwd" is not a path inside the repository; dropped`}},
		{"absolute", FindingInput{Severity: "low", File: "/etc/passwd", Problem: "x"}, nil,
			[]string{`finding 1: file "/etc/passwd" is not a path inside the repository; dropped`}},
		{"control characters in the path", FindingInput{Severity: "low", File: "a\x1b[2J.go", Problem: "x"}, nil,
			[]string{`finding 1: file "a\x1b[2J.go" is not a path inside the repository; dropped`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes := BoundFindings([]FindingInput{tt.in})
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.notes, notes)
		})
	}
	t.Run("long texts are cut on a character", func(t *testing.T) {
		got, _ := BoundFindings([]FindingInput{{Severity: "low", Problem: long, Fix: long}})
		require.Len(t, got, 1)
		assert.LessOrEqual(t, len(got[0].Problem), MaxFindingTextBytes)
		assert.True(t, strings.HasSuffix(got[0].Problem, "…"))
		assert.True(t, json.Valid([]byte(`"`+got[0].Fix+`"`)))
	})
	t.Run("past the limit the worst are kept in written order", func(t *testing.T) {
		var in []FindingInput
		for i := range 16 {
			sev := "low"
			if i%5 == 4 {
				sev = "high"
			}
			in = append(in, FindingInput{Severity: sev, Problem: string(rune('a' + i))})
		}
		got, notes := BoundFindings(in)
		require.Len(t, got, MaxFindings)
		assert.Equal(t, []string{fmt.Sprintf("16 findings, kept the %d worst", MaxFindings)}, notes)
		assert.Len(t, BySeverity(got, SeverityHigh), 3)
		assert.Equal(t, "a", got[0].Problem)
		assert.Equal(t, "e", got[4].Problem) // a HIGH in its place
	})
}

// reviewFindings are the done-when findings: one HIGH and two LOW.
var reviewFindings = []Finding{
	{Severity: SeverityHigh, File: "widget.go", Line: 12, EndLine: 14, Problem: "the lock is never released", Fix: "defer mu.Unlock()"},
	{Severity: SeverityLow, File: "widget.go", Line: 3, Problem: "import order"},
	{Severity: SeverityLow, File: "README.md", Line: 1, Problem: "typo", Fix: "widget"},
}

func (h *harness) review(group string, status Status, fs ...Finding) Step {
	h.t.Helper()
	st := h.inFlight(group)
	h.reconcile(StepResult(h.s.ID, st.ID, Result{Status: status, Summary: []string{"reviewed"}, Findings: fs}))
	return *h.s.Step(st.ID)
}

func TestHighFindingSendsBackOnce(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	h.through("A", StatusReadyForQA, StatusPass)
	// The tech lead approves in words, but its HIGH finding decides.
	st := h.review("A", StatusApproved, reviewFindings...)
	assert.Equal(t, "developer", st.Routed)
	next := h.inFlight("A")
	assert.Equal(t, PurposeFixReview, next.Purpose)
	assert.Contains(t, next.Feedback, "HIGH widget.go:12-14: the lock is never released (fix: defer mu.Unlock())")
	assert.Contains(t, next.Feedback, "LOW README.md:1: typo")
	assert.Equal(t, 1, h.group("A").Counters.HighRounds)
	// Fixed: QA, then a review with LOW notes only merges.
	h.through("A", StatusReadyForQA, StatusPass)
	st = h.review("A", StatusChangesRequested, reviewFindings[1:]...)
	assert.Equal(t, "merge", st.Routed)
	assert.Empty(t, h.s.FollowUps, "LOW findings are shown with the review only")
}

func TestMediumFindingsMergeAndBecomeFollowUps(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	h.through("A", StatusReadyForQA)
	qaMedium := Finding{Severity: SeverityMedium, File: "widget.go", Line: 40, Problem: "no test for the empty input"}
	st := h.review("A", StatusFail, qaMedium)
	assert.Equal(t, "tech_lead", st.Routed, "QA's MEDIUM finding does not send the group back")
	tlMedium := Finding{Severity: SeverityMedium, File: "api.go", Line: 7, Problem: "the error is not wrapped", Fix: "use %w"}
	st = h.review("A", StatusApprovedWithNotes, tlMedium, tlMedium)
	assert.Equal(t, "merge", st.Routed)
	require.Len(t, h.s.FollowUps, 2, "one per finding, repeats once")
	assert.Equal(t, FollowUp{Group: "A", Step: st.ID, Finding: tlMedium}, h.s.FollowUps[1])
	h.through("A", StatusMergeSuccess)
	h.report(LeadGroup, StatusBazinga, `{"criteria":[{"criterion":"it works","met":true,"evidence":"tests"}]}`, "done")
	h.report(LeadGroup, StatusAccept, "", "verified")
	require.Equal(t, SessionDone, h.s.Status)
	var summary string
	for _, a := range h.all {
		if a.Notice == NoticeSummary {
			summary = a.Text
		}
	}
	assert.Contains(t, summary, "Follow-ups (review findings the session went on with): 2")
	assert.Contains(t, summary, "- group A: MEDIUM api.go:7: the error is not wrapped (fix: use %w)")
}

func TestFollowUpsAreBounded(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	h.through("A", StatusReadyForReview)
	for round := 0; len(h.s.FollowUps) < MaxFollowUps || h.s.FollowUpsDropped == 0; round++ {
		var fs []Finding
		for i := range MaxFindings {
			fs = append(fs, Finding{Severity: SeverityMedium, File: "a.go", Line: round*100 + i + 1, Problem: "p"})
		}
		h.review("A", StatusChangesRequested, fs...)
		require.Less(t, round, 5)
		if h.inFlight("A").Role == RoleMerge {
			h.through("A", StatusMergeConflict, StatusReadyForReview)
		}
	}
	assert.Len(t, h.s.FollowUps, MaxFollowUps)
	assert.Contains(t, FollowUpsText(h.s), "more not kept")
}

func TestHighSurvivingItsRevisionWaitsForAHuman(t *testing.T) {
	for _, tt := range []struct {
		name   string
		decide Command
		role   Role
	}{
		{"accepted: the group merges", Command{Kind: CommandApprove}, RoleMerge},
		{"direction: back to the developer", Command{Kind: CommandAnswer, Text: "keep the lock, add a timeout"}, RoleDeveloper},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, DefaultConfig())
			h.plan(pg("A", 1), pg("B", 1))
			h.through("A", StatusReadyForReview)
			h.review("A", StatusChangesRequested, reviewFindings...)
			h.through("A", StatusReadyForReview)
			st := h.review("A", StatusChangesRequested, reviewFindings[0])
			assert.Equal(t, "checkpoint", st.Routed)
			cp := h.s.Checkpoint
			require.NotNil(t, cp)
			assert.Equal(t, Checkpoint{ID: "findings-A-" + st.ID[strings.LastIndexByte(st.ID, '/')+1:], Kind: CheckpointFindings,
				Group: "A", Step: st.ID, Since: h.now}, *cp)
			assert.Equal(t, SessionAwaitingInput, h.s.Status)
			assert.Equal(t, WaitCheckpoint, h.group("A").Wait)
			require.Len(t, h.notices(), 1)
			assert.Contains(t, h.notices()[0].Text, "HIGH widget.go:12-14: the lock is never released")
			// The other group works on meanwhile.
			_, busy := h.maybeInFlight("B")
			assert.True(t, busy)

			c := tt.decide
			c.Checkpoint = cp.ID
			h.reconcile(CommandEvent(h.s.ID, "alice", c))
			assert.Nil(t, h.s.Checkpoint)
			assert.Nil(t, h.group("A").Held)
			next := h.inFlight("A")
			assert.Equal(t, tt.role, next.Role)
			if tt.role == RoleDeveloper {
				assert.Contains(t, next.Feedback, "keep the lock, add a timeout")
				assert.Zero(t, h.group("A").Counters.HighRounds)
				assert.Empty(t, h.s.FollowUps)
			} else {
				require.Len(t, h.s.FollowUps, 1)
				assert.Equal(t, SeverityMedium, h.s.FollowUps[0].Finding.Severity)
				assert.Contains(t, h.s.FollowUps[0].Finding.Problem, "(HIGH, accepted by alice)")
			}
		})
	}
}

func TestFindingsCheckpointClosesWhenTheGroupGetsOtherWork(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Limits.HighFindingRevisions = 2
	h := newHarness(t, cfg)
	h.plan(pg("A", 1))
	h.through("A", StatusReadyForQA)
	for range 2 {
		h.review("A", StatusPass, reviewFindings[0])
		assert.True(t, h.inFlight("A").Role.IsImplementer()) // a senior from the 2nd revision, as for FAIL
		h.through("A", StatusReadyForQA)
	}
	h.review("A", StatusPass, reviewFindings[0])
	require.NotNil(t, h.s.Checkpoint)
	h.reconcile(CommandEvent(h.s.ID, "bob", Command{Kind: CommandRetry, Group: "A"}))
	assert.Nil(t, h.s.Checkpoint)
	assert.Equal(t, SessionRunning, h.s.Status)
	assert.True(t, h.inFlight("A").Role.IsImplementer())
}

func TestFindingsOnlyFromReviewers(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	st := h.review("A", StatusReadyForQA, reviewFindings[0])
	assert.Empty(t, st.Result.Findings, "a developer's findings are not kept")
	st = h.review("A", StatusPass, Finding{Severity: Severity("critical"), Problem: "forged"}, Finding{Severity: SeverityLow, File: "/etc/x", Problem: "p"})
	assert.Empty(t, st.Result.Findings, "the engine bounds findings again")
	assert.Equal(t, "tech_lead", st.Routed)
}

func TestRoutingRowsForFindings(t *testing.T) {
	tests := []struct {
		role    Role
		status  Status
		purpose Purpose
		worst   Severity
		route   Route
	}{
		{RoleQA, StatusPass, PurposeTest, SeverityHigh, RouteHighFinding},
		{RoleQA, StatusFail, PurposeTest, SeverityLow, RouteFindingsNoted},
		{RoleQA, StatusFail, PurposeTest, SeverityNone, RouteQAFailed},
		{RoleQA, StatusBlocked, PurposeTest, SeverityHigh, RouteQAInconclusive},
		{RoleTechLead, StatusApproved, PurposeReview, SeverityHigh, RouteHighFinding},
		{RoleTechLead, StatusChangesRequested, PurposeReview, SeverityMedium, RouteFindingsNoted},
		{RoleTechLead, StatusChangesRequested, PurposeReview, SeverityNone, RouteChangesRequested},
		{RoleTechLead, StatusApproved, PurposeGuidance, SeverityHigh, RouteGuidanceApproved},
		{RoleInvestigator, StatusRootCauseFound, PurposeInvestigate, SeverityHigh, RouteValidateFindings},
	}
	for _, tt := range tests {
		row, ok := LookupFindings(tt.role, tt.status, tt.purpose, tt.worst)
		require.True(t, ok)
		assert.Equal(t, tt.route, row.Route, "%s %s %s worst %s", tt.role, tt.status, tt.purpose, tt.worst)
	}
}
