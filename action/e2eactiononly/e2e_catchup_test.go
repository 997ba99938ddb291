package e2eactiononly_test

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// runActionOnlyNoSchedule plays the session to its end and fails the test
// if the schedule had to run.
func runActionOnlyNoSchedule(t *testing.T, w *World, issue int) pipeline.Session {
	t.Helper()
	sweeps := 0
	label := w.Wait(issue, 90*time.Second, func() {
		sweeps++
		_, _ = w.F.TriggerSchedule(E2eFull, SweepWorkflow)
	})
	w.Settle()
	if label != "bazinga:done" {
		w.Dump(issue)
	}
	require.Equal(t, "bazinga:done", label)
	assert.Zero(t, sweeps, "schedule runs the session needed")
	s := w.AssertVerified(issue, codec.StateTrust{PublicKey: E2eActionOnlyKey, Authors: []string{ghfake.ActionsLogin}})
	for _, j := range w.JobsCopy() {
		if j.Command == "reconcile" {
			assert.Zero(t, j.Exit, "reconcile run %d (%s)", j.Run.ID, j.Run.Event)
		}
	}
	w.LogActionsUse(s)
	return s
}

// A step's result is posted; the dispatch its privileged job sends waits as
// pending behind another reconcile and is cancelled by a comment. The
// comment's reconcile applies the result.
func TestE2EActionOnlyResultReconcileCancelled(t *testing.T) {
	t.Parallel()
	w := NewWorld(t)
	w.ActionOnly()
	pc := NewPendingCanceller(w)
	var once sync.Once
	var release func()
	var cancelled atomic.Int64
	w.BeforeJob = func(r ghfake.Run, job string) {
		pc.BeforeJob(r, job)
		if job != "publish" || r.Inputs["step"] != "1/_/pm/1" {
			return
		}
		once.Do(func() {
			release = pc.HoldGroup(1)
			started := time.Now()
			go func() {
				defer release()
				cancelled.Store(pc.CancelPending(1, "", func(r ghfake.Run) bool {
					return r.Event == "workflow_dispatch" && r.Inputs["issue"] == "1" && !r.CreatedAt.Before(started)
				}))
			}()
		})
	}
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))
	s := runActionOnlyNoSchedule(t, w, issue)
	w.AssertJobs(s)
	require.NotZero(t, cancelled.Load(), "the planning result's dispatch was cancelled")
}

// A group waits for a human approval (merge.required_approvals 1); alice's
// approval of group A's PR starts a reconcile that waits as pending and is
// cancelled by a comment. The comment's reconcile reads the approval.
func TestE2EActionOnlyApprovalReconcileCancelled(t *testing.T) {
	t.Parallel()
	w := NewWorldWith(t, E2eConfig+"merge:\n  required_approvals: 1\n")
	w.ActionOnly()
	pc := NewPendingCanceller(w)
	w.BeforeJob = pc.BeforeJob
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))
	trust := codec.StateTrust{PublicKey: E2eActionOnlyKey, Authors: []string{ghfake.ActionsLogin}}
	done := make(chan struct{})
	var cancelled atomic.Int64
	var approved sync.Map
	go func() {
		defer close(done)
		deadline := time.Now().Add(5 * time.Minute)
		for time.Now().Before(deadline) && approvedCount(&approved) < 2 {
			time.Sleep(100 * time.Millisecond)
			if ok, _ := w.Ended(issue); ok {
				return
			}
			s, ok := trackedState(w, issue, trust)
			if !ok {
				continue
			}
			for _, g := range s.Groups {
				if g.Wait != pipeline.WaitHumanReview {
					continue
				}
				if _, done := approved.Load(g.ID); done {
					continue
				}
				pr := prOfBranch(w, g.Branch)
				if pr == 0 {
					continue
				}
				approved.Store(g.ID, true)
				if cancelled.Load() != 0 {
					_, err := w.Repo.SubmitReview("alice", pr, "APPROVE", "ok")
					assert.NoError(t, err)
					continue
				}
				release := pc.HoldGroup(issue)
				started := time.Now()
				_, err := w.Repo.SubmitReview("alice", pr, "APPROVE", "looks right")
				assert.NoError(t, err)
				cancelled.Store(pc.CancelPending(issue, "", func(r ghfake.Run) bool {
					return r.Event == "pull_request_review" && !r.CreatedAt.Before(started)
				}))
				release()
			}
		}
	}()
	s := runActionOnlyNoSchedule(t, w, issue)
	<-done
	require.NotZero(t, cancelled.Load(), "an approval's reconcile was cancelled")
	for _, g := range s.Groups {
		assert.Equal(t, []string{"alice"}, g.Approvals, "group %s", g.ID)
	}
}

