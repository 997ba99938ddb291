package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// replyOnce posts body on number as delivery's reply (help, "no session
// here", a bad configuration), once. A delivery can run twice: the durable
// queue runs it again when the process died after its GitHub writes and
// before the run was recorded (GitHub's writes cannot share the queue's
// transaction), and GitHub's redelivery keeps the delivery's id. So the
// reply carries a marker of the delivery and of its text, and a run that
// finds it posted does nothing. The text is in the key so that a different
// reply to the same delivery (the configuration fixed and broken otherwise
// between the runs) is still posted.
func (b *Bot) replyOnce(ctx context.Context, gh GitHub, repo ghapi.RepoRef, number int, delivery, body string) error {
	if !markable(delivery) {
		_, err := gh.CreateComment(ctx, repo, number, body)
		return err
	}
	sum := sha256.Sum256([]byte(body))
	marker := codec.EffectMarker("reply/" + delivery + "/" + hex.EncodeToString(sum[:6]))
	return b.noteOnce(ctx, gh, repo, number, marker, body+"\n"+marker)
}

// markable reports whether a delivery id can go in a marker as it is: the
// header is not covered by the webhook's signature, so only ids of GitHub's
// shape (a GUID; tests' and the sweep's names) are trusted into a comment.
func markable(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// applied turns a command delivery that an earlier run already applied
// into a catch-up: the run after a kill (see replyOnce) must not apply
// "/bazinga stop", "approve" or "answer" again, nor answer "status" twice.
// A run that applied a delivery wrote the state with the delivery's comment
// in the outbox, then posted the comment, whose marker names the delivery
// (comment/<session>/<rev>/<delivery>): either the state's outbox or the
// thread shows it. The catch-up still reconciles, so an outbox the kill
// left unfinished is carried out now rather than at the next sweep.
func (b *Bot) applied(ctx context.Context, gh GitHub, ref sessionRef, ld loaded, in input) (input, error) {
	if !in.command || !ld.found || !markable(in.delivery) || in.delivery == "sweep" {
		return in, nil
	}
	session := strconv.Itoa(ref.issue)
	catchUp := input{delivery: in.delivery, replyTo: in.replyTo, labels: in.labels,
		events: []pipeline.Event{pipeline.Tick(session)}}
	prefix, suffix := "comment/"+session+"/", "/"+in.delivery
	for _, p := range ld.st.Pending {
		if strings.HasPrefix(p.ID, prefix) && strings.HasSuffix(p.ID, suffix) {
			b.log.Info("delivery already applied (its comment is in the outbox): catching up", "delivery", in.delivery, "issue", ref.issue)
			return catchUp, nil
		}
	}
	comments := ld.comments
	if n := replyNumber(ref, in); n != ref.issue {
		cs, err := gh.ListComments(ctx, ref.repo, n)
		if err != nil {
			return in, fmt.Errorf("reading #%d for this delivery's reply: %w", n, err)
		}
		comments = cs
	}
	for _, c := range comments {
		if b.own(c.Author) && markedFor(c.Body, codec.EffectPrefix+prefix, suffix+codec.BlockEnd) {
			b.log.Info("delivery already applied (its comment is posted): catching up", "delivery", in.delivery, "issue", ref.issue, "comment", c.ID)
			return catchUp, nil
		}
	}
	return in, nil
}

// markedFor reports whether body has a marker that starts with start and
// ends with end, with a revision number between them.
func markedFor(body, start, end string) bool {
	for {
		i := strings.Index(body, start)
		if i < 0 {
			return false
		}
		body = body[i+len(start):]
		rev, rest, ok := strings.Cut(body, "/")
		if _, err := strconv.Atoi(rev); ok && err == nil && strings.HasPrefix("/"+rest, end) {
			return true
		}
	}
}
