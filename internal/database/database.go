// Package database opens the databases deskkit supports from one URL, the
// form the reference server and the tests take: "postgres://..." (or
// "postgresql://...") for PostgreSQL, "sqlite:PATH" for an SQLite file. It
// bounds the pool and every statement, retries transactions that lose a
// deadlock, and tells errors that mean "the database cannot answer now"
// from the rest.
//
// The pool's rule (see the deskkit package doc, # Transactions): no code
// path holds a connection (a transaction) while it asks the pool for
// another. The services run every transaction through deskkit.RunInTx,
// which hands fn the transaction to run its statements through; fn reads
// through that, and what it needs from elsewhere is read before the
// transaction begins. With the pool bounded, a wait for a second
// connection inside one may never end.
//
// # Several hosts, failover
//
// A PostgreSQL URL may list several hosts, as libpq's do:
// postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write, or the
// keyword form "host=h1,h2 port=5432,5433 dbname=db user=u
// target_session_attrs=read-write". pgdriver takes one host and would
// send target_session_attrs as a SET (which PostgreSQL refuses, 42704):
// Open parses the list itself and gives pgdriver a dialer (hostDialer)
// that tries the hosts in order, from the one that served last; with
// read-write, a probe session asks each pg_is_in_recovery() and a standby
// is passed over (ErrNoPrimary when every host is one). "any" takes the
// first host that answers; any other value is refused. Each new
// connection of the pool (and of outbox.Listen's listener, which takes
// the pool's pgdriver connector) so reaches the primary of the moment,
// after a failover too. It composes with Options.TransactionPooling (the
// hosts are then the poolers').
//
// Every PostgreSQL connection is guarded (guardConn): one that answers a
// write with 25006 (read-only: a demoted primary) is dropped, which
// pgdriver does not do, and the error is a ReadOnlyError, an outage.
package database

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

// Defaults of Options.
const (
	// DefaultStatementTimeout bounds every PostgreSQL statement. The trash's
	// batches and searches take milliseconds to a few hundred; ten seconds
	// only stops a statement that has gone wrong.
	DefaultStatementTimeout = 10 * time.Second
	// DefaultDialTimeout bounds connecting to PostgreSQL.
	DefaultDialTimeout = 5 * time.Second
	// DefaultBusyTimeout is how long an SQLite writer queues for the lock.
	DefaultBusyTimeout = 10 * time.Second
)

// DefaultMaxOpenConns is the pool size when Options leave it 0: four
// connections a CPU, enough to keep the database busy without letting one
// process take all of a shared server's connections (PostgreSQL allows 100
// by default).
func DefaultMaxOpenConns() int { return 4 * runtime.GOMAXPROCS(0) }

// Options tune Open; the zero value means the defaults.
type Options struct {
	MaxOpenConns     int           // DefaultMaxOpenConns() if 0
	StatementTimeout time.Duration // DefaultStatementTimeout if 0; PostgreSQL only
	DialTimeout      time.Duration // DefaultDialTimeout if 0; PostgreSQL only
	// TransactionPooling opens PostgreSQL for a pooler in transaction
	// mode (PgBouncer's pool_mode = transaction) between deskkit and the
	// server: the statement timeout and max_parallel_workers_per_gather
	// are set with SET LOCAL in every transaction, and in front of every
	// statement run outside one, rather than once per session; preparing
	// a statement fails with ErrPrepared. Such a pool cannot LISTEN or
	// migrate (both need a session): open a direct one for those.
	TransactionPooling bool
}

func (o Options) withDefaults() Options {
	if o.MaxOpenConns == 0 {
		o.MaxOpenConns = DefaultMaxOpenConns()
	}
	if o.StatementTimeout == 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	return o
}

// Open opens the database named by rawURL with a bounded pool. It does not
// connect; call PingContext to find out whether the database answers.
func Open(rawURL string, o Options) (*bun.DB, error) {
	if o.MaxOpenConns < 0 || o.StatementTimeout < 0 || o.DialTimeout < 0 {
		return nil, errors.New("database: pool size and timeouts must not be negative")
	}
	switch {
	case IsPostgres(rawURL):
		if err := CheckPostgres(rawURL); err != nil {
			return nil, err
		}
		if keywordDSN(rawURL) {
			rawURL, _ = keywordURL(rawURL)
		}
		t, _ := parsePostgres(rawURL)
		return openTarget(t, o), nil
	case strings.HasPrefix(rawURL, "sqlite:"):
		if o.TransactionPooling {
			return nil, errors.New("database: transaction pooling is for PostgreSQL behind PgBouncer, not SQLite")
		}
		return OpenSQLite(strings.TrimPrefix(rawURL, "sqlite:"), o)
	default:
		return nil, fmt.Errorf("database URL must start with postgres://, postgresql:// or sqlite: (or be PostgreSQL's keyword form, host=... dbname=...), got %q", redact(rawURL))
	}
}

// IsPostgres reports whether raw names a PostgreSQL database, as Open
// takes it: a postgres:// or postgresql:// URL, or the keyword form
// ("host=h1,h2 port=5432,5433 dbname=deskkit").
func IsPostgres(raw string) bool {
	return strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") || keywordDSN(raw)
}

