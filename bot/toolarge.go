package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// tooLargeReason is the pause reason of a session whose next state did not
// fit in its tracking comment. It names no figures, so a later reconcile
// that fails the same way recognises the pause as its own.
const tooLargeReason = "the session's state no longer fits in its tracking comment"

// pauseTooLarge handles a state that cannot be written however little the
// tracking comment shows (issue 27). Nothing of what caused it is kept: the
// session stays as its tracking comment last stored it, paused, with a short
// notice on the issue that names the figures and the largest parts. A sweep
// or event that fails the same way on the paused session does nothing more
// (the notice is there); a person's command gets the notice again, and a
// resume tries once more, which succeeds once the cause is gone (a retried
// or stopped group no longer takes the oversized result).
func (b *Bot) pauseTooLarge(ctx context.Context, gh GitHub, ref sessionRef, ld loaded, in input, tooLarge *errStateTooLarge,
	now time.Time, log *slog.Logger) error {
	if !ld.found {
		return b.refuseStart(ctx, gh, ref, ld, tooLarge, log)
	}
	st := ld.st
	prev := st.Session
	already := prev.Status == pipeline.SessionPaused && strings.Contains(prev.Reason, tooLargeReason)
	if already && !in.command {
		log.Info("the session's state still does not fit; it stays paused until a person acts", "err", tooLarge)
		return nil
	}
	session := strconv.Itoa(ref.issue)
	if !already {
		pause := pipeline.CommandEvent(session, b.o.Login, pipeline.Command{Kind: pipeline.CommandPause, Text: tooLargeReason})
		st.Session, _ = pipeline.Reconcile(prev, []pipeline.Event{pause}, now, st.Config)
	}
	x := &executor{b: b, gh: gh, ref: ref, st: &st, in: in, now: now, log: log}
	x.enqueue(codec.PendingEffect{ID: fmt.Sprintf("too-large/%s/%d/%s", session, st.Session.Rev, in.delivery),
		Kind: codec.EffectComment, Number: ref.issue, Text: tooLargeNotice(tooLarge)})
	x.issueViews()
	body, err := fitTracking(st, st.RepoURL, b.o.SigningKey)
	if err != nil {
		// The last stored state with a pause: cannot happen unless the
		// state was already at the edge; the error says both.
		return fmt.Errorf("%s: %w (pausing it: %w)", ref.key(), tooLarge, err)
	}
	if _, err := x.write(ctx, ld, body); err != nil {
		return errors.Join(tooLarge, err)
	}
	x.carryOut(ctx)
	log.Warn("the session's state does not fit in its tracking comment; paused", "err", tooLarge, "rev", st.Session.Rev)
	return errors.Join(x.errs...)
}

// tooLargeNotice is the notice of a pause for a state too large: short
// (three named parts at most), so it always fits in a comment.
func tooLargeNotice(e *errStateTooLarge) string {
	return fmt.Sprintf("⏸️ **Paused** | %s: the smallest form takes %d characters, a GitHub comment holds %d. "+
		"What arrived since was not applied, and the session stays as shown above. The largest parts: %s.\n\n"+
		"`/bazinga retry <group>` restarts a group whose step sent an oversized result, `/bazinga stop` ends the session; "+
		"`/bazinga resume` tries again.", tooLargeReason, e.Chars, codec.MaxCommentChars, codec.OneLine(e.Parts))
}

// refuseStart tells the issue that a session cannot start because its very
// first state does not fit: its requirements are bounded, so the cause is
// the configuration (.github/bazinga.yml), which the state carries. The
// notice is posted once per cause (its parts); labelling the issue again
// after the cause is fixed starts the session.
func (b *Bot) refuseStart(ctx context.Context, gh GitHub, ref sessionRef, ld loaded, tooLarge *errStateTooLarge, log *slog.Logger) error {
	id := "too-large/start/" + textHash(tooLarge.Parts)
	for _, c := range ld.comments {
		if b.own(c.Author) && codec.HasEffectMarker(c.Body, id) {
			log.Info("the session's first state does not fit; the issue says so already", "err", tooLarge)
			return nil
		}
	}
	text := fmt.Sprintf("⚠️ **Session not started** | its first state would take %d characters, and a GitHub comment holds %d. "+
		"The largest parts: %s. Shorten what is largest (the configuration in `%s`, most likely), then label the issue again.",
		tooLarge.Chars, codec.MaxCommentChars, codec.OneLine(tooLarge.Parts), b.o.ConfigPath)
	if _, err := gh.CreateComment(ctx, ref.repo, ref.issue, text+"\n"+codec.EffectMarker(id)); err != nil {
		return errors.Join(tooLarge, err)
	}
	log.Warn("session not started: its first state does not fit in a comment", "err", tooLarge)
	return nil
}
