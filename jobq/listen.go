package jobq

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// listen wakes this process's workers whenever another process commits a
// job (its Store's notifier notifies NotifyChannel after commits), so a
// replica starts a job queued on another within a round trip or two
// instead of at its next poll. It holds one connection of its own outside
// the pools (LISTEN is per session; a pooler in transaction mode cannot
// keep it: those set RunnerOptions.PollOnly). On a lost connection it wakes the workers (a
// notification may have been missed), waits and listens again; polling goes
// on meanwhile, so nothing waits longer than a poll interval.
func (s *Store) listen(ctx context.Context, wake func(), log *slog.Logger) {
	wait := time.Second
	for {
		err := s.listenOnce(ctx, wake, func() { wait = time.Second })
		if ctx.Err() != nil {
			return
		}
		log.Warn("queue: listening for new jobs failed; polling until it is back", "err", err, "retry_in", wait)
		wake()
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, wake func(), connected func()) error {
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.Close(c)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return fmt.Errorf("LISTEN: %w", err)
	}
	connected()
	// Jobs committed while this was not listening are found by this wake.
	wake()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("waiting for a notification: %w", err)
		}
		if n.Payload == s.id {
			continue // this Store's own commit: it woke its runners itself
		}
		wake()
	}
}
