package ghfake

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// Runs of workflow files (AddWorkflowFile): the fake plays GitHub's side of
// Actions — which runs a trigger starts, the job graph (needs, if), the
// concurrency groups and each job's GITHUB_TOKEN — and a fake runner plays
// the jobs: it is told when a job may start (OnJob, or QueuedJobs when
// polling), starts it (StartJob: the job's token and contexts), runs its
// steps and completes it (CompleteJob with the steps' outputs).
//
// Concurrency, as GitHub does it
// (https://docs.github.com/en/actions/how-tos/write-workflows/choose-when-workflows-run/control-workflow-concurrency):
// a group has at most one running and one pending holder, repository-wide,
// shared by workflow-level and job-level groups; a newer pending holder
// cancels the older one; cancel-in-progress cancels the running one. With
// queue: max up to 100 holders wait, first in first out, and one more is
// cancelled (an expression cancel-in-progress that comes out true beside
// queue: max fails the run, as the literal fails validation). Group names
// are case insensitive. A
// workflow-level group is taken when the run is created, before any job's
// if is evaluated, so an event that every job would skip still cancels a
// pending run of the group; a job-level group is taken after the job's if
// (and may use needs.*).

// JobRun is one job of a workflow-file run, as a runner sees it.
type JobRun struct {
	ID          int64
	RunID       int64
	Run         Run     // the run when the snapshot was taken
	Spec        JobSpec // the job as the file declares it
	Status      string  // waiting | pending | queued | in_progress | completed
	Conclusion  string  // success | failure | cancelled | skipped
	Permissions Permissions
	// Token is the job's GITHUB_TOKEN (set by StartJob; it expires when
	// the job completes).
	Token string
	// Contexts are github (with token once started), inputs and needs,
	// for the runner to evaluate the steps' expressions (it adds steps,
	// env, secrets, vars, runner).
	Contexts Contexts
	Outputs  map[string]string
	// Error says why the job failed without running (an expression the
	// fake cannot evaluate).
	Error string
}

type jobRun struct {
	id         int64
	spec       JobSpec
	status     string
	conclusion string
	token      string
	outputs    map[string]string
	group      string
	err        string
	started    time.Time
	ended      time.Time
	ctx        context.Context
	cancel     context.CancelFunc
}

// concGroup is a concurrency group: one running holder, and the pending
// ones in the order they began to wait (one unless queue: max).
type concGroup struct {
	running *slot
	pending []*slot
}

// concPolicy is how a holder takes its group.
type concPolicy struct {
	cancelInProgress bool
	queueMax         bool
}

// slot holds a group: a run (workflow level) or one of its jobs.
type slot struct {
	ru  *run
	job *jobRun
}

func (s *slot) same(o *slot) bool { return s != nil && o != nil && s.ru == o.ru && s.job == o.job }

// actionsState is a repository's Actions state beyond workflows and runs.
type actionsState struct {
	groups map[string]*concGroup
	// canCreatePRs is the setting "Allow GitHub Actions to create and
	// approve pull requests" (off by default for a new personal
	// repository, as on GitHub).
	canCreatePRs bool
}

func (r *Repo) groups() map[string]*concGroup {
	if r.actions.groups == nil {
		r.actions.groups = map[string]*concGroup{}
	}
	return r.actions.groups
}

// AddWorkflowFile registers a workflow file on the repository "owner/name"
// from its content: its triggers, permissions, concurrency and jobs are the
// file's. path is where the file is (".github/workflows/bazinga.yml" or
// just the file name); dispatches address it by its base name.
func (f *Fake) AddWorkflowFile(repo, file string, content []byte) error {
	spec, err := ParseWorkflowFile(content)
	if err != nil {
		return fmt.Errorf("ghfake: %s: %w", file, err)
	}
	base := path.Base(file)
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.lookupRepo(repo)
	if r == nil {
		return fmt.Errorf("repository %s: %w", repo, ErrNotFound)
	}
	name := spec.Name
	if name == "" {
		name = ".github/workflows/" + base // GitHub's default name is the path
	}
	first := spec.Jobs[0].ID
	r.workflows[base] = &workflow{id: f.id("workflow"), file: base, spec: &spec,
		wf: Workflow{Name: name, JobName: first, Inputs: spec.Inputs}}
	return nil
}

