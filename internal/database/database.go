// Package database opens the databases deskkit supports from one URL, the
// form the reference server and the tests take: "postgres://..." (or
// "postgresql://...") for PostgreSQL, "sqlite:PATH" for an SQLite file.
package database

import (
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// Open opens the database named by rawURL. It does not connect; call
// PingContext to find out whether the database answers.
func Open(rawURL string, opts ...pgdriver.Option) (*bun.DB, error) {
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return OpenPostgres(rawURL, opts...), nil
	case strings.HasPrefix(rawURL, "sqlite:"):
		return OpenSQLite(strings.TrimPrefix(rawURL, "sqlite:"))
	default:
		return nil, fmt.Errorf("database URL must start with postgres://, postgresql:// or sqlite:, got %q", redact(rawURL))
	}
}

// OpenPostgres opens PostgreSQL through bun's pgdriver.
func OpenPostgres(dsn string, opts ...pgdriver.Option) *bun.DB {
	opts = append([]pgdriver.Option{pgdriver.WithDSN(dsn)}, opts...)
	return bun.NewDB(sql.OpenDB(pgdriver.NewConnector(opts...)), pgdialect.New())
}

// OpenSQLite opens (creating if needed) the SQLite file at path with the
// settings deskkit relies on: write-ahead log so readers do not block the
// writer, IMMEDIATE transactions so two writers queue instead of failing
// half-way, a busy timeout to queue on, and foreign keys on.
func OpenSQLite(path string) (*bun.DB, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite: URL needs a file path, e.g. sqlite:deskkit.db")
	}
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Set("_busy_timeout", "10000")
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	sqldb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

// redact hides a password in a URL that is echoed back in an error.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}
