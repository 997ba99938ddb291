package ghfake

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/go-github/v66/github"
)

// Pull request files and reviews with inline comments (issue 26). The
// rules GitHub applies, which the product must meet:
//   - GET /pulls/{n}/files lists the files changed between the merge base
//     of base and head and the head ("three-dot"), each with its patch of
//     unified hunks; a binary file has none
//     (docs.github.com/en/rest/pulls/pulls#list-pull-requests-files);
//   - POST /pulls/{n}/reviews takes event APPROVE, REQUEST_CHANGES or
//     COMMENT (none: a PENDING review); a pull request's author cannot
//     approve or request changes on their own pull request (422); COMMENT
//     and REQUEST_CHANGES need a body
//     (docs.github.com/en/rest/pulls/reviews#create-a-review-for-a-pull-request);
//   - each inline comment names a path the pull request changes and a
//     line of the diff on its side (RIGHT: added and context lines of the
//     head; LEFT: removed and context lines of the base), a multi-line one
//     a start_line before it in the same hunk. One comment off the diff
//     refuses the whole review with 422 "Validation Failed" and
//     "pull_request_review_thread.line must be part of the diff": nothing
//     is posted. The deprecated "position" is not modelled (refused);
//   - bodies are at most 65,536 characters.

// prFile is one changed file of a pull request.
type prFile struct {
	name, status, patch string
}

var fileStatuses = map[string]string{"A": "added", "D": "removed", "M": "modified", "T": "changed"}

// prFiles diffs the pull request's head against the merge base. Caller
// holds f.mu.
func (r *Repo) prFiles(is *issue) ([]prFile, error) {
	refs, err := r.heads()
	if err != nil {
		return nil, err
	}
	head, base := is.pr.headSHA, refs["refs/heads/"+is.pr.base]
	if h, ok := refs["refs/heads/"+is.pr.head]; ok && is.state == "open" {
		head = h
	}
	mb, err := r.git("merge-base", base, head)
	if err != nil {
		return nil, fmt.Errorf("merge base of %s and %s: %w", base, head, err)
	}
	mb = strings.TrimSpace(mb)
	names, err := r.git("diff", "--no-renames", "--name-status", mb, head)
	if err != nil {
		return nil, err
	}
	var out []prFile
	for line := range strings.SplitSeq(strings.TrimSpace(names), "\n") {
		st, name, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		patch, err := r.git("diff", "--no-color", "--no-renames", "-U3", mb, head, "--", name)
		if err != nil {
			return nil, err
		}
		if i := strings.Index(patch, "\n@@"); i >= 0 {
			patch = strings.TrimSuffix(patch[i+1:], "\n")
		} else {
			patch = "" // binary
		}
		out = append(out, prFile{name: name, status: fileStatuses[st], patch: patch})
	}
	return out, nil
}

func (f *Fake) listPullFiles(c *rc) {
	is := c.pullParam()
	if is == nil {
		return
	}
	files, err := c.repo.prFiles(is)
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	start, end := c.page(len(files))
	out := []*github.CommitFile{}
	for _, pf := range files[start:end] {
		cf := &github.CommitFile{Filename: github.String(pf.name), Status: github.String(pf.status)}
		if pf.patch != "" {
			cf.Patch = github.String(pf.patch)
		}
		out = append(out, cf)
	}
	c.json(http.StatusOK, out)
}

// diffSides are the lines a patch shows on each side, by hunk.
type diffSides struct{ left, right map[int]int }

