package bot

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"
)

// The core's test harness: the fake GitHub, the real go-github client over
// the transport chain, webhooks recorded into a queue, and the "jobs"
// simulated in-process for every workflow run, one at a time, so that a
// session's API calls come in the same order in every run.

const (
	coreOwner  = "acme"
	coreRepo   = "widgets"
	coreBotTok = "ghs_core_bot"
	coreSecret = "core-webhook-secret"
)

var (
	coreSigningKey = codec.SigningKeyFromSecret([]byte("core-test-state-secret"))
	corePublicKey  = coreSigningKey.Public().(ed25519.PublicKey)
)

type coreClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *coreClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *coreClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Sleep is the transport's wait on this clock: it moves the clock.
func (c *coreClock) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	return ctx.Err()
}

type coreHarness struct {
	t     testing.TB
	ctx   context.Context
	f     *ghfake.Fake
	repo  *ghfake.Repo
	bot   *Bot
	clock *coreClock
	tr    *ghapi.Transport

	mu     sync.Mutex
	queue  []Delivery
	all    []Delivery
	ran    map[int64]bool
	groups int
	// planGroups are the groups the simulated pm plans.
	issue     int
	botErrs   []error
	dupClaims int
	jobFails  int
	// hold, when set, keeps runs from being worked on (a job that never ends).
	hold func(step string) bool
	// usage, when set, is what each job's agent reports it cost.
	usage func(ref codec.StepRef) *pipeline.Usage
}

type coreOpts struct {
	groups int
	config string // .github/bazinga.yml, if any
	// rateLimit is the fake's primary limit per identity and hour (0: 5000).
	rateLimit int
}

func newCoreHarness(t testing.TB, o coreOpts) *coreHarness {
	t.Helper()
	clock := &coreClock{t: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)}
	f := ghfake.Start(t, ghfake.Options{WebhookMode: ghfake.Sync, Now: clock.Now, RateLimit: o.rateLimit})
	files := map[string]string{"README.md": "# widgets\n"}
	if o.config != "" {
		files[".github/bazinga.yml"] = o.config
	}
	repo, err := f.CreateRepo(coreOwner, coreRepo, "main")
	require.NoError(t, err)
	_, err = repo.Push(coreOwner, "main", files, "Initial commit")
	require.NoError(t, err)
	// The App's installation token carries exactly app.yml's permissions.
	require.NoError(t, f.AddAppToken(coreBotTok, "../app.yml"))
	f.SetPermission("alice", "write")
	f.SetPermission("mallory", "read")
	require.NoError(t, f.AddWorkflow(coreOwner+"/"+coreRepo, "bazinga-agent.yml", ghfake.Workflow{
		RunName: "bazinga ${{ inputs.step }}",
		Inputs:  map[string]ghfake.WorkflowInput{"step": {Required: true}},
	}))
	h := &coreHarness{t: t, ctx: context.Background(), f: f, repo: repo, clock: clock, ran: map[int64]bool{}, groups: o.groups}
	// Webhooks and API calls stay in the process (no sockets); the
	// production transport chain is still the bot's.
	f.SetWebhookHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct {
			Action       string `json:"action"`
			Installation struct {
				ID int64 `json:"id"`
			} `json:"installation"`
			Repository struct {
				FullName string `json:"full_name"`
			} `json:"repository"`
		}
		_ = json.Unmarshal(body, &p)
		d := Delivery{ID: r.Header.Get("X-GitHub-Delivery"), Event: r.Header.Get("X-GitHub-Event"), Action: p.Action,
			Installation: p.Installation.ID, Repo: p.Repository.FullName, Payload: body, Received: clock.Now()}
		h.mu.Lock()
		h.queue = append(h.queue, d)
		h.all = append(h.all, d)
		h.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}), coreSecret)
	// Rate-limit waits are on the fake clock: a near reset is waited for
	// without waiting.
	h.tr = ghapi.NewTransport(f.Transport(), ghapi.TransportOptions{MaxRetries: 2, BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
		APIPrefix: "/api/v3", Identity: "core-bot", Now: clock.Now, Sleep: clock.Sleep})
	h.bot = h.newBot()
	return h
}

