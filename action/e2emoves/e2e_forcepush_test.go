package e2emoves_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Issue 28, first row: a human force-pushes a group branch after QA and the
// tech lead approved it, while its merge runs (between the gate job, which
// tested the reviewed head, and the land job). Before the fix the land job
// refused its hand-over as stale, the orchestrator retried the same merge,
// and the retried gate tested and landed the human's unreviewed commit.
// Now only a reviewed head lands: the land job reports the move as a fact
// (the new head and who pushed it), the group goes back through QA and
// review on the new head, and that head merges through the normal route.

// forcePushOnLand force-pushes group B's branch as alice when the land job
// of B's first merge step starts (it downloaded the gate's hand-over): B's
// commit is amended to also add b-alice.txt. It returns the pushed commit,
// once pushed, and the head it replaced.
func forcePushOnLand(t *testing.T, w *World) (pushed func() (human, reviewed string)) {
	t.Helper()
	var mu sync.Mutex
	var human, old string
	w.BeforePublish = func(r ghfake.Run, _ string) {
		step := r.Inputs["step"]
		if !strings.Contains(step, "/B/merge/") {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if human != "" {
			return
		}
		head, ok := w.Repo.Ref("refs/heads/bazinga/1-B")
		require.True(t, ok, "B's branch exists when it merges")
		sha, err := w.Repo.ForcePush("alice", "bazinga/1-B", head+"^",
			map[string]string{"b.txt": "ok\n", "b-alice.txt": "ok\n"}, "B: also b-alice.txt (amended)")
		require.NoError(t, err)
		human, old = sha, head
	}
	return func() (string, string) {
		mu.Lock()
		defer mu.Unlock()
		return human, old
	}
}

// assertOnlyReviewedLanded checks what reached main from group B: its PR
// was merged once, at the human's head, and only after a tech lead approved
// exactly that head (the result comments carry the head each step saw);
// the first merge reported the move instead of landing anything.
func assertOnlyReviewedLanded(t *testing.T, w *World, s pipeline.Session, human, reviewed string) {
	t.Helper()
	require.NotEmpty(t, human, "alice force-pushed B's branch while it merged")
	var pr *struct {
		number int
		head   string
	}
	for _, p := range w.Repo.PRs() {
		if p.GetHead().GetRef() == "bazinga/1-B" {
			assert.True(t, p.GetMerged())
			pr = &struct {
				number int
				head   string
			}{p.GetNumber(), p.GetHead().GetSHA()}
		}
	}
	require.NotNil(t, pr)
	assert.Equal(t, human, pr.head, "B merged at the human's head, once it was reviewed")
	got, err := w.Repo.ReadFile("main", "b-alice.txt")
	require.NoError(t, err, "the human's change reached main through the normal route")
	assert.Equal(t, "ok\n", string(got))

	// The heads the tech lead approved, in order, from B's result comments.
	var approved []string
	var moved []codec.ResultRecord
	for _, c := range w.Repo.Comments(pr.number) {
		rec, ok := codec.ParseResultComment(c.GetBody())
		if !ok {
			continue
		}
		switch {
		case rec.Role == pipeline.RoleTechLead && rec.Result.Status == pipeline.StatusApproved:
			approved = append(approved, rec.Head)
		case rec.Role == pipeline.RoleMerge && rec.Result.Status == pipeline.StatusMergeHeadMoved:
			moved = append(moved, rec)
		}
	}
	assert.Equal(t, []string{reviewed, human}, approved, "the tech lead approved the developer's head, then the human's")
	require.Len(t, moved, 1, "the first merge reported the move")
	assert.Equal(t, human, moved[0].Head, "the move names the new head")
	want := "B's branch moved from " + reviewed[:7] + " to " + human[:7] + " (pushed by @alice) after review"
	assert.Contains(t, moved[0].Result.Summary[0], want)

	// In the session: the merge step's fact, routed back to QA; QA and the
	// tech lead ran again; the group's reviewed head is the one that merged.
	var route []string
	for _, st := range s.Steps {
		if st.Group == "B" && st.State == pipeline.StepDone {
			route = append(route, st.Role.String()+":"+st.Result.Status.String())
		}
		assert.NotContains(t, st.Note, "no result within", "step %s waited out its timeout", st.ID)
	}
	assert.Equal(t, []string{"developer:READY_FOR_QA", "qa:PASS", "tech_lead:APPROVED", "merge:MERGE_HEAD_MOVED",
		"qa:PASS", "tech_lead:APPROVED", "merge:MERGE_SUCCESS"}, route)
	b := s.Group("B")
	require.NotNil(t, b)
	assert.Equal(t, human, b.ReviewedHead)
	assert.Equal(t, human, b.Head)
	// No merge was attempted at a head nobody reviewed: GitHub refused none.
	for _, c := range w.F.Calls() {
		if c.Method == http.MethodPut && strings.HasSuffix(c.Route, "/pulls/{number}/merge") {
			assert.Equal(t, http.StatusOK, c.Status, "merge call %s", c.Path)
		}
	}
	// Human-visible: the session's log on the issue says what happened.
	var log strings.Builder
	for _, c := range w.Repo.Comments(1) {
		log.WriteString(c.GetBody())
	}
	assert.Contains(t, log.String(), "B's branch moved from "+reviewed[:7]+" to "+human[:7]+" (pushed by @\u2060alice) after review; sending it back through QA and review")
}

func TestE2EForcePushWhileMerging(t *testing.T) {
	inBothModes(t, func(t *testing.T, w *World) func(pipeline.Session) {
		pushed := forcePushOnLand(t, w)
		return func(s pipeline.Session) {
			human, reviewed := pushed()
			assertOnlyReviewedLanded(t, w, s, human, reviewed)
		}
	})
}

// playReviewer is a human reviewer on the App's repository: bob approves
// each group PR at the head its group waits on (as the tracking comment
// shows it), except that the first time group B waits for him, alice
// force-pushes B's branch instead. It returns alice's commit and the head
// it replaced, once stopped.
func playReviewer(t *testing.T, w *World, issue int) (stop func() (human, old string)) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var human, old string
	answered := map[string]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(30 * time.Millisecond):
			}
			session, ok := w.SessionTrusting(issue, codec.StateTrust{PublicKey: E2ePublicKey, Authors: []string{w.F.BotLogin()}})
			if !ok {
				continue
			}
			for _, g := range session.Groups {
				if g.Wait != pipeline.WaitHumanReview || answered[g.Head] {
					continue
				}
				number := 0
				for _, p := range w.Repo.PRs() {
					if p.GetHead().GetRef() == g.Branch && p.GetHead().GetSHA() == g.Head {
						number = p.GetNumber()
					}
				}
				if number == 0 {
					continue
				}
				answered[g.Head] = true
				if g.ID == "B" && human == "" {
					sha, err := w.Repo.ForcePush("alice", g.Branch, g.Head+"^",
						map[string]string{"b.txt": "ok\n", "b-alice.txt": "ok\n"}, "B: also b-alice.txt (amended)")
					if err != nil {
						t.Errorf("force-push: %v", err)
					}
					human, old = sha, g.Head
					continue
				}
				if _, err := w.Repo.SubmitReview("bob", number, "APPROVE", "lgtm"); err != nil {
					t.Errorf("review: %v", err)
				}
			}
		}
	}()
	return func() (string, string) {
		close(done)
		wg.Wait()
		return human, old
	}
}

