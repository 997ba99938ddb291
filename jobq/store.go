// Package jobq is bazinga serve's durable work queue: webhook deliveries
// stored in SQL (an embedded SQLite file, or PostgreSQL shared by replicas)
// before they are acknowledged, and run one session at a time, in arrival
// order, on any number of processes.
//
// The model: a delivery is a row, committed before the 2xx (so a crash loses
// nothing acknowledged) under a unique delivery id (so a redelivery is a
// duplicate for as long as the row is kept, restarts included). Rows of one
// session key run head first: only the oldest pending row of a key is
// eligible, and a worker runs it only while it holds the key's lease, a row
// in the leases table that one statement takes from nobody or from a holder
// whose lease ran out. A worker that dies (kill -9, a lost replica) stops
// renewing; its lease runs out and another worker runs the row again, so
// processing is at least once, exactly once unless a worker dies in the
// middle. Periodic work (the sweep) is claimed the same way: one statement
// moves the schedule forward, and only the replica whose statement did runs
// it. docs/queue.md explains the choice over riverqueue/river.
package jobq

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go
)

// Kind is the kind of database behind a Store.
type Kind string

const (
	SQLite   Kind = "sqlite"
	Postgres Kind = "postgres"
)

// States of a delivery row.
const (
	StatePending = "pending" // waiting, or running under a lease
	StateDone    = "done"    // finished (processed, ignored or failed for good); kept for deduplication
	StateDead    = "dead"    // gave up: listed for an operator, who may retry it
)

// Store is a queue in one database. It is safe for concurrent use, by any
// number of Stores on the same database (replicas).
type Store struct {
	db   *sql.DB
	kind Kind
	dsn  string
	// light is PostgreSQL's pool for the workers' bookkeeping (leases,
	// attempts, results), whose commits do not wait for the disk
	// (synchronous_commit off); on SQLite the one connection switches its
	// synchronous pragma per transaction instead (see begin).
	light *sql.DB

	// stmts are SQLite's prepared statements: modernc's driver parses a
	// statement on every call otherwise, a fifth of a delivery's CPU.
	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt

	// enq takes Enqueue's jobs to the committers (group commit).
	enq       chan *enqueueReq
	closing   chan struct{}
	closed    chan struct{} // closed once the committers have stopped
	closeOnce sync.Once
	committed sync.WaitGroup
	// inFlight counts the batches committing now; observe, if set, is
	// told of every group commit (ObserveCommits).
	inFlight atomic.Int32
	observe  atomic.Pointer[func(CommitStats)]
	// PostgreSQL's wake-up of the other replicas, sent after commits and
	// outside them (see notifier): committers signal notifyReq, Close
	// stops the notifier with notifyStop and waits for notifyDone.
	notifyReq  chan struct{}
	notifyStop chan struct{}
	notifyDone chan struct{}
	log        atomic.Pointer[slog.Logger]
	// id is the payload of this Store's notifications: its own listener
	// skips them, since a commit wakes the Store's runners directly.
	id      string
	runMu   sync.Mutex
	runners []*Runner
	// Now is the clock (tests move it); every replica's clock is compared
	// with the others' through lease and schedule times, so replicas need
	// clocks within a fraction of the lease (NTP is plenty).
	Now func() time.Time
}

// ParseURL tells which database a BAZINGA_DATABASE_URL names and the
// driver's data source: postgres://… or postgresql://… for PostgreSQL;
// sqlite:PATH, file:PATH or a plain path for an SQLite file.
func ParseURL(raw string) (Kind, string, error) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return "", "", errors.New("no database URL")
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		if _, err := url.Parse(raw); err != nil {
			return "", "", fmt.Errorf("malformed PostgreSQL URL: %w", err)
		}
		return Postgres, raw, nil
	case strings.Contains(raw, "://"):
		scheme, _, _ := strings.Cut(raw, "://")
		return "", "", fmt.Errorf("unsupported database scheme %q: use postgres://… or sqlite:PATH", scheme)
	}
	path := strings.TrimPrefix(strings.TrimPrefix(raw, "sqlite:"), "file:")
	if path == "" || strings.Contains(path, "?") {
		return "", "", fmt.Errorf("sqlite: %q is not a file path", raw)
	}
	return SQLite, path, nil
}

// Open opens (creating it if needed) the queue at url and brings its schema
// up to date.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	kind, dsn, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	var db, light *sql.DB
	switch kind {
	case Postgres:
		db, err = sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		db.SetMaxOpenConns(32)
		db.SetMaxIdleConns(16)
		light, err = sql.Open("pgx", withRuntimeParam(dsn, "synchronous_commit", "off"))
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("postgres: %w", err)
		}
		light.SetMaxOpenConns(16)
		light.SetMaxIdleConns(16)
	case SQLite:
		// WAL lets readers run beside the writer; synchronous FULL makes a
		// commit durable against power loss too, which is what "a delivery
		// acknowledged" promises (the workers' own transactions lower it:
		// see begin); busy_timeout waits for another process
		// (an admin command) instead of failing; one connection makes this
		// process's statements queue in Go rather than in SQLITE_BUSY.
		q := url.Values{}
		for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(FULL)", "foreign_keys(ON)"} {
			q.Add("_pragma", p)
		}
		q.Set("_txlock", "immediate")
		db, err = sql.Open("sqlite", "file:"+dsn+"?"+q.Encode())
		if err != nil {
			return nil, fmt.Errorf("sqlite %s: %w", dsn, err)
		}
		db.SetMaxOpenConns(1)
	}
	s := &Store{db: db, light: light, kind: kind, dsn: dsn, Now: time.Now, stmts: map[string]*sql.Stmt{},
		enq: make(chan *enqueueReq, 1024), closing: make(chan struct{}), closed: make(chan struct{}),
		notifyReq: make(chan struct{}, 1), notifyStop: make(chan struct{}), notifyDone: make(chan struct{}),
		id: randomToken()}
	s.log.Store(slog.New(slog.DiscardHandler))
	if err := s.migrate(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	if err := s.prepareHot(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	if err := s.warm(ctx, s.db, pgCommitters+1, s.pgWarmStatements()); err != nil {
		s.closeDBs()
		return nil, err
	}
	// One committer on SQLite (one writer at a time anyway). On
	// PostgreSQL several batches commit at once, each on its own
	// connection, and the server syncs the log once for the commits that
	// wait together: a delivery arriving while a batch commits starts its
	// own commit at once rather than after that batch's sync.
	committers := 1
	if kind == Postgres {
		committers = pgCommitters
		go s.notifier()
	} else {
		close(s.notifyDone)
	}
	for range committers {
		s.committed.Add(1)
		go s.committer()
	}
	return s, nil
}

// pgCommitters bounds PostgreSQL's batches in flight (and the connections
// they hold, out of the pool's 32).
const pgCommitters = 4

// SetLogger sets where the Store logs what it does in the background (a
// failed wake-up of the other replicas); nothing by default.
func (s *Store) SetLogger(l *slog.Logger) {
	if l != nil {
		s.log.Store(l)
	}
}

// withRuntimeParam adds a session parameter to a PostgreSQL URL (pgx sets
// the URL's unknown query parameters on the connection).
func withRuntimeParam(dsn, name, value string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn // Open's ParseURL already vetted it
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// Kind is the database kind.
func (s *Store) Kind() Kind { return s.kind }

// DB is the database handle, for bazinga serve's other tables in the same
// database (the model gateway's ledger): one pool, one set of drivers.
func (s *Store) DB() *sql.DB { return s.db }

// Postgres reports whether the database is PostgreSQL (else SQLite).
func (s *Store) Postgres() bool { return s.kind == Postgres }

// Rebind rewrites a query's ? placeholders for the database (PostgreSQL's
// $n), for statements written once for both.
func (s *Store) Rebind(query string) string { return s.q(query) }

// Close stops the committers (an Enqueue after it fails) and closes the
// database.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.committed.Wait()
		close(s.closed)
		close(s.notifyStop)
		<-s.notifyDone
	})
	<-s.closed
	return s.closeDBs()
}

