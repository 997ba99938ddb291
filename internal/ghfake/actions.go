package ghfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// Workflow describes a dispatchable workflow by hand: one implicit job,
// every token permission, driven with StartRun and CompleteRun. Prefer
// AddWorkflowFile, which reads the file as GitHub does.
type Workflow struct {
	Name string // the workflow's name; default the file name
	// RunName is the run-name template; ${{ inputs.x }},
	// ${{ github.event.inputs.x }}, ${{ github.actor }} and
	// ${{ github.ref_name }} are expanded. Default: the workflow name.
	RunName string
	JobName string // the single job's name; default "run"
	Inputs  map[string]WorkflowInput
	// On lists events that also trigger the workflow: "issues",
	// "issue_comment.created", "workflow_run.completed", … (an event, or
	// event.action). As on GitHub, events caused by github-actions[bot]
	// (a GITHUB_TOKEN) trigger nothing, nor does the completion of a run a
	// GITHUB_TOKEN dispatched; a run triggered by workflow_run does not
	// trigger further workflow_run workflows (GitHub allows a few levels;
	// the fake one). AddWorkflowFile reads a real workflow file instead.
	On []string
}

// WorkflowInput is one workflow_dispatch input.
type WorkflowInput struct {
	Required bool
	Default  string
	Type     string   // string (default), boolean, choice, number or environment
	Options  []string // for choice
}

type workflow struct {
	id   int64
	file string // base name, e.g. bazinga.yml
	wf   Workflow
	runs int
	// spec is the parsed file of a workflow registered with
	// AddWorkflowFile (nil: a hand-described Workflow, one implicit job
	// driven with StartRun and CompleteRun).
	spec *WorkflowFile
}

// Run is a workflow run as a fake runner sees it.
type Run struct {
	ID           int64
	JobID        int64
	Repo         string // "owner/name"
	Workflow     string // file name, e.g. "bazinga-agent.yml"
	WorkflowID   int64
	Name         string // the workflow's name
	DisplayTitle string // the rendered run-name
	JobName      string
	Ref          string // branch or tag name the run is on
	HeadSHA      string
	Inputs       map[string]string
	Event        string // "workflow_dispatch", or the triggering event
	// EventPayload is the event as a runner finds it at GITHUB_EVENT_PATH.
	EventPayload []byte
	Actor        string
	RunNumber    int
	Status       string // queued | in_progress | completed
	Conclusion   string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

type run struct {
	Run
	wf      *workflow
	started time.Time
	ended   time.Time
	// viaActionsToken: a GITHUB_TOKEN dispatched the run, so its
	// completion starts no workflow_run workflows.
	viaActionsToken bool
	// Workflow-file runs: the jobs, the run's concurrency group (taken
	// when the run is created, before any job's if) and whether the run
	// was cancelled.
	jobs      []*jobRun
	group     string
	cancelled bool
	// awaiting is the CI a pull_request run waits for approval to run
	// (a GITHUB_TOKEN opened or updated its pull request).
	awaiting *CI
}

// AddWorkflow registers a workflow file on the repository "owner/name" so
// that it can be dispatched.
func (f *Fake) AddWorkflow(repo, file string, wf Workflow) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.lookupRepo(repo)
	if r == nil {
		return fmt.Errorf("repository %s: %w", repo, ErrNotFound)
	}
	if wf.Name == "" {
		wf.Name = file
	}
	if wf.JobName == "" {
		wf.JobName = "run"
	}
	r.workflows[file] = &workflow{id: f.id("workflow"), file: file, wf: wf}
	return nil
}

// OnDispatch registers a hook called, on its own goroutine, with every run
// a workflow_dispatch creates: the place for a fake Actions runner.
func (f *Fake) OnDispatch(hook func(Run)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onDispatch = append(f.onDispatch, hook)
}

func (c *rc) workflowParam() *workflow {
	id := c.param("workflow_id")
	if wf, ok := c.repo.workflows[id]; ok {
		return wf
	}
	for _, wf := range c.repo.workflows {
		if strconv.FormatInt(wf.id, 10) == id {
			return wf
		}
	}
	c.notFound()
	return nil
}

type dispatchRequest struct {
	Ref    *string                    `json:"ref"`
	Inputs map[string]json.RawMessage `json:"inputs"`
}

