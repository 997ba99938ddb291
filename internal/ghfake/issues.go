package ghfake

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v66/github"
)

// maxBody is GitHub's limit on issue, pull request and comment bodies.
const maxBody = 65536

func tooLong(s string) bool { return utf8.RuneCountInString(s) > maxBody }

// --- issues ---

func (f *Fake) listIssues(c *rc) {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var want []string
	if l := q.Get("labels"); l != "" {
		for _, n := range strings.Split(l, ",") {
			if n = strings.TrimSpace(n); n != "" {
				want = append(want, n)
			}
		}
	}
	var since time.Time
	if s := q.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			c.invalid(fieldError{Resource: "Issue", Field: "since", Code: "invalid"})
			return
		}
		since = t
	}
	var list []*issue
	for _, is := range c.repo.issues {
		if is.movedTo != nil {
			continue
		}
		if state != "all" && is.state != state {
			continue
		}
		if cr := q.Get("creator"); cr != "" && !strings.EqualFold(cr, is.user) {
			continue
		}
		if !since.IsZero() && is.updated.Before(since) {
			continue
		}
		if !hasAllLabels(is, want) {
			continue
		}
		list = append(list, is)
	}
	sortIssues(list, q.Get("sort"), q.Get("direction"))
	start, end := c.page(len(list))
	out := []*github.Issue{}
	for _, is := range list[start:end] {
		out = append(out, c.repo.issueJSON(is))
	}
	c.json(http.StatusOK, out)
}

