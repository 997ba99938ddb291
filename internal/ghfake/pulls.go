package ghfake

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

type pullRequest struct {
	Title *string `json:"title"`
	Head  *string `json:"head"`
	Base  *string `json:"base"`
	Body  *string `json:"body"`
	Draft *bool   `json:"draft"`
	State *string `json:"state"`
}

func (f *Fake) createPull(c *rc) {
	var req pullRequest
	if !c.decode(&req) {
		return
	}
	r := c.repo
	switch {
	case req.Head == nil || *req.Head == "":
		c.invalid(fieldError{Resource: "PullRequest", Field: "head", Code: "missing_field"})
		return
	case req.Base == nil || *req.Base == "":
		c.invalid(fieldError{Resource: "PullRequest", Field: "base", Code: "missing_field"})
		return
	case req.Title == nil || strings.TrimSpace(*req.Title) == "":
		c.invalid(fieldError{Resource: "PullRequest", Field: "title", Code: "missing_field"})
		return
	}
	body := ""
	if req.Body != nil {
		body = *req.Body
	}
	if tooLong(body) {
		c.invalid(fieldError{Resource: "PullRequest", Field: "body", Code: "custom", Message: "body is too long (maximum is 65536 characters)"})
		return
	}
	head := *req.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, r.owner) {
			// Cross-repository pull requests (forks) are not modelled.
			c.invalid(fieldError{Resource: "PullRequest", Field: "head", Code: "invalid"})
			return
		}
		head = branch
	}
	base := *req.Base
	refs, err := r.heads()
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	headSHA, okH := refs["refs/heads/"+head]
	baseSHA, okB := refs["refs/heads/"+base]
	if !okH {
		c.invalid(fieldError{Resource: "PullRequest", Field: "head", Code: "invalid"})
		return
	}
	if !okB {
		c.invalid(fieldError{Resource: "PullRequest", Field: "base", Code: "invalid"})
		return
	}
	for _, is := range r.issues {
		if is.pr != nil && is.state == "open" && is.pr.head == head && is.pr.base == base {
			c.invalid(fieldError{Resource: "PullRequest", Code: "custom", Message: "A pull request already exists for " + r.owner + ":" + head + "."})
			return
		}
	}
	if r.isAncestor(headSHA, baseSHA) {
		c.invalid(fieldError{Resource: "PullRequest", Code: "custom", Message: "No commits between " + base + " and " + head})
		return
	}
	if req.Draft != nil && *req.Draft && !r.settings.draftsAllowed() {
		c.refuseDraft()
		return
	}
	is := f.newIssue(r, c.login, *req.Title, body)
	is.pr = &pull{id: f.id("issue"), head: head, base: base, headSHA: headSHA, draft: req.Draft != nil && *req.Draft}
	f.emitPR(r, is, "opened", c.login, nil, nil, "", "")
	f.runCI(r, headSHA, head, "pull_request", c.login)
	c.hdr.Set("Location", f.api(fmt.Sprintf("/repos/%s/pulls/%d", r.FullName(), is.number)))
	out := r.prJSON(is, refs, false)
	r.fullPR(out, is, refs)
	c.json(http.StatusCreated, out)
}

func (c *rc) pullParam() *issue {
	is := c.issueParam()
	if is != nil && is.pr == nil {
		c.notFound()
		return nil
	}
	return is
}

func (f *Fake) getPull(c *rc) {
	is := c.pullParam()
	if is == nil {
		return
	}
	refs, err := c.repo.heads()
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	out := c.repo.prJSON(is, refs, false)
	c.repo.fillMergeability(out, is, refs)
	c.repo.fullPR(out, is, refs)
	c.json(http.StatusOK, out)
}

func (f *Fake) listPulls(c *rc) {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head := q.Get("head")
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, c.repo.owner) {
			c.json(http.StatusOK, []*github.PullRequest{})
			return
		}
		head = branch
	}
	var list []*issue
	for _, is := range c.repo.issues {
		if is.pr == nil || (state != "all" && is.state != state) {
			continue
		}
		if head != "" && is.pr.head != head {
			continue
		}
		if b := q.Get("base"); b != "" && is.pr.base != b {
			continue
		}
		list = append(list, is)
	}
	// GitHub's default direction: desc for created (the default sort),
	// asc otherwise.
	dir := q.Get("direction")
	if dir == "" && q.Get("sort") != "" && q.Get("sort") != "created" {
		dir = "asc"
	}
	sortIssues(list, q.Get("sort"), dir)
	start, end := c.page(len(list))
	refs, err := c.repo.heads()
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	out := []*github.PullRequest{}
	for _, is := range list[start:end] {
		out = append(out, c.repo.prJSON(is, refs, false))
	}
	c.json(http.StatusOK, out)
}

