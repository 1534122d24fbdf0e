package verify_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/verifytest"
)

// TestNewNamesAMissingMigration: New over a database that verify.Migrate
// has not run on, or lacks a table it creates, or its newest migration,
// fails with the error that names the call, rather than the first request
// failing with an SQL error. A database that cannot answer is told apart:
// its error says nothing of migrating.
func TestNewNamesAMissingMigration(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		dbtest.TestMigrationChecked(t, db, dbtest.Migrated{
			Service: "verify",
			New: func(db *bun.DB) error {
				s := &verifytest.Sink{}
				_, err := verify.New(db, verifytest.NewDirectory(), s, s, secret, nil)
				return err
			},
			Migrate:     func(ctx context.Context, db *bun.DB) error { return verify.Migrate(ctx, db) },
			Tables:      []string{"deskkit_verify_codes", "deskkit_verify_links", "deskkit_verify_limits", "deskkit_outbox_events", "deskkit_outbox_deliveries", "deskkit_outbox_attempts", "deskkit_outbox_targets", "deskkit_outbox_workers", "deskkit_outbox_bodies", "deskkit_outbox_migrations", "deskkit_verify_migrations"},
			NewestTable: "deskkit_outbox_migrations", NewestVersion: "20261201000001", NewestLabel: "20261201000001_in_flight_count",
			AtLeastChecked: 6,
		})
	})
}
