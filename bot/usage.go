package bot

import (
	"context"
	"log/slog"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// refreshCostLimits re-reads limits.session_cost_usd and limits.step_cost_usd
// from .github/bazinga.yml on the base when a human resumes or retries: a
// session paused at its cost limit continues once someone raised the limit
// in the file (issue 13 item 5). Only the cost limits are taken: the rest
// of the configuration stays as the session started with it. A file that
// cannot be read or parsed leaves the limits as they were.
func (b *Bot) refreshCostLimits(ctx context.Context, gh GitHub, ref sessionRef, st *codec.State, events []pipeline.Event, log *slog.Logger) {
	resumed := false
	for _, ev := range events {
		if ev.Kind == pipeline.EventCommand && ev.Command != nil &&
			(ev.Command.Kind == pipeline.CommandResume || ev.Command.Kind == pipeline.CommandRetry) {
			resumed = true
		}
	}
	if !resumed || st.Session.Base == "" {
		return
	}
	cfg, err := b.readConfig(ctx, gh, ref.repo, st.Session.Base)
	if err != nil {
		log.Warn("cost limits not re-read", "err", err)
		return
	}
	old := st.Config.Limits
	st.Config.Limits.SessionCostUSD = cfg.Limits.SessionCostUSD
	st.Config.Limits.StepCostUSD = cfg.Limits.StepCostUSD
	if old != st.Config.Limits {
		log.Info("cost limits re-read", "session_cost_usd", st.Config.Limits.SessionCostUSD, "step_cost_usd", st.Config.Limits.StepCostUSD)
	}
}
