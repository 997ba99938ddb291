package bot

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefusalsPerInstallation is issue 21's attack: one read-only account
// writes `/bazinga status` on thirty issues. A collaborator with read access
// is told once for the whole installation (not once per thread); someone
// GitHub shows as unrelated to the repository (author_association NONE) is
// never answered, so the attack writes nothing.
func TestRefusalsPerInstallation(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 1})
	refusals := func(login string, issues []int) int {
		n := 0
		for _, is := range issues {
			for _, c := range h.botComments(is) {
				if strings.Contains(c, "@"+login+" only people with write") {
					n++
				}
			}
		}
		return n
	}
	var issues []int
	for i := 0; i < 30; i++ {
		n, err := h.repo.CreateIssue("eve", fmt.Sprintf("issue %d", i), "body")
		require.NoError(t, err)
		issues = append(issues, n)
	}
	h.drain()

	// eve: no role on the repository (NONE), the attack of the issue.
	h.f.ResetCalls()
	for _, n := range issues {
		_, err := h.repo.Comment("eve", n, "/bazinga status")
		require.NoError(t, err)
		h.drain()
	}
	assert.Zero(t, refusals("eve", issues), "no refusal for someone without a role")
	assert.Zero(t, h.f.Counts().ContentCreating, "thirty commands of a stranger write nothing")

	// mallory: a read collaborator, told once across the thirty issues.
	h.f.ResetCalls()
	for _, n := range issues {
		_, err := h.repo.Comment("mallory", n, "/bazinga status")
		require.NoError(t, err)
		h.drain()
	}
	assert.Equal(t, 1, refusals("mallory", issues), "one refusal per person per installation per hour")
	assert.Equal(t, 1, h.f.Counts().ContentCreating)

	// An hour later, once more; a restarted bot (no memory) still finds the
	// thread's refusal within the hour.
	h.clock.Advance(61 * time.Minute)
	_, err := h.repo.Comment("mallory", issues[3], "/bazinga stop")
	require.NoError(t, err)
	h.drain()
	assert.Equal(t, 2, refusals("mallory", issues))
	h.bot = h.newBot()
	_, err = h.repo.Comment("mallory", issues[3], "/bazinga stop")
	require.NoError(t, err)
	h.drain()
	assert.Equal(t, 2, refusals("mallory", issues), "after a restart the thread remembers")
}

func TestMayBeRefused(t *testing.T) {
	for assoc, want := range map[string]bool{
		"OWNER": true, "MEMBER": true, "COLLABORATOR": true, "collaborator": true, "": true,
		"NONE": false, "CONTRIBUTOR": false, "FIRST_TIMER": false, "FIRST_TIME_CONTRIBUTOR": false, "MANNEQUIN": false,
	} {
		assert.Equal(t, want, mayBeRefused(assoc), assoc)
	}
}