// AddWorkflowFileFrom reads a workflow file from disk and registers it
// under its base name.
func (f *Fake) AddWorkflowFileFrom(repo, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("ghfake: %w", err)
	}
	return f.AddWorkflowFile(repo, path.Base(file), b)
}

// SetActionsCanCreatePullRequests sets the repository's "Allow GitHub
// Actions to create and approve pull requests" (Settings → Actions →
// General → Workflow permissions). Off by default.
func (f *Fake) SetActionsCanCreatePullRequests(repo string, allow bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.lookupRepo(repo)
	if r == nil {
		return fmt.Errorf("repository %s: %w", repo, ErrNotFound)
	}
	r.actions.canCreatePRs = allow
	return nil
}

// actionsMayNotCreatePR answers GitHub's 403 when github-actions[bot]
// opens a pull request in a repository that does not allow it. Caller
// holds f.mu.
func (f *Fake) actionsMayNotCreatePR(c *rc) bool {
	if c.login != ActionsLogin || c.repo == nil || c.repo.actions.canCreatePRs {
		return false
	}
	c.fail(403, "GitHub Actions is not permitted to create or approve pull requests.")
	return true
}

// OnJob registers a hook called, on its own goroutine, whenever a job of a
// workflow-file run may start (its needs done, its if true, its
// concurrency group free). ctx is cancelled when the job is cancelled (a
// concurrency group's cancel-in-progress, the run cancelled) or the fake
// closes.
func (f *Fake) OnJob(hook func(ctx context.Context, j JobRun)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onJob = append(f.onJob, hook)
}

// addJobs creates a file run's jobs, all waiting. Caller holds f.mu.
func (f *Fake) addJobs(ru *run) {
	for _, spec := range ru.wf.spec.Jobs {
		ru.jobs = append(ru.jobs, &jobRun{id: f.id("job"), spec: spec, status: "waiting"})
	}
	ru.JobID, ru.JobName = ru.jobs[0].id, ru.jobs[0].spec.ID
}

// afterRunCreated takes a file run's workflow-level concurrency group and
// starts what may start. Caller holds f.mu.
func (f *Fake) afterRunCreated(r *Repo, ru *run) {
	if ru.wf.spec == nil {
		return
	}
	if c := ru.wf.spec.Concurrency; c != nil {
		ctx := Contexts{"github": f.githubCtx(r, ru, ""), "inputs": inputsContext(ru.Inputs)}
		group, pol, err := evalConcurrency(c, ctx)
		if err != nil {
			f.logf("ghfake: run %d: %v", ru.ID, err)
			f.failRunAtStartup(r, ru, err)
			return
		}
		ru.group = group
		if !f.acquire(r, group, &slot{ru: ru}, pol) {
			if ru.Status != "completed" { // not cancelled by a full queue
				ru.Status = "pending"
			}
			return
		}
	}
	f.advance(r, ru)
}

func evalConcurrency(c *Concurrency, ctx Contexts) (string, concPolicy, error) {
	group, err := InterpolateString(c.Group, ctx, JobStatus{})
	if err != nil {
		return "", concPolicy{}, fmt.Errorf("concurrency group: %w", err)
	}
	cip, err := Interpolate(c.CancelInProgress, ctx, JobStatus{})
	if err != nil {
		return "", concPolicy{}, fmt.Errorf("cancel-in-progress: %w", err)
	}
	if s, ok := cip.(string); ok {
		cip = s == "true"
	}
	pol := concPolicy{cancelInProgress: truthy(cip), queueMax: c.Queue == queueMax}
	if pol.cancelInProgress && pol.queueMax {
		return "", concPolicy{}, fmt.Errorf("concurrency: queue: max cannot be combined with cancel-in-progress: true")
	}
	// "The concurrency group name is case insensitive."
	return strings.ToLower(group), pol, nil
}

