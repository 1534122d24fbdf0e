// Package trashtest helps a host test its side of the trash, as
// net/http/httptest does for HTTP: a fake trash.Restorer whose methods are
// function fields, and RunRestorerTests, the conformance suite a host runs
// against its own trash.Restorer over its real tables (as go-cloud's
// drivertest does for drivers).
package trashtest

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/trash"
)

// Restorer is a trash.Restorer whose methods call its function fields,
// for a test that scripts what the host does (or fails to do). A method
// whose field is nil succeeds without doing anything.
type Restorer struct {
	RestoreFn func(ctx context.Context, tx bun.Tx, e trash.Entry) error
	PurgeFn   func(ctx context.Context, tx bun.Tx, e trash.Entry) error
}

var _ trash.Restorer = (*Restorer)(nil)

// Restore calls RestoreFn.
func (r *Restorer) Restore(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	if r.RestoreFn == nil {
		return nil
	}
	return r.RestoreFn(ctx, tx, e)
}

// Purge calls PurgeFn.
func (r *Restorer) Purge(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	if r.PurgeFn == nil {
		return nil
	}
	return r.PurgeFn(ctx, tx, e)
}
