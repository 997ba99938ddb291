package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/require"
)

// A session on the in-memory fake: the test plays GitHub (the deliveries it
// sends when someone other than the bot changes something; the bot's own
// events are ignored by the bot, see translate) and the Actions jobs, as
// the ghfake harness does over HTTP.

const actionsLogin = "github-actions[bot]"

type fakeSession struct {
	*fakeHarness
	groups int
	issue  int
	queue  []Delivery
	all    []Delivery // every delivery, for redelivery
	ran    map[int64]bool
	// dupClaims counts jobs that found their step claimed already.
	dupClaims int
	// hold, when set, keeps runs from being worked on (a job that never ends).
	hold func(step string) bool
	// phased puts group i in phase i+1 (checkpoints: phase); else all in phase 1.
	phased bool
	// plan, when set, is the pm's planning handoff, given the pm step's
	// feedback (a refused plan's reasons); else groups widgets are planned.
	plan func(feedback string) json.RawMessage
	// tweak, when set, changes a step's work and result before it is
	// posted: n counts the steps of the same group and role, from 1.
	tweak   func(ref codec.StepRef, n int, res *pipeline.Result)
	tweaked map[string]int
}

func newFakeSession(t *testing.T, groups int, config string) *fakeSession {
	h := newFakeHarness(t, config)
	return &fakeSession{fakeHarness: h, groups: groups, ran: map[int64]bool{}}
}

// payload is what the bot reads of a delivery; the test builds it from
// the fake's state (the recorded fixtures cover the real shape: TestTranslate).
func (s *fakeSession) enqueue(event, action, sender string, fill func(p *payload)) {
	var p payload
	p.Action = action
	p.Installation.ID = 1
	p.Repository.FullName = coreOwner + "/" + coreRepo
	p.Repository.DefaultBranch = "main"
	p.Sender = hookUser{Login: sender, Type: map[bool]string{true: "Bot", false: "User"}[strings.HasSuffix(sender, "[bot]")]}
	fill(&p)
	b, err := json.Marshal(p)
	require.NoError(s.t, err)
	s.seq++
	d := Delivery{ID: fmt.Sprintf("fake-%d", s.seq), Event: event, Action: action, Installation: 1,
		Repo: coreOwner + "/" + coreRepo, Payload: b}
	s.queue = append(s.queue, d)
	s.all = append(s.all, d)
}

func (s *fakeSession) issuePayload(n int) func(p *payload) {
	return func(p *payload) {
		s.gh.mu.Lock()
		is := s.gh.issues[n].Issue
		is.Labels = slices.Clone(is.Labels)
		s.gh.mu.Unlock()
		p.Issue = &hookIssue{Number: n, Title: is.Title, Body: is.Body, State: is.State, User: hookUser{Login: is.Author, Type: "User"}, CreatedAt: is.CreatedAt}
		if is.IsPR {
			p.Issue.PullRequest = json.RawMessage(`{}`)
		}
		for _, l := range is.Labels {
			p.Issue.Labels = append(p.Issue.Labels, hookLabel{Name: l})
		}
	}
}

// start opens the issue and labels it, as alice would.
func (s *fakeSession) start() {
	s.issue = s.openAndLabel("alice")
}

// comment is someone's comment on issue or PR n, and its delivery.
func (s *fakeSession) comment(user string, n int, body string) {
	c := s.gh.addComment(user, n, body)
	s.enqueue("issue_comment", "created", user, func(p *payload) {
		s.issuePayload(n)(p)
		p.Comment = &hookComment{ID: c.ID, Body: c.Body, User: p.Sender, CreatedAt: c.CreatedAt}
	})
}