func (f *Fake) dispatch(c *rc) {
	wf := c.workflowParam()
	if wf == nil {
		return
	}
	var req dispatchRequest
	if !c.decode(&req) {
		return
	}
	if req.Ref == nil || *req.Ref == "" {
		c.fail(http.StatusUnprocessableEntity, "Invalid request.\n\n\"ref\" wasn't supplied.")
		return
	}
	refName, sha, ok := c.repo.resolveBranchOrTag(*req.Ref)
	if !ok {
		c.fail(http.StatusUnprocessableEntity, "No ref found for: "+*req.Ref)
		return
	}
	decl := wf.wf
	if wf.spec != nil {
		if _, ok := wf.spec.On["workflow_dispatch"]; !ok {
			c.fail(http.StatusUnprocessableEntity, "Workflow does not have 'workflow_dispatch' trigger")
			return
		}
		decl = Workflow{Inputs: wf.spec.Inputs}
	}
	inputs, msg := decl.validate(req.Inputs)
	if msg != "" {
		c.fail(http.StatusUnprocessableEntity, msg)
		return
	}
	// A GITHUB_TOKEN may dispatch (GitHub's one exception besides
	// repository_dispatch), but the run it starts fires no workflow_run.
	ru := f.startRun(c.repo, wf, "workflow_dispatch", refName, sha, inputs, c.login, f.dispatchPayload(c.repo, wf, refName, inputs, c.login))
	ru.viaActionsToken = c.login == ActionsLogin
	f.afterRunCreated(c.repo, ru)
	c.noContent()
}

// resolveBranchOrTag resolves a dispatch ref as GitHub does: a full ref, a
// branch name or a tag name.
func (r *Repo) resolveBranchOrTag(ref string) (string, string, bool) {
	for _, full := range []string{ref, "refs/heads/" + ref, "refs/tags/" + ref} {
		if !strings.HasPrefix(full, "refs/heads/") && !strings.HasPrefix(full, "refs/tags/") {
			continue
		}
		if _, ok := r.ref(full); ok {
			if sha, ok := r.resolve(full); ok {
				name := strings.TrimPrefix(strings.TrimPrefix(full, "refs/heads/"), "refs/tags/")
				return name, sha, true
			}
		}
	}
	return "", "", false
}

// validate checks dispatch inputs against the workflow's declaration and
// returns them as strings with defaults applied, or GitHub's message.
func (wf Workflow) validate(raw map[string]json.RawMessage) (map[string]string, string) {
	var unexpected []string
	for _, k := range sortedKeys(raw) {
		if _, ok := wf.Inputs[k]; !ok {
			unexpected = append(unexpected, strconv.Quote(k))
		}
	}
	if len(unexpected) > 0 {
		return nil, "Unexpected inputs provided: [" + strings.Join(unexpected, ", ") + "]"
	}
	out := map[string]string{}
	for _, name := range sortedKeys(wf.Inputs) {
		in := wf.Inputs[name]
		v, given := raw[name]
		val := in.Default
		if given {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				// GitHub accepts JSON scalars and stringifies them.
				var x any
				if err := json.Unmarshal(v, &x); err != nil {
					return nil, "Invalid value for input '" + name + "'"
				}
				switch x := x.(type) {
				case bool, float64:
					s = fmt.Sprint(x)
				default:
					return nil, "Invalid value for input '" + name + "'"
				}
			}
			val = s
		}
		if in.Required && (!given || val == "") && in.Default == "" {
			return nil, "Required input '" + name + "' not provided"
		}
		switch in.Type {
		case "boolean":
			if val != "" && val != "true" && val != "false" {
				return nil, "Provided value '" + val + "' for input '" + name + "' not in the list of allowed values"
			}
		case "choice":
			okv := val == ""
			for _, o := range in.Options {
				if o == val {
					okv = true
				}
			}
			if !okv {
				return nil, "Provided value '" + val + "' for input '" + name + "' not in the list of allowed values"
			}
		case "number":
			if _, err := strconv.ParseFloat(val, 64); val != "" && err != nil {
				return nil, "Provided value '" + val + "' for input '" + name + "' is not a number"
			}
		}
		out[name] = val
	}
	return out, ""
}

