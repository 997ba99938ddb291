package bot

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
)

// Rate limits. When GitHub's limit for the bot's identity is exhausted
// with its reset far off (the transport waits out a near one), the
// session waits: the bot records the wait in the session's state (and
// remembers it per installation while the process lives), says so on the
// issue with requests the transport keeps in reserve, and makes no calls
// for that installation until the reset. The first reconcile after it —
// a sweep, a reconcile dispatch, any delivery — resumes the session by
// itself. The engine is not involved: its session keeps running, its
// steps' jobs (another identity) go on, and what the bot could not carry
// out stays in the outbox.

// hold is an installation's known rate-limit wait.
type hold struct {
	err *ghapi.RateLimitedError
}

// held returns the installation's wait, if one is on.
func (b *Bot) held(inst int64) (*ghapi.RateLimitedError, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.holds[inst]
	if !ok {
		return nil, false
	}
	if !b.o.Now().Before(h.err.Reset) {
		delete(b.holds, inst)
		return nil, false
	}
	return h.err, true
}

func (b *Bot) hold(inst int64, rl *ghapi.RateLimitedError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h, ok := b.holds[inst]; ok && !h.err.Reset.Before(rl.Reset) {
		return
	}
	b.holds[inst] = hold{err: rl}
}

// stillWaiting is a reconcile refused because the session's recorded
// wait has not passed.
type stillWaiting struct{ rl *ghapi.RateLimitedError }

func (e *stillWaiting) Error() string { return "the session waits: " + e.rl.Error() }
func (e *stillWaiting) Unwrap() error { return e.rl }

// limited turns a far rate limit in err into a wait: remembered for the
// installation, recorded on the session (ref.issue, when it has one) and
// told on the issue. err is returned as it is, so callers see the
// *ghapi.RateLimitedError.
func (b *Bot) limited(ctx context.Context, gh GitHub, ref sessionRef, err error) error {
	rl, ok := ghapi.AsRateLimited(err)
	if !ok {
		return err
	}
	b.hold(ref.inst, rl)
	var sw *stillWaiting
	if errors.As(err, &sw) || gh == nil || ref.issue == 0 {
		return err
	}
	if perr := b.pauseForLimit(ghapi.WithReserve(ctx), gh, ref, rl); perr != nil {
		b.log.Warn("rate limited; the wait could not be recorded on the session (it is remembered here until the reset)",
			"repo", ref.repo.String(), "issue", ref.issue, "until", rl.Reset, "err", perr)
	}
	return err
}

// waitOf is the session record of a rate limit.
func (b *Bot) waitOf(ref sessionRef, rl *ghapi.RateLimitedError) codec.RateLimitWait {
	who := rl.Who()
	if rl.Identity == "" {
		who = "the bot's token"
		if ref.inst > 0 {
			who = "installation " + strconv.FormatInt(ref.inst, 10)
		}
	}
	return codec.RateLimitWait{Who: who, Resource: rl.Resource, Secondary: rl.Secondary, Until: rl.Reset.UTC(), Since: b.o.Now().UTC()}
}

// limitText is the line that names the limit and its reset.
func limitText(w codec.RateLimitWait) string {
	kind := "rate limit"
	if w.Secondary {
		kind = "secondary rate limit"
	}
	return fmt.Sprintf("GitHub %s for %s exhausted until %s; resuming after it", kind, w.Who, clockTime(w.Until))
}

// clockTime shows t to the minute, rounded up: "until 15:42" must not come
// before the reset.
func clockTime(t time.Time) string {
	up := t.UTC().Add(time.Minute - time.Nanosecond).Truncate(time.Minute)
	return up.Format("15:04 UTC")
}

// pauseForLimit records the wait in the session's state and tells the
// issue, once per reset. ctx may spend the transport's reserve.
func (b *Bot) pauseForLimit(ctx context.Context, gh GitHub, ref sessionRef, rl *ghapi.RateLimitedError) error {
	unlock := b.lock(ref.key())
	defer unlock()
	ld, err := b.load(ctx, gh, ref, 0)
	if err != nil {
		return fmt.Errorf("load session %s: %w", ref.key(), err)
	}
	if !ld.found {
		return nil
	}
	st := ld.st
	w := b.waitOf(ref, rl)
	if st.Waiting != nil && !st.Waiting.Until.Before(w.Until) {
		return nil // already told
	}
	if st.Waiting != nil && !st.Waiting.Since.IsZero() {
		w.Since = st.Waiting.Since // a longer wait that follows the first
	}
	st.Waiting = &w
	x := &executor{b: b, gh: gh, ref: ref, st: &st, now: b.o.Now().UTC(), log: b.log, comments: map[int][]ghapi.Comment{ref.issue: ld.comments}}
	body, err := fitTracking(st, st.RepoURL, b.o.SigningKey)
	if err != nil {
		return err
	}
	if _, err := x.write(ctx, ld, body); err != nil {
		return err
	}
	b.log.Warn("rate limited: the session waits for the reset", "repo", ref.repo.String(), "issue", ref.issue,
		"who", w.Who, "secondary", w.Secondary, "until", w.Until)
	// The notice is not an outbox effect: after the reset it would be
	// stale. Its marker keeps it to one per reset.
	id := "rate-limit/" + strconv.Itoa(ref.issue) + "/" + strconv.FormatInt(w.Until.Unix(), 10)
	for _, c := range ld.comments {
		if b.own(c.Author) && codec.HasEffectMarker(c.Body, id) {
			return nil
		}
	}
	_, err = gh.CreateComment(ctx, ref.repo, ref.issue, renderBotComment([]string{"⏸️ **Paused** | " + limitText(w)}, nil)+"\n"+codec.EffectMarker(id))
	return err
}

// checkWait is drive's gate: a session whose recorded wait has not passed
// is not reconciled; one whose wait passed is resumed (the wait cleared,
// a line saying so).
func (b *Bot) checkWait(st *codec.State, ref sessionRef) (string, error) {
	w := st.Waiting
	if w == nil {
		return "", nil
	}
	if b.o.Now().Before(w.Until) {
		return "", &stillWaiting{rl: &ghapi.RateLimitedError{Identity: w.Who, Resource: w.Resource, Reset: w.Until, Secondary: w.Secondary}}
	}
	st.Waiting = nil
	kind := "rate limit"
	if w.Secondary {
		kind = "secondary rate limit"
	}
	b.log.Info("rate limit reset: the session resumes", "repo", ref.repo.String(), "issue", ref.issue, "who", w.Who)
	return fmt.Sprintf("▶️ **Resumed** | the GitHub %s for %s reset at %s", kind, w.Who, clockTime(w.Until)), nil
}
