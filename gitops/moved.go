package gitops

import (
	"fmt"
	"regexp"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// BranchMove says where a group branch is when it is no longer at the head
// that was reviewed (issue 28): Land reports it instead of merging, as a
// value. Who pushed is not in git; the head commit's committer is the best
// the repository itself knows (an amend or a rebase makes the pusher the
// committer), its author when the committer is GitHub's web editor.
type BranchMove struct {
	Reviewed, Head plumbing.Hash
	// Author is that identity as git records it, "Name <email>"; empty
	// when the commit could not be read.
	Author string
	// Login is the GitHub login its no-reply address names, if it does.
	Login string
}

// webFlow is the committer of commits made in GitHub's web editor.
const webFlow = "noreply@github.com"

// noReplyRE matches GitHub's no-reply addresses: login@users.noreply.github.com
// and, since 2017, id+login@users.noreply.github.com (also on GitHub
// Enterprise Server hosts: @users.noreply.<host>).
var noReplyRE = regexp.MustCompile(`^(?:[0-9]+\+)?([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))@users\.noreply\.[A-Za-z0-9.-]+$`)

// NoReplyLogin returns the GitHub login a no-reply address names.
func NoReplyLogin(email string) (string, bool) {
	m := noReplyRE.FindStringSubmatch(email)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// DescribeMove reads the head commit (in repo) of a branch that moved from
// reviewed to head and says who made it, as far as git knows.
func DescribeMove(repo *git.Repository, reviewed, head plumbing.Hash) BranchMove {
	m := BranchMove{Reviewed: reviewed, Head: head}
	c, err := repo.CommitObject(head)
	if err != nil {
		return m
	}
	who := c.Committer
	if who.Email == webFlow || who.Email == "" {
		who = c.Author
	}
	m.Author = signatureText(who)
	m.Login, _ = NoReplyLogin(who.Email)
	return m
}

func signatureText(s object.Signature) string {
	if s.Email == "" {
		return s.Name
	}
	return fmt.Sprintf("%s <%s>", s.Name, s.Email)
}