// botClient is the bot's go-github client over the transport chain.
func (h *coreHarness) botClient() *github.Client {
	c := github.NewClient(&http.Client{Transport: h.tr}).WithAuthToken(coreBotTok)
	c, err := c.WithEnterpriseURLs(h.f.APIURL(), h.f.URL()+"/api/uploads/")
	require.NoError(h.t, err)
	return c
}

// newBot is a bot process: a restart gets a fresh one (no memory).
func (h *coreHarness) newBot() *Bot {
	gh := ghapi.New(h.botClient())
	b, err := New(Options{
		Client:     func(context.Context, int64) (GitHub, error) { return gh, nil },
		Login:      h.f.BotLogin(),
		Now:        h.clock.Now,
		SigningKey: coreSigningKey,
	})
	require.NoError(h.t, err)
	return b
}

func (h *coreHarness) pop() (Delivery, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.queue) == 0 {
		return Delivery{}, false
	}
	d := h.queue[0]
	h.queue = h.queue[1:]
	return d, true
}

// process hands one delivery to the bot, as the server would.
func (h *coreHarness) process(d Delivery) error {
	h.clock.Advance(time.Second)
	err := h.bot.Process(h.ctx, d)
	if err != nil && !isIgnored(err) {
		h.botErrs = append(h.botErrs, err)
	}
	return err
}

func isIgnored(err error) bool {
	return err != nil && strings.Contains(err.Error(), ErrIgnored.Error())
}

// drain processes every queued delivery.
func (h *coreHarness) drain() {
	for {
		d, ok := h.pop()
		if !ok {
			return
		}
		_ = h.process(d)
	}
}

// nextRun returns the oldest queued run not yet worked on.
func (h *coreHarness) nextRun() (ghfake.Run, bool) {
	runs := h.f.Runs()
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	for _, r := range runs {
		if h.ran[r.ID] || r.Status == "completed" {
			continue
		}
		if h.hold != nil && h.hold(r.Inputs["step"]) {
			continue
		}
		return r, true
	}
	return ghfake.Run{}, false
}

// start opens the issue and labels it, as alice would.
func (h *coreHarness) start() int {
	n, err := h.repo.CreateIssue("alice", "Add widgets", "Please add widget support.\n\n- [ ] criteria")
	require.NoError(h.t, err)
	h.issue = n
	require.NoError(h.t, h.repo.LabelIssue("alice", n, "bazinga"))
	return n
}

// state is the session as GitHub holds it: the tracking comment.
func (h *coreHarness) state() (codec.State, bool) {
	st, n := h.trackingState()
	return st, n > 0
}

// run drives the session: deliveries first, then one job, then sweeps
// (with time jumps past the step timeout when nothing moves).
func (h *coreHarness) run(maxIter int) pipeline.SessionStatus {
	h.t.Helper()
	return sessionLoop{t: h.t,
		deliver: func() bool {
			d, ok := h.pop()
			if ok {
				_ = h.process(d)
			}
			return ok
		},
		work: func() bool {
			r, ok := h.nextRun()
			if ok {
				h.clock.Advance(time.Second)
				h.job(r)
			}
			return ok
		},
		state: h.state, settled: h.settled, advance: h.clock.Advance,
		sweep: func() {
			if err := h.bot.Sweep(h.ctx); err != nil {
				h.botErrs = append(h.botErrs, err)
			}
		},
	}.run(maxIter)
}

// sessionLoop drives a test session to its end the same way over either
// fake: queued deliveries first, then one job, then sweeps, with time jumps
// past the step timeout when nothing moves.
type sessionLoop struct {
	t       testing.TB
	deliver func() bool // processes one queued delivery; false when none
	work    func() bool // runs one pending job; false when none
	state   func() (codec.State, bool)
	settled func(codec.State) bool
	advance func(time.Duration)
	sweep   func()
}

