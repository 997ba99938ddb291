package e2emerge_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
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

// Merging the way the repository allows (issue 11), end to end in the
// fake GitHub with its rules on: branch protection and rulesets, allowed
// merge methods, required checks, drafts on free private repositories.

// e2eCIFixScenario is E2eScenario with one more developer result for group
// A: the fix after CI failed on its head (the scripted agent repeats its
// last result otherwise, which would leave the head unchanged).
func e2eCIFixScenario(t *testing.T) string {
	t.Helper()
	const notes = `"handoff": {"files_changed": ["a-notes.md"], "tests": {"total": 1, "passing": 1, "failing": 0}}}
  ],
  "B/developer"`
	require.Contains(t, E2eScenario, notes)
	return strings.Replace(E2eScenario, notes, `"handoff": {"files_changed": ["a-notes.md"], "tests": {"total": 1, "passing": 1, "failing": 0}}},
   {"status": "READY_FOR_QA", "summary": ["CI fixed"], "write": {"a-ci.md": "flaky test fixed\n"},
    "handoff": {"files_changed": ["a-ci.md"], "tests": {"total": 1, "passing": 1, "failing": 0}}}
  ],
  "B/developer"`, 1)
}

// playCI is the repository's CI: it answers every group PR head whose
// merge waits on its required check ci/test (as the tracking comment
// shows), failing group A's first head once (failA) and passing every other.
// It returns the heads it failed and passed, once stopped.
func playCI(t *testing.T, w *World, issue int, failA bool) (stop func() (failed, passed []string)) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed, passed []string
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
				if g.Wait != pipeline.WaitChecks || g.RequiredChecks == nil || answered[g.RequiredChecks.Head] {
					continue
				}
				head := g.RequiredChecks.Head
				Conclusion := "success"
				mu.Lock()
				if failA && g.ID == "A" && len(failed) == 0 {
					Conclusion = "failure"
					failed = append(failed, head)
				} else {
					passed = append(passed, head)
				}
				mu.Unlock()
				answered[head] = true
				if err := w.Repo.SetCheck(head, "ci/test", "in_progress", ""); err != nil {
					t.Errorf("CI: %v", err)
				}
				if err := w.Repo.SetCheck(head, "ci/test", "completed", Conclusion); err != nil {
					t.Errorf("CI: %v", err)
				}
			}
		}
	}()
	return func() ([]string, []string) {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return failed, passed
	}
}

// App mode on a repository that allows only squash merges, whose main
// requires pull requests, the check ci/test (classic protection) and a
// linear history (a ruleset): every group lands by squashing its tested PR
// head after CI passed on it; CI failing once sends group A back to its
// developer; BAZINGA is verified although no group branch is in main.
func TestE2EAppModeProtectedSquashOnlyWithRequiredCheck(t *testing.T) {
	t.Parallel()
	var stopCI func() ([]string, []string)
	w, s := PlayAppModeWith(t, E2eConfig, func(w *World) {
		require.NoError(t, os.WriteFile(filepath.Join(w.Root, "scenario.json"), []byte(e2eCIFixScenario(t)), 0o644))
		st := w.Repo.Settings()
		st.AllowMergeCommit, st.AllowRebaseMerge, st.AllowSquashMerge = false, false, true
		require.NoError(t, w.Repo.SetSettings(st))
		require.NoError(t, w.Repo.Protect("main", ghfake.Protection{RequirePR: true, RequiredChecks: []string{"ci/test"}}))
		_, err := w.Repo.AddRuleset(ghfake.Ruleset{Name: "linear main", Include: []string{"~DEFAULT_BRANCH"}, LinearHistory: true})
		require.NoError(t, err)
		// The issue PlayAppModeWith opens next is #1.
		stopCI = playCI(t, w, 1, true)
	})
	failed, passed := stopCI()
	require.Len(t, failed, 1, "CI failed group A's first head once")
	assert.GreaterOrEqual(t, len(passed), 2, "CI passed a head of each group")

	// Group A went back to its developer with the check named.
	fixes := 0
	for _, st := range s.Steps {
		if st.Group == "A" && st.Purpose == pipeline.PurposeFixMerge {
			fixes++
			assert.Contains(t, st.Feedback, "required checks failed on "+failed[0][:12]+": ci/test")
		}
	}
	assert.Equal(t, 1, fixes)
	// Both groups merged through the API by squashing: GitHub refused
	// nothing, and no group branch head is in main.
	merges := 0
	for _, c := range w.F.Calls() {
		if c.Method == http.MethodPut && strings.HasSuffix(c.Route, "/pulls/{number}/merge") {
			assert.Equal(t, http.StatusOK, c.Status, "no merge was refused")
			merges++
		}
	}
	assert.Equal(t, 2, merges)
	for _, g := range s.Groups {
		require.NotEmpty(t, g.MergeCommit, "group %s: the squash commit is learned", g.ID)
		var pr *struct{ head, merge string }
		for _, p := range w.F.PRs() {
			if p.GetHead().GetRef() == g.Branch {
				pr = &struct{ head, merge string }{p.GetHead().GetSHA(), p.GetMergeCommitSHA()}
				assert.True(t, p.GetMerged())
			}
		}
		require.NotNil(t, pr, "group %s has a PR", g.ID)
		assert.Equal(t, pr.merge, g.MergeCommit, "group %s", g.ID)
		assert.NotEqual(t, pr.head, g.MergeCommit, "group %s was squashed, not merged", g.ID)
	}
	// The merge waited, named, in the session's log.
	var log strings.Builder
	for _, c := range w.Repo.Comments(1) {
		log.WriteString(c.GetBody())
	}
	assert.Contains(t, log.String(), "waiting for required checks: ci/test")
	assert.Contains(t, log.String(), "required checks failed on")
}

