package e2emoves_test

import (
	"net/http"
	"strconv"
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

// deleteTrackingOnJob deletes the issue's tracking comment once, when the
// harness job of the validation step starts. It returns the run it did it for.
func deleteTrackingOnJob(t *testing.T, w *World, issue int) (run func() int64) {
	t.Helper()
	var mu sync.Mutex
	var hit int64
	w.ExpectFail = map[int64]bool{}
	// One job at a time: no reconcile job puts the state back while the
	// agent job reads it.
	w.Serial = true
	tracking := func() int64 {
		for _, c := range w.Repo.Comments(issue) {
			if c.GetUser().GetLogin() == w.Orchestrator && strings.Contains(c.GetBody(), codec.StateMarker) {
				return c.GetID()
			}
		}
		return 0
	}
	w.BeforeJob = func(r ghfake.Run, job string) {
		if r.Workflow != "bazinga-agent.yml" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if hit == 0 && job == "harness" && strings.Contains(r.Inputs["step"], "/validate/") {
			require.NoError(t, w.Repo.DeleteComment("alice", tracking()))
			hit = r.ID
		}
		// Any job of a run that starts while the state is gone may fail.
		if hit != 0 && tracking() == 0 {
			w.Mu.Lock()
			w.ExpectFail[r.ID] = true
			w.Mu.Unlock()
		}
	}
	return func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return hit
	}
}

// assertStepResent checks that the steps whose jobs started while the
// state was gone failed for it and were sent again at once, and that no step
// waited out a timeout.
func assertStepResent(t *testing.T, w *World, s pipeline.Session, run int64) {
	t.Helper()
	require.NotZero(t, run, "the tracking comment was deleted as a job started")
	failed := map[string]bool{}
	for _, st := range s.Steps {
		assert.NotContains(t, st.Note, "no result within", "step %s waited out its timeout", st.ID)
		if st.State == pipeline.StepFailed {
			// The App hears of the failed job first (workflow_job), before
			// the privileged job posts why; Action-only mode reads why.
			if !strings.Contains(st.Note, "ended failure without a result") {
				assert.Contains(t, st.Note, "could not read the session", "step %s", st.ID)
			}
			failed[st.ID] = true
		}
	}
	for _, j := range w.JobsCopy() {
		if j.Run.ID == run && j.Command == "validate" {
			assert.NotZero(t, j.Exit, "%s job: a job that cannot read its session fails", j.Command)
			assert.Contains(t, j.Output, "the session cannot be read")
			assert.True(t, failed[j.Run.Inputs["step"]], "step %s failed", j.Run.Inputs["step"])
		}
	}
}

// inBothModes plays one issue to its end in App mode and in Action-only
// mode, as parallel subtests: arrange sets the move up on the world before
// the issue is opened and returns the check of the finished session.
func inBothModes(t *testing.T, arrange func(t *testing.T, w *World) (check func(s pipeline.Session))) {
	t.Parallel()
	t.Run("App", func(t *testing.T) {
		t.Parallel()
		var check func(pipeline.Session)
		_, s := PlayAppModeWith(t, E2eConfig, func(w *World) { check = arrange(t, w) })
		check(s)
	})
	t.Run("ActionOnly", func(t *testing.T) {
		t.Parallel()
		w := NewWorld(t)
		w.ActionOnly()
		check := arrange(t, w)
		check(playActionOnly(t, w))
	})
}

func TestE2ETrackingCommentDeleted(t *testing.T) {
	inBothModes(t, func(t *testing.T, w *World) func(pipeline.Session) {
		run := deleteTrackingOnJob(t, w, 1)
		return func(s pipeline.Session) { assertStepResent(t, w, s, run()) }
	})
}

// onGroupQA runs act once, as the agent job of group B's first QA step
// starts (B's branch has its developer's work then), and marks that run as
// one that may fail.
func onGroupQA(t *testing.T, w *World, act func(r ghfake.Run)) {
	t.Helper()
	var once sync.Once
	w.ExpectFail = map[int64]bool{}
	w.BeforeJob = func(r ghfake.Run, job string) {
		if job != "agent" || !strings.Contains(r.Inputs["step"], "/B/qa/") {
			return
		}
		once.Do(func() {
			w.Mu.Lock()
			w.ExpectFail[r.ID] = true
			w.Mu.Unlock()
			act(r)
		})
	}
}

