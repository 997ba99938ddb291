package ghfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// Check runs and commit statuses, the two kinds of "status checks" that
// protection rules require by name.

type checkRun struct {
	id                   int64
	suite                int64
	app                  string // creating bot's login, e.g. "bazinga[bot]"
	name, headSHA        string
	status, conclusion   string
	externalID, details  string
	title, summary, text string
	started, completed   time.Time
}

type checkSuite struct {
	id      int64
	app     string
	headSHA string
	// completedFor is the number of runs when completed was last emitted,
	// so that a suite completes again when a new run finishes.
	completedFor int
}

type commitStatus struct {
	id               int64
	sha, context     string
	state            string
	description, url string
	creator          string
	created, updated time.Time
}

// Check run statuses and conclusions GitHub accepts.
var (
	checkStatuses    = map[string]bool{"queued": true, "in_progress": true, "completed": true, "waiting": true, "requested": true, "pending": true}
	checkConclusions = map[string]bool{"action_required": true, "cancelled": true, "failure": true, "neutral": true, "success": true, "skipped": true, "stale": true, "timed_out": true}
	statusStates     = map[string]bool{"error": true, "failure": true, "pending": true, "success": true}
)

// conclusionRank orders conclusions worst first, for a suite's conclusion.
var conclusionRank = []string{"action_required", "cancelled", "timed_out", "failure", "neutral", "success", "skipped", "stale"}

// --- evaluation ---

// checkState is a required check's state on a commit: passing, failing or
// expected (absent or not finished).
type checkState int

const (
	checkExpected checkState = iota
	checkPassing
	checkFailing
)

// requiredState evaluates the check (or status context) name on sha: the
// latest check run of that name and the latest status of that context both
// count ("If you have a check and a status with the same name … both the
// check and the status are required": troubleshooting-required-status-
// checks). A check run passes with success, neutral or skipped. Caller
// holds f.mu.
func (r *Repo) requiredState(name, sha string) checkState {
	var run *checkRun
	for _, cr := range r.checkRuns {
		if cr.headSHA == sha && cr.name == name && (run == nil || cr.id > run.id) {
			run = cr
		}
	}
	var st *commitStatus
	for _, s := range r.statuses {
		if s.sha == sha && s.context == name && (st == nil || s.id > st.id) {
			st = s
		}
	}
	if run == nil && st == nil {
		return checkExpected
	}
	state := checkPassing
	if run != nil {
		switch {
		case run.status != "completed":
			state = checkExpected
		case run.conclusion != "success" && run.conclusion != "neutral" && run.conclusion != "skipped":
			return checkFailing
		}
	}
	if st != nil {
		switch st.state {
		case "failure", "error":
			return checkFailing
		case "pending":
			state = checkExpected
		}
	}
	return state
}

// checksMessage is GitHub's reason for required checks not passing on sha,
// or "" when they all pass. Caller holds f.mu.
func (r *Repo) checksMessage(required []string, sha string) string {
	var expected, failing []string
	for _, name := range required {
		switch r.requiredState(name, sha) {
		case checkExpected:
			expected = append(expected, name)
		case checkFailing:
			failing = append(failing, name)
		}
	}
	bad := len(expected) + len(failing)
	switch {
	case bad == 0:
		return ""
	case bad == 1 && len(failing) == 1:
		return fmt.Sprintf("Required status check %q is failing.", failing[0])
	case bad == 1:
		return fmt.Sprintf("Required status check %q is expected.", expected[0])
	case len(failing) == 0:
		return fmt.Sprintf("%d of %d required status checks are expected.", bad, len(required))
	}
	return fmt.Sprintf("%d of %d required status checks have not succeeded: %d expected and %d failing.",
		bad, len(required), len(expected), len(failing))
}

// othersFailing reports whether a check run or status on sha that no rule
// requires is failing or pending (mergeable_state "unstable"). Caller holds
// f.mu.
func (r *Repo) othersFailing(sha string, required map[string]bool) bool {
	names := map[string]bool{}
	for _, cr := range r.checkRuns {
		if cr.headSHA == sha && !required[cr.name] {
			names[cr.name] = true
		}
	}
	for _, s := range r.statuses {
		if s.sha == sha && !required[s.context] {
			names[s.context] = true
		}
	}
	for _, n := range sortedKeys(names) {
		if r.requiredState(n, sha) != checkPassing {
			return true
		}
	}
	return false
}

// --- helpers ---

// SetCheck records a check run named name on sha as the App's bot would
// create it: status queued, in_progress or completed, with conclusion when
// completed. A second call for the same name updates the latest run. It
// emits check_run (and check_suite completed) webhooks.
func (r *Repo) SetCheck(sha, name, status, conclusion string) error {
	return r.SetCheckAs(r.f.BotLogin(), sha, name, status, conclusion)
}

