package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/deskkit/deskkit/internal/txretry"
)

// Why the hot paths run on a connection of their own.
//
// database/sql watches a query's context in a goroutine of its own for
// each query that returns rows and for each transaction (and, inside a
// transaction, for each query that returns rows, whatever the context),
// so that it can close the rows or roll the transaction back when the
// context ends. A verification send and check make 13 such goroutines:
// each wakes an idle thread, and their start, wake and sleep took more of
// the process's time than anything deskkit itself does (measured with
// database/sql patched not to start them: send and check went from
// 0.83x to 0.93x of their SQL replayed alone).
//
// bun's pgdriver gains nothing from that goroutine: it cannot interrupt a
// statement in flight, and it bounds every read and write on the socket by
// the context's deadline itself (a statement past it fails with a timeout
// and the connection is discarded, which makes PostgreSQL end the
// statement and roll its transaction back). So, on pgdriver only, InTx and
// OnConn take a connection from the pool within ctx (a full pool is waited
// for no longer than ctx allows), then run the statements with a context
// that keeps ctx's deadline and values but has no Done channel, which
// database/sql does not watch; a transaction is BEGIN and COMMIT on that
// connection. A client that hangs up therefore no longer stops the
// statements between two of them; the deadline does, as before. Other
// drivers (SQLite's interrupts a statement when its context is done) run
// as before.

// OnConn runs fn with one connection of db, for statements outside a
// transaction. On PostgreSQL through pgdriver, fn's context has no Done
// channel (see above): fn must do nothing but run statements through c.
// Elsewhere, c is db and fn's context is ctx.
func OnConn(ctx context.Context, db bun.IDB, fn func(ctx context.Context, c bun.IDB) error) error {
	bdb, ok := pgdriverDB(db)
	if !ok {
		return fn(ctx, db)
	}
	conn, err := bdb.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return fn(deadlineOnly{ctx}, conn)
}

// InTx runs fn in a transaction of db and runs it again after a deadlock
// or a serialization failure, as RunInTx does; fn gets the transaction as
// a bun.IDB. On PostgreSQL through pgdriver, the transaction is BEGIN and
// COMMIT on a connection of its own and fn's context has no Done channel
// (see above): fn must do nothing but run statements through tx.
func InTx(ctx context.Context, db bun.IDB, fn func(ctx context.Context, tx bun.IDB) error) error {
	bdb, ok := pgdriverDB(db)
	if !ok {
		return RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error { return fn(ctx, tx) })
	}
	return txretry.Run(ctx, MaxTxAttempts, func() error { return connTx(ctx, bdb, fn) })
}

// connTx is one attempt of InTx on pgdriver. The connection goes back to
// the pool only when the transaction ended cleanly (committed, or rolled
// back by ROLLBACK); after anything else (a failed COMMIT or ROLLBACK, a
// timeout, a panic in fn) it is closed, and PostgreSQL rolls back what it
// held.
func connTx(ctx context.Context, db *bun.DB, fn func(ctx context.Context, tx bun.IDB) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	clean := false
	defer func() {
		if !clean {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // closes it
		}
		_ = conn.Close()
	}()
	qctx := deadlineOnly{ctx}
	if _, err := conn.ExecContext(qctx, "BEGIN"); err != nil {
		return err
	}
	if err := fn(qctx, txConn{conn}); err != nil {
		if _, rerr := conn.ExecContext(qctx, "ROLLBACK"); rerr == nil {
			clean = true
		}
		return err
	}
	if _, err := conn.ExecContext(qctx, "COMMIT"); err != nil {
		return err
	}
	clean = true
	return nil
}

// txConn is the connection of a transaction InTx began with BEGIN. A
// transaction begun on it would be another BEGIN, which PostgreSQL only
// warns about, and its COMMIT would commit InTx's early, so it refuses
// to begin one.
type txConn struct{ bun.Conn }

// errNestedTx is what beginning a transaction inside InTx's answers.
var errNestedTx = errors.New("database: a transaction inside InTx's: run the statements on its tx")

func (txConn) BeginTx(context.Context, *sql.TxOptions) (bun.Tx, error) { return bun.Tx{}, errNestedTx }

func (txConn) RunInTx(context.Context, *sql.TxOptions, func(context.Context, bun.Tx) error) error {
	return errNestedTx
}

// pgdriverDB returns db as a *bun.DB if it is one on PostgreSQL through
// bun's pgdriver.
func pgdriverDB(db bun.IDB) (*bun.DB, bool) {
	bdb, ok := db.(*bun.DB)
	if !ok || bdb.Dialect().Name() != dialect.PG {
		return nil, false
	}
	_, ok = bdb.DB.Driver().(pgdriver.Driver)
	return bdb, ok
}

// deadlineOnly is a context with its parent's deadline, values and error,
// and no Done channel.
type deadlineOnly struct{ context.Context }

func (deadlineOnly) Done() <-chan struct{} { return nil }
