package bot

import (
	"context"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// GitHub is what the core needs from GitHub for one installation. Errors
// wrap ErrNotFound, ErrExists or ErrNoCommits where those apply, so callers
// test them with errors.Is.
type GitHub interface {
	// DefaultBranch returns the repository's default branch.
	DefaultBranch(ctx context.Context, repo ghapi.RepoRef) (string, error)
	// RepoByID returns a repository's current name, with its id.
	RepoByID(ctx context.Context, id int64) (ghapi.RepoRef, error)
	GetIssue(ctx context.Context, repo ghapi.RepoRef, number int) (ghapi.Issue, error)
	// IssueMoved reports whether an issue was transferred to another
	// repository, and where (ErrNotFound: gone, or moved out of sight).
	IssueMoved(ctx context.Context, repo ghapi.RepoRef, number int) (ghapi.IssueMove, bool, error)
	ListIssuesByLabel(ctx context.Context, repo ghapi.RepoRef, label string) ([]ghapi.Issue, error)
	EditIssue(ctx context.Context, repo ghapi.RepoRef, number int, edit ghapi.IssueEdit) error
	CloseIssue(ctx context.Context, repo ghapi.RepoRef, number int) error
	ReplaceLabels(ctx context.Context, repo ghapi.RepoRef, number int, labels []string) error

	ListComments(ctx context.Context, repo ghapi.RepoRef, number int) ([]ghapi.Comment, error)
	GetComment(ctx context.Context, repo ghapi.RepoRef, id int64) (ghapi.Comment, error)
	CreateComment(ctx context.Context, repo ghapi.RepoRef, number int, body string) (ghapi.Comment, error)
	EditComment(ctx context.Context, repo ghapi.RepoRef, id int64, body string) (ghapi.Comment, error)

	// GetPermission returns the user's role on the repository: admin,
	// maintain, write, triage, read or none (the API's role_name).
	GetPermission(ctx context.Context, repo ghapi.RepoRef, user string) (string, error)
	// GetFile returns a file's content at ref (ErrNotFound when absent).
	GetFile(ctx context.Context, repo ghapi.RepoRef, path, ref string) ([]byte, error)

	// GetRef returns the commit a ref ("heads/main") points at.
	GetRef(ctx context.Context, repo ghapi.RepoRef, ref string) (string, error)
	// BranchMoved reports what a branch that is gone was renamed to
	// (ErrNotFound: deleted, or never there).
	BranchMoved(ctx context.Context, repo ghapi.RepoRef, branch string) (string, bool, error)
	// CreateRef creates a ref ("refs/heads/x"); ErrExists if it is there.
	CreateRef(ctx context.Context, repo ghapi.RepoRef, ref, sha string) error

	GetPR(ctx context.Context, repo ghapi.RepoRef, number int) (ghapi.PR, error)
	// FindPR returns the newest pull request (any state) whose head is branch.
	FindPR(ctx context.Context, repo ghapi.RepoRef, head string) (ghapi.PR, bool, error)
	// ListPRs lists pull requests of every state.
	ListPRs(ctx context.Context, repo ghapi.RepoRef) ([]ghapi.PR, error)
	CreatePR(ctx context.Context, repo ghapi.RepoRef, pr ghapi.NewPR) (ghapi.PR, error)
	EditPR(ctx context.Context, repo ghapi.RepoRef, number int, title, body string) error
	// ReopenPR reopens a closed pull request (GitHub refuses while its head
	// branch is deleted).
	ReopenPR(ctx context.Context, repo ghapi.RepoRef, number int) error
	ListReviews(ctx context.Context, repo ghapi.RepoRef, number int) ([]ghapi.Review, error)
	// ListPRFiles lists the files a pull request changes, with their patches.
	ListPRFiles(ctx context.Context, repo ghapi.RepoRef, number int) ([]ghapi.PRFile, error)
	// CreateReview submits a review with its inline comments (issue 26).
	CreateReview(ctx context.Context, repo ghapi.RepoRef, number int, r ghapi.NewReview) (ghapi.Review, error)
	// ListReviewThreads lists a pull request's review threads and
	// ResolveReviewThread resolves one (GraphQL; issue 26).
	ListReviewThreads(ctx context.Context, repo ghapi.RepoRef, number int) ([]ghapi.ReviewThread, error)
	ResolveReviewThread(ctx context.Context, threadID string) error
	// CreateIssue opens an issue; ListIssuesWithLabel lists the issues
	// of every state with a label (follow-ups as issues, issue 26).
	CreateIssue(ctx context.Context, repo ghapi.RepoRef, is ghapi.NewIssue) (ghapi.Issue, error)
	ListIssuesWithLabel(ctx context.Context, repo ghapi.RepoRef, label string) ([]ghapi.Issue, error)

	DispatchWorkflow(ctx context.Context, repo ghapi.RepoRef, workflow, ref string, inputs map[string]string) error
	GetRun(ctx context.Context, repo ghapi.RepoRef, id int64) (ghapi.Run, error)
	// ListRuns lists the recent runs of a workflow file.
	ListRuns(ctx context.Context, repo ghapi.RepoRef, workflow string) ([]ghapi.Run, error)
	CancelRun(ctx context.Context, repo ghapi.RepoRef, id int64) error

	// --- merge.method pull-request (issue 11) ---

	// BranchRules returns what a branch's protection and rulesets require
	// (required checks, rules that refuse a pushed merge commit).
	BranchRules(ctx context.Context, repo ghapi.RepoRef, branch string) (ghapi.BranchRules, error)
	// Checks lists the check runs and commit statuses reported on a commit.
	Checks(ctx context.Context, repo ghapi.RepoRef, sha string) ([]ghapi.Check, error)
}