func (l sessionLoop) run(maxIter int) pipeline.SessionStatus {
	l.t.Helper()
	idle := 0
	for i := 0; i < maxIter; i++ {
		if l.deliver() {
			idle = 0
			continue
		}
		if l.work() {
			idle = 0
			continue
		}
		st, ok := l.state()
		if ok && l.settled(st) {
			return st.Session.Status
		}
		idle++
		if idle > 8 {
			l.t.Fatalf("session stuck: %v", st.Session.Status)
		}
		if idle > 3 {
			l.advance(45 * time.Minute)
		} else {
			l.advance(time.Minute)
		}
		l.sweep()
	}
	l.t.Fatalf("session did not end in %d iterations", maxIter)
	return pipeline.SessionNew
}

// settled reports whether the session ended and GitHub shows all of it:
// the issue's label and state are the last effects carried out.
func (h *coreHarness) settled(st codec.State) bool {
	if !st.Session.Status.Terminal() {
		return false
	}
	if !slices.Contains(h.repo.Labels(h.issue), IssueLabel(st.Session.Status)) {
		return false
	}
	return (h.repo.Issue(h.issue).GetState() == "closed") == (st.Session.Status == pipeline.SessionDone && st.Config.GitHub.CloseIssue)
}

// job plays the Actions job of one run: claim the step, do the work (push
// to the group branch; merge; validate the base), post the result comment
// as github-actions[bot], and complete the run.
func (h *coreHarness) job(r ghfake.Run) {
	h.ran[r.ID] = true
	step := r.Inputs["step"]
	ref, ok := codec.ParseStepID(step)
	if !ok {
		_ = h.f.CompleteRun(r.ID, "failure")
		return
	}
	gh := h.f.Client(h.f.RunToken(r))
	ctx := h.ctx
	base, _ := h.repo.Ref("refs/heads/main")
	_, _, err := gh.Git.CreateRef(ctx, coreOwner, coreRepo, &github.Reference{Ref: github.String("refs/bazinga/claims/" + step), Object: &github.GitObject{SHA: github.String(base)}})
	if err != nil {
		var er *github.ErrorResponse
		if asErr(err, &er) && er.Response.StatusCode == http.StatusUnprocessableEntity {
			h.dupClaims++
			_ = h.f.CompleteRun(r.ID, "success")
			return
		}
		h.jobFails++
		_ = h.f.CompleteRun(r.ID, "failure")
		return
	}
	branch := pipeline.BranchName(ref.Session, ref.Group)
	res := pipeline.Result{}
	switch ref.Role {
	case pipeline.RolePM:
		st, _ := h.state()
		if len(st.Session.Groups) == 0 {
			res = pipeline.Result{Status: pipeline.StatusPlanningComplete, Summary: []string{fmt.Sprintf("Planned %d groups", h.groups)}, Handoff: h.planHandoff()}
		} else {
			res = pipeline.Result{Status: pipeline.StatusBazinga, Summary: []string{"All groups merged"},
				Handoff: json.RawMessage(`{"criteria":[{"criterion":"widgets work","met":true,"evidence":"tests pass"}]}`)}
		}
	case pipeline.RoleDeveloper, pipeline.RoleSenior:
		_, err := h.repo.Push("github-actions[bot]", branch, map[string]string{"group_" + ref.Group + ".txt": "work of " + step + "\n"}, "Group "+ref.Group)
		require.NoError(h.t, err)
		res = pipeline.Result{Status: pipeline.StatusReadyForQA, Summary: []string{"Implemented group " + ref.Group, "1 file", "3/3 tests pass"},
			Handoff: json.RawMessage(`{"files_changed":["group_` + ref.Group + `.txt"],"tests":{"total":3,"passing":3,"failing":0}}`)}
	case pipeline.RoleQA:
		res = pipeline.Result{Status: pipeline.StatusPass, Summary: []string{"3/3 tests pass"}}
	case pipeline.RoleTechLead:
		res = pipeline.Result{Status: pipeline.StatusApproved, Summary: []string{"Clean"}}
	case pipeline.RoleMerge:
		merged := false
		for _, pr := range h.repo.PRs() {
			if pr.GetHead().GetRef() == branch && pr.GetState() == "open" {
				// A draft cannot merge: the merge job marks it ready (GraphQL on GitHub).
				require.NoError(h.t, h.repo.MarkReady("github-actions[bot]", pr.GetNumber()))
				_, err := h.repo.MergePR("github-actions[bot]", pr.GetNumber())
				require.NoError(h.t, err)
				merged = true
			}
		}
		if !merged {
			content, err := h.repo.ReadFile(branch, "group_"+ref.Group+".txt")
			require.NoError(h.t, err)
			_, err = h.repo.Push("github-actions[bot]", "main", map[string]string{"group_" + ref.Group + ".txt": string(content)}, "Land group "+ref.Group)
			require.NoError(h.t, err)
		}
		res = pipeline.Result{Status: pipeline.StatusMergeSuccess, Summary: []string{"Landed on main"}}
	case pipeline.RoleValidate:
		st, _ := h.state()
		missing := []string{}
		for _, g := range st.Session.Groups {
			if _, err := h.repo.ReadFile("main", "group_"+g.ID+".txt"); err != nil {
				missing = append(missing, g.ID)
			}
		}
		if len(missing) == 0 && len(st.Session.Groups) == h.groups {
			res = pipeline.Result{Status: pipeline.StatusAccept, Summary: []string{"All groups on main", "tests green"}}
		} else {
			res = pipeline.Result{Status: pipeline.StatusReject, Summary: []string{"missing groups " + strings.Join(missing, ",")}}
		}
	}
	where := h.issue
	if ref.Group != pipeline.LeadGroup {
		for _, pr := range h.repo.PRs() {
			if pr.GetHead().GetRef() == branch {
				where = pr.GetNumber()
			}
		}
	}
	// As the publish job: a group step reports the branch's head after it
	// (the branch exists once the first change is pushed).
	head := ""
	if ref.Group != pipeline.LeadGroup && ref.Role != pipeline.RoleMerge {
		head, _ = h.repo.Ref("refs/heads/" + branch)
	}
	now := h.clock.Now()
	body := codec.RenderResultComment(codec.ResultRecord{Step: step, Role: ref.Role, Group: ref.Group, Result: res, StartedAt: now.Add(-time.Minute), EndedAt: now, Head: head,
		RunURL: h.f.URL() + "/" + coreOwner + "/" + coreRepo + "/actions/runs/" + strconv.FormatInt(r.ID, 10), Usage: h.jobUsage(ref)})
	if _, _, err := gh.Issues.CreateComment(ctx, coreOwner, coreRepo, where, &github.IssueComment{Body: github.String(body)}); err != nil {
		h.jobFails++
		_ = h.f.CompleteRun(r.ID, "failure")
		return
	}
	_ = h.f.CompleteRun(r.ID, "success")
}

