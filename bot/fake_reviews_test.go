package bot

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// Pull request files and reviews on the in-memory fake (issue 26), with the
// rules of GitHub's REST API that bazinga's reviews meet:
//   - GET /pulls/{n}/files lists the files the PR changes against the merge
//     base of its base and head ("three-dot" diff), each with its patch of
//     unified hunks (3 lines of context);
//   - POST /pulls/{n}/reviews takes event APPROVE, REQUEST_CHANGES or
//     COMMENT; the PR's author cannot approve or request changes on their
//     own pull request (422 "Can not approve your own pull request",
//     docs.github.com/en/pull-requests/collaborating-with-pull-requests/reviewing-changes-in-pull-requests/approving-a-pull-request-with-required-reviews);
//   - a review's inline comment must be on a line of the diff on its side
//     ("line" and "start_line" in one hunk, start_line before line), else
//     the whole review is refused with 422 "pull_request_review_thread.line
//     must be part of the diff" and nothing is posted
//     (docs.github.com/en/rest/pulls/reviews#create-a-review-for-a-pull-request);
//   - COMMENT and REQUEST_CHANGES need a body; bodies are at most 65,536
//     characters; a closed pull request takes no review.

// fakeContext is the diff's context around a change, as GitHub shows it.
const fakeContext = 3

func (f *fakeGitHub) ListPRFiles(_ context.Context, repo ghapi.RepoRef, n int) ([]ghapi.PRFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, err := f.pr(repo, n)
	if err != nil {
		return nil, f.record("ListPRFiles", err, n)
	}
	return f.prFiles(is), f.record("ListPRFiles", nil, n)
}

// prFiles diffs the PR head against the merge base, paths sorted.
func (f *fakeGitHub) prFiles(is *fakeIssue) []ghapi.PRFile {
	head := f.refs["refs/heads/"+is.pr.Head]
	base := f.refs["refs/heads/"+is.pr.Base]
	mb := head
	for mb != "" && !f.isAncestor(mb, base) {
		mb = f.parents[mb]
	}
	oldT, newT := f.files[mb], f.files[head]
	var paths []string
	for p := range newT {
		paths = append(paths, p)
	}
	for p := range oldT {
		if _, ok := newT[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var out []ghapi.PRFile
	for _, p := range paths {
		o, inOld := oldT[p]
		nw, inNew := newT[p]
		if inOld && inNew && o == nw {
			continue
		}
		status := "modified"
		switch {
		case !inOld:
			status = "added"
		case !inNew:
			status = "removed"
		}
		out = append(out, ghapi.PRFile{Filename: p, Status: status, Patch: unifiedPatch(o, nw)})
	}
	return out
}

// splitLines splits a file into lines without their newlines.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// unifiedPatch is the hunks of a unified diff of a and b (an LCS diff:
// the fake's files are small).
func unifiedPatch(before, after string) string {
	x, y := splitLines(before), splitLines(after)
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		text string
	}
	var ops []op
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, op{' ', x[i]})
			i++
			j++
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			// Deletions first, as git prints them.
			ops = append(ops, op{'-', x[i]})
			i++
		default:
			ops = append(ops, op{'+', y[j]})
			j++
		}
	}
	// Hunks: runs of changes with up to fakeContext lines around them,
	// merged when their contexts touch.
	var b strings.Builder
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(0, k-fakeContext)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*fakeContext {
				end = min(len(ops), end+fakeContext)
				break
			}
			end = run
		}
		oldStart, newStart := 1, 1
		for _, o := range ops[:start] {
			if o.kind != '+' {
				oldStart++
			}
			if o.kind != '-' {
				newStart++
			}
		}
		oldN, newN := 0, 0
		var body strings.Builder
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				oldN++
			}
			if o.kind != '-' {
				newN++
			}
			body.WriteString(string(o.kind) + o.text + "\n")
		}
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n%s", oldStart, oldN, newStart, newN, body.String())
		k = end
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// rightLines are the head-side lines each hunk of a patch shows, by hunk:
// the fake's own reading of a patch, independent of the product's.
func rightLines(patch string) map[int]int {
	out := map[int]int{}
	hunk, line := 0, 0
	for _, l := range strings.Split(patch, "\n") {
		if rest, ok := strings.CutPrefix(l, "@@ -"); ok {
			hunk++
			plus := rest[strings.Index(rest, "+")+1:]
			plus = plus[:strings.IndexAny(plus, ", ")]
			line, _ = strconv.Atoi(plus)
			continue
		}
		if l == "" || l[0] == '-' {
			continue
		}
		out[line] = hunk
		line++
	}
	return out
}

