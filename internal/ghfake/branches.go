package ghfake

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v66/github"
)

// Deleting a branch: the "Delete branch" button, `git push --delete`, or
// DELETE /repos/{owner}/{repo}/git/refs/{ref}
// (https://docs.github.com/en/rest/git/refs#delete-a-reference: 204 No
// Content; 422 "Reference does not exist"). GitHub closes every open pull
// request whose head the branch was (pull_request "closed", by whoever
// deleted it; its timeline shows head_ref_deleted), and such a pull request
// cannot be reopened until the branch is restored (see editPull). The
// default branch cannot be deleted, and protection rules and rulesets
// apply as to any push (deletion is refused unless allowed).

// deleteRefAPI serves DELETE /repos/{o}/{r}/git/refs/{ref}.
func (f *Fake) deleteRefAPI(c *rc) {
	name := "refs/" + strings.TrimPrefix(c.param("ref"), "refs/")
	old, ok := c.repo.ref(name)
	if !ok {
		c.fail(http.StatusUnprocessableEntity, "Reference does not exist")
		return
	}
	if name == "refs/heads/"+c.repo.defaultBranch {
		c.fail(http.StatusUnprocessableEntity, "Cannot delete the default branch")
		return
	}
	if msg := c.refRefusal(name, old, ""); msg != "" {
		c.fail(http.StatusUnprocessableEntity, msg)
		return
	}
	if err := c.repo.deleteRef(name, old); err != nil {
		c.fail(http.StatusUnprocessableEntity, "Reference update failed")
		return
	}
	f.refChanged(c.repo, name, old, "", c.login)
	c.noContent()
}

// deleteRef removes ref if it is still at old.
func (r *Repo) deleteRef(ref, old string) error {
	_, err := r.f.git(r.path, nil, nil, "update-ref", "-d", ref, old)
	return err
}

// DeleteBranch deletes a branch as user, as the "Delete branch" button
// does: the open pull requests whose head it was are closed.
func (r *Repo) DeleteBranch(user, branch string) error {
	ref := "refs/heads/" + branch
	old, ok := r.ref(ref)
	if !ok {
		return fmt.Errorf("ghfake: delete branch %s: %w", branch, ErrNotFound)
	}
	if branch == r.defaultBranch {
		return fmt.Errorf("ghfake: delete branch %s: the default branch cannot be deleted", branch)
	}
	if err := r.deleteRef(ref, old); err != nil {
		return err
	}
	r.f.mu.Lock()
	r.f.account(user, "")
	r.f.refChanged(r, ref, old, "", user)
	r.f.mu.Unlock()
	r.f.afterChange()
	return nil
}

// ReopenPR reopens a closed pull request as user, with GitHub's rules (a
// merged one cannot be; one whose head branch is gone cannot be until the
// branch is restored).
func (r *Repo) ReopenPR(user string, pr int) error {
	return r.do(user, func() error {
		is, err := r.mustPR(pr)
		if err != nil {
			return err
		}
		if is.pr.merged {
			return fmt.Errorf("ghfake: reopen PR #%d: a merged pull request cannot be reopened", pr)
		}
		if _, ok := r.ref("refs/heads/" + is.pr.head); !ok {
			return fmt.Errorf("ghfake: reopen PR #%d: the %s branch has been deleted", pr, is.pr.head)
		}
		r.f.setIssueState(r, is, "open", "", user)
		return nil
	})
}

// Renaming a branch (Settings → Branches, or POST
// /repos/{owner}/{repo}/branches/{branch}/rename, docs:
// rest/branches/branches#rename-a-branch, 201 with the branch). Per
// "Renaming a branch" (repositories/configuring-branches-and-merges-in-
// your-repository/managing-branches-in-your-repository/renaming-a-branch):
// protection follows the branch; open pull requests based on it are
// retargeted to the new name (pull_request "edited", changes.base.ref.from);
// an open pull request whose head it was is closed; renaming the default
// branch makes the new name the default. Write access may rename a branch;
// the default or a protected branch needs admin.

type renameRequest struct {
	NewName *string `json:"new_name"`
}

// renameBranchAPI serves POST /repos/{o}/{r}/branches/{branch}/rename.
func (f *Fake) renameBranchAPI(c *rc) {
	var req renameRequest
	if !c.decode(&req) {
		return
	}
	from := c.param("branch")
	if req.NewName == nil || !validRefName("refs/heads/"+*req.NewName) {
		c.invalid(fieldError{Resource: "Branch", Field: "new_name", Code: "invalid"})
		return
	}
	if _, ok := c.repo.ref("refs/heads/" + from); !ok {
		c.notFound()
		return
	}
	if (from == c.repo.defaultBranch || c.repo.protectionFor(from) != nil) && c.kind == User && !roleAtLeast(f.roleOf(c.repo, c.login), "admin") {
		c.fail(http.StatusForbidden, "You must be an admin to rename the default or a protected branch")
		return
	}
	if err := c.repo.renameBranch(c.login, from, *req.NewName); err != nil {
		c.fail(http.StatusUnprocessableEntity, err.Error())
		return
	}
	sha, _ := c.repo.ref("refs/heads/" + *req.NewName)
	c.json(http.StatusCreated, map[string]any{"name": *req.NewName, "commit": map[string]any{"sha": sha}})
}

// RenameBranch renames a branch as user (see renameBranchAPI).
func (r *Repo) RenameBranch(user, from, to string) error {
	r.f.mu.Lock()
	r.f.account(user, "")
	err := r.renameBranch(user, from, to)
	r.f.mu.Unlock()
	r.f.afterChange()
	return err
}

// renameBranch does the rename. Caller holds f.mu.
func (r *Repo) renameBranch(user, from, to string) error {
	f := r.f
	sha, ok := r.ref("refs/heads/" + from)
	if !ok {
		return fmt.Errorf("ghfake: rename branch %s: %w", from, ErrNotFound)
	}
	if _, exists := r.ref("refs/heads/" + to); exists {
		return fmt.Errorf("ghfake: rename branch %s: branch %s already exists", from, to)
	}
	if err := r.updateRef("refs/heads/"+to, sha, ""); err != nil {
		return err
	}
	if err := r.deleteRef("refs/heads/"+from, sha); err != nil {
		return err
	}
	if r.defaultBranch == from {
		r.defaultBranch = to
	}
	if r.renamedBranches == nil {
		r.renamedBranches = map[string]string{}
	}
	for old, cur := range r.renamedBranches {
		if cur == from {
			r.renamedBranches[old] = to
		}
	}
	delete(r.renamedBranches, to)
	r.renamedBranches[from] = to
	if p, ok := r.protections[from]; ok {
		delete(r.protections, from)
		r.protections[to] = p
	}
	now := f.now()
	for _, is := range r.issues {
		p := is.pr
		if p == nil || is.state != "open" {
			continue
		}
		if p.head == from {
			is.state, is.closed, is.closedBy, is.updated = "closed", now, user, now
			f.emitPR(r, is, "closed", user, nil, nil, "", "")
			continue
		}
		if p.base == from {
			p.base, is.updated = to, now
			f.emitPR(r, is, "edited", user, nil, &github.EditChange{Base: &github.EditBase{Ref: &github.EditRef{From: github.String(from)}}}, "", "")
		}
	}
	return nil
}
