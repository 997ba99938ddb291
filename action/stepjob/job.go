// Package stepjob runs the step jobs of `bazinga action` and the job
// runtime every command of it shares. It never imports package bot: a step
// job reaches GitHub only through the small interface in github.go, and the
// orchestrator's commands, which are the bot's code, come in from package
// action through Orchestrator (TestStepJobsDoNotImportBot holds this).
//
// The step jobs:
//
//   - agent, gate, validate: the unprivileged half of one dispatched step,
//     in a job whose token can only read. The job reads the session from the
//     issue's tracking comment, runs the step with stepexec.Executor in a
//     working copy cloned with that token (the agent and the harness's test
//     check, the merge's test gate, or validation) and writes a hand-over
//     (handover.go): the result, the commit it started from and its change
//     as data, or the merge it tested. It pushes and posts nothing.
//   - publish, land: the privileged half, in a job that holds the write
//     token and runs no repository code. It reads the hand-over as
//     untrusted data, checks it against the session and the branches as
//     they are now, claims the step by creating refs/bazinga/claims/<step
//     id> (a second publisher finds the ref and stops: "duplicate"),
//     rebuilds and pushes the commit with compare-and-set (land: recomputes
//     the tested merge and pushes it, or merges the pull request at the
//     tested head), and posts the result comment on the group PR (on the
//     issue for session-level steps). A step that ended without a result
//     fails the job; the bot sees the run complete with failure and retries.
//
// The runtime: the inputs (every command's), the token exchange, outputs,
// masking, annotations, log groups and the job summary, through
// github.com/sethvargo/go-githubactions. Everything the package touches
// outside itself comes in through Deps, so tests drive it with a fake
// environment and the fake GitHub.
package stepjob

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/sethvargo/go-githubactions"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/secretstrength"
)

// Commands of `bazinga action`.
const (
	CommandAgent     = "agent"    // unprivileged: an agent step
	CommandGate      = "gate"     // unprivileged: a merge step's test gate
	CommandValidate  = "validate" // unprivileged: a validation step
	CommandPublish   = "publish"  // privileged: publishes an agent or validation step
	CommandLand      = "land"     // privileged: lands a merge the gate tested
	CommandReconcile = "reconcile"
	// CommandRoute names the session of the orchestrator's event (its
	// concurrency group), or none: the reconcile is not needed.
	CommandRoute = "route"
	// CommandMerge was the one-job merge; it is now gate + land.
	CommandMerge = "merge"
)

// Outputs' status values besides a step's own status.
const (
	StatusDuplicate = "duplicate" // another job claimed the step
	StatusSkipped   = "skipped"   // the step is not in flight: nothing done
	StatusFailed    = "failed"    // the step ended without a result
	StatusHandled   = "handled"   // reconcile handled its event
	StatusIgnored   = "ignored"   // reconcile: the event needs no work
	// StatusRateLimited: reconcile stopped for a GitHub rate limit; the
	// session waits and the first reconcile after the reset resumes it.
	StatusRateLimited = "rate-limited"
)

// ActionsLogin is the identity of a workflow's GITHUB_TOKEN: the author of
// everything a job writes, and the bot's login in Action-only mode.
const ActionsLogin = "github-actions[bot]"

// EnvStateKey names the secret the Action-only orchestrator signs the
// session state with. Only the orchestrator's job may see it: a job that
// could sign state could choose its own configuration.
const EnvStateKey = "BAZINGA_STATE_KEY"

// DefaultOrchestratorWorkflow is the Action-only orchestrator's workflow
// file (examples/workflows/bazinga.yml).
const DefaultOrchestratorWorkflow = "bazinga.yml"

// EnvStatePublicKey names the variable step jobs may take the state public
// key from when the input state-public-key is empty.
const EnvStatePublicKey = "BAZINGA_STATE_PUBLIC_KEY"

