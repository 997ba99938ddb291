package action

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
)

// eventInfo is what reconcile reads of the event payload itself.
type eventInfo struct {
	Action       string `json:"action"`
	Installation struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	// Inputs are a workflow_dispatch's: a step's job dispatches the
	// orchestrator with the step's issue.
	Inputs struct {
		Issue string `json:"issue"`
	} `json:"inputs"`
}

// botLogin is who the orchestrator acts as: the App whose token the
// exchange gave, else github-actions[bot] (the workflow's token). A token
// given as github-token is taken to be the workflow's: the orchestrator's
// identity must not change between runs (it authors the state).
func (j *job) botLogin() string {
	if j.in.exchangeLogin != "" {
		return j.in.exchangeLogin
	}
	return ActionsLogin
}

// reconcile is the Action-only orchestrator: the triggering event goes
// through the bot's own code, acting as github-actions[bot] or, with an
// App's token, as the App.
func (j *job) reconcile(ctx context.Context) int {
	in := j.in
	if in.eventName == "" {
		j.gha.Errorf("bazinga reconcile: GITHUB_EVENT_NAME is not set: reconcile handles the event that started the workflow")
		j.out.set("", StatusFailed, []string{"no event"})
		return 1
	}
	var payload []byte
	if in.eventName != "schedule" {
		if in.eventPath == "" {
			j.gha.Errorf("bazinga reconcile: GITHUB_EVENT_PATH is not set for the %s event", in.eventName)
			return 1
		}
		b, err := os.ReadFile(in.eventPath)
		if err != nil {
			return j.fail("reading the event", err)
		}
		payload = b
	}
	j.gha.Infof("bazinga: the session state is signed; step jobs verify it with state-public-key %s",
		codec.FormatPublicKey(in.signingKey.Public().(ed25519.PublicKey)))
	gh := j.gh
	b, err := bot.New(bot.Options{
		Client:       func(context.Context, int64) (bot.GitHub, error) { return gh, nil },
		Login:        j.botLogin(),
		Now:          j.d.Now,
		SigningKey:   in.signingKey,
		PreviousKeys: in.previousKeys,
		Logger:       j.log,
		ConfigPath:   in.config,
		Repos: func(context.Context) ([]ghapi.InstalledRepo, error) {
			return []ghapi.InstalledRepo{{Repo: in.repo}}, nil
		},
	})
	if err != nil {
		return j.fail("starting the orchestrator", err)
	}

	if payload == nil {
		return j.sweep(ctx, b)
	}
	var ev eventInfo
	if err := json.Unmarshal(payload, &ev); err != nil {
		return j.fail("reading the event", err)
	}
	if in.eventName == "workflow_dispatch" {
		// Dispatched by a step's job with its issue (events a GITHUB_TOKEN
		// makes start no workflow, a dispatch does); by hand without one,
		// a sweep.
		if ev.Inputs.Issue == "" {
			return j.sweep(ctx, b)
		}
		n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(ev.Inputs.Issue), "#"))
		if err != nil || n < 1 {
			j.gha.Errorf("bazinga reconcile: the workflow_dispatch input issue is %q, not an issue number", ev.Inputs.Issue)
			j.out.set("", StatusFailed, []string{"bad issue input"})
			return 1
		}
		j.gha.Group(fmt.Sprintf("bazinga: session #%d", n))
		err = b.ReconcileIssue(ctx, 0, in.repo, n)
		j.gha.EndGroup()
		if code, ok := j.rateLimited(err); ok {
			return code
		}
		if err != nil {
			j.out.set("", StatusFailed, []string{err.Error()})
			return j.fail(fmt.Sprintf("reconciling session #%d", n), err)
		}
		j.out.set("", StatusHandled, nil)
		return 0
	}
	d := bot.Delivery{ID: "run-" + j.d.Getenv("GITHUB_RUN_ID") + "-" + j.d.Getenv("GITHUB_RUN_ATTEMPT"), Event: in.eventName,
		Action: ev.Action, Installation: ev.Installation.ID, Repo: in.repo.String(), Payload: payload, Received: j.d.Now()}
	j.log = j.log.With("event", in.eventName, "action", ev.Action)

	var errs []error
	// Whatever woke this run, the session first catches up on everything
	// GitHub shows: logged results and failure reports, failed step runs,
	// approvals, required checks (issue 22). Runs of one session share a
	// concurrency group that keeps one pending run, a newer one replacing
	// (cancelling) it: the event of a cancelled run is never delivered, so
	// no run may rely on its own event to learn what happened before it.
	// Results go first: a failure that follows a result is then no longer
	// in flight.
	if issue := sessionIssue(b.Key(d)); issue > 0 {
		j.gha.Group(fmt.Sprintf("bazinga: catch up session #%d", issue))
		err := b.ReconcileIssue(ctx, 0, in.repo, issue)
		j.gha.EndGroup()
		if err != nil {
			errs = append(errs, err)
		}
	}
	j.gha.Group("bazinga: " + in.eventName + " " + ev.Action)
	err = b.Process(ctx, d)
	j.gha.EndGroup()
	status := StatusHandled
	switch {
	case errors.Is(err, bot.ErrIgnored):
		j.gha.Infof("nothing to do: %v", err)
		status = StatusIgnored
	case err != nil:
		errs = append(errs, err)
	}
	if code, ok := j.rateLimited(errors.Join(errs...)); ok {
		return code
	}
	if len(errs) > 0 {
		j.out.set("", StatusFailed, []string{errors.Join(errs...).Error()})
		return j.fail("reconciling "+in.eventName, errors.Join(errs...))
	}
	j.out.set("", status, nil)
	return 0
}

// sweep is the schedule: every active session gets the results no event
// delivered applied, then a tick (timeouts, lost steps, clarifications,
// the outbox).
func (j *job) sweep(ctx context.Context, b *bot.Bot) int {
	j.gha.Group("bazinga: sweep " + j.in.repo.String())
	defer j.gha.EndGroup()
	err := b.Sweep(ctx)
	if code, ok := j.rateLimited(err); ok {
		return code
	}
	if err != nil {
		j.out.set("", StatusFailed, []string{err.Error()})
		return j.fail("sweeping", err)
	}
	j.gha.Infof("swept the active sessions of %s", j.in.repo)
	j.out.set("", StatusHandled, nil)
	return 0
}

// sessionIssue is the issue of a session key ("owner/name#12"), 0 for
// none (an event of no session, or of a step run's job).
func sessionIssue(key string) int {
	_, n, ok := strings.Cut(key, "#")
	if !ok {
		return 0
	}
	issue, err := strconv.Atoi(n)
	if err != nil || issue < 1 {
		return 0
	}
	return issue
}

// rateLimited reports a reconcile stopped by a GitHub rate limit whose
// reset is far: not a failure (the bot recorded the wait on the session,
// and the first reconcile after the reset resumes it), so the job ends
// well with a warning naming the limit and its reset, instead of a red run
// that invites a re-run burning what the limit has left.
func (j *job) rateLimited(err error) (int, bool) {
	rl, ok := ghapi.AsRateLimited(err)
	if !ok {
		return 0, false
	}
	msg := rl.Error() + "; the session waits and the first reconcile after the reset resumes it"
	j.gha.WithFieldsMap(map[string]string{"title": "bazinga: rate limited"}).Warningf("%s", msg)
	j.log.Warn("rate limited", "err", err, "reset", rl.Reset)
	j.out.set("", StatusRateLimited, []string{msg})
	return 0, true
}
