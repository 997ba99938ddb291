package codec

import (
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

// StateTrust says which tracking comments a reader trusts.
type StateTrust struct {
	// Key, when set, must verify the state block's HMAC: only a holder of
	// the key (the bot) can have written it.
	Key []byte
	// Without a key, only comments by these logins are trusted; when empty,
	// any Bot-type account is (a job has no key in App mode, and only Apps
	// and workflows write as bots).
	Authors []string
}

func (t StateTrust) author(c ghapi.Comment) bool {
	if len(t.Authors) == 0 {
		return c.AuthorType == "Bot"
	}
	for _, a := range t.Authors {
		if strings.EqualFold(a, c.Author) {
			return true
		}
	}
	return false
}

// ReadState reads the state block of a tracking comment body. With a key,
// the block's HMAC must verify; without one it is decoded unverified, and
// trust must come from who wrote the comment.
func ReadState(body string, key []byte) (State, error) {
	if len(key) > 0 {
		return DecodeState(body, key)
	}
	raw, ok := HiddenBlock(body, StateMarker)
	if !ok {
		return State{}, ErrNoState
	}
	i := strings.LastIndexByte(raw, '.')
	if i < 0 {
		return State{}, ErrBadStateMAC
	}
	// Re-sign with a throwaway key so DecodeState's checks (version,
	// session references) apply unchanged.
	k := []byte("bazinga-unverified-state-read")
	payload := raw[:i]
	return DecodeState(StateMarker+payload+"."+sign(payload, k)+BlockEnd, k)
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
		if len(trust.Key) == 0 && !trust.author(c) {
			why = append(why, fmt.Sprintf("comment %d: written by %s (%s), not trusted", c.ID, c.Author, c.AuthorType))
			continue
		}
		st, err := ReadState(c.Body, trust.Key)
		if err != nil {
			why = append(why, fmt.Sprintf("comment %d: %v", c.ID, err))
			continue
		}
		if st.Issue != issue || !strings.EqualFold(st.Repo, repo.String()) {
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
