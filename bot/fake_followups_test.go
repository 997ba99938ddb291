package bot

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// Opening issues on the in-memory fake (issue 26, follow-ups), with the
// REST rules that matter: a title is required; bodies are at most 65,536
// characters; a label that does not exist yet is created with the issue.

func (f *fakeGitHub) CreateIssue(_ context.Context, repo ghapi.RepoRef, is ghapi.NewIssue) (ghapi.Issue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	args := []any{is.Title, strings.Join(is.Labels, ",")}
	if err := f.checkRepo(repo); err != nil {
		return ghapi.Issue{}, f.record("CreateIssue", err, args...)
	}
	switch {
	case strings.TrimSpace(is.Title) == "":
		return ghapi.Issue{}, f.record("CreateIssue", fmt.Errorf("open an issue: 422 Validation Failed: title missing"), args...)
	case len([]rune(is.Body)) > maxBody:
		return ghapi.Issue{}, f.record("CreateIssue", fmt.Errorf("open an issue: 422 body is too long (maximum is 65536 characters)"), args...)
	}
	f.next++
	out := ghapi.Issue{Number: f.next, Title: is.Title, Body: is.Body, State: "open", Author: f.login,
		Labels: slices.Clone(is.Labels), CreatedAt: f.now(), URL: fmt.Sprintf("https://github.com/%s/issues/%d", f.repo, f.next)}
	f.issues[f.next] = &fakeIssue{Issue: out}
	return out, f.record("CreateIssue", nil, args...)
}

func (f *fakeGitHub) ListIssuesWithLabel(_ context.Context, repo ghapi.RepoRef, label string) ([]ghapi.Issue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkRepo(repo); err != nil {
		return nil, f.record("ListIssuesWithLabel", err, label)
	}
	var out []ghapi.Issue
	for _, n := range f.numbers() {
		is := f.issues[n]
		if is.pr == nil && slices.Contains(is.Labels, label) {
			c := is.Issue
			c.Labels = slices.Clone(c.Labels)
			out = append(out, c)
		}
	}
	return out, f.record("ListIssuesWithLabel", nil, label)
}

// issuesWithLabel returns the issues carrying label, oldest first.
func (f *fakeGitHub) issuesWithLabel(label string) []ghapi.Issue {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ghapi.Issue
	for n := 1; n <= f.next; n++ {
		if is := f.issues[n]; is != nil && is.pr == nil && slices.Contains(is.Labels, label) {
			out = append(out, is.Issue)
		}
	}
	return out
}
