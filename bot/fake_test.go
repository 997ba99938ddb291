package bot

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// fakeGitHub is an in-memory GitHub for one repository, implementing the
// bot's GitHub interface, for the handler and reconcile tests that need
// GitHub's state and rules but not its HTTP (those keep ghfake: transport,
// API budget, fault sweep, end to end). Every call is recorded, in order,
// so a test can assert what the bot did and did not do (Prow's fakegithub
// is the model). It lives next to its only consumer, in a test file: no
// production code depends on it and it can reach the package's types.
//
// It keeps the rules of GitHub that bazinga depends on, with the errors
// ghapi maps them to:
//   - issues and pull requests share one number sequence, and the issues
//     list includes pull requests ("GitHub's REST API considers every pull
//     request an issue", docs.github.com/en/rest/issues/issues);
//   - labels are replaced as a set (PUT …/labels, or a PATCH with labels);
//   - comment bodies are at most 65,536 characters (422 otherwise);
//   - creating a ref that exists is 422 "Reference already exists"
//     (ErrExists); its name must start with refs/ and have two slashes, and
//     its object must exist;
//   - a pull request needs commits between base and head (422 "No commits
//     between", ErrNoCommits) and one open pull request per head and base
//     (422 "A pull request already exists", ErrExists);
//   - lists come newest first where GitHub's default sort is by creation
//     (pull requests, workflow runs);
//   - a missing issue, comment, pull request, ref, file, run or workflow is
//     ErrNotFound.
type fakeGitHub struct {
	mu    sync.Mutex
	repo  ghapi.RepoRef
	login string // who the client acts as (the bot)
	now   func() time.Time

	defaultBranch string
	refs          map[string]string            // "refs/heads/main" -> commit
	parents       map[string]string            // commit -> parent ("" for a root)
	files         map[string]map[string]string // commit -> path -> content
	roles         map[string]string            // login -> role
	workflows     map[string]bool

	next     int // issue/PR numbers
	issues   map[int]*fakeIssue
	comments []*ghapi.Comment
	commentN int64
	runs     []*fakeRun
	runN     int64
	commitN  int
	reviewN  int64

	calls []fakeCall

	// merge.method pull-request (fake_checks_test.go): branch rules, the
	// checks reported on commits, and a repository refusing drafts.
	rules    map[string]ghapi.BranchRules
	checks   map[string][]ghapi.Check
	noDrafts bool

	// moved: issues transferred to another repository (transfer), which
	// this token cannot read: their address answers 404 once followed.
	moved map[int]ghapi.IssueMove
	// renamed: branches renamed (renameBranch), former name → new.
	renamed map[string]string
}

type fakeIssue struct {
	ghapi.Issue
	pr      *ghapi.PR
	reviews []ghapi.Review
	// reviewComments are the inline comments of the reviews (fake_reviews_test.go).
	reviewComments []fakeReviewComments
}

type fakeRun struct {
	ghapi.Run
	workflow, ref string
	inputs        map[string]string
}

// fakeCall is one recorded call: the method and its arguments, rendered.
type fakeCall struct {
	Op   string
	Args string
	Err  error
}

// writes are the methods that change GitHub.
var fakeWrites = map[string]bool{
	"EditIssue": true, "CloseIssue": true, "ReplaceLabels": true, "CreateComment": true, "EditComment": true,
	"CreateRef": true, "CreatePR": true, "EditPR": true, "DispatchWorkflow": true, "CancelRun": true,
	"CreateReview": true, "ResolveReviewThread": true, "CreateIssue": true,
}

func newFakeGitHub(owner, name, login string, now func() time.Time) *fakeGitHub {
	f := &fakeGitHub{
		repo: ghapi.RepoRef{Owner: owner, Name: name}, login: login, now: now, defaultBranch: "main",
		refs: map[string]string{}, parents: map[string]string{}, files: map[string]map[string]string{},
		roles: map[string]string{}, workflows: map[string]bool{}, issues: map[int]*fakeIssue{},
	}
	f.push("main", map[string]string{"README.md": "# " + name + "\n"})
	return f
}

