package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/txretry"
)

// SQLSTATE returns err's PostgreSQL error code ("40P01"), or "" if err does
// not come from PostgreSQL.
func SQLSTATE(err error) string { return deskkit.SQLState(err) }

// UniqueViolation reports whether err is a unique index refusing a write:
// on PostgreSQL (SQLSTATE 23505) the index named index; on SQLite, which
// names the columns instead ("UNIQUE constraint failed:
// deskkit_channels.tenant_id, deskkit_channels.name"), one whose columns
// contain columns. Empty index and columns match any unique index. The
// SQLite driver is matched by its method, so that callers need import no
// driver.
func UniqueViolation(err error, index, columns string) bool {
	var pg pgdriver.Error
	var lite interface{ Code() int } // *sqlite.Error of modernc.org/sqlite
	switch {
	case errors.As(err, &pg):
		return pg.Field('C') == "23505" && (index == "" || pg.Field('n') == index)
	case errors.As(err, &lite) && lite.Code()&0xff == sqliteConstraint:
		msg := err.Error()
		return strings.Contains(msg, "UNIQUE constraint failed") && strings.Contains(msg, columns)
	}
	return false
}

// sqliteConstraint is SQLITE_CONSTRAINT, the primary result code of every
// constraint violation (SQLITE_CONSTRAINT_UNIQUE is 2067 = 19 | 8<<8).
const sqliteConstraint = 19

// Retryable reports whether err is a deadlock (40P01) or a serialization
// failure (40001): the transaction was rolled back whole and may simply run
// again.
func Retryable(err error) bool { return txretry.Retryable(err) }

// ConnLost reports whether err means that the connection a statement ran
// on was lost (closed by the server, a proxy or the network: EOF, a reset,
// a broken pipe, a connection the driver had already closed, PostgreSQL's
// connection errors and its "terminating connection" on a restart or
// pg_terminate_backend, a connection dropped for answering as a
// read-only server: ReadOnlyError) or could not be made (ErrNoPrimary
// too), rather than that the
// database answered the statement with an error. A transaction it cut was
// rolled back, unless its COMMIT was under way (then it may have
// committed), and may be tried again on another connection. A timeout is
// not a lost connection: the database is slow, not gone, and a statement
// tried again would wait as long.
func ConnLost(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, ErrNoPrimary) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNABORTED) {
		return true
	}
	code := SQLSTATE(err)
	return strings.HasPrefix(code, "08") || // connection exception
		code == "57P01" || code == "57P02" || code == "57P03" // shutdown, crash, cannot connect now
}

// Unavailable reports whether err means that the database could not answer
// in time or at all, rather than that the request was wrong: the pool or a
// statement ran out of time, the server is unreachable, refuses connections,
// has too many clients, is shutting down, or cancelled the statement, or
// is a standby that refused a write (25006, during a failover; see
// ReadOnlyError) or the only kind of host a read-write URL found
// (ErrNoPrimary);
// SQLite's lock stayed busy past the busy timeout; the pool is closed. Such a request may
// succeed later, and nothing it did was committed.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if ConnLost(err) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if code := SQLSTATE(err); code != "" {
		return strings.HasPrefix(code, "53") || // insufficient resources: too many connections, out of memory
			code == "57014" || // statement timeout or cancel
			code == "25006" || // read-only: a write reached a standby (a demoted primary) during a failover
			code == "55P03" // lock not available (lock_timeout)
	}
	// modernc.org/sqlite: SQLITE_BUSY past the busy timeout. database/sql:
	// a closed pool (the process is shutting down), an error it does not export.
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked") ||
		strings.Contains(msg, "sql: database is closed")
}