// completeRun ends a run with a conclusion, and its delivery.
func (s *fakeSession) completeRun(id int64, conclusion string) {
	s.gh.mu.Lock()
	var run ghapi.Run
	for _, r := range s.gh.runs {
		if r.ID == id {
			r.Status, r.Conclusion = "completed", conclusion
			run = r.Run
		}
	}
	s.gh.mu.Unlock()
	s.enqueue("workflow_run", "completed", actionsLogin, func(p *payload) {
		p.WorkflowRun = &hookRun{ID: run.ID, Name: "bazinga agent", DisplayTitle: run.Title, Path: run.Path, Event: run.Event, Status: "completed", Conclusion: conclusion, HTMLURL: run.URL, Actor: hookUser{Login: run.Actor, Type: "Bot"}}
	})
}

// closePR closes (merged or not) pull request n as user, and its delivery.
func (s *fakeSession) closePR(user string, n int, merged bool) {
	s.gh.mu.Lock()
	is := s.gh.issues[n]
	s.gh.setState(is, "closed")
	if merged {
		is.pr.Merged, is.pr.MergedBy, is.pr.MergedAt = true, user, s.clock.Now()
		// The merge lands the head's files on the base.
		head := s.gh.refs["refs/heads/"+is.pr.Head]
		s.gh.mu.Unlock()
		s.gh.push(is.pr.Base, s.gh.files[head])
		s.gh.mu.Lock()
	}
	pr := *is.pr
	s.gh.mu.Unlock()
	s.enqueue("pull_request", "closed", user, func(p *payload) {
		p.PullRequest = &hookPR{Number: pr.Number, Title: pr.Title, State: "closed", Merged: merged}
		if merged {
			p.PullRequest.MergedBy = &hookUser{Login: user, Type: "User"}
		}
		p.PullRequest.Head.Ref = pr.Head
		p.PullRequest.Head.Repo = &hookRepo{FullName: pr.HeadRepo}
		for _, l := range s.gh.issues[n].Labels {
			p.PullRequest.Labels = append(p.PullRequest.Labels, hookLabel{Name: l})
		}
	})
}

func (s *fakeSession) pop() (Delivery, bool) {
	if len(s.queue) == 0 {
		return Delivery{}, false
	}
	d := s.queue[0]
	s.queue = s.queue[1:]
	return d, true
}

func (s *fakeSession) process(d Delivery) {
	s.clock.Advance(time.Second)
	d.Received = s.clock.Now()
	_ = s.bot.Process(context.Background(), d)
}

func (s *fakeSession) drain() {
	for d, ok := s.pop(); ok; d, ok = s.pop() {
		s.process(d)
	}
}

func (s *fakeSession) nextRun() (*fakeRun, bool) {
	s.gh.mu.Lock()
	defer s.gh.mu.Unlock()
	for _, r := range s.gh.runs {
		if s.ran[r.ID] || r.Status == "completed" || (s.hold != nil && s.hold(r.inputs["step"])) {
			continue
		}
		return r, true
	}
	return nil, false
}

// steps drives the session for n iterations (deliveries, then jobs).
func (s *fakeSession) steps(n int) {
	for i := 0; i < n; i++ {
		if d, ok := s.pop(); ok {
			s.process(d)
			continue
		}
		if r, ok := s.nextRun(); ok {
			s.job(r)
			continue
		}
		return
	}
}

// state is the session as the tracking comment holds it.
func (s *fakeSession) state() (codec.State, bool) {
	var st codec.State
	found := false
	for _, c := range s.gh.commentsOn(s.issue) {
		if c.Author == fakeBotLogin && strings.Contains(c.Body, codec.StateMarker) {
			got, err := codec.DecodeState(c.Body, corePublicKey)
			require.NoError(s.t, err)
			st, found = got, true
		}
	}
	return st, found
}

func (s *fakeSession) labels(n int) []string {
	s.gh.mu.Lock()
	defer s.gh.mu.Unlock()
	return slices.Clone(s.gh.issues[n].Labels)
}

func (s *fakeSession) prs() []ghapi.PR {
	s.gh.mu.Lock()
	defer s.gh.mu.Unlock()
	var out []ghapi.PR
	for n := 1; n <= s.gh.next; n++ {
		if is := s.gh.issues[n]; is != nil && is.pr != nil {
			out = append(out, *is.pr)
		}
	}
	return out
}