var exprRE = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// renderRunName expands the run-name template's simple expressions
// (inputs.x, github.event.a.b, github.actor, github.ref_name, …); anything
// else expands to "" (the fake has no expression engine).
func renderRunName(tmpl string, inputs map[string]string, actor, ref, eventName string, payload []byte) string {
	var event map[string]any
	_ = json.Unmarshal(payload, &event)
	return exprRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		expr := exprRE.FindStringSubmatch(m)[1]
		switch {
		case strings.HasPrefix(expr, "inputs."):
			return inputs[strings.TrimPrefix(expr, "inputs.")]
		case strings.HasPrefix(expr, "github.event.inputs."):
			return inputs[strings.TrimPrefix(expr, "github.event.inputs.")]
		case strings.HasPrefix(expr, "github.event."):
			var v any = event
			for _, k := range strings.Split(strings.TrimPrefix(expr, "github.event."), ".") {
				m, ok := v.(map[string]any)
				if !ok {
					return ""
				}
				v = m[k]
			}
			switch v := v.(type) {
			case string:
				return v
			case float64, bool:
				return fmt.Sprint(v)
			}
			return ""
		case expr == "github.actor" || expr == "github.triggering_actor":
			return actor
		case expr == "github.ref_name":
			return ref
		case expr == "github.event_name":
			return eventName
		}
		return ""
	})
}

// dispatchPayload is the workflow_dispatch event a run sees. Caller holds
// f.mu.
func (f *Fake) dispatchPayload(r *Repo, wf *workflow, ref string, inputs map[string]string, actor string) []byte {
	in, _ := json.Marshal(inputs)
	b, _ := json.Marshal(&github.WorkflowDispatchEvent{
		Inputs: in, Ref: github.String("refs/heads/" + ref), Workflow: github.String(".github/workflows/" + wf.file),
		Repo: r.json(), Sender: f.userJSON(actor), Installation: f.installationJSON(),
	})
	return b
}

// triggerWorkflows starts the runs an event triggers. Caller holds f.mu.
//
// GitHub's rules, strictly: an event a GITHUB_TOKEN (github-actions[bot])
// caused starts no workflow
// (https://docs.github.com/en/actions/how-tos/write-workflows/choose-when-workflows-run/trigger-a-workflow#triggering-a-workflow-from-a-workflow);
// the completion of a run that a GITHUB_TOKEN dispatch started fires no
// workflow_run either (GitHub documents the first rule only; independent
// reports agree on the second, and the fake follows them); and a run
// started by workflow_run starts no further workflow_run (GitHub allows a
// few levels; the fake one).
func (f *Fake) triggerWorkflows(r *Repo, event, action string, payload []byte) {
	var p struct {
		Sender      struct{ Login string } `json:"sender"`
		WorkflowRun struct {
			ID         int64  `json:"id"`
			Event      string `json:"event"`
			WorkflowID int64  `json:"workflow_id"`
		} `json:"workflow_run"`
	}
	_ = json.Unmarshal(payload, &p)
	if event == "workflow_run" {
		if p.WorkflowRun.Event == "workflow_run" {
			return
		}
		if _, ru := f.findRun(p.WorkflowRun.ID); ru != nil && ru.viaActionsToken {
			return
		}
	} else if p.Sender.Login == ActionsLogin {
		return
	}
	if event == "check_suite" {
		// "this event does not trigger workflows if the check suite was
		// created by GitHub Actions or if the check suite's head SHA is
		// associated with GitHub Actions" (events that trigger workflows,
		// check_suite): whoever reports on a GITHUB_TOKEN's push.
		var cs struct {
			CheckSuite struct {
				HeadSHA string `json:"head_sha"`
				App     struct {
					Slug string `json:"slug"`
				} `json:"app"`
			} `json:"check_suite"`
		}
		_ = json.Unmarshal(payload, &cs)
		if r.actionsHeads[cs.CheckSuite.HeadSHA] || cs.CheckSuite.App.Slug == "github-actions" {
			return
		}
	}
	var wfs []*workflow
	for _, wf := range r.workflows {
		wfs = append(wfs, wf)
	}
	sort.Slice(wfs, func(i, j int) bool { return wfs[i].id < wfs[j].id })
	for _, wf := range wfs {
		if event == "workflow_run" && p.WorkflowRun.WorkflowID == wf.id {
			continue
		}
		triggered := false
		if wf.spec != nil {
			triggered = event != "workflow_dispatch" && event != "schedule" && wf.spec.Triggers(event, action)
			if triggered && event == "workflow_run" {
				// Only the runs of the workflows it names.
				_, done := f.findRun(p.WorkflowRun.ID)
				triggered = done != nil && slices.Contains(wf.spec.RunOf, done.Name)
			}
		} else {
			for _, on := range wf.wf.On {
				triggered = triggered || on == event || on == event+"."+action
			}
		}
		if triggered {
			ref := r.defaultBranch
			sha, _ := r.ref("refs/heads/" + r.defaultBranch)
			if n, head, ok := pullRequestRun(event, payload); ok {
				// pull_request and pull_request_review runs are on the pull
				// request's merge ref, refs/pull/N/merge (GITHUB_REF, and the
				// ref claim of the job's OIDC token), not the default branch.
				// The fake has no test merge commit: GITHUB_SHA is the head.
				ref, sha = strconv.Itoa(n)+"/merge", head
			}
			ru := f.startRun(r, wf, event, ref, sha, nil, p.Sender.Login, payload)
			f.afterRunCreated(r, ru)
		}
	}
}

