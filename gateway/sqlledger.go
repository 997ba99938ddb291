package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// SQLDB is the database bazinga serve's queue runs on (jobq.Store): the gateway's ledger and revocations are
// tables beside the queue's, on the same handle, so every replica sees the same spend.
type SQLDB interface {
	DB() *sql.DB
	// Postgres reports PostgreSQL (else SQLite).
	Postgres() bool
	// Rebind rewrites ? placeholders for the database.
	Rebind(query string) string
}

// sqlCap bounds every sum the SQL ledger keeps (2^62): an addition saturates there instead of overflowing, which
// PostgreSQL would refuse and SQLite would turn into a float. Limits are far below it (millions of dollars).
const sqlCap int64 = 1 << 62

// migrateSQL creates the gateway's tables. They are the gateway's own, beside the queue's, and only ever added to.
func migrateSQL(ctx context.Context, d SQLDB) error {
	stmts := []string{
		// One row per step: the sums of what was metered for it. A session's spend is the sum of its rows
		// (the primary key's prefix).
		`CREATE TABLE IF NOT EXISTS bazinga_gateway_spend (
			repo TEXT NOT NULL,
			session TEXT NOT NULL,
			step TEXT NOT NULL,
			installation BIGINT NOT NULL,
			requests BIGINT NOT NULL,
			refused BIGINT NOT NULL,
			input BIGINT NOT NULL,
			output BIGINT NOT NULL,
			cache_read BIGINT NOT NULL,
			cache_write BIGINT NOT NULL,
			cost_picos BIGINT NOT NULL,
			charged_picos BIGINT NOT NULL,
			estimated BIGINT NOT NULL,
			unpriced BIGINT NOT NULL,
			updated_ms BIGINT NOT NULL,
			PRIMARY KEY (repo, session, step, installation)
		)`,
		// The tokens of models the price table did not know, per step and model (read only when a step has some).
		`CREATE TABLE IF NOT EXISTS bazinga_gateway_unpriced (
			repo TEXT NOT NULL,
			session TEXT NOT NULL,
			step TEXT NOT NULL,
			installation BIGINT NOT NULL,
			model TEXT NOT NULL,
			input BIGINT NOT NULL,
			output BIGINT NOT NULL,
			cache_read BIGINT NOT NULL,
			cache_write BIGINT NOT NULL,
			PRIMARY KEY (repo, session, step, installation, model)
		)`,
		// Steps that ended: their tokens are refused.
		`CREATE TABLE IF NOT EXISTS bazinga_gateway_revoked (
			repo TEXT NOT NULL,
			session TEXT NOT NULL,
			step TEXT NOT NULL,
			revoked_ms BIGINT NOT NULL,
			PRIMARY KEY (repo, session, step)
		)`,
	}
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("gateway tables: %w", err)
	}
	defer tx.Rollback()
	if d.Postgres() {
		// CREATE TABLE IF NOT EXISTS races between replicas starting together in PostgreSQL: one at a time.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7412010020)`); err != nil {
			return fmt.Errorf("gateway tables lock: %w", err)
		}
	}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("gateway tables: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("gateway tables: %w", err)
	}
	return nil
}

// SQLLedger is a Ledger in the queue's database: every replica records into the same rows and reads the same
// sums, so a session's limit holds across replicas and restarts. Each Record is one atomic upsert per table
// (INSERT … ON CONFLICT DO UPDATE adding to the sums, which SQLite and PostgreSQL both run atomically), so
// concurrent requests of one step on several replicas lose nothing.
type SQLLedger struct {
	d           SQLDB
	upsert      string
	upsertModel string
	step        string
	session     string
	models      string
	sessModels  string
	// OnRecord, when set, is called with every entry recorded.
	OnRecord func(Entry)
}

var spendSums = []string{"requests", "refused", "input", "output", "cache_read", "cache_write", "cost_picos", "charged_picos", "estimated", "unpriced"}

