// Package jobqtest gives tests the databases of the durable queue: an SQLite
// file always, and a fresh PostgreSQL database when BAZINGA_TEST_DATABASE_URL
// names a server (.ci/run starts one; see docs/queue.md to start one by hand).
package jobqtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// EnvDatabaseURL names the PostgreSQL server the tests create databases on.
const EnvDatabaseURL = "BAZINGA_TEST_DATABASE_URL"

// Backend is one database kind a test runs on.
type Backend struct {
	Name string
	// URL returns a new, empty database's URL (dropped at the test's end).
	URL func(t testing.TB) string
}

// SQLiteURL is a new SQLite file in t's temporary directory.
func SQLiteURL(t testing.TB) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "queue.db")
}

// Backends are SQLite and, when it is available, PostgreSQL. Without
// BAZINGA_TEST_DATABASE_URL the PostgreSQL cases skip with how to run them,
// except on CI (CI set), where they fail: CI must run them.
func Backends() []Backend {
	return []Backend{{Name: "sqlite", URL: SQLiteURL}, {Name: "postgres", URL: PostgresURL}}
}

// PostgresURL creates a fresh database on the server BAZINGA_TEST_DATABASE_URL
// names and returns its URL; it is dropped when t ends.
func PostgresURL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvDatabaseURL)
	if admin == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set on CI: .ci/run starts PostgreSQL for the durable-queue tests (.ci/postgres.sh)", EnvDatabaseURL)
		}
		t.Skipf("PostgreSQL case skipped: set %s=postgres://user@host:port/db?sslmode=disable (a server the tests may create databases on; .ci/postgres.sh starts one)", EnvDatabaseURL)
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", EnvDatabaseURL, err)
	}
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("%s: %v", EnvDatabaseURL, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "bazinga_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		t.Fatalf("creating a test database on %s: %v", EnvDatabaseURL, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		db.Close()
	})
	u.Path = "/" + name
	return u.String()
}