// Issue 28, "group branch deleted": alice deletes group B's branch while
// its QA step starts; GitHub closes B's PR with it. The group is not given
// up: it waits, named, and bob's `/bazinga retry B` restores the branch at
// its head and reopens the PR; B then goes through QA again and merges.
func branchDeletedThenRetried(t *testing.T, w *World) {
	onGroupQA(t, w, func(ghfake.Run) {
		head, ok := w.Repo.Ref("refs/heads/bazinga/1-B")
		require.True(t, ok)
		require.NoError(t, w.Repo.DeleteBranch("alice", "bazinga/1-B"))
		waiting := w.WaitSession(1, func(s pipeline.Session) bool {
			b := s.Group("B")
			return b != nil && b.Wait == pipeline.WaitBranch
		})
		if !assert.True(t, waiting, "B waits for its branch") {
			return
		}
		s, _ := w.SessionNow(1)
		b := s.Group("B")
		assert.Equal(t, head, b.Deleted.Head)
		assert.Contains(t, b.WaitDetail, "branch bazinga/1-B was deleted by @alice")
		_, err := w.Repo.Comment("bob", 1, "/bazinga retry B")
		require.NoError(t, err)
	})
}

func assertBranchRestored(t *testing.T, w *World, s pipeline.Session) {
	t.Helper()
	n := w.PrOf("bazinga/1-B")
	require.NotZero(t, n)
	assert.True(t, w.Repo.PR(n).GetMerged(), "B's PR, reopened, merged")
	var log strings.Builder
	for _, c := range w.Repo.Comments(1) {
		log.WriteString(c.GetBody() + "\n")
	}
	assert.Contains(t, log.String(), "Group B's branch bazinga/1-B was deleted by @\u2060alice, and GitHub closed its PR with it")
	assert.Contains(t, log.String(), "Group B's branch was restored at")
	for _, st := range s.Steps {
		assert.NotContains(t, st.Note, "no result within", "step %s waited out its timeout", st.ID)
	}
}

func TestE2EBranchDeleted(t *testing.T) {
	inBothModes(t, func(t *testing.T, w *World) func(pipeline.Session) {
		w.F.SetPermission("bob", "write")
		branchDeletedThenRetried(t, w)
		return func(s pipeline.Session) { assertBranchRestored(t, w, s) }
	})
}

// playActionOnly runs a labelled issue to a verified BAZINGA in Action-only
// mode, with no schedule runs.
func playActionOnly(t *testing.T, w *World) pipeline.Session {
	t.Helper()
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))
	defer func() {
		if t.Failed() {
			w.Dump(issue)
		}
	}()
	sweeps := 0
	label := w.Wait(issue, 60*time.Second, func() {
		sweeps++
		_, _ = w.F.TriggerSchedule(E2eFull, SweepWorkflow)
	})
	require.Equal(t, "bazinga:done", label)
	assert.Zero(t, sweeps, "the schedule was not needed")
	w.Settle()
	s := w.AssertVerified(issue, codec.StateTrust{PublicKey: E2eActionOnlyKey, Authors: []string{ghfake.ActionsLogin}})
	w.AssertJobs(s)
	return s
}

// Issue 28, "group PR reopened": alice closes group B's PR while its QA
// step starts (the group is abandoned), then reopens it: the group is back
// in the session, goes through QA and review again, and merges; the
// session does not end while the PR is open.
func prClosedThenReopened(t *testing.T, w *World) {
	onGroupQA(t, w, func(ghfake.Run) {
		n := w.PrOf("bazinga/1-B")
		require.NotZero(t, n)
		require.NoError(t, w.Repo.ClosePR("alice", n))
		abandoned := w.WaitSession(1, func(s pipeline.Session) bool {
			b := s.Group("B")
			return b != nil && b.Stage == pipeline.StageAbandoned
		})
		if !assert.True(t, abandoned, "B was abandoned") {
			return
		}
		require.NoError(t, w.Repo.ReopenPR("alice", n))
	})
}

func assertReopened(t *testing.T, w *World, s pipeline.Session) {
	t.Helper()
	n := w.PrOf("bazinga/1-B")
	assert.True(t, w.Repo.PR(n).GetMerged())
	var log strings.Builder
	for _, c := range w.Repo.Comments(1) {
		log.WriteString(c.GetBody() + "\n")
	}
	assert.Contains(t, log.String(), "Group B's PR was reopened by @\u2060alice; the group is back in the session.")
}

func TestE2EPRReopened(t *testing.T) {
	inBothModes(t, func(t *testing.T, w *World) func(pipeline.Session) {
		prClosedThenReopened(t, w)
		return func(s pipeline.Session) { assertReopened(t, w, s) }
	})
}

