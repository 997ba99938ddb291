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
// benchmark's machine, against 0.2 ms once warm, and its first run of each
// plans it and loads its tables' indexes. A pool that grows during a burst
// of deliveries, or a new process's first burst, pays that in the
// acknowledgements' tail. So a Store opens its committers' connections
// before it takes a delivery, and a Runner its workers', each with the
// statements it will run prepared and run once;
// database/sql keeps them (idle connections are closed only beyond the
// pool's idle limit, which is above these).

// A warm statement is prepared on a connection and, if it has args, run
// once with them in a transaction rolled back: the run plans it and opens
// its tables' indexes, which a new server process otherwise does during its
// first burst (its catalog caches start empty). No run here changes a row.
type warmStmt struct {
	q    string
	args []any
}

// pgWarmStatements are the durable pool's: the group commit's INSERT (run
// with an empty batch) and the gauges' figures.
func (s *Store) pgWarmStatements() []warmStmt {
	return []warmStmt{
		// A real row, rolled back: the first insert of a connection
		// also finds the table's page with room and descends its indexes.
		{pgInsert, []any{[]string{"~warm/" + randomToken()}, []string{"~warm"}, []string{"warm"}, [][]byte{{}}, []int64{0}}},
		{s.q(qStats), []any{StatePending, StatePending, 0, 0, StateDead, StatePending}},
	}
}

// pgLightStatements are the light pool's: a worker's claim (run at time 0,
// when nothing is due) and finish (run for no lease), and what goes with
// them; the notification is only prepared.
func (s *Store) pgLightStatements() []warmStmt {
	return []warmStmt{
		{pgClaimNext, []any{int64(0), []string{}, "", int64(0)}},
		{pgDone, []any{"", "", int64(0), StateDone, "", "", int64(0)}},
		{pgRetry, []any{"", "", int64(0), int64(0), ""}},
		{pgPark, []any{"", "", int64(0), int64(0), ""}},
		{pgRelease, []any{"", ""}},
		{s.q(qExtend), []any{int64(0), "", ""}},
		{pgNotify, nil},
	}
}

// warm opens n connections of db (beyond those idle) and readies stmts on
// each; on SQLite it does nothing.
func (s *Store) warm(ctx context.Context, db *sql.DB, n int, stmts []warmStmt) error {
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
			for _, st := range stmts {
				// Named by its text: pgx then runs the text as this
				// prepared statement.
				if _, err := pc.Conn().Prepare(ctx, st.q, st.q); err != nil {
					return fmt.Errorf("preparing %q: %w", firstLine(st.q), err)
				}
				if st.args == nil {
					continue
				}
				if err := runRolledBack(ctx, pc.Conn(), st); err != nil {
					return fmt.Errorf("running %q: %w", firstLine(st.q), err)
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

// runRolledBack runs st in a transaction it rolls back.
func runRolledBack(ctx context.Context, c *pgx.Conn, st warmStmt) error {
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	_, err = tx.Exec(ctx, st.q, st.args...)
	return err
}

func firstLine(q string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(q), "\n")
	return line
}
