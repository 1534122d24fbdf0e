// Package dbtest gives tests real databases: PostgreSQL and SQLite, each test
// its own, so tests run in parallel without seeing each other's rows.
//
// PostgreSQL comes from DESKKIT_TEST_DATABASE_URL; where that is unset and a
// Docker engine answers, from a dockertest container shared by the test
// binary; otherwise PostgreSQL tests skip, unless DESKKIT_REQUIRE_POSTGRES=1,
// which turns the skip into a failure (CI sets it). Every PostgreSQL test gets
// a fresh schema, dropped when the test ends.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/deskkit/deskkit/internal/database"
)

// Env names.
const (
	EnvDatabaseURL     = "DESKKIT_TEST_DATABASE_URL"
	EnvRequirePostgres = "DESKKIT_REQUIRE_POSTGRES"
)

// Backend names a database kind; tests use it as the subtest name.
type Backend string

// The backends EachDB runs.
const (
	SQLite   Backend = "sqlite"
	Postgres Backend = "postgres"
)

// EachDB runs fn as one subtest per backend, each with a fresh database.
func EachDB(t *testing.T, fn func(t *testing.T, db *bun.DB)) {
	t.Helper()
	for _, b := range []Backend{SQLite, Postgres} {
		t.Run(string(b), func(t *testing.T) {
			fn(t, Open(t, b))
		})
	}
}

// Open returns a fresh database of kind b, closed when t ends.
func Open(t testing.TB, b Backend) *bun.DB {
	t.Helper()
	if b == Postgres {
		return OpenPostgres(t)
	}
	return OpenSQLite(t)
}

// OpenSQLite returns a fresh SQLite database in a file under t.TempDir.
func OpenSQLite(t testing.TB) *bun.DB {
	t.Helper()
	db, err := database.OpenSQLite(filepath.Join(t.TempDir(), "test.db"), testPool)
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// OpenPostgres returns a connection pool whose search_path is a new schema
// (then public, where extensions such as pg_trgm live), dropped when t ends.
func OpenPostgres(t testing.TB) *bun.DB {
	t.Helper()
	dsn := RequirePostgres(t)
	ctx := context.Background()
	admin := database.OpenPostgres(dsn, adminPool)
	defer admin.Close()
	if err := ensureExtensions(ctx, admin); err != nil {
		t.Fatalf("create extensions: %v", err)
	}
	schema := "deskkit_test_" + randomHex(6)
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA ?", bun.Ident(schema)); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	db := OpenSchema(dsn, schema)
	t.Cleanup(func() {
		db.Close()
		cleanup := database.OpenPostgres(dsn, adminPool)
		defer cleanup.Close()
		if _, err := cleanup.ExecContext(context.Background(), "DROP SCHEMA ? CASCADE", bun.Ident(schema)); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return db
}

// RequirePostgres returns the DSN of the test PostgreSQL server, or skips t
// (fails it, when DESKKIT_REQUIRE_POSTGRES=1) if there is none. For tests
// that open pools of their own; OpenPostgres is the usual way in.
func RequirePostgres(t testing.TB) string {
	t.Helper()
	dsn, err := PostgresURL()
	if err != nil {
		if os.Getenv(EnvRequirePostgres) == "1" {
			t.Fatalf("PostgreSQL required (%s=1) but not available: %v", EnvRequirePostgres, err)
		}
		t.Skipf("PostgreSQL not available, skipping: %v", err)
	}
	return dsn
}

// ensureExtensions creates pg_trgm in public once, under an advisory lock:
// test binaries run in parallel, and concurrent CREATE EXTENSION calls race
// on the catalog even with IF NOT EXISTS. Migrations then find it there.
func ensureExtensions(ctx context.Context, db *bun.DB) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7355608)"); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
		return err
	})
}

// OpenSchema opens PostgreSQL at dsn with search_path set to schema, then
// public. The schema must exist and be named by the caller, not a client.
func OpenSchema(dsn, schema string, opts ...pgdriver.Option) *bun.DB {
	opts = append(append([]pgdriver.Option{pgdriver.WithDSN(dsn)}, database.PostgresOptions(testPool)...), opts...)
	conn := searchPathConnector{pgdriver.NewConnector(opts...), schema}
	sqldb := sql.OpenDB(conn)
	database.Bound(sqldb, testPool)
	return bun.NewDB(sqldb, pgdialect.New())
}

// Pools of the test databases. The PostgreSQL server is shared by every test
// binary on the machine (and allows 100 connections), so each test's pool is
// small, and the short-lived admin pools smaller still.
var (
	testPool  = database.Options{MaxOpenConns: 8}
	adminPool = database.Options{MaxOpenConns: 2}
)

// searchPathConnector opens connections whose search_path is the test's
// schema, then public. (pgdriver's connection parameters would send
// "schema,public" as one quoted name.)
type searchPathConnector struct {
	*pgdriver.Connector
	schema string
}

func (c searchPathConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	// The schema name is ours (deskkit_test_ and hex), so quoting it is enough.
	if _, err := cn.(driver.ExecerContext).ExecContext(ctx, `SET search_path TO "`+c.schema+`", public`, nil); err != nil {
		cn.Close()
		return nil, err
	}
	return cn, nil
}

var (
	dockerOnce sync.Once
	dockerURL  string
	dockerErr  error
)

// PostgresURL is the DSN of the test PostgreSQL server: the environment's, or
// a dockertest container's. The container lives as long as the test binary
// (dockertest's expiry reaps it if the binary dies).
func PostgresURL() (string, error) {
	if dsn := os.Getenv(EnvDatabaseURL); dsn != "" {
		return dsn, nil
	}
	dockerOnce.Do(func() { dockerURL, dockerErr = startDocker() })
	return dockerURL, dockerErr
}

func startDocker() (string, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return "", fmt.Errorf("%s is unset and no Docker client: %w", EnvDatabaseURL, err)
	}
	if err := pool.Client.Ping(); err != nil {
		return "", fmt.Errorf("%s is unset and no Docker engine answers: %w", EnvDatabaseURL, err)
	}
	res, err := pool.Run("postgres", "16", []string{"POSTGRES_HOST_AUTH_METHOD=trust", "POSTGRES_DB=test"})
	if err != nil {
		return "", fmt.Errorf("start postgres container: %w", err)
	}
	_ = res.Expire(600)
	dsn := fmt.Sprintf("postgres://postgres@%s/test?sslmode=disable", res.GetHostPort("5432/tcp"))
	pool.MaxWait = 60 * time.Second
	err = pool.Retry(func() error {
		db := database.OpenPostgres(dsn, adminPool)
		defer db.Close()
		return db.Ping()
	})
	if err != nil {
		return "", fmt.Errorf("postgres container did not answer: %w", err)
	}
	return dsn, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}