// NewSQLLedger creates the gateway's tables if needed and returns the ledger.
func NewSQLLedger(ctx context.Context, d SQLDB) (*SQLLedger, error) {
	if err := migrateSQL(ctx, d); err != nil {
		return nil, err
	}
	add := func(table string, cols []string) string {
		set := make([]string, len(cols))
		for i, c := range cols {
			// Saturating: values are clamped to [0, sqlCap] before they are written.
			set[i] = fmt.Sprintf("%[1]s = CASE WHEN %[2]s.%[1]s > %[3]d - excluded.%[1]s THEN %[3]d ELSE %[2]s.%[1]s + excluded.%[1]s END", c, table, sqlCap)
		}
		return strings.Join(set, ", ")
	}
	sum := func(cols []string) string {
		s := make([]string, len(cols))
		for i, c := range cols {
			s[i] = "CAST(COALESCE(SUM(" + c + "), 0) AS BIGINT)"
		}
		return strings.Join(s, ", ")
	}
	tokCols := []string{"input", "output", "cache_read", "cache_write"}
	return &SQLLedger{d: d,
		upsert: d.Rebind(`INSERT INTO bazinga_gateway_spend (repo, session, step, installation, ` + strings.Join(spendSums, ", ") + `, updated_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (repo, session, step, installation) DO UPDATE SET ` + add("bazinga_gateway_spend", spendSums) + `, updated_ms = excluded.updated_ms`),
		upsertModel: d.Rebind(`INSERT INTO bazinga_gateway_unpriced (repo, session, step, installation, model, input, output, cache_read, cache_write)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (repo, session, step, installation, model) DO UPDATE SET ` + add("bazinga_gateway_unpriced", tokCols)),
		step: d.Rebind(`SELECT ` + strings.Join(spendSums, ", ") + ` FROM bazinga_gateway_spend
			WHERE repo = ? AND session = ? AND step = ? AND installation = ?`),
		session: d.Rebind(`SELECT ` + sum(spendSums) + ` FROM bazinga_gateway_spend WHERE repo = ? AND session = ?`),
		models: d.Rebind(`SELECT model, ` + strings.Join(tokCols, ", ") + ` FROM bazinga_gateway_unpriced
			WHERE repo = ? AND session = ? AND step = ? AND installation = ? ORDER BY model`),
		sessModels: d.Rebind(`SELECT model, ` + sum(tokCols) + ` FROM bazinga_gateway_unpriced
			WHERE repo = ? AND session = ? GROUP BY model ORDER BY model`),
	}, nil
}

func clampSQL(v int64) int64 { return min(max(v, 0), sqlCap) }

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Record implements Ledger. Negative counts (which no provider sends) count as zero: nothing an answer says can
// lower a sum.
func (l *SQLLedger) Record(ctx context.Context, e Entry) error {
	s := e.Scope
	var sp Spend
	sp.add(e)
	unpriced := len(sp.Unpriced) > 0
	vals := []any{s.Repository, s.Session, s.Step, s.Installation,
		int64(sp.Requests), int64(sp.Refused), clampSQL(sp.Tokens.Input), clampSQL(sp.Tokens.Output),
		clampSQL(sp.Tokens.CacheRead), clampSQL(sp.Tokens.CacheWrite), clampSQL(sp.CostPicos), clampSQL(sp.ChargedPicos),
		b2i(sp.Estimated), b2i(unpriced), e.Time.UnixMilli()}
	if !unpriced {
		if _, err := l.d.DB().ExecContext(ctx, l.upsert, vals...); err != nil {
			return fmt.Errorf("gateway ledger: recording step %s: %w", s.Step, err)
		}
	} else {
		tx, err := l.d.DB().BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("gateway ledger: %w", err)
		}
		defer tx.Rollback()
		u := sp.Unpriced[0]
		if _, err := tx.ExecContext(ctx, l.upsert, vals...); err != nil {
			return fmt.Errorf("gateway ledger: recording step %s: %w", s.Step, err)
		}
		if _, err := tx.ExecContext(ctx, l.upsertModel, s.Repository, s.Session, s.Step, s.Installation, u.Model,
			clampSQL(u.Tokens.Input), clampSQL(u.Tokens.Output), clampSQL(u.Tokens.CacheRead), clampSQL(u.Tokens.CacheWrite)); err != nil {
			return fmt.Errorf("gateway ledger: recording step %s's unpriced model: %w", s.Step, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("gateway ledger: recording step %s: %w", s.Step, err)
		}
	}
	if l.OnRecord != nil {
		l.OnRecord(e)
	}
	return nil
}

func scanSpend(row *sql.Row) (Spend, bool, error) {
	var sp Spend
	var req, ref, est, unp int64
	err := row.Scan(&req, &ref, &sp.Tokens.Input, &sp.Tokens.Output, &sp.Tokens.CacheRead, &sp.Tokens.CacheWrite,
		&sp.CostPicos, &sp.ChargedPicos, &est, &unp)
	if errors.Is(err, sql.ErrNoRows) {
		return Spend{}, false, nil
	}
	if err != nil {
		return Spend{}, false, err
	}
	sp.Requests, sp.Refused, sp.Estimated = int(req), int(ref), est > 0
	return sp, unp > 0, nil
}

