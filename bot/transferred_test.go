package bot

import (
	"context"
	"strings"
	"testing"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A session whose issue was transferred, found by a reconcile that no
// transfer event woke (a dispatch, a late result): the step runs are
// cancelled, every open group PR gets the stop notice once, and nothing is
// dispatched again; a second reconcile adds nothing.
func TestTransferredIssueFoundByAReconcileStopsTheSession(t *testing.T) {
	s := newFakeSession(t, 2, "")
	s.hold = func(step string) bool { return strings.Contains(step, "/qa/") } // QA runs stay at work
	s.start()
	for i := 0; i < 200 && len(s.prs()) < 2; i++ {
		s.steps(1)
	}
	require.Len(t, s.prs(), 2)
	working := 0
	for _, r := range s.gh.runs {
		if r.Status != "completed" {
			working++
		}
	}
	require.NotZero(t, working, "step runs at work")
	to := ghapi.IssueMove{Repo: ghapi.RepoRef{Owner: coreOwner, Name: "gadgets", ID: 77}, Number: 4}
	s.gh.transfer(s.issue, to)
	runs := len(s.gh.runs)

	ref := ghapi.RepoRef{Owner: coreOwner, Name: coreRepo}
	for i := 0; i < 2; i++ {
		require.NoError(t, s.bot.ReconcileIssue(context.Background(), 0, ref, s.issue))
	}
	for _, r := range s.gh.runs {
		assert.Equal(t, "completed", r.Status, "run %d cancelled", r.ID)
	}
	assert.Len(t, s.gh.runs, runs, "nothing dispatched after the transfer")
	for _, pr := range s.prs() {
		var notes []string
		for _, c := range s.gh.comments {
			if c.Issue == pr.Number && strings.Contains(c.Body, transferMarker(s.issue)) {
				notes = append(notes, c.Body)
			}
		}
		require.Len(t, notes, 1, "PR #%d", pr.Number)
		assert.Contains(t, notes[0], "was transferred to "+coreOwner+"/gadgets#4")
	}
}

func TestIssueMoveNamesAnUnreadableRepository(t *testing.T) {
	assert.Equal(t, "issue #4 of a repository bazinga cannot read (id 77)", ghapi.IssueMove{Repo: ghapi.RepoRef{ID: 77}, Number: 4}.String())
	assert.Equal(t, "acme/gadgets#4", ghapi.IssueMove{Repo: ghapi.RepoRef{Owner: "acme", Name: "gadgets", ID: 77}, Number: 4}.String())
}

// A base renamed while no group PR is open (the pm planning): no event
// says it, so a reconcile finds the base gone and reads the rename from
// GitHub's redirect; the session carries on into the new name.
func TestBaseRenamedWithNoPROpenIsFound(t *testing.T) {
	s := newFakeSession(t, 1, "")
	s.hold = func(step string) bool { return strings.Contains(step, "/pm/") } // the pm plans
	s.start()
	s.steps(20)
	st, ok := s.state()
	require.True(t, ok)
	require.Equal(t, "main", st.Session.Base)
	s.gh.renameBranch("main", "trunk")
	ref := ghapi.RepoRef{Owner: coreOwner, Name: coreRepo}
	require.NoError(t, s.bot.ReconcileIssue(context.Background(), 0, ref, s.issue))
	st, _ = s.state()
	assert.Equal(t, "trunk", st.Session.Base)
	assert.Contains(t, s.botCommentsJoined(), "The base branch main was renamed to trunk by someone")
	calls := len(s.gh.calls)
	require.NoError(t, s.bot.ReconcileIssue(context.Background(), 0, ref, s.issue))
	for _, c := range s.gh.calls[calls:] {
		assert.NotEqual(t, "BranchMoved", c.Op, "the base is there again: no second look")
	}
}