func (s *Store) closeDBs() error {
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = map[string]*sql.Stmt{}
	s.stmtMu.Unlock()
	err := s.db.Close()
	if s.light != nil {
		err = errors.Join(err, s.light.Close())
	}
	return err
}

// A txn is one of the queue's transactions, durable or light.
type txn struct {
	s    *Store
	tx   *sql.Tx
	conn *sql.Conn // SQLite: the connection whose synchronous pragma begin lowered
}

// begin starts a transaction. A durable one commits to the disk before
// Commit returns (what a 2xx promises); a light one, the workers'
// bookkeeping, commits to the database without waiting for the disk. Both
// survive the death of this process (kill -9): SQLite's WAL frames are in the
// kernel's page cache, PostgreSQL's server has them. Only a power loss (or a
// PostgreSQL server crash) can lose the last light commits, and then a job
// runs again (its lease and result lost): never a lost acknowledged
// delivery, since an Enqueue's durable commit syncs the log, and with it
// every light commit written before it. docs/queue.md states the guarantee.
func (s *Store) begin(ctx context.Context, durable bool) (*txn, error) {
	switch {
	case s.kind == Postgres && !durable:
		tx, err := s.light.BeginTx(ctx, nil)
		return &txn{s: s, tx: tx}, err
	case s.kind == Postgres || durable:
		tx, err := s.db.BeginTx(ctx, nil)
		return &txn{s: s, tx: tx}, err
	}
	// SQLite refuses to change synchronous inside a transaction ("Safety
	// level may not be changed inside a transaction"), so the light
	// transaction holds the connection across the pragma, the transaction
	// and the pragma's restoring (the connection is FULL whenever idle:
	// other users of DB(), the gateway's ledger, keep that).
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		conn.Close()
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		s.restore(conn)
		return nil, err
	}
	return &txn{s: s, tx: tx, conn: conn}, nil
}

// restore puts a light transaction's connection back to synchronous FULL
// and returns it to the pool; a connection that refuses is discarded.
func (s *Store) restore(conn *sql.Conn) {
	if _, err := conn.ExecContext(context.Background(), `PRAGMA synchronous = FULL`); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	conn.Close()
}

func (t *txn) Commit() error {
	err := t.tx.Commit()
	t.release()
	return err
}

func (t *txn) Rollback() {
	_ = t.tx.Rollback()
	t.release()
}

func (t *txn) release() {
	if t.conn != nil {
		t.s.restore(t.conn)
		t.conn = nil
	}
}

// stmt is query prepared (SQLite's hot statements) for use in t, or nil;
// on PostgreSQL pgx caches prepared statements per connection by itself.
func (t *txn) stmt(ctx context.Context, query string) *sql.Stmt {
	if st := t.s.prepared(query); st != nil {
		return t.tx.StmtContext(ctx, st)
	}
	return nil
}

func (t *txn) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	query = t.s.q(query)
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t *txn) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	query = t.s.q(query)
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t *txn) QueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	query = t.s.q(query)
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