func (l *SQLLedger) unpriced(ctx context.Context, query string, args ...any) ([]UnpricedModel, error) {
	rows, err := l.d.DB().QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []UnpricedModel
	for rows.Next() {
		var u UnpricedModel
		if err := rows.Scan(&u.Model, &u.Tokens.Input, &u.Tokens.Output, &u.Tokens.CacheRead, &u.Tokens.CacheWrite); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// StepSpend implements Ledger.
func (l *SQLLedger) StepSpend(ctx context.Context, s Scope) (Spend, error) {
	sp, unp, err := scanSpend(l.d.DB().QueryRowContext(ctx, l.step, s.Repository, s.Session, s.Step, s.Installation))
	if err == nil && unp {
		sp.Unpriced, err = l.unpriced(ctx, l.models, s.Repository, s.Session, s.Step, s.Installation)
	}
	if err != nil {
		return Spend{}, fmt.Errorf("gateway ledger: reading step %s: %w", s.Step, err)
	}
	return sp, nil
}

// SessionSpend implements Ledger.
func (l *SQLLedger) SessionSpend(ctx context.Context, k SessionKey) (Spend, error) {
	sp, unp, err := scanSpend(l.d.DB().QueryRowContext(ctx, l.session, k.Repository, k.Session))
	if err == nil && unp {
		sp.Unpriced, err = l.unpriced(ctx, l.sessModels, k.Repository, k.Session)
	}
	if err != nil {
		return Spend{}, fmt.Errorf("gateway ledger: reading session %s: %w", k.Session, err)
	}
	return sp, nil
}

// Revocations says whether a token's step has ended (its tokens are then refused).
type Revocations interface {
	Revoked(ctx context.Context, s Scope) (bool, error)
}

// DefaultRevocationCache is how long SQLRevocations trusts a "not ended" answer: a step's end reaches the other
// replicas' gateways within it (the replica that wrote it knows at once).
const DefaultRevocationCache = 2 * time.Second

// revocationPruneAfter: a revocation outlives every token of its step (MaxTokenTTL, plus the verifier's leeway).
const revocationPruneAfter = MaxTokenTTL + time.Minute

// SQLRevocations records ended steps in the queue's database and answers the gateway's check on each request
// from a small cache: an ended step is remembered for good (it never runs again: a retry is a new step), a live one
// for Cache.
type SQLRevocations struct {
	d      SQLDB
	insert string
	query  string
	prune  string
	now    func() time.Time
	cache  *lru.Cache[string, revCheck]
	// Cache is how long a live answer is trusted (default DefaultRevocationCache).
	Cache time.Duration

	lastPrune atomic.Int64 // unix ms
}

type revCheck struct {
	revoked bool
	at      time.Time
}

// NewSQLRevocations creates the gateway's tables if needed. now may be nil (time.Now).
func NewSQLRevocations(ctx context.Context, d SQLDB, now func() time.Time) (*SQLRevocations, error) {
	if err := migrateSQL(ctx, d); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	c, err := lru.New[string, revCheck](16384)
	if err != nil {
		return nil, err
	}
	return &SQLRevocations{d: d, now: now, cache: c, Cache: DefaultRevocationCache,
		insert: d.Rebind(`INSERT INTO bazinga_gateway_revoked (repo, session, step, revoked_ms) VALUES (?, ?, ?, ?)
			ON CONFLICT (repo, session, step) DO NOTHING`),
		query: d.Rebind(`SELECT revoked_ms FROM bazinga_gateway_revoked WHERE repo = ? AND session = ? AND step = ?`),
		prune: d.Rebind(`DELETE FROM bazinga_gateway_revoked WHERE revoked_ms < ?`),
	}, nil
}

func revKey(repo, session, step string) string { return repo + "\x00" + session + "\x00" + step }

// A repository's name is case-insensitive on GitHub: a token and the orchestrator may spell it differently, and a
// revocation must not miss for it.
func repoKey(repo string) string { return strings.ToLower(repo) }

// Revoke records that a step ended: every token bound to it is refused from now on, by every replica (by the
// others once their cached answer is older than Cache). Idempotent.
func (r *SQLRevocations) Revoke(ctx context.Context, repo, session, step string) error {
	now, repo := r.now(), repoKey(repo)
	if _, err := r.d.DB().ExecContext(ctx, r.insert, repo, session, step, now.UnixMilli()); err != nil {
		return fmt.Errorf("gateway: revoking the tokens of step %s: %w", step, err)
	}
	r.cache.Add(revKey(repo, session, step), revCheck{revoked: true, at: now})
	if last := r.lastPrune.Load(); now.UnixMilli()-last > time.Hour.Milliseconds() && r.lastPrune.CompareAndSwap(last, now.UnixMilli()) {
		// Rows older than any token of their step are of no use: drop them now and then (any replica may).
		if _, err := r.d.DB().ExecContext(ctx, r.prune, now.Add(-revocationPruneAfter).UnixMilli()); err != nil {
			return fmt.Errorf("gateway: pruning old revocations: %w", err)
		}
	}
	return nil
}

// Revoked implements Revocations.
func (r *SQLRevocations) Revoked(ctx context.Context, s Scope) (bool, error) {
	repo := repoKey(s.Repository)
	k := revKey(repo, s.Session, s.Step)
	now := r.now()
	if c, ok := r.cache.Get(k); ok && (c.revoked || now.Sub(c.at) < r.Cache) {
		return c.revoked, nil
	}
	var ms int64
	err := r.d.DB().QueryRowContext(ctx, r.query, repo, s.Session, s.Step).Scan(&ms)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		r.cache.Add(k, revCheck{at: now})
		return false, nil
	case err != nil:
		return false, fmt.Errorf("gateway: checking whether step %s ended: %w", s.Step, err)
	}
	r.cache.Add(k, revCheck{revoked: true, at: now})
	return true, nil
}