// SetCheckAs is SetCheck for the check runs of another GitHub App, e.g.
// "github-actions[bot]" for a CI workflow's jobs.
func (r *Repo) SetCheckAs(app, sha, name, status, conclusion string) error {
	if err := validCheck(name, status, conclusion); err != "" {
		return fmt.Errorf("ghfake: SetCheck: %s", err)
	}
	if !strings.HasSuffix(app, "[bot]") {
		return fmt.Errorf("ghfake: SetCheck: %q is not an App's bot login (want name[bot])", app)
	}
	return r.do(app, func() error {
		if r.objectType(sha) != "commit" {
			return fmt.Errorf("ghfake: SetCheck: commit %s: %w", sha, ErrNotFound)
		}
		var run *checkRun
		for _, cr := range r.checkRuns {
			if cr.headSHA == sha && cr.name == name && cr.app == app && (run == nil || cr.id > run.id) {
				run = cr
			}
		}
		if run == nil {
			r.f.createCheckRun(r, &checkRun{app: app, name: name, headSHA: sha, status: status, conclusion: conclusion}, app)
			return nil
		}
		r.f.updateCheckRun(r, run, status, conclusion, app)
		return nil
	})
}

// CheckRuns returns every check run on sha (all apps, reruns included), as
// the API renders them, oldest first.
func (r *Repo) CheckRuns(sha string) []*github.CheckRun {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	var out []*github.CheckRun
	for _, cr := range r.checkRuns {
		if cr.headSHA == sha {
			out = append(out, r.checkRunJSON(cr))
		}
	}
	return out
}

// Statuses returns every commit status on sha, oldest first.
func (r *Repo) Statuses(sha string) []*github.RepoStatus {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	var out []*github.RepoStatus
	for _, s := range r.statuses {
		if s.sha == sha {
			out = append(out, r.statusJSON(s))
		}
	}
	return out
}

// pullsAt are the open pull requests whose head is sha, as check runs and
// suites list them (minimal objects, as GitHub's). Caller holds f.mu.
func (r *Repo) pullsAt(sha string) []*github.PullRequest {
	out := []*github.PullRequest{}
	heads, _ := r.heads()
	repo := &github.Repository{ID: github.Int64(r.id), Name: github.String(r.name), URL: github.String(r.f.api("/repos/" + r.FullName()))}
	for _, is := range r.sortedPulls() {
		if is.state != "open" || is.pr.headSHA != sha {
			continue
		}
		out = append(out, &github.PullRequest{
			ID: github.Int64(is.pr.id), Number: github.Int(is.number),
			URL:  github.String(r.f.api(fmt.Sprintf("/repos/%s/pulls/%d", r.FullName(), is.number))),
			Head: &github.PullRequestBranch{Ref: github.String(is.pr.head), SHA: github.String(sha), Repo: repo},
			Base: &github.PullRequestBranch{Ref: github.String(is.pr.base), SHA: github.String(heads["refs/heads/"+is.pr.base]), Repo: repo},
		})
	}
	return out
}

// SetStatus records a commit status (pending, success, failure or error)
// for context on sha, emitting a status webhook.
func (r *Repo) SetStatus(sha, context, state string) error {
	if !statusStates[state] {
		return fmt.Errorf("ghfake: SetStatus: state %q is not one of error, failure, pending, success", state)
	}
	if context == "" {
		context = "default"
	}
	return r.do(r.f.BotLogin(), func() error {
		if r.objectType(sha) != "commit" {
			return fmt.Errorf("ghfake: SetStatus: commit %s: %w", sha, ErrNotFound)
		}
		r.f.createStatus(r, &commitStatus{sha: sha, context: context, state: state, creator: r.f.BotLogin()})
		return nil
	})
}

func validCheck(name, status, conclusion string) string {
	if strings.TrimSpace(name) == "" {
		return "name is empty"
	}
	if status == "" {
		status = "queued"
	}
	if !checkStatuses[status] {
		return fmt.Sprintf("status %q is not one of queued, in_progress, completed", status)
	}
	if status == "completed" && !checkConclusions[conclusion] {
		return fmt.Sprintf("a completed check run needs a conclusion, got %q", conclusion)
	}
	if status != "completed" && conclusion != "" {
		return fmt.Sprintf("conclusion %q given for status %q (only completed runs conclude)", conclusion, status)
	}
	return ""
}

// --- state changes (caller holds f.mu) ---

