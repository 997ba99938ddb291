package stepjob

import (
	"context"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// gitHub is what the step jobs call on GitHub besides landing (landAPI):
// reading the session and the branches, claiming a step, posting its
// result and waking the orchestrator. ghapi.Client has it. Errors wrap
// ghapi.ErrNotFound and ghapi.ErrExists where those apply.
type gitHub interface {
	// DefaultBranch returns the repository's default branch.
	DefaultBranch(ctx context.Context, repo ghapi.RepoRef) (string, error)
	// GetRef returns the commit a ref ("heads/main") points at.
	GetRef(ctx context.Context, repo ghapi.RepoRef, ref string) (string, error)
	// CreateRef creates a ref ("refs/heads/x"); ErrExists if it is there.
	CreateRef(ctx context.Context, repo ghapi.RepoRef, ref, sha string) error
	// FindPR returns the newest pull request (any state) whose head is branch.
	FindPR(ctx context.Context, repo ghapi.RepoRef, head string) (ghapi.PR, bool, error)
	// GetIssue reads the issue (its title and body are the requirements an
	// agent step's prompt shows when the state only references them).
	GetIssue(ctx context.Context, repo ghapi.RepoRef, number int) (ghapi.Issue, error)
	ListComments(ctx context.Context, repo ghapi.RepoRef, number int) ([]ghapi.Comment, error)
	CreateComment(ctx context.Context, repo ghapi.RepoRef, number int, body string) (ghapi.Comment, error)
	// GetPermission returns the user's role on the repository.
	GetPermission(ctx context.Context, repo ghapi.RepoRef, user string) (string, error)
	DispatchWorkflow(ctx context.Context, repo ghapi.RepoRef, workflow, ref string, inputs map[string]string) error
}

var _ gitHub = (*ghapi.Client)(nil)
