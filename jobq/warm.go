package jobq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A PostgreSQL connection costs its first statements dearly: the server
// forks a backend for it, whose catalog caches start empty, so the first
// parse of each statement on a new connection took 5–36 ms on the
// benchmark's machine, against 0.2 ms once warm. A pool that grows during
// a burst of deliveries pays that in the acknowledgements' tail. So a
// Store opens its committers' connections before it takes a delivery, and
// a Runner its workers', each with the statements it will run prepared;
// database/sql keeps them (idle connections are closed only beyond the
// pool's idle limit, which is above these).

// pgWarmStatements are prepared on the durable pool's connections: the
// group commit's INSERT and the gauges' figures.
func (s *Store) pgWarmStatements() []string {
	return []string{pgInsert, s.q(qStats)}
}

// pgLightStatements are prepared on the light pool's connections: a
// worker's claim and finish, and what goes with them.
func (s *Store) pgLightStatements() []string {
	return []string{pgClaimNext, pgDone, pgRetry, pgPark, pgRelease, pgNotify, s.q(qExtend)}
}

// warm opens n connections of db (beyond those idle) and prepares queries on
// each; on SQLite it does nothing.
func (s *Store) warm(ctx context.Context, db *sql.DB, n int, queries []string) error {
	if s.kind != Postgres {
		return nil
	}
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("queue: opening %d PostgreSQL connections (is max_connections too low?): %w", n, err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		err := c.Raw(func(dc any) error {
			pc, ok := dc.(interface{ Conn() *pgx.Conn })
			if !ok {
				return errors.New("not a pgx connection")
			}
			for _, q := range queries {
				// Named by its text: pgx then runs the text as this
				// prepared statement.
				if _, err := pc.Conn().Prepare(ctx, q, q); err != nil {
					return fmt.Errorf("preparing %q: %w", firstLine(q), err)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("queue: warming a PostgreSQL connection: %w", err)
		}
	}
	return nil
}

func firstLine(q string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(q), "\n")
	return line
}