// TriggerSchedule starts a run of a workflow as its schedule would.
func (f *Fake) TriggerSchedule(repo, file string) (Run, error) {
	f.mu.Lock()
	r := f.lookupRepo(repo)
	if r == nil {
		f.mu.Unlock()
		return Run{}, fmt.Errorf("repository %s: %w", repo, ErrNotFound)
	}
	wf := r.workflows[file]
	if wf == nil {
		f.mu.Unlock()
		return Run{}, fmt.Errorf("workflow %s: %w", file, ErrNotFound)
	}
	cron := "*/5 * * * *"
	if wf.spec != nil {
		if len(wf.spec.Schedule) == 0 {
			f.mu.Unlock()
			return Run{}, fmt.Errorf("ghfake: workflow %s has no schedule trigger", file)
		}
		cron = wf.spec.Schedule[0]
	}
	sha, _ := r.ref("refs/heads/" + r.defaultBranch)
	payload, _ := json.Marshal(map[string]any{"schedule": cron, "repository": r.json(), "installation": f.installationJSON()})
	ru := f.startRun(r, wf, "schedule", r.defaultBranch, sha, nil, "github-actions[bot]", payload)
	f.afterRunCreated(r, ru)
	out := ru.copyRun()
	f.mu.Unlock()
	f.afterChange()
	return out, nil
}

// startRun creates a queued run, emits workflow_run.requested and
// workflow_job.queued, and calls the dispatch hooks. Caller holds f.mu.
func (f *Fake) startRun(r *Repo, wf *workflow, event, ref, sha string, inputs map[string]string, actor string, payload []byte) *run {
	now := f.now()
	wf.runs++
	title := wf.wf.Name
	switch {
	case wf.spec != nil && wf.spec.RunName != "":
		ctx := Contexts{"github": githubContext(r, wf, event, ref, sha, actor, payload, 0, 0), "inputs": inputsContext(inputs)}
		if t, err := InterpolateString(wf.spec.RunName, ctx, JobStatus{}); err == nil {
			title = t
		}
	case wf.wf.RunName != "":
		title = renderRunName(wf.wf.RunName, inputs, actor, ref, event, payload)
	}
	f.account(actor, "")
	ru := &run{Run: Run{
		ID: f.id("run"), JobID: f.id("job"), Repo: r.FullName(), Workflow: wf.file, WorkflowID: wf.id,
		Name: wf.wf.Name, DisplayTitle: title, JobName: wf.wf.JobName, Ref: ref, HeadSHA: sha,
		Inputs: inputs, Event: event, EventPayload: payload, Actor: actor, RunNumber: wf.runs,
		Status: "queued", CreatedAt: now, UpdatedAt: now,
	}, wf: wf}
	r.runs = append(r.runs, ru)
	if wf.spec != nil {
		f.addJobs(ru)
	}
	f.emitRun(r, ru, "requested", actor)
	if wf.spec == nil {
		f.emitJob(r, ru, "queued", actor)
	}
	snapshot := ru.copyRun()
	for _, h := range f.onDispatch {
		f.hooksWG.Add(1)
		go func() {
			defer f.hooksWG.Done()
			h(snapshot)
		}()
	}
	return ru
}