// Issue 28, "issue body edited": the session keeps the requirements it
// started with and says so on the issue, in both modes.
func issueEdited(t *testing.T, w *World) {
	onGroupQA(t, w, func(ghfake.Run) {
		require.NoError(t, w.Repo.EditIssue("alice", 1, "Write a.txt and b.txt", "Both must say ok. And c.txt too."))
	})
}

func assertEditAcknowledged(t *testing.T, w *World, s pipeline.Session) {
	t.Helper()
	acks := 0
	for _, c := range w.Repo.Comments(1) {
		if strings.HasPrefix(c.GetBody(), "✏️ The issue was edited by @\u2060alice.") {
			acks++
		}
	}
	assert.Equal(t, 1, acks, "the edit is acknowledged once")
	assert.NotContains(t, s.Requirements, "c.txt")
}

func TestE2EIssueEdited(t *testing.T) {
	inBothModes(t, func(t *testing.T, w *World) func(pipeline.Session) {
		issueEdited(t, w)
		return func(s pipeline.Session) { assertEditAcknowledged(t, w, s) }
	})
}

// Issue 28, "repository renamed": an admin renames the repository while
// group B's QA step starts. GitHub keeps its id; webhooks and new runs use
// the new name, calls under the old one get 301. The session is the
// repository's by id: its state is written once under the new name (no
// rebuild, no flip-flop between names), and it ends verified with about the
// API calls of a session without the rename.
func TestE2ERepositoryRenamedAppMode(t *testing.T) {
	t.Parallel()
	var baseline int
	{
		w, _ := PlayAppMode(t, E2eConfig)
		baseline = w.F.Counts().Total
	}
	w, s := PlayAppModeWith(t, E2eConfig, func(w *World) {
		onGroupQA(t, w, func(ghfake.Run) {
			require.NoError(t, w.Repo.Rename("acme-admin", "gadgets"))
		})
	})
	assertRenamed(t, w, s)
	calls := w.F.Counts().Total
	t.Logf("API calls: %d with the rename, %d without (%.2f×)", calls, baseline, float64(calls)/float64(baseline))
	assert.LessOrEqual(t, float64(calls), 1.2*float64(baseline), "the rename costs at most a fifth more API calls")
}

func assertRenamed(t *testing.T, w *World, s pipeline.Session) {
	t.Helper()
	assertMoved(t, w, s, E2eOwner+"/gadgets")
}

// assertMoved checks a session whose repository moved to full mid-session.
func assertMoved(t *testing.T, w *World, s pipeline.Session, full string) {
	t.Helper()
	assert.Equal(t, full, w.Repo.FullName())
	newOwner, newName, _ := strings.Cut(full, "/")
	var log strings.Builder
	for _, c := range w.Repo.Comments(1) {
		log.WriteString(c.GetBody() + "\n")
	}
	assert.Contains(t, log.String(), "The repository moved from `"+E2eFull+"` to `"+full+"`; the session goes on there.")
	assert.Equal(t, 1, strings.Count(log.String(), "The repository moved from"), "said once")
	for _, st := range s.Steps {
		assert.NotContains(t, st.Note, "no result within", "step %s waited out its timeout", st.ID)
	}
	// Writes under the former name (jobs that started before the rename)
	// were repeated at the new location, with their method: each 301 of a
	// write is followed by the same write, answered.
	calls := w.F.Calls()
	moved := 0
	for i, c := range calls {
		if c.Status != http.StatusMovedPermanently || c.Method == http.MethodGet {
			continue
		}
		moved++
		repeated := false
		for _, n := range calls[i+1:] {
			if n.Method == c.Method && strings.HasPrefix(n.Path, "/repos/"+newOwner+"/"+newName+"/") &&
				strings.TrimPrefix(n.Path, "/repos/"+newOwner+"/"+newName+"/") == strings.TrimPrefix(c.Path, "/repos/"+E2eFull+"/") {
				repeated = n.Status < 400
				break
			}
		}
		assert.True(t, repeated, "the write %s %s was repeated at the new name", c.Method, c.Path)
	}
	t.Logf("%d writes under the former name repeated at the new one", moved)
}

func TestE2ERepositoryRenamedActionOnlyMode(t *testing.T) {
	t.Parallel()
	w := NewWorld(t)
	w.ActionOnly()
	onGroupQA(t, w, func(ghfake.Run) {
		require.NoError(t, w.Repo.Rename("acme-admin", "gadgets"))
	})
	s := playActionOnly(t, w)
	assertRenamed(t, w, s)
}

