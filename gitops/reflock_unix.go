//go:build unix

package gitops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockRefs takes an exclusive flock on the repository's refs directory:
// it excludes every other bazinga process (and goroutine: each holds its
// own open file) updating refs there, and the kernel drops it when its
// holder dies, so no stale lock outlives a killed run.
func lockRefs(ctx context.Context, gitDir string) (func(), error) {
	f, err := os.Open(filepath.Join(gitDir, "refs"))
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