func readPatch(patch string) diffSides {
	d := diffSides{left: map[int]int{}, right: map[int]int{}}
	hunk, oldL, newL := 0, 0, 0
	for l := range strings.SplitSeq(patch, "\n") {
		if rest, ok := strings.CutPrefix(l, "@@ -"); ok {
			hunk++
			o, n, _ := strings.Cut(rest, " +")
			oldL, _ = strconv.Atoi(strings.SplitN(o, ",", 2)[0])
			n = strings.Fields(n)[0]
			newL, _ = strconv.Atoi(strings.SplitN(n, ",", 2)[0])
			continue
		}
		switch {
		case hunk == 0 || strings.HasPrefix(l, `\`):
		case strings.HasPrefix(l, "-"):
			d.left[oldL] = hunk
			oldL++
		case strings.HasPrefix(l, "+"):
			d.right[newL] = hunk
			newL++
		default:
			d.left[oldL], d.right[newL] = hunk, hunk
			oldL++
			newL++
		}
	}
	return d
}

type reviewCommentRequest struct {
	Path      string  `json:"path"`
	Position  *int    `json:"position"`
	Line      *int    `json:"line"`
	Side      *string `json:"side"`
	StartLine *int    `json:"start_line"`
	StartSide *string `json:"start_side"`
	Body      string  `json:"body"`
}

type reviewRequest struct {
	CommitID *string                `json:"commit_id"`
	Body     *string                `json:"body"`
	Event    *string                `json:"event"`
	Comments []reviewCommentRequest `json:"comments"`
}

// reviewComment is an inline comment of a review.
type reviewComment struct {
	id              int64
	path            string
	line, startLine int
	side            string
	body            string
	resolvedBy      string // who resolved its thread (graphql.go), "" while open
}

func (f *Fake) createReview(c *rc) {
	is := c.pullParam()
	if is == nil {
		return
	}
	var req reviewRequest
	if !c.decode(&req) {
		return
	}
	body, event := deref(req.Body), deref(req.Event)
	if tooLong(body) {
		c.invalid(fieldError{Resource: "PullRequestReview", Field: "body", Code: "custom", Message: "body is too long (maximum is 65536 characters)"})
		return
	}
	comments, msg := c.repo.checkReviewComments(is, req.Comments)
	if msg != "" {
		c.invalid(fieldError{Resource: "PullRequestReview", Code: "custom", Message: msg})
		return
	}
	rv, status, fail := f.review(c.repo, is, c.login, event, body, len(comments) > 0)
	if status != http.StatusOK {
		c.fail(status, fail)
		return
	}
	if req.CommitID != nil && *req.CommitID != "" {
		rv.commit = *req.CommitID
	}
	for i := range comments {
		comments[i].id = f.id("review_comment")
	}
	rv.comments = comments
	c.json(http.StatusOK, c.repo.reviewJSON(is, rv))
}

// checkReviewComments checks a review's inline comments against the pull
// request's diff; the message says why the first bad one is refused.
func (r *Repo) checkReviewComments(is *issue, reqs []reviewCommentRequest) ([]reviewComment, string) {
	if len(reqs) == 0 {
		return nil, ""
	}
	files, err := r.prFiles(is)
	if err != nil {
		return nil, err.Error()
	}
	sides := map[string]diffSides{}
	for _, pf := range files {
		sides[pf.name] = readPatch(pf.patch)
	}
	var out []reviewComment
	for _, q := range reqs {
		d, ok := sides[q.Path]
		switch {
		case !ok:
			return nil, "pull_request_review_thread.path could not be resolved"
		case q.Position != nil:
			return nil, "ghfake: the deprecated position parameter is not modelled; use line and side"
		case q.Line == nil:
			return nil, "pull_request_review_thread.line is missing"
		case strings.TrimSpace(q.Body) == "" || tooLong(q.Body):
			return nil, "pull_request_review_comment.body is empty or too long"
		}
		side := strings.ToUpper(deref(q.Side))
		if side == "" {
			side = "RIGHT"
		}
		lines := d.right
		if side == "LEFT" {
			lines = d.left
		} else if side != "RIGHT" {
			return nil, "pull_request_review_thread.side is not LEFT or RIGHT"
		}
		h, on := lines[*q.Line]
		if !on {
			return nil, "pull_request_review_thread.line must be part of the diff"
		}
		rc := reviewComment{path: q.Path, line: *q.Line, side: side, body: q.Body}
		if q.StartLine != nil {
			if hs, onS := lines[*q.StartLine]; !onS || hs != h || *q.StartLine >= *q.Line || (q.StartSide != nil && !strings.EqualFold(*q.StartSide, side)) {
				return nil, "pull_request_review_thread.start_line must be part of the same hunk as the line"
			}
			rc.startLine = *q.StartLine
		}
		out = append(out, rc)
	}
	return out, ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ReviewComment is an inline review comment as a test reads it.
type ReviewComment struct {
	Review          int64
	Path            string
	Line, StartLine int
	Side, Body      string
}

// ReviewComments returns the inline comments of pull request n's reviews.
func (r *Repo) ReviewComments(n int) []ReviewComment {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	is := r.issue(n)
	if is == nil || is.pr == nil {
		return nil
	}
	var out []ReviewComment
	for _, rv := range is.pr.reviews {
		for _, c := range rv.comments {
			out = append(out, ReviewComment{Review: rv.id, Path: c.path, Line: c.line, StartLine: c.startLine, Side: c.side, Body: c.body})
		}
	}
	return out
}