// failRunAtStartup ends a run whose workflow could not start. Caller holds
// f.mu.
func (f *Fake) failRunAtStartup(r *Repo, ru *run, err error) {
	for _, j := range ru.jobs {
		j.status, j.conclusion, j.err = "completed", "failure", err.Error()
	}
	f.finishRun(r, ru)
}

// acquire puts s in group: running if the group is free (or
// cancel-in-progress cancels the running holder), else pending: behind the
// others under queue: max (cancelled itself when 100 wait), else replacing
// (cancelling) the pending ones. It reports whether s runs now. Caller
// holds f.mu.
func (f *Fake) acquire(r *Repo, name string, s *slot, pol concPolicy) bool {
	g := r.groups()[name]
	if g == nil {
		g = &concGroup{}
		r.groups()[name] = g
	}
	if g.running != nil && pol.queueMax {
		if len(g.pending) >= queueMaxPending {
			// "When the queue is full, any additional jobs or workflow
			// runs are canceled."
			f.cancelSlot(r, s)
			return false
		}
		g.pending = append(g.pending, s)
		return false
	}
	for len(g.pending) > 0 {
		old := g.pending[0]
		g.pending = g.pending[1:]
		f.cancelSlot(r, old)
	}
	if g.running != nil && pol.cancelInProgress {
		old := g.running
		g.running = nil
		f.cancelSlot(r, old)
	}
	if g.running == nil {
		g.running = s
		return true
	}
	g.pending = []*slot{s}
	return false
}

// release frees s's place in group and starts the pending holder. Caller
// holds f.mu.
func (f *Fake) release(r *Repo, name string, s *slot) {
	g := r.groups()[name]
	if g == nil {
		return
	}
	for i, p := range g.pending {
		if p.same(s) {
			g.pending = append(g.pending[:i:i], g.pending[i+1:]...)
			return
		}
	}
	if !g.running.same(s) {
		return
	}
	if len(g.pending) == 0 {
		delete(r.groups(), name)
		return
	}
	next := g.pending[0]
	g.running, g.pending = next, g.pending[1:]
	if next.job == nil {
		next.ru.Status = "queued"
		f.advance(r, next.ru)
		return
	}
	next.job.status = "queued"
	f.jobReady(r, next.ru, next.job)
}

// cancelSlot cancels a group's holder: the whole run, or the job. Caller
// holds f.mu.
func (f *Fake) cancelSlot(r *Repo, s *slot) {
	if s.job == nil {
		f.cancelFileRun(r, s.ru)
		return
	}
	f.endJob(r, s.ru, s.job, "cancelled")
	f.advance(r, s.ru)
}

// cancelFileRun cancels a run: its jobs not completed end cancelled.
// Caller holds f.mu.
func (f *Fake) cancelFileRun(r *Repo, ru *run) {
	if ru.Status == "completed" {
		return
	}
	ru.cancelled = true
	for _, j := range ru.jobs {
		if j.status != "completed" {
			f.endJob(r, ru, j, "cancelled")
		}
	}
	f.advance(r, ru)
}

