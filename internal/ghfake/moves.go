package ghfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Renaming a repository (Settings → Repository name, or PATCH
// /repos/{owner}/{repo} with a new name). GitHub keeps the repository's id,
// sends a `repository` event with action "renamed" and
// changes.repository.name.from, and redirects the former name: its API
// calls get 301 Moved Permanently with the repository's address by id in
// Location ("API v3 uses HTTP redirection where appropriate… 301: the URI
// you used has been superseded", docs: rest/using-the-rest-api/
// best-practices-for-using-the-rest-api#follow-redirects). A client that
// follows a 301 repeats a GET; Go's http.Client (like browsers) turns a
// POST, PATCH, PUT or DELETE into a GET without its body, so a write under
// the former name does not happen.

// Rename renames the repository as user (an admin).
func (r *Repo) Rename(user, name string) error {
	return r.move(user, r.owner, name, "renamed")
}

// Transfer moves the repository to another owner as user (an admin), as
// Settings → Transfer does: the same id, the former name redirected, a
// `repository` event with action "transferred" and changes.owner.from. The
// App's installation follows here (in the fake one installation covers
// every owner: transfer between owners that both installed the App).
func (r *Repo) Transfer(user, owner string) error {
	return r.move(user, owner, r.name, "transferred")
}

func (r *Repo) move(user, owner, name, action string) error {
	f := r.f
	f.mu.Lock()
	if !validName(name) || !validName(owner) {
		f.mu.Unlock()
		return fmt.Errorf("ghfake: %s %s: invalid name %q", action, r.FullName(), owner+"/"+name)
	}
	to := strings.ToLower(owner + "/" + name)
	if f.repoByName[to] != nil {
		f.mu.Unlock()
		return fmt.Errorf("ghfake: %s %s: %s already exists", action, r.FullName(), owner+"/"+name)
	}
	from := r.FullName()
	oldOwner, oldName := r.owner, r.name
	delete(f.repoByName, strings.ToLower(from))
	delete(f.formerNames, to)
	f.formerNames[strings.ToLower(from)] = r
	r.owner, r.name = owner, name
	f.repoByName[to] = r
	f.account(user, "")
	f.account(owner, "")
	changes := map[string]any{"repository": map[string]any{"name": map[string]any{"from": oldName}}}
	if action == "transferred" {
		changes = map[string]any{"owner": map[string]any{"from": map[string]any{"user": f.userJSON(oldOwner)}}}
	}
	f.emit(r, "repository", action, map[string]any{
		"action":       action,
		"changes":      changes,
		"repository":   r.json(),
		"sender":       f.userJSON(user),
		"installation": f.installationJSON(),
	})
	f.mu.Unlock()
	f.afterChange()
	return nil
}

// validName is GitHub's rule for a repository name: letters, digits, '-',
// '_' and '.', not "." or "..".
func validName(name string) bool {
	if name == "" || name == "." || name == ".." || len(name) > 100 {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// byIDPath rewrites /repositories/{id}/rest to the repository's current
// /repos/{owner}/{name}/rest, as GitHub serves both.
func (f *Fake) byIDPath(segs []string) []string {
	if len(segs) < 2 || segs[0] != "repositories" {
		return segs
	}
	id, err := strconv.ParseInt(segs[1], 10, 64)
	if err != nil {
		return segs
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.repos {
		if r.id == id {
			return append([]string{"repos", r.owner, r.name}, segs[2:]...)
		}
	}
	return segs
}

// redirectFormer answers an API call under a former name with GitHub's 301;
// it reports whether it did.
func (f *Fake) redirectFormer(w http.ResponseWriter, r *http.Request, segs []string) bool {
	if len(segs) < 3 || segs[0] != "repos" {
		return false
	}
	full := strings.ToLower(segs[1] + "/" + segs[2])
	f.mu.Lock()
	repo := f.formerNames[full]
	if f.repoByName[full] != nil {
		repo = nil
	}
	f.mu.Unlock()
	if repo == nil {
		return false
	}
	loc := f.api("/repositories/" + strconv.FormatInt(repo.id, 10) + "/" + strings.Join(segs[3:], "/"))
	loc = strings.TrimSuffix(loc, "/")
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	f.record(Call{Method: r.Method, Path: "/" + strings.Join(segs, "/"), Query: r.URL.RawQuery, Status: http.StatusMovedPermanently})
	w.Header().Set("Location", loc)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusMovedPermanently)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": "Moved Permanently", "url": loc,
		"documentation_url": "https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects"})
	return true
}

// Transferring an issue (the issue's "Transfer issue" button, or GraphQL's
// transferIssue) moves it, with its comments, to another repository of the
// same owner, under a new number. The rules, from GitHub's docs
// (issues/tracking-your-work-with-issues/administering-issues/
// transferring-an-issue-to-another-repository):
//   - only between repositories owned by the same user or organization,
//     and never from a private repository to a public one;
//   - the person needs write access to both; pull requests cannot move;
//   - comments and assignees stay with the issue; labels and milestones
//     stay only where the target has one of that name.
// The former address answers 301 Moved Permanently with the new one
// (REST "Get an issue": "The API returns a 301 Moved Permanently status if
// the issue was transferred to another repository"), and the source
// repository gets an `issues` event with action "transferred" and
// changes.new_issue / changes.new_repository.

type issueMove struct {
	repo   *Repo
	number int
}

// TransferIssue transfers issue n to repository to as user and returns its
// number there.
func (r *Repo) TransferIssue(user string, n int, to *Repo) (int, error) {
	f := r.f
	f.mu.Lock()
	f.account(user, "")
	moved, err := f.transferIssue(r, user, n, to)
	f.mu.Unlock()
	f.afterChange()
	return moved, err
}

// transferIssue does TransferIssue's work. Caller holds f.mu.
func (f *Fake) transferIssue(r *Repo, user string, n int, to *Repo) (int, error) {
	is := r.issue(n)
	switch {
	case is == nil:
		return 0, fmt.Errorf("ghfake: transfer %s#%d: %w", r.FullName(), n, ErrNotFound)
	case is.pr != nil:
		return 0, fmt.Errorf("ghfake: transfer %s#%d: a pull request cannot be transferred", r.FullName(), n)
	case to == r:
		return 0, fmt.Errorf("ghfake: transfer %s#%d: it is already there", r.FullName(), n)
	case !strings.EqualFold(r.owner, to.owner):
		return 0, fmt.Errorf("ghfake: transfer %s#%d to %s: issues move only between repositories of the same owner", r.FullName(), n, to.FullName())
	case r.settings.Private && !to.settings.Private:
		return 0, fmt.Errorf("ghfake: transfer %s#%d to %s: a private repository's issue cannot move to a public one", r.FullName(), n, to.FullName())
	case !roleAtLeast(f.roleOf(r, user), "write") || !roleAtLeast(f.roleOf(to, user), "write"):
		return 0, fmt.Errorf("ghfake: transfer %s#%d to %s: %s needs write access to both repositories", r.FullName(), n, to.FullName(), user)
	}
	oldJSON := r.issueJSON(is)
	now := f.now()
	moved := &issue{
		number: len(to.issues) + 1, id: is.id, title: is.title, body: is.body, user: is.user,
		state: is.state, stateReason: is.stateReason, created: is.created, updated: now,
		closed: is.closed, closedBy: is.closedBy,
	}
	for _, l := range is.labels {
		if to.labelByName(l) != nil {
			moved.labels = append(moved.labels, l)
		}
	}
	for _, id := range is.comments {
		c := r.comments[id]
		if c == nil {
			continue
		}
		delete(r.comments, id)
		c.issue = moved.number
		to.comments[id] = c
		moved.comments = append(moved.comments, id)
	}
	to.issues = append(to.issues, moved)
	is.movedTo = &issueMove{repo: to, number: moved.number}
	is.comments = nil
	f.emit(r, "issues", "transferred", map[string]any{
		"action": "transferred",
		"changes": map[string]any{
			"new_issue":      to.issueJSON(moved),
			"new_repository": to.json(),
		},
		"issue":        oldJSON,
		"repository":   r.json(),
		"sender":       f.userJSON(user),
		"installation": f.installationJSON(),
	})
	return moved.number, nil
}

// redirectTransferred answers a call on a transferred issue (or its
// comments, labels, …) with GitHub's 301 to its new address; it reports
// whether it did.
func (f *Fake) redirectTransferred(w http.ResponseWriter, r *http.Request, segs []string) bool {
	if len(segs) < 5 || segs[0] != "repos" || segs[3] != "issues" {
		return false
	}
	n, err := strconv.Atoi(segs[4])
	if err != nil {
		return false
	}
	f.mu.Lock()
	var to *issueMove
	if repo := f.lookupRepo(segs[1] + "/" + segs[2]); repo != nil && n >= 1 && n <= len(repo.issues) {
		to = repo.issues[n-1].movedTo
	}
	if to != nil && to.repo.settings.Private {
		// "If the issue was transferred to … a repository where the
		// authenticated user lacks read access, the API returns a 404":
		// the redirect is not given, and routing answers 404 below.
		_, val, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if t := f.tokens[strings.TrimSpace(val)]; t != nil && t.repo != nil && t.repo != to.repo {
			to = nil
		}
	}
	var loc string
	if to != nil {
		loc = f.api("/repositories/" + strconv.FormatInt(to.repo.id, 10) + "/issues/" + strconv.Itoa(to.number))
		if rest := segs[5:]; len(rest) > 0 {
			loc += "/" + strings.Join(rest, "/")
		}
	}
	f.mu.Unlock()
	if to == nil {
		return false
	}
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	f.record(Call{Method: r.Method, Path: "/" + strings.Join(segs, "/"), Query: r.URL.RawQuery, Status: http.StatusMovedPermanently})
	w.Header().Set("Location", loc)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusMovedPermanently)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": "Moved Permanently", "url": loc,
		"documentation_url": "https://docs.github.com/rest/issues/issues#get-an-issue"})
	return true
}

// ID is the repository's id, which renames and transfers keep.
func (r *Repo) ID() int64 { return r.id }