// prepared is SQLite's prepared statement for query if it is a hot one
// (nil otherwise, and on PostgreSQL). It never prepares: on SQLite's one
// connection, a transaction in progress holds it, and DB.Prepare would wait
// for it forever; prepareHot prepares them at Open.
func (s *Store) prepared(query string) *sql.Stmt {
	if s.kind != SQLite {
		return nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	return s.stmts[query]
}

// hotQueries run once or more per delivery.
var hotQueries = []string{qInsert, qLease, qHead, qAttempt, qFreeLease, qDone, qRetry, qPark, qDead, qExtend, qCandidates}

func (s *Store) prepareHot(ctx context.Context) error {
	if s.kind != SQLite {
		return nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	for _, q := range hotQueries {
		st, err := s.db.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("queue: preparing %q: %w", q, err)
		}
		s.stmts[q] = st
	}
	return nil
}

// query runs a read outside a transaction, prepared if it is a hot one.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	query = s.q(query)
	if st := s.prepared(query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.db.QueryContext(ctx, query, args...)
}

// lightExec runs one statement in a light transaction.
func (s *Store) lightExec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	t, err := s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	defer t.Rollback()
	res, err := t.Exec(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return res, t.Commit()
}

// q rewrites ? placeholders as PostgreSQL's $n.
func (s *Store) q(query string) string {
	if s.kind != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *Store) ms(t time.Time) int64 { return t.UnixMilli() }
func (s *Store) now() int64           { return s.Now().UnixMilli() }

// schemaVersion is the schema this code writes; migrate brings older ones
// up to it.
const schemaVersion = 1

func (s *Store) migrate(ctx context.Context) error {
	seq, blob := "INTEGER PRIMARY KEY AUTOINCREMENT", "BLOB"
	if s.kind == Postgres {
		seq, blob = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BYTEA"
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS bazinga_schema (version INTEGER NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS bazinga_deliveries (
			seq ` + seq + `,
			delivery_id TEXT NOT NULL UNIQUE,
			session_key TEXT NOT NULL,
			event TEXT NOT NULL,
			payload ` + blob + ` NOT NULL,
			received_ms BIGINT NOT NULL,
			state TEXT NOT NULL,
			attempts INTEGER NOT NULL DEFAULT 0,
			run_after_ms BIGINT NOT NULL,
			outcome TEXT NOT NULL DEFAULT '',
			last_error TEXT NOT NULL DEFAULT '',
			finished_ms BIGINT NOT NULL DEFAULT 0
		)`,
		`CREATE INDEX IF NOT EXISTS bazinga_deliveries_session ON bazinga_deliveries (session_key, state, seq)`,
		`CREATE INDEX IF NOT EXISTS bazinga_deliveries_state ON bazinga_deliveries (state, seq)`,
		`CREATE TABLE IF NOT EXISTS bazinga_leases (
			session_key TEXT PRIMARY KEY,
			owner TEXT NOT NULL,
			until_ms BIGINT NOT NULL
		)`,
		`CREATE TABLE IF NOT EXISTS bazinga_periodic (
			name TEXT PRIMARY KEY,
			next_ms BIGINT NOT NULL,
			owner TEXT NOT NULL DEFAULT ''
		)`,
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("queue schema: %w", err)
	}
	defer tx.Rollback()
	if s.kind == Postgres {
		// Replicas starting together would race on CREATE TABLE IF NOT
		// EXISTS (it is not atomic in PostgreSQL): one at a time.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7412010024)`); err != nil {
			return fmt.Errorf("queue schema lock: %w", err)
		}
	}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("queue schema: %w", err)
		}
	}
	var v int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM bazinga_schema`).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO bazinga_schema (version) VALUES (?)`), schemaVersion); err != nil {
			return fmt.Errorf("queue schema: %w", err)
		}
	case err != nil:
		return fmt.Errorf("queue schema: %w", err)
	case v > schemaVersion:
		return fmt.Errorf("the queue's schema is version %d, newer than this bazinga's (%d): upgrade bazinga", v, schemaVersion)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("queue schema: %w", err)
	}
	return nil
}

// Job is one delivery in the queue.
type Job struct {
	Seq int64
	// ID is the delivery id (X-GitHub-Delivery), unique in the queue.
	ID string
	// Key serialises: jobs with the same key run one at a time, in Seq
	// order. Enqueue gives a job without one a key of its own.
	Key      string
	Event    string
	Payload  []byte
	Received time.Time
	// Attempts counts the runs started, this one included.
	Attempts int
}

// ownKeyPrefix starts the key of a job that needs no ordering: its own
// (a session key is owner/name#N, never this).
const ownKeyPrefix = "~delivery/"

func ownKey(id string) string { return ownKeyPrefix + id }

// The queue's statements on the path of every delivery.
const (
	qInsertValues = `(?, ?, ?, ?, ?, ?, ?)`
	qInsert       = `INSERT INTO bazinga_deliveries
		(delivery_id, session_key, event, payload, received_ms, state, run_after_ms)
		VALUES ` + qInsertValues + ` ON CONFLICT (delivery_id) DO NOTHING RETURNING delivery_id`
	qCandidates = `SELECT d.session_key FROM bazinga_deliveries d
		WHERE d.state = ? AND d.run_after_ms <= ?
		  AND d.seq = (SELECT MIN(h.seq) FROM bazinga_deliveries h WHERE h.session_key = d.session_key AND h.state = ?)
		  AND NOT EXISTS (SELECT 1 FROM bazinga_leases l WHERE l.session_key = d.session_key AND l.until_ms > ?)
		ORDER BY d.seq LIMIT ?`
	qLease = `INSERT INTO bazinga_leases (session_key, owner, until_ms) VALUES (?, ?, ?)
		ON CONFLICT (session_key) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms
		WHERE bazinga_leases.until_ms <= ?`
	qHead = `SELECT seq, delivery_id, session_key, event, payload, received_ms, attempts, run_after_ms
		FROM bazinga_deliveries WHERE session_key = ? AND state = ? ORDER BY seq LIMIT 1`
	qAttempt   = `UPDATE bazinga_deliveries SET attempts = attempts + 1 WHERE seq = ?`
	qFreeLease = `DELETE FROM bazinga_leases WHERE session_key = ? AND owner = ?`
	qDone      = `UPDATE bazinga_deliveries SET state = ?, outcome = ?, last_error = ?, finished_ms = ? WHERE seq = ?`
	qRetry     = `UPDATE bazinga_deliveries SET run_after_ms = ?, last_error = ? WHERE seq = ?`
	qPark      = `UPDATE bazinga_deliveries SET run_after_ms = ?, last_error = ?, attempts = attempts - 1 WHERE seq = ?`
	qDead      = qDone
	qExtend    = `UPDATE bazinga_leases SET until_ms = ? WHERE session_key = ? AND owner = ?`
)

// NotifyChannel is the PostgreSQL channel notified after Enqueues commit:
// other replicas' Listen wakes their workers at once instead of at their
// next poll.
const NotifyChannel = "bazinga_jobs"

// enqueueReq is one Enqueue waiting for a committer.
type enqueueReq struct {
	j    Job
	at   time.Time // when Enqueue was called
	done chan enqueueRes
}

// CommitStats is one group commit of Enqueues, as ObserveCommits reports
// it: where an acknowledgement's time goes.
type CommitStats struct {
	// Jobs is the batch's size.
	Jobs int
	// Queued is each job's wait, in batch order, from its Enqueue to the
	// start of the batch's statement.
	Queued []time.Duration
	// Took is the statement with its commit: the round trip, the
	// database's work and its sync of the log.
	Took time.Duration
	// InFlight counts this Store's batches committing when this one
	// started, itself included.
	InFlight int
	Err      error
}

