package bot

import (
	"context"
	"errors"
	"strings"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Resolving the threads of findings a later review no longer reports
// (issue 26). The engine decides (pipeline.Session.ThreadsToResolve); the
// bot reads the facts from GitHub and carries the decision out. Only
// threads the bot's own reviews opened are candidates: the review is
// found by its effect marker among the reviews the bot authored, and a
// thread by the review its first comment came with. GitHub resolves a
// thread only through GraphQL.

// resolveEffect asks for the threads review step st resolves on the group PR.
func resolveEffect(st pipeline.Step, pr int) codec.PendingEffect {
	return codec.PendingEffect{ID: "resolve/" + st.ID, Kind: codec.EffectResolve, Step: st.ID, Group: st.Group, Number: pr}
}

// reviewMarkerStep reads the step of a review effect's marker in a body.
func reviewMarkerStep(body string) (string, bool) {
	const open = codec.EffectPrefix + "review/"
	i := strings.LastIndex(body, open)
	if i < 0 {
		return "", false
	}
	rest := body[i+len(open):]
	j := strings.Index(rest, codec.BlockEnd)
	if j <= 0 {
		return "", false
	}
	return rest[:j], true
}

// threadsToResolve reads the group PR's threads of the bot's reviews and
// returns those the effect's review resolves and the bot may resolve.
func (x *executor) threadsToResolve(ctx context.Context, p codec.PendingEffect) ([]string, error) {
	s := x.st.Session
	if !s.MayResolveThreads(p.Step) {
		return nil, nil // pruned, or nothing placed on lines before it
	}
	reviews, err := x.gh.ListReviews(ctx, x.ref.repo, p.Number)
	if err != nil {
		return nil, err
	}
	origin := map[int64]string{}
	for _, r := range reviews {
		if !x.b.own(r.Author) {
			continue
		}
		if step, ok := reviewMarkerStep(r.Body); ok {
			origin[r.ID] = step
		}
	}
	if len(origin) == 0 {
		return nil, nil
	}
	threads, err := x.gh.ListReviewThreads(ctx, x.ref.repo, p.Number)
	if err != nil {
		return nil, err
	}
	var fts []pipeline.FindingThread
	for _, t := range threads {
		step, ok := origin[t.ReviewID]
		if !ok || !t.CanResolve {
			continue // not the bot's, or GitHub would refuse (viewerCanResolve)
		}
		line := t.Line
		if t.StartLine > 0 {
			line = t.StartLine // a range's comment: the finding's first line
		}
		fts = append(fts, pipeline.FindingThread{ID: t.ID, Step: step, File: t.Path, Line: line, Resolved: t.Resolved})
	}
	return s.ThreadsToResolve(p.Step, fts), nil
}

// resolveThreads carries out a resolve effect.
func (x *executor) resolveThreads(ctx context.Context, p codec.PendingEffect) error {
	ids, err := x.threadsToResolve(ctx, p)
	if err != nil {
		return x.threadErr(p, err)
	}
	for _, id := range ids {
		if err := x.gh.ResolveReviewThread(ctx, id); err != nil {
			return x.threadErr(p, err)
		}
		x.log.Info("resolved a review thread", "step", p.Step, "thread", id, "pr", p.Number)
	}
	return nil
}

// resolveDone reports whether no thread is left for the effect to resolve.
func (x *executor) resolveDone(ctx context.Context, p codec.PendingEffect) (bool, error) {
	ids, err := x.threadsToResolve(ctx, p)
	switch {
	case err == nil:
		return len(ids) == 0, nil
	case refusedForGood(err):
		return true, nil
	case graphqlLimited(err):
		return false, nil // kept; tried again once GraphQL's points are back
	}
	return false, err
}

// refusedForGood: GitHub refused the identity (FORBIDDEN) or found no PR
// or thread. Asking again changes nothing.
func refusedForGood(err error) bool {
	return ghapi.IsGraphQLForbidden(err) || errors.Is(err, ghapi.ErrNotFound)
}

// graphqlLimited: GraphQL's own points are spent. REST's are not, so the
// session goes on; the effect waits in the outbox.
func graphqlLimited(err error) bool {
	rl, ok := ghapi.AsRateLimited(err)
	return ok && rl.Resource == "graphql" && !rl.Secondary
}

// threadErr keeps a thread left open, which is cosmetic, from holding the
// session: a refusal for good is logged and the effect counts as done; an
// exhausted GraphQL limit is logged and the effect waits in the outbox
// without failing the reconcile (which would hold the whole session for
// REST's sake). Anything else (a secondary limit, a network error) fails
// as any effect does, and is tried again.
func (x *executor) threadErr(p codec.PendingEffect, err error) error {
	switch {
	case refusedForGood(err):
		x.log.Warn("review threads left open: GitHub refused", "step", p.Step, "pr", p.Number, "err", err)
		return nil
	case graphqlLimited(err):
		x.log.Info("review threads wait for GraphQL's rate limit", "step", p.Step, "pr", p.Number, "err", err)
		return nil
	}
	return err
}