func (ru *run) copyRun() Run {
	out := ru.Run
	out.Inputs = map[string]string{}
	for k, v := range ru.Inputs {
		out.Inputs[k] = v
	}
	out.EventPayload = append([]byte(nil), ru.EventPayload...)
	return out
}

func (r *Repo) workflowJSON(wf *workflow) *github.Workflow {
	f := r.f
	return &github.Workflow{
		ID: github.Int64(wf.id), NodeID: nodeID("W", wf.id), Name: github.String(wf.wf.Name),
		Path: github.String(".github/workflows/" + wf.file), State: github.String("active"),
		URL:     github.String(f.api(fmt.Sprintf("/repos/%s/actions/workflows/%d", r.FullName(), wf.id))),
		HTMLURL: github.String(f.html("/" + r.FullName() + "/blob/" + r.defaultBranch + "/.github/workflows/" + wf.file)),
	}
}

func (r *Repo) runJSON(ru *run) *github.WorkflowRun {
	f := r.f
	base := fmt.Sprintf("/repos/%s/actions/runs/%d", r.FullName(), ru.ID)
	out := &github.WorkflowRun{
		ID: github.Int64(ru.ID), NodeID: nodeID("WFR", ru.ID), Name: github.String(ru.Name),
		DisplayTitle: github.String(ru.DisplayTitle), HeadBranch: github.String(ru.Ref), HeadSHA: github.String(ru.HeadSHA),
		Path: github.String(".github/workflows/" + ru.Workflow), RunNumber: github.Int(ru.RunNumber), RunAttempt: github.Int(1),
		Event: github.String(ru.Event), Status: github.String(ru.Status), WorkflowID: github.Int64(ru.WorkflowID),
		URL: github.String(f.api(base)), HTMLURL: github.String(f.html(fmt.Sprintf("/%s/actions/runs/%d", r.FullName(), ru.ID))),
		JobsURL: github.String(f.api(base + "/jobs")), LogsURL: github.String(f.api(base + "/logs")),
		CancelURL: github.String(f.api(base + "/cancel")), RerunURL: github.String(f.api(base + "/rerun")),
		WorkflowURL: github.String(f.api(fmt.Sprintf("/repos/%s/actions/workflows/%d", r.FullName(), ru.WorkflowID))),
		CreatedAt:   ts(ru.CreatedAt), UpdatedAt: ts(ru.UpdatedAt), RunStartedAt: ts(ru.CreatedAt),
		Repository: r.json(), HeadRepository: r.json(),
		Actor: f.userJSON(ru.Actor), TriggeringActor: f.userJSON(ru.Actor),
		PullRequests:  []*github.PullRequest{},
		ArtifactsURL:  github.String(f.api(base + "/artifacts")),
		CheckSuiteURL: github.String(f.api(fmt.Sprintf("/repos/%s/check-suites/%d", r.FullName(), ru.ID))),
	}
	if ru.Conclusion != "" {
		out.Conclusion = github.String(ru.Conclusion)
	}
	// head_commit: the run's commit as GitHub's simple-commit (required).
	if m := r.commitMetaOf(ru.HeadSHA); m.tree != "" {
		hc := &github.HeadCommit{ID: github.String(ru.HeadSHA), TreeID: github.String(m.tree), Message: github.String(m.message),
			Author:    &github.CommitAuthor{Name: github.String(m.authorName), Email: github.String(m.authorEmail)},
			Committer: &github.CommitAuthor{Name: github.String(m.committerName), Email: github.String(m.committerEm)}}
		if t, err := time.Parse(time.RFC3339, m.committed); err == nil {
			hc.Timestamp = &github.Timestamp{Time: t}
		}
		out.HeadCommit = hc
	}
	return out
}