func hasAllLabels(is *issue, want []string) bool {
	for _, w := range want {
		found := false
		for _, l := range is.labels {
			if strings.EqualFold(l, w) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// sortIssues orders as GitHub does: by created (default), updated or
// comments, descending unless asked otherwise; ties by number.
func sortIssues(list []*issue, by, dir string) {
	asc := dir == "asc"
	key := func(is *issue) int64 {
		switch by {
		case "updated":
			return is.updated.UnixNano()
		case "comments":
			return int64(len(is.comments))
		}
		return int64(is.number)
	}
	sort.SliceStable(list, func(i, j int) bool {
		a, b := key(list[i]), key(list[j])
		if a == b {
			a, b = int64(list[i].number), int64(list[j].number)
		}
		if asc {
			return a < b
		}
		return a > b
	})
}

// issueParam resolves {number}. Caller holds f.mu.
func (c *rc) issueParam() *issue {
	n, ok := c.intParam("number")
	if !ok {
		return nil
	}
	is := c.repo.issue(int(n))
	if is == nil {
		c.notFound()
	}
	return is
}

func (f *Fake) getIssue(c *rc) {
	if is := c.issueParam(); is != nil {
		c.json(http.StatusOK, c.repo.issueJSON(is))
	}
}

type issueRequest struct {
	Title       *string          `json:"title"`
	Body        *string          `json:"body"`
	State       *string          `json:"state"`
	StateReason *string          `json:"state_reason"`
	Labels      *json.RawMessage `json:"labels"`
}

// openedWithLabels emits "opened" with the labels the issue was created
// with, then "labeled" for each, as GitHub does. Caller holds f.mu.
func (f *Fake) openedWithLabels(r *Repo, is *issue, labels []string, sender string) {
	var added []*label
	for _, n := range labels {
		if n = strings.TrimSpace(n); n == "" || hasAllLabels(is, []string{n}) {
			continue
		}
		l := f.ensureLabel(r, n)
		is.labels = append(is.labels, l.name)
		added = append(added, l)
	}
	f.emitIssue(r, is, "opened", sender, nil, nil)
	for _, l := range added {
		f.emitIssue(r, is, "labeled", sender, l, nil)
	}
}

// newIssue creates an issue. Caller holds f.mu.
func (f *Fake) newIssue(r *Repo, user, title, body string) *issue {
	now := f.now()
	is := &issue{
		number: len(r.issues) + 1, id: f.id("issue"), title: title, body: body, user: user,
		state: "open", created: now, updated: now,
	}
	r.issues = append(r.issues, is)
	return is
}

// canTriage reports whether the request's identity may change others'
// issues (bots and users with triage or more).
func (c *rc) canTriage() bool {
	return c.kind != User || roleAtLeast(c.f.roleOf(c.repo, c.login), "triage")
}

func (f *Fake) editIssue(c *rc) {
	is := c.issueParam()
	if is == nil {
		return
	}
	var req issueRequest
	if !c.decode(&req) {
		return
	}
	if !c.canTriage() && !strings.EqualFold(c.login, is.user) {
		c.fail(http.StatusForbidden, "Must have triage access to repository")
		return
	}
	if req.Title != nil && strings.TrimSpace(*req.Title) == "" {
		c.invalid(fieldError{Resource: "Issue", Field: "title", Code: "missing_field"})
		return
	}
	if req.Body != nil && tooLong(*req.Body) {
		c.invalid(fieldError{Resource: "Issue", Field: "body", Code: "custom", Message: "body is too long (maximum is 65536 characters)"})
		return
	}
	if req.State != nil && *req.State != "open" && *req.State != "closed" {
		c.invalid(fieldError{Resource: "Issue", Field: "state", Code: "invalid"})
		return
	}
	var labels []string
	if req.Labels != nil {
		var ok bool
		if labels, ok = parseLabelNames(*req.Labels); !ok {
			c.invalid(fieldError{Resource: "Issue", Field: "labels", Code: "invalid"})
			return
		}
		if !c.canTriage() {
			req.Labels = nil // silently ignored, as on GitHub
		}
	}
	f.applyIssueEdit(c.repo, is, c.login, req.Title, req.Body)
	if req.State != nil {
		reason := ""
		if req.StateReason != nil {
			reason = *req.StateReason
		}
		f.setIssueState(c.repo, is, *req.State, reason, c.login)
	}
	if req.Labels != nil {
		f.setLabels(c.repo, is, labels, c.login, true)
	}
	c.json(http.StatusOK, c.repo.issueJSON(is))
}

// applyIssueEdit changes title and body, emitting "edited" with the old
// values as GitHub does. Caller holds f.mu.
func (f *Fake) applyIssueEdit(r *Repo, is *issue, sender string, title, body *string) {
	changes := &github.EditChange{}
	changed := false
	if title != nil && *title != is.title {
		changes.Title = &github.EditTitle{From: github.String(is.title)}
		is.title, changed = *title, true
	}
	if body != nil && *body != is.body {
		changes.Body = &github.EditBody{From: github.String(is.body)}
		is.body, changed = *body, true
	}
	if changed {
		is.updated = f.now()
		f.emitIssue(r, is, "edited", sender, nil, changes)
	}
}

// setIssueState closes or reopens. Closing a pull request this way closes
// it unmerged. Caller holds f.mu.
func (f *Fake) setIssueState(r *Repo, is *issue, state, reason, sender string) {
	if state == is.state || (is.pr != nil && is.pr.merged) {
		return
	}
	now := f.now()
	is.state, is.updated = state, now
	if state == "closed" {
		if reason == "" {
			reason = "completed"
		}
		if is.pr != nil {
			reason = ""
		}
		is.closed, is.closedBy, is.stateReason = now, sender, reason
		f.emitIssue(r, is, "closed", sender, nil, nil)
		return
	}
	is.closed, is.closedBy, is.stateReason = time.Time{}, "", ""
	if is.pr == nil {
		is.stateReason = "reopened"
	}
	f.emitIssue(r, is, "reopened", sender, nil, nil)
}

// --- comments ---

func (f *Fake) listComments(c *rc) {
	is := c.issueParam()
	if is == nil {
		return
	}
	since, ok := c.sinceParam()
	if !ok {
		return
	}
	var list []*comment
	for _, id := range is.comments {
		cm := c.repo.comments[id]
		if since.IsZero() || !cm.updated.Before(since) {
			list = append(list, cm)
		}
	}
	start, end := c.page(len(list))
	out := []*github.IssueComment{}
	for _, cm := range list[start:end] {
		out = append(out, c.repo.commentJSON(cm))
	}
	c.json(http.StatusOK, out)
}

func (c *rc) sinceParam() (time.Time, bool) {
	s := c.r.URL.Query().Get("since")
	if s == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		c.invalid(fieldError{Resource: "IssueComment", Field: "since", Code: "invalid"})
		return time.Time{}, false
	}
	return t, true
}

type commentRequest struct {
	Body *string `json:"body"`
}

func (c *rc) commentBody() (string, bool) {
	var req commentRequest
	if !c.decode(&req) {
		return "", false
	}
	if req.Body == nil || *req.Body == "" {
		c.invalid(fieldError{Resource: "IssueComment", Field: "body", Code: "missing_field"})
		return "", false
	}
	if tooLong(*req.Body) {
		c.invalid(fieldError{Resource: "IssueComment", Field: "body", Code: "custom", Message: "body is too long (maximum is 65536 characters)"})
		return "", false
	}
	return *req.Body, true
}

func (f *Fake) createComment(c *rc) {
	is := c.issueParam()
	if is == nil {
		return
	}
	body, ok := c.commentBody()
	if !ok {
		return
	}
	cm := f.addComment(c.repo, is, c.login, body)
	c.json(http.StatusCreated, c.repo.commentJSON(cm))
}

// addComment creates a comment and emits issue_comment.created. Caller
// holds f.mu.
func (f *Fake) addComment(r *Repo, is *issue, user, body string) *comment {
	now := f.now()
	cm := &comment{id: f.id("comment"), issue: is.number, user: user, body: body, created: now, updated: now}
	r.comments[cm.id] = cm
	is.comments = append(is.comments, cm.id)
	is.updated = now
	f.emitComment(r, is, cm, "created", user, nil)
	return cm
}

func (c *rc) commentParam() *comment {
	id, ok := c.intParam("comment_id")
	if !ok {
		return nil
	}
	cm := c.repo.comments[id]
	if cm == nil {
		c.notFound()
	}
	return cm
}

func (f *Fake) getComment(c *rc) {
	if cm := c.commentParam(); cm != nil {
		c.json(http.StatusOK, c.repo.commentJSON(cm))
	}
}

// mayChangeComment: the author, bots and users with write access.
func (c *rc) mayChangeComment(cm *comment) bool {
	if strings.EqualFold(c.login, cm.user) || c.kind != User {
		return true
	}
	if roleAtLeast(c.f.roleOf(c.repo, c.login), "write") {
		return true
	}
	c.fail(http.StatusForbidden, "Must have write access to repository")
	return false
}

func (f *Fake) editComment(c *rc) {
	cm := c.commentParam()
	if cm == nil || !c.mayChangeComment(cm) {
		return
	}
	body, ok := c.commentBody()
	if !ok {
		return
	}
	f.changeComment(c.repo, cm, body, c.login)
	c.json(http.StatusOK, c.repo.commentJSON(cm))
}

// changeComment edits a comment and emits issue_comment.edited. Caller
// holds f.mu.
func (f *Fake) changeComment(r *Repo, cm *comment, body, sender string) {
	old := cm.body
	cm.body, cm.updated = body, f.now()
	f.emitComment(r, r.issue(cm.issue), cm, "edited", sender, &github.EditChange{Body: &github.EditBody{From: github.String(old)}})
}

// removeComment deletes a comment and emits issue_comment.deleted. Caller
// holds f.mu.
func (f *Fake) removeComment(r *Repo, cm *comment, sender string) {
	is := r.issue(cm.issue)
	delete(r.comments, cm.id)
	for i, id := range is.comments {
		if id == cm.id {
			is.comments = append(is.comments[:i:i], is.comments[i+1:]...)
			break
		}
	}
	f.emitComment(r, is, cm, "deleted", sender, nil)
}

// --- labels ---

// parseLabelNames accepts the shapes GitHub does: ["a","b"],
// {"labels":["a"]}, [{"name":"a"}] and {"labels":[{"name":"a"}]}.
func parseLabelNames(raw json.RawMessage) ([]string, bool) {
	var obj struct {
		Labels json.RawMessage `json:"labels"`
	}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &obj); err != nil || obj.Labels == nil {
			return nil, false
		}
		raw = obj.Labels
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err == nil {
		return names, true
	}
	var objs []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &objs); err != nil {
		return nil, false
	}
	for _, o := range objs {
		names = append(names, o.Name)
	}
	return names, true
}