// advance moves a run's jobs on: a waiting job whose needs are done is
// skipped, failed (an expression the fake cannot evaluate) or queued
// behind its job-level group; a run whose jobs are all done completes.
// Caller holds f.mu.
func (f *Fake) advance(r *Repo, ru *run) {
	if ru.Status == "completed" || (ru.Status == "pending" && !ru.cancelled) {
		return
	}
	for changed := true; changed; {
		changed = false
		for _, j := range ru.jobs {
			if j.status != "waiting" {
				continue
			}
			st, ready := ru.needsStatus(j)
			if !ready {
				continue
			}
			changed = true
			if ru.cancelled {
				f.endJob(r, ru, j, "cancelled")
				continue
			}
			ctx := Contexts{"github": f.githubCtx(r, ru, j.spec.ID), "inputs": inputsContext(ru.Inputs), "needs": ru.needsContext(j)}
			ok, err := EvalCondition(j.spec.If, ctx, st)
			if err != nil {
				j.err = err.Error()
				f.endJob(r, ru, j, "failure")
				continue
			}
			if !ok {
				f.endJob(r, ru, j, "skipped")
				continue
			}
			if c := j.spec.Concurrency; c != nil {
				group, pol, err := evalConcurrency(c, ctx)
				if err != nil {
					j.err = err.Error()
					f.endJob(r, ru, j, "failure")
					continue
				}
				j.group = group
				if !f.acquire(r, group, &slot{ru: ru, job: j}, pol) {
					if j.status != "completed" { // not cancelled by a full queue
						j.status = "pending"
					}
					continue
				}
			}
			j.status = "queued"
			f.jobReady(r, ru, j)
		}
	}
	for _, j := range ru.jobs {
		if j.status != "completed" {
			return
		}
	}
	f.finishRun(r, ru)
}

// needsStatus reports whether j's needs are all completed, and what the
// status functions see.
func (ru *run) needsStatus(j *jobRun) (JobStatus, bool) {
	st := JobStatus{Cancelled: ru.cancelled}
	for _, n := range j.spec.Needs {
		d := ru.job(n)
		if d == nil || d.status != "completed" {
			return st, false
		}
		switch d.conclusion {
		case "failure":
			st.Failed = true
		case "skipped":
			st.Skipped = true
		case "cancelled":
			st.Cancelled = true
		}
	}
	return st, true
}

func (ru *run) job(id string) *jobRun {
	for _, j := range ru.jobs {
		if j.spec.ID == id {
			return j
		}
	}
	return nil
}

func (ru *run) needsContext(j *jobRun) map[string]any {
	out := map[string]any{}
	for _, n := range j.spec.Needs {
		d := ru.job(n)
		outputs := map[string]any{}
		for k, v := range d.outputs {
			outputs[k] = v
		}
		out[n] = map[string]any{"result": d.conclusion, "outputs": outputs}
	}
	return out
}

// jobReady emits workflow_job queued and tells the runners. Caller holds
// f.mu.
func (f *Fake) jobReady(r *Repo, ru *run, j *jobRun) {
	j.ctx, j.cancel = context.WithCancel(context.Background())
	go func(ctx context.Context, cancel context.CancelFunc) {
		select {
		case <-f.closing:
			cancel()
		case <-ctx.Done():
		}
	}(j.ctx, j.cancel)
	f.emitJobOf(r, ru, j, "queued", ru.Actor)
	snap := f.jobSnapshot(r, ru, j)
	for _, h := range f.onJob {
		f.hooksWG.Add(1)
		go func() {
			defer f.hooksWG.Done()
			h(j.ctx, snap)
		}()
	}
}

// endJob completes a job with a conclusion: its token expires, its group
// is released. Caller holds f.mu; the caller advances the run.
func (f *Fake) endJob(r *Repo, ru *run, j *jobRun, conclusion string) {
	if j.status == "completed" {
		return
	}
	wasPending := j.status == "pending"
	now := f.now()
	j.status, j.conclusion, j.ended = "completed", conclusion, now
	if j.started.IsZero() {
		j.started = now
	}
	if j.token != "" {
		// The GITHUB_TOKEN expires when its job finishes.
		delete(f.tokens, j.token)
	}
	if j.cancel != nil {
		j.cancel()
	}
	ru.UpdatedAt = now
	if conclusion != "skipped" || wasPending {
		f.emitJobOf(r, ru, j, "completed", ru.Actor)
	}
	if j.group != "" {
		f.release(r, j.group, &slot{ru: ru, job: j})
	}
}

