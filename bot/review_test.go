package bot

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// numbered is a file of n lines "line 1" … "line n".
func numbered(n int, edit map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		l := fmt.Sprintf("line %d", i)
		if e, ok := edit[i]; ok {
			l = e
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// reviewFindings are the issue's done-when findings: one HIGH, two LOW.
var reviewFindings = []pipeline.Finding{
	{Severity: pipeline.SeverityHigh, File: "widget.go", Line: 12, EndLine: 14, Problem: "the lock is never released", Fix: "defer mu.Unlock()"},
	{Severity: pipeline.SeverityLow, File: "widget.go", Line: 3, Problem: "import order"},
	{Severity: pipeline.SeverityLow, File: "widget.go", Line: 25, Problem: "typo in <b>wigdet</b> @team", Fix: "widget"},
}

func TestParsePatch(t *testing.T) {
	patch := "@@ -1,4 +1,5 @@\n line 1\n-line 2\n+line two\n+line 2b\n line 3\n line 4\n@@ -20,3 +21,3 @@\n line 20\n-line 21\n+line XXI\n line 22\n\\ No newline at end of file"
	assert.Equal(t, diffLines{1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 21: 2, 22: 2, 23: 2}, parsePatch(patch))
	assert.Empty(t, parsePatch(""), "a binary file has no patch: nothing inline")
}

// TestFakeUnifiedPatchMatchesGit checks the fake's diff against git's own.
func TestFakeUnifiedPatchMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	before := numbered(40, nil)
	after := numbered(42, map[int]string{3: "line three", 20: "line twenty", 21: "new 21", 39: "tail"})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a"), []byte(before), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b"), []byte(after), 0o644))
	out, _ := exec.Command("git", "diff", "--no-index", "-U3", filepath.Join(dir, "a"), filepath.Join(dir, "b")).Output()
	i := strings.Index(string(out), "@@")
	require.GreaterOrEqual(t, i, 0, string(out))
	// git adds a section heading after a hunk's header; GitHub's patches
	// have it too, and the readers skip it.
	want := regexp.MustCompile(`(?m)^(@@ [^@]+ @@).*$`).ReplaceAllString(strings.TrimSuffix(string(out[i:]), "\n"), "$1")
	assert.Equal(t, want, unifiedPatch(before, after))
	// The product reads the fake's patches as it reads GitHub's.
	assert.Equal(t, rightLines(unifiedPatch(before, after)), map[int]int(parsePatch(unifiedPatch(before, after))))
}

func TestBuildReviewGolden(t *testing.T) {
	files := []ghapi.PRFile{
		{Filename: "widget.go", Status: "modified", Patch: unifiedPatch(numbered(40, nil), numbered(40, map[int]string{3: "import b", 13: "mu.Lock()", 25: "wigdet"}))},
		{Filename: "logo.png", Status: "added"},
	}
	st := pipeline.Step{ID: "7/A/tech_lead/9", Group: "A", StepSpec: pipeline.StepSpec{Role: pipeline.RoleTechLead, Purpose: pipeline.PurposeReview},
		State: pipeline.StepDone, Routed: "developer",
		Result: &pipeline.Result{Status: pipeline.StatusApproved, Summary: []string{"Looks fine but for the lock"}, Findings: append(reviewFindings,
			pipeline.Finding{Severity: pipeline.SeverityMedium, File: "widget.go", Line: 38, Problem: "not on the diff"},
			pipeline.Finding{Severity: pipeline.SeverityMedium, File: "README.md", Line: 1, Problem: "a file the PR does not change"},
			pipeline.Finding{Severity: pipeline.SeverityLow, File: "widget.go", Line: 12, EndLine: 30, Problem: "a range across hunks"},
			pipeline.Finding{Severity: pipeline.SeverityLow, Problem: "about the whole change"})}}
	r := buildReview(st, "abc123", files)
	assert.Equal(t, "COMMENT", r.Event, "the bot opened the PR: never APPROVE or REQUEST_CHANGES")
	assert.Equal(t, "abc123", r.CommitID)
	var got strings.Builder
	for _, c := range r.Comments {
		fmt.Fprintf(&got, "--- %s:%d-%d\n%s\n", c.Path, c.StartLine, c.Line, c.Body)
	}
	got.WriteString("--- body\n" + r.Body)
	golden(t, "review.md", got.String())
}

