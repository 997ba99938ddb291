package server

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"time"
)

// SpentTokens records exchanged job tokens, so each is good for one exchange. Spend reports false when key was
// already recorded and has not expired; an error means nothing could be recorded (the exchange then fails closed).
type SpentTokens interface {
	Spend(ctx context.Context, key string, exp time.Time) (bool, error)
}

// SpentDB is the queue's database (jobq.Store): the spent tokens are a table beside the queue's.
type SpentDB interface {
	DB() *sql.DB
	// Postgres reports PostgreSQL (else SQLite).
	Postgres() bool
	// Rebind rewrites ? placeholders for the database.
	Rebind(query string) string
}

// spentPurgeEvery spaces the deletions of expired records (any replica may run one).
const spentPurgeEvery = time.Minute

// SQLSpentTokens keeps spent job tokens in the queue's database, so that a token exchanged at one replica is refused
// at every other, and after restarts. A record is a SHA-256 of the token's issuer and jti (no jti in clear) with
// the time it expires. Spend is one INSERT … ON CONFLICT statement: PostgreSQL and SQLite both run it atomically on
// the primary key, so of replicas racing with the same token exactly one inserts the row and the others see it.
// An expired record is taken over by the same statement (its token is refused by the verifier anyway), and expired
// records are deleted at most once a spentPurgeEvery per process.
type SQLSpentTokens struct {
	d      SpentDB
	insert string
	purge  string
	now    func() time.Time

	lastPurge atomic.Int64 // unix ms
}

// NewSQLSpentTokens creates the table if needed. now may be nil (time.Now).
func NewSQLSpentTokens(ctx context.Context, d SpentDB, now func() time.Time) (*SQLSpentTokens, error) {
	if now == nil {
		now = time.Now
	}
	if err := migrateSpent(ctx, d); err != nil {
		return nil, err
	}
	return &SQLSpentTokens{d: d, now: now,
		// A conflicting row is updated (and counted) only when it has expired: then the token is fresh again.
		insert: d.Rebind(`INSERT INTO bazinga_spent_tokens (token_hash, expires_ms) VALUES (?, ?)
			ON CONFLICT (token_hash) DO UPDATE SET expires_ms = excluded.expires_ms
			WHERE bazinga_spent_tokens.expires_ms <= ?`),
		purge: d.Rebind(`DELETE FROM bazinga_spent_tokens WHERE expires_ms <= ?`),
	}, nil
}

// migrateSpent adds the table; it is this package's own and only ever added (the queue's migrations are jobq's).
func migrateSpent(ctx context.Context, d SpentDB) error {
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("spent tokens table: %w", err)
	}
	defer tx.Rollback()
	if d.Postgres() {
		// CREATE TABLE IF NOT EXISTS races between replicas starting together in PostgreSQL: one at a time.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7412010021)`); err != nil {
			return fmt.Errorf("spent tokens table lock: %w", err)
		}
	}
	for _, st := range []string{
		`CREATE TABLE IF NOT EXISTS bazinga_spent_tokens (
			token_hash TEXT PRIMARY KEY,
			expires_ms BIGINT NOT NULL
		)`,
		`CREATE INDEX IF NOT EXISTS bazinga_spent_tokens_expires ON bazinga_spent_tokens (expires_ms)`,
	} {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("spent tokens table: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("spent tokens table: %w", err)
	}
	return nil
}

// Spend implements SpentTokens.
func (s *SQLSpentTokens) Spend(ctx context.Context, key string, exp time.Time) (bool, error) {
	now := s.now().UnixMilli()
	res, err := s.d.DB().ExecContext(ctx, s.insert, spentKey(key), exp.UnixMilli(), now)
	if err != nil {
		return false, fmt.Errorf("spent tokens: recording a token: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("spent tokens: recording a token: %w", err)
	}
	if last := s.lastPurge.Load(); now-last >= spentPurgeEvery.Milliseconds() && s.lastPurge.CompareAndSwap(last, now) {
		// Not fatal: the token is recorded; old rows wait for the next purge.
		_, _ = s.d.DB().ExecContext(ctx, s.purge, now)
	}
	return n == 1, nil
}
