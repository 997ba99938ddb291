package ghfake

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentCommentWrites: two comment writes to one issue in flight at
// once are recorded; writes one after the other, or to different issues,
// are not.
func TestConcurrentCommentWrites(t *testing.T) {
	e := newEnv(t)
	e.f.opts.CommentWriteHold = 50 * time.Millisecond
	n1, err := e.repo.CreateIssue("alice", "one", "")
	require.NoError(t, err)
	n2, err := e.repo.CreateIssue("alice", "two", "")
	require.NoError(t, err)
	post := func(n int) {
		_, _, err := e.gh.Issues.CreateComment(e.ctx, owner, repoName, n, &github.IssueComment{Body: github.String("hi")})
		assert.NoError(t, err)
	}
	post(n1)
	post(n1)
	var wg sync.WaitGroup
	for _, n := range []int{n1, n2} {
		wg.Add(1)
		go func() { defer wg.Done(); post(n) }()
	}
	wg.Wait()
	assert.Empty(t, e.f.ConcurrentCommentWrites(), "sequential, or on different issues")
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); post(n2) }()
	}
	wg.Wait()
	assert.Equal(t, []string{"acme/widgets#2"}, e.f.ConcurrentCommentWrites())
}
