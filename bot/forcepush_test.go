package bot

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// Issue 28, Action-only mode's view: its workflow runs on no push, so the
// first the orchestrator hears of a human's push to a group branch may be
// that human's approval of the commit they pushed. The bot reads the branch:
// it is at the approved commit, which is not the group's head, so the push
// goes to the engine before the review. The group goes back through QA and
// review on the pushed head (no merge of what the tech lead saw before),
// and the approval counts for the head it was given on.
func TestApprovalOfAPushedHeadSendsTheGroupBackThroughReview(t *testing.T) {
	s := newFakeSession(t, 2, "merge:\n  required_approvals: 1\n")
	s.start()
	for i := 0; i < 200; i++ {
		s.steps(1)
		st, _ := s.state()
		waiting := 0
		for _, g := range st.Session.Groups {
			if g.Wait == pipeline.WaitHumanReview {
				waiting++
			}
		}
		if waiting == 2 {
			break
		}
	}
	st, _ := s.state()
	a := st.Session.Group("A")
	require.Equal(t, pipeline.WaitHumanReview, a.Wait)
	reviewed := a.ReviewedHead
	require.NotEmpty(t, reviewed)

	pushed := s.gh.push(a.Branch, map[string]string{"group_A_extra.txt": "alice's\n"}) // no delivery: Action-only
	for _, pr := range s.prs() {
		s.review("alice", pr.Number, "APPROVED")
	}
	s.drain()
	st, _ = s.state()
	a = st.Session.Group("A")
	assert.Equal(t, pushed, a.Head)
	assert.Equal(t, []string{"alice"}, a.Approvals, "the approval is for the pushed head")
	assert.Empty(t, a.ReviewedHead, "the tech lead has not seen it yet")
	require.NotEmpty(t, a.InFlight)
	assert.Equal(t, pipeline.RoleQA, st.Session.Step(a.InFlight).Role)
	assert.Contains(t, s.botCommentsJoined(), "A's branch moved from "+reviewed[:7]+" to "+pushed[:7]+" after review; sending it back through QA and review")

	require.Equal(t, pipeline.SessionDone, s.run(500))
	s.assertVerifiedBazinga()
	st, _ = s.state()
	a = st.Session.Group("A")
	assert.Equal(t, pushed, a.ReviewedHead, "what merged is what the tech lead approved last")
	var route []string
	for _, step := range st.Session.Steps {
		if step.Group == "A" && step.State == pipeline.StepDone {
			route = append(route, step.Role.String())
		}
	}
	assert.Equal(t, "developer qa tech_lead qa tech_lead merge", strings.Join(route, " "))
}