func (f *Fake) editPull(c *rc) {
	is := c.pullParam()
	if is == nil {
		return
	}
	var req pullRequest
	if !c.decode(&req) {
		return
	}
	if !c.canTriage() && !strings.EqualFold(c.login, is.user) {
		c.fail(http.StatusForbidden, "Must have write access to repository")
		return
	}
	if req.Title != nil && strings.TrimSpace(*req.Title) == "" {
		c.invalid(fieldError{Resource: "PullRequest", Field: "title", Code: "missing_field"})
		return
	}
	if req.Body != nil && tooLong(*req.Body) {
		c.invalid(fieldError{Resource: "PullRequest", Field: "body", Code: "custom", Message: "body is too long (maximum is 65536 characters)"})
		return
	}
	if req.State != nil && *req.State != "open" && *req.State != "closed" {
		c.invalid(fieldError{Resource: "PullRequest", Field: "state", Code: "invalid"})
		return
	}
	if req.Base != nil && *req.Base != is.pr.base {
		if is.pr.merged || is.state != "open" {
			c.invalid(fieldError{Resource: "PullRequest", Field: "base", Code: "invalid", Message: "Cannot change the base branch of a closed pull request."})
			return
		}
		if _, ok := c.repo.ref("refs/heads/" + *req.Base); !ok {
			c.invalid(fieldError{Resource: "PullRequest", Field: "base", Code: "invalid"})
			return
		}
	}
	if req.State != nil && *req.State == "open" && is.state == "closed" {
		if is.pr.merged {
			c.invalid(fieldError{Resource: "PullRequest", Code: "custom", Message: "Cannot reopen a merged pull request"})
			return
		}
		if _, ok := c.repo.ref("refs/heads/" + is.pr.head); !ok {
			c.invalid(fieldError{Resource: "PullRequest", Field: "state", Code: "invalid", Message: "state cannot be changed. The " + is.pr.head + " branch has been deleted."})
			return
		}
	}
	f.applyIssueEdit(c.repo, is, c.login, req.Title, req.Body)
	if req.Base != nil && *req.Base != is.pr.base {
		old := is.pr.base
		is.pr.base = *req.Base
		is.updated = f.now()
		f.emitPR(c.repo, is, "edited", c.login, nil, &github.EditChange{Base: &github.EditBase{Ref: &github.EditRef{From: github.String(old)}}}, "", "")
	}
	if req.State != nil {
		f.setIssueState(c.repo, is, *req.State, "", c.login)
	}
	refs, _ := c.repo.heads()
	out := c.repo.prJSON(is, refs, false)
	c.repo.fullPR(out, is, refs)
	c.json(http.StatusOK, out)
}

type mergeRequest struct {
	CommitTitle   *string `json:"commit_title"`
	CommitMessage *string `json:"commit_message"`
	SHA           *string `json:"sha"`
	MergeMethod   *string `json:"merge_method"`
}

func (f *Fake) mergePull(c *rc) {
	is := c.pullParam()
	if is == nil {
		return
	}
	var req mergeRequest
	if !c.decode(&req) {
		return
	}
	method := "merge"
	if req.MergeMethod != nil && *req.MergeMethod != "" {
		method = *req.MergeMethod
	}
	if method != "merge" && method != "squash" && method != "rebase" {
		c.invalid(fieldError{Resource: "PullRequest", Field: "merge_method", Code: "invalid"})
		return
	}
	opts := mergeOpts{method: method, kind: c.kind}
	if req.CommitTitle != nil {
		opts.title = *req.CommitTitle
	}
	if req.CommitMessage != nil {
		opts.message = *req.CommitMessage
	}
	if req.SHA != nil {
		opts.sha = *req.SHA
	}
	sha, status, msg := f.merge(c.repo, is, c.login, opts)
	if status != http.StatusOK {
		c.fail(status, msg)
		return
	}
	c.json(http.StatusOK, &github.PullRequestMergeResult{SHA: github.String(sha), Merged: github.Bool(true), Message: github.String("Pull Request successfully merged")})
}

