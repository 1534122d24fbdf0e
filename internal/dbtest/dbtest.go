// Package dbtest gives tests real databases: PostgreSQL and SQLite, each test
// its own, so tests run in parallel without seeing each other's rows.
//
// PostgreSQL comes from DESKKIT_TEST_DATABASE_URL; where that is unset and a
// Docker engine answers, from a dockertest container shared by the test
// binary; otherwise PostgreSQL tests skip, unless DESKKIT_REQUIRE_POSTGRES=1,
// which turns the skip into a failure (CI sets it). Every PostgreSQL test gets
// a fresh schema, dropped when the test ends, and its connections' search_path
// is that schema alone: whatever else the database holds (deskkit's own tables
// in public, say) no test sees.
//
// The test database may therefore hold anything, with one condition: the
// pg_trgm extension, which the trash's migration needs, lives in pg_catalog,
// which every search_path includes. dbtest creates it there if it is missing,
// and moves it there (ALTER EXTENSION pg_trgm SET SCHEMA pg_catalog) if it
// finds it in another schema; so point DESKKIT_TEST_DATABASE_URL at a
// database kept for tests, not at one an application uses.
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
// and nothing else, dropped when t ends.
func OpenPostgres(t testing.TB) *bun.DB {
	t.Helper()
	return openPostgresAt(t, RequirePostgres(t))
}

func openPostgresAt(t testing.TB, dsn string) *bun.DB {
	t.Helper()
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

// ensureExtensions makes sure pg_trgm is installed in pg_catalog, under an
// advisory lock: test binaries run in parallel, and concurrent CREATE
// EXTENSION calls race on the catalog even with IF NOT EXISTS. pg_catalog is
// searched whatever the search_path says, so the trash's migration finds
// gin_trgm_ops from a schema that sees only itself (its CREATE EXTENSION IF
// NOT EXISTS then does nothing). A database can hold an extension once: one
// found in another schema (public, where CREATE EXTENSION puts it by
// default) is moved; pg_trgm is relocatable, and indexes that use it keep
// working, as they name its operator classes by oid.
func ensureExtensions(ctx context.Context, db *bun.DB) error {
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7355608)"); err != nil {
			return err
		}
		var schema []string
		if err := tx.NewRaw(`SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'pg_trgm'`).Scan(ctx, &schema); err != nil {
			return err
		}
		var err error
		switch {
		case len(schema) == 0:
			_, err = tx.ExecContext(ctx, "CREATE EXTENSION pg_trgm SCHEMA pg_catalog")
		case schema[0] != "pg_catalog":
			_, err = tx.ExecContext(ctx, "ALTER EXTENSION pg_trgm SET SCHEMA pg_catalog")
		}
		return err
	})
}

// OpenSchema opens PostgreSQL at dsn with search_path set to schema alone
// (pg_catalog is always searched). The schema must exist and be named by the
// caller, not a client.
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
// schema alone, so that tables of the same names in public (a deskkit
// installation in the test database) are never found instead of a table
// the test dropped or has not created. (pgdriver's connection parameters
// would quote the value as one name; SET takes it as written.)
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
	if _, err := cn.(driver.ExecerContext).ExecContext(ctx, `SET search_path TO "`+c.schema+`"`, nil); err != nil {
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
