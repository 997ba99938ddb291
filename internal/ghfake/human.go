package ghfake

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v66/github"
)

// The helpers below act as a user would in GitHub's web UI: they change
// state directly (no API call is recorded, no rate limit, no permission
// check) and emit the webhooks GitHub would. The Fake-level ones act on the
// default repository.

var errNoRepo = errors.New("ghfake: no repository")

// do runs fn on r under f.mu, then delivers events in Sync mode.
func (r *Repo) do(user string, fn func() error) error {
	r.f.mu.Lock()
	if user != "" {
		r.f.account(user, "")
	}
	err := fn()
	r.f.mu.Unlock()
	r.f.afterChange()
	return err
}

func (r *Repo) mustIssue(n int) (*issue, error) {
	is := r.issue(n)
	if is == nil {
		return nil, fmt.Errorf("%s#%d: %w", r.FullName(), n, ErrNotFound)
	}
	return is, nil
}

func (r *Repo) mustPR(n int) (*issue, error) {
	is, err := r.mustIssue(n)
	if err == nil && is.pr == nil {
		err = fmt.Errorf("%s#%d is an issue, not a pull request: %w", r.FullName(), n, ErrNotFound)
	}
	return is, err
}

// CreateIssue opens an issue as user and returns its number.
func (r *Repo) CreateIssue(user, title, body string, labels ...string) (int, error) {
	var n int
	err := r.do(user, func() error {
		is := r.f.newIssue(r, user, title, body)
		r.f.openedWithLabels(r, is, labels, user)
		n = is.number
		return nil
	})
	return n, err
}

// EditIssue changes an issue's title and/or body (empty: unchanged).
func (r *Repo) EditIssue(user string, n int, title, body string) error {
	return r.do(user, func() error {
		is, err := r.mustIssue(n)
		if err != nil {
			return err
		}
		var t, b *string
		if title != "" {
			t = &title
		}
		if body != "" {
			b = &body
		}
		r.f.applyIssueEdit(r, is, user, t, b)
		return nil
	})
}

// CloseIssue closes an issue or pull request (unmerged).
func (r *Repo) CloseIssue(user string, n int) error {
	return r.do(user, func() error {
		is, err := r.mustIssue(n)
		if err != nil {
			return err
		}
		r.f.setIssueState(r, is, "closed", "", user)
		return nil
	})
}

// ReopenIssue reopens an issue or closed, unmerged pull request.
func (r *Repo) ReopenIssue(user string, n int) error {
	return r.do(user, func() error {
		is, err := r.mustIssue(n)
		if err != nil {
			return err
		}
		r.f.setIssueState(r, is, "open", "", user)
		return nil
	})
}

// LabelIssue adds a label (created if new) to an issue or pull request.
func (r *Repo) LabelIssue(user string, n int, label string) error {
	return r.do(user, func() error {
		is, err := r.mustIssue(n)
		if err != nil {
			return err
		}
		r.f.setLabels(r, is, []string{label}, user, false)
		return nil
	})
}

// UnlabelIssue removes a label from an issue or pull request.
func (r *Repo) UnlabelIssue(user string, n int, label string) error {
	return r.do(user, func() error {
		is, err := r.mustIssue(n)
		if err != nil {
			return err
		}
		var rest []string
		for _, l := range is.labels {
			if !strings.EqualFold(l, label) {
				rest = append(rest, l)
			}
		}
		if len(rest) == len(is.labels) {
			return fmt.Errorf("label %q on #%d: %w", label, n, ErrNotFound)
		}
		r.f.setLabels(r, is, rest, user, true)
		return nil
	})
}

// Comment comments on an issue or pull request and returns the comment id.
func (r *Repo) Comment(user string, n int, body string) (int64, error) {
	var id int64
	err := r.do(user, func() error {
		is, err := r.mustIssue(n)
		if err != nil {
			return err
		}
		if tooLong(body) {
			return fmt.Errorf("ghfake: comment body longer than %d characters", maxBody)
		}
		id = r.f.addComment(r, is, user, body).id
		return nil
	})
	return id, err
}

// EditComment changes a comment's body as user.
func (r *Repo) EditComment(user string, id int64, body string) error {
	return r.do(user, func() error {
		cm := r.comments[id]
		if cm == nil {
			return fmt.Errorf("comment %d: %w", id, ErrNotFound)
		}
		r.f.changeComment(r, cm, body, user)
		return nil
	})
}