// finishRun completes a file run once its jobs are done: cancelled if it
// was (or a job was), failure if a job failed, else success. Caller holds
// f.mu.
func (f *Fake) finishRun(r *Repo, ru *run) {
	if ru.Status == "completed" {
		return
	}
	conclusion := "success"
	for _, j := range ru.jobs {
		switch {
		case j.conclusion == "cancelled":
			conclusion = "cancelled"
		case j.conclusion == "failure" && conclusion != "cancelled":
			conclusion = "failure"
		}
	}
	if ru.cancelled {
		conclusion = "cancelled"
	}
	now := f.now()
	if ru.started.IsZero() {
		ru.started = now
	}
	ru.Status, ru.Conclusion, ru.ended, ru.UpdatedAt = "completed", conclusion, now, now
	f.emitRun(r, ru, "completed", ru.Actor)
	if ru.group != "" {
		f.release(r, ru.group, &slot{ru: ru})
	}
}

// findJob finds a job of a file run. Caller holds f.mu.
func (f *Fake) findJob(id int64) (*Repo, *run, *jobRun) {
	for _, r := range f.repos {
		for _, ru := range r.runs {
			for _, j := range ru.jobs {
				if j.id == id {
					return r, ru, j
				}
			}
		}
	}
	return nil, nil, nil
}

// StartJob marks a queued job in progress and mints its GITHUB_TOKEN with
// exactly the job's permissions. It returns the job with its token and
// contexts.
func (f *Fake) StartJob(id int64) (JobRun, error) {
	f.mu.Lock()
	r, ru, j := f.findJob(id)
	if j == nil {
		f.mu.Unlock()
		return JobRun{}, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if j.status != "queued" {
		f.mu.Unlock()
		return JobRun{}, fmt.Errorf("ghfake: job %d (%s) is %s, not queued", id, j.spec.ID, j.status)
	}
	now := f.now()
	j.status, j.started = "in_progress", now
	j.token = f.mintJobToken(r, ru, j)
	f.emitJobOf(r, ru, j, "in_progress", ru.Actor)
	if ru.Status != "in_progress" {
		ru.Status, ru.started, ru.UpdatedAt = "in_progress", now, now
		f.emitRun(r, ru, "in_progress", ru.Actor)
	}
	out := f.jobSnapshot(r, ru, j)
	f.mu.Unlock()
	f.afterChange()
	return out, nil
}

// CompleteJob ends a running job with a conclusion (success, failure or
// cancelled) and the outputs of its steps (step id → name → value), from
// which the job's outputs: are evaluated. Then the jobs that need it may
// start, and the run completes when every job has.
func (f *Fake) CompleteJob(id int64, conclusion string, stepOutputs map[string]map[string]string) error {
	if conclusion != "success" && conclusion != "failure" && conclusion != "cancelled" {
		return fmt.Errorf("ghfake: invalid job conclusion %q", conclusion)
	}
	f.mu.Lock()
	r, ru, j := f.findJob(id)
	var err error
	switch {
	case j == nil:
		err = fmt.Errorf("job %d: %w", id, ErrNotFound)
	case j.status == "completed":
		err = fmt.Errorf("ghfake: job %d (%s) already completed (%s)", id, j.spec.ID, j.conclusion)
	case j.status != "in_progress":
		err = fmt.Errorf("ghfake: job %d (%s) is %s, not in progress", id, j.spec.ID, j.status)
	default:
		steps := map[string]any{}
		for sid, outs := range stepOutputs {
			o := map[string]any{}
			for k, v := range outs {
				o[k] = v
			}
			steps[sid] = map[string]any{"outputs": o, "outcome": "success", "conclusion": "success"}
		}
		j.outputs = map[string]string{}
		ctx := Contexts{"github": f.githubCtx(r, ru, j.spec.ID), "inputs": inputsContext(ru.Inputs), "needs": ru.needsContext(j), "steps": steps}
		for _, k := range sortedKeys(j.spec.Outputs) {
			v, eerr := InterpolateString(j.spec.Outputs[k], ctx, JobStatus{})
			if eerr != nil {
				j.err = eerr.Error()
				conclusion = "failure"
				break
			}
			j.outputs[k] = v
		}
		f.endJob(r, ru, j, conclusion)
		f.advance(r, ru)
	}
	f.mu.Unlock()
	f.afterChange()
	return err
}

// Jobs lists a file run's jobs.
func (f *Fake) Jobs(runID int64) []JobRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ru := f.findRun(runID)
	if ru == nil {
		return nil
	}
	var out []JobRun
	for _, j := range ru.jobs {
		out = append(out, f.jobSnapshot(r, ru, j))
	}
	return out
}

