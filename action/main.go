// Package action is `bazinga action`, the entry point of the GitHub Action
// (action.yml). It runs inside an Actions job and does one of:
//
//   - agent, gate, validate, publish, land: one step's job, run by package
//     action/stepjob, which does not import the bot;
//   - route: names the session of the orchestrator workflow's event, so
//     that the reconcile job's concurrency group is per session;
//   - reconcile: the Action-only orchestrator. It handles the event at
//     GITHUB_EVENT_PATH with the bot's own code (bot.New, Process, Sweep),
//     acting as github-actions[bot] or, with an App's token, as the App.
package action

import (
	"context"
	"fmt"
	"io"

	"github.com/bazinga-bot/bazinga/action/stepjob"
)

// Deps is what the action needs from outside.
type Deps = stepjob.Deps

// Main is `bazinga action` for the binary: the process environment, the
// default client, logs on stdout.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		switch a {
		case "-h", "--help", "help":
			fmt.Fprint(stdout, stepjob.Usage)
			return 0
		default:
			fmt.Fprintf(stderr, "bazinga action: unexpected argument %q (inputs come from INPUT_* variables)\n\n%s", a, stepjob.Usage)
			return 2
		}
	}
	return Run(ctx, Deps{Stdout: stdout})
}

// Run is `bazinga action`: it reads the inputs, runs the command and
// returns the exit code.
func Run(ctx context.Context, d Deps) int {
	return stepjob.Run(ctx, d, orchestrator{})
}

// orchestrator runs the orchestrator's commands for stepjob.Run.
type orchestrator struct{}

func (orchestrator) Route(j *stepjob.Job) int { return route(j) }

func (orchestrator) Reconcile(ctx context.Context, j *stepjob.Job) int {
	return (&reconciler{Job: j}).reconcile(ctx)
}
