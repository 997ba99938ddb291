package ghapi

import (
	"context"
	"fmt"

	"github.com/google/go-github/v66/github"
)

// NewIssue is an issue to open (issue 26: follow-ups for a later session).
type NewIssue struct {
	Title  string
	Body   string
	Labels []string
}

// CreateIssue opens an issue. GitHub creates a label that does not exist
// yet; a user without push access has labels silently dropped (REST
// "Create an issue").
func (g *Client) CreateIssue(ctx context.Context, repo RepoRef, is NewIssue) (Issue, error) {
	req := &github.IssueRequest{Title: github.String(is.Title), Body: github.String(is.Body)}
	if len(is.Labels) > 0 {
		labels := append([]string(nil), is.Labels...)
		req.Labels = &labels
	}
	out, resp, err := g.c.Issues.Create(ctx, repo.Owner, repo.Name, req)
	if err != nil {
		return Issue{}, apiErr(fmt.Sprintf("open an issue in %s", repo), resp, err)
	}
	return issueOf(out), nil
}

// ListIssuesWithLabel lists the issues of every state (open and closed)
// that carry label, pull requests excluded.
func (g *Client) ListIssuesWithLabel(ctx context.Context, repo RepoRef, label string) ([]Issue, error) {
	opts := &github.IssueListByRepoOptions{Labels: []string{label}, State: "all", ListOptions: github.ListOptions{PerPage: perPage}}
	var out []Issue
	for {
		list, resp, err := g.c.Issues.ListByRepo(ctx, repo.Owner, repo.Name, opts)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("list issues of %s labelled %s", repo, label), resp, err)
		}
		for _, is := range list {
			if !is.IsPullRequest() {
				out = append(out, issueOf(is))
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}
