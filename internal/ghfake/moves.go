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