func (h *coreHarness) planHandoff() json.RawMessage {
	type pg struct {
		ID, Name, Task string
		Phase          int `json:"phase"`
	}
	var groups []map[string]any
	for i := 0; i < h.groups; i++ {
		id := string(rune('A' + i))
		groups = append(groups, map[string]any{"id": id, "name": "Widget part " + id, "task": "Build widget part " + id + ".",
			"type": "implementation", "tier": "developer", "phase": 1})
	}
	b, _ := json.Marshal(map[string]any{"plan": map[string]any{"mode": "parallel", "groups": groups, "success_criteria": []string{"widgets work"}}})
	return b
}

func asErr(err error, target any) bool {
	type unwrapper interface{ Unwrap() error }
	for err != nil {
		if er, ok := err.(*github.ErrorResponse); ok {
			if p, ok := target.(**github.ErrorResponse); ok {
				*p = er
				return true
			}
		}
		u, ok := err.(unwrapper)
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// trackingState reads and verifies the tracking comment from the fake.
func (h *coreHarness) trackingState() (codec.State, int) {
	n := 0
	var st codec.State
	for _, c := range h.repo.Comments(h.issue) {
		if c.GetUser().GetLogin() != h.f.BotLogin() || !strings.Contains(c.GetBody(), codec.StateMarker) {
			continue
		}
		n++
		s, err := codec.DecodeState(c.GetBody(), corePublicKey)
		require.NoError(h.t, err)
		st = s
	}
	return st, n
}

// assertVerifiedBazinga checks the end of a reference session on GitHub.
func (h *coreHarness) assertVerifiedBazinga() {
	t := h.t
	st, n := h.trackingState()
	require.Equal(t, 1, n, "exactly one tracking comment")
	require.Equal(t, pipeline.SessionDone, st.Session.Status, st.Session.Reason)
	require.Equal(t, "BAZINGA verified", st.Session.Reason)
	require.Len(t, st.Session.Groups, h.groups)
	for _, g := range st.Session.Groups {
		require.Equal(t, pipeline.StageMerged, g.Stage, "group %s", g.ID)
		_, err := h.repo.ReadFile("main", "group_"+g.ID+".txt")
		require.NoError(t, err, "group %s on main", g.ID)
	}
	is := h.repo.Issue(h.issue)
	require.Equal(t, "closed", is.GetState())
	require.Contains(t, h.repo.Labels(h.issue), "bazinga:done")
	require.NotContains(t, h.repo.Labels(h.issue), "bazinga:running")
	require.Contains(t, h.repo.Labels(h.issue), "bazinga")
	// No duplicates: one PR per group head, one run per step id, one
	// completion summary.
	heads := map[string]int{}
	for _, pr := range h.repo.PRs() {
		heads[pr.GetHead().GetRef()]++
	}
	for head, k := range heads {
		require.Equal(t, 1, k, "PRs for %s", head)
	}
	steps := map[string]int{}
	for _, r := range h.f.Runs() {
		if r.Actor != h.f.BotLogin() {
			continue // a run someone else dispatched (trust tests)
		}
		steps[r.Inputs["step"]]++
	}
	for s, k := range steps {
		require.Equal(t, 1, k, "dispatches of %s", s)
	}
	summaries := 0
	for _, c := range h.repo.Comments(h.issue) {
		if strings.Contains(c.GetBody(), "✅ **BAZINGA**") {
			summaries++
		}
	}
	require.Equal(t, 1, summaries, "completion summaries")
	require.Zero(t, h.dupClaims, "duplicate claims")
}

func TestReferenceSessionEndsInVerifiedBazinga(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 3})
	h.start()
	require.Equal(t, pipeline.SessionDone, h.run(500))
	h.assertVerifiedBazinga()
	require.Empty(t, h.botErrs)
	// The PRs carry their group's history as result comments; their body is
	// the one they were opened with, and no stage label was set on them.
	for _, pr := range h.repo.PRs() {
		require.True(t, pr.GetMerged(), "PR #%d merged", pr.GetNumber())
		require.Contains(t, pr.GetTitle(), fmt.Sprintf("[bazinga #%d] Group ", h.issue))
		require.Equal(t, prBody(h.issue, pipeline.Group{ID: strings.TrimPrefix(pr.GetHead().GetRef(), fmt.Sprintf("bazinga/%d-", h.issue)),
			Task: "Build widget part " + strings.TrimPrefix(pr.GetHead().GetRef(), fmt.Sprintf("bazinga/%d-", h.issue)) + "."}), pr.GetBody())
		require.Empty(t, h.repo.Labels(pr.GetNumber()))
		history := ""
		for _, c := range h.repo.Comments(pr.GetNumber()) {
			history += c.GetBody()
		}
		for _, status := range []string{"PASS", "APPROVED", "MERGE_SUCCESS"} {
			require.Contains(t, history, status, "PR #%d's result comments", pr.GetNumber())
		}
	}
}