type mergeOpts struct {
	method, title, message, sha string
	kind                        AccountType // of the merging user ("" for a human in the UI)
}

// merge merges a pull request in the bare repository and returns the new
// base commit, or a status and message as GitHub answers them. Caller holds
// f.mu.
func (f *Fake) merge(r *Repo, is *issue, user string, o mergeOpts) (string, int, string) {
	p := is.pr
	if p.merged || is.state != "open" {
		return "", http.StatusMethodNotAllowed, "Pull Request is not mergeable"
	}
	if msg := r.settings.methodRefusal(o.method); msg != "" {
		return "", http.StatusMethodNotAllowed, msg
	}
	if p.draft {
		return "", http.StatusMethodNotAllowed, "Pull Request is still a draft"
	}
	if o.sha != "" && o.sha != p.headSHA {
		return "", http.StatusConflict, "Head branch was modified. Review and try the merge again."
	}
	baseRef := "refs/heads/" + p.base
	baseSHA, ok := r.ref(baseRef)
	if !ok {
		return "", http.StatusMethodNotAllowed, "Pull Request is not mergeable"
	}
	kind := o.kind
	if kind == "" {
		kind = f.account(user, "").typ
	}
	if b := r.mergeBlockers(is, baseSHA, user, kind, o.method); b.any() {
		return "", http.StatusMethodNotAllowed, b.message()
	}
	var newSHA string
	switch o.method {
	case "merge", "squash":
		tree, conflict, err := r.mergeTree(baseSHA, p.headSHA)
		if err != nil {
			return "", http.StatusInternalServerError, err.Error()
		}
		if conflict {
			return "", http.StatusMethodNotAllowed, "Pull Request is not mergeable"
		}
		msg := o.title
		parents := []string{baseSHA, p.headSHA}
		if o.method == "merge" {
			if msg == "" {
				msg = fmt.Sprintf("Merge pull request #%d from %s/%s", is.number, r.owner, p.head)
			}
			body := o.message
			if body == "" {
				body = is.title
			}
			msg += "\n\n" + body
		} else {
			if msg == "" {
				msg = fmt.Sprintf("%s (#%d)", is.title, is.number)
			}
			if o.message != "" {
				msg += "\n\n" + o.message
			}
			parents = parents[:1]
		}
		newSHA, err = r.commitTreeAs(tree, parents, msg, user, "GitHub")
		if err != nil {
			return "", http.StatusInternalServerError, err.Error()
		}
	case "rebase":
		var conflict bool
		var err error
		newSHA, conflict, err = r.rebase(baseSHA, p.headSHA)
		if err != nil {
			return "", http.StatusInternalServerError, err.Error()
		}
		if conflict {
			return "", http.StatusMethodNotAllowed, "This branch can't be rebased"
		}
	}
	if err := r.updateRef(baseRef, newSHA, baseSHA); err != nil {
		return "", http.StatusConflict, "Base branch was modified. Review and try the merge again."
	}
	now := f.now()
	p.merged, p.mergedAt, p.mergedBy, p.mergeSHA = true, now, user, newSHA
	is.state, is.closed, is.closedBy, is.updated = "closed", now, user, now
	f.emitPR(r, is, "closed", user, nil, nil, "", "")
	f.closeLinkedIssues(r, is, user)
	f.refChanged(r, baseRef, baseSHA, newSHA, user)
	return newSHA, http.StatusOK, ""
}

var closingRE = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+#(\d+)\b`)

// closeLinkedIssues closes the issues a merged pull request's body names
// with a closing keyword ("Closes #12"), as GitHub does for merges into the
// default branch. Caller holds f.mu.
func (f *Fake) closeLinkedIssues(r *Repo, pr *issue, user string) {
	if pr.pr.base != r.defaultBranch {
		return
	}
	for _, m := range closingRE.FindAllStringSubmatch(pr.title+"\n"+pr.body, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		if is := r.issue(n); is != nil && is.pr == nil && is.state == "open" {
			f.setIssueState(r, is, "closed", "completed", user)
		}
	}
}