// Issue 28, "repository transferred": the same as a rename, to another
// owner (which installed the App too).
func TestE2ERepositoryTransferred(t *testing.T) {
	inBothModes(t, func(t *testing.T, w *World) func(pipeline.Session) {
		onGroupQA(t, w, func(ghfake.Run) {
			require.NoError(t, w.Repo.Transfer(E2eOwner, "globex"))
		})
		return func(s pipeline.Session) { assertMoved(t, w, s, "globex/"+E2eName) }
	})
}

// Issue 28, "base branch renamed": an admin renames main to trunk while
// group B's QA step starts; GitHub retargets the group PRs. The session
// follows: it merges into trunk, dispatches its steps on trunk, and says so.
func baseRenamed(t *testing.T, w *World) {
	onGroupQA(t, w, func(ghfake.Run) {
		// The runs going now started on main: they may fail, and their
		// failures are recorded so the steps go again at once.
		w.Mu.Lock()
		for _, r := range w.F.Runs() {
			if r.Status != "completed" {
				w.ExpectFail[r.ID] = true
			}
		}
		w.Mu.Unlock()
		require.NoError(t, w.Repo.RenameBranch(E2eOwner, "main", "trunk"))
	})
}

// assertBaseRenamed: the session went on into trunk and said who renamed main
// (by is "@\u2060<login>", or "someone" when no event named them).
func assertBaseRenamed(t *testing.T, w *World, s pipeline.Session, by string) {
	t.Helper()
	assert.Equal(t, "trunk", s.Base)
	for _, f := range []string{"a.txt", "b.txt"} {
		_, err := w.Repo.ReadFile("trunk", f)
		assert.NoError(t, err, "%s merged into trunk", f)
	}
	var log strings.Builder
	for _, c := range w.Repo.Comments(1) {
		log.WriteString(c.GetBody() + "\n")
	}
	assert.Contains(t, log.String(), "The base branch main was renamed to trunk by "+by+"; the session merges into trunk now.")
	for _, st := range s.Steps {
		assert.NotContains(t, st.Note, "no result within", "step %s waited out its timeout", st.ID)
	}
}

func TestE2EBaseRenamed(t *testing.T) {
	inBothModes(t, func(t *testing.T, w *World) func(pipeline.Session) {
		baseRenamed(t, w)
		return func(s pipeline.Session) { assertBaseRenamed(t, w, s, "@\u2060"+E2eOwner) }
	})
}

// Issue 28, "issue transferred": alice transfers the session's issue to
// another repository of the same owner while group B's QA starts. The
// group branches and PRs cannot follow, so the session stops: its step
// runs are cancelled, every open group PR says where the issue went and
// what is left to do, and the new issue names the PRs when the identity
// can write there (the App's installation can; a GITHUB_TOKEN cannot).
// Nothing waits for the schedule.
func issueTransferred(t *testing.T, w *World) (to *ghfake.Repo, at func() time.Time) {
	t.Helper()
	to, err := w.F.CreateRepo(E2eOwner, "gadgets", "main")
	require.NoError(t, err)
	var mu sync.Mutex
	var when time.Time
	onGroupQA(t, w, func(ghfake.Run) {
		mu.Lock()
		when = time.Now()
		mu.Unlock()
		_, err := w.Repo.TransferIssue("alice", 1, to)
		require.NoError(t, err)
	})
	return to, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return when
	}
}