func (r *Repo) jobJSON(ru *run) *github.WorkflowJob {
	f := r.f
	out := &github.WorkflowJob{
		ID: github.Int64(ru.JobID), RunID: github.Int64(ru.ID), NodeID: nodeID("CR", ru.JobID),
		RunURL:     github.String(f.api(fmt.Sprintf("/repos/%s/actions/runs/%d", r.FullName(), ru.ID))),
		HeadBranch: github.String(ru.Ref), HeadSHA: github.String(ru.HeadSHA),
		URL:     github.String(f.api(fmt.Sprintf("/repos/%s/actions/jobs/%d", r.FullName(), ru.JobID))),
		HTMLURL: github.String(f.html(fmt.Sprintf("/%s/actions/runs/%d/job/%d", r.FullName(), ru.ID, ru.JobID))),
		Status:  github.String(ru.Status), Name: github.String(ru.JobName), WorkflowName: github.String(ru.Name),
		CreatedAt: ts(ru.CreatedAt), StartedAt: ts(ru.started), CompletedAt: ts(ru.ended),
		RunAttempt: github.Int64(1), Labels: []string{"ubuntu-latest"}, Steps: []*github.TaskStep{},
	}
	if ru.Conclusion != "" {
		out.Conclusion = github.String(ru.Conclusion)
	}
	return out
}

func (f *Fake) emitRun(r *Repo, ru *run, action, sender string) {
	f.emit(r, "workflow_run", action, &github.WorkflowRunEvent{
		Action: github.String(action), Workflow: r.workflowJSON(ru.wf), WorkflowRun: r.runJSON(ru),
		Repo: r.json(), Sender: f.userJSON(sender), Installation: f.installationJSON(),
	})
}

func (f *Fake) emitJob(r *Repo, ru *run, action, sender string) {
	f.emit(r, "workflow_job", action, &github.WorkflowJobEvent{
		Action: github.String(action), WorkflowJob: r.jobJSON(ru),
		Repo: r.json(), Sender: f.userJSON(sender), Installation: f.installationJSON(),
	})
}

// findRun finds a run in any repository. Caller holds f.mu.
func (f *Fake) findRun(id int64) (*Repo, *run) {
	for _, r := range f.repos {
		for _, ru := range r.runs {
			if ru.ID == id {
				return r, ru
			}
		}
	}
	return nil, nil
}

