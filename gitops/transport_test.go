package gitops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	gitfile "github.com/go-git/go-git/v5/plumbing/transport/file"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A push whose view of a ref is stale fails instead of overwriting it.
func TestLocalPushChecksTheOldValue(t *testing.T) {
	f := newRemote(t)
	f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
	main := plumbing.NewHash(f.head(t, "main"))
	branch := plumbing.NewHash(f.head(t, "bazinga/s1-A"))
	w, err := dial(Remote{URL: f.bare})
	require.NoError(t, err)
	// The pusher believes main is at the branch head; it is not.
	err = w.push(context.Background(), memory.NewStorage(), nil,
		[]refUpdate{{Name: plumbing.NewBranchReferenceName("main"), Old: branch, New: main}})
	require.ErrorIs(t, err, errRefMoved)
	assert.Contains(t, err.Error(), "fetch first")
	assert.Equal(t, main.String(), f.head(t, "main"), "the ref is untouched")

	// A ref a git process holds locked is not touched either.
	lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
	require.NoError(t, os.WriteFile(lock, []byte("x\n"), 0o644))
	err = w.push(context.Background(), memory.NewStorage(), nil,
		[]refUpdate{{Name: plumbing.NewBranchReferenceName("main"), Old: main, New: branch}})
	require.ErrorIs(t, err, errRefMoved)
	assert.Contains(t, err.Error(), "locked")
	assert.Equal(t, main.String(), f.head(t, "main"))
	require.NoError(t, os.Remove(lock))

	// With the right old value the ref moves, and git reads it back.
	require.NoError(t, w.push(context.Background(), memory.NewStorage(), nil,
		[]refUpdate{{Name: plumbing.NewBranchReferenceName("main"), Old: main, New: branch}}))
	assert.Equal(t, branch.String(), f.head(t, "main"))
	_, err = os.Stat(lock)
	assert.True(t, os.IsNotExist(err), "no lock file left behind")
}

// Importing gitops leaves go-git's process-wide protocol registry alone:
// the file protocol is still go-git's own client.
func TestGoGitProtocolsUntouched(t *testing.T) {
	assert.Equal(t, reflect.TypeOf(gitfile.DefaultClient), reflect.TypeOf(client.Protocols["file"]))
	_, err := dial(Remote{URL: "ssh://example.com/x.git"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "only local paths")
	_, err = dial(Remote{})
	require.Error(t, err)
}

// Pushes racing for one ref from the same old value: exactly one wins.
func TestLocalPushesRaceForOneRef(t *testing.T) {
	f := newRemote(t)
	f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
	main := plumbing.NewHash(f.head(t, "main"))
	branch := plumbing.NewHash(f.head(t, "bazinga/s1-A"))
	w, err := dial(Remote{URL: "file://" + f.bare})
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, moved := 0, 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.push(context.Background(), memory.NewStorage(), nil,
				[]refUpdate{{Name: plumbing.NewBranchReferenceName("main"), Old: main, New: branch}})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else if errors.Is(err, errRefMoved) {
				moved++
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, wins)
	assert.Equal(t, 7, moved)
	assert.Equal(t, branch.String(), f.head(t, "main"))
}

// LockRefs holds off local pushes until released (local mode resets its
// checkout under it, so a landing merge is not undone).
func TestLockRefsHoldsOffPushes(t *testing.T) {
	f := newRemote(t)
	f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
	main := plumbing.NewHash(f.head(t, "main"))
	branch := plumbing.NewHash(f.head(t, "bazinga/s1-A"))
	unlock, err := LockRefs(context.Background(), f.bare)
	require.NoError(t, err)
	w, err := dial(Remote{URL: f.bare})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- w.push(context.Background(), memory.NewStorage(), nil,
			[]refUpdate{{Name: plumbing.NewBranchReferenceName("main"), Old: main, New: branch}})
	}()
	select {
	case err := <-done:
		t.Fatalf("the push did not wait for the lock: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	assert.Equal(t, main.String(), f.head(t, "main"))
	unlock()
	require.NoError(t, <-done)
	assert.Equal(t, branch.String(), f.head(t, "main"))
	_, err = LockRefs(context.Background(), t.TempDir())
	require.Error(t, err, "not a repository")
}
