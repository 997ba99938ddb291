package ghapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// Client is the slice of GitHub's REST API bazinga calls, over a go-github
// client, in our own types.
type Client struct{ c *github.Client }

// New wraps a go-github client (an installation client from the factory, a
// token client, or a test client for the fake GitHub).
func New(client *github.Client) *Client { return &Client{c: client} }

const perPage = 100

// apiErr maps go-github errors onto the sentinel errors.
func apiErr(op string, resp *github.Response, err error) error {
	if err == nil {
		return nil
	}
	// go-github refuses calls itself once a response said the limit is
	// spent (or a secondary limit's Retry-After has not passed): those are
	// the transport's far limits too.
	var prl *github.RateLimitError
	if errors.As(err, &prl) {
		return fmt.Errorf("%s: %w", op, &RateLimitedError{Resource: "core", Limit: prl.Rate.Limit, Reset: prl.Rate.Reset.Time})
	}
	var arl *github.AbuseRateLimitError
	if errors.As(err, &arl) {
		wait := time.Minute
		if arl.RetryAfter != nil {
			wait = *arl.RetryAfter
		}
		resource := "requests"
		if arl.Response != nil && arl.Response.Request != nil && ContentCreating(arl.Response.Request.Method) {
			resource = "content creation"
		}
		return fmt.Errorf("%s: %w", op, &RateLimitedError{Resource: resource, Reset: time.Now().Add(wait).Truncate(time.Second), Secondary: true})
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		msg := er.Message
		for _, e := range er.Errors {
			msg += " " + e.Message
		}
		switch code := er.Response.StatusCode; {
		case code == http.StatusNotFound:
			return fmt.Errorf("%s: %w: %v", op, ErrNotFound, err)
		case code == http.StatusUnprocessableEntity && strings.Contains(strings.ToLower(msg), "already exists"):
			return fmt.Errorf("%s: %w: %v", op, ErrExists, err)
		case code == http.StatusUnprocessableEntity && strings.Contains(msg, "No commits between"):
			return fmt.Errorf("%s: %w: %v", op, ErrNoCommits, err)
		case code == http.StatusUnprocessableEntity && invalidField(er, "head"):
			return fmt.Errorf("%s: %w: %v", op, ErrNoBranch, err)
		case code == http.StatusUnprocessableEntity && strings.Contains(strings.ToLower(msg), "draft pull requests are not supported"):
			return fmt.Errorf("%s: %w: %v", op, ErrDraftsUnsupported, err)
		case code == http.StatusForbidden && strings.Contains(msg, "not permitted to create or approve pull requests"):
			return fmt.Errorf("%s: %w", op, ErrActionsMayNotOpenPRs)
		}
	}
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%s: %w: %v", op, ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func issueOf(is *github.Issue) Issue {
	out := Issue{
		Number: is.GetNumber(), Title: is.GetTitle(), Body: is.GetBody(), State: is.GetState(),
		Author: is.GetUser().GetLogin(), IsPR: is.IsPullRequest(), CreatedAt: is.GetCreatedAt().Time, URL: is.GetHTMLURL(),
	}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

func commentOf(number int, c *github.IssueComment) Comment {
	return Comment{ID: c.GetID(), Issue: number, Author: c.GetUser().GetLogin(), AuthorType: c.GetUser().GetType(),
		Association: c.GetAuthorAssociation(),
		Body:        c.GetBody(), CreatedAt: c.GetCreatedAt().Time, UpdatedAt: c.GetUpdatedAt().Time, URL: c.GetHTMLURL(),
		IssueURL: c.GetIssueURL()}
}

func prOf(p *github.PullRequest) PR {
	return PR{Number: p.GetNumber(), Title: p.GetTitle(), Body: p.GetBody(), State: p.GetState(),
		Head: p.GetHead().GetRef(), HeadRepo: p.GetHead().GetRepo().GetFullName(), Base: p.GetBase().GetRef(), Draft: p.GetDraft(), Merged: p.GetMerged() || p.MergedAt != nil,
		HeadSHA: p.GetHead().GetSHA(), MergeCommitSHA: p.GetMergeCommitSHA(),
		MergedBy: p.GetMergedBy().GetLogin(), ClosedAt: p.GetClosedAt().Time, MergedAt: p.GetMergedAt().Time, URL: p.GetHTMLURL()}
}

func (g *Client) DefaultBranch(ctx context.Context, repo RepoRef) (string, error) {
	r, resp, err := g.c.Repositories.Get(ctx, repo.Owner, repo.Name)
	if err != nil {
		return "", apiErr(fmt.Sprintf("get repository %s", repo), resp, err)
	}
	return r.GetDefaultBranch(), nil
}

// RepoByID returns a repository's current name (GET /repositories/{id}):
// after a rename or a transfer, what the API is to be called with.
func (g *Client) RepoByID(ctx context.Context, id int64) (RepoRef, error) {
	r, resp, err := g.c.Repositories.GetByID(ctx, id)
	if err != nil {
		return RepoRef{}, apiErr(fmt.Sprintf("get repository %d", id), resp, err)
	}
	ref, ok := ParseRepo(r.GetFullName())
	if !ok {
		return RepoRef{}, fmt.Errorf("get repository %d: full name %q is not owner/name", id, r.GetFullName())
	}
	ref.ID = r.GetID()
	return ref, nil
}

func (g *Client) GetIssue(ctx context.Context, repo RepoRef, number int) (Issue, error) {
	is, resp, err := g.c.Issues.Get(ctx, repo.Owner, repo.Name, number)
	if err != nil {
		return Issue{}, apiErr(fmt.Sprintf("get issue %s#%d", repo, number), resp, err)
	}
	return issueOf(is), nil
}

// IssueMoved reports whether issue number was transferred to another
// repository. GitHub answers the former address with 301 Moved Permanently
// and the new one (REST "Get an issue"); a client following it would read
// the new issue as if it were still here, so this call does not follow.
// A rename of the repository itself redirects too, to the same repository
// id and number: that is not a move. ErrNotFound: the issue is gone, or
// moved where this token cannot read.
func (g *Client) IssueMoved(ctx context.Context, repo RepoRef, number int) (IssueMove, bool, error) {
	op := fmt.Sprintf("where is issue %s#%d", repo, number)
	loc, err := g.movedTo(ctx, op, fmt.Sprintf("repos/%s/%s/issues/%d", url.PathEscape(repo.Owner), url.PathEscape(repo.Name), number))
	if loc == nil || err != nil {
		return IssueMove{}, false, err
	}
	m := movedIssueRE.FindStringSubmatch(loc.Path)
	if m == nil {
		return IssueMove{}, false, fmt.Errorf("%s: moved to %s, not an issue's address", op, loc)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	n, _ := strconv.Atoi(m[2])
	if repo.ID == 0 {
		r, resp, err := g.c.Repositories.Get(ctx, repo.Owner, repo.Name)
		if err != nil {
			return IssueMove{}, false, apiErr(op, resp, err)
		}
		repo.ID = r.GetID()
	}
	if id == repo.ID && n == number {
		// The repository was renamed: ask again under its current name.
		cur, err := g.RepoByID(ctx, id)
		if err != nil {
			return IssueMove{}, false, err
		}
		if strings.EqualFold(cur.String(), repo.String()) {
			return IssueMove{}, false, fmt.Errorf("%s: redirected to itself", op)
		}
		return g.IssueMoved(ctx, cur, number)
	}
	to := IssueMove{Repo: RepoRef{ID: id}, Number: n}
	if cur, err := g.RepoByID(ctx, id); err == nil {
		to.Repo = cur
	} else if errors.Is(err, ErrRateLimited) {
		return IssueMove{}, false, err
	} // else: a repository this token cannot read; its id names it
	return to, true, nil
}

var movedIssueRE = regexp.MustCompile(`/repositories/([0-9]+)/issues/([0-9]+)$`)

// movedTo GETs path without following a redirect: the new address when
// GitHub answers 301 or 308, nil when it answers 200 or 304, ErrNotFound
// on 404 or 410.
func (g *Client) movedTo(ctx context.Context, op, path string) (*url.URL, error) {
	req, err := g.c.NewRequest(http.MethodGet, path, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	hc := *g.c.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNotModified:
		return nil, nil
	case http.StatusNotFound, http.StatusGone:
		return nil, fmt.Errorf("%s: %w", op, ErrNotFound)
	case http.StatusMovedPermanently, http.StatusPermanentRedirect:
	default:
		return nil, fmt.Errorf("%s: GitHub answered %s", op, resp.Status)
	}
	loc, err := resp.Location()
	if err != nil {
		return nil, fmt.Errorf("%s: a %d without a Location: %w", op, resp.StatusCode, err)
	}
	return loc, nil
}

// BranchMoved reports what a branch that is gone was renamed to: GitHub
// answers "Get a branch" under a renamed branch's former name with 301 and
// the new name. ErrNotFound: deleted, never there.
func (g *Client) BranchMoved(ctx context.Context, repo RepoRef, branch string) (string, bool, error) {
	op := fmt.Sprintf("where is branch %s of %s", branch, repo)
	loc, err := g.movedTo(ctx, op, fmt.Sprintf("repos/%s/%s/branches/%s", url.PathEscape(repo.Owner), url.PathEscape(repo.Name), url.PathEscape(branch)))
	if loc == nil || err != nil {
		return "", false, err
	}
	_, to, ok := strings.Cut(loc.EscapedPath(), "/branches/")
	if !ok || to == "" {
		return "", false, fmt.Errorf("%s: moved to %s, not a branch's address", op, loc)
	}
	name, err := url.PathUnescape(to)
	if err != nil {
		return "", false, fmt.Errorf("%s: moved to %s: %w", op, loc, err)
	}
	if name == branch {
		return "", false, nil // the repository was renamed, not the branch
	}
	return name, true, nil
}

func (g *Client) ListIssuesByLabel(ctx context.Context, repo RepoRef, label string) ([]Issue, error) {
	opts := &github.IssueListByRepoOptions{Labels: []string{label}, State: "open", ListOptions: github.ListOptions{PerPage: perPage}}
	var out []Issue
	for {
		list, resp, err := g.c.Issues.ListByRepo(ctx, repo.Owner, repo.Name, opts)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("list issues of %s labelled %s", repo, label), resp, err)
		}
		for _, is := range list {
			out = append(out, issueOf(is))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *Client) EditIssue(ctx context.Context, repo RepoRef, number int, e IssueEdit) error {
	_, resp, err := g.c.Issues.Edit(ctx, repo.Owner, repo.Name, number,
		&github.IssueRequest{Title: e.Title, Body: e.Body, Labels: e.Labels, State: e.State})
	return apiErr(fmt.Sprintf("edit %s#%d", repo, number), resp, err)
}

func (g *Client) CloseIssue(ctx context.Context, repo RepoRef, number int) error {
	_, resp, err := g.c.Issues.Edit(ctx, repo.Owner, repo.Name, number,
		&github.IssueRequest{State: github.String("closed"), StateReason: github.String("completed")})
	return apiErr(fmt.Sprintf("close %s#%d", repo, number), resp, err)
}

func (g *Client) ReplaceLabels(ctx context.Context, repo RepoRef, number int, labels []string) error {
	if labels == nil {
		labels = []string{}
	}
	_, resp, err := g.c.Issues.ReplaceLabelsForIssue(ctx, repo.Owner, repo.Name, number, labels)
	return apiErr(fmt.Sprintf("set labels of %s#%d", repo, number), resp, err)
}

func (g *Client) ListComments(ctx context.Context, repo RepoRef, number int) ([]Comment, error) {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: perPage}}
	var out []Comment
	for {
		list, resp, err := g.c.Issues.ListComments(ctx, repo.Owner, repo.Name, number, opts)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("list comments of %s#%d", repo, number), resp, err)
		}
		for _, c := range list {
			out = append(out, commentOf(number, c))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func issueNumberFromURL(u string) int {
	i := strings.LastIndexByte(u, '/')
	n := 0
	for _, r := range u[i+1:] {
		if r < '0' || r > '9' {
			return 0
		}
		n = n*10 + int(r-'0')
	}
	return n
}

func (g *Client) GetComment(ctx context.Context, repo RepoRef, id int64) (Comment, error) {
	c, resp, err := g.c.Issues.GetComment(ctx, repo.Owner, repo.Name, id)
	if err != nil {
		return Comment{}, apiErr(fmt.Sprintf("get comment %d of %s", id, repo), resp, err)
	}
	return commentOf(issueNumberFromURL(c.GetIssueURL()), c), nil
}

func (g *Client) CreateComment(ctx context.Context, repo RepoRef, number int, body string) (Comment, error) {
	c, resp, err := g.c.Issues.CreateComment(ctx, repo.Owner, repo.Name, number, &github.IssueComment{Body: github.String(body)})
	if err != nil {
		return Comment{}, apiErr(fmt.Sprintf("comment on %s#%d", repo, number), resp, err)
	}
	return commentOf(number, c), nil
}

func (g *Client) EditComment(ctx context.Context, repo RepoRef, id int64, body string) (Comment, error) {
	c, resp, err := g.c.Issues.EditComment(ctx, repo.Owner, repo.Name, id, &github.IssueComment{Body: github.String(body)})
	if err != nil {
		return Comment{}, apiErr(fmt.Sprintf("edit comment %d of %s", id, repo), resp, err)
	}
	return commentOf(issueNumberFromURL(c.GetIssueURL()), c), nil
}

func (g *Client) GetPermission(ctx context.Context, repo RepoRef, user string) (string, error) {
	p, resp, err := g.c.Repositories.GetPermissionLevel(ctx, repo.Owner, repo.Name, user)
	if err != nil {
		return "", apiErr(fmt.Sprintf("permission of %s on %s", user, repo), resp, err)
	}
	if role := p.GetRoleName(); role != "" {
		return role, nil
	}
	return p.GetPermission(), nil
}

func (g *Client) GetFile(ctx context.Context, repo RepoRef, path, ref string) ([]byte, error) {
	fc, _, resp, err := g.c.Repositories.GetContents(ctx, repo.Owner, repo.Name, path, &github.RepositoryContentGetOptions{Ref: ref})
	if err != nil {
		return nil, apiErr(fmt.Sprintf("read %s of %s at %s", path, repo, ref), resp, err)
	}
	if fc == nil {
		return nil, fmt.Errorf("read %s of %s: a directory: %w", path, repo, ErrNotFound)
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", path, repo, err)
	}
	return []byte(s), nil
}

func (g *Client) GetRef(ctx context.Context, repo RepoRef, ref string) (string, error) {
	r, resp, err := g.c.Git.GetRef(ctx, repo.Owner, repo.Name, strings.TrimPrefix(ref, "refs/"))
	if err != nil {
		return "", apiErr(fmt.Sprintf("get ref %s of %s", ref, repo), resp, err)
	}
	return r.GetObject().GetSHA(), nil
}

func (g *Client) CreateRef(ctx context.Context, repo RepoRef, ref, sha string) error {
	_, resp, err := g.c.Git.CreateRef(ctx, repo.Owner, repo.Name,
		&github.Reference{Ref: github.String(ref), Object: &github.GitObject{SHA: github.String(sha)}})
	return apiErr(fmt.Sprintf("create ref %s of %s", ref, repo), resp, err)
}

func (g *Client) GetPR(ctx context.Context, repo RepoRef, number int) (PR, error) {
	p, resp, err := g.c.PullRequests.Get(ctx, repo.Owner, repo.Name, number)
	if err != nil {
		return PR{}, apiErr(fmt.Sprintf("get PR %s#%d", repo, number), resp, err)
	}
	return prOf(p), nil
}

func (g *Client) FindPR(ctx context.Context, repo RepoRef, head string) (PR, bool, error) {
	list, resp, err := g.c.PullRequests.List(ctx, repo.Owner, repo.Name,
		&github.PullRequestListOptions{State: "all", Head: repo.Owner + ":" + head, ListOptions: github.ListOptions{PerPage: 10}})
	if err != nil {
		return PR{}, false, apiErr(fmt.Sprintf("find PR of %s in %s", head, repo), resp, err)
	}
	for _, p := range list {
		if p.GetHead().GetRef() == head {
			return prOf(p), true, nil
		}
	}
	return PR{}, false, nil
}

func (g *Client) ListPRs(ctx context.Context, repo RepoRef) ([]PR, error) {
	opts := &github.PullRequestListOptions{State: "all", ListOptions: github.ListOptions{PerPage: perPage}}
	var out []PR
	for {
		list, resp, err := g.c.PullRequests.List(ctx, repo.Owner, repo.Name, opts)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("list PRs of %s", repo), resp, err)
		}
		for _, p := range list {
			out = append(out, prOf(p))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (g *Client) CreatePR(ctx context.Context, repo RepoRef, pr NewPR) (PR, error) {
	p, resp, err := g.c.PullRequests.Create(ctx, repo.Owner, repo.Name, &github.NewPullRequest{
		Title: github.String(pr.Title), Body: github.String(pr.Body), Head: github.String(pr.Head),
		Base: github.String(pr.Base), Draft: github.Bool(pr.Draft)})
	if err != nil {
		return PR{}, apiErr(fmt.Sprintf("open PR %s → %s in %s", pr.Head, pr.Base, repo), resp, err)
	}
	return prOf(p), nil
}

func (g *Client) EditPR(ctx context.Context, repo RepoRef, number int, title, body string) error {
	_, resp, err := g.c.PullRequests.Edit(ctx, repo.Owner, repo.Name, number,
		&github.PullRequest{Title: github.String(title), Body: github.String(body)})
	return apiErr(fmt.Sprintf("edit PR %s#%d", repo, number), resp, err)
}

func (g *Client) ReopenPR(ctx context.Context, repo RepoRef, number int) error {
	_, resp, err := g.c.PullRequests.Edit(ctx, repo.Owner, repo.Name, number, &github.PullRequest{State: github.String("open")})
	return apiErr(fmt.Sprintf("reopen PR %s#%d", repo, number), resp, err)
}

func (g *Client) ListReviews(ctx context.Context, repo RepoRef, number int) ([]Review, error) {
	opts := &github.ListOptions{PerPage: perPage}
	var out []Review
	for {
		list, resp, err := g.c.PullRequests.ListReviews(ctx, repo.Owner, repo.Name, number, opts)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("list reviews of %s#%d", repo, number), resp, err)
		}
		for _, r := range list {
			out = append(out, Review{ID: r.GetID(), Author: r.GetUser().GetLogin(), AuthorType: r.GetUser().GetType(),
				Association: r.GetAuthorAssociation(), State: r.GetState(), CommitID: r.GetCommitID(), Body: r.GetBody(), SubmittedAt: r.GetSubmittedAt().Time})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// ListPRFiles lists the files a pull request changes, with their patches
// (GitHub lists at most 3,000 files).
func (g *Client) ListPRFiles(ctx context.Context, repo RepoRef, number int) ([]PRFile, error) {
	opts := &github.ListOptions{PerPage: perPage}
	var out []PRFile
	for {
		list, resp, err := g.c.PullRequests.ListFiles(ctx, repo.Owner, repo.Name, number, opts)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("list files of %s#%d", repo, number), resp, err)
		}
		for _, f := range list {
			out = append(out, PRFile{Filename: f.GetFilename(), Status: f.GetStatus(), Patch: f.GetPatch()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// CreateReview submits a review with its inline comments in one request:
// GitHub refuses the whole review when one comment is not on the diff.
func (g *Client) CreateReview(ctx context.Context, repo RepoRef, number int, r NewReview) (Review, error) {
	req := &github.PullRequestReviewRequest{Body: github.String(r.Body), Event: github.String(r.Event)}
	if r.CommitID != "" {
		req.CommitID = github.String(r.CommitID)
	}
	for _, c := range r.Comments {
		dc := &github.DraftReviewComment{Path: github.String(c.Path), Line: github.Int(c.Line), Side: github.String("RIGHT"), Body: github.String(c.Body)}
		if c.StartLine > 0 && c.StartLine < c.Line {
			dc.StartLine = github.Int(c.StartLine)
			dc.StartSide = github.String("RIGHT")
		}
		req.Comments = append(req.Comments, dc)
	}
	rv, resp, err := g.c.PullRequests.CreateReview(ctx, repo.Owner, repo.Name, number, req)
	if err != nil {
		return Review{}, apiErr(fmt.Sprintf("review %s#%d", repo, number), resp, err)
	}
	return Review{ID: rv.GetID(), Author: rv.GetUser().GetLogin(), AuthorType: rv.GetUser().GetType(),
		Association: rv.GetAuthorAssociation(), State: rv.GetState(), CommitID: rv.GetCommitID(), Body: rv.GetBody(), SubmittedAt: rv.GetSubmittedAt().Time}, nil
}

func (g *Client) DispatchWorkflow(ctx context.Context, repo RepoRef, workflow, ref string, inputs map[string]string) error {
	in := make(map[string]any, len(inputs))
	for k, v := range inputs {
		in[k] = v
	}
	resp, err := g.c.Actions.CreateWorkflowDispatchEventByFileName(ctx, repo.Owner, repo.Name, workflow,
		github.CreateWorkflowDispatchEventRequest{Ref: ref, Inputs: in})
	return apiErr(fmt.Sprintf("dispatch %s on %s", workflow, repo), resp, err)
}

func runOf(r *github.WorkflowRun) Run {
	return Run{ID: r.GetID(), Title: r.GetDisplayTitle(), Event: r.GetEvent(), Path: r.GetPath(), Status: r.GetStatus(),
		Conclusion: r.GetConclusion(), URL: r.GetHTMLURL(), Actor: r.GetActor().GetLogin()}
}

func (g *Client) GetRun(ctx context.Context, repo RepoRef, id int64) (Run, error) {
	r, resp, err := g.c.Actions.GetWorkflowRunByID(ctx, repo.Owner, repo.Name, id)
	if err != nil {
		return Run{}, apiErr(fmt.Sprintf("get run %d of %s", id, repo), resp, err)
	}
	return runOf(r), nil
}

func (g *Client) ListRuns(ctx context.Context, repo RepoRef, workflow string) ([]Run, error) {
	runs, resp, err := g.c.Actions.ListWorkflowRunsByFileName(ctx, repo.Owner, repo.Name, workflow,
		&github.ListWorkflowRunsOptions{ListOptions: github.ListOptions{PerPage: perPage}})
	if err != nil {
		return nil, apiErr(fmt.Sprintf("list runs of %s in %s", workflow, repo), resp, err)
	}
	var out []Run
	for _, r := range runs.WorkflowRuns {
		out = append(out, runOf(r))
	}
	return out, nil
}

// RunsForHead lists the recent workflow runs of any workflow on commit sha
// (a required check's runs, and those waiting for a person's approval).
func (g *Client) RunsForHead(ctx context.Context, repo RepoRef, sha string) ([]Run, error) {
	runs, resp, err := g.c.Actions.ListRepositoryWorkflowRuns(ctx, repo.Owner, repo.Name,
		&github.ListWorkflowRunsOptions{HeadSHA: sha, ListOptions: github.ListOptions{PerPage: perPage}})
	if err != nil {
		return nil, apiErr(fmt.Sprintf("list runs on %s in %s", sha, repo), resp, err)
	}
	var out []Run
	for _, r := range runs.WorkflowRuns {
		out = append(out, runOf(r))
	}
	return out, nil
}

func (g *Client) CancelRun(ctx context.Context, repo RepoRef, id int64) error {
	resp, err := g.c.Actions.CancelWorkflowRunByID(ctx, repo.Owner, repo.Name, id)
	var ae *github.AcceptedError
	if errors.As(err, &ae) {
		return nil
	}
	return apiErr(fmt.Sprintf("cancel run %d of %s", id, repo), resp, err)
}

// invalidField reports whether a 422 names field as invalid: GitHub's answer
// to a pull request whose head branch does not exist.
func invalidField(er *github.ErrorResponse, field string) bool {
	for _, e := range er.Errors {
		if e.Field == field && e.Code == "invalid" {
			return true
		}
	}
	return false
}
