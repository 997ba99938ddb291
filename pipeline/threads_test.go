package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// threadSession: group A's tech lead reviewed (step 2) with a HIGH on
// a.go:12 and a LOW on b.go:3, the developer revised (step 3), and the tech
// lead reviewed again (step 4) with again.
func threadSession(again []Finding, mods ...func(*Session)) Session {
	tl := func(n int, status Status, fs []Finding) Step {
		return Step{ID: StepID("7", "A", RoleTechLead, n), Group: "A", N: n, State: StepDone,
			StepSpec: StepSpec{Role: RoleTechLead, Purpose: PurposeReview}, Result: &Result{Status: status, Findings: fs}}
	}
	s := Session{ID: "7", Steps: []Step{
		{ID: StepID("7", "A", RoleDeveloper, 1), Group: "A", N: 1, State: StepDone, StepSpec: StepSpec{Role: RoleDeveloper}, Result: &Result{Status: StatusReadyForReview}},
		tl(2, StatusChangesRequested, []Finding{
			{Severity: SeverityHigh, File: "a.go", Line: 12, EndLine: 14, Problem: "lock never released"},
			{Severity: SeverityLow, File: "b.go", Line: 3, Problem: "import order"},
		}),
		{ID: StepID("7", "A", RoleDeveloper, 3), Group: "A", N: 3, State: StepDone, StepSpec: StepSpec{Role: RoleDeveloper}, Result: &Result{Status: StatusReadyForReview}},
		tl(4, StatusApproved, again),
	}}
	for _, m := range mods {
		m(&s)
	}
	return s
}

var openThreads = []FindingThread{
	{ID: "T1", Step: "7/A/tech_lead/2", File: "a.go", Line: 12},
	{ID: "T2", Step: "7/A/tech_lead/2", File: "b.go", Line: 3},
}

func TestThreadsToResolve(t *testing.T) {
	review := StepID("7", "A", RoleTechLead, 4)
	for _, tc := range []struct {
		name    string
		again   []Finding
		mods    []func(*Session)
		threads []FindingThread
		want    []string
	}{
		{name: "a clean re-review resolves every thread", want: []string{"T1", "T2"}},
		{name: "the LOW still reported keeps its thread; the HIGH fixed is resolved",
			again: []Finding{{Severity: SeverityLow, File: "b.go", Line: 4, Problem: "import order"}}, want: []string{"T1"}},
		{name: "a LOW in the HIGH's file does not keep the HIGH open",
			again: []Finding{{Severity: SeverityLow, File: "a.go", Line: 40, Problem: "typo"}}, want: []string{"T1", "T2"}},
		{name: "a HIGH still in the file keeps it open, worded differently or not",
			again: []Finding{{Severity: SeverityHigh, File: "a.go", Line: 13, Problem: "the mutex leaks on error"}}, want: []string{"T2"}},
		{name: "a finding about the whole change keeps nothing open",
			again: []Finding{{Severity: SeverityHigh, Problem: "no tests"}}, want: []string{"T1", "T2"}},
		{name: "resolved threads are left alone",
			threads: []FindingThread{{ID: "T1", Step: "7/A/tech_lead/2", File: "a.go", Line: 12, Resolved: true}}},
		{name: "no developer step since the review: nothing is resolved",
			mods: []func(*Session){func(s *Session) { s.Steps[2].Result = nil; s.Steps[2].State = StepFailed }}},
		{name: "QA's threads are QA's to resolve",
			threads: []FindingThread{{ID: "Q", Step: "7/A/qa/2", File: "a.go", Line: 12}}},
		{name: "another group's threads are not this review's",
			threads: []FindingThread{{ID: "B", Step: "7/B/tech_lead/2", File: "a.go", Line: 12}}},
		{name: "another session's threads are not this session's",
			threads: []FindingThread{{ID: "X", Step: "8/A/tech_lead/2", File: "a.go", Line: 12}}},
		{name: "a later review's threads are not resolved by an earlier one",
			threads: []FindingThread{{ID: "L", Step: "7/A/tech_lead/9", File: "a.go", Line: 12}}},
		{name: "a thread on no file or a step id that is not one is skipped",
			threads: []FindingThread{{ID: "N", Step: "7/A/tech_lead/2"}, {ID: "G", Step: "garbage", File: "a.go"}}},
		{name: "the review's findings pruned: severity unknown counts as LOW",
			again: []Finding{{Severity: SeverityLow, File: "a.go", Line: 40, Problem: "typo"}},
			mods:  []func(*Session){func(s *Session) { s.Steps = append(s.Steps[:1], s.Steps[2:]...) }}, want: []string{"T2"}},
		{name: "a review that is not a verdict resolves nothing",
			mods: []func(*Session){func(s *Session) { s.Steps[3].Result.Status = StatusSpawnInvestigator }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := threadSession(tc.again, tc.mods...)
			threads := tc.threads
			if threads == nil {
				threads = openThreads
			}
			assert.Equal(t, tc.want, s.ThreadsToResolve(review, threads))
		})
	}
	assert.Nil(t, threadSession(nil).ThreadsToResolve("7/A/tech_lead/99", openThreads), "an unknown review")
	assert.Nil(t, threadSession(nil).ThreadsToResolve(StepID("7", "A", RoleDeveloper, 3), openThreads), "not a review")
}

func TestMayResolveThreads(t *testing.T) {
	review := StepID("7", "A", RoleTechLead, 4)
	assert.True(t, threadSession(nil).MayResolveThreads(review))
	assert.False(t, threadSession(nil).MayResolveThreads(StepID("7", "A", RoleTechLead, 2)), "the first review has no earlier threads")
	noLines := threadSession(nil, func(s *Session) {
		s.Steps[1].Result.Findings = []Finding{{Severity: SeverityHigh, File: "a.go", Problem: "whole file"}, {Severity: SeverityHigh, Problem: "whole change"}}
	})
	assert.False(t, noLines.MayResolveThreads(review), "findings on no line opened no thread")
	noDev := threadSession(nil, func(s *Session) { s.Steps = append(s.Steps[:2], s.Steps[3]) })
	assert.False(t, noDev.MayResolveThreads(review))
}