// EnvStatePreviousPublicKeys lists, comma-separated, the public keys of
// earlier state keys whose states the orchestrator still reads while the
// key is rotated.
const EnvStatePreviousPublicKeys = "BAZINGA_STATE_PREVIOUS_PUBLIC_KEYS"

// ClientFunc returns a go-github client that authenticates with token
// against the REST API at apiURL (GITHUB_API_URL).
type ClientFunc func(ctx context.Context, token, apiURL string) (*github.Client, error)

// Deps is what the action needs from outside.
type Deps struct {
	// Getenv reads the environment (inputs are INPUT_* variables).
	Getenv func(string) string
	// Stdout receives workflow commands (annotations, groups, masks) and
	// the log lines a person reads in the job's log.
	Stdout io.Writer
	// Logger receives structured diagnostics (default: text on Stdout).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Client builds the API client (default NewClient).
	Client ClientFunc
	// HTTPClient requests the job's OIDC token and exchanges it (default:
	// a 30 s timeout).
	HTTPClient *http.Client
}

func (d Deps) withDefaults() Deps {
	if d.Getenv == nil {
		d.Getenv = os.Getenv
	}
	if d.Stdout == nil {
		d.Stdout = os.Stdout
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.NewTextHandler(d.Stdout, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.HTTPClient == nil {
		d.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if d.Client == nil {
		getenv := d.Getenv
		d.Client = func(ctx context.Context, token, apiURL string) (*github.Client, error) {
			return NewClient(token, apiURL, transportOptions(getenv("INPUT_COMMAND")))
		}
	}
	return d
}

// transportOptions tunes the client for a command. The privileged jobs
// that publish a finished step (publish, land) wait for their token's
// rate-limit reset however far it is (a primary window is at most an
// hour, and a job may run for hours): the step's work is done and only
// they can post it, so waiting costs runner minutes where failing would
// redo the step. The other commands stop at once on a far limit: the
// orchestrator pauses the session, a step job has lost nothing yet.
func transportOptions(command string) ghapi.TransportOptions {
	switch strings.TrimSpace(command) {
	case CommandPublish, CommandLand:
		return ghapi.TransportOptions{MaxRateLimitWait: time.Hour + time.Minute}
	}
	return ghapi.TransportOptions{}
}

// NewClient returns a go-github client for token at apiURL (empty or
// https://api.github.com: github.com; otherwise GitHub Enterprise Server
// style URLs, as GITHUB_API_URL gives them), over the bot's transport
// chain: ETag cache, rate-limit backoff and retries.
func NewClient(token, apiURL string, opts ghapi.TransportOptions) (*github.Client, error) {
	if opts.Identity == "" {
		// Names the limited identity in a rate-limit pause; the token is
		// the github-token input, by default the job's GITHUB_TOKEN.
		opts.Identity = "the workflow token"
	}
	return ghapi.NewTokenClient(token, apiURL, opts)
}

// inputs are the action's inputs and the job's context.
type inputs struct {
	command, step, token, agentCommand, config, workDir string
	handover                                            string
	repo                                                ghapi.RepoRef
	apiURL, serverURL, runURL                           string
	eventName, eventPath                                string
	// refName is the branch the job's workflow run is on (the session's
	// base, which the orchestrator dispatched it on).
	refName string
	// signingKey signs the state (reconcile); publicKey verifies it and
	// orchestrator is the only author whose state is read (step jobs).
	signingKey ed25519.PrivateKey
	publicKey  ed25519.PublicKey
	// previousKeys are earlier public keys still accepted during a
	// rotation (after the first key of state-public-key, or from
	// BAZINGA_STATE_PREVIOUS_PUBLIC_KEYS for the orchestrator).
	previousKeys []ed25519.PublicKey
	orchestrator string
	// orchestratorWorkflow is the Action-only orchestrator's workflow file,
	// which a privileged step job dispatches after posting (its comments,
	// made with a GITHUB_TOKEN, start no workflow); "" in App mode.
	orchestratorWorkflow string
	// exchangeURL is bazinga serve's token exchange (privileged jobs only);
	// exchangeAudience the OIDC token's audience; exchangeLogin the App's
	// login the exchange reported.
	exchangeURL, exchangeAudience, exchangeLogin string
	// gatewayURL is bazinga serve's model gateway (agent jobs in App mode).
	gatewayURL string
}

// inputError is a wrong or missing input: the step fails with the message.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// input reads an input by its name with dashes, accepting underscores too
// (composite actions set INPUT_* themselves, in either spelling).
func input(gha *githubactions.Action, name string) string {
	if v := gha.GetInput(name); v != "" {
		return v
	}
	return gha.GetInput(strings.ReplaceAll(name, "-", "_"))
}

func readInputs(gha *githubactions.Action, getenv func(string) string) (inputs, error) {
	in := inputs{
		command:      strings.ToLower(input(gha, "command")),
		step:         input(gha, "step"),
		token:        input(gha, "github-token"),
		agentCommand: input(gha, "agent-command"),
		config:       input(gha, "config"),
		workDir:      input(gha, "working-directory"),
		handover:     input(gha, "handover"),
		apiURL:       strings.TrimSpace(getenv("GITHUB_API_URL")),
		serverURL:    strings.TrimRight(strings.TrimSpace(getenv("GITHUB_SERVER_URL")), "/"),
		eventName:    strings.TrimSpace(getenv("GITHUB_EVENT_NAME")),
		eventPath:    strings.TrimSpace(getenv("GITHUB_EVENT_PATH")),
		refName:      strings.TrimSpace(getenv("GITHUB_REF_NAME")),
	}
	if in.token != "" {
		gha.AddMask(in.token)
	}
	var problems []string
	in.orchestrator = strings.TrimSpace(input(gha, "orchestrator"))
	if in.orchestrator == "" {
		in.orchestrator = ActionsLogin
	}
	in.orchestratorWorkflow = strings.TrimSpace(input(gha, "orchestrator-workflow"))
	if in.orchestratorWorkflow == "" && strings.EqualFold(in.orchestrator, ActionsLogin) {
		in.orchestratorWorkflow = DefaultOrchestratorWorkflow
	}
	if strings.EqualFold(in.orchestratorWorkflow, "none") {
		in.orchestratorWorkflow = ""
	}
	if in.command == CommandReconcile {
		k := getenv(EnvStateKey)
		if strings.TrimSpace(k) == "" {
			problems = append(problems, "the secret "+EnvStateKey+" is not set: the Action-only orchestrator signs the session state with it; "+
				"add a repository secret "+EnvStateKey+" ("+secretstrength.Advice+", then `gh secret set "+EnvStateKey+"`) and pass it as `env: "+EnvStateKey+": ${{ secrets."+EnvStateKey+" }}` to the orchestrator's job only")
		} else if gha.AddMask(k); secretstrength.Check(k) != nil {
			// Its public key is printed in every job's log: a guessable
			// secret would let anyone sign states offline.
			problems = append(problems, "the secret "+EnvStateKey+" is weak ("+secretstrength.Check(k).Error()+"): the state's public key is published, so it can be guessed offline; "+
				"replace it: "+secretstrength.Advice+", then `gh secret set "+EnvStateKey+"`")
		} else {
			in.signingKey = codec.SigningKeyFromSecret([]byte(strings.TrimSpace(k)))
		}
		if v := strings.TrimSpace(getenv(EnvStatePreviousPublicKeys)); v != "" {
			keys, err := codec.ParsePublicKeys(v)
			if err != nil {
				problems = append(problems, EnvStatePreviousPublicKeys+": "+err.Error())
			}
			in.previousKeys = keys
		}
	} else if in.command != "" && in.command != CommandRoute {
		pk := input(gha, "state-public-key")
		if pk == "" {
			pk = getenv(EnvStatePublicKey)
		}
		switch keys, err := codec.ParsePublicKeys(pk); {
		case strings.TrimSpace(pk) == "":
			problems = append(problems, "input `state-public-key` is empty: step jobs read the session state only when it is signed by the orchestrator; "+
				"pass the public key `bazinga serve` logs (App) or the orchestrator job prints (Action-only), e.g. `state-public-key: ${{ vars."+EnvStatePublicKey+" }}`")
		case err != nil:
			problems = append(problems, "input `state-public-key`: "+err.Error())
		default:
			// The first key is the current one; the others are accepted
			// while the state key is rotated.
			in.publicKey, in.previousKeys = keys[0], keys[1:]
		}
	}
	switch in.command {
	case CommandAgent, CommandGate, CommandValidate, CommandPublish, CommandLand, CommandReconcile, CommandRoute:
	case CommandMerge:
		problems = append(problems, "command `merge` is now two jobs: `gate` (unprivileged: runs the tests) then `land` (privileged: pushes what was tested); see examples/workflows/bazinga-agent.yml")
	case "":
		problems = append(problems, "input `command` is required: agent, gate, validate, publish, land or reconcile")
	default:
		problems = append(problems, fmt.Sprintf("input `command` is %q; want agent, gate, validate, publish, land or reconcile", in.command))
	}
	problems = append(problems, readExchangeInputs(gha, getenv, &in)...)
	problems = append(problems, readGatewayInputs(gha, getenv, &in)...)
	if in.token == "" && in.exchangeURL == "" && in.command != CommandRoute {
		problems = append(problems, "input `github-token` is empty; pass `github-token: ${{ github.token }}` (the default) or a token with contents, issues and pull-requests write")
	}
	full := strings.TrimSpace(getenv("GITHUB_REPOSITORY"))
	repo, ok := ghapi.ParseRepo(full)
	switch {
	case full == "":
		problems = append(problems, "GITHUB_REPOSITORY is not set: bazinga action runs inside a GitHub Actions job")
	case !ok:
		problems = append(problems, fmt.Sprintf("GITHUB_REPOSITORY is %q, not owner/name", full))
	}
	// The repository's id (documented among the default variables) names
	// the session's repository across renames and transfers.
	if id, err := strconv.ParseInt(strings.TrimSpace(getenv("GITHUB_REPOSITORY_ID")), 10, 64); err == nil && id > 0 {
		repo.ID = id
	}
	in.repo = repo
	if in.command != CommandReconcile && in.command != CommandRoute && in.command != CommandMerge && in.command != "" {
		switch ref, ok := codec.ParseStepID(in.step); {
		case in.step == "":
			problems = append(problems, "input `step` is required for command "+in.command+": the step id <issue>/<group>/<role>/<n> (the workflow_dispatch input)")
		case !ok:
			problems = append(problems, fmt.Sprintf("input `step` is %q, not a step id <issue>/<group>/<role>/<n>", in.step))
		default:
			want, wantPriv := commandOf(ref), privilegedOf(ref)
			if in.command != want && in.command != wantPriv {
				problems = append(problems, fmt.Sprintf("step %s is a %s step; run it with `command: %s` then `command: %s`, not %s", in.step, ref.Role, want, wantPriv, in.command))
			}
		}
	}
	if in.serverURL == "" {
		in.serverURL = "https://github.com"
	}
	if in.apiURL == "" {
		in.apiURL = "https://api.github.com"
	}
	if in.config == "" {
		in.config = ".github/bazinga.yml"
	}
	if id := strings.TrimSpace(getenv("GITHUB_RUN_ID")); id != "" && ok {
		in.runURL = in.serverURL + "/" + repo.String() + "/actions/runs/" + id
	}
	if in.workDir == "" {
		in.workDir = getenv("RUNNER_TEMP")
	}
	if in.handover == "" && in.command != CommandReconcile && in.command != CommandRoute {
		if tmp := getenv("RUNNER_TEMP"); tmp != "" {
			in.handover = filepath.Join(tmp, "bazinga-handover")
		} else {
			problems = append(problems, "input `handover` is empty and RUNNER_TEMP is not set: name the hand-over directory")
		}
	}
	if len(problems) > 0 {
		return in, &inputError{msg: strings.Join(problems, "; ")}
	}
	return in, nil
}

// Orchestrator runs the orchestrator's commands, route and reconcile.
// Package action gives it: they are the bot's code, which the step jobs do
// not import.
type Orchestrator interface {
	// Route names the session of the job's event; it has no token.
	Route(j *Job) int
	// Reconcile handles the job's event with the bot.
	Reconcile(ctx context.Context, j *Job) int
}

// Run is `bazinga action`: it reads the inputs, runs the command (the
// orchestrator's through o) and returns the exit code.
func Run(ctx context.Context, d Deps, o Orchestrator) (code int) {
	d = d.withDefaults()
	gha := githubactions.New(githubactions.WithGetenv(d.Getenv), githubactions.WithWriter(d.Stdout))
	out := &outputs{gha: gha, getenv: d.Getenv, log: d.Logger}
	defer func() {
		if r := recover(); r != nil {
			gha.Errorf("bazinga action: internal error: %v", r)
			code = 1
		}
	}()
	in, err := readInputs(gha, d.Getenv)
	if err != nil {
		gha.WithFieldsMap(map[string]string{"title": "bazinga: bad input"}).Errorf("%s", err.Error())
		out.set(in.step, StatusFailed, []string{err.Error()})
		return 1
	}
	if in.command == CommandRoute {
		return o.Route(&Job{j: &job{d: d, gha: gha, out: out, in: in, log: d.Logger.With("command", in.command)}})
	}
	if !privileged(in.command) && d.Getenv(EnvIDTokenRequestToken) != "" && in.gatewayURL == "" {
		// The agent can mint this job's OIDC token; a token exchange that
		// allows this workflow would give it the App's write token.
		gha.Warningf("bazinga %s: this job has `id-token: write`; the code it runs can request the job's OIDC token. "+
			"If bazinga serve's token exchange allows this workflow, remove `id-token: write` from this job, or require an environment "+
			"(BAZINGA_TOKEN_ENVIRONMENT) that only the privileged jobs use", in.command)
	}
	if in.exchangeURL != "" {
		x, err := exchangeToken(ctx, d.HTTPClient, gha, d.Getenv, in)
		if err != nil {
			gha.WithFieldsMap(map[string]string{"title": "bazinga: token exchange"}).Errorf("%s", err.Error())
			out.set(in.step, StatusFailed, []string{err.Error()})
			return 1
		}
		in.token, in.exchangeLogin = x.Token, x.Login
		gha.Infof("bazinga: acting as %s with an App token for %s (expires %s)", cmp.Or(x.Login, "the App"), in.repo, x.ExpiresAt.Format(time.RFC3339))
	}
	client, err := d.Client(ctx, in.token, in.apiURL)
	if err != nil {
		gha.Errorf("bazinga action: %v", err)
		return 1
	}
	j := &job{d: d, gha: gha, out: out, in: in, client: client, gh: ghapi.New(client), log: d.Logger.With("command", in.command)}
	switch in.command {
	case CommandReconcile:
		return o.Reconcile(ctx, &Job{j: j})
	case CommandPublish, CommandLand:
		return j.reportedFailure(ctx, j.publish(ctx))
	}
	return j.handedOverFailure(j.runStep(ctx))
}

// handedOverFailure makes sure an unprivileged job that failed hands its
// failure over: the privileged job then records it on GitHub and, in
// Action-only mode, wakes the orchestrator, so the step is sent again at
// once instead of when the schedule notices (issue 28). A hand-over the
// job wrote itself is kept.
func (j *job) handedOverFailure(code int) int {
	if code == 0 || j.in.handover == "" || j.lastFail == "" {
		return code
	}
	if _, err := os.Stat(filepath.Join(j.in.handover, HandOverManifest)); err == nil {
		return code
	}
	ref, _ := codec.ParseStepID(j.in.step)
	h := HandOver{Step: j.in.step, Command: j.in.command, Outcome: OutcomeFailure,
		Failure: &codec.FailureRecord{Step: j.in.step, Role: ref.Role, Group: ref.Group, Reason: "the " + j.in.command + " job failed: " + j.lastFail}}
	if err := writeHandOver(j.in.handover, h, nil); err != nil {
		j.gha.Warningf("bazinga: could not hand the failure over: %v", err)
	}
	return code
}

// job is one run of the action.
type job struct {
	d      Deps
	gha    *githubactions.Action
	out    *outputs
	in     inputs
	client *github.Client
	gh     gitHub
	log    *slog.Logger
	// lastFail is the last failure the job reported (fail).
	lastFail string
	// comments are the comments the job listed, by issue or PR number.
	comments map[int][]ghapi.Comment
	// posted: the job posted what it did (a result or a failure) and woke
	// the orchestrator; a privileged job that fails without it posts its
	// failure at the end (reportedFailure).
	posted bool
}

// fail reports err as an error annotation, naming a missing permission
// when GitHub refused the token, and returns exit code 1.
func (j *job) fail(what string, err error) int {
	msg := what + ": " + err.Error()
	if p, ok := MissingPermission(err); ok {
		msg = what + ": " + p
	}
	j.gha.WithFieldsMap(map[string]string{"title": "bazinga " + j.in.command}).Errorf("%s", msg)
	j.log.Error(what, "err", err)
	j.lastFail = msg
	return 1
}

// outputs writes the action's outputs, tolerating a runner without
// GITHUB_OUTPUT (a local run), where they are only logged.
type outputs struct {
	gha    *githubactions.Action
	getenv func(string) string
	log    *slog.Logger
}

func (o *outputs) set(step, status string, summary []string) {
	o.write("step", step)
	o.write("status", status)
	o.write("summary", strings.Join(summary, "\n"))
}

func (o *outputs) write(k, v string) {
	if o.getenv("GITHUB_OUTPUT") == "" {
		o.log.Debug("output", "name", k, "value", v)
		return
	}
	o.gha.SetOutput(k, v)
}

func (o *outputs) summary(md string) {
	if o.getenv("GITHUB_STEP_SUMMARY") == "" {
		return
	}
	o.gha.AddStepSummary(md)
}

// MissingPermission explains a 403 from GitHub that names the permission
// the token lacks (X-Accepted-GitHub-Permissions), e.g. "the token lacks
// contents: write; add `permissions: contents: write` to the job".
func MissingPermission(err error) (string, bool) {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusForbidden {
		return "", false
	}
	accepted := er.Response.Header.Get("X-Accepted-GitHub-Permissions")
	if accepted == "" {
		if strings.Contains(er.Message, "Resource not accessible by integration") {
			return "the token lacks a permission this call needs (" + er.Message + "); check the job's `permissions:`", true
		}
		return "", false
	}
	var needs, yaml []string
	for _, alt := range strings.Split(accepted, ";") {
		name, level, ok := strings.Cut(strings.TrimSpace(alt), "=")
		if !ok || name == "" {
			continue
		}
		needs = append(needs, name+": "+level)
		yaml = append(yaml, strings.ReplaceAll(name, "_", "-")+": "+level)
	}
	if len(needs) == 0 {
		return "", false
	}
	// Alternatives: any one of them is enough; suggest the first.
	return fmt.Sprintf("the token lacks %s; add `permissions: %s` to the job", strings.Join(needs, " or "), yaml[0]), true
}