func approvedCount(m *sync.Map) int {
	n := 0
	m.Range(func(any, any) bool { n++; return true })
	return n
}

// trackedState is the session of the tracking comment, if there is one.
func trackedState(w *World, issue int, trust codec.StateTrust) (pipeline.Session, bool) {
	return w.SessionTrusting(issue, trust)
}

func prOfBranch(w *World, branch string) int {
	for _, pr := range w.Repo.PRs() {
		if strings.EqualFold(pr.GetHead().GetRef(), branch) && pr.GetState() == "open" {
			return pr.GetNumber()
		}
	}
	return 0
}

// The privileged job of group B's tech lead step fails once (its hand-over
// is refused: it names another step). The job posts the step's failure and
// wakes the orchestrator, which sends the step again at once.
func TestE2EActionOnlyPublishFailsOnce(t *testing.T) {
	t.Parallel()
	w := NewWorld(t)
	w.ActionOnly()
	w.ExpectFail = map[int64]bool{}
	var once sync.Once
	var failed atomic.Int64
	w.BeforePublish = func(r ghfake.Run, handover string) {
		if !strings.Contains(r.Inputs["step"], "/B/tech_lead/") {
			return
		}
		once.Do(func() {
			w.Mu.Lock()
			w.ExpectFail[r.ID] = true
			w.Mu.Unlock()
			failed.Store(r.ID)
			m := ReadManifest(t, handover)
			m["step"] = "1/B/tech_lead/99"
			m.Write(t, handover)
		})
	}
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))
	s := runActionOnlyNoSchedule(t, w, issue)
	w.AssertJobs(s)
	require.NotZero(t, failed.Load(), "a publish job was made to fail")
	var tl []string
	for _, st := range s.Steps {
		if st.Group == "B" && st.Role == pipeline.RoleTechLead {
			tl = append(tl, st.State.String())
		}
	}
	assert.Equal(t, []string{"failed", "done"}, tl, "B's tech lead step failed once, then ran again")
	found := false
	for _, c := range w.Repo.Comments(issue) {
		if fr, ok := codec.ParseFailureComment(c.GetBody()); ok && strings.Contains(fr.Step, "/B/tech_lead/") {
			found = true
			assert.Contains(t, fr.Reason, "the publish job failed: the hand-over was refused")
		}
	}
	assert.True(t, found, "the failure is posted on the issue")
}

// checkpoints: [plan]: alice approves the plan with a comment whose first
// line is prose and whose second is the command. The route job (the bot's
// own parser) lets it through and the session runs on, with no schedule.
func TestE2EActionOnlyCommandOnSecondLine(t *testing.T) {
	t.Parallel()
	w := NewWorldWith(t, E2eConfig+"checkpoints: [plan]\n")
	w.ActionOnly()
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))
	trust := codec.StateTrust{PublicKey: E2eActionOnlyKey, Authors: []string{ghfake.ActionsLogin}}
	require.Eventually(t, func() bool {
		s, ok := trackedState(w, issue, trust)
		return ok && s.Checkpoint != nil
	}, 3*time.Minute, 50*time.Millisecond, "the plan waits for approval")
	_, err = w.Repo.Comment("alice", issue, "The plan looks right to me.\n/bazinga approve")
	require.NoError(t, err)
	// Waiting at the checkpoint is labelled bazinga:needs-input, which
	// ends w.Wait: wait for the approval first.
	require.Eventually(t, func() bool {
		s, ok := trackedState(w, issue, trust)
		return ok && s.Checkpoint == nil && !slices.Contains(w.Repo.Labels(issue), "bazinga:needs-input")
	}, 3*time.Minute, 50*time.Millisecond, "the approval is applied (the label follows the state)")
	s := runActionOnlyNoSchedule(t, w, issue)
	require.NotEmpty(t, s.PassedCheckpoints)
	assert.Equal(t, "alice", s.PassedCheckpoints[0].ApprovedBy)
	routed := false
	for _, j := range w.JobsCopy() {
		if j.Job == "route" && j.Run.Event == "issue_comment" && strings.Contains(string(j.Run.EventPayload), "looks right") {
			routed = assert.Contains(t, j.Output, "bazinga: session 1")
		}
	}
	assert.True(t, routed, "the route job ran the action on the comment")
}
