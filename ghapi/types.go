package ghapi

import (
	"errors"
	"fmt"
	"time"
)

// Our own types for the slice of GitHub bazinga uses: consumers declare the
// small interfaces they need over these types (Prow-plugin style), so no
// go-github type reaches them.

// RepoRef names a repository. ID, when known (0: not), is what GitHub
// keeps across renames and transfers; the name is what the API is called
// with, and changes with them.
type RepoRef struct {
	Owner string
	Name  string
	ID    int64
}

// String is "owner/name".
func (r RepoRef) String() string { return r.Owner + "/" + r.Name }

// ParseRepo reads "owner/name".
func ParseRepo(full string) (RepoRef, bool) {
	for i := 0; i < len(full); i++ {
		if full[i] == '/' {
			if i == 0 || i == len(full)-1 {
				return RepoRef{}, false
			}
			return RepoRef{Owner: full[:i], Name: full[i+1:]}, true
		}
	}
	return RepoRef{}, false
}

// Issue is an issue or a pull request as the issues API shows it.
type Issue struct {
	Number    int
	Title     string
	Body      string
	State     string // open | closed
	Author    string
	Labels    []string
	IsPR      bool
	CreatedAt time.Time
	URL       string // html
}

// Comment is an issue or pull request comment.
type Comment struct {
	ID         int64
	Issue      int
	Author     string
	AuthorType string // "User" or "Bot"
	// Association is GitHub's author_association (OWNER, MEMBER, COLLABORATOR, …).
	Association string
	Body        string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	URL         string // html
	// IssueURL is the API address of the issue the comment is on: after
	// a transfer, another repository's.
	IssueURL string
}

// IssueMove is where an issue transferred to another repository went.
type IssueMove struct {
	// Repo is the new repository: its id always, its name when this
	// token can read it.
	Repo   RepoRef
	Number int
}

// String names the new issue: "owner/name#N", or "repository N, issue #M"
// when its name is not readable.
func (m IssueMove) String() string {
	if m.Repo.Owner == "" {
		return fmt.Sprintf("issue #%d of a repository bazinga cannot read (id %d)", m.Number, m.Repo.ID)
	}
	return fmt.Sprintf("%s#%d", m.Repo, m.Number)
}

// PR is a pull request.
type PR struct {
	Number int
	Title  string
	Body   string
	State  string // open | closed
	Head   string // branch name
	// HeadSHA is the head commit; MergeCommitSHA the commit a merge made.
	HeadSHA        string
	MergeCommitSHA string
	// HeadRepo is the repository the head branch lives in, "owner/name":
	// another one for a pull request from a fork.
	HeadRepo string
	Base     string
	Draft    bool
	Merged   bool
	MergedBy string
	ClosedAt time.Time
	MergedAt time.Time
	URL      string // html
}

// NewPR is a pull request to open.
type NewPR struct {
	Title, Body, Head, Base string
	Draft                   bool
}

// PRFile is one file a pull request changes, with its patch (unified diff
// hunks; empty for a binary or too large a file).
type PRFile struct {
	Filename string
	Status   string // added, removed, modified, renamed, …
	Patch    string
}

// NewReview is a pull request review to submit at once (not pending):
// Event is APPROVE, REQUEST_CHANGES or COMMENT; Comments are inline
// comments on lines of the diff.
type NewReview struct {
	CommitID string
	Body     string
	Event    string
	Comments []ReviewComment
}

// ReviewComment is an inline comment of a review on the RIGHT side (the
// head's lines) of the diff: Line, or StartLine through Line.
type ReviewComment struct {
	Path      string
	Line      int
	StartLine int
	Body      string
}

// Review is a pull request review.
type Review struct {
	ID          int64
	Author      string
	AuthorType  string
	Association string // OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, …
	State       string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING
	Body        string
	// CommitID is the pull request head the review was submitted on.
	CommitID    string
	SubmittedAt time.Time
}

// IssueEdit changes an issue or pull request through the issues API; nil
// fields stay as they are. Labels replace the whole set.
type IssueEdit struct {
	Title  *string
	Body   *string
	Labels *[]string
	State  *string
}

// Run is a workflow run.
type Run struct {
	ID    int64
	Title string // the rendered run-name
	// Event is what started the run (workflow_dispatch, push, …); Path is
	// its workflow file (.github/workflows/x.yml).
	Event      string
	Path       string
	Status     string
	Conclusion string
	URL        string // html
	// Actor is the login that started the run (for a dispatch, the
	// dispatcher; a re-run keeps it).
	Actor string
}

// Errors of the client: callers test them with errors.Is.
var (
	ErrNotFound  = errors.New("github: not found")
	ErrExists    = errors.New("github: already exists")
	ErrNoCommits = errors.New("github: no commits between base and head")
	// ErrNoBranch: a pull request's head branch does not exist (yet).
	ErrNoBranch = errors.New("github: head branch does not exist")
	// ErrDraftsUnsupported: the repository cannot have draft pull requests
	// (a private repository on a free plan answers 422).
	ErrDraftsUnsupported = errors.New("github: draft pull requests are not supported in this repository")
	// ErrActionsMayNotOpenPRs: a GITHUB_TOKEN opened (or approved) a pull
	// request in a repository whose "Allow GitHub Actions to create and
	// approve pull requests" is off (the default of new personal
	// repositories); GitHub answers 403.
	ErrActionsMayNotOpenPRs = errors.New("github: GitHub Actions is not permitted to create or approve pull requests")
)