// run drives the session to its end, sweeping (with time jumps) when
// nothing moves, as coreHarness.run does.
func (s *fakeSession) run(maxIter int) pipeline.SessionStatus {
	s.t.Helper()
	return sessionLoop{t: s.t,
		deliver: func() bool {
			d, ok := s.pop()
			if ok {
				s.process(d)
			}
			return ok
		},
		work: func() bool {
			r, ok := s.nextRun()
			if ok {
				s.clock.Advance(time.Second)
				s.job(r)
			}
			return ok
		},
		state: s.state, settled: s.settled, advance: s.clock.Advance,
		sweep: func() { _ = s.bot.Sweep(context.Background()) },
	}.run(maxIter)
}

// job plays one Actions job: do the step's work, post its result as
// github-actions[bot], complete the run.
func (s *fakeSession) job(r *fakeRun) {
	s.ran[r.ID] = true
	step := r.inputs["step"]
	ref, ok := codec.ParseStepID(step)
	if !ok {
		s.completeRun(r.ID, "failure")
		return
	}
	// Claim the step, as the job does (a ref per step id; GitHub's 422 on
	// an existing ref makes the claim atomic).
	base, err := s.gh.GetRef(context.Background(), s.gh.repo, "heads/main")
	require.NoError(s.t, err)
	err = s.gh.CreateRef(context.Background(), s.gh.repo, "refs/bazinga/claims/"+step, base)
	s.gh.mu.Lock()
	s.gh.calls = s.gh.calls[:len(s.gh.calls)-2] // the job's calls, not the bot's
	s.gh.mu.Unlock()
	if errors.Is(err, ghapi.ErrExists) {
		s.dupClaims++
		s.completeRun(r.ID, "success")
		return
	}
	require.NoError(s.t, err)
	branch := pipeline.BranchName(ref.Session, ref.Group)
	var res pipeline.Result
	switch ref.Role {
	case pipeline.RolePM:
		st, _ := s.state()
		if len(st.Session.Groups) == 0 && s.plan != nil {
			fb := ""
			if pm := st.Session.Step(step); pm != nil {
				fb = pm.Feedback
			}
			res = pipeline.Result{Status: pipeline.StatusPlanningComplete, Summary: []string{"Planned"}, Handoff: s.plan(fb)}
		} else if len(st.Session.Groups) == 0 {
			var groups []map[string]any
			for i := 0; i < s.groups; i++ {
				id := string(rune('A' + i))
				phase := 1
				if s.phased {
					phase = i + 1
				}
				groups = append(groups, map[string]any{"id": id, "name": "Widget part " + id, "task": "Build widget part " + id + ".",
					"type": "implementation", "tier": "developer", "phase": phase})
			}
			b, _ := json.Marshal(map[string]any{"plan": map[string]any{"mode": "parallel", "groups": groups, "success_criteria": []string{"widgets work"}}})
			res = pipeline.Result{Status: pipeline.StatusPlanningComplete, Summary: []string{fmt.Sprintf("Planned %d groups", s.groups)}, Handoff: b}
		} else {
			res = pipeline.Result{Status: pipeline.StatusBazinga, Summary: []string{"All groups merged"},
				Handoff: json.RawMessage(`{"criteria":[{"criterion":"widgets work","met":true,"evidence":"tests pass"}]}`)}
		}
	case pipeline.RoleDeveloper, pipeline.RoleSenior:
		s.gh.push(branch, map[string]string{"group_" + ref.Group + ".txt": "work of " + step + "\n"})
		res = pipeline.Result{Status: pipeline.StatusReadyForQA, Summary: []string{"Implemented group " + ref.Group},
			Handoff: json.RawMessage(`{"files_changed":["group_` + ref.Group + `.txt"],"tests":{"total":3,"passing":3,"failing":0}}`)}
	case pipeline.RoleQA:
		res = pipeline.Result{Status: pipeline.StatusPass, Summary: []string{"3/3 tests pass"}}
	case pipeline.RoleTechLead:
		res = pipeline.Result{Status: pipeline.StatusApproved, Summary: []string{"Clean"}}
	case pipeline.RoleMerge:
		for _, pr := range s.prs() {
			if pr.Head == branch && pr.State == "open" {
				s.closePR(actionsLogin, pr.Number, true)
			}
		}
		res = pipeline.Result{Status: pipeline.StatusMergeSuccess, Summary: []string{"Landed on main"}}
	case pipeline.RoleValidate:
		st, _ := s.state()
		missing := []string{}
		for _, g := range st.Session.Groups {
			if _, ok := s.fileOnMain("group_" + g.ID + ".txt"); !ok {
				missing = append(missing, g.ID)
			}
		}
		if len(missing) == 0 && len(st.Session.Groups) == s.groups {
			res = pipeline.Result{Status: pipeline.StatusAccept, Summary: []string{"All groups on main", "tests green"}}
		} else {
			res = pipeline.Result{Status: pipeline.StatusReject, Summary: []string{"missing groups " + strings.Join(missing, ",")}}
		}
	}
	if s.tweak != nil {
		if s.tweaked == nil {
			s.tweaked = map[string]int{}
		}
		key := ref.Group + "/" + ref.Role.String()
		s.tweaked[key]++
		s.tweak(ref, s.tweaked[key], &res)
	}
	where := s.issue
	if ref.Group != pipeline.LeadGroup {
		for _, pr := range s.prs() {
			if pr.Head == branch {
				where = pr.Number
			}
		}
	}
	// As the publish job: a group step reports the branch's head after it
	// (the branch exists once the first change is pushed).
	head := ""
	if ref.Group != pipeline.LeadGroup && ref.Role != pipeline.RoleMerge {
		s.gh.mu.Lock()
		head = s.gh.refs["refs/heads/"+branch]
		s.gh.mu.Unlock()
	}
	now := s.clock.Now()
	s.comment(actionsLogin, where, codec.RenderResultComment(codec.ResultRecord{Step: step, Role: ref.Role, Group: ref.Group, Result: res,
		StartedAt: now.Add(-time.Minute), EndedAt: now, Head: head}))
	s.completeRun(r.ID, "success")
}

