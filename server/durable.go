package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/jobq"
)

// The durable queue (jobq): with a database, a delivery is committed before
// its 202, runs on whichever replica's worker first takes its session's
// lease, and a failure is retried, parked or dead-lettered instead of
// logged and forgotten. Without one (Config.DatabaseURL ""), queue.go's
// in-memory lanes serve as before.

// Defaults of the durable queue.
const (
	// DefaultDatabaseFile is the SQLite file of the embedded queue, next to
	// the credentials file (the data directory: /data in the image).
	DefaultDatabaseFile = "bazinga-queue.db"
	// DefaultQueueRetention keeps a finished delivery's id for GitHub's
	// redelivery window: a delivery can be redelivered for 3 days
	// (docs.github.com, "Redelivering webhooks").
	DefaultQueueRetention = 72 * time.Hour
	// DefaultMaxAttempts: runs of a delivery failing transiently before it
	// is dead-lettered (backoff 2s, 4s, … 4m16s: about 8.5 minutes in all).
	DefaultMaxAttempts = 8
	// DefaultQueueLease: how long a replica that stopped renewing keeps its
	// sessions before another runs them.
	DefaultQueueLease = 30 * time.Second
)

// DatabaseURLFromEnv is the queue's database as BAZINGA_DATABASE_URL gives
// it, by default an SQLite file next to the credentials file; "" for
// "memory".
func DatabaseURLFromEnv(getenv func(string) string) (string, error) {
	v := strings.TrimSpace(getenv(EnvDatabaseURL))
	switch {
	case strings.EqualFold(v, "memory"):
		return "", nil
	case v == "":
		cred := strings.TrimSpace(getenv(EnvCredentialsFile))
		if cred == "" {
			cred = DefaultCredentialsFile
		}
		return "sqlite:" + filepath.Join(filepath.Dir(cred), DefaultDatabaseFile), nil
	}
	if _, _, err := jobq.ParseURL(v); err != nil {
		return "", fmt.Errorf("%s: %w", EnvDatabaseURL, err)
	}
	return v, nil
}