// TestFakeRefusesWhatGitHubRefuses: the bot opened the PR, so it may not
// approve or request changes on it, and an inline comment off the diff
// fails the whole review; what buildReview makes is taken.
func TestFakeRefusesWhatGitHubRefuses(t *testing.T) {
	ctx := context.Background()
	h := newFakeHarness(t, "")
	gh := h.gh
	gh.push("main", map[string]string{"widget.go": numbered(40, nil)})
	gh.push("feature", map[string]string{"widget.go": numbered(40, map[int]string{3: "import b", 13: "mu.Lock()", 25: "wigdet"})})
	pr, err := gh.CreatePR(ctx, gh.repo, ghapi.NewPR{Title: "widgets", Head: "feature", Base: "main"})
	require.NoError(t, err)
	files, err := gh.ListPRFiles(ctx, gh.repo, pr.Number)
	require.NoError(t, err)
	require.Len(t, files, 1)

	for _, tc := range []struct {
		name string
		r    ghapi.NewReview
		err  string
	}{
		{"self-approval", ghapi.NewReview{Event: "APPROVE", Body: "ok"}, "422 Can not approve your own pull request"},
		{"self request for changes", ghapi.NewReview{Event: "REQUEST_CHANGES", Body: "no"}, "422 Can not request changes on your own pull request"},
		{"a line outside the diff", ghapi.NewReview{Event: "COMMENT", Body: "x", Comments: []ghapi.ReviewComment{
			{Path: "widget.go", Line: 13, Body: "on the diff"}, {Path: "widget.go", Line: 38, Body: "not on it"}}},
			"422 Validation Failed: pull_request_review_thread.line must be part of the diff"},
		{"a range across hunks", ghapi.NewReview{Event: "COMMENT", Body: "x", Comments: []ghapi.ReviewComment{{Path: "widget.go", StartLine: 12, Line: 25, Body: "b"}}},
			"start_line must be part of the same hunk"},
		{"a file the PR does not change", ghapi.NewReview{Event: "COMMENT", Body: "x", Comments: []ghapi.ReviewComment{{Path: "README.md", Line: 1, Body: "b"}}},
			"path could not be resolved"},
		{"a body over the limit", ghapi.NewReview{Event: "COMMENT", Body: strings.Repeat("x", 65537)}, "body is too long"},
		{"no body", ghapi.NewReview{Event: "COMMENT"}, "Review body is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gh.CreateReview(ctx, gh.repo, pr.Number, tc.r)
			require.ErrorContains(t, err, tc.err)
		})
	}
	require.Empty(t, gh.issues[pr.Number].reviews, "a refused review posts nothing")

	st := pipeline.Step{ID: "7/A/tech_lead/9", Group: "A", StepSpec: pipeline.StepSpec{Role: pipeline.RoleTechLead},
		Result: &pipeline.Result{Status: pipeline.StatusApproved, Findings: reviewFindings}}
	rv, err := gh.CreateReview(ctx, gh.repo, pr.Number, buildReview(st, pr.HeadSHA, files))
	require.NoError(t, err)
	assert.Equal(t, "COMMENTED", rv.State)
	assert.Equal(t, []ghapi.ReviewComment{
		{Path: "widget.go", StartLine: 12, Line: 14, Body: "🔴 **HIGH** (lines 12–14): the lock is never released\n\nSuggested fix: defer mu.Unlock()"},
		{Path: "widget.go", Line: 3, Body: "⚪ **LOW**: import order"},
		{Path: "widget.go", Line: 25, Body: "⚪ **LOW**: typo in &lt;b&gt;wigdet&lt;/b&gt; @\u2060team\n\nSuggested fix: widget"},
	}, gh.inlineComments(pr.Number))
}

// reviewSession is a one-group session whose developer writes widget.go
// and whose tech lead returns findings from tl (by its n-th review).
func reviewSession(t *testing.T, config string, tl func(n int) (pipeline.Status, []pipeline.Finding)) *fakeSession {
	s := newFakeSession(t, 1, config)
	s.gh.setRole("bob", "write")
	s.tweak = func(ref codec.StepRef, n int, res *pipeline.Result) {
		branch := pipeline.BranchName(ref.Session, ref.Group)
		switch ref.Role {
		case pipeline.RoleDeveloper, pipeline.RoleSenior:
			s.gh.push(branch, map[string]string{"widget.go": numbered(30, map[int]string{30: fmt.Sprintf("// revision %d", n)})})
		case pipeline.RoleTechLead:
			res.Status, res.Findings = tl(n)
		}
	}
	s.start()
	return s
}

// reviewsOn are the reviews of the session's group PR.
func (s *fakeSession) reviewsOn() (int, []ghapi.Review) {
	prs := s.prs()
	require.Len(s.t, prs, 1)
	s.gh.mu.Lock()
	defer s.gh.mu.Unlock()
	return prs[0].Number, append([]ghapi.Review(nil), s.gh.issues[prs[0].Number].reviews...)
}

func (s *fakeSession) roleSteps(st codec.State, role pipeline.Role) int {
	n := 0
	for _, x := range st.Session.Steps {
		if x.Role == role {
			n++
		}
	}
	return n
}

