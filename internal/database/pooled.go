package database

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/uptrace/bun/driver/pgdriver"
)

// ErrPrepared is what preparing a statement answers on a pool opened with
// Options.TransactionPooling: a named prepared statement lives in one
// server session, which a pooler in transaction mode does not keep for a
// client. deskkit's services prepare nothing when their PlainStatements is
// set; a preparation that reaches the pool is a bug, and fails here at
// once rather than on another client's server connection later.
var ErrPrepared = errors.New("database: prepared statements are off on a pool opened with TransactionPooling (PgBouncer in transaction mode keeps no session)")

// pooledConnector opens pgdriver connections for a pool behind a pooler in
// transaction mode (PgBouncer's pool_mode = transaction), where a server
// session is lent to a client for one transaction only. Nothing it sends
// outlives a transaction: it sets no session parameter after connecting;
// each transaction starts with SET LOCAL of the statement timeout and of
// max_parallel_workers_per_gather, and a statement run outside a
// transaction is sent with them in front, in the same simple query,
// which PostgreSQL runs as one implicit transaction; preparing a
// statement fails with ErrPrepared. A transaction's BEGIN and its SET
// LOCALs go in front of its first statement, in that statement's simple
// query: every round trip through the pooler costs a hop more than a
// direct one, and this saves one per transaction (a flush of the
// delivery workers is BEGIN, one statement and COMMIT). A transaction
// that runs no statement sends nothing, not even its COMMIT. pgdriver
// sends its arguments inline (the simple query protocol), so no
// statement is prepared behind the caller's back.
type pooledConnector struct {
	inner *pgdriver.Connector
	// local is the SET LOCAL statements that start every transaction,
	// each ending with "; ".
	local string
}

// newPooledConnector returns the connector of OpenPostgres for a pool
// opened with TransactionPooling.
func newPooledConnector(inner *pgdriver.Connector, o Options) *pooledConnector {
	return &pooledConnector{inner: inner, local: pooledLocals(o)}
}

// pooledLocals is the SET LOCAL statements of o's session settings (see
// PostgresOptions), each ending with "; ".
func pooledLocals(o Options) string {
	o = o.withDefaults()
	return fmt.Sprintf("SET LOCAL statement_timeout = %d; SET LOCAL max_parallel_workers_per_gather = 0; ", o.StatementTimeout.Milliseconds())
}

func (c *pooledConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pooledConn{Conn: cn.(*pgdriver.Conn), local: c.local}, nil
}

// Driver is pgdriver's, so that code that asks whether a pool is
// pgdriver's (bun, outbox.Listen) still finds it.
func (c *pooledConnector) Driver() driver.Driver { return c.inner.Driver() }

// pooledConn is one pgdriver connection of a pooled pool. inTx is set
// between BeginTx and the transaction's end: statements inside one run
// as they are, the first with begin in front.
type pooledConn struct {
	*pgdriver.Conn
	local string
	inTx  atomic.Bool
	// begin is the BEGIN and SET LOCALs of the transaction begun, until
	// its first statement carries them; "" once sent, and outside one.
	// database/sql uses a connection from one goroutine at a time.
	begin string
}

var (
	_ driver.Conn               = (*pooledConn)(nil)
	_ driver.ConnBeginTx        = (*pooledConn)(nil)
	_ driver.ConnPrepareContext = (*pooledConn)(nil)
	_ driver.ExecerContext      = (*pooledConn)(nil)
	_ driver.QueryerContext     = (*pooledConn)(nil)
	_ driver.Pinger             = (*pooledConn)(nil)
	_ driver.Validator          = (*pooledConn)(nil)
	_ driver.SessionResetter    = (*pooledConn)(nil)
)

func (cn *pooledConn) Prepare(string) (driver.Stmt, error) { return nil, ErrPrepared }

func (cn *pooledConn) PrepareContext(context.Context, string) (driver.Stmt, error) {
	return nil, ErrPrepared
}

func (cn *pooledConn) Begin() (driver.Tx, error) {
	return cn.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx begins a transaction: its BEGIN and SET LOCALs wait for its
// first statement (wrap).
func (cn *pooledConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	begin := "BEGIN"
	switch level := isolationName(opts.Isolation); {
	case level == "":
		return nil, fmt.Errorf("database: unsupported transaction isolation level %d", opts.Isolation)
	case level != "DEFAULT":
		begin += " ISOLATION LEVEL " + level
	}
	if opts.ReadOnly {
		begin += " READ ONLY"
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cn.begin = begin + "; " + cn.local
	cn.inTx.Store(true)
	return pooledTx{cn}, nil
}

// isolationName is PostgreSQL's name of a database/sql isolation level,
// "DEFAULT" for the server's, "" for one PostgreSQL does not have.
func isolationName(l driver.IsolationLevel) string {
	switch l {
	case 0: // sql.LevelDefault
		return "DEFAULT"
	case 1: // sql.LevelReadUncommitted
		return "READ UNCOMMITTED"
	case 2: // sql.LevelReadCommitted
		return "READ COMMITTED"
	case 4: // sql.LevelRepeatableRead
		return "REPEATABLE READ"
	case 6: // sql.LevelSerializable
		return "SERIALIZABLE"
	}
	return ""
}

// wrap is query as it is sent: with the locals in front outside a
// transaction, with the BEGIN and locals in front as a transaction's
// first statement. The BEGIN counts as sent from then on: a statement
// that fails, even before it reached the server, is followed by the
// caller's ROLLBACK, which PostgreSQL answers with a warning alone when
// no transaction is open.
func (cn *pooledConn) wrap(query string) string {
	if !cn.inTx.Load() {
		return cn.local + query
	}
	if cn.begin != "" {
		query, cn.begin = cn.begin+query, ""
	}
	return query
}

func (cn *pooledConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return cn.Conn.ExecContext(ctx, cn.wrap(query), args)
}

func (cn *pooledConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return cn.Conn.QueryContext(ctx, cn.wrap(query), args)
}

// pooledTx ends a pooledConn's transaction.
type pooledTx struct{ cn *pooledConn }

func (tx pooledTx) Commit() error   { return tx.end("COMMIT") }
func (tx pooledTx) Rollback() error { return tx.end("ROLLBACK") }

// end sends stmt, unless the transaction sent nothing: then there is
// nothing to commit or roll back.
func (tx pooledTx) end(stmt string) error {
	defer tx.cn.inTx.Store(false)
	if tx.cn.begin != "" {
		tx.cn.begin = ""
		return nil
	}
	_, err := tx.cn.Conn.ExecContext(context.Background(), stmt, nil)
	return err
}