func (f *Fake) suiteFor(r *Repo, app, sha string) *checkSuite {
	for _, s := range r.suites {
		if s.app == app && s.headSHA == sha {
			return s
		}
	}
	f.nextID["suite"]++
	s := &checkSuite{id: 8_000_000 + f.nextID["suite"], app: app, headSHA: sha}
	r.suites = append(r.suites, s)
	return s
}

func (f *Fake) createCheckRun(r *Repo, cr *checkRun, sender string) {
	f.nextID["check_run"]++
	cr.id = 9_000_000 + f.nextID["check_run"]
	if cr.status == "" {
		cr.status = "queued"
	}
	now := f.now()
	if cr.started.IsZero() {
		cr.started = now
	}
	if cr.status == "completed" && cr.completed.IsZero() {
		cr.completed = now
	}
	cr.suite = f.suiteFor(r, cr.app, cr.headSHA).id
	r.checkRuns = append(r.checkRuns, cr)
	f.emitCheckRun(r, cr, "created", sender)
	if cr.status == "completed" {
		f.emitCheckRun(r, cr, "completed", sender)
		f.maybeCompleteSuite(r, cr.suite, sender)
	}
}

func (f *Fake) updateCheckRun(r *Repo, cr *checkRun, status, conclusion, sender string) {
	was := cr.status
	if status != "" {
		cr.status = status
	}
	if conclusion != "" {
		cr.conclusion = conclusion
		cr.status = "completed"
	}
	if cr.status == "completed" && cr.completed.IsZero() {
		cr.completed = f.now()
	}
	if cr.status == "completed" && was != "completed" {
		f.emitCheckRun(r, cr, "completed", sender)
		f.maybeCompleteSuite(r, cr.suite, sender)
	}
}

func (f *Fake) maybeCompleteSuite(r *Repo, suiteID int64, sender string) {
	var s *checkSuite
	for _, x := range r.suites {
		if x.id == suiteID {
			s = x
		}
	}
	if s == nil {
		return
	}
	runs := r.suiteRuns(s)
	for _, cr := range runs {
		if cr.status != "completed" {
			return
		}
	}
	if len(runs) == 0 || s.completedFor == len(runs) {
		return
	}
	s.completedFor = len(runs)
	f.emit(r, "check_suite", "completed", &github.CheckSuiteEvent{
		Action: github.String("completed"), CheckSuite: r.suiteJSON(s),
		Repo: r.fullJSON(), Sender: f.userJSON(sender), Installation: f.installationJSON(),
	})
}

func (r *Repo) suiteRuns(s *checkSuite) []*checkRun {
	var out []*checkRun
	for _, cr := range r.checkRuns {
		if cr.suite == s.id {
			out = append(out, cr)
		}
	}
	return out
}

func (f *Fake) createStatus(r *Repo, st *commitStatus) {
	f.nextID["status"]++
	st.id = 7_000_000 + f.nextID["status"]
	st.created = f.now()
	st.updated = st.created
	r.statuses = append(r.statuses, st)
	ev := &github.StatusEvent{
		ID: github.Int64(st.id), SHA: github.String(st.sha), Name: github.String(r.FullName()),
		State: github.String(st.state), Context: github.String(st.context),
		Description: github.String(st.description), TargetURL: github.String(st.url),
		Commit:    &github.RepositoryCommit{SHA: github.String(st.sha), URL: github.String(f.api("/repos/" + r.FullName() + "/commits/" + st.sha))},
		Branches:  r.branchesAt(st.sha),
		CreatedAt: ts(st.created), UpdatedAt: ts(st.updated),
		Repo: r.fullJSON(), Sender: f.userJSON(st.creator), Installation: f.installationJSON(),
	}
	if st.description == "" {
		ev.Description = nil
	}
	if st.url == "" {
		ev.TargetURL = nil
	}
	f.emit(r, "status", "", ev)
}

// branchesAt lists the branches whose tip is sha, as a status event does.
func (r *Repo) branchesAt(sha string) []*github.Branch {
	heads, _ := r.heads()
	out := []*github.Branch{}
	for _, ref := range sortedKeys(heads) {
		if heads[ref] == sha {
			out = append(out, &github.Branch{Name: github.String(strings.TrimPrefix(ref, "refs/heads/")),
				Commit: &github.RepositoryCommit{SHA: github.String(sha)}, Protected: github.Bool(r.protectedBranch(strings.TrimPrefix(ref, "refs/heads/")))})
		}
	}
	return out
}

func (f *Fake) emitCheckRun(r *Repo, cr *checkRun, action, sender string) {
	f.emit(r, "check_run", action, &github.CheckRunEvent{
		Action: github.String(action), CheckRun: r.checkRunJSON(cr),
		Repo: r.fullJSON(), Sender: f.userJSON(sender), Installation: f.installationJSON(),
	})
}

