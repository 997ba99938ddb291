package ghfake

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ActionsLogin is the identity of a workflow's GITHUB_TOKEN.
const ActionsLogin = "github-actions[bot]"

// RunToken registers and returns a GITHUB_TOKEN for a run: it acts as
// github-actions[bot], and (as on GitHub) what it does triggers no
// workflows other than dispatches.
func (f *Fake) RunToken(r Run) string {
	tok := fmt.Sprintf("ghs_run%d", r.ID)
	f.AddToken(tok, ActionsLogin, Bot)
	return tok
}

// RunEnv prepares dir as a job's runner directories and returns the
// GITHUB_* and RUNNER_* environment a job of run would see, pointing at the
// fake: the event payload at GITHUB_EVENT_PATH and empty GITHUB_OUTPUT,
// GITHUB_ENV, GITHUB_PATH, GITHUB_STATE and GITHUB_STEP_SUMMARY files.
// Inputs of the action itself (INPUT_*) are the runner's business.
func (f *Fake) RunEnv(r Run, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("ghfake: %w", err)
	}
	event := filepath.Join(dir, "event.json")
	if err := os.WriteFile(event, r.EventPayload, 0o644); err != nil {
		return nil, fmt.Errorf("ghfake: %w", err)
	}
	files := map[string]string{}
	for _, name := range []string{"GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"} {
		p := filepath.Join(dir, strings.ToLower(name))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return nil, fmt.Errorf("ghfake: %w", err)
		}
		files[name] = p
	}
	owner, _, _ := strings.Cut(r.Repo, "/")
	env := []string{
		"CI=true",
		"GITHUB_ACTIONS=true",
		"GITHUB_API_URL=" + f.srv.URL + "/api/v3",
		"GITHUB_GRAPHQL_URL=" + f.srv.URL + "/api/graphql",
		"GITHUB_SERVER_URL=" + f.srv.URL,
		"GITHUB_REPOSITORY=" + r.Repo,
		"GITHUB_REPOSITORY_OWNER=" + owner,
		"GITHUB_REPOSITORY_ID=" + strconv.FormatInt(f.repoID(r.Repo), 10),
		"GITHUB_RUN_ID=" + strconv.FormatInt(r.ID, 10),
		"GITHUB_RUN_NUMBER=" + strconv.Itoa(r.RunNumber),
		"GITHUB_RUN_ATTEMPT=1",
		"GITHUB_WORKFLOW=" + r.Name,
		"GITHUB_WORKFLOW_REF=" + r.Repo + "/.github/workflows/" + r.Workflow + "@refs/heads/" + r.Ref,
		"GITHUB_JOB=" + r.JobName,
		"GITHUB_REF=" + fullRef(r.Event, r.Ref),
		"GITHUB_REF_NAME=" + r.Ref,
		"GITHUB_REF_TYPE=branch",
		"GITHUB_SHA=" + r.HeadSHA,
		"GITHUB_ACTOR=" + r.Actor,
		"GITHUB_TRIGGERING_ACTOR=" + r.Actor,
		"GITHUB_EVENT_NAME=" + r.Event,
		"GITHUB_EVENT_PATH=" + event,
		"GITHUB_WORKSPACE=" + filepath.Join(dir, "workspace"),
		"RUNNER_OS=Linux",
		"RUNNER_ARCH=X64",
		"RUNNER_TEMP=" + dir,
	}
	for _, name := range sortedKeys(files) {
		env = append(env, name+"="+files[name])
	}
	return env, os.MkdirAll(filepath.Join(dir, "workspace"), 0o755)
}