// QueuedJobs lists the jobs that may start now (queued, not started), by
// id: what a polling runner picks from.
func (f *Fake) QueuedJobs() []JobRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []JobRun
	for _, r := range f.repos {
		for _, ru := range r.runs {
			for _, j := range ru.jobs {
				if j.status == "queued" {
					out = append(out, f.jobSnapshot(r, ru, j))
				}
			}
		}
	}
	return out
}

// JobToken mints a GITHUB_TOKEN for the job jobID (the key under jobs:) of
// run with exactly that job's effective permissions, as a runner would get
// for it, without starting the job: for tests that play one job by hand.
func (f *Fake) JobToken(run Run, jobID string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	repo, ru := f.findRun(run.ID)
	if ru == nil {
		return "", fmt.Errorf("run %d: %w", run.ID, ErrNotFound)
	}
	if ru.wf.spec == nil {
		return "", fmt.Errorf("ghfake: run %d is not of a workflow file", run.ID)
	}
	j := ru.job(jobID)
	if j == nil {
		return "", fmt.Errorf("job %s of run %d: %w", jobID, run.ID, ErrNotFound)
	}
	if j.status == "completed" {
		return "", fmt.Errorf("ghfake: job %s of run %d is completed: its GITHUB_TOKEN has expired", jobID, run.ID)
	}
	return f.mintJobToken(repo, ru, j), nil
}

// mintJobToken registers a token for github-actions[bot] carrying the
// job's permissions. Its value says whether it can write (ghs_rw…) or only
// read (ghs_ro…), so tests can look for write tokens where they must not
// be. A GITHUB_TOKEN reaches only the repository of its workflow ("The
// token's permissions are limited to the repository that contains your
// workflow", docs: actions/security-for-github-actions/security-guides/
// automatic-token-authentication). Caller holds f.mu.
func (f *Fake) mintJobToken(r *Repo, ru *run, j *jobRun) string {
	perms := ru.wf.spec.EffectivePermissions(j.spec)
	kind := "ro"
	for _, level := range perms {
		if level == "write" {
			kind = "rw"
		}
	}
	f.nextID["jobtoken"]++
	tok := fmt.Sprintf("ghs_%s%d_%s%d", kind, j.id, strconv.FormatInt(f.now().UnixNano()%1e9, 36), f.nextID["jobtoken"])
	f.account(ActionsLogin, Bot)
	f.tokens[tok] = &token{value: tok, login: ActionsLogin, kind: Bot, perms: perms.TokenPermissions(), repo: r}
	return tok
}

// jobSnapshot copies a job for a runner. Caller holds f.mu.
func (f *Fake) jobSnapshot(r *Repo, ru *run, j *jobRun) JobRun {
	gh := f.githubCtx(r, ru, j.spec.ID)
	if j.token != "" {
		gh["token"] = j.token
	}
	outputs := map[string]string{}
	for k, v := range j.outputs {
		outputs[k] = v
	}
	return JobRun{
		ID: j.id, RunID: ru.ID, Run: ru.copyRun(), Spec: j.spec, Status: j.status, Conclusion: j.conclusion,
		Permissions: ru.wf.spec.EffectivePermissions(j.spec), Token: j.token,
		Contexts: Contexts{"github": gh, "inputs": inputsContext(ru.Inputs), "needs": ru.needsContext(j)},
		Outputs:  outputs, Error: j.err,
	}
}

