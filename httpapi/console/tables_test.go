package console

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestNewChecksTables: New refuses a database Migrate has not run on,
// naming the missing table and the call that creates it, instead of
// answering 500 at the first link; and a database migrated before portal
// links existed (its table dropped here); and one migrated by an older
// deskkit, whose newest migration is not applied. Both databases.
func TestNewChecksTables(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		const want = "console.New: table deskkit_console_portal_links does not exist: run console.Migrate(ctx, db) first"
		cfg := Config{DB: db, Principals: newFakeDirectory(), Secret: testSecret}
		const none = "console.New: tables deskkit_console_portal_links, deskkit_console_limits, deskkit_console_links, deskkit_console_sessions, deskkit_console_migrations do not exist: run console.Migrate(ctx, db) first"
		if _, err := New(&cfg); err == nil || err.Error() != none {
			t.Errorf("New without Migrate: %v\nwant %s", err, none)
		}
		ctx := context.Background()
		if err := Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		if _, err := New(&cfg); err != nil {
			t.Fatalf("New after Migrate: %v", err)
		}
		// Every table there, but the newest migration not applied: a
		// deskkit upgraded without Migrate run again.
		rename := func(from, to string) {
			if _, err := db.ExecContext(ctx, `UPDATE deskkit_console_migrations SET name = ? WHERE name = ?`, to, from); err != nil {
				t.Fatal(err)
			}
		}
		rename("20261127000001", "20261127000001_away")
		const behind = "console.New: 1 migration is not applied (20261127000001_portal): run console.Migrate(ctx, db) first"
		if _, err := New(&cfg); err == nil || err.Error() != behind {
			t.Errorf("New without the newest migration: %v\nwant %s", err, behind)
		}
		rename("20261127000001_away", "20261127000001")
		if _, err := db.ExecContext(ctx, `DROP TABLE deskkit_console_portal_links`); err != nil {
			t.Fatal(err)
		}
		if _, err := New(&cfg); err == nil || err.Error() != want {
			t.Errorf("New without the portal links' table: %v\nwant %s", err, want)
		}
	})
}
