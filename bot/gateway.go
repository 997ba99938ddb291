package bot

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// StepLimits is the session's own record of a step, for bazinga serve's gateway (server.StepRecords): the step
// must be in flight in the session's signed state, and the token carries the session's cost limits.
func (b *Bot) StepLimits(ctx context.Context, installation int64, repo, session, step string) (gateway.Limits, error) {
	r, ok := ghapi.ParseRepo(repo)
	issue, err := strconv.Atoi(session)
	if !ok || err != nil || issue <= 0 {
		return gateway.Limits{}, fmt.Errorf("session %q of %q is not an issue of a repository", session, repo)
	}
	gh, err := b.o.Client(ctx, installation)
	if err != nil {
		return gateway.Limits{}, err
	}
	ld, err := b.load(ctx, gh, sessionRef{inst: installation, repo: r, issue: issue}, 0)
	if err != nil {
		return gateway.Limits{}, fmt.Errorf("reading session %s: %w", session, err)
	}
	if !ld.found {
		return gateway.Limits{}, errors.New("no session on " + repo + "#" + session)
	}
	st := ld.st.Session.Step(step)
	if st == nil || st.State != pipeline.StepInFlight {
		return gateway.Limits{}, fmt.Errorf("step %s is not in flight", step)
	}
	lim := ld.st.Config.Limits
	return gateway.Limits{StepMicros: pipeline.USDMicros(lim.StepCostUSD), SessionMicros: pipeline.USDMicros(lim.SessionCostUSD)}, nil
}

// stepsEnded tells Options.StepEnded of the steps that ended: those whose result or failure events carries, and
// (prev and next set) those in flight in prev and not in next — failed, timed out, cancelled. bazinga serve then
// revokes their gateway tokens, so a process the agent left behind cannot spend in a finished step's name.
func (b *Bot) stepsEnded(ctx context.Context, ref sessionRef, session string, events []pipeline.Event, prev, next *pipeline.Session) {
	if b.o.StepEnded == nil {
		return
	}
	for _, ev := range events {
		if (ev.Kind == pipeline.EventStepResult || ev.Kind == pipeline.EventStepFailed) && ev.Step != "" {
			b.o.StepEnded(ctx, ref.inst, ref.repo.String(), session, ev.Step)
		}
	}
	if prev == nil || next == nil {
		return
	}
	for _, s := range next.Steps {
		if old := prev.Step(s.ID); old != nil && old.State == pipeline.StepInFlight && s.State != pipeline.StepInFlight {
			b.o.StepEnded(ctx, ref.inst, ref.repo.String(), session, s.ID)
		}
	}
}