// ensureLabel returns the repository label, creating it (color ededed) the
// way GitHub does when an unknown label is added to an issue. Caller holds
// f.mu.
func (f *Fake) ensureLabel(r *Repo, name string) *label {
	if l := r.labelByName(name); l != nil {
		return l
	}
	l := &label{id: f.id("label"), name: name, color: "ededed"}
	r.labels = append(r.labels, l)
	return l
}

// setLabels makes the issue's labels exactly names (replace) or adds names
// (not replace), emitting labeled/unlabeled per change. Caller holds f.mu.
func (f *Fake) setLabels(r *Repo, is *issue, names []string, sender string, replace bool) {
	var keep []string
	var removed []*label
	if replace {
		for _, cur := range is.labels {
			still := false
			for _, n := range names {
				if strings.EqualFold(n, cur) {
					still = true
				}
			}
			if still {
				keep = append(keep, cur)
			} else if l := r.labelByName(cur); l != nil {
				removed = append(removed, l)
			}
		}
	} else {
		keep = append(keep, is.labels...)
	}
	var added []*label
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		dup := false
		for _, k := range keep {
			if strings.EqualFold(k, n) {
				dup = true
			}
		}
		if dup {
			continue
		}
		l := f.ensureLabel(r, n)
		keep = append(keep, l.name)
		added = append(added, l)
	}
	if len(added) == 0 && len(removed) == 0 {
		return
	}
	is.labels, is.updated = keep, f.now()
	for _, l := range removed {
		f.emitIssue(r, is, "unlabeled", sender, l, nil)
	}
	for _, l := range added {
		f.emitIssue(r, is, "labeled", sender, l, nil)
	}
}