// rebase replays base..head onto base in a temporary worktree, committed by
// GitHub as a rebase merge is, and returns the new tip.
func (r *Repo) rebase(base, head string) (string, bool, error) {
	tmp, err := os.MkdirTemp(r.f.dir, "rebase-")
	if err != nil {
		return "", false, fmt.Errorf("ghfake: %w", err)
	}
	wt := filepath.Join(tmp, "wt")
	defer func() {
		_, _ = r.git("worktree", "remove", "--force", wt)
		_ = os.RemoveAll(tmp)
		_, _ = r.git("worktree", "prune")
	}()
	if _, err := r.git("worktree", "add", "--detach", "--quiet", wt, base); err != nil {
		return "", false, err
	}
	date := r.f.now().UTC().Format(time.RFC3339)
	env := []string{"GIT_COMMITTER_NAME=GitHub", "GIT_COMMITTER_EMAIL=noreply@github.com", "GIT_COMMITTER_DATE=" + date}
	if _, err := r.f.git(wt, nil, env, "cherry-pick", "--allow-empty", "--keep-redundant-commits", base+".."+head); err != nil {
		_, _ = r.f.git(wt, nil, nil, "cherry-pick", "--abort")
		return "", true, nil
	}
	sha, err := r.f.git(wt, nil, nil, "rev-parse", "HEAD")
	return sha, false, err
}

// --- reviews ---

func (f *Fake) listReviews(c *rc) {
	is := c.pullParam()
	if is == nil {
		return
	}
	start, end := c.page(len(is.pr.reviews))
	out := []*github.PullRequestReview{}
	for _, rv := range is.pr.reviews[start:end] {
		out = append(out, c.repo.reviewJSON(is, rv))
	}
	c.json(http.StatusOK, out)
}

// reviewStates maps review events (and states) to the state GitHub stores.
var reviewStates = map[string]string{
	"APPROVE": "APPROVED", "APPROVED": "APPROVED",
	"REQUEST_CHANGES": "CHANGES_REQUESTED", "CHANGES_REQUESTED": "CHANGES_REQUESTED",
	"COMMENT": "COMMENTED", "COMMENTED": "COMMENTED",
	"": "PENDING",
}

// review records a review and, unless pending, emits
// pull_request_review.submitted. Caller holds f.mu.
// A COMMENT review of inline comments alone needs no body (inline).
func (f *Fake) review(r *Repo, is *issue, user, event, body string, inline bool) (*review, int, string) {
	state, ok := reviewStates[strings.ToUpper(event)]
	switch {
	case !ok:
		return nil, http.StatusUnprocessableEntity, "Unknown review event " + event
	case is.state != "open":
		return nil, http.StatusUnprocessableEntity, "Can not review a closed pull request"
	case state == "APPROVED" && strings.EqualFold(user, is.user):
		return nil, http.StatusUnprocessableEntity, "Can not approve your own pull request"
	case state == "CHANGES_REQUESTED" && strings.EqualFold(user, is.user):
		return nil, http.StatusUnprocessableEntity, "Can not request changes on your own pull request"
	case (state == "CHANGES_REQUESTED" || state == "COMMENTED" && !inline) && body == "":
		return nil, http.StatusUnprocessableEntity, "Review body is required for " + strings.ToUpper(event)
	}
	rv := &review{id: f.id("review"), user: user, body: body, state: state, commit: is.pr.headSHA}
	if state != "PENDING" {
		rv.submitted = f.now()
	}
	is.pr.reviews = append(is.pr.reviews, rv)
	if state != "PENDING" {
		refs, _ := r.heads()
		f.emit(r, "pull_request_review", "submitted", &github.PullRequestReviewEvent{
			Action: github.String("submitted"), Review: r.reviewJSON(is, rv), PullRequest: r.prJSON(is, refs, false),
			Repo: r.json(), Sender: f.userJSON(user), Installation: f.installationJSON(),
		})
	}
	return rv, http.StatusOK, ""
}

// --- ref changes (pushes, ref API, merges) ---