// githubCtx is the github context of a job of ru. Caller holds f.mu.
func (f *Fake) githubCtx(r *Repo, ru *run, job string) map[string]any {
	gh := githubContext(r, ru.wf, ru.Event, ru.Ref, ru.HeadSHA, ru.Actor, ru.EventPayload, ru.ID, ru.RunNumber)
	gh["job"] = job
	return gh
}

// githubContext is the github context of a run (without token and job).
func githubContext(r *Repo, wf *workflow, event, ref, sha, actor string, payload []byte, runID int64, runNumber int) map[string]any {
	var ev map[string]any
	_ = json.Unmarshal(payload, &ev)
	if ev == nil {
		ev = map[string]any{}
	}
	return map[string]any{
		"event_name": event, "event": ev, "actor": actor, "triggering_actor": actor,
		"repository": r.FullName(), "repository_owner": r.owner,
		"ref": fullRef(event, ref), "ref_name": ref, "ref_type": "branch", "sha": sha,
		"run_id": strconv.FormatInt(runID, 10), "run_number": strconv.Itoa(runNumber), "run_attempt": "1",
		"workflow": wf.wf.Name, "workflow_ref": r.FullName() + "/.github/workflows/" + wf.file + "@" + fullRef(event, ref),
		"server_url": r.f.srv.URL, "api_url": r.f.srv.URL + "/api/v3",
	}
}

func inputsContext(in map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		out[k] = v
	}
	return out
}

// jobOfJSON is a file run's job as the API and webhooks show it.
func (r *Repo) jobOfJSON(ru *run, j *jobRun) *github.WorkflowJob {
	f := r.f
	status := j.status
	if status == "waiting" {
		status = "queued"
	}
	out := &github.WorkflowJob{
		ID: github.Int64(j.id), RunID: github.Int64(ru.ID), NodeID: nodeID("CR", j.id),
		RunURL:     github.String(f.api(fmt.Sprintf("/repos/%s/actions/runs/%d", r.FullName(), ru.ID))),
		HeadBranch: github.String(ru.Ref), HeadSHA: github.String(ru.HeadSHA),
		URL:     github.String(f.api(fmt.Sprintf("/repos/%s/actions/jobs/%d", r.FullName(), j.id))),
		HTMLURL: github.String(f.html(fmt.Sprintf("/%s/actions/runs/%d/job/%d", r.FullName(), ru.ID, j.id))),
		Status:  github.String(status), Name: github.String(j.spec.Name), WorkflowName: github.String(ru.Name),
		CreatedAt: ts(ru.CreatedAt), StartedAt: ts(j.started), CompletedAt: ts(j.ended),
		RunAttempt: github.Int64(1), Labels: []string{"ubuntu-latest"}, Steps: []*github.TaskStep{},
	}
	if j.conclusion != "" {
		out.Conclusion = github.String(j.conclusion)
	}
	return out
}

func (f *Fake) emitJobOf(r *Repo, ru *run, j *jobRun, action, sender string) {
	f.emit(r, "workflow_job", action, &github.WorkflowJobEvent{
		Action: github.String(action), WorkflowJob: r.jobOfJSON(ru, j),
		Repo: r.json(), Sender: f.userJSON(sender), Installation: f.installationJSON(),
	})
}

// listRunJobs answers GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs.
func (f *Fake) listRunJobs(c *rc) {
	ru := c.runParam()
	if ru == nil {
		return
	}
	jobs := []*github.WorkflowJob{}
	if ru.wf.spec == nil {
		jobs = append(jobs, c.repo.jobJSON(ru))
	}
	for _, j := range ru.jobs {
		jobs = append(jobs, c.repo.jobOfJSON(ru, j))
	}
	start, end := c.page(len(jobs))
	c.json(200, &github.Jobs{TotalCount: github.Int(len(jobs)), Jobs: jobs[start:end]})
}

// isFileRun reports whether ru is of a workflow file.
func (ru *run) isFileRun() bool { return ru.wf.spec != nil }