// --- rendering ---

func (f *Fake) botApp(login string) *github.App {
	slug := strings.TrimSuffix(login, "[bot]")
	id := f.opts.AppID
	if slug != f.opts.AppSlug {
		id = 15368 // GitHub Actions' app id on github.com
	}
	if id == f.opts.AppID {
		return f.appJSON()
	}
	// GitHub Actions' own app, as check runs on github.com show it.
	created := &github.Timestamp{Time: time.Date(2018, 7, 30, 9, 30, 17, 0, time.UTC)}
	return &github.App{ID: github.Int64(id), Slug: github.String(slug), Name: github.String("GitHub Actions"), NodeID: nodeID("A", id),
		Owner: f.userJSON("github"), Description: github.String("Automate your workflow from idea to production"),
		ExternalURL: github.String("https://help.github.com/en/actions"), HTMLURL: github.String(f.html("/apps/" + slug)),
		CreatedAt: created, UpdatedAt: created, Permissions: allPermissions(),
		Events: []string{"check_run", "check_suite", "pull_request", "push", "workflow_dispatch", "workflow_run"}}
}

func (r *Repo) checkRunJSON(cr *checkRun) *github.CheckRun {
	f := r.f
	out := &github.CheckRun{
		ID: github.Int64(cr.id), NodeID: nodeID("CR", cr.id), Name: github.String(cr.name),
		HeadSHA: github.String(cr.headSHA), Status: github.String(cr.status),
		StartedAt: ts(cr.started), CompletedAt: ts(cr.completed),
		URL:     github.String(f.api(fmt.Sprintf("/repos/%s/check-runs/%d", r.FullName(), cr.id))),
		HTMLURL: github.String(f.html(fmt.Sprintf("/%s/runs/%d", r.FullName(), cr.id))),
		App:     f.botApp(cr.app),
		Output: &github.CheckRunOutput{AnnotationsCount: github.Int(0),
			AnnotationsURL: github.String(f.api(fmt.Sprintf("/repos/%s/check-runs/%d/annotations", r.FullName(), cr.id)))},
		CheckSuite:   &github.CheckSuite{ID: github.Int64(cr.suite)},
		PullRequests: r.pullsAt(cr.headSHA),
	}
	if cr.conclusion != "" {
		out.Conclusion = github.String(cr.conclusion)
	}
	if cr.externalID != "" {
		out.ExternalID = github.String(cr.externalID)
	}
	if cr.details != "" {
		out.DetailsURL = github.String(cr.details)
	}
	if cr.title != "" {
		out.Output.Title = github.String(cr.title)
	}
	if cr.summary != "" {
		out.Output.Summary = github.String(cr.summary)
	}
	if cr.text != "" {
		out.Output.Text = github.String(cr.text)
	}
	return out
}

func (r *Repo) suiteJSON(s *checkSuite) *github.CheckSuite {
	runs := r.suiteRuns(s)
	status, conclusion := "completed", ""
	best := len(conclusionRank)
	for _, cr := range runs {
		if cr.status != "completed" {
			status = "in_progress"
			continue
		}
		for i, c := range conclusionRank {
			if c == cr.conclusion && i < best {
				best = i
			}
		}
	}
	out := &github.CheckSuite{
		ID: github.Int64(s.id), NodeID: nodeID("CS", s.id), HeadSHA: github.String(s.headSHA),
		Status: github.String(status), App: r.f.botApp(s.app),
		URL:                  github.String(r.f.api(fmt.Sprintf("/repos/%s/check-suites/%d", r.FullName(), s.id))),
		LatestCheckRunsCount: github.Int64(int64(len(runs))),
		PullRequests:         r.pullsAt(s.headSHA),
	}
	if status == "completed" && best < len(conclusionRank) {
		conclusion = conclusionRank[best]
		out.Conclusion = github.String(conclusion)
	}
	for _, b := range r.branchesAt(s.headSHA) {
		out.HeadBranch = b.Name
		break
	}
	return out
}

func (r *Repo) statusJSON(s *commitStatus) *github.RepoStatus {
	f := r.f
	out := &github.RepoStatus{
		ID: github.Int64(s.id), NodeID: nodeID("SC", s.id), State: github.String(s.state), Context: github.String(s.context),
		URL:       github.String(f.api("/repos/" + r.FullName() + "/statuses/" + s.sha)),
		AvatarURL: github.String(f.html("/avatars/" + s.creator)),
		Creator:   f.userJSON(s.creator), CreatedAt: ts(s.created), UpdatedAt: ts(s.updated),
	}
	if s.description != "" {
		out.Description = github.String(s.description)
	}
	if s.url != "" {
		out.TargetURL = github.String(s.url)
	}
	return out
}

