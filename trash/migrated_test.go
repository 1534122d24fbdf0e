package trash_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/trash/trashtest"
)

// TestNewNamesAMissingMigration: New over a database that trash.Migrate
// has not run on fails with the error that names the call, rather than
// the first request failing with an SQL error; so does every table of the
// trash's migrations missing alone. A database that cannot answer is told
// apart: its error says nothing of migrating.
func TestNewNamesAMissingMigration(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		build := func() error {
			_, err := trash.New(db, &trashtest.Restorer{}, nil)
			return err
		}
		want := "trash.New: tables deskkit_trash, deskkit_trash_counts, deskkit_trash_migrations do not exist: run trash.Migrate(ctx, db) first"
		if err := build(); err == nil || err.Error() != want {
			t.Fatalf("New before Migrate = %v, want %q", err, want)
		}
		if err := trash.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		checked := dbtest.WithoutEachTable(t, db, func(table string) {
			want := fmt.Sprintf("trash.New: table %s does not exist: run trash.Migrate(ctx, db) first", table)
			if err := build(); err == nil || err.Error() != want {
				t.Errorf("New without %s = %v, want %q", table, err, want)
			}
		})
		if len(checked) != 2 {
			t.Errorf("Migrate created the tables %v, want the two New checks for", checked)
		}
		if err := build(); err != nil {
			t.Fatalf("New after Migrate: %v", err)
		}
		// A database migrated by an older deskkit: the newest migration
		// is not applied, although every table is there.
		if _, err := db.ExecContext(context.Background(), "DELETE FROM deskkit_trash_migrations WHERE name = ?", "20261122000003"); err != nil {
			t.Fatal(err)
		}
		want = "trash.New: 1 migration is not applied (20261122000003_trgm_no_pending_list): run trash.Migrate(ctx, db) first"
		if err := build(); err == nil || err.Error() != want {
			t.Errorf("New without the newest migration = %v, want %q", err, want)
		}
		if err := trash.Migrate(context.Background(), db); err != nil {
			t.Fatal(err)
		}
		if err := build(); err != nil {
			t.Fatalf("New after Migrate again: %v", err)
		}
		db.Close()
		if err := build(); err == nil || strings.Contains(err.Error(), "Migrate") || !strings.HasPrefix(err.Error(), "trash.New: checking for its tables: ") {
			t.Fatalf("New over a closed pool = %v, want the database's error, not advice to migrate", err)
		}
	})
}
