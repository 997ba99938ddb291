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

	"github.com/bazinga-bot/bazinga/action/stepjob"
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

// reconciler is one run of reconcile.
type reconciler struct{ *stepjob.Job }

// reconcile is the Action-only orchestrator: the triggering event goes
// through the bot's own code, acting as github-actions[bot] or, with an
// App's token, as the App.
func (j *reconciler) reconcile(ctx context.Context) int {
	eventName, eventPath := j.Event()
	signingKey, previousKeys := j.StateKeys()
	if eventName == "" {
		j.Actions().Errorf("bazinga reconcile: GITHUB_EVENT_NAME is not set: reconcile handles the event that started the workflow")
		j.SetOutputs("", stepjob.StatusFailed, []string{"no event"})
		return 1
	}
	var payload []byte
	if eventName != "schedule" {
		if eventPath == "" {
			j.Actions().Errorf("bazinga reconcile: GITHUB_EVENT_PATH is not set for the %s event", eventName)
			return 1
		}
		b, err := os.ReadFile(eventPath)
		if err != nil {
			return j.Fail("reading the event", err)
		}
		payload = b
	}
	j.Actions().Infof("bazinga: the session state is signed; step jobs verify it with state-public-key %s",
		codec.FormatPublicKey(signingKey.Public().(ed25519.PublicKey)))
	gh := ghapi.New(j.Client())
	b, err := bot.New(bot.Options{
		Client:       func(context.Context, int64) (bot.GitHub, error) { return gh, nil },
		Login:        j.Login(),
		Now:          j.Now,
		SigningKey:   signingKey,
		PreviousKeys: previousKeys,
		Logger:       j.Log(),
		ConfigPath:   j.ConfigPath(),
		Repos: func(context.Context) ([]ghapi.InstalledRepo, error) {
			return []ghapi.InstalledRepo{{Repo: j.Repo()}}, nil
		},
	})
	if err != nil {
		return j.Fail("starting the orchestrator", err)
	}

	if payload == nil {
		return j.sweep(ctx, b)
	}
	var ev eventInfo
	if err := json.Unmarshal(payload, &ev); err != nil {
		return j.Fail("reading the event", err)
	}
	if eventName == "workflow_dispatch" {
		// Dispatched by a step's job with its issue (events a GITHUB_TOKEN
		// makes start no workflow, a dispatch does); by hand without one,
		// a sweep.
		if ev.Inputs.Issue == "" {
			return j.sweep(ctx, b)
		}
		n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(ev.Inputs.Issue), "#"))
		if err != nil || n < 1 {
			j.Actions().Errorf("bazinga reconcile: the workflow_dispatch input issue is %q, not an issue number", ev.Inputs.Issue)
			j.SetOutputs("", stepjob.StatusFailed, []string{"bad issue input"})
			return 1
		}
		j.Actions().Group(fmt.Sprintf("bazinga: session #%d", n))
		err = b.ReconcileIssue(ctx, 0, j.Repo(), n)
		j.Actions().EndGroup()
		if code, ok := j.rateLimited(err); ok {
			return code
		}
		if err != nil {
			j.SetOutputs("", stepjob.StatusFailed, []string{err.Error()})
			return j.Fail(fmt.Sprintf("reconciling session #%d", n), err)
		}
		j.SetOutputs("", stepjob.StatusHandled, nil)
		return 0
	}
	d := bot.Delivery{ID: "run-" + j.Getenv("GITHUB_RUN_ID") + "-" + j.Getenv("GITHUB_RUN_ATTEMPT"), Event: eventName,
		Action: ev.Action, Installation: ev.Installation.ID, Repo: j.Repo().String(), Payload: payload, Received: j.Now()}
	j.LogWith("event", eventName, "action", ev.Action)

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
		j.Actions().Group(fmt.Sprintf("bazinga: catch up session #%d", issue))
		err := b.ReconcileIssue(ctx, 0, j.Repo(), issue)
		j.Actions().EndGroup()
		if err != nil {
			errs = append(errs, err)
		}
	}
	j.Actions().Group("bazinga: " + eventName + " " + ev.Action)
	err = b.Process(ctx, d)
	j.Actions().EndGroup()
	status := stepjob.StatusHandled
	switch {
	case errors.Is(err, bot.ErrIgnored):
		j.Actions().Infof("nothing to do: %v", err)
		status = stepjob.StatusIgnored
	case err != nil:
		errs = append(errs, err)
	}
	if code, ok := j.rateLimited(errors.Join(errs...)); ok {
		return code
	}
	if len(errs) > 0 {
		j.SetOutputs("", stepjob.StatusFailed, []string{errors.Join(errs...).Error()})
		return j.Fail("reconciling "+eventName, errors.Join(errs...))
	}
	j.SetOutputs("", status, nil)
	return 0
}

// sweep is the schedule: every active session gets the results no event
// delivered applied, then a tick (timeouts, lost steps, clarifications,
// the outbox).
func (j *reconciler) sweep(ctx context.Context, b *bot.Bot) int {
	j.Actions().Group("bazinga: sweep " + j.Repo().String())
	defer j.Actions().EndGroup()
	err := b.Sweep(ctx)
	if code, ok := j.rateLimited(err); ok {
		return code
	}
	if err != nil {
		j.SetOutputs("", stepjob.StatusFailed, []string{err.Error()})
		return j.Fail("sweeping", err)
	}
	j.Actions().Infof("swept the active sessions of %s", j.Repo())
	j.SetOutputs("", stepjob.StatusHandled, nil)
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
func (j *reconciler) rateLimited(err error) (int, bool) {
	rl, ok := ghapi.AsRateLimited(err)
	if !ok {
		return 0, false
	}
	msg := rl.Error() + "; the session waits and the first reconcile after the reset resumes it"
	j.Actions().WithFieldsMap(map[string]string{"title": "bazinga: rate limited"}).Warningf("%s", msg)
	j.Log().Warn("rate limited", "err", err, "reset", rl.Reset)
	j.SetOutputs("", stepjob.StatusRateLimited, []string{msg})
	return 0, true
}
