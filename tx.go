package deskkit

import (
	"context"
	"database/sql"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/txretry"
)

// MaxTxAttempts is how many times RunInTx runs a transaction that keeps
// losing deadlocks or serialization checks before it gives up.
const MaxTxAttempts = 5

// RunInTx runs fn in a transaction of db, as bun's RunInTx does, and runs
// it again (up to MaxTxAttempts times in all, after a pause of a few
// milliseconds, growing and jittered) when PostgreSQL rolls it back for a
// deadlock (SQLSTATE 40P01) or a serialization failure (40001). fn must
// therefore be safe to run more than once: it does database work through
// tx only, and nothing outside the transaction that it would not repeat.
// The services run their own transactions this way; a host that calls
// trash.Trash.Add in its own delete transaction should too.
//
// It returns fn's error, or the last one when every attempt failed, or
// the commit's. PostgreSQL errors are recognised without importing a
// driver; see SQLState.
func RunInTx(ctx context.Context, db bun.IDB, opts *sql.TxOptions, fn func(ctx context.Context, tx bun.Tx) error) error {
	return txretry.Run(ctx, MaxTxAttempts, func() error { return db.RunInTx(ctx, opts, fn) })
}

// SQLState returns the PostgreSQL error code (SQLSTATE, such as "40P01")
// of the first error in err's chain that carries one, or "" if none does.
// Drivers are recognised by a method, so that deskkit imports none: an
// SQLState() string method (pgx's *pgconn.PgError, lib/pq's *pq.Error), or
// a Field(byte) string method answering field 'C' (bun's pgdriver.Error).
func SQLState(err error) string { return txretry.SQLState(err) }
