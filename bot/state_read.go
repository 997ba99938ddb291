package bot

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// This file is what runs outside the bot process needs: a job reading the
// session it works for from the tracking comment, and the Action-only
// orchestrator reading back results that no event delivered.

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

func (t StateTrust) author(c Comment) bool {
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
		return decodeState(body, key)
	}
	raw, ok := hiddenBlock(body, stateMarker)
	if !ok {
		return State{}, errNoState
	}
	i := strings.LastIndexByte(raw, '.')
	if i < 0 {
		return State{}, errBadStateMAC
	}
	// Re-sign with a throwaway key so decodeState's checks (version,
	// session references) apply unchanged.
	k := []byte("bazinga-unverified-state-read")
	payload := raw[:i]
	return decodeState(stateMarker+payload+"."+sign(payload, k)+blockEnd, k)
}

// FindState returns the newest trusted session state among an issue's
// comments (the tracking comment) and the comment it was read from. A
// state must name repo and issue. ErrNoSession when none is trusted.
func FindState(comments []Comment, repo RepoRef, issue int, trust StateTrust) (State, Comment, error) {
	var (
		best  State
		from  Comment
		found bool
		why   []string
	)
	for _, c := range comments {
		if !strings.Contains(c.Body, stateMarker) {
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
			return State{}, Comment{}, fmt.Errorf("%w on %s#%d (%s)", ErrNoSession, repo, issue, strings.Join(why, "; "))
		}
		return State{}, Comment{}, fmt.Errorf("%w on %s#%d", ErrNoSession, repo, issue)
	}
	return best, from, nil
}

// ApplyLoggedResults reads back result comments of steps in flight and
// applies them, one reconcile each, oldest first. It is for the Action-only
// orchestrator: a result comment written with a workflow's GITHUB_TOKEN
// starts no workflow, so the session learns of it when the step's run
// completes (workflow_run) or on the schedule sweep. It returns how many
// results were applied. Results that are not trusted or no longer in
// flight are skipped exactly as when delivered by a webhook.
func (b *Bot) ApplyLoggedResults(ctx context.Context, installation int64, repo RepoRef, issue int) (int, error) {
	gh, err := b.o.Client(ctx, installation)
	if err != nil {
		return 0, fmt.Errorf("client for installation %d: %w", installation, err)
	}
	ref := sessionRef{inst: installation, repo: repo, issue: issue}
	b.remember(installation, repo)
	unlock := b.lock(ref.key())
	ld, err := b.load(ctx, gh, ref, 0)
	unlock()
	if err != nil {
		return 0, fmt.Errorf("load session %s: %w", ref.key(), err)
	}
	if !ld.found {
		return 0, nil
	}
	s := ld.st.Session
	inFlight := map[string]bool{}
	groups := map[string]bool{}
	for _, st := range s.Steps {
		if st.State == pipeline.StepInFlight {
			inFlight[st.ID] = true
			groups[st.Group] = true
		}
	}
	if len(inFlight) == 0 {
		return 0, nil
	}
	type found struct {
		c      Comment
		rec    ResultRecord
		number int
	}
	var results []found
	scan := func(number int) error {
		cs, err := gh.ListComments(ctx, repo, number)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if rec, ok := ParseResultComment(c.Body); ok && inFlight[rec.Step] {
				results = append(results, found{c: c, rec: rec, number: number})
			}
		}
		return nil
	}
	if err := scan(issue); err != nil {
		return 0, err
	}
	for _, g := range sortedKeys(groups) {
		if g == pipeline.LeadGroup {
			continue
		}
		n := ld.st.prNumber(g)
		if n == 0 {
			grp := s.Group(g)
			if grp == nil {
				continue
			}
			pr, ok, err := gh.FindPR(ctx, repo, grp.Branch)
			if err != nil {
				return 0, err
			}
			if !ok {
				continue
			}
			n = pr.Number
		}
		if err := scan(n); err != nil {
			return 0, err
		}
	}
	sort.Slice(results, func(i, j int) bool { return results[i].c.ID < results[j].c.ID })
	applied := 0
	var errs []error
	for _, r := range results {
		err := b.reconcile(ctx, gh, ref, input{delivery: "logged-result-" + strconv.FormatInt(r.c.ID, 10),
			result: &resultIn{rec: r.rec, author: r.c.Author, number: r.number}, commentID: r.c.ID})
		switch {
		case err == nil:
			applied++
		case errors.Is(err, ErrIgnored):
		default:
			errs = append(errs, err)
		}
	}
	return applied, errors.Join(errs...)
}
