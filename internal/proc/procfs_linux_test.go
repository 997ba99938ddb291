package proc

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Both ways of listing descendants agree (on this process, whose children
// are the test's own subprocesses, if any; at least neither fails).
func TestDescendantsBothWays(t *testing.T) {
	assert.ElementsMatch(t, descendantsByScan(os.Getpid()), descendants(os.Getpid()))
	assert.Empty(t, descendants(1<<30), "a process that does not exist has no descendants")
}

// BenchmarkDescendants compares reading the children files with a scan of
// all of /proc (what the supervisor does on every sweep).
func BenchmarkDescendants(b *testing.B) {
	b.Run("children-files", func(b *testing.B) {
		for b.Loop() {
			descendants(os.Getpid())
		}
	})
	b.Run("proc-scan", func(b *testing.B) {
		for b.Loop() {
			descendantsByScan(os.Getpid())
		}
	})
}