// --- endpoints ---

type checkRunRequest struct {
	Name        *string    `json:"name"`
	HeadSHA     *string    `json:"head_sha"`
	Status      *string    `json:"status"`
	Conclusion  *string    `json:"conclusion"`
	DetailsURL  *string    `json:"details_url"`
	ExternalID  *string    `json:"external_id"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	Output      *struct {
		Title   *string `json:"title"`
		Summary *string `json:"summary"`
		Text    *string `json:"text"`
	} `json:"output"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// createCheckRunAPI serves POST /repos/{o}/{r}/check-runs. Only GitHub Apps
// create check runs.
func (f *Fake) createCheckRunAPI(c *rc) {
	if c.kind != Bot {
		c.fail(http.StatusForbidden, "You must authenticate via a GitHub App.")
		return
	}
	var req checkRunRequest
	if !c.decode(&req) {
		return
	}
	switch {
	case req.Name == nil || strings.TrimSpace(*req.Name) == "":
		c.invalid(fieldError{Resource: "CheckRun", Field: "name", Code: "missing_field"})
		return
	case req.HeadSHA == nil || *req.HeadSHA == "":
		c.invalid(fieldError{Resource: "CheckRun", Field: "head_sha", Code: "missing_field"})
		return
	}
	sha, ok := c.repo.resolve(*req.HeadSHA)
	if !ok || sha != *req.HeadSHA {
		c.fail(http.StatusUnprocessableEntity, "No commit found for SHA: "+*req.HeadSHA)
		return
	}
	status, conclusion := str(req.Status), str(req.Conclusion)
	if conclusion != "" && status == "" {
		status = "completed" // GitHub: providing a conclusion sets the status to completed
	}
	if status == "" {
		status = "queued"
	}
	if msg := validCheck(*req.Name, status, conclusion); msg != "" {
		c.invalid(fieldError{Resource: "CheckRun", Code: "custom", Message: msg})
		return
	}
	cr := &checkRun{app: c.login, name: *req.Name, headSHA: sha, status: status, conclusion: conclusion,
		externalID: str(req.ExternalID), details: str(req.DetailsURL)}
	if req.StartedAt != nil {
		cr.started = *req.StartedAt
	}
	if req.CompletedAt != nil {
		cr.completed = *req.CompletedAt
	}
	if req.Output != nil {
		cr.title, cr.summary, cr.text = str(req.Output.Title), str(req.Output.Summary), str(req.Output.Text)
	}
	f.createCheckRun(c.repo, cr, c.login)
	c.hdr.Set("Location", f.api(fmt.Sprintf("/repos/%s/check-runs/%d", c.repo.FullName(), cr.id)))
	c.json(http.StatusCreated, c.repo.checkRunJSON(cr))
}

func (c *rc) checkRunParam() *checkRun {
	id, ok := c.intParam("check_run_id")
	if !ok {
		return nil
	}
	for _, cr := range c.repo.checkRuns {
		if cr.id == id {
			return cr
		}
	}
	c.notFound()
	return nil
}

func (f *Fake) getCheckRunAPI(c *rc) {
	if cr := c.checkRunParam(); cr != nil {
		c.json(http.StatusOK, c.repo.checkRunJSON(cr))
	}
}

// updateCheckRunAPI serves PATCH /repos/{o}/{r}/check-runs/{id}; only the
// app that created a run may change it.
func (f *Fake) updateCheckRunAPI(c *rc) {
	cr := c.checkRunParam()
	if cr == nil {
		return
	}
	if !strings.EqualFold(cr.app, c.login) {
		c.fail(http.StatusForbidden, "Invalid app_id `"+strconv.FormatInt(f.botApp(c.login).GetID(), 10)+"` - check run can only be modified by the GitHub App that created it.")
		return
	}
	var req checkRunRequest
	if !c.decode(&req) {
		return
	}
	status, conclusion := str(req.Status), str(req.Conclusion)
	if conclusion != "" && status == "" {
		status = "completed"
	}
	check := status
	if check == "" {
		check = cr.status
	}
	if msg := validCheck(cr.name, check, conclusion); msg != "" && !(check == "completed" && conclusion == "" && cr.conclusion != "") {
		c.invalid(fieldError{Resource: "CheckRun", Code: "custom", Message: msg})
		return
	}
	if req.Name != nil && strings.TrimSpace(*req.Name) != "" {
		cr.name = *req.Name
	}
	if req.DetailsURL != nil {
		cr.details = *req.DetailsURL
	}
	if req.Output != nil {
		cr.title, cr.summary, cr.text = str(req.Output.Title), str(req.Output.Summary), str(req.Output.Text)
	}
	if req.CompletedAt != nil {
		cr.completed = *req.CompletedAt
	}
	f.updateCheckRun(c.repo, cr, status, conclusion, c.login)
	c.json(http.StatusOK, c.repo.checkRunJSON(cr))
}

// listCheckRunsForRef serves GET /repos/{o}/{r}/commits/{ref}/check-runs:
// by default only the latest run of each name (filter=latest).
func (f *Fake) listCheckRunsForRef(c *rc) {
	sha, ok := c.repo.resolve(c.param("ref"))
	if !ok {
		c.fail(http.StatusUnprocessableEntity, "No commit found for SHA: "+c.param("ref"))
		return
	}
	q := c.r.URL.Query()
	filter := q.Get("filter")
	if filter == "" {
		filter = "latest"
	}
	if filter != "latest" && filter != "all" {
		c.invalid(fieldError{Resource: "CheckRun", Field: "filter", Code: "invalid"})
		return
	}
	latest := map[string]*checkRun{}
	var list []*checkRun
	for _, cr := range c.repo.checkRuns {
		if cr.headSHA != sha {
			continue
		}
		if n := q.Get("check_name"); n != "" && cr.name != n {
			continue
		}
		if s := q.Get("status"); s != "" && cr.status != s {
			continue
		}
		if a := q.Get("app_id"); a != "" && strconv.FormatInt(f.botApp(cr.app).GetID(), 10) != a {
			continue
		}
		if filter == "latest" {
			if old := latest[cr.app+"\x00"+cr.name]; old == nil || cr.id > old.id {
				latest[cr.app+"\x00"+cr.name] = cr
			}
			continue
		}
		list = append(list, cr)
	}
	for _, cr := range latest {
		list = append(list, cr)
	}
	// Newest first, as GitHub lists them.
	sort.Slice(list, func(i, j int) bool { return list[i].id > list[j].id })
	start, end := c.page(len(list))
	out := []*github.CheckRun{}
	for _, cr := range list[start:end] {
		out = append(out, c.repo.checkRunJSON(cr))
	}
	// check_runs is required, empty or not (go-github's type omits an empty list).
	c.json(http.StatusOK, map[string]any{"total_count": len(list), "check_runs": out})
}

type statusRequest struct {
	State       *string `json:"state"`
	TargetURL   *string `json:"target_url"`
	Description *string `json:"description"`
	Context     *string `json:"context"`
}

// createStatusAPI serves POST /repos/{o}/{r}/statuses/{sha}.
func (f *Fake) createStatusAPI(c *rc) {
	var req statusRequest
	if !c.decode(&req) {
		return
	}
	sha := c.param("sha")
	if req.State == nil || !statusStates[*req.State] {
		c.invalid(fieldError{Resource: "Status", Field: "state", Code: "custom",
			Message: "state is not included in the list"})
		return
	}
	if full, ok := c.repo.resolve(sha); !ok || full != sha {
		c.fail(http.StatusUnprocessableEntity, "No commit found for SHA: "+sha)
		return
	}
	st := &commitStatus{sha: sha, state: *req.State, context: str(req.Context), description: str(req.Description),
		url: str(req.TargetURL), creator: c.login}
	if st.context == "" {
		st.context = "default"
	}
	f.createStatus(c.repo, st)
	c.hdr.Set("Location", f.api("/repos/"+c.repo.FullName()+"/statuses/"+sha))
	c.json(http.StatusCreated, c.repo.statusJSON(st))
}

// combinedStatus serves GET /repos/{o}/{r}/commits/{ref}/status: the
// latest status per context; failure if any is failure or error, pending if
// any is pending or there are none, success otherwise.
func (f *Fake) combinedStatus(c *rc) {
	sha, ok := c.repo.resolve(c.param("ref"))
	if !ok {
		c.fail(http.StatusUnprocessableEntity, "No commit found for SHA: "+c.param("ref"))
		return
	}
	latest := map[string]*commitStatus{}
	for _, s := range c.repo.statuses {
		if s.sha == sha && (latest[s.context] == nil || s.id > latest[s.context].id) {
			latest[s.context] = s
		}
	}
	state := "success"
	if len(latest) == 0 {
		state = "pending"
	}
	list := []*commitStatus{}
	for _, k := range sortedKeys(latest) {
		s := latest[k]
		list = append(list, s)
		switch {
		case s.state == "failure" || s.state == "error":
			state = "failure"
		case s.state == "pending" && state != "failure":
			state = "pending"
		}
	}
	start, end := c.page(len(list))
	out := []*github.RepoStatus{}
	for _, s := range list[start:end] {
		out = append(out, c.repo.statusJSON(s))
	}
	c.json(http.StatusOK, map[string]any{
		"state": state, "statuses": out, "sha": sha, "total_count": len(list),
		"repository": c.repo.json(),
		"commit_url": f.api("/repos/" + c.repo.FullName() + "/commits/" + sha),
		"url":        f.api("/repos/" + c.repo.FullName() + "/commits/" + sha + "/status"),
	})
}

// --- a fake CI ---

// CI is a continuous-integration job reporting one check run per commit,
// as a workflow "on: push" and "on: pull_request" does: it runs when a
// branch is pushed and when a pull request is opened through the API —
// unless GITHUB_TOKEN (github-actions[bot]) did it, because events a
// GITHUB_TOKEN causes start no workflow runs (docs: "Triggering a workflow
// from a workflow"). That is why commits a job pushes with GITHUB_TOKEN
// never get required checks.
//
// As on GitHub, a run concludes after the push, never at push time: its
// check run is queued when the commit arrives and completes Duration later.
// CI of GitHub Actions (App github-actions[bot]) is also a workflow run of
// the workflow named Workflow, on the pushed branch, whose completion
// triggers the workflows that name it under `on: workflow_run` (the
// check_suite it completes triggers none: GitHub starts no workflow for
// suites GitHub Actions created).
type CI struct {
	// Name is the check run's name (a required check names it): the CI
	// job's name.
	Name string
	// App is the login of the App reporting the run; default
	// "github-actions[bot]".
	App string
	// Conclude decides a commit's conclusion ("success", "failure", …);
	// "" leaves the run queued. nil concludes every run with success.
	Conclude func(sha string) string
	// Workflow is the CI workflow's name (GitHub Actions CI only); default
	// "CI".
	Workflow string
	// Duration is how long a run takes; default 300ms.
	Duration time.Duration
}

// DefaultCIDuration is how long a fake CI run takes by default.
const DefaultCIDuration = 300 * time.Millisecond

// AddCI registers a CI job on the repository.
func (r *Repo) AddCI(ci CI) error {
	if strings.TrimSpace(ci.Name) == "" {
		return fmt.Errorf("ghfake: AddCI: empty name")
	}
	if ci.App == "" {
		ci.App = ActionsLogin
	}
	if !strings.HasSuffix(ci.App, "[bot]") {
		return fmt.Errorf("ghfake: AddCI: %q is not an App's bot login (want name[bot])", ci.App)
	}
	if ci.Workflow == "" {
		ci.Workflow = "CI"
	}
	if ci.Duration <= 0 {
		ci.Duration = DefaultCIDuration
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.ci = append(r.ci, ci)
	if ci.App == ActionsLogin {
		file := ciWorkflowFile(ci.Workflow)
		if _, ok := r.workflows[file]; !ok {
			r.workflows[file] = &workflow{id: r.f.id("workflow"), file: file, wf: Workflow{Name: ci.Workflow, JobName: ci.Name}}
		}
	}
	return nil
}

// ciWorkflowFile is the file of a CI workflow named name.
func ciWorkflowFile(name string) string {
	return "ci-" + strings.ToLower(strings.Join(strings.Fields(name), "-")) + ".yml"
}

// runCI runs the CI jobs on sha for an event sender caused: a push of
// branch, or a pull request opened on it (event). Caller holds f.mu.
func (f *Fake) runCI(r *Repo, sha, branch, event, sender string) {
	if sha == "" || sha == zeroSHA {
		return
	}
	if strings.EqualFold(sender, ActionsLogin) {
		f.awaitApproval(r, sha, branch, event)
		return
	}
	for _, ci := range r.ci {
		done := false
		for _, cr := range r.checkRuns {
			if cr.headSHA == sha && cr.name == ci.Name && cr.app == ci.App {
				done = true
			}
		}
		if done {
			continue
		}
		conclusion := "success"
		if ci.Conclude != nil {
			conclusion = ci.Conclude(sha)
		}
		if conclusion != "" && !checkConclusions[conclusion] {
			f.logf("ghfake: CI %s: unknown conclusion %q; using failure", ci.Name, conclusion)
			conclusion = "failure"
		}
		var ru *run
		if wf := r.workflows[ciWorkflowFile(ci.Workflow)]; wf != nil && ci.App == ActionsLogin {
			payload, _ := json.Marshal(map[string]any{"ref": "refs/heads/" + branch, "after": sha,
				"repository": r.json(), "sender": f.userJSON(sender), "installation": f.installationJSON()})
			ru = f.startRun(r, wf, event, branch, sha, nil, sender, payload)
		}
		f.concludeCI(r, ci, sha, ru, conclusion)
	}
}

// concludeCI queues ci's check run on sha and concludes it (and its
// workflow run ru, if any) ci.Duration later; conclusion "" leaves it
// queued. Caller holds f.mu.
func (f *Fake) concludeCI(r *Repo, ci CI, sha string, ru *run, conclusion string) {
	cr := &checkRun{app: ci.App, name: ci.Name, headSHA: sha, status: "queued"}
	f.createCheckRun(r, cr, ci.App)
	if conclusion == "" {
		return // stays queued
	}
	f.hooksWG.Add(1)
	go func() {
		defer f.hooksWG.Done()
		select {
		case <-f.closing:
			return
		case <-time.After(ci.Duration):
		}
		f.mu.Lock()
		f.updateCheckRun(r, cr, "completed", conclusion, ci.App)
		if ru != nil && ru.Status != "completed" {
			_ = f.completeRun(ru.ID, conclusion)
		}
		f.mu.Unlock()
		f.afterChange()
	}()
}

// awaitApproval: since 2026-06-11 a pull request that a GITHUB_TOKEN opens
// or updates gets pull_request runs of GitHub Actions CI, which wait until
// a person with write access approves them (as those of a first-time
// contributor's fork do): the run is created completed with conclusion
// action_required, reports no check run, fires no workflow_run, and runs
// only once approved (POST /repos/{owner}/{repo}/actions/runs/{id}/approve,
// the "Approve and run workflows" button). A plain push by a GITHUB_TOKEN
// still starts nothing. Caller holds f.mu.
func (f *Fake) awaitApproval(r *Repo, sha, branch, event string) {
	if event != "pull_request" {
		open := false
		for _, is := range r.issues {
			if is.pr != nil && is.state == "open" && is.pr.head == branch {
				open = true
			}
		}
		if !open {
			return
		}
		event = "pull_request"
	}
	for _, ci := range r.ci {
		wf := r.workflows[ciWorkflowFile(ci.Workflow)]
		if ci.App != ActionsLogin || wf == nil {
			continue
		}
		payload, _ := json.Marshal(map[string]any{"action": "synchronize", "repository": r.json(), "sender": f.userJSON(ActionsLogin), "installation": f.installationJSON()})
		ru := f.startRun(r, wf, event, branch, sha, nil, ActionsLogin, payload)
		now := f.now()
		ru.Status, ru.Conclusion, ru.UpdatedAt = "completed", "action_required", now
		c := ci
		ru.awaiting = &c
	}
}

// approve runs a run that waits for approval, as approver. Caller holds
// f.mu.
func (f *Fake) approve(r *Repo, ru *run, approver string) (int, string) {
	if ru.awaiting == nil || ru.Conclusion != "action_required" {
		return http.StatusForbidden, "This workflow run is not waiting for approval"
	}
	if strings.HasSuffix(approver, "[bot]") {
		// A person with write access approves; a workflow cannot approve
		// the runs its own token caused.
		return http.StatusForbidden, "Resource not accessible by integration"
	}
	if p := f.roleOf(r, approver); p != "admin" && p != "maintain" && p != "write" {
		return http.StatusForbidden, "Must have admin rights to Repository."
	}
	ci := *ru.awaiting
	ru.awaiting = nil
	ru.Status, ru.Conclusion, ru.Actor, ru.UpdatedAt = "queued", "", approver, f.now()
	conclusion := "success"
	if ci.Conclude != nil {
		conclusion = ci.Conclude(ru.HeadSHA)
	}
	if conclusion != "" && !checkConclusions[conclusion] {
		conclusion = "failure"
	}
	f.concludeCI(r, ci, ru.HeadSHA, ru, conclusion)
	return http.StatusCreated, ""
}

func (f *Fake) approveRun(c *rc) {
	ru := c.runParam()
	if ru == nil {
		return
	}
	if status, msg := f.approve(c.repo, ru, c.login); msg != "" {
		c.fail(status, msg)
		return
	}
	c.json(http.StatusCreated, map[string]any{})
}

// ApproveRun presses "Approve and run workflows" for a run waiting for
// approval, as user.
func (r *Repo) ApproveRun(user string, id int64) error {
	return r.do(user, func() error {
		_, ru := r.f.findRun(id)
		if ru == nil {
			return fmt.Errorf("run %d: %w", id, ErrNotFound)
		}
		if _, msg := r.f.approve(r, ru, user); msg != "" {
			return fmt.Errorf("ghfake: approve run %d: %s", id, msg)
		}
		return nil
	})
}