// --- test set-up (not recorded) ---

// push adds a commit with files changed on top of branch (created from the
// default branch if missing) and returns it.
func (f *fakeGitHub) push(branch string, files map[string]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	parent, ok := f.refs["refs/heads/"+branch]
	if !ok {
		parent = f.refs["refs/heads/"+f.defaultBranch]
	}
	tree := map[string]string{}
	for p, c := range f.files[parent] {
		tree[p] = c
	}
	for p, c := range files {
		tree[p] = c
	}
	f.commitN++
	sha := fmt.Sprintf("%040x", f.commitN)
	f.parents[sha] = parent
	f.files[sha] = tree
	f.refs["refs/heads/"+branch] = sha
	return sha
}

func (f *fakeGitHub) setRole(login, role string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.roles[login] = role
}

func (f *fakeGitHub) addWorkflow(file string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.workflows[file] = true
}

// openIssue opens an issue as author with labels and returns its number.
func (f *fakeGitHub) openIssue(author, title, body string, labels ...string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.issues[f.next] = &fakeIssue{Issue: ghapi.Issue{Number: f.next, Title: title, Body: body, State: "open", Author: author,
		Labels: labels, CreatedAt: f.now(), URL: fmt.Sprintf("https://github.com/%s/issues/%d", f.repo, f.next)}}
	return f.next
}

// --- inspection ---

// recorded returns the calls so far; writesOnly keeps the effects.
func (f *fakeGitHub) recorded(writesOnly bool) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if !writesOnly || fakeWrites[c.Op] {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeGitHub) commentsOn(n int) []ghapi.Comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ghapi.Comment
	for _, c := range f.comments {
		if c.Issue == n {
			out = append(out, *c)
		}
	}
	return out
}

func (f *fakeGitHub) allRuns() []ghapi.Run {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ghapi.Run
	for _, r := range f.runs {
		out = append(out, r.Run)
	}
	return out
}

// --- the GitHub interface ---

// record notes a call; callers hold f.mu and pass their result's error.
func (f *fakeGitHub) record(op string, err error, args ...any) error {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = fmt.Sprint(a)
	}
	f.calls = append(f.calls, fakeCall{Op: op, Args: strings.Join(parts, " "), Err: err})
	return err
}

func (f *fakeGitHub) checkRepo(repo ghapi.RepoRef) error {
	if !strings.EqualFold(repo.String(), f.repo.String()) {
		return fmt.Errorf("repository %s: %w", repo, ghapi.ErrNotFound)
	}
	return nil
}

func (f *fakeGitHub) DefaultBranch(_ context.Context, repo ghapi.RepoRef) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.defaultBranch, f.record("DefaultBranch", f.checkRepo(repo))
}

func (f *fakeGitHub) RepoByID(_ context.Context, id int64) (ghapi.RepoRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.repo
	r.ID = id
	return r, f.record("RepoByID", nil, id)
}

func (f *fakeGitHub) issue(repo ghapi.RepoRef, n int) (*fakeIssue, error) {
	if err := f.checkRepo(repo); err != nil {
		return nil, err
	}
	is := f.issues[n]
	if is == nil {
		return nil, fmt.Errorf("issue %s#%d: %w", repo, n, ghapi.ErrNotFound)
	}
	return is, nil
}

// transfer moves issue n to another repository, as GitHub's transfer
// does; the fake's token, like a GITHUB_TOKEN, cannot read there.
func (f *fakeGitHub) transfer(n int, to ghapi.IssueMove) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.issues, n)
	if f.moved == nil {
		f.moved = map[int]ghapi.IssueMove{}
	}
	f.moved[n] = to
}

