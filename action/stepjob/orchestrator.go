package stepjob

import (
	"crypto/ed25519"
	"log/slog"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/sethvargo/go-githubactions"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// Job is a run of `bazinga action` as the orchestrator's commands (route,
// reconcile) see it: the job's inputs, log and outputs, and its client.
type Job struct{ j *job }

// Actions writes workflow commands: annotations, log groups, masks.
func (j *Job) Actions() *githubactions.Action { return j.j.gha }

// Log is the job's structured log.
func (j *Job) Log() *slog.Logger { return j.j.log }

// LogWith adds attributes to the job's log.
func (j *Job) LogWith(args ...any) { j.j.log = j.j.log.With(args...) }

// Now reads the job's clock.
func (j *Job) Now() time.Time { return j.j.d.Now() }

// Getenv reads the job's environment.
func (j *Job) Getenv(key string) string { return j.j.d.Getenv(key) }

// Client is the job's API client; nil for route, which has no token.
func (j *Job) Client() *github.Client { return j.j.client }

// Event is the name of the event that started the workflow and the path of
// its payload (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH).
func (j *Job) Event() (name, path string) { return j.j.in.eventName, j.j.in.eventPath }

// Repo is the job's repository.
func (j *Job) Repo() ghapi.RepoRef { return j.j.in.repo }

// ConfigPath is the repository's configuration file (input config).
func (j *Job) ConfigPath() string { return j.j.in.config }

// StateKeys are the key the orchestrator signs the session state with
// (EnvStateKey) and the earlier public keys it still reads.
func (j *Job) StateKeys() (ed25519.PrivateKey, []ed25519.PublicKey) {
	return j.j.in.signingKey, j.j.in.previousKeys
}

// Login is who the orchestrator acts as: the App whose token the exchange
// gave, else github-actions[bot] (the workflow's token). A token given as
// github-token is taken to be the workflow's: the orchestrator's identity
// must not change between runs (it authors the state).
func (j *Job) Login() string {
	if j.j.in.exchangeLogin != "" {
		return j.j.in.exchangeLogin
	}
	return ActionsLogin
}

// SetOutputs writes the outputs step, status and summary.
func (j *Job) SetOutputs(step, status string, summary []string) { j.j.out.set(step, status, summary) }

// WriteOutput writes one output.
func (j *Job) WriteOutput(name, value string) { j.j.out.write(name, value) }

// Fail reports err as an error annotation, naming a missing permission
// when GitHub refused the token, and returns exit code 1.
func (j *Job) Fail(what string, err error) int { return j.j.fail(what, err) }