// A base that requires branches to be up to date before merging (strict
// required checks): the group that merges second is behind main, so its
// land job pushes the tested merge to the group branch instead (GitHub would
// refuse the merge), CI runs on that head, and the merge goes again.
func TestE2EAppModeStrictRequiredChecks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		protect func(*ghfake.Repo) error
		refused int // 405s: classic protection shows readers its checks but not that they are strict
	}{
		{"classic protection", func(r *ghfake.Repo) error {
			return r.Protect("main", ghfake.Protection{RequiredChecks: []string{"ci/test"}, Strict: true})
		}, 1},
		{"ruleset", func(r *ghfake.Repo) error {
			_, err := r.AddRuleset(ghfake.Ruleset{Name: "ci", Include: []string{"~DEFAULT_BRANCH"}, RequiredChecks: []string{"ci/test"}, Strict: true})
			return err
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stopCI func() ([]string, []string)
			w, s := PlayAppModeWith(t, E2eConfig+"merge:\n  pr_method: squash\n", func(w *World) {
				require.NoError(t, tc.protect(w.Repo))
				stopCI = playCI(t, w, 1, false)
			})
			failed, passed := stopCI()
			assert.Empty(t, failed)
			assert.Len(t, passed, 3, "a head of each group, and the up-to-date head")
			updated := 0
			for _, st := range s.Steps {
				if st.Role == pipeline.RoleMerge && st.Result != nil && st.Result.Status == pipeline.StatusMergeUpdated {
					updated++
					assert.Contains(t, st.Result.Summary[0], "brought up to date with main")
				}
			}
			assert.Equal(t, 1, updated, "the group that merged second was brought up to date once")
			statuses := map[int]int{}
			for _, c := range w.F.Calls() {
				if c.Method == http.MethodPut && strings.HasSuffix(c.Route, "/pulls/{number}/merge") {
					statuses[c.Status]++
				}
			}
			want := map[int]int{http.StatusOK: 2}
			if tc.refused > 0 {
				want[http.StatusMethodNotAllowed] = tc.refused
			}
			assert.Equal(t, want, statuses)
		})
	}
}

// A private repository on the free plan refuses draft PRs (422): with
// merge.method push (the method that opens drafts) the group PRs are
// opened ready for review, with a note, and the session ends verified.
func TestE2EAppModeFreePrivateRepository(t *testing.T) {
	t.Parallel()
	w, _ := PlayAppModeWith(t, E2eConfig+"merge:\n  method: push\n", func(w *World) {
		st := w.Repo.Settings()
		st.Private, st.Plan = true, ghfake.PlanFree
		require.NoError(t, w.Repo.SetSettings(st))
	})
	prs := w.F.PRs()
	require.Len(t, prs, 2, "one PR per group, each opened once")
	for _, pr := range prs {
		assert.False(t, pr.GetDraft(), "PR #%d", pr.GetNumber())
		assert.Contains(t, pr.GetBody(), "does not support draft pull requests", "PR #%d", pr.GetNumber())
	}
	refused := 0
	for _, c := range w.F.Calls() {
		if c.Method == http.MethodPost && strings.HasSuffix(c.Route, "/pulls") && c.Status == http.StatusUnprocessableEntity {
			refused++
		}
	}
	assert.Equal(t, 2, refused, "one refused draft per group, never retried")
}

// merge.method push on a base whose ruleset requires pull requests: the
// land job knows it from the rules before pushing and the session pauses
// naming the rule and the fix, instead of failing the push again and again.
func TestE2EPushRefusedByProtection(t *testing.T) {
	t.Parallel()
	w := NewWorldWith(t, E2eConfig+"merge:\n  method: push\n")
	_, err := w.Repo.AddRuleset(ghfake.Ruleset{Name: "PRs only", Include: []string{"~DEFAULT_BRANCH"}, RequirePR: true})
	require.NoError(t, err)
	label := playAppModeUntilPaused(t, w)
	require.Equal(t, "bazinga:paused", label)
	var log strings.Builder
	for _, c := range w.Repo.Comments(1) {
		log.WriteString(c.GetBody())
	}
	assert.Contains(t, log.String(), "merge.method is push, but main refuses a pushed merge commit: changes must be made through a pull request (ruleset")
	assert.Contains(t, log.String(), "set merge.method: pull-request")
	lands := 0
	for _, j := range w.JobsCopy() {
		if j.Command == "land" {
			lands++
		}
	}
	assert.Equal(t, 1, lands, "one land job, no retries")
}

// playAppModeUntilPaused starts the App on w (World.StartApp) and runs it until
// the session stops moving, and returns the issue's final bazinga label.
func playAppModeUntilPaused(t *testing.T, w *World) string {
	t.Helper()
	b, _ := w.StartApp()
	issue, err := w.Repo.CreateIssue("alice", "Write a.txt and b.txt", "Both must say ok.")
	require.NoError(t, err)
	require.NoError(t, w.Repo.LabelIssue("alice", issue, "bazinga"))
	label := w.Wait(issue, 60*time.Second, func() { _ = b.Sweep(context.Background()) })
	w.Settle()
	return label
}