// redactDatabaseURL drops a URL's password for logs.
func redactDatabaseURL(raw string) string {
	if raw == "" {
		return "memory"
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}

func (c Config) queueDefaults() Config {
	if c.QueueRetention <= 0 {
		c.QueueRetention = DefaultQueueRetention
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.QueueLease <= 0 {
		c.QueueLease = DefaultQueueLease
	}
	if c.Replica == "" {
		host, _ := os.Hostname()
		c.Replica = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return c
}

// durable is the server's side of a jobq.Store.
type durable struct {
	store  *jobq.Store
	runner *jobq.Runner
	closed atomic.Bool
	// stats is the latest jobq.Stats, refreshed every statsEvery: the
	// queue-full check and the gauges read it rather than the database.
	stats atomic.Pointer[jobq.Stats]
}

const statsEvery = time.Second

// openDurable opens the queue and starts its workers.
func (s *Server) openDurable() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := s.cfg.Queue
	if st == nil {
		var err error
		if st, err = jobq.Open(ctx, s.cfg.DatabaseURL); err != nil {
			return fmt.Errorf("server: queue database (%s): %w", EnvDatabaseURL, err)
		}
	}
	st.SetLogger(s.log)
	d := &durable{store: st}
	d.stats.Store(&jobq.Stats{})
	s.dq = d
	d.refresh(ctx, s)
	// The gauges read d.runner at scrape time, after NewServer returned.
	s.metrics.setDurable(d, s.cfg.QueueSize, s.cfg.Replica)
	d.runner = jobq.NewRunner(st, s.runJob, jobq.RunnerOptions{
		Workers: s.cfg.Workers, Lease: s.cfg.QueueLease, Owner: s.cfg.Replica, Logger: s.log,
		Finished: s.metrics.jobFinished,
	})
	go func() {
		t := time.NewTicker(statsEvery)
		defer t.Stop()
		for {
			select {
			case <-s.stopped:
				return
			case <-t.C:
				d.refresh(s.workCtx, s)
			}
		}
	}()
	return nil
}

func (d *durable) refresh(ctx context.Context, s *Server) {
	st, err := d.store.Stats(ctx)
	if err != nil {
		s.log.Warn("queue stats", "err", err)
		return
	}
	d.stats.Store(&st)
}

// enqueue commits d (the caller answers 202 only after it returned
// accepted or duplicate).
func (s *Server) enqueueDurable(ctx context.Context, key string, d bot.Delivery) (accepted, duplicate bool, err error) {
	if s.dq.closed.Load() || s.dq.stats.Load().Pending >= s.cfg.QueueSize {
		return false, false, nil
	}
	// The store wakes its runner's workers itself once the job committed.
	ok, err := s.dq.store.Enqueue(ctx, jobq.Job{ID: d.ID, Key: key, Event: d.Event, Payload: d.Payload, Received: d.Received})
	if err != nil {
		return false, false, err
	}
	return ok, !ok, nil
}

// runJob is the jobq Handler: it runs a stored delivery through the
// Processor and turns the outcome into what the queue does next.
func (s *Server) runJob(ctx context.Context, c *jobq.Claim) jobq.Result {
	d, err := bot.ParseDelivery(bot.Delivery{ID: c.ID, Event: c.Event, Payload: c.Payload, Received: c.Received})
	if err != nil {
		// It parsed when it was accepted: the stored row is damaged.
		s.metrics.event(c.Event, OutcomeFailed)
		return jobq.Result{Disposition: jobq.Dead, Outcome: OutcomeFailed, Err: "stored payload: " + err.Error()}
	}
	log := s.log.With(append(deliveryAttrs(d), "attempt", c.Attempts)...)
	start := time.Now()
	outcome, perr := s.processDurable(ctx, d)
	var res jobq.Result
	switch {
	case outcome == OutcomeProcessed || outcome == OutcomeIgnored:
		res = jobq.Result{Disposition: jobq.Done, Outcome: outcome}
		if outcome == OutcomeProcessed {
			log.Info("delivery processed", "duration", time.Since(start), "queued", start.Sub(d.Received))
		} else {
			log.Debug("delivery ignored", "reason", perr.Error())
		}
	case outcome == OutcomePanicked:
		res = jobq.Result{Disposition: jobq.Dead, Outcome: outcome, Err: perr.Error()}
	case ctx.Err() != nil:
		// Shutdown or a lost lease: not the delivery's fault, so not an
		// attempt; it runs again at once elsewhere or at the next start.
		log.Warn("delivery interrupted", "err", perr)
		return jobq.Result{Disposition: jobq.Park, Err: perr.Error(), RunAfter: time.Now()}
	default:
		if reset, ok := onlyRateLimited(perr); ok {
			if min := time.Now().Add(time.Second); reset.Before(min) {
				reset = min
			}
			// The session's jobs wait for the reset, in order, instead of
			// spinning; other installations' sessions run on.
			log.Warn("delivery parked until the rate limit's reset", "reset", reset.UTC().Format(time.RFC3339), "err", perr)
			s.metrics.event(d.Event, OutcomeRateLimited)
			return jobq.Result{Disposition: jobq.Park, Outcome: OutcomeRateLimited, Err: perr.Error(), RunAfter: reset}
		}
		if transient(perr) && c.Attempts < s.cfg.MaxAttempts {
			wait := backoff(c.Attempts)
			log.Warn("delivery failed, will retry", "err", perr, "retry_in", wait)
			s.metrics.event(d.Event, OutcomeRetried)
			return jobq.Result{Disposition: jobq.Retry, Err: perr.Error(), RunAfter: time.Now().Add(wait)}
		}
		log.Error("delivery failed, dead-lettered (bazinga serve dead lists it, bazinga serve retry runs it again)", "err", perr, "duration", time.Since(start))
		res = jobq.Result{Disposition: jobq.Dead, Outcome: OutcomeFailed, Err: perr.Error()}
	}
	s.metrics.event(d.Event, res.Outcome)
	return res
}

// processDurable runs the Processor, a panic being an outcome.
func (s *Server) processDurable(ctx context.Context, d bot.Delivery) (outcome string, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("delivery panicked", append(deliveryAttrs(d), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))...)
			outcome, err = OutcomePanicked, fmt.Errorf("panic: %v", r)
		}
	}()
	err = s.p.Process(ctx, d)
	switch {
	case err == nil:
		return OutcomeProcessed, nil
	case errors.Is(err, bot.ErrIgnored):
		return OutcomeIgnored, err
	}
	return OutcomeFailed, err
}

// backoff is the wait before attempt n+1: 2s doubling, at most 10 minutes,
// with ±25% jitter so that a burst of failures does not retry in step.
func backoff(n int) time.Duration {
	d := 2 * time.Second << min(n-1, 9)
	d = min(d, 10*time.Minute)
	return d - d/4 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// transient reports a failure worth running again: GitHub answering 5xx (or
// 408/429 without a rate limit's headers, which onlyRateLimited took), or
// the network failing on the way.
func transient(err error) bool {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		c := er.Response.StatusCode
		return c >= 500 || c == 408 || c == 429
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// sweepDurable runs the sweep when this replica wins the interval, and then
// forgets finished deliveries past the retention.
func (s *Server) sweepDurable(ctx context.Context) {
	// Ask every tenth of the interval: the interval is one replica's, and a
	// replica that dies after winning costs the others one interval.
	every := max(s.cfg.SweepInterval/10, 100*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		won, err := s.dq.store.ClaimPeriodic(ctx, "sweep", s.cfg.Replica, s.cfg.SweepInterval)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("sweep: claiming the interval", "err", err)
		}
		if won {
			s.sweep(ctx)
			if n, err := s.dq.store.Prune(ctx, time.Now().Add(-s.cfg.QueueRetention)); err != nil {
				s.log.Warn("queue: pruning finished deliveries", "err", err)
			} else if n > 0 {
				s.log.Info("queue: finished deliveries pruned", "count", n, "retention", s.cfg.QueueRetention)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// shutdownDurable refuses new deliveries and lets running ones finish
// until ctx ends; what is queued stays for the next start.
func (s *Server) shutdownDurable(ctx context.Context) error {
	s.dq.closed.Store(true)
	err := s.dq.runner.Stop(ctx)
	s.stopOnce.Do(func() { close(s.stopped) })
	s.workCancel()
	return errors.Join(err, s.dq.store.Close())
}