func (s *fakeSession) botCommentsJoined() string { return strings.Join(s.botComments(s.issue), "\n") }

// settled: the session ended and GitHub shows all of it (the issue's label
// and state are the last effects carried out).
func (s *fakeSession) settled(st codec.State) bool {
	if !st.Session.Status.Terminal() || !slices.Contains(s.labels(s.issue), IssueLabel(st.Session.Status)) {
		return false
	}
	s.gh.mu.Lock()
	closed := s.gh.issues[s.issue].State == "closed"
	s.gh.mu.Unlock()
	return closed == (st.Session.Status == pipeline.SessionDone && st.Config.GitHub.CloseIssue)
}

func (s *fakeSession) fileOnMain(path string) (string, bool) {
	s.gh.mu.Lock()
	defer s.gh.mu.Unlock()
	c, ok := s.gh.files[s.gh.refs["refs/heads/main"]][path]
	return c, ok
}

// restart is a new bot process (nothing in memory).
func (s *fakeSession) restart() {
	b, err := New(Options{
		Client:     func(context.Context, int64) (GitHub, error) { return s.gh, nil },
		Login:      fakeBotLogin,
		Now:        s.clock.Now,
		SigningKey: coreSigningKey,
	})
	require.NoError(s.t, err)
	s.bot = b
}

