package database

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"time"

	"github.com/uptrace/bun"
)

// MaxTxAttempts is how many times RunInTx runs a transaction that keeps
// losing deadlocks or serialization checks before it gives up.
const MaxTxAttempts = 5

// RunInTx runs fn in a transaction of db, as bun's RunInTx does, and runs it
// again (up to MaxTxAttempts times in all, after a short random pause) when
// PostgreSQL rolls it back for a deadlock or a serialization failure. fn
// must therefore be safe to run more than once: it must not do anything
// outside the transaction that it would not repeat.
func RunInTx(ctx context.Context, db bun.IDB, opts *sql.TxOptions, fn func(ctx context.Context, tx bun.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = db.RunInTx(ctx, opts, fn)
		if err == nil || !Retryable(err) || attempt == MaxTxAttempts {
			return err
		}
		// A few milliseconds, growing and jittered, so that the two losers of
		// a deadlock do not collide again in step.
		pause := time.Duration(attempt) * time.Duration(1+rand.IntN(5)) * time.Millisecond
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}
