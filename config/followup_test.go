package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

func TestFollowUpLabelConfig(t *testing.T) {
	c, err := ParseConfig([]byte("github:\n  followup_label: bazinga-followup\n"))
	require.NoError(t, err)
	assert.Equal(t, "bazinga-followup", c.GitHub.FollowUpLabel)
	assert.Empty(t, pipeline.DefaultConfig().GitHub.FollowUpLabel, "off by default")
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