func (f *fakeGitHub) IssueMoved(_ context.Context, repo ghapi.RepoRef, n int) (ghapi.IssueMove, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if to, ok := f.moved[n]; ok {
		return to, true, f.record("IssueMoved", nil, n)
	}
	_, err := f.issue(repo, n)
	return ghapi.IssueMove{}, false, f.record("IssueMoved", err, n)
}

func (f *fakeGitHub) GetIssue(_ context.Context, repo ghapi.RepoRef, n int) (ghapi.Issue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, err := f.issue(repo, n)
	if err != nil {
		return ghapi.Issue{}, f.record("GetIssue", err, n)
	}
	out := is.Issue
	out.Labels = slices.Clone(out.Labels)
	return out, f.record("GetIssue", nil, n)
}

func (f *fakeGitHub) ListIssuesByLabel(_ context.Context, repo ghapi.RepoRef, label string) ([]ghapi.Issue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkRepo(repo); err != nil {
		return nil, f.record("ListIssuesByLabel", err, label)
	}
	var out []ghapi.Issue
	for _, n := range f.numbers() {
		is := f.issues[n]
		if is.State == "open" && slices.Contains(is.Labels, label) {
			c := is.Issue
			c.Labels = slices.Clone(c.Labels)
			out = append(out, c)
		}
	}
	return out, f.record("ListIssuesByLabel", nil, label)
}

// numbers are the issue and PR numbers, newest first (the default sort).
func (f *fakeGitHub) numbers() []int {
	var ns []int
	for n := range f.issues {
		ns = append(ns, n)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ns)))
	return ns
}

func (f *fakeGitHub) EditIssue(_ context.Context, repo ghapi.RepoRef, n int, e ghapi.IssueEdit) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	args := []any{n, fmtEdit(e)}
	is, err := f.issue(repo, n)
	if err != nil {
		return f.record("EditIssue", err, args...)
	}
	if e.State != nil && *e.State != "open" && *e.State != "closed" {
		return f.record("EditIssue", fmt.Errorf("edit %s#%d: 422 state %q is not open or closed", repo, n, *e.State), args...)
	}
	if e.Title != nil {
		is.Title = *e.Title
	}
	if e.Body != nil {
		is.Body = *e.Body
	}
	if e.Labels != nil {
		is.Labels = labelSet(*e.Labels)
	}
	if e.State != nil {
		f.setState(is, *e.State)
	}
	return f.record("EditIssue", nil, args...)
}

func fmtEdit(e ghapi.IssueEdit) string {
	var parts []string
	if e.Title != nil {
		parts = append(parts, "title="+*e.Title)
	}
	if e.Body != nil {
		parts = append(parts, fmt.Sprintf("body=%d chars", len(*e.Body)))
	}
	if e.Labels != nil {
		parts = append(parts, "labels="+strings.Join(*e.Labels, ","))
	}
	if e.State != nil {
		parts = append(parts, "state="+*e.State)
	}
	return strings.Join(parts, " ")
}