// refChanged applies the effects GitHub gives a ref update: a push event;
// for a pull request's head, a new head sha and "synchronize" (or, if the
// branch was deleted, the pull request closed); for a base branch, pull
// requests whose head is now contained in it are marked merged by the
// pusher. old or sha "" mean absent. Caller holds f.mu.
func (f *Fake) refChanged(r *Repo, ref, old, sha, sender string) {
	if old == sha {
		return
	}
	if strings.EqualFold(sender, ActionsLogin) && sha != "" {
		r.actionsHeads[sha] = true
	}
	f.emitPush(r, ref, old, sha, sender)
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok {
		return
	}
	// CI runs once the pull requests know their new head, so its check runs
	// name them.
	defer f.runCI(r, sha, branch, "push", sender)
	now := f.now()
	for _, is := range r.issues {
		p := is.pr
		if p == nil || is.state != "open" || p.head != branch {
			continue
		}
		if sha == "" || sha == zeroSHA {
			is.state, is.closed, is.closedBy, is.updated = "closed", now, sender, now
			f.emitPR(r, is, "closed", sender, nil, nil, "", "")
			continue
		}
		before := p.headSHA
		p.headSHA, is.updated = sha, now
		f.emitPR(r, is, "synchronize", sender, nil, nil, before, sha)
	}
	if sha == "" || sha == zeroSHA {
		return
	}
	for _, is := range r.issues {
		p := is.pr
		if p == nil || is.state != "open" || p.base != branch || p.headSHA == "" {
			continue
		}
		if r.isAncestor(p.headSHA, sha) {
			p.merged, p.mergedAt, p.mergedBy, p.mergeSHA = true, now, sender, sha
			is.state, is.closed, is.closedBy, is.updated = "closed", now, sender, now
			f.emitPR(r, is, "closed", sender, nil, nil, "", "")
			f.closeLinkedIssues(r, is, sender)
		}
	}
}

// emitPush emits a push event with up to 20 commits, like GitHub's.
func (f *Fake) emitPush(r *Repo, ref, old, sha, sender string) {
	if f.hookURL == "" && len(r.workflows) == 0 {
		return
	}
	if old == "" {
		old = zeroSHA
	}
	if sha == "" {
		sha = zeroSHA
	}
	ev := &github.PushEvent{
		Ref: github.String(ref), Before: github.String(old), After: github.String(sha),
		Created: github.Bool(old == zeroSHA), Deleted: github.Bool(sha == zeroSHA),
		Forced:  github.Bool(old != zeroSHA && sha != zeroSHA && !r.isAncestor(old, sha)),
		Compare: github.String(f.html(fmt.Sprintf("/%s/compare/%.12s...%.12s", r.FullName(), old, sha))),
		Pusher:  &github.CommitAuthor{Name: github.String(sender), Email: github.String(noreply(sender))},
		Sender:  f.userJSON(sender), Installation: f.installationJSON(),
		Repo: &github.PushEventRepository{
			ID: github.Int64(r.id), NodeID: nodeID("R", r.id), Name: github.String(r.name), FullName: github.String(r.FullName()),
			Owner: f.userJSON(r.owner), Private: github.Bool(r.settings.Private), DefaultBranch: github.String(r.defaultBranch),
			MasterBranch: github.String(r.defaultBranch), HTMLURL: github.String(f.html("/" + r.FullName())),
			URL: github.String(f.html("/" + r.FullName())), CloneURL: github.String(r.CloneURL()),
		},
		Commits: []*github.HeadCommit{},
	}
	if sha != zeroSHA {
		exclude := ""
		if old != zeroSHA {
			exclude = old
		}
		if log, err := r.gs.log(exclude, sha, 20); err == nil {
			for _, ci := range log {
				hc := &github.HeadCommit{
					ID: github.String(ci.sha), TreeID: github.String(ci.tree), Distinct: github.Bool(true),
					Message:   github.String(ci.message),
					Timestamp: ts(ci.authorDate),
					URL:       github.String(f.html("/" + r.FullName() + "/commit/" + ci.sha)),
					Author:    &github.CommitAuthor{Name: github.String(ci.authorName), Email: github.String(ci.authorMail)},
					Committer: &github.CommitAuthor{Name: github.String(ci.committerName), Email: github.String(ci.committerMail)},
				}
				ev.Commits = append(ev.Commits, hc)
			}
		}
		if n := len(ev.Commits); n > 0 {
			ev.HeadCommit = ev.Commits[n-1]
		}
	}
	ev.Head = github.String(sha)
	ev.Size = github.Int(len(ev.Commits))
	f.emit(r, "push", "", ev)
}

// sortedPulls returns the repository's pull requests by number. Caller
// holds f.mu.
func (r *Repo) sortedPulls() []*issue {
	var out []*issue
	for _, is := range r.issues {
		if is.pr != nil {
			out = append(out, is)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].number < out[j].number })
	return out
}

// --- merge requirements and mergeability ---

