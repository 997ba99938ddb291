package pipeline

import (
	"strconv"
	"strings"
)

// Resolving review threads (issue 26). A front-end posts QA's and the tech
// lead's findings as a review whose inline comments open threads on the
// group's pull request. A thread is resolved when the next developer step
// fixed its finding, and the only judge of that the engine trusts is the
// next review: a developer's own claim that it addressed a finding is
// agent text like any other. So a thread opened by review step R is
// resolved by review step V when
//   - V is a verdict of R's role on R's group (QA PASS or FAIL; the tech
//     lead's review APPROVED, APPROVED_WITH_NOTES or CHANGES_REQUESTED),
//     numbered after R;
//   - an implementer (developer, senior, requirements) step of the group
//     finished with a result between R and V: the next developer step;
//   - V reports no finding on the thread's file at least as severe as the
//     thread's own. Findings have no identity across reviews (a reviewer
//     words the same problem differently each time, and lines move with
//     the fix), so the file is what is compared: a problem still reported
//     in that file keeps the thread open. A finding whose severity is no
//     longer known (its review step left the stored session) counts as
//     LOW: any finding in the file keeps it open.
//
// The rule errs towards leaving a thread open: a fixed finding beside a
// new one in the same file stays open for a person to resolve, and a
// problem V still reports is never marked resolved. V's own findings get
// threads of their own, so nothing V reports is hidden.

// FindingThread is an inline finding's thread on a group's pull request,
// as a front-end reads it from GitHub.
type FindingThread struct {
	// ID is the front-end's id for the thread (GitHub's node id).
	ID string
	// Step is the review step whose review opened it.
	Step string
	// File and Line are where the finding's comment was placed (Line: its
	// first line).
	File     string
	Line     int
	Resolved bool
}

// stepOrigin reads a step id of this session: its group, role and number.
func (s Session) stepOrigin(id string) (group string, role Role, n int, ok bool) {
	parts := strings.Split(id, "/")
	if len(parts) != 4 || parts[0] != s.ID {
		return "", RoleUnknown, 0, false
	}
	role, err := ParseRole(parts[2])
	if err != nil || role == RoleUnknown {
		return "", RoleUnknown, 0, false
	}
	n, err = strconv.Atoi(parts[3])
	if err != nil || n < 1 {
		return "", RoleUnknown, 0, false
	}
	return parts[1], role, n, true
}

// IsVerdict reports whether a finished step is a review verdict whose
// findings judge the group's code: what can resolve earlier threads.
func (st Step) IsVerdict() bool {
	if st.State != StepDone || st.Result == nil {
		return false
	}
	switch st.Role {
	case RoleQA:
		return st.Result.Status == StatusPass || st.Result.Status == StatusFail
	case RoleTechLead:
		s := st.Result.Status
		return st.Purpose == PurposeReview && (s == StatusApproved || s == StatusApprovedWithNotes || s == StatusChangesRequested)
	}
	return false
}

// implementedBetween reports whether an implementer step of group finished
// with a result between step numbers from and to.
func (s Session) implementedBetween(group string, from, to int) bool {
	for _, st := range s.Steps {
		if st.Group == group && st.Role.IsImplementer() && st.State == StepDone && st.Result != nil && st.N > from && st.N < to {
			return true
		}
	}
	return false
}

// MayResolveThreads reports whether review step id may resolve threads of
// earlier reviews: it is a verdict, and an earlier review of its role on
// its group, followed by an implementer step, had findings placed on
// lines. A front-end reads the pull request's threads only then.
func (s Session) MayResolveThreads(id string) bool {
	v := s.Step(id)
	if v == nil || !v.IsVerdict() {
		return false
	}
	for _, r := range s.Steps {
		if r.Group != v.Group || r.Role != v.Role || r.N >= v.N || r.Result == nil || !s.implementedBetween(v.Group, r.N, v.N) {
			continue
		}
		for _, f := range r.Result.Findings {
			if f.File != "" && f.Line > 0 {
				return true
			}
		}
	}
	return false
}

// ThreadsToResolve returns the ids of the open threads that review step id
// resolves, by the rule above, in the order given. It reads only the
// session and the threads.
func (s Session) ThreadsToResolve(id string, threads []FindingThread) []string {
	v := s.Step(id)
	if v == nil || !v.IsVerdict() {
		return nil
	}
	var out []string
	for _, t := range threads {
		if t.Resolved || t.File == "" {
			continue
		}
		group, role, n, ok := s.stepOrigin(t.Step)
		if !ok || group != v.Group || role != v.Role || n >= v.N || !s.implementedBetween(group, n, v.N) {
			continue
		}
		sev := s.threadSeverity(t)
		still := false
		for _, f := range v.Result.Findings {
			if f.File == t.File && f.Severity.rank() >= sev.rank() {
				still = true
				break
			}
		}
		if !still {
			out = append(out, t.ID)
		}
	}
	return out
}

// threadSeverity is the severity of the finding a thread was opened for:
// the least severe of its review's findings placed at that file and line,
// LOW when the review's findings are no longer stored.
func (s Session) threadSeverity(t FindingThread) Severity {
	sev := SeverityNone
	if r := s.Step(t.Step); r != nil && r.Result != nil {
		for _, f := range r.Result.Findings {
			if f.File == t.File && f.Line == t.Line && (sev == SeverityNone || f.Severity.rank() < sev.rank()) {
				sev = f.Severity
			}
		}
	}
	if sev == SeverityNone {
		return SeverityLow
	}
	return sev
}
