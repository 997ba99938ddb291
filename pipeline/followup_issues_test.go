package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFollowUpsToOpen(t *testing.T) {
	u := FollowUp{Group: "A", Step: "7/A/qa/3", Finding: Finding{Severity: SeverityMedium, Problem: "p"}}
	prev := Session{FollowUps: []FollowUp{u}}
	next := Session{FollowUps: []FollowUp{u, u, u}}
	assert.Equal(t, []int{1, 2}, FollowUpsToOpen(prev, next))
	assert.Empty(t, FollowUpsToOpen(next, next))
}