// ObserveCommits makes f be called after every group commit (from the
// committer, before the batch's Enqueues return: f must be quick). nil
// stops it.
func (s *Store) ObserveCommits(f func(CommitStats)) {
	if f == nil {
		s.observe.Store(nil)
		return
	}
	s.observe.Store(&f)
}

type enqueueRes struct {
	isNew bool
	err   error
}

// maxBatch bounds the jobs one group commit writes.
const maxBatch = 128

// ErrClosed is returned by an Enqueue on a closed Store.
var ErrClosed = errors.New("jobq: the queue is closed")

// Enqueue commits j and reports whether it is new: false if a job with its
// id is already queued, running, finished or dead (a duplicate delivery).
// When it returns nil the job is on the disk. Concurrent Enqueues share a
// commit (group commit): one transaction and one sync of the log for all
// the jobs that arrived while the previous commit was under way, and none
// returns before that commit.
func (s *Store) Enqueue(ctx context.Context, j Job) (bool, error) {
	if j.ID == "" {
		return false, errors.New("jobq: a job needs an id")
	}
	if j.Key == "" {
		j.Key = ownKey(j.ID)
	}
	r := &enqueueReq{j: j, at: time.Now(), done: make(chan enqueueRes, 1)}
	select {
	case <-s.closing:
		return false, ErrClosed
	default:
	}
	select {
	case s.enq <- r:
	case <-s.closing:
		return false, ErrClosed
	case <-ctx.Done():
		return false, fmt.Errorf("enqueue %s: %w", j.ID, ctx.Err())
	}
	select {
	case res := <-r.done:
		return res.isNew, res.err
	case <-s.closed:
		// The committers stopped: they answered this request, or never
		// took it from the channel.
		select {
		case res := <-r.done:
			return res.isNew, res.err
		default:
			return false, ErrClosed
		}
	case <-ctx.Done():
		// It may yet commit: a redelivery is then a duplicate, which is
		// all a caller that gave up can expect.
		return false, fmt.Errorf("enqueue %s: %w", j.ID, ctx.Err())
	}
}

// committer writes the Enqueues waiting, in one transaction per batch,
// until Close.
func (s *Store) committer() {
	defer s.committed.Done()
	batch := make([]*enqueueReq, 0, maxBatch)
	for {
		batch = batch[:0]
		select {
		case r := <-s.enq:
			batch = append(batch, r)
		case <-s.closing:
			s.drainClosed()
			return
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case r := <-s.enq:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		news, err := s.commit(batch)
		if err != nil && len(batch) > 1 {
			// One bad job must not fail the others: each alone.
			for _, r := range batch {
				n, err := s.commit([]*enqueueReq{r})
				isNew := n[0] && err == nil
				r.done <- enqueueRes{isNew: isNew, err: err}
				if isNew {
					s.wakeRunners()
					s.notifyOthers()
				}
			}
			continue
		}
		anyNew := false
		for i, r := range batch {
			isNew := news[i] && err == nil
			r.done <- enqueueRes{isNew: isNew, err: err}
			anyNew = anyNew || isNew
		}
		if anyNew {
			s.wakeRunners()
			s.notifyOthers()
		}
	}
}

// wakeRunners wakes an idle worker of each of this Store's runners.
func (s *Store) wakeRunners() {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	for _, r := range s.runners {
		r.Wake()
	}
}

func (s *Store) addRunner(r *Runner) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	s.runners = append(s.runners, r)
}

func (s *Store) removeRunner(r *Runner) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	for i, x := range s.runners {
		if x == r {
			s.runners = append(s.runners[:i:i], s.runners[i+1:]...)
			return
		}
	}
}

// notifyOthers asks the notifier (PostgreSQL) to wake the other replicas:
// requests made while one is pending or being sent share the next one.
func (s *Store) notifyOthers() {
	if s.kind != Postgres {
		return
	}
	select {
	case s.notifyReq <- struct{}{}:
	default:
	}
}

// notifier sends NotifyChannel's notifications for the committers, in
// transactions of their own on the light pool, until Close (where it sends
// the last one requested). Not in the batch's statement: PostgreSQL takes a
// lock for the whole database at the commit of a transaction that
// notified, and holds it through the commit's sync of the log (to keep the
// notification queue in commit order), so batches that notified committed
// one after another, each waiting for the previous one's sync, instead of
// sharing one; on the light pool (synchronous_commit off) that lock is held
// for no sync. Notifications are paced (notifyEvery). A notification is a
// hint that saves the others a poll: one lost (a crash between the commit
// and it, a failed send) costs them at most their poll interval, never a
// job.
func (s *Store) notifier() {
	defer close(s.notifyDone)
	failing := false
	send := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := s.light.ExecContext(ctx, pgNotify, s.id)
		switch {
		case err != nil && !failing:
			s.log.Load().Warn("queue: waking the other replicas failed; they find the new jobs at their next poll", "err", err)
		case err == nil && failing:
			s.log.Load().Info("queue: waking the other replicas works again")
		}
		failing = err != nil
	}
	// last sends the notification still requested when Close stops it.
	last := func() {
		select {
		case <-s.notifyReq:
			send()
		default:
		}
	}
	pace := time.NewTimer(notifyEvery)
	defer pace.Stop()
	for {
		select {
		case <-s.notifyReq:
			send()
			// Requests during the pause share the next notification: at
			// most one per notifyEvery, however fast jobs commit.
			pace.Reset(notifyEvery)
			select {
			case <-pace.C:
			case <-s.notifyStop:
				last()
				return
			}
		case <-s.notifyStop:
			last()
			return
		}
	}
}

const pgNotify = `SELECT pg_notify('` + NotifyChannel + `', $1)`

// notifyEvery paces the notifications: another replica learns of a job at
// most this much later than its own commit wakes this one's workers, and a
// burst of commits costs the database a notification per pause instead of
// one per commit.
const notifyEvery = 10 * time.Millisecond

// drainClosed fails the Enqueues that raced with Close.
func (s *Store) drainClosed() {
	for {
		select {
		case r := <-s.enq:
			r.done <- enqueueRes{err: ErrClosed}
		default:
			return
		}
	}
}