// mergeReasons are why a pull request may not be merged now: classic
// protection's and rulesets' reasons; behind marks the strict
// up-to-date requirement, which mergeable_state reports as "behind".
type mergeReasons struct {
	classic, rules []string
	behind         bool
	behindMsg      string // the reason the behind head gave, see strictChecks
}

func (m mergeReasons) any() bool { return len(m.classic) > 0 || len(m.rules) > 0 }

// message is the merge API's 405 message: the classic rule's first
// reason, else the rulesets' (GH013's API form).
func (m mergeReasons) message() string {
	if len(m.classic) > 0 {
		return m.classic[0]
	}
	return "Repository rule violations found\n\n" + strings.Join(m.rules, "\n\n") + "\n\n"
}

// strictChecks is the required-checks reason for merging: with strict
// checks and a head behind its base, every required check counts as
// expected again, whatever ran on the head ("2 of 2 required status checks
// are expected" for a green pull request whose base moved: reported in
// b-open-io/prompts#69). Caller holds f.mu.
func (r *Repo) strictChecks(m *mergeReasons, required []string, strict, upToDate bool, head string) string {
	if !strict || upToDate || len(required) == 0 {
		return r.checksMessage(required, head)
	}
	msg := fmt.Sprintf("Required status check %q is expected.", required[0])
	if len(required) > 1 {
		msg = fmt.Sprintf("%d of %d required status checks are expected.", len(required), len(required))
	}
	m.behind, m.behindMsg = true, msg
	return msg
}

// approvalsMessage checks required approving reviews: the latest review of
// each reviewer with write access counts; one requesting changes blocks.
// Caller holds f.mu.
func (r *Repo) approvalsMessage(is *issue, need int) string {
	if need <= 0 {
		return ""
	}
	latest := map[string]string{}
	for _, rv := range is.pr.reviews {
		if rv.state != "APPROVED" && rv.state != "CHANGES_REQUESTED" {
			continue
		}
		if !roleAtLeast(r.f.roleOf(r, rv.user), "write") {
			continue
		}
		latest[strings.ToLower(rv.user)] = rv.state
	}
	approved := 0
	for _, k := range sortedKeys(latest) {
		if latest[k] == "CHANGES_REQUESTED" {
			return "Changes have been requested."
		}
		approved++
	}
	if approved >= need {
		return ""
	}
	if need == 1 {
		return "At least 1 approving review is required by reviewers with write access."
	}
	return fmt.Sprintf("At least %d approving reviews are required by reviewers with write access.", need)
}

