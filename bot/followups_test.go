package bot

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// hostileMedium is a MEDIUM finding whose text tries to ping, inject HTML
// and break out of its line.
var hostileMedium = pipeline.Finding{Severity: pipeline.SeverityMedium, File: "widget.go", Line: 7,
	Problem: "no test for an empty widget @acme/maintainers <img src=x> <!--", Fix: "add one ![x](https://evil.example/p.png)"}

// TestFollowUpsOpenedAsLabelledIssuesOnce: with github.followup_label set,
// the MEDIUM follow-up is opened once as an issue with the label, linked
// to the session's issue and the group PR, its agent text inert.
func TestFollowUpsOpenedAsLabelledIssuesOnce(t *testing.T) {
	s := reviewSession(t, "github:\n  followup_label: bazinga-followup\n", func(int) (pipeline.Status, []pipeline.Finding) {
		return pipeline.StatusApproved, []pipeline.Finding{hostileMedium}
	})
	require.Equal(t, pipeline.SessionDone, s.run(500))
	st, _ := s.state()
	require.Len(t, st.Session.FollowUps, 1)
	issues := s.gh.issuesWithLabel("bazinga-followup")
	require.Len(t, issues, 1, "opened once, across every reconcile")
	is := issues[0]
	assert.Equal(t, fakeBotLogin, is.Author)
	assert.Equal(t, []string{"bazinga-followup"}, is.Labels, "never the bazinga label: that would start a session")
	assert.Equal(t, "Follow-up: no test for an empty widget @\u2060acme/maintainers <img src=x> <!--", is.Title)
	pr := st.PRNumber("A")
	require.NotZero(t, pr)
	assert.Contains(t, is.Body, fmt.Sprintf("bazinga session #%d went on with (group `A`, PR #%d)", s.issue, pr))
	assert.Contains(t, is.Body, "**MEDIUM** `widget.go:7`: no test for an empty widget @\u2060acme/maintainers &lt;img src=x&gt; &lt;!--")
	assert.NotContains(t, is.Body, "<img")
	assert.NotContains(t, is.Body, "![x]")
	assert.True(t, codec.HasEffectMarker(is.Body, fmt.Sprintf("followup/%s/0", st.Session.ID)))
	creates := 0
	for _, c := range s.gh.recorded(true) {
		if c.Op == "CreateIssue" {
			require.NoError(t, c.Err)
			creates++
		}
	}
	assert.Equal(t, 1, creates)
	s.assertVerifiedBazinga()
}

// TestFollowUpsStayInTheSessionByDefault: without the option no issue is
// opened; the follow-ups are listed as before.
func TestFollowUpsStayInTheSessionByDefault(t *testing.T) {
	s := reviewSession(t, "", func(int) (pipeline.Status, []pipeline.Finding) {
		return pipeline.StatusApproved, []pipeline.Finding{hostileMedium}
	})
	require.Equal(t, pipeline.SessionDone, s.run(500))
	for _, c := range s.gh.recorded(true) {
		assert.NotEqual(t, "CreateIssue", c.Op)
	}
}