// replaceIssueLabels sets an issue's labels; an empty body clears them.
func (f *Fake) replaceIssueLabels(c *rc) {
	is := c.issueParam()
	if is == nil {
		return
	}
	var names []string
	if len(strings.TrimSpace(string(c.body))) > 0 {
		var ok bool
		if names, ok = parseLabelNames(c.body); !ok {
			c.invalid(fieldError{Resource: "Label", Field: "labels", Code: "invalid"})
			return
		}
	}
	f.setLabels(c.repo, is, names, c.login, true)
	c.json(http.StatusOK, c.repo.labelsJSON(is.labels))
}

// createIssue is "Create an issue" (POST /repos/{owner}/{repo}/issues).
// GitHub's rules: anyone who can read the repository may open an issue;
// title is required (a string or a number); the body shares comments'
// 65,536-character limit; labels are set only by callers with push access
// and "silently dropped otherwise" (REST docs, "Create an issue"). A caller
// without push access who names a label the repository lacks is refused
// with 403 rather than having it dropped (github.com/orgs/community
// discussions/197408), so the fake does the same. An App or GITHUB_TOKEN
// with issues: write sets labels, creating missing ones as GitHub does.
func (f *Fake) createIssue(c *rc) {
	var req struct {
		Title  json.RawMessage `json:"title"`
		Body   *string         `json:"body"`
		Labels json.RawMessage `json:"labels"`
	}
	if !c.decode(&req) {
		return
	}
	title, ok := issueTitle(req.Title)
	if !ok {
		c.invalid(fieldError{Resource: "Issue", Field: "title", Code: "missing_field"})
		return
	}
	body := ""
	if req.Body != nil {
		body = *req.Body
	}
	if tooLong(body) {
		c.invalid(fieldError{Resource: "Issue", Field: "body", Code: "custom", Message: "body is too long (maximum is 65536 characters)"})
		return
	}
	var labels []string
	if len(req.Labels) > 0 && string(req.Labels) != "null" {
		if labels, ok = parseLabelNames(req.Labels); !ok {
			c.invalid(fieldError{Resource: "Label", Field: "labels", Code: "invalid"})
			return
		}
	}
	if c.kind == User && !roleAtLeast(f.roleOf(c.repo, c.login), "write") {
		for _, n := range labels {
			if c.repo.labelByName(strings.TrimSpace(n)) == nil {
				c.fail(http.StatusForbidden, "You do not have permission to create labels on this repository.")
				return
			}
		}
		labels = nil
	}
	is := f.newIssue(c.repo, c.login, title, body)
	f.openedWithLabels(c.repo, is, labels, c.login)
	c.json(http.StatusCreated, c.repo.issueJSON(is))
}

// issueTitle reads "title", which GitHub's schema allows as a string or an
// integer; empty or blank is missing.
func issueTitle(raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, strings.TrimSpace(s) != ""
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil && n != "" {
		if _, err := n.Int64(); err == nil {
			return n.String(), true
		}
	}
	return "", false
}
