package ghfake

import (
	"fmt"
	"net/http"
	"strings"
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