// mergeBlockers evaluates the base branch's rules for merging is as user
// with method ("" to skip the method's rules, for mergeable_state).
// Caller holds f.mu.
func (r *Repo) mergeBlockers(is *issue, baseSHA, user string, kind AccountType, method string) mergeReasons {
	var m mergeReasons
	p := is.pr
	prot := r.protectionFor(p.base)
	if prot != nil && user != "" && !r.boundBy(prot, user, kind) {
		prot = nil
	}
	var sets []*Ruleset
	for _, rs := range r.rulesetsFor(p.base) {
		if user == "" || !bypasses(rs, user) {
			sets = append(sets, rs)
		}
	}
	if prot == nil && len(sets) == 0 {
		return m
	}
	upToDate := baseSHA == "" || r.isAncestor(baseSHA, p.headSHA)
	if prot != nil {
		if msg := r.approvalsMessage(is, prot.RequiredApprovals); msg != "" {
			m.classic = append(m.classic, msg)
		}
		if msg := r.strictChecks(&m, prot.RequiredChecks, prot.Strict, upToDate, p.headSHA); msg != "" {
			m.classic = append(m.classic, msg)
		}
		if prot.LinearHistory && method == "merge" {
			m.classic = append(m.classic, "Merge commits are not allowed on this branch.")
		}
		if prot.SignedCommits && method == "rebase" {
			m.classic = append(m.classic, "Base branch requires signed commits. Rebase merges cannot be automatically signed by GitHub")
		}
	}
	add := func(msg string) {
		for _, x := range m.rules {
			if x == msg {
				return
			}
		}
		m.rules = append(m.rules, msg)
	}
	for _, rs := range sets {
		if msg := r.approvalsMessage(is, rs.RequiredApprovals); msg != "" {
			add(msg)
		}
		if msg := r.strictChecks(&m, rs.RequiredChecks, rs.Strict, upToDate, p.headSHA); msg != "" {
			add(msg)
		}
		if method != "" && len(rs.AllowedMergeMethods) > 0 && !contains(rs.AllowedMergeMethods, method) {
			add("Merge method " + method + " is not allowed by the ruleset.")
		}
		if rs.LinearHistory && method == "merge" {
			add("Merge commits are not allowed on this branch.")
		}
		if rs.SignedCommits && method == "rebase" {
			add("Base branch requires signed commits. Rebase merges cannot be automatically signed by GitHub")
		}
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mergeCache is a pull request's mergeability as computed for a head and
// base: GitHub computes it in the background after either moves.
type mergeCache struct {
	head, base string
	computed   bool
	conflict   bool
}

// fillMergeability sets mergeable, mergeable_state and rebaseable as GET
// /pulls/{n} shows them. With AsyncMergeability, a pull request whose head
// or base moved answers null/"unknown" once (the request starts GitHub's
// background job) and the computed values from the next request on.
// Caller holds f.mu.
func (r *Repo) fillMergeability(out *github.PullRequest, is *issue, refs map[string]string) {
	p := is.pr
	baseSHA := refs["refs/heads/"+p.base]
	switch {
	case is.state != "open":
		out.MergeableState = github.String("unknown")
		return
	case baseSHA == "" || p.headSHA == "":
		out.Mergeable = github.Bool(false)
		out.MergeableState = github.String("dirty")
		return
	}
	mc := r.mergeability[is.number]
	if mc == nil || mc.head != p.headSHA || mc.base != baseSHA {
		mc = &mergeCache{head: p.headSHA, base: baseSHA}
		r.mergeability[is.number] = mc
		if r.settings.AsyncMergeability {
			out.MergeableState = github.String("unknown")
			return
		}
	}
	if !mc.computed {
		r.computeMergeability(mc)
	}
	out.Mergeable = github.Bool(!mc.conflict)
	out.Rebaseable = github.Bool(!mc.conflict)
	out.MergeableState = github.String(r.mergeableState(is, mc, baseSHA))
}

func (r *Repo) computeMergeability(mc *mergeCache) {
	_, conflict, err := r.mergeTree(mc.base, mc.head)
	mc.conflict = conflict || err != nil
	mc.computed = true
}

// mergeableState is GitHub's mergeable_state for an open pull request with
// computed mergeability: dirty (conflicts), draft, blocked (rules unmet),
// behind (strict checks, head not up to date), unstable (other checks
// failing or pending), clean. Caller holds f.mu.
func (r *Repo) mergeableState(is *issue, mc *mergeCache, baseSHA string) string {
	switch {
	case mc.conflict:
		return "dirty"
	case is.pr.draft:
		return "draft"
	}
	m := r.mergeBlockers(is, baseSHA, "", "", "")
	blocking := 0
	for _, msg := range append(append([]string(nil), m.classic...), m.rules...) {
		if !m.behind || msg != m.behindMsg {
			blocking++
		}
	}
	switch {
	case blocking > 0:
		return "blocked"
	case m.behind:
		return "behind"
	}
	required := map[string]bool{}
	if prot := r.protectionFor(is.pr.base); prot != nil {
		for _, c := range prot.RequiredChecks {
			required[c] = true
		}
	}
	for _, rs := range r.rulesetsFor(is.pr.base) {
		for _, c := range rs.RequiredChecks {
			required[c] = true
		}
	}
	if r.othersFailing(is.pr.headSHA, required) {
		return "unstable"
	}
	return "clean"
}

// ComputeMergeability finishes the background mergeability computation of
// every open pull request of every repository, as if GitHub's jobs had
// run: the next GET /pulls/{n} answers mergeable true or false.
func (f *Fake) ComputeMergeability() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.repos {
		refs, err := r.heads()
		if err != nil {
			continue
		}
		for _, is := range r.sortedPulls() {
			if is.state != "open" {
				continue
			}
			base := refs["refs/heads/"+is.pr.base]
			if base == "" || is.pr.headSHA == "" {
				continue
			}
			mc := r.mergeability[is.number]
			if mc == nil || mc.head != is.pr.headSHA || mc.base != base {
				mc = &mergeCache{head: is.pr.headSHA, base: base}
				r.mergeability[is.number] = mc
			}
			if !mc.computed {
				r.computeMergeability(mc)
			}
		}
	}
}

// updateBranch serves PUT /repos/{o}/{r}/pulls/{n}/update-branch: GitHub
// merges the base into the head branch (a merge commit by the caller,
// committed by GitHub) and answers 202.
func (f *Fake) updateBranch(c *rc) {
	is := c.pullParam()
	if is == nil {
		return
	}
	var req struct {
		ExpectedHeadSHA *string `json:"expected_head_sha"`
	}
	if !c.decode(&req) {
		return
	}
	r, p := c.repo, is.pr
	if is.state != "open" {
		c.fail(http.StatusUnprocessableEntity, "Cannot update a closed pull request")
		return
	}
	if req.ExpectedHeadSHA != nil && *req.ExpectedHeadSHA != p.headSHA {
		c.fail(http.StatusUnprocessableEntity, "expected head sha didn’t match current head ref.")
		return
	}
	baseSHA, ok := r.ref("refs/heads/" + p.base)
	if !ok {
		c.fail(http.StatusUnprocessableEntity, "There are no new commits on the base branch.")
		return
	}
	if r.isAncestor(baseSHA, p.headSHA) {
		c.fail(http.StatusUnprocessableEntity, "There are no new commits on the base branch.")
		return
	}
	tree, conflict, err := r.mergeTree(p.headSHA, baseSHA)
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	if conflict {
		c.fail(http.StatusUnprocessableEntity, "merge conflict between base and head")
		return
	}
	msg := fmt.Sprintf("Merge branch '%s' into %s", p.base, p.head)
	sha, err := r.commitTreeAs(tree, []string{p.headSHA, baseSHA}, msg, c.login, "GitHub")
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	headRef := "refs/heads/" + p.head
	old := p.headSHA
	if err := r.updateRef(headRef, sha, old); err != nil {
		c.fail(http.StatusUnprocessableEntity, "expected head sha didn’t match current head ref.")
		return
	}
	f.refChanged(r, headRef, old, sha, c.login)
	c.json(http.StatusAccepted, map[string]any{
		"message": "Updating pull request branch.",
		"url":     f.html(fmt.Sprintf("/%s/pull/%d", r.FullName(), is.number)),
	})
}

// diffStat is what a pull request's full answer counts between the merge
// base and the head: GitHub's "Get a pull request" schema requires
// commits, additions, deletions and changed_files (also in the answers of
// create and update).
type diffStat struct{ commits, additions, deletions, files int }

// fullPR completes a single pull request's answer: the counts, and for an
// answer that does not compute mergeability (create, update) GitHub's
// "not yet known" (mergeable null, mergeable_state "unknown"). Counts are
// cached per head and base, as they do not change while neither moves.
// Caller holds f.mu.
func (r *Repo) fullPR(out *github.PullRequest, is *issue, refs map[string]string) {
	if out.MergeableState == nil {
		out.MergeableState = github.String("unknown")
	}
	head, base := is.pr.headSHA, refs["refs/heads/"+is.pr.base]
	var st diffStat
	if head != "" && base != "" {
		key := head + ".." + base
		if cached, ok := r.diffStats[key]; ok {
			st = cached
		} else {
			st = r.countDiff(base, head)
			if r.diffStats == nil {
				r.diffStats = map[string]diffStat{}
			}
			r.diffStats[key] = st
		}
	}
	out.Commits, out.Additions, out.Deletions, out.ChangedFiles = github.Int(st.commits), github.Int(st.additions), github.Int(st.deletions), github.Int(st.files)
}

// countDiff counts the commits and lines from the merge base of base and
// head to head; what git cannot answer counts as nothing.
func (r *Repo) countDiff(base, head string) diffStat {
	var st diffStat
	mb, err := r.git("merge-base", base, head)
	if err != nil {
		return st
	}
	mb = strings.TrimSpace(mb)
	if n, err := r.git("rev-list", "--count", mb+".."+head); err == nil {
		st.commits, _ = strconv.Atoi(strings.TrimSpace(n))
	}
	num, err := r.git("diff", "--no-renames", "--numstat", mb, head)
	if err != nil {
		return st
	}
	for line := range strings.SplitSeq(strings.TrimSpace(num), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		st.files++
		a, _ := strconv.Atoi(f[0]) // "-" for a binary file: no lines
		d, _ := strconv.Atoi(f[1])
		st.additions += a
		st.deletions += d
	}
	return st
}