// waitTransferStop waits, with no sweep, until every open group PR carries
// the stop notice; it returns those PRs.
func waitTransferStop(t *testing.T, w *World, at func() time.Time) []int {
	t.Helper()
	marker := "<!-- bazinga:transferred:1 -->"
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if !at().IsZero() {
			var open []int
			noted := 0
			for _, p := range w.Repo.PRs() {
				if p.GetState() != "open" || !strings.HasPrefix(p.GetHead().GetRef(), "bazinga/1-") {
					continue
				}
				open = append(open, p.GetNumber())
				for _, c := range w.Repo.Comments(p.GetNumber()) {
					if strings.Contains(c.GetBody(), marker) {
						noted++
						break
					}
				}
			}
			if len(open) > 0 && noted == len(open) {
				return open
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, j := range w.JobsCopy() {
		t.Logf("run %d %s %q exit %d\n%s", j.Run.ID, j.Command, j.Run.DisplayTitle, j.Exit, j.Output)
	}
	t.Fatalf("no stop notice on the open group PRs within 3m (transferred: %v)", !at().IsZero())
	return nil
}

func assertTransferStopped(t *testing.T, w *World, to *ghfake.Repo, open []int, writesThere bool) {
	t.Helper()
	w.Settle()
	marker := "<!-- bazinga:transferred:1 -->"
	var noticeAt time.Time
	for _, n := range open {
		count := 0
		for _, c := range w.Repo.Comments(n) {
			if strings.Contains(c.GetBody(), marker) {
				count++
				assert.Contains(t, c.GetBody(), "issue #1 was transferred to acme/gadgets#1")
				assert.Contains(t, c.GetBody(), "open an issue in acme/widgets and label it `bazinga`")
				if noticeAt.IsZero() || c.GetCreatedAt().Time.Before(noticeAt) {
					noticeAt = c.GetCreatedAt().Time
				}
			}
		}
		assert.Equal(t, 1, count, "PR #%d has the notice once", n)
	}
	noticesThere := func() []string {
		var there []string
		for _, c := range to.Comments(1) {
			if strings.Contains(c.GetBody(), marker) {
				there = append(there, c.GetBody())
			}
		}
		return there
	}
	there := noticesThere()
	if writesThere {
		// The App posts on the new issue after the PRs' notices, in the
		// same reconcile: wait for it rather than race it.
		require.Eventually(t, func() bool { there = noticesThere(); return len(there) > 0 }, 30*time.Second, 50*time.Millisecond,
			"the new issue names the open PRs")
		w.Settle()
		there = noticesThere()
		require.Len(t, there, 1, "the new issue names the open PRs")
		for _, n := range open {
			assert.Contains(t, there[0], "acme/widgets#"+strconv.Itoa(n))
		}
	} else {
		assert.Empty(t, there, "a GITHUB_TOKEN cannot write in another repository")
	}
	// The session stopped: no step run still at work, none started after
	// the notice, and nothing merged since.
	for _, r := range w.F.Runs() {
		assert.Equal(t, "completed", r.Status, "run %d %q", r.ID, r.DisplayTitle)
		if r.Workflow == "bazinga-agent.yml" {
			assert.False(t, r.CreatedAt.After(noticeAt.Add(time.Second)), "run %d %q started after the session stopped", r.ID, r.DisplayTitle)
		}
	}
}

func TestE2EIssueTransferredAppMode(t *testing.T) {
	t.Parallel()
	var to *ghfake.Repo
	var at func() time.Time
	w, b, appLog := AppModeWorld(t, E2eConfig, func(w *World) { to, at = issueTransferred(t, w) })
	_ = b
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))
	defer func() {
		if t.Failed() {
			t.Log(appLog())
		}
	}()
	open := waitTransferStop(t, w, at)
	assertTransferStopped(t, w, to, open, true)
}

func TestE2EIssueTransferredActionOnlyMode(t *testing.T) {
	t.Parallel()
	w := NewWorld(t)
	w.ActionOnly()
	to, at := issueTransferred(t, w)
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))
	open := waitTransferStop(t, w, at)
	assertTransferStopped(t, w, to, open, false)
	for _, r := range w.F.Runs() {
		assert.NotEqual(t, "schedule", r.Event, "the schedule was not needed")
	}
}

// Issue 28, "base renamed before any group PR exists": alice renames main
// to trunk while the pm plans. No PR is open for GitHub to retarget, so no
// event says it; the next reconcile finds the base gone, reads the rename
// from GitHub's redirect of the former name, and the session carries on
// into trunk.
func baseRenamedWhilePlanning(t *testing.T, w *World) {
	var once sync.Once
	w.ExpectFail = map[int64]bool{}
	w.BeforeJob = func(r ghfake.Run, job string) {
		if job != "agent" || !strings.Contains(r.Inputs["step"], "/_/pm/") {
			return
		}
		once.Do(func() {
			w.Mu.Lock()
			w.ExpectFail[r.ID] = true // started on main: it may fail
			w.Mu.Unlock()
			require.NoError(t, w.Repo.RenameBranch(E2eOwner, "main", "trunk"))
		})
	}
}

func TestE2EBaseRenamedWhilePlanning(t *testing.T) {
	inBothModes(t, func(t *testing.T, w *World) func(pipeline.Session) {
		baseRenamedWhilePlanning(t, w)
		return func(s pipeline.Session) { assertBaseRenamed(t, w, s, "someone") }
	})
}
