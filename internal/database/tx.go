package database

import (
	"context"
	"database/sql"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// MaxTxAttempts is deskkit.MaxTxAttempts.
const MaxTxAttempts = deskkit.MaxTxAttempts

// RunInTx is deskkit.RunInTx: fn in a transaction, run again when
// PostgreSQL rolls it back for a deadlock or a serialization failure.
func RunInTx(ctx context.Context, db bun.IDB, opts *sql.TxOptions, fn func(ctx context.Context, tx bun.Tx) error) error {
	return deskkit.RunInTx(ctx, db, opts, fn)
}