// StartRun marks a queued run in progress, emitting workflow_run and
// workflow_job in_progress.
func (f *Fake) StartRun(id int64) error {
	f.mu.Lock()
	r, ru := f.findRun(id)
	if ru == nil {
		f.mu.Unlock()
		return fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if ru.isFileRun() {
		f.mu.Unlock()
		return fmt.Errorf("ghfake: run %d is of a workflow file: start its jobs (StartJob)", id)
	}
	if ru.Status != "queued" {
		f.mu.Unlock()
		return fmt.Errorf("ghfake: run %d is %s, not queued", id, ru.Status)
	}
	now := f.now()
	ru.Status, ru.started, ru.UpdatedAt = "in_progress", now, now
	f.emitJob(r, ru, "in_progress", ru.Actor)
	f.emitRun(r, ru, "in_progress", ru.Actor)
	f.mu.Unlock()
	f.afterChange()
	return nil
}

var conclusions = map[string]bool{
	"success": true, "failure": true, "cancelled": true, "skipped": true,
	"timed_out": true, "neutral": true, "action_required": true, "startup_failure": true,
}

// CompleteRun marks a run completed with a conclusion (success, failure,
// cancelled, timed_out, …) and emits workflow_job then workflow_run
// "completed", in GitHub's order.
func (f *Fake) CompleteRun(id int64, conclusion string) error {
	if !conclusions[conclusion] {
		return fmt.Errorf("ghfake: invalid conclusion %q", conclusion)
	}
	f.mu.Lock()
	err := f.completeRun(id, conclusion)
	f.mu.Unlock()
	f.afterChange()
	return err
}

func (f *Fake) completeRun(id int64, conclusion string) error {
	r, ru := f.findRun(id)
	if ru == nil {
		return fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if ru.Status == "completed" {
		return fmt.Errorf("ghfake: run %d already completed", id)
	}
	if ru.isFileRun() {
		// By hand: the jobs not done end with the run's conclusion.
		for _, j := range ru.jobs {
			if j.status != "completed" {
				c := conclusion
				if c != "success" && c != "failure" && c != "cancelled" && c != "skipped" {
					c = "failure"
				}
				f.endJob(r, ru, j, c)
			}
		}
		ru.cancelled = ru.cancelled || conclusion == "cancelled"
		f.finishRun(r, ru)
		ru.Conclusion = conclusion
		return nil
	}
	now := f.now()
	if ru.started.IsZero() {
		ru.started = now
	}
	ru.Status, ru.Conclusion, ru.ended, ru.UpdatedAt = "completed", conclusion, now, now
	f.emitJob(r, ru, "completed", ru.Actor)
	f.emitRun(r, ru, "completed", ru.Actor)
	return nil
}

// Runs returns every run of every repository, by id.
func (f *Fake) Runs() []Run {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Run
	for _, r := range f.repos {
		for _, ru := range r.runs {
			out = append(out, ru.copyRun())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// --- handlers ---

// listRepoRuns lists the runs of every workflow.
func (f *Fake) listRepoRuns(c *rc) { f.listRunsOf(c, nil) }

func (f *Fake) listWorkflowRuns(c *rc) {
	if wf := c.workflowParam(); wf != nil {
		f.listRunsOf(c, wf)
	}
}

// listRunsOf lists runs newest first, filtered like GitHub's (status also
// accepts a conclusion).
func (f *Fake) listRunsOf(c *rc, wf *workflow) {
	q := c.r.URL.Query()
	var list []*run
	for i := len(c.repo.runs) - 1; i >= 0; i-- {
		ru := c.repo.runs[i]
		if wf != nil && ru.wf != wf {
			continue
		}
		if s := q.Get("status"); s != "" && ru.Status != s && ru.Conclusion != s {
			continue
		}
		if e := q.Get("event"); e != "" && ru.Event != e {
			continue
		}
		if b := q.Get("branch"); b != "" && ru.Ref != b {
			continue
		}
		if a := q.Get("actor"); a != "" && !strings.EqualFold(ru.Actor, a) {
			continue
		}
		if s := q.Get("head_sha"); s != "" && ru.HeadSHA != s {
			continue
		}
		list = append(list, ru)
	}
	start, end := c.page(len(list))
	out := []*github.WorkflowRun{}
	for _, ru := range list[start:end] {
		out = append(out, c.repo.runJSON(ru))
	}
	// workflow_runs is required, [] when there are none (go-github's type
	// would drop an empty list).
	c.json(http.StatusOK, struct {
		TotalCount   int                   `json:"total_count"`
		WorkflowRuns []*github.WorkflowRun `json:"workflow_runs"`
	}{len(list), out})
}

func (c *rc) runParam() *run {
	id, ok := c.intParam("run_id")
	if !ok {
		return nil
	}
	for _, ru := range c.repo.runs {
		if ru.ID == id {
			return ru
		}
	}
	c.notFound()
	return nil
}

func (f *Fake) getRun(c *rc) {
	if ru := c.runParam(); ru != nil {
		c.json(http.StatusOK, c.repo.runJSON(ru))
	}
}

// cancelRun answers 202 like GitHub and completes the run as cancelled.
func (f *Fake) cancelRun(c *rc) {
	ru := c.runParam()
	if ru == nil {
		return
	}
	if ru.Status == "completed" {
		c.fail(http.StatusConflict, "Cannot cancel a workflow run that is completed.")
		return
	}
	if ru.isFileRun() {
		f.cancelFileRun(c.repo, ru)
	} else {
		_ = f.completeRun(ru.ID, "cancelled")
	}
	c.json(http.StatusAccepted, map[string]any{})
}

// pullRequestRun reports whether event runs on a pull request's merge ref
// (https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#pull_request):
// pull_request, pull_request_review and pull_request_review_comment do;
// pull_request_target runs on the base branch.
func pullRequestRun(event string, payload []byte) (int, string, bool) {
	switch event {
	case "pull_request", "pull_request_review", "pull_request_review_comment":
	default:
		return 0, "", false
	}
	var p struct {
		PullRequest struct {
			Number int `json:"number"`
			Head   struct {
				SHA string `json:"sha"`
			} `json:"head"`
		} `json:"pull_request"`
	}
	if json.Unmarshal(payload, &p) != nil || p.PullRequest.Number == 0 {
		return 0, "", false
	}
	return p.PullRequest.Number, p.PullRequest.Head.SHA, true
}

// fullRef is the full ref of a run's ref name: refs/pull/N/merge for a
// pull request's run, else a branch.
func fullRef(event, ref string) string {
	if _, _, ok := strings.Cut(ref, "/merge"); ok && strings.HasPrefix(event, "pull_request") && event != "pull_request_target" {
		if n, err := strconv.Atoi(strings.TrimSuffix(ref, "/merge")); err == nil && n > 0 {
			return "refs/pull/" + ref
		}
	}
	return "refs/heads/" + ref
}
