package codec

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// Reading a session's state from an issue's comments, for the bot and for
// a job that works for the session.

// ErrNoSession is returned by FindState when the issue has no tracking
// comment that can be trusted.
var ErrNoSession = errors.New("no trusted bazinga tracking comment")

// StateTrust says which tracking comments a reader trusts: written by the
// orchestrator's own login (GitHub authenticates authors; "any bot" would
// let any App or workflow of the repository write one) and signed with its
// key.
type StateTrust struct {
	// PublicKey verifies the state block's signature (required).
	PublicKey ed25519.PublicKey
	// Previous are earlier public keys still accepted during a rotation.
	Previous []ed25519.PublicKey
	// Authors are the orchestrator's logins (required), e.g. "bazinga[bot]"
	// or, in Action-only mode, "github-actions[bot]".
	Authors []string
}

func (t StateTrust) author(c ghapi.Comment) bool {
	for _, a := range t.Authors {
		if strings.EqualFold(a, c.Author) {
			return true
		}
	}
	return false
}

// Of reports whether the state is of repo: the same repository id when
// both are known (the name changes with a rename or transfer, the id does
// not), else the same name.
func (st State) Of(repo ghapi.RepoRef) bool {
	if st.RepoID != 0 && repo.ID != 0 {
		return st.RepoID == repo.ID
	}
	return strings.EqualFold(st.Repo, repo.String())
}

// FindState returns the newest trusted session state among an issue's
// comments (the tracking comment) and the comment it was read from. A
// state must name repo and issue. ErrNoSession when none is trusted.
func FindState(comments []ghapi.Comment, repo ghapi.RepoRef, issue int, trust StateTrust) (State, ghapi.Comment, error) {
	var (
		best  State
		from  ghapi.Comment
		found bool
		why   []string
	)
	for _, c := range comments {
		if !strings.Contains(c.Body, StateMarker) {
			continue
		}
		if !trust.author(c) {
			why = append(why, fmt.Sprintf("comment %d: written by %s, not the orchestrator", c.ID, c.Author))
			continue
		}
		st, err := DecodeState(c.Body, trust.PublicKey, trust.Previous...)
		if err != nil {
			why = append(why, fmt.Sprintf("comment %d: %v", c.ID, err))
			continue
		}
		if st.Issue != issue || !st.Of(repo) {
			why = append(why, fmt.Sprintf("comment %d: the state is of %s#%d", c.ID, st.Repo, st.Issue))
			continue
		}
		if !found || st.Session.Rev > best.Session.Rev {
			best, from, found = st, c, true
		}
	}
	if !found {
		if len(why) > 0 {
			return State{}, ghapi.Comment{}, fmt.Errorf("%w on %s#%d (%s)", ErrNoSession, repo, issue, strings.Join(why, "; "))
		}
		return State{}, ghapi.Comment{}, fmt.Errorf("%w on %s#%d", ErrNoSession, repo, issue)
	}
	return best, from, nil
}