// DeleteComment deletes a comment as user.
func (r *Repo) DeleteComment(user string, id int64) error {
	return r.do(user, func() error {
		cm := r.comments[id]
		if cm == nil {
			return fmt.Errorf("comment %d: %w", id, ErrNotFound)
		}
		r.f.removeComment(r, cm, user)
		return nil
	})
}

// CreatePR opens a pull request from head to base (branches of r) as user,
// with GitHub's validations, and returns its number.
func (r *Repo) CreatePR(user, head, base, title, body string, draft bool) (int, error) {
	var n int
	err := r.do(user, func() error {
		refs, err := r.heads()
		if err != nil {
			return err
		}
		headSHA, ok := refs["refs/heads/"+head]
		if !ok {
			return fmt.Errorf("head branch %s: %w", head, ErrNotFound)
		}
		baseSHA, ok := refs["refs/heads/"+base]
		if !ok {
			return fmt.Errorf("base branch %s: %w", base, ErrNotFound)
		}
		if r.isAncestor(headSHA, baseSHA) {
			return fmt.Errorf("ghfake: no commits between %s and %s", base, head)
		}
		is := r.f.newIssue(r, user, title, body)
		is.pr = &pull{id: r.f.id("issue"), head: head, base: base, headSHA: headSHA, draft: draft}
		r.f.emitPR(r, is, "opened", user, nil, nil, "", "")
		n = is.number
		return nil
	})
	return n, err
}

// SubmitReview submits a review: state APPROVE, REQUEST_CHANGES or COMMENT
// (or APPROVED, CHANGES_REQUESTED, COMMENTED). It returns the review id.
func (r *Repo) SubmitReview(user string, pr int, state, body string) (int64, error) {
	var id int64
	err := r.do(user, func() error {
		is, err := r.mustPR(pr)
		if err != nil {
			return err
		}
		if state == "" {
			return errors.New("ghfake: SubmitReview needs a state")
		}
		rv, status, msg := r.f.review(r, is, user, state, body, false)
		if status != http.StatusOK {
			return fmt.Errorf("ghfake: review: %s", msg)
		}
		id = rv.id
		return nil
	})
	return id, err
}

// MarkReady marks a draft pull request ready for review (GraphQL-only on
// GitHub, so a helper here), emitting pull_request.ready_for_review.
func (r *Repo) MarkReady(user string, pr int) error {
	return r.do(user, func() error {
		is, err := r.mustPR(pr)
		if err != nil {
			return err
		}
		if !is.pr.draft {
			return nil
		}
		is.pr.draft, is.updated = false, r.f.now()
		r.f.emitPR(r, is, "ready_for_review", user, nil, nil, "", "")
		return nil
	})
}

// ClosePR closes a pull request without merging it.
func (r *Repo) ClosePR(user string, pr int) error {
	return r.do(user, func() error {
		is, err := r.mustPR(pr)
		if err != nil {
			return err
		}
		r.f.setIssueState(r, is, "closed", "", user)
		return nil
	})
}

// MergePR merges a pull request with a merge commit, as the "Merge pull
// request" button does, and returns the merge commit.
func (r *Repo) MergePR(user string, pr int) (string, error) {
	var sha string
	err := r.do(user, func() error {
		is, err := r.mustPR(pr)
		if err != nil {
			return err
		}
		s, status, msg := r.f.merge(r, is, user, mergeOpts{method: "merge"})
		if status != http.StatusOK {
			return fmt.Errorf("ghfake: merge #%d: %d %s", pr, status, msg)
		}
		sha = s
		return nil
	})
	return sha, err
}

// --- inspectors ---

// Issue returns issue or pull request n as the issues API renders it, or
// nil.
func (r *Repo) Issue(n int) *github.Issue {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	is := r.issue(n)
	if is == nil {
		return nil
	}
	return r.issueJSON(is)
}

// Issues returns every issue and pull request, by number.
func (r *Repo) Issues() []*github.Issue {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	var out []*github.Issue
	for _, is := range r.issues {
		if is.movedTo != nil {
			continue
		}
		out = append(out, r.issueJSON(is))
	}
	return out
}

// Comments returns the comments of issue or pull request n, oldest first.
func (r *Repo) Comments(n int) []*github.IssueComment {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	is := r.issue(n)
	if is == nil {
		return nil
	}
	var out []*github.IssueComment
	for _, id := range is.comments {
		out = append(out, r.commentJSON(r.comments[id]))
	}
	return out
}

