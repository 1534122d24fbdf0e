package verify_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
	"github.com/deskkit/deskkit/verify/verifytest"
)

// TestNewNamesAMissingMigration: New over a database that verify.Migrate
// has not run on fails with the error that names the call, rather than
// the first request failing with an SQL error; so does every table of the
// Verifier's and the outbox's migrations missing alone. A database that
// cannot answer is told apart: its error says nothing of migrating.
func TestNewNamesAMissingMigration(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		build := func() error {
			s := &verifytest.Sink{}
			_, err := verify.New(db, verifytest.NewDirectory(), s, s, secret, nil)
			return err
		}
		want := "verify.New: tables deskkit_verify_codes, deskkit_verify_links, deskkit_verify_limits, " +
			"deskkit_outbox_events, deskkit_outbox_deliveries, deskkit_outbox_attempts, deskkit_outbox_migrations, deskkit_verify_migrations do not exist: run verify.Migrate(ctx, db) first"
		if err := build(); err == nil || err.Error() != want {
			t.Fatalf("New before Migrate = %v, want %q", err, want)
		}
		if err := verify.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		checked := dbtest.WithoutEachTable(t, db, func(table string) {
			want := fmt.Sprintf("verify.New: table %s does not exist: run verify.Migrate(ctx, db) first", table)
			if err := build(); err == nil || err.Error() != want {
				t.Errorf("New without %s = %v, want %q", table, err, want)
			}
		})
		if len(checked) < 6 {
			t.Errorf("Migrate created the tables %v, want at least the six New checks for", checked)
		}
		if err := build(); err != nil {
			t.Fatalf("New after Migrate: %v", err)
		}
		// A database migrated by an older deskkit: the newest migration
		// is not applied, although every table is there.
		if _, err := db.ExecContext(context.Background(), "DELETE FROM deskkit_outbox_migrations WHERE name = ?", "20261201000001"); err != nil {
			t.Fatal(err)
		}
		want = "verify.New: 1 migration is not applied (20261201000001_in_flight_count): run verify.Migrate(ctx, db) first"
		if err := build(); err == nil || err.Error() != want {
			t.Errorf("New without the newest migration = %v, want %q", err, want)
		}
		if err := verify.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		if err := build(); err != nil {
			t.Fatalf("New after Migrate again: %v", err)
		}
		db.Close()
		if err := build(); err == nil || strings.Contains(err.Error(), "Migrate") || !strings.HasPrefix(err.Error(), "verify.New: checking for its tables: ") {
			t.Fatalf("New over a closed pool = %v, want the database's error, not advice to migrate", err)
		}
	})
}