// CheckPostgres reports what Open would refuse in raw, a PostgreSQL URL
// or keyword form (see IsPostgres): a bad host list, port or
// target_session_attrs, with an error naming the parameter.
func CheckPostgres(raw string) error {
	_, err := parseAny(raw)
	return err
}

// parseAny takes apart raw in either form CheckPostgres takes.
func parseAny(raw string) (pgTarget, error) {
	if keywordDSN(raw) {
		u, err := keywordURL(raw)
		if err != nil {
			return pgTarget{}, err
		}
		raw = u
	}
	return parsePostgres(raw)
}

// WantsPrimary reports whether raw, a PostgreSQL URL or keyword form that
// CheckPostgres takes, asks for target_session_attrs=read-write: a pool
// opened on it never reaches a standby.
func WantsPrimary(raw string) bool {
	t, err := parseAny(raw)
	return err == nil && t.readWrite
}

// PostgresOptions are the pgdriver options for o: the dial timeout, and
// settings of every connection's session:
//
//   - statement_timeout, so that no statement holds a connection (and its
//     locks) for ever;
//   - max_parallel_workers_per_gather = 0: deskkit's statements are short,
//     and many run at once, so a parallel plan only makes one statement take
//     three processes' CPU from the others. On 2 cores, a name search counting
//     100,000 matches took 190 ms at p50 with parallel workers and 102 ms
//     without.
func PostgresOptions(o Options) []pgdriver.Option {
	o = o.withDefaults()
	return []pgdriver.Option{
		pgdriver.WithDialTimeout(o.DialTimeout),
		pgdriver.WithConnParams(map[string]any{
			"statement_timeout":               o.StatementTimeout.Milliseconds(),
			"max_parallel_workers_per_gather": int64(0),
		}),
	}
}

// OpenPostgres opens PostgreSQL through bun's pgdriver; with
// o.TransactionPooling, through a connector that keeps no session state
// (see Options). dsn may list several hosts (see Open); one that Open
// would refuse is given to pgdriver as it is.
func OpenPostgres(dsn string, o Options) *bun.DB {
	t, err := parsePostgres(dsn)
	if err != nil {
		t = pgTarget{dsn: dsn}
	}
	return openTarget(t, o)
}

// openTarget opens t: one pgdriver connector, whose dialer tries t's
// hosts when it lists several or wants a read-write session (see
// hostDialer), wrapped for a pooler in transaction mode with
// o.TransactionPooling, its connections guarded against a server turned
// read-only (see guardConn).
func openTarget(t pgTarget, o Options) *bun.DB {
	o = o.withDefaults()
	opts := []pgdriver.Option{pgdriver.WithDSN(t.dsn)}
	if o.TransactionPooling {
		opts = append(opts, pgdriver.WithDialTimeout(o.DialTimeout), pgdriver.WithConnParams(nil))
	} else {
		opts = append(opts, PostgresOptions(o)...)
	}
	if t.multi() {
		d := newHostDialer(t, o)
		opts = append(opts, func(c *pgdriver.Config) { c.Dialer = d.dial })
	}
	var c driver.Connector = pgdriver.NewConnector(opts...)
	if o.TransactionPooling {
		c = newPooledConnector(c.(*pgdriver.Connector), o)
	}
	sqldb := sql.OpenDB(guardConnector{inner: c})
	Bound(sqldb, o)
	return bun.NewDB(sqldb, pgdialect.New())
}

// Bound applies o's pool size to sqldb, keeping as many idle connections
// as it may open, so that a burst does not close and reopen them.
func Bound(sqldb *sql.DB, o Options) {
	o = o.withDefaults()
	sqldb.SetMaxOpenConns(o.MaxOpenConns)
	sqldb.SetMaxIdleConns(o.MaxOpenConns)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
}

// SQLiteDSN is the modernc.org/sqlite data source name deskkit needs for the
// file at path: write-ahead log so readers do not block the writer,
// IMMEDIATE transactions so two writers queue instead of failing half-way,
// a busy timeout to queue on, and foreign keys on. A host that opens SQLite
// itself passes this to sql.Open("sqlite", ...).
func SQLiteDSN(path string) string {
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Set("_busy_timeout", fmt.Sprint(DefaultBusyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	return "file:" + path + "?" + q.Encode()
}

// OpenSQLite opens (creating if needed) the SQLite file at path with
// SQLiteDSN's settings. A new file is created readable and writable by its
// owner only; SQLite gives its -wal and -shm files the same mode.
func OpenSQLite(path string, o Options) (*bun.DB, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite: URL needs a file path, e.g. sqlite:deskkit.db")
	}
	o = o.withDefaults()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	f.Close()
	sqldb, err := sql.Open("sqlite", SQLiteDSN(path))
	if err != nil {
		return nil, err
	}
	// Switching a new file to the write-ahead log takes an exclusive lock
	// that SQLite does not wait for: connections opened at once would race
	// for it and fail with SQLITE_BUSY. One connection switches it first.
	if err := sqldb.Ping(); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	Bound(sqldb, o)
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