// commit is insert, measured for ObserveCommits.
func (s *Store) commit(batch []*enqueueReq) ([]bool, error) {
	start := time.Now()
	inFlight := s.inFlight.Add(1)
	news, err := s.insert(batch)
	s.inFlight.Add(-1)
	if f := s.observe.Load(); f != nil {
		st := CommitStats{Jobs: len(batch), Queued: make([]time.Duration, len(batch)), Took: time.Since(start), InFlight: int(inFlight), Err: err}
		for i, r := range batch {
			st.Queued[i] = start.Sub(r.at)
		}
		(*f)(st)
	}
	return news, err
}

// pgInsert is PostgreSQL's group commit: the batch as arrays ($1 ids, $2
// keys, $3 events, $4 payloads, $5 received times), inserted in their
// order.
const pgInsert = `INSERT INTO bazinga_deliveries
		(delivery_id, session_key, event, payload, received_ms, state, run_after_ms)
	SELECT b.id, b.k, b.e, b.p, b.r, '` + StatePending + `', b.r
	FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bigint[]) WITH ORDINALITY AS b(id, k, e, p, r, n)
	ORDER BY b.n
	ON CONFLICT (delivery_id) DO NOTHING RETURNING delivery_id`

// insertQuery is SQLite's qInsert for n jobs.
func insertQuery(n int) string {
	if n <= 1 {
		return qInsert
	}
	return strings.Replace(qInsert, qInsertValues, qInsertValues+strings.Repeat(", "+qInsertValues, n-1), 1)
}

// insert commits batch in one statement (one round trip to PostgreSQL, one
// sync of the log) and tells which jobs were new.
func (s *Store) insert(batch []*enqueueReq) ([]bool, error) {
	news := make([]bool, len(batch))
	// The batch is shared: no caller's context may cancel the others'.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var query string
	var args []any
	if s.kind == Postgres {
		// One statement text for every batch size: prepared once per
		// connection (warm.go), where a VALUES list per size meant a
		// parse and a plan on each connection for each new size, in the
		// middle of the burst that made it.
		ids, keys, events, payloads, received := make([]string, len(batch)), make([]string, len(batch)),
			make([]string, len(batch)), make([][]byte, len(batch)), make([]int64, len(batch))
		for i, r := range batch {
			ids[i], keys[i], events[i], payloads[i], received[i] = r.j.ID, r.j.Key, r.j.Event, r.j.Payload, s.ms(r.j.Received)
		}
		query, args = pgInsert, []any{ids, keys, events, payloads, received}
	} else {
		query = insertQuery(len(batch))
		args = make([]any, 0, 7*len(batch))
		for _, r := range batch {
			j := r.j
			args = append(args, j.ID, j.Key, j.Event, j.Payload, s.ms(j.Received), StatePending, s.ms(j.Received))
		}
	}
	// PostgreSQL commits the statement on its own and reports a failed
	// commit as the statement's error. SQLite would commit at the
	// statement's reset, where an error may not reach the caller: there an
	// explicit transaction makes the commit's result Commit's.
	var t *txn
	var rows *sql.Rows
	var err error
	if s.kind == SQLite {
		if t, err = s.begin(ctx, true); err != nil {
			return news, fmt.Errorf("enqueue: %w", err)
		}
		defer t.Rollback()
		rows, err = t.Query(ctx, query, args...)
	} else {
		rows, err = s.query(ctx, query, args...)
	}
	if err != nil {
		return news, fmt.Errorf("enqueue: %w", err)
	}
	defer rows.Close()
	inserted := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return news, fmt.Errorf("enqueue: %w", err)
		}
		inserted[id] = true
	}
	if err := rows.Err(); err != nil {
		return news, fmt.Errorf("enqueue: %w", err)
	}
	if err := rows.Close(); err != nil {
		return news, fmt.Errorf("enqueue: %w", err)
	}
	if t != nil {
		if err := t.Commit(); err != nil {
			return news, fmt.Errorf("enqueue: %w", err)
		}
	}
	for i, r := range batch {
		// Of two jobs with one id in a batch, the first is the new one.
		news[i] = inserted[r.j.ID]
		delete(inserted, r.j.ID)
	}
	return news, nil
}

// Claim is a job a worker holds the lease of its key for.
type Claim struct {
	Job
	token string
}

// ErrLeaseLost is returned when a lease ran out and another worker may hold
// the key: the holder must stop.
var ErrLeaseLost = errors.New("jobq: the session's lease ran out")

// claimBatch is how many candidate heads one Claim tries before giving up.
const claimBatch = 16

// Claim takes the lease (for lease) of the oldest due job whose key no one
// holds, and counts the attempt. It returns nil, nil when there is none.
// owner names the worker (in the lease row, for operators).
func (s *Store) Claim(ctx context.Context, owner string, lease time.Duration) (*Claim, error) {
	c, _, err := s.claim(ctx, owner, lease, nil)
	return c, err
}

// keyGate keeps a Runner's workers off the keys a sibling is claiming or
// running: a claim of such a key can only fail. enter reports whether the
// caller may try key (and then holds it until leave); held lists the keys
// held now (PostgreSQL's claim leaves them out in its statement). A job
// waiting behind a held key's running one is its holder's to take: the
// holder's finish reports those committed before it, and for those
// committed after, which the wake-up's claimer could not take, the claimer
// tells missed, and the holder's leave reports it (or, if the holder has
// let go already, missed does, and the claimer's side looks again). On
// SQLite a worker looks again after every job.
type keyGate interface {
	enter(key string) bool
	leave(key string) (recheck bool)
	held() []string
	missed(keys []string) (left bool)
}

// claim is Claim for a Runner's worker; more reports that another job
// looked claimable too (the worker wakes a sibling for it). On success the
// claim's key is held in g.
func (s *Store) claim(ctx context.Context, owner string, lease time.Duration, g keyGate) (*Claim, bool, error) {
	if s.kind == Postgres {
		return s.claimPG(ctx, owner, lease, g)
	}
	now := s.now()
	rows, err := s.query(ctx, qCandidates, StatePending, now, StatePending, now, claimBatch)
	if err != nil {
		return nil, false, fmt.Errorf("claim: %w", err)
	}
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return nil, false, fmt.Errorf("claim: %w", err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("claim: %w", err)
	}
	for i, k := range keys {
		if g != nil && !g.enter(k) {
			continue
		}
		c, err := s.claimKey(ctx, k, owner, lease)
		if c == nil && g != nil {
			g.leave(k)
		}
		if err != nil || c != nil {
			return c, i+1 < len(keys), err
		}
	}
	return nil, false, nil
}

