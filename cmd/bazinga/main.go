// Command bazinga is the single binary of the bazinga multi-agent team:
// the GitHub App server, the Action entry point and the local runner.
package main

import (
	"fmt"
	"io"
	"os"
)

// version is stamped at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `bazinga — a GitHub-native multi-agent software team

Usage:
  bazinga <command> [flags]

Commands:
  demo      run a scripted session on a copy of the demo repository
  init      write .github/bazinga.yml for this repository (--action: the Actions workflows too)
  config    print the configuration a run would use, and where each value comes from
  run       run a whole session on a local repository ("requirements" or --issue-file)
  status    show a local session (bazinga status [--repo DIR] [ID])
  serve     run the GitHub App (webhooks, slash commands; configured by BAZINGA_* variables)
  action    run one step inside GitHub Actions (agent | gate | validate, then publish | land; reconcile)
  scripted-agent  an agent that plays a scenario file instead of calling a model:
            bazinga run --agent "bazinga scripted-agent --scenario FILE --state DIR" "…"
  version   print the version
  help      show this text

Run "bazinga <command> -h" for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code so tests can drive it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "bazinga %s\n", version)
		return 0
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "action":
		return runAction(args[1:], stdout, stderr)
	case "run":
		return runRun(args[1:], stdout, stderr)
	case "demo":
		return runDemo(args[1:], stdout, stderr)
	case "status":
		return runStatus(args[1:], stdout, stderr)
	case "init":
		return runInit(args[1:], stdout, stderr)
	case "config":
		return runConfig(args[1:], stdout, stderr)
	case "scripted-agent": // the demo's agent, and a session without a model on your own repository
		return runScriptedAgent(args[1:], stdout, stderr)
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "bazinga: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