// App mode, merge.required_approvals 1: alice force-pushes group B's branch
// while B waits for a human approval after the tech lead approved it. The
// pull request's synchronize reaches the App, which sends B back through QA
// and review at once (no merge step runs for the old head); bob's approval
// of the pushed head, once the tech lead approved it, lets it merge.
func TestE2EAppModePushWhileWaitingForApproval(t *testing.T) {
	t.Parallel()
	var stop func() (string, string)
	w, s := PlayAppModeWith(t, E2eConfig+"merge:\n  required_approvals: 1\n", func(w *World) {
		w.F.SetPermission("bob", "write")
		stop = playReviewer(t, w, 1)
	})
	human, old := stop()
	require.NotEmpty(t, human, "alice pushed while B waited for bob")
	var route []string
	for _, st := range s.Steps {
		if st.Group == "B" && st.State == pipeline.StepDone {
			route = append(route, st.Role.String()+":"+st.Result.Status.String())
		}
		assert.NotContains(t, st.Note, "no result within", "step %s waited out its timeout", st.ID)
	}
	assert.Equal(t, []string{"developer:READY_FOR_QA", "qa:PASS", "tech_lead:APPROVED",
		"qa:PASS", "tech_lead:APPROVED", "merge:MERGE_SUCCESS"}, route, "no merge of the old head was sent")
	for _, p := range w.Repo.PRs() {
		if p.GetHead().GetRef() == "bazinga/1-B" {
			assert.Equal(t, human, p.GetHead().GetSHA(), "B merged at alice's head, reviewed")
		}
	}
	assert.Equal(t, human, s.Group("B").ReviewedHead)
	var log strings.Builder
	for _, c := range w.Repo.Comments(1) {
		log.WriteString(c.GetBody())
	}
	assert.Contains(t, log.String(), "B's branch moved from "+old[:7]+" to "+human[:7]+" (pushed by @\u2060alice) after review; sending it back through QA and review")
}