// claimKey takes k's lease if it is free, then its head job if it is due,
// in one transaction (one commit, and nothing to undo when the head is gone
// or parked: the rollback drops the lease).
func (s *Store) claimKey(ctx context.Context, key, owner string, lease time.Duration) (*Claim, error) {
	now := s.now()
	token := owner + "/" + randomToken()
	tx, err := s.begin(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("claim %q: %w", key, err)
	}
	defer tx.Rollback()
	// One statement takes the lease from nobody or from an expired holder;
	// concurrent takers serialise on the key's row and only one sees it
	// free (PostgreSQL re-checks the WHERE on the row it locked).
	res, err := tx.Exec(ctx, qLease, key, token, now+lease.Milliseconds(), now)
	if err != nil {
		return nil, fmt.Errorf("claim %q: %w", key, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return nil, err
	}
	c := &Claim{token: token}
	var received, runAfter int64
	err = tx.QueryRow(ctx, qHead, key, StatePending).
		Scan(&c.Seq, &c.ID, &c.Key, &c.Event, &c.Payload, &received, &c.Attempts, &runAfter)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && runAfter > now) {
		// Another worker finished it, or the head is parked: not ours.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim %q: %w", key, err)
	}
	// The attempt counts when it starts, so a delivery that crashes the
	// process every time still reaches the dead letters.
	if _, err := tx.Exec(ctx, qAttempt, c.Seq); err != nil {
		return nil, fmt.Errorf("claim %q: %w", key, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("claim %q: %w", key, err)
	}
	c.Attempts++
	c.Received = time.UnixMilli(received)
	return c, nil
}

// Extend renews c's lease for lease from now; ErrLeaseLost if it ran out
// and was taken (or released) meanwhile.
func (s *Store) Extend(ctx context.Context, c *Claim, lease time.Duration) error {
	res, err := s.lightExec(ctx, qExtend, s.now()+lease.Milliseconds(), c.Key, c.token)
	if err != nil {
		return fmt.Errorf("extend lease %q: %w", c.Key, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return ErrLeaseLost
	}
	return nil
}

// Disposition is what a run of a job came to.
type Disposition int

const (
	// Done: finished; the row stays, state done, for deduplication.
	Done Disposition = iota
	// Retry: run again after RunAfter (a transient failure).
	Retry
	// Park: run again after RunAfter without counting the attempt (a rate
	// limit's reset); the key's later jobs wait behind it.
	Park
	// Dead: give up; an operator lists and retries dead jobs.
	Dead
)

// Result is a run's outcome.
type Result struct {
	Disposition Disposition
	// Outcome is recorded with a finished job (processed, ignored, …).
	Outcome string
	// Err is the failure, recorded for Retry, Park and Dead.
	Err string
	// RunAfter is when a retried or parked job may run again.
	RunAfter time.Time
}

// Finish records r for c and releases c's lease, in one transaction that
// first checks the lease is still c's (else ErrLeaseLost and nothing is
// written: the key's new holder owns the job now).
func (s *Store) Finish(ctx context.Context, c *Claim, r Result) error {
	_, err := s.finish(ctx, c, r)
	return err
}

// finish is Finish for a Runner's worker; next reports that the key has a
// later job pending, which may be due now (SQLite always says so: its
// worker looks again after every job).
func (s *Store) finish(ctx context.Context, c *Claim, r Result) (next bool, err error) {
	ctx = context.WithoutCancel(ctx) // a finished run is recorded even during shutdown
	if s.kind == Postgres {
		return s.finishPG(ctx, c, r)
	}
	return true, s.finishSQLite(ctx, c, r)
}

func (s *Store) finishSQLite(ctx context.Context, c *Claim, r Result) error {
	tx, err := s.begin(ctx, false)
	if err != nil {
		return fmt.Errorf("finish %s: %w", c.ID, err)
	}
	defer tx.Rollback()
	// Deleting the lease row proves it is ours.
	res, err := tx.Exec(ctx, qFreeLease, c.Key, c.token)
	if err != nil {
		return fmt.Errorf("finish %s: %w", c.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return ErrLeaseLost
	}
	errText := truncate(r.Err, 4000)
	switch r.Disposition {
	case Done:
		_, err = tx.Exec(ctx, qDone, StateDone, r.Outcome, errText, s.now(), c.Seq)
	case Retry:
		_, err = tx.Exec(ctx, qRetry, s.ms(r.RunAfter), errText, c.Seq)
	case Park:
		_, err = tx.Exec(ctx, qPark, s.ms(r.RunAfter), errText, c.Seq)
	case Dead:
		_, err = tx.Exec(ctx, qDead, StateDead, r.Outcome, errText, s.now(), c.Seq)
	default:
		return fmt.Errorf("finish %s: unknown disposition %d", c.ID, r.Disposition)
	}
	if err != nil {
		return fmt.Errorf("finish %s: %w", c.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("finish %s: %w", c.ID, err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// Stats is the queue at one moment.
type Stats struct {
	// Pending counts jobs not finished: due, parked or running.
	Pending int
	// Parked counts pending jobs waiting for a retry time or a reset.
	Parked int
	// Running counts keys leased now.
	Running int
	Dead    int
	// Oldest is when the oldest pending job was received (zero if none).
	Oldest time.Time
}

const qStats = `SELECT
		(SELECT COUNT(*) FROM bazinga_deliveries WHERE state = ?),
		(SELECT COUNT(*) FROM bazinga_deliveries WHERE state = ? AND run_after_ms > ?),
		(SELECT COUNT(*) FROM bazinga_leases WHERE until_ms > ?),
		(SELECT COUNT(*) FROM bazinga_deliveries WHERE state = ?),
		(SELECT MIN(received_ms) FROM bazinga_deliveries WHERE state = ?)`

// Stats reads the queue's figures.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	now := s.now()
	var oldest sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.q(qStats),
		StatePending, StatePending, now, now, StateDead, StatePending).Scan(&st.Pending, &st.Parked, &st.Running, &st.Dead, &oldest)
	if err != nil {
		return Stats{}, fmt.Errorf("queue stats: %w", err)
	}
	if oldest.Valid {
		st.Oldest = time.UnixMilli(oldest.Int64)
	}
	return st, nil
}

// Entry is a job as an operator lists it.
type Entry struct {
	ID       string
	Key      string
	Event    string
	State    string
	Attempts int
	Outcome  string
	Err      string
	Received time.Time
	Finished time.Time
}

// Dead lists dead jobs, oldest first, at most limit.
func (s *Store) Dead(ctx context.Context, limit int) ([]Entry, error) {
	return s.list(ctx, `state = ?`, []any{StateDead}, limit)
}

// Get returns the job with delivery id id (ok false if there is none).
func (s *Store) Get(ctx context.Context, id string) (Entry, bool, error) {
	es, err := s.list(ctx, `delivery_id = ?`, []any{id}, 1)
	if err != nil || len(es) == 0 {
		return Entry{}, false, err
	}
	return es[0], true, nil
}

// All lists every job, oldest first (tests and diagnostics).
func (s *Store) All(ctx context.Context) ([]Entry, error) {
	return s.list(ctx, `1 = 1`, nil, 1<<30)
}

func (s *Store) list(ctx context.Context, where string, args []any, limit int) ([]Entry, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT delivery_id, session_key, event, state, attempts, outcome, last_error, received_ms, finished_ms
		FROM bazinga_deliveries WHERE `+where+` ORDER BY seq LIMIT ?`), append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var rec, fin int64
		if err := rows.Scan(&e.ID, &e.Key, &e.Event, &e.State, &e.Attempts, &e.Outcome, &e.Err, &rec, &fin); err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		if e.Key == ownKey(e.ID) {
			e.Key = ""
		}
		e.Received = time.UnixMilli(rec)
		if fin != 0 {
			e.Finished = time.UnixMilli(fin)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// RetryDead makes the dead jobs with the given delivery ids pending again
// with fresh attempts (every dead job if ids is empty), and returns how many
// it revived. A revived job keeps its place: it runs before its key's later
// jobs.
func (s *Store) RetryDead(ctx context.Context, ids []string) (int64, error) {
	query := `UPDATE bazinga_deliveries SET state = ?, attempts = 0, run_after_ms = ?, finished_ms = 0 WHERE state = ?`
	args := []any{StatePending, s.now(), StateDead}
	if len(ids) > 0 {
		query += ` AND delivery_id IN (?` + strings.Repeat(`, ?`, len(ids)-1) + `)`
		for _, id := range ids {
			args = append(args, id)
		}
	}
	res, err := s.db.ExecContext(ctx, s.q(query), args...)
	if err != nil {
		return 0, fmt.Errorf("retry dead jobs: %w", err)
	}
	return res.RowsAffected()
}

// ClaimPeriodic reports whether the caller is the one replica to run the
// periodic task name now: it is when the task is due, and then the schedule
// moves every forward in the same statement, so of concurrent callers
// exactly one sees it due.
func (s *Store) ClaimPeriodic(ctx context.Context, name, owner string, every time.Duration) (bool, error) {
	now := s.now()
	if _, err := s.lightExec(ctx, `INSERT INTO bazinga_periodic (name, next_ms) VALUES (?, 0) ON CONFLICT (name) DO NOTHING`, name); err != nil {
		return false, fmt.Errorf("periodic %s: %w", name, err)
	}
	res, err := s.lightExec(ctx, `UPDATE bazinga_periodic SET next_ms = ?, owner = ? WHERE name = ? AND next_ms <= ?`,
		now+every.Milliseconds(), owner, name, now)
	if err != nil {
		return false, fmt.Errorf("periodic %s: %w", name, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Prune deletes jobs finished (done) before before, and returns how many:
// their delivery ids are forgotten, so a redelivery after that is new.
// Dead jobs stay until an operator retries them.
func (s *Store) Prune(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.lightExec(ctx, `DELETE FROM bazinga_deliveries WHERE state = ? AND finished_ms < ?`, StateDone, s.ms(before))
	if err != nil {
		return 0, fmt.Errorf("prune: %w", err)
	}
	return res.RowsAffected()
}

// PostgreSQL's claim and finish are one statement each, a round trip
// instead of four or five (BEGIN, statements, COMMIT): on a loaded machine
// the round trips, not the work, were most of a delivery's cost.

// pgClaimNext claims the oldest due head whose key no one holds, in one
// statement ($1 now, $2 the keys the caller's siblings hold, $3 the lease's
// token, $4 its end): it picks the head, takes the key's lease from nobody
// or from an expired holder, and counts an attempt. It locks the lease row
// before the job's, as a finish does: a claim that locked the head first
// (FOR UPDATE SKIP LOCKED, to spread concurrent claimers over the heads)
// deadlocked with the finish of the job it had picked, and PostgreSQL's
// way out left that job's lease to run out and the job to run twice. The
// head test is a correlated MIN, not NOT EXISTS: PostgreSQL turns the
// latter into an anti-join planned from the table's statistics, and a
// queue's table is young (no statistics) just when it is busiest; the
// MIN is looked up in the session index whatever they say (7 ms a claim
// against 0.2 in a fresh database). It returns one row: the candidate's
// key (null when there was none), whether the lease was taken, the job if
// it was claimed, whether a second candidate was seen, and which of the
// keys left out have a job waiting (behind the one running, or with the
// lease already freed: finished, not yet let go), whose holders look again
// once they let go (see keyGate). The statement sees one snapshot, so
// a lease or a finish committed since it began can make it miss: no lease
// (another claimer took the key first) or no job (the head was finished or
// parked meanwhile, and the lease must be given back); the caller retries.
const pgClaimNext = `WITH cand AS (
		SELECT d.seq, d.session_key FROM bazinga_deliveries d
		WHERE d.state = '` + StatePending + `' AND d.run_after_ms <= $1
		  AND d.session_key <> ALL(COALESCE($2::text[], '{}'))
		  AND d.seq = (SELECT MIN(h.seq) FROM bazinga_deliveries h
			WHERE h.session_key = d.session_key AND h.state = '` + StatePending + `')
		  AND NOT EXISTS (SELECT 1 FROM bazinga_leases l WHERE l.session_key = d.session_key AND l.until_ms > $1)
		ORDER BY d.seq LIMIT 2),
	head AS (SELECT seq, session_key FROM cand ORDER BY seq LIMIT 1),
	lease AS (
		INSERT INTO bazinga_leases (session_key, owner, until_ms) SELECT session_key, $3, $4 FROM head
		ON CONFLICT (session_key) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms
		WHERE bazinga_leases.until_ms <= $1
		RETURNING session_key),
	job AS (
		UPDATE bazinga_deliveries d SET attempts = d.attempts + 1
		FROM head, lease
		WHERE d.seq = head.seq AND d.state = '` + StatePending + `' AND d.run_after_ms <= $1
		RETURNING d.seq, d.delivery_id, d.session_key, d.event, d.payload, d.received_ms, d.attempts)
	SELECT head.session_key, lease.session_key IS NOT NULL, (SELECT COUNT(*) FROM cand) > 1,
		job.seq, job.delivery_id, job.event, job.payload, job.received_ms, job.attempts,
		(SELECT COALESCE(json_agg(w.session_key), '[]') FROM (SELECT w.session_key FROM bazinga_deliveries w
			WHERE w.session_key = ANY(COALESCE($2::text[], '{}')) AND w.state = '` + StatePending + `'
			GROUP BY w.session_key
			HAVING COUNT(*) > 1 OR NOT EXISTS (SELECT 1 FROM bazinga_leases l
				WHERE l.session_key = w.session_key AND l.until_ms > $1)) w)
	FROM (SELECT 1) one LEFT JOIN head ON true LEFT JOIN lease ON true LEFT JOIN job ON true`

// pgRelease gives back a lease ($1 key, $2 token).
const pgRelease = `DELETE FROM bazinga_leases WHERE session_key = $1 AND owner = $2`

// pgClaimTries bounds the statements one claim runs when it loses races
// (each loss is another claimer's success, so the queue moves).
const pgClaimTries = 4

func (s *Store) claimPG(ctx context.Context, owner string, lease time.Duration, g keyGate) (*Claim, bool, error) {
	more := false
	for range pgClaimTries {
		var skip []string
		if g != nil {
			skip = g.held()
		}
		now := s.now()
		token := owner + "/" + randomToken()
		var key sql.NullString
		var leased, second sql.NullBool
		var seq, received sql.NullInt64
		var attempts sql.NullInt32
		var id, event sql.NullString
		var payload []byte
		var waitingJSON []byte // a JSON list: database/sql cannot scan a text[]
		err := s.light.QueryRowContext(ctx, pgClaimNext, now, skip, token, now+lease.Milliseconds()).
			Scan(&key, &leased, &second, &seq, &id, &event, &payload, &received, &attempts, &waitingJSON)
		if err != nil {
			return nil, false, fmt.Errorf("claim: %w", err)
		}
		var waiting []string
		if err := json.Unmarshal(waitingJSON, &waiting); err != nil {
			return nil, false, fmt.Errorf("claim: the keys waiting: %w", err)
		}
		if g != nil && len(waiting) > 0 && g.missed(waiting) {
			more = true // a holder let go meanwhile: its key's next job is claimable
		}
		switch {
		case !key.Valid:
			return nil, more, nil // nothing due that no one holds
		case !leased.Bool:
			continue // another claimer took the key after this statement began
		case !seq.Valid:
			// The head was finished or parked meanwhile: give back the lease.
			if _, err := s.light.ExecContext(ctx, pgRelease, key.String, token); err != nil {
				return nil, false, fmt.Errorf("claim %q: releasing the lease: %w", key.String, err)
			}
			continue
		}
		if g != nil && !g.enter(key.String) {
			// The statement left out the keys held, and this process's
			// claims are one at a time: only a bug gets here. The job is
			// not run twice at once: its lease goes back.
			_, _ = s.light.ExecContext(ctx, pgRelease, key.String, token)
			return nil, false, fmt.Errorf("claim %q: the key is already held in this process", key.String)
		}
		c := &Claim{token: token, Job: Job{Seq: seq.Int64, ID: id.String, Key: key.String, Event: event.String, Payload: payload,
			Received: time.UnixMilli(received.Int64), Attempts: int(attempts.Int32)}}
		return c, more || second.Bool, nil
	}
	// Lost every race: others are claiming, and a sibling may look again.
	return nil, true, nil
}

// pgFinish frees the lease ($1 key, $2 token) and, only if it was still
// the caller's, records the result on the job ($3 seq): no row back means
// the lease was lost. It also tells whether the key has a later job
// pending (the worker then claims again at once).
func pgFinish(set string) string {
	return `WITH freed AS (DELETE FROM bazinga_leases WHERE session_key = $1 AND owner = $2 RETURNING 1)
	UPDATE bazinga_deliveries SET ` + set + ` WHERE seq = $3 AND EXISTS (SELECT 1 FROM freed)
	RETURNING EXISTS (SELECT 1 FROM bazinga_deliveries n WHERE n.session_key = $1 AND n.state = '` + StatePending + `' AND n.seq > $3)`
}

var (
	pgDone  = pgFinish(`state = $4, outcome = $5, last_error = $6, finished_ms = $7`)
	pgRetry = pgFinish(`run_after_ms = $4, last_error = $5`)
	pgPark  = pgFinish(`run_after_ms = $4, last_error = $5, attempts = attempts - 1`)
)

func (s *Store) finishPG(ctx context.Context, c *Claim, r Result) (bool, error) {
	errText := truncate(r.Err, 4000)
	var query string
	var args []any
	switch r.Disposition {
	case Done:
		query, args = pgDone, []any{StateDone, r.Outcome, errText, s.now()}
	case Dead:
		query, args = pgDone, []any{StateDead, r.Outcome, errText, s.now()}
	case Retry:
		query, args = pgRetry, []any{s.ms(r.RunAfter), errText}
	case Park:
		query, args = pgPark, []any{s.ms(r.RunAfter), errText}
	default:
		return false, fmt.Errorf("finish %s: unknown disposition %d", c.ID, r.Disposition)
	}
	var next bool
	err := s.light.QueryRowContext(ctx, query, append([]any{c.Key, c.token, c.Seq}, args...)...).Scan(&next)
	if errors.Is(err, sql.ErrNoRows) {
		return false, ErrLeaseLost
	}
	if err != nil {
		return false, fmt.Errorf("finish %s: %w", c.ID, err)
	}
	// A retried or parked job stays its key's head: what follows waits.
	return next && (r.Disposition == Done || r.Disposition == Dead), nil
}
