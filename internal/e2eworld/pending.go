package e2eworld

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/internal/ghfake"
)

// PendingCanceller holds a session's concurrency group with a reconcile
// that waits, so that the session's next reconcile waits as pending and a
// later comment cancels it (GitHub keeps one pending run per group, a
// newer one cancelling it: issue 22). Install BeforeJob as the world's.
type PendingCanceller struct {
	W       *World
	n       atomic.Int32
	mu      sync.Mutex
	hold    map[string]chan struct{} // marker → released when closed
	held    map[string]chan struct{} // marker → closed when its reconcile runs
	timeout time.Duration
}

// NewPendingCanceller returns a canceller for w.
func NewPendingCanceller(w *World) *PendingCanceller {
	return &PendingCanceller{W: w, hold: map[string]chan struct{}{}, held: map[string]chan struct{}{}, timeout: 90 * time.Second}
}

// BeforeJob blocks the reconcile job of a holding comment's run.
func (p *PendingCanceller) BeforeJob(r ghfake.Run, job string) {
	if job != "reconcile" || r.Event != "issue_comment" {
		return
	}
	p.mu.Lock()
	var hold, held chan struct{}
	for marker, ch := range p.hold {
		if bytes.Contains(r.EventPayload, []byte(marker)) {
			hold, held = ch, p.held[marker]
		}
	}
	p.mu.Unlock()
	if hold == nil {
		return
	}
	close(held)
	select {
	case <-hold:
	case <-time.After(p.timeout):
	}
}

// HoldGroup posts a status command whose reconcile holds the session's
// group until release is called.
func (p *PendingCanceller) HoldGroup(issue int) (release func()) {
	t := p.W.T
	marker := fmt.Sprintf("holding-the-group-%d", p.n.Add(1))
	hold, held := make(chan struct{}), make(chan struct{})
	p.mu.Lock()
	p.hold[marker], p.held[marker] = hold, held
	p.mu.Unlock()
	_, err := p.W.Repo.Comment("alice", issue, "/bazinga status\n\n"+marker)
	require.NoError(t, err)
	select {
	case <-held:
	case <-time.After(p.timeout):
		t.Fatalf("the reconcile of %s did not start", marker)
	}
	var once sync.Once
	return func() { once.Do(func() { close(hold) }) }
}

// CancelPending waits for a reconcile of a run matching target to wait as
// pending, posts a comment (body, "/bazinga status" when empty) whose run
// replaces it, and waits for it to be cancelled. It returns the cancelled
// run's id. A newer run of the session's own (a step's result) may replace
// the pending reconcile first, between two looks: that is the cancellation
// wanted, and no comment is posted.
func (p *PendingCanceller) CancelPending(issue int, body string, target func(ghfake.Run) bool) int64 {
	t := p.W.T
	if body == "" {
		body = "/bazinga status"
	}
	var victim int64
	already := false
	require.Eventually(t, func() bool {
		for _, r := range p.W.F.Runs() {
			if r.Workflow != "bazinga.yml" || !target(r) {
				continue
			}
			for _, j := range p.W.F.Jobs(r.ID) {
				if j.Spec.ID != "reconcile" {
					continue
				}
				switch {
				case j.Status == "pending":
					victim = r.ID
					return true
				case j.Status == "completed" && j.Conclusion == "cancelled":
					victim, already = r.ID, true
					return true
				}
			}
		}
		return false
	}, p.timeout, 20*time.Millisecond, "a reconcile waits as pending")
	if already {
		t.Logf("run %d's pending reconcile was replaced by a newer run before the comment", victim)
		return victim
	}
	_, err := p.W.Repo.Comment("alice", issue, body)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, j := range p.W.F.Jobs(victim) {
			if j.Spec.ID == "reconcile" {
				return j.Status == "completed" && j.Conclusion == "cancelled"
			}
		}
		return false
	}, p.timeout, 20*time.Millisecond, "the pending reconcile of run %d is cancelled", victim)
	return victim
}