func (f *fakeGitHub) CreateReview(_ context.Context, repo ghapi.RepoRef, n int, r ghapi.NewReview) (ghapi.Review, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	args := []any{n, r.Event, len(r.Comments)}
	is, err := f.pr(repo, n)
	if err != nil {
		return ghapi.Review{}, f.record("CreateReview", err, args...)
	}
	fail := func(msg string) (ghapi.Review, error) {
		return ghapi.Review{}, f.record("CreateReview", fmt.Errorf("review %s#%d: 422 %s", repo, n, msg), args...)
	}
	state := map[string]string{"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}[r.Event]
	self := strings.EqualFold(is.Author, f.login)
	switch {
	case state == "":
		return fail("Unprocessable Entity: event " + strconv.Quote(r.Event) + " is not APPROVE, REQUEST_CHANGES or COMMENT")
	case is.pr.State != "open":
		return fail("Can not review a closed pull request")
	case state == "APPROVED" && self:
		return fail("Can not approve your own pull request")
	case state == "CHANGES_REQUESTED" && self:
		return fail("Can not request changes on your own pull request")
	case state != "APPROVED" && strings.TrimSpace(r.Body) == "" && len(r.Comments) == 0:
		return fail("Review body is required for " + r.Event)
	case len([]rune(r.Body)) > maxBody:
		return fail("body is too long (maximum is 65536 characters)")
	}
	files := map[string]map[int]int{}
	for _, pf := range f.prFiles(is) {
		files[pf.Filename] = rightLines(pf.Patch)
	}
	for _, c := range r.Comments {
		lines, ok := files[c.Path]
		if !ok {
			return fail("Validation Failed: pull_request_review_thread.path could not be resolved")
		}
		h, on := lines[c.Line]
		if !on {
			return fail("Validation Failed: pull_request_review_thread.line must be part of the diff")
		}
		if c.StartLine != 0 {
			if hs, onS := lines[c.StartLine]; !onS || hs != h || c.StartLine >= c.Line {
				return fail("Validation Failed: pull_request_review_thread.start_line must be part of the same hunk as the line")
			}
		}
		if strings.TrimSpace(c.Body) == "" || len([]rune(c.Body)) > maxBody {
			return fail("Validation Failed: a review comment's body is empty or too long")
		}
	}
	f.reviewN++
	rv := ghapi.Review{ID: f.reviewN, Author: f.login, AuthorType: "Bot", State: state, Body: r.Body,
		CommitID: r.CommitID, SubmittedAt: f.now()}
	is.reviews = append(is.reviews, rv)
	is.reviewComments = append(is.reviewComments, fakeReviewComments{review: rv.ID, comments: slices.Clone(r.Comments)})
	return rv, f.record("CreateReview", nil, args...)
}

// fakeReviewComments are the inline comments a review was submitted with.
type fakeReviewComments struct {
	review   int64
	comments []ghapi.ReviewComment
	// resolved marks the threads (one per comment: the fake has no
	// replies) resolved, by comment index (fake_threads_test.go).
	resolved map[int]bool
}

// inlineComments returns the inline comments of PR n's reviews, in order.
func (f *fakeGitHub) inlineComments(n int) []ghapi.ReviewComment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ghapi.ReviewComment
	if is := f.issues[n]; is != nil {
		for _, rc := range is.reviewComments {
			out = append(out, rc.comments...)
		}
	}
	return out
}
