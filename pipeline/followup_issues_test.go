package pipeline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFollowUpLabelConfig(t *testing.T) {
	c, err := ParseConfig([]byte("github:\n  followup_label: bazinga-followup\n"))
	require.NoError(t, err)
	assert.Equal(t, "bazinga-followup", c.GitHub.FollowUpLabel)
	assert.Empty(t, DefaultConfig().GitHub.FollowUpLabel, "off by default")
	c, err = ParseConfig([]byte("github:\n  followup_label: bazinga\n"))
	require.NoError(t, err, "a person may choose the session label itself")
	assert.Equal(t, "bazinga", c.GitHub.FollowUpLabel)
	for label, want := range map[string]string{
		"bazinga:needs-input":   "status labels",
		strings.Repeat("x", 51): "at most 50 characters",
		"a,b":                   "no control characters or commas",
		"' padded '":            "no leading or trailing spaces",
	} {
		_, err := ParseConfig([]byte("github:\n  followup_label: " + label + "\n"))
		require.Error(t, err, label)
		assert.Contains(t, err.Error(), "github.followup_label", label)
		assert.Contains(t, err.Error(), want, label)
	}
}

func TestFollowUpsToOpen(t *testing.T) {
	u := FollowUp{Group: "A", Step: "7/A/qa/3", Finding: Finding{Severity: SeverityMedium, Problem: "p"}}
	prev := Session{FollowUps: []FollowUp{u}}
	next := Session{FollowUps: []FollowUp{u, u, u}}
	assert.Equal(t, []int{1, 2}, FollowUpsToOpen(prev, next))
	assert.Empty(t, FollowUpsToOpen(next, next))
}
