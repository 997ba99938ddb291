package action

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v66/github"

	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/gitops"
)

// prMerger carries out merge.method "pull-request": after the gate passed
// on merge(base, head), it merges the group's pull request through the API
// at exactly that head. GitHub merges into the base as it is then, so it
// first checks that the base has not moved since the test; the window left
// between that read and the merge is GitHub's, and the push method (the
// default) has none.
type prMerger struct {
	client *github.Client
	gh     bot.GitHub
	repo   ghapi.RepoRef
	base   string
	title  func(branch string) string
	// actionsOnly: the orchestrator is github-actions[bot], whose PRs
	// GitHub refuses unless the repository allows Actions to open them.
	actionsOnly bool
}

func (m prMerger) MergePR(ctx context.Context, branch, base, head string) (gitops.FinishResult, error) {
	cur, err := m.gh.GetRef(ctx, m.repo, "heads/"+m.base)
	if err != nil {
		return gitops.FinishResult{}, fmt.Errorf("reading %s: %w", m.base, err)
	}
	if cur != base {
		return gitops.FinishResult{Retry: true}, nil
	}
	pr, ok, err := m.gh.FindPR(ctx, m.repo, branch)
	if err != nil {
		return gitops.FinishResult{}, fmt.Errorf("finding the pull request of %s: %w", branch, err)
	}
	if !ok || pr.State != "open" {
		reason := fmt.Sprintf("merge.method is pull-request but %s has no open pull request", branch)
		if !ok && m.actionsOnly {
			reason += "; if GitHub refused to open it, turn on \"Allow GitHub Actions to create and approve pull requests\" " +
				"in Settings → Actions → General → Workflow permissions, then /bazinga resume"
		}
		return gitops.FinishResult{Outcome: gitops.MergeBlocked, Reason: reason}, nil
	}
	if pr.Draft {
		return gitops.FinishResult{Outcome: gitops.MergeBlocked,
			Reason: fmt.Sprintf("pull request #%d is a draft; mark it ready for review so it can be merged", pr.Number)}, nil
	}
	res, _, err := m.client.PullRequests.Merge(ctx, m.repo.Owner, m.repo.Name, pr.Number, m.title(branch),
		&github.PullRequestOptions{SHA: head, MergeMethod: "merge"})
	var ge *github.ErrorResponse
	switch {
	case err == nil && res.GetMerged():
		return gitops.FinishResult{Outcome: gitops.MergeSuccess, Commit: plumbing.NewHash(res.GetSHA())}, nil
	case err == nil:
		return gitops.FinishResult{Outcome: gitops.MergeBlocked, Reason: "GitHub did not merge the pull request: " + res.GetMessage()}, nil
	case errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusConflict:
		// "Head branch was modified": merge again what is there now, tested.
		return gitops.FinishResult{Retry: true}, nil
	case errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusMethodNotAllowed:
		msg := ge.Message
		if strings.Contains(strings.ToLower(msg), "base branch was modified") {
			return gitops.FinishResult{Retry: true}, nil
		}
		// Branch protection (required reviews or checks) or GitHub's own
		// mergeability: a human must act; the local merge was clean and tested.
		return gitops.FinishResult{Outcome: gitops.MergeBlocked,
			Reason: fmt.Sprintf("GitHub refused to merge pull request #%d: %s", pr.Number, msg)}, nil
	}
	return gitops.FinishResult{}, fmt.Errorf("merging pull request #%d: %w", pr.Number, err)
}
