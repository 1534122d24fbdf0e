package channel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestNewNamesAMissingMigration: New over a database that channel.Migrate
// has not run on fails with the error that names the call, rather than
// the first request failing with an SQL error; so does every table of the
// registry's and the outbox's migrations missing alone. A database that
// cannot answer is told apart: its error says nothing of migrating.
func TestNewNamesAMissingMigration(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		build := func() error {
			_, err := channel.New(db, sendSecret, nil, nil)
			return err
		}
		want := "channel.New: tables deskkit_channels, deskkit_channel_counts, deskkit_channel_limits, " +
			"deskkit_outbox_events, deskkit_outbox_deliveries, deskkit_outbox_attempts, deskkit_outbox_migrations, deskkit_channel_migrations do not exist: run channel.Migrate(ctx, db) first"
		if err := build(); err == nil || err.Error() != want {
			t.Fatalf("New before Migrate = %v, want %q", err, want)
		}
		if err := channel.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		checked := dbtest.WithoutEachTable(t, db, func(table string) {
			want := fmt.Sprintf("channel.New: table %s does not exist: run channel.Migrate(ctx, db) first", table)
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
		want = "channel.New: 1 migration is not applied (20261201000001_in_flight_count): run channel.Migrate(ctx, db) first"
		if err := build(); err == nil || err.Error() != want {
			t.Errorf("New without the newest migration = %v, want %q", err, want)
		}
		if err := channel.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		if err := build(); err != nil {
			t.Fatalf("New after Migrate again: %v", err)
		}
		db.Close()
		if err := build(); err == nil || strings.Contains(err.Error(), "Migrate") || !strings.HasPrefix(err.Error(), "channel.New: checking for its tables: ") {
			t.Fatalf("New over a closed pool = %v, want the database's error, not advice to migrate", err)
		}
	})
}
