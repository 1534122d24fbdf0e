package trash_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/trash/trashtest"
)

// TestNewNamesAMissingMigration: New over a database that trash.Migrate
// has not run on, or lacks a table it creates, or its newest migration,
// fails with the error that names the call, rather than the first request
// failing with an SQL error. A database that cannot answer is told apart:
// its error says nothing of migrating.
func TestNewNamesAMissingMigration(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		dbtest.TestMigrationChecked(t, db, dbtest.Migrated{
			Service: "trash",
			New: func(db *bun.DB) error {
				_, err := trash.New(db, &trashtest.Restorer{}, nil)
				return err
			},
			Migrate:     func(ctx context.Context, db *bun.DB) error { return trash.Migrate(ctx, db) },
			Tables:      []string{"deskkit_trash", "deskkit_trash_counts", "deskkit_trash_migrations"},
			NewestTable: "deskkit_trash_migrations", NewestVersion: "20261122000003", NewestLabel: "20261122000003_trgm_no_pending_list",
			AtLeastChecked: 2,
		})
	})
}
