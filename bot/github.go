package bot

import (
	"context"
	"errors"
	"time"
)

// This file declares the small slice of GitHub the core uses, in our own
// types (Prow-plugin style): handlers and effects never see go-github types,
// so a test can serve them from the fake GitHub through NewGitHub, or from a
// hand-written fake where the fake GitHub cannot serve.

// RepoRef names a repository.
type RepoRef struct {
	Owner string
	Name  string
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
}

// PR is a pull request.
type PR struct {
	Number   int
	Title    string
	Body     string
	State    string // open | closed
	Head     string // branch name
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

// Review is a pull request review.
type Review struct {
	ID          int64
	Author      string
	AuthorType  string
	Association string // OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, …
	State       string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING
	Body        string
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
	ID         int64
	Title      string // the rendered run-name
	Status     string
	Conclusion string
	URL        string // html
}

// GitHub is what the core needs from GitHub for one installation. Errors
// wrap ErrNotFound, ErrExists or ErrNoCommits where those apply, so callers
// test them with errors.Is.
type GitHub interface {
	// DefaultBranch returns the repository's default branch.
	DefaultBranch(ctx context.Context, repo RepoRef) (string, error)
	GetIssue(ctx context.Context, repo RepoRef, number int) (Issue, error)
	ListIssuesByLabel(ctx context.Context, repo RepoRef, label string) ([]Issue, error)
	EditIssue(ctx context.Context, repo RepoRef, number int, edit IssueEdit) error
	CloseIssue(ctx context.Context, repo RepoRef, number int) error
	ReplaceLabels(ctx context.Context, repo RepoRef, number int, labels []string) error

	ListComments(ctx context.Context, repo RepoRef, number int) ([]Comment, error)
	GetComment(ctx context.Context, repo RepoRef, id int64) (Comment, error)
	CreateComment(ctx context.Context, repo RepoRef, number int, body string) (Comment, error)
	EditComment(ctx context.Context, repo RepoRef, id int64, body string) (Comment, error)

	// GetPermission returns the user's role on the repository: admin,
	// maintain, write, triage, read or none (the API's role_name).
	GetPermission(ctx context.Context, repo RepoRef, user string) (string, error)
	// GetFile returns a file's content at ref (ErrNotFound when absent).
	GetFile(ctx context.Context, repo RepoRef, path, ref string) ([]byte, error)

	// GetRef returns the commit a ref ("heads/main") points at.
	GetRef(ctx context.Context, repo RepoRef, ref string) (string, error)
	// CreateRef creates a ref ("refs/heads/x"); ErrExists if it is there.
	CreateRef(ctx context.Context, repo RepoRef, ref, sha string) error

	GetPR(ctx context.Context, repo RepoRef, number int) (PR, error)
	// FindPR returns the newest pull request (any state) whose head is branch.
	FindPR(ctx context.Context, repo RepoRef, head string) (PR, bool, error)
	// ListPRs lists pull requests of every state.
	ListPRs(ctx context.Context, repo RepoRef) ([]PR, error)
	CreatePR(ctx context.Context, repo RepoRef, pr NewPR) (PR, error)
	EditPR(ctx context.Context, repo RepoRef, number int, title, body string) error
	ListReviews(ctx context.Context, repo RepoRef, number int) ([]Review, error)

	DispatchWorkflow(ctx context.Context, repo RepoRef, workflow, ref string, inputs map[string]string) error
	GetRun(ctx context.Context, repo RepoRef, id int64) (Run, error)
	// ListRuns lists the recent runs of a workflow file.
	ListRuns(ctx context.Context, repo RepoRef, workflow string) ([]Run, error)
	CancelRun(ctx context.Context, repo RepoRef, id int64) error
}

// Errors of the GitHub interface.
var (
	ErrNotFound  = errors.New("github: not found")
	ErrExists    = errors.New("github: already exists")
	ErrNoCommits = errors.New("github: no commits between base and head")
)
