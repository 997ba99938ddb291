package jobq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"
)

func randomToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Handler runs one job. ctx is cancelled when the job's lease is lost or
// the runner gives up waiting at shutdown.
type Handler func(ctx context.Context, c *Claim) Result

// RunnerOptions tune a Runner; zero values mean the defaults.
type RunnerOptions struct {
	// Workers run jobs in parallel (default 4).
	Workers int
	// Lease is how long a key is held without renewal (default 30s); a
	// dead worker's keys are taken over after at most this. It is renewed
	// every third of it while the job runs.
	Lease time.Duration
	// Poll is how often an idle worker looks for work that no wake-up
	// announced: jobs due after a retry's backoff or a rate limit's reset,
	// sessions of a dead replica whose lease ran out, and (PollOnly, or
	// SQLite shared with another process) jobs another process queued. On
	// PostgreSQL the default is 2s, since another replica's jobs are
	// announced by LISTEN/NOTIFY; otherwise 250ms. Jobs committed by the
	// Runner's own Store wake it at once.
	Poll time.Duration
	// PollOnly turns off LISTEN/NOTIFY on PostgreSQL: for a connection
	// pooler in transaction mode (PgBouncer), which cannot hold a LISTEN,
	// and to measure what it saves.
	PollOnly bool
	// Owner names this process in leases (default a random token).
	Owner  string
	Logger *slog.Logger
	// Finished, if set, is told of every run's result (metrics).
	Finished func(c *Claim, r Result, took time.Duration)
}

// Runner runs a Store's jobs with a Handler on a pool of workers.
type Runner struct {
	s    *Store
	h    Handler
	o    RunnerOptions
	wake chan struct{}

	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
	// runCtx is cancelled when Stop gives up on running jobs.
	runCtx    context.Context
	runCancel context.CancelFunc

	// claiming lets one worker claim at a time: claimers that start
	// together all pick the same oldest head and queue on its lease, in
	// the database, only for all but one to find it taken.
	claiming sync.Mutex

	mu      sync.Mutex
	running int
	// keys are the keys this Runner's workers are claiming or running
	// (its keyGate).
	keys map[string]bool
	// recheck marks held keys with a job waiting that a sibling's claim
	// could not take: their holder claims again after letting go.
	recheck map[string]bool
}

// NewRunner starts o.Workers workers on s.
func NewRunner(s *Store, h Handler, o RunnerOptions) *Runner {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	listen := s.Postgres() && !o.PollOnly
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
		if listen {
			o.Poll = 2 * time.Second
		}
	}
	if o.Owner == "" {
		o.Owner = randomToken()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	// The workers' connections, opened before the first job (warm.go);
	// a failure only costs the first jobs a slower start.
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := s.warm(wctx, s.light, o.Workers+2, s.pgLightStatements()); err != nil {
		o.Logger.Warn("queue: opening the workers' database connections ahead", "err", err)
	}
	cancel()
	r := &Runner{s: s, h: h, o: o, wake: make(chan struct{}, o.Workers), stop: make(chan struct{}), keys: map[string]bool{}, recheck: map[string]bool{}}
	r.runCtx, r.runCancel = context.WithCancel(context.Background())
	s.addRunner(r)
	for i := 0; i < o.Workers; i++ {
		r.wg.Add(1)
		go r.worker()
	}
	if listen {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			ctx, cancel := context.WithCancel(r.runCtx)
			defer cancel()
			go func() {
				select {
				case <-r.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			s.listen(ctx, r.Wake, o.Logger)
		}()
	}
	return r
}

// enter and leave make the Runner its workers' keyGate: a key a sibling
// holds is skipped (only that sibling could take it: it holds, or is
// taking, its lease).
func (r *Runner) enter(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys[key] {
		return false
	}
	r.keys[key] = true
	return true
}

func (r *Runner) leave(key string) (recheck bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.keys, key)
	recheck = r.recheck[key]
	delete(r.recheck, key)
	return recheck
}

// missed marks the keys still held for a recheck by their holder, and
// reports whether one was let go meanwhile (its holder may have looked for
// a mark before this one was set: the caller's side looks again).
func (r *Runner) missed(keys []string) (left bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		if r.keys[k] {
			r.recheck[k] = true
		} else {
			left = true
		}
	}
	return left
}

func (r *Runner) held() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ks := make([]string, 0, len(r.keys))
	for k := range r.keys {
		ks = append(ks, k)
	}
	return ks
}

// Wake tells an idle worker that a job was queued. The Runner's Store
// calls it after each commit of new jobs; others may too (a job queued by
// another Store of the same process).
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Running is the number of jobs running in this process.
func (r *Runner) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

// Stop takes no more jobs and waits for the running ones until ctx ends;
// then it cancels them and waits a last moment. Jobs not started stay
// queued for the next process: nothing needs draining.
func (r *Runner) Stop(ctx context.Context) error {
	r.stopOnce.Do(func() {
		close(r.stop)
		r.s.removeRunner(r)
	})
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		r.runCancel()
		return nil
	case <-ctx.Done():
	}
	r.runCancel()
	select {
	case <-done:
		return errors.New("jobq: running jobs were cancelled at shutdown (they run again on the next start)")
	case <-time.After(5 * time.Second):
		return errors.New("jobq: a job is still running after cancellation")
	}
}

func (r *Runner) worker() {
	defer r.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		default:
		}
		r.claiming.Lock()
		c, more, err := r.s.claim(r.runCtx, r.o.Owner, r.o.Lease, r)
		r.claiming.Unlock()
		if err != nil {
			r.o.Logger.Error("queue: claiming a job", "err", err)
		}
		if more {
			// Another job looked claimable: an idle worker takes it. One
			// wake-up (a notification for a batch of jobs) so reaches
			// every worker needed, each waking the next.
			r.Wake()
		}
		if c != nil && r.run(c) {
			continue // the key's next job may be due: claim at once
		}
		// After a job, work announced while it ran left a wake-up in the
		// channel; otherwise the worker waits for one, or the poll.
		t.Reset(r.o.Poll)
		select {
		case <-r.stop:
			return
		case <-r.wake:
		case <-t.C:
		}
	}
}

// run runs c under its lease, renewing it, and records the result; it
// reports whether c's key has a later job pending.
func (r *Runner) run(c *Claim) bool {
	r.mu.Lock()
	r.running++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(r.runCtx)
	defer cancel()
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(r.o.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := r.s.Extend(ctx, c, r.o.Lease); err != nil {
					if ctx.Err() != nil {
						return
					}
					// Another worker may run this key now: stop.
					r.o.Logger.Error("queue: lease lost, cancelling the job", "delivery", c.ID, "err", err)
					cancel()
					return
				}
			}
		}
	}()
	start := time.Now()
	res := r.h(ctx, c)
	cancel()
	<-renewed
	next, err := r.s.finish(r.runCtx, c, res)
	// After the finish: the lease is free (or lost) now.
	if r.leave(c.Key) {
		next = true
	}
	if err != nil {
		// ErrLeaseLost: the new holder runs it again. Otherwise the lease
		// runs out and so does it.
		r.o.Logger.Error("queue: recording a job's result", "delivery", c.ID, "err", err)
	}
	if r.o.Finished != nil {
		r.o.Finished(c, res, time.Since(start))
	}
	return next
}