func TestHighAndLowFindingsSendBackOnceWithOneReview(t *testing.T) {
	s := reviewSession(t, "", func(n int) (pipeline.Status, []pipeline.Finding) {
		if n == 1 {
			return pipeline.StatusApproved, reviewFindings
		}
		return pipeline.StatusApproved, nil
	})
	require.Equal(t, pipeline.SessionDone, s.run(500))
	st, _ := s.state()
	assert.Equal(t, 2, s.roleSteps(st, pipeline.RoleDeveloper), "sent back once")
	assert.Equal(t, 2, s.roleSteps(st, pipeline.RoleTechLead))
	n, reviews := s.reviewsOn()
	require.Len(t, reviews, 1, "one review, for the review with findings")
	rv := reviews[0]
	assert.Equal(t, fakeBotLogin, rv.Author)
	assert.Equal(t, "COMMENTED", rv.State)
	assert.Contains(t, rv.Body, "APPROVED → sent back: a HIGH finding must be fixed")
	assert.Contains(t, rv.Body, "Findings: 1 HIGH, 2 LOW (3 on the changed lines below).")
	var at []string
	for _, c := range s.gh.inlineComments(n) {
		at = append(at, fmt.Sprintf("%s:%d-%d", c.Path, c.StartLine, c.Line))
	}
	assert.Equal(t, []string{"widget.go:12-14", "widget.go:0-3", "widget.go:0-25"}, at)
	for _, c := range s.gh.recorded(true) {
		if c.Op == "CreateReview" {
			require.NoError(t, c.Err, "the bot never sends a review GitHub refuses")
		}
	}
	s.assertVerifiedBazinga()
}

func TestMediumFindingsMergeAndListFollowUps(t *testing.T) {
	s := reviewSession(t, "", func(int) (pipeline.Status, []pipeline.Finding) {
		return pipeline.StatusChangesRequested, []pipeline.Finding{{Severity: pipeline.SeverityMedium, File: "widget.go", Line: 7, Problem: "no test for an empty widget", Fix: "add one"}}
	})
	require.Equal(t, pipeline.SessionDone, s.run(500))
	st, _ := s.state()
	assert.Equal(t, 1, s.roleSteps(st, pipeline.RoleDeveloper), "MEDIUM alone does not send the group back")
	require.Len(t, st.Session.FollowUps, 1)
	_, tracking := s.trackingComment()
	assert.Contains(t, tracking, "Follow-ups: 1 review finding(s) the session went on with")
	assert.Contains(t, tracking, "- group A: MEDIUM widget.go:7: no test for an empty widget (fix: add one)")
	summary := s.botCommentsJoined()
	assert.Contains(t, summary, "Follow-ups (review findings the session went on with): 1")
	_, reviews := s.reviewsOn()
	require.Len(t, reviews, 1)
	assert.Contains(t, reviews[0].Body, "CHANGES_REQUESTED → goes on; MEDIUM findings are recorded as follow-ups")
	s.assertVerifiedBazinga()
}

func TestHighSurvivingItsRevisionWaitsForAHumanOnGitHub(t *testing.T) {
	s := reviewSession(t, "", func(n int) (pipeline.Status, []pipeline.Finding) {
		if n <= 2 {
			return pipeline.StatusChangesRequested, reviewFindings[:1]
		}
		return pipeline.StatusApproved, nil
	})
	s.steps(80)
	st, _ := s.state()
	cp := st.Session.Checkpoint
	require.NotNil(t, cp, "the session waits for a human")
	assert.Equal(t, pipeline.CheckpointFindings, cp.Kind)
	assert.Equal(t, pipeline.SessionAwaitingInput, st.Session.Status)
	assert.Contains(t, s.labels(s.issue), "bazinga:needs-input")
	assert.Equal(t, 2, s.roleSteps(st, pipeline.RoleDeveloper), "one revision, then no silent loop")
	_, tracking := s.trackingComment()
	assert.Contains(t, tracking, "Waiting for a decision: "+cp.ID)
	assert.Contains(t, s.botCommentsJoined(), "`/bazinga answer <direction>` to send the group back with it")
	_, reviews := s.reviewsOn()
	require.Len(t, reviews, 2)
	assert.Contains(t, reviews[1].Body, "a HIGH finding survived its revision: a human decides")
	s.assertRebuildMatches()

	s.comment("bob", s.issue, "/bazinga answer keep the lock but add a timeout")
	require.Equal(t, pipeline.SessionDone, s.run(500))
	st, _ = s.state()
	assert.Equal(t, 3, s.roleSteps(st, pipeline.RoleDeveloper))
	var fb string
	for _, x := range st.Session.Steps {
		if x.Role == pipeline.RoleDeveloper {
			fb = x.Feedback
		}
	}
	assert.Contains(t, fb, "keep the lock but add a timeout")
	s.assertVerifiedBazinga()
}