// Labels returns the label names of issue or pull request n, in the order
// they were added.
func (r *Repo) Labels(n int) []string {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	is := r.issue(n)
	if is == nil {
		return nil
	}
	return append([]string(nil), is.labels...)
}

// PR returns pull request n (with mergeability), or nil.
func (r *Repo) PR(n int) *github.PullRequest {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	is := r.issue(n)
	if is == nil || is.pr == nil {
		return nil
	}
	refs, _ := r.heads()
	return r.prJSON(is, refs, true)
}

// PRs returns every pull request, by number.
func (r *Repo) PRs() []*github.PullRequest {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	refs, _ := r.heads()
	var out []*github.PullRequest
	for _, is := range r.sortedPulls() {
		out = append(out, r.prJSON(is, refs, false))
	}
	return out
}

// Reviews returns the reviews of pull request n.
func (r *Repo) Reviews(n int) []*github.PullRequestReview {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	is := r.issue(n)
	if is == nil || is.pr == nil {
		return nil
	}
	var out []*github.PullRequestReview
	for _, rv := range is.pr.reviews {
		out = append(out, r.reviewJSON(is, rv))
	}
	return out
}

// --- Fake-level shortcuts on the default repository ---

func (f *Fake) def() (*Repo, error) {
	r := f.DefaultRepo()
	if r == nil {
		return nil, errNoRepo
	}
	return r, nil
}

// CreateIssue is Repo.CreateIssue on the default repository.
func (f *Fake) CreateIssue(user, title, body string, labels ...string) (int, error) {
	r, err := f.def()
	if err != nil {
		return 0, err
	}
	return r.CreateIssue(user, title, body, labels...)
}

// LabelIssue is Repo.LabelIssue on the default repository.
func (f *Fake) LabelIssue(user string, n int, label string) error {
	r, err := f.def()
	if err != nil {
		return err
	}
	return r.LabelIssue(user, n, label)
}

// UnlabelIssue is Repo.UnlabelIssue on the default repository.
func (f *Fake) UnlabelIssue(user string, n int, label string) error {
	r, err := f.def()
	if err != nil {
		return err
	}
	return r.UnlabelIssue(user, n, label)
}

// Comment is Repo.Comment on the default repository.
func (f *Fake) Comment(user string, n int, body string) (int64, error) {
	r, err := f.def()
	if err != nil {
		return 0, err
	}
	return r.Comment(user, n, body)
}

// EditComment is Repo.EditComment on the default repository.
func (f *Fake) EditComment(user string, id int64, body string) error {
	r, err := f.def()
	if err != nil {
		return err
	}
	return r.EditComment(user, id, body)
}

// DeleteComment is Repo.DeleteComment on the default repository.
func (f *Fake) DeleteComment(user string, id int64) error {
	r, err := f.def()
	if err != nil {
		return err
	}
	return r.DeleteComment(user, id)
}

// SubmitReview is Repo.SubmitReview on the default repository.
func (f *Fake) SubmitReview(user string, pr int, state, body string) (int64, error) {
	r, err := f.def()
	if err != nil {
		return 0, err
	}
	return r.SubmitReview(user, pr, state, body)
}

// ClosePR is Repo.ClosePR on the default repository.
func (f *Fake) ClosePR(user string, pr int) error {
	r, err := f.def()
	if err != nil {
		return err
	}
	return r.ClosePR(user, pr)
}

// MergePR is Repo.MergePR on the default repository.
func (f *Fake) MergePR(user string, pr int) (string, error) {
	r, err := f.def()
	if err != nil {
		return "", err
	}
	return r.MergePR(user, pr)
}

// Issue is Repo.Issue on the default repository.
func (f *Fake) Issue(n int) *github.Issue {
	if r, err := f.def(); err == nil {
		return r.Issue(n)
	}
	return nil
}

// Comments is Repo.Comments on the default repository.
func (f *Fake) Comments(n int) []*github.IssueComment {
	if r, err := f.def(); err == nil {
		return r.Comments(n)
	}
	return nil
}

// Labels is Repo.Labels on the default repository.
func (f *Fake) Labels(n int) []string {
	if r, err := f.def(); err == nil {
		return r.Labels(n)
	}
	return nil
}

// PRs is Repo.PRs on the default repository.
func (f *Fake) PRs() []*github.PullRequest {
	if r, err := f.def(); err == nil {
		return r.PRs()
	}
	return nil
}