// assertVerifiedBazinga checks the end of a reference session on GitHub,
// as coreHarness.assertVerifiedBazinga does.
func (s *fakeSession) assertVerifiedBazinga() {
	t := s.t
	n := 0
	for _, c := range s.gh.commentsOn(s.issue) {
		if c.Author == fakeBotLogin && strings.Contains(c.Body, codec.StateMarker) {
			n++
		}
	}
	require.Equal(t, 1, n, "exactly one tracking comment")
	st, _ := s.state()
	require.Equal(t, pipeline.SessionDone, st.Session.Status, st.Session.Reason)
	require.Equal(t, "BAZINGA verified", st.Session.Reason)
	require.Len(t, st.Session.Groups, s.groups)
	for _, g := range st.Session.Groups {
		require.Equal(t, pipeline.StageMerged, g.Stage, "group %s", g.ID)
		_, ok := s.fileOnMain("group_" + g.ID + ".txt")
		require.True(t, ok, "group %s on main", g.ID)
	}
	s.gh.mu.Lock()
	state := s.gh.issues[s.issue].State
	s.gh.mu.Unlock()
	require.Equal(t, "closed", state)
	require.Contains(t, s.labels(s.issue), "bazinga:done")
	require.NotContains(t, s.labels(s.issue), "bazinga:running")
	require.Contains(t, s.labels(s.issue), "bazinga")
	// No duplicates: one PR per group head, one run per step id, one
	// completion summary.
	heads := map[string]int{}
	for _, pr := range s.prs() {
		heads[pr.Head]++
	}
	for head, k := range heads {
		require.Equal(t, 1, k, "PRs for %s", head)
	}
	steps := map[string]int{}
	s.gh.mu.Lock()
	for _, r := range s.gh.runs {
		steps[r.inputs["step"]]++
	}
	s.gh.mu.Unlock()
	for st, k := range steps {
		require.Equal(t, 1, k, "dispatches of %s", st)
	}
	summaries := 0
	for _, c := range s.gh.commentsOn(s.issue) {
		if strings.Contains(c.Body, "✅ **BAZINGA**") {
			summaries++
		}
	}
	require.Equal(t, 1, summaries, "completion summaries")
	require.Zero(t, s.dupClaims, "duplicate claims")
}

// label adds (or removes) a label on issue n as user, and its delivery.
func (s *fakeSession) label(user string, n int, name string, add bool) {
	s.gh.mu.Lock()
	is := s.gh.issues[n]
	if add {
		is.Labels = labelSet(append(is.Labels, name))
	} else {
		is.Labels = slices.DeleteFunc(is.Labels, func(l string) bool { return l == name })
	}
	s.gh.mu.Unlock()
	action := map[bool]string{true: "labeled", false: "unlabeled"}[add]
	s.enqueue("issues", action, user, func(p *payload) {
		s.issuePayload(n)(p)
		p.Label = &hookLabel{Name: name}
	})
}

// review submits a review of pull request n as user, and its delivery.
func (s *fakeSession) review(user string, n int, state string) {
	s.gh.mu.Lock()
	is := s.gh.issues[n]
	s.gh.commentN++
	// A review is submitted on the PR's current head, as GitHub records it.
	rv := ghapi.Review{ID: s.gh.commentN, Author: user, AuthorType: "User", Association: "COLLABORATOR", State: state,
		CommitID: s.gh.refs["refs/heads/"+is.pr.Head], SubmittedAt: s.clock.Now()}
	is.reviews = append(is.reviews, rv)
	pr := *is.pr
	labels := slices.Clone(is.Labels)
	s.gh.mu.Unlock()
	s.enqueue("pull_request_review", "submitted", user, func(p *payload) {
		p.Review = &hookReview{ID: rv.ID, State: strings.ToLower(state), User: hookUser{Login: user, Type: "User"}, CommitID: rv.CommitID}
		p.PullRequest = &hookPR{Number: pr.Number, Title: pr.Title, State: pr.State}
		p.PullRequest.Head.Ref = pr.Head
		p.PullRequest.Head.Repo = &hookRepo{FullName: pr.HeadRepo}
		for _, l := range labels {
			p.PullRequest.Labels = append(p.PullRequest.Labels, hookLabel{Name: l})
		}
	})
}

// trackingComment is the bot's tracking comment (id and body).
func (s *fakeSession) trackingComment() (int64, string) {
	for _, c := range s.gh.commentsOn(s.issue) {
		if c.Author == fakeBotLogin && strings.Contains(c.Body, codec.StateMarker) {
			return c.ID, c.Body
		}
	}
	return 0, ""
}