// labelSet is a label list as GitHub stores it: each name once, in the
// order given.
func labelSet(labels []string) []string {
	out := []string{}
	for _, l := range labels {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

func (f *fakeGitHub) setState(is *fakeIssue, state string) {
	is.State = state
	if is.pr != nil {
		is.pr.State = state
		if state == "closed" {
			is.pr.ClosedAt = f.now()
		}
	}
}

func (f *fakeGitHub) CloseIssue(_ context.Context, repo ghapi.RepoRef, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, err := f.issue(repo, n)
	if err == nil {
		f.setState(is, "closed")
	}
	return f.record("CloseIssue", err, n)
}

func (f *fakeGitHub) ReplaceLabels(_ context.Context, repo ghapi.RepoRef, n int, labels []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, err := f.issue(repo, n)
	if err == nil {
		is.Labels = labelSet(labels)
	}
	return f.record("ReplaceLabels", err, n, strings.Join(labels, ","))
}

func (f *fakeGitHub) ListComments(_ context.Context, repo ghapi.RepoRef, n int) ([]ghapi.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.issue(repo, n); err != nil {
		return nil, f.record("ListComments", err, n)
	}
	var out []ghapi.Comment
	for _, c := range f.comments {
		if c.Issue == n {
			out = append(out, *c)
		}
	}
	return out, f.record("ListComments", nil, n)
}

func (f *fakeGitHub) comment(repo ghapi.RepoRef, id int64) (*ghapi.Comment, error) {
	if err := f.checkRepo(repo); err != nil {
		return nil, err
	}
	for _, c := range f.comments {
		if c.ID == id {
			return c, nil
		}
	}
	return nil, fmt.Errorf("comment %d of %s: %w", id, repo, ghapi.ErrNotFound)
}

func (f *fakeGitHub) GetComment(_ context.Context, repo ghapi.RepoRef, id int64) (ghapi.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.comment(repo, id)
	if err != nil {
		return ghapi.Comment{}, f.record("GetComment", err, id)
	}
	return *c, f.record("GetComment", nil, id)
}

// maxBody is GitHub's limit on issue, comment and PR bodies.
const maxBody = 65536

func (f *fakeGitHub) CreateComment(_ context.Context, repo ghapi.RepoRef, n int, body string) (ghapi.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.issue(repo, n); err != nil {
		return ghapi.Comment{}, f.record("CreateComment", err, n, body)
	}
	if len([]rune(body)) > maxBody {
		return ghapi.Comment{}, f.record("CreateComment", fmt.Errorf("comment on %s#%d: 422 body is too long (maximum is %d characters)", repo, n, maxBody), n, body)
	}
	f.commentN++
	now := f.now()
	c := &ghapi.Comment{ID: f.commentN, Issue: n, Author: f.login, AuthorType: "Bot", Association: "NONE", Body: body,
		CreatedAt: now, UpdatedAt: now, URL: fmt.Sprintf("https://github.com/%s/issues/%d#issuecomment-%d", f.repo, n, f.commentN)}
	f.comments = append(f.comments, c)
	return *c, f.record("CreateComment", nil, n, body)
}

// addComment is a comment by someone else (a human, a job), not recorded.
func (f *fakeGitHub) addComment(author string, n int, body string) ghapi.Comment {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commentN++
	now := f.now()
	c := &ghapi.Comment{ID: f.commentN, Issue: n, Author: author, AuthorType: "User", Association: "COLLABORATOR", Body: body, CreatedAt: now, UpdatedAt: now}
	f.comments = append(f.comments, c)
	return *c
}

func (f *fakeGitHub) EditComment(_ context.Context, repo ghapi.RepoRef, id int64, body string) (ghapi.Comment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.comment(repo, id)
	if err == nil && len([]rune(body)) > maxBody {
		err = fmt.Errorf("edit comment %d of %s: 422 body is too long (maximum is %d characters)", id, repo, maxBody)
	}
	if err != nil {
		return ghapi.Comment{}, f.record("EditComment", err, id, body)
	}
	c.Body, c.UpdatedAt = body, f.now()
	return *c, f.record("EditComment", nil, id, body)
}

func (f *fakeGitHub) GetPermission(_ context.Context, repo ghapi.RepoRef, user string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkRepo(repo); err != nil {
		return "", f.record("GetPermission", err, user)
	}
	role, ok := f.roles[user]
	if !ok {
		return "", f.record("GetPermission", fmt.Errorf("permission of %s on %s: %w", user, repo, ghapi.ErrNotFound), user)
	}
	return role, f.record("GetPermission", nil, user)
}

func (f *fakeGitHub) GetFile(_ context.Context, repo ghapi.RepoRef, path, ref string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkRepo(repo); err != nil {
		return nil, f.record("GetFile", err, path, ref)
	}
	if ref == "" {
		ref = f.defaultBranch
	}
	sha, ok := f.refs["refs/heads/"+ref]
	if !ok {
		if _, isCommit := f.files[ref]; isCommit {
			sha, ok = ref, true
		}
	}
	content, found := f.files[sha][path]
	if !ok || !found {
		return nil, f.record("GetFile", fmt.Errorf("read %s of %s at %s: %w", path, repo, ref, ghapi.ErrNotFound), path, ref)
	}
	return []byte(content), f.record("GetFile", nil, path, ref)
}

// renameBranch renames a branch as GitHub does: its former name answers
// "Get a branch" with a redirect to the new one.
func (f *fakeGitHub) renameBranch(from, to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refs["refs/heads/"+to] = f.refs["refs/heads/"+from]
	delete(f.refs, "refs/heads/"+from)
	if f.defaultBranch == from {
		f.defaultBranch = to
	}
	if f.renamed == nil {
		f.renamed = map[string]string{}
	}
	f.renamed[from] = to
}

func (f *fakeGitHub) BranchMoved(_ context.Context, repo ghapi.RepoRef, branch string) (string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkRepo(repo); err != nil {
		return "", false, f.record("BranchMoved", err, branch)
	}
	if _, ok := f.refs["refs/heads/"+branch]; ok {
		return "", false, f.record("BranchMoved", nil, branch)
	}
	if to, ok := f.renamed[branch]; ok {
		return to, true, f.record("BranchMoved", nil, branch)
	}
	return "", false, f.record("BranchMoved", fmt.Errorf("branch %s: %w", branch, ghapi.ErrNotFound), branch)
}

func (f *fakeGitHub) GetRef(_ context.Context, repo ghapi.RepoRef, ref string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkRepo(repo); err != nil {
		return "", f.record("GetRef", err, ref)
	}
	sha, ok := f.refs["refs/"+strings.TrimPrefix(ref, "refs/")]
	if !ok {
		return "", f.record("GetRef", fmt.Errorf("get ref %s of %s: %w", ref, repo, ghapi.ErrNotFound), ref)
	}
	return sha, f.record("GetRef", nil, ref)
}

func (f *fakeGitHub) CreateRef(_ context.Context, repo ghapi.RepoRef, ref, sha string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.checkRepo(repo)
	switch {
	case err != nil:
	case !strings.HasPrefix(ref, "refs/") || strings.Count(ref, "/") < 2:
		err = fmt.Errorf("create ref %s: 422 Reference name must start with 'refs/' and have at least two slashes", ref)
	case f.files[sha] == nil:
		err = fmt.Errorf("create ref %s: 422 Object does not exist", ref)
	case f.refs[ref] != "":
		err = fmt.Errorf("create ref %s of %s: %w: Reference already exists", ref, repo, ghapi.ErrExists)
	default:
		f.refs[ref] = sha
	}
	return f.record("CreateRef", err, ref, sha)
}

// isAncestor reports whether commit a is reachable from b.
func (f *fakeGitHub) isAncestor(a, b string) bool {
	for c := b; c != ""; c = f.parents[c] {
		if c == a {
			return true
		}
	}
	return false
}

func (f *fakeGitHub) pr(repo ghapi.RepoRef, n int) (*fakeIssue, error) {
	is, err := f.issue(repo, n)
	if err != nil || is.pr == nil {
		return nil, fmt.Errorf("PR %s#%d: %w", repo, n, ghapi.ErrNotFound)
	}
	return is, nil
}

func (f *fakeGitHub) GetPR(_ context.Context, repo ghapi.RepoRef, n int) (ghapi.PR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, err := f.pr(repo, n)
	if err != nil {
		return ghapi.PR{}, f.record("GetPR", err, n)
	}
	out := *is.pr
	if out.State == "open" {
		out.HeadSHA = f.refs["refs/heads/"+out.Head]
	}
	return out, f.record("GetPR", nil, n)
}

func (f *fakeGitHub) FindPR(_ context.Context, repo ghapi.RepoRef, head string) (ghapi.PR, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkRepo(repo); err != nil {
		return ghapi.PR{}, false, f.record("FindPR", err, head)
	}
	for _, n := range f.numbers() {
		if p := f.issues[n].pr; p != nil && p.Head == head {
			return *p, true, f.record("FindPR", nil, head)
		}
	}
	return ghapi.PR{}, false, f.record("FindPR", nil, head)
}

func (f *fakeGitHub) ListPRs(_ context.Context, repo ghapi.RepoRef) ([]ghapi.PR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkRepo(repo); err != nil {
		return nil, f.record("ListPRs", err)
	}
	var out []ghapi.PR
	for _, n := range f.numbers() {
		if p := f.issues[n].pr; p != nil {
			out = append(out, *p)
		}
	}
	return out, f.record("ListPRs", nil)
}

func (f *fakeGitHub) CreatePR(_ context.Context, repo ghapi.RepoRef, p ghapi.NewPR) (ghapi.PR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	args := []any{p.Head, "→", p.Base, p.Title}
	if err := f.checkRepo(repo); err != nil {
		return ghapi.PR{}, f.record("CreatePR", err, args...)
	}
	head, okH := f.refs["refs/heads/"+p.Head]
	base, okB := f.refs["refs/heads/"+p.Base]
	switch {
	case !okH || !okB || strings.TrimSpace(p.Title) == "":
		return ghapi.PR{}, f.record("CreatePR", fmt.Errorf("open PR %s → %s: 422 Validation Failed", p.Head, p.Base), args...)
	case len([]rune(p.Body)) > maxBody:
		return ghapi.PR{}, f.record("CreatePR", fmt.Errorf("open PR %s → %s: 422 body is too long", p.Head, p.Base), args...)
	case f.isAncestor(head, base):
		return ghapi.PR{}, f.record("CreatePR", fmt.Errorf("open PR %s → %s: %w", p.Head, p.Base, ghapi.ErrNoCommits), args...)
	case p.Draft && f.noDrafts:
		return ghapi.PR{}, f.record("CreatePR", fmt.Errorf("open PR %s → %s: %w: 422 Validation Failed", p.Head, p.Base, ghapi.ErrDraftsUnsupported), args...)
	}
	for _, is := range f.issues {
		if is.pr != nil && is.pr.State == "open" && is.pr.Head == p.Head && is.pr.Base == p.Base {
			return ghapi.PR{}, f.record("CreatePR", fmt.Errorf("open PR %s → %s: %w: A pull request already exists", p.Head, p.Base, ghapi.ErrExists), args...)
		}
	}
	f.next++
	n := f.next
	url := fmt.Sprintf("https://github.com/%s/pull/%d", f.repo, n)
	// Every PR bazinga opens is from a branch of the repository itself.
	pr := &ghapi.PR{Number: n, Title: p.Title, Body: p.Body, State: "open", Head: p.Head, HeadRepo: f.repo.String(), Base: p.Base, Draft: p.Draft, URL: url}
	f.issues[n] = &fakeIssue{Issue: ghapi.Issue{Number: n, Title: p.Title, Body: p.Body, State: "open", Author: f.login, IsPR: true,
		Labels: []string{}, CreatedAt: f.now(), URL: url}, pr: pr}
	return *pr, f.record("CreatePR", nil, args...)
}

func (f *fakeGitHub) EditPR(_ context.Context, repo ghapi.RepoRef, n int, title, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, err := f.pr(repo, n)
	if err == nil && len([]rune(body)) > maxBody {
		err = fmt.Errorf("edit PR %s#%d: 422 body is too long", repo, n)
	}
	if err == nil {
		is.Title, is.Body, is.pr.Title, is.pr.Body = title, body, title, body
	}
	return f.record("EditPR", err, n, title)
}

func (f *fakeGitHub) ReopenPR(_ context.Context, repo ghapi.RepoRef, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, err := f.pr(repo, n)
	switch {
	case err != nil:
	case is.pr.Merged:
		err = fmt.Errorf("reopen PR %s#%d: 422 Cannot reopen a merged pull request", repo, n)
	case f.refs["refs/heads/"+is.pr.Head] == "":
		err = fmt.Errorf("reopen PR %s#%d: 422 state cannot be changed. The %s branch has been deleted.", repo, n, is.pr.Head)
	default:
		is.State, is.pr.State = "open", "open"
	}
	return f.record("ReopenPR", err, n)
}

func (f *fakeGitHub) ListReviews(_ context.Context, repo ghapi.RepoRef, n int) ([]ghapi.Review, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, err := f.pr(repo, n)
	if err != nil {
		return nil, f.record("ListReviews", err, n)
	}
	return slices.Clone(is.reviews), f.record("ListReviews", nil, n)
}

func (f *fakeGitHub) DispatchWorkflow(_ context.Context, repo ghapi.RepoRef, workflow, ref string, inputs map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(inputs))
	for k := range inputs {
		keys = append(keys, k+"="+inputs[k])
	}
	sort.Strings(keys)
	args := []any{workflow, ref, strings.Join(keys, ",")}
	err := f.checkRepo(repo)
	switch {
	case err != nil:
	case !f.workflows[workflow]:
		err = fmt.Errorf("dispatch %s on %s: %w", workflow, repo, ghapi.ErrNotFound)
	case f.refs["refs/heads/"+ref] == "" && f.refs["refs/tags/"+ref] == "":
		err = fmt.Errorf("dispatch %s on %s: 422 No ref found for: %s", workflow, repo, ref)
	default:
		f.runN++
		title := workflow
		if step, ok := inputs["step"]; ok {
			title = "bazinga " + step // bazinga-agent.yml's run-name
		}
		f.runs = append(f.runs, &fakeRun{Run: ghapi.Run{ID: f.runN, Title: title, Event: "workflow_dispatch", Path: ".github/workflows/" + workflow, Status: "queued",
			URL: fmt.Sprintf("https://github.com/%s/actions/runs/%d", f.repo, f.runN), Actor: f.login}, workflow: workflow, ref: ref, inputs: inputs})
	}
	return f.record("DispatchWorkflow", err, args...)
}

func (f *fakeGitHub) run(repo ghapi.RepoRef, id int64) (*fakeRun, error) {
	if err := f.checkRepo(repo); err != nil {
		return nil, err
	}
	for _, r := range f.runs {
		if r.ID == id {
			return r, nil
		}
	}
	return nil, fmt.Errorf("run %d of %s: %w", id, repo, ghapi.ErrNotFound)
}

func (f *fakeGitHub) GetRun(_ context.Context, repo ghapi.RepoRef, id int64) (ghapi.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.run(repo, id)
	if err != nil {
		return ghapi.Run{}, f.record("GetRun", err, id)
	}
	return r.Run, f.record("GetRun", nil, id)
}

func (f *fakeGitHub) ListRuns(_ context.Context, repo ghapi.RepoRef, workflow string) ([]ghapi.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkRepo(repo); err != nil {
		return nil, f.record("ListRuns", err, workflow)
	}
	if !f.workflows[workflow] {
		return nil, f.record("ListRuns", fmt.Errorf("list runs of %s in %s: %w", workflow, repo, ghapi.ErrNotFound), workflow)
	}
	var out []ghapi.Run
	for i := len(f.runs) - 1; i >= 0; i-- {
		if f.runs[i].workflow == workflow {
			out = append(out, f.runs[i].Run)
		}
	}
	return out, f.record("ListRuns", nil, workflow)
}

func (f *fakeGitHub) CancelRun(_ context.Context, repo ghapi.RepoRef, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.run(repo, id)
	switch {
	case err != nil:
	case r.Status == "completed":
		// GitHub: 409 "Cannot cancel a workflow run that is completed."
		err = fmt.Errorf("cancel run %d of %s: 409 Cannot cancel a workflow run that is completed", id, repo)
	default:
		r.Status, r.Conclusion = "completed", "cancelled"
	}
	return f.record("CancelRun", err, id)
}

var _ GitHub = (*fakeGitHub)(nil)
