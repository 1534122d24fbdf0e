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
// links existed (its table dropped here). Both databases.
func TestNewChecksTables(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		const want = "console.New: table deskkit_console_portal_links does not exist: run console.Migrate(ctx, db) first"
		cfg := Config{DB: db, Principals: newFakeDirectory(), Secret: testSecret}
		if _, err := New(&cfg); err == nil || err.Error() != want {
			t.Errorf("New without Migrate: %v\nwant %s", err, want)
		}
		ctx := context.Background()
		if err := Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		if _, err := New(&cfg); err != nil {
			t.Fatalf("New after Migrate: %v", err)
		}
		if _, err := db.ExecContext(ctx, `DROP TABLE deskkit_console_portal_links`); err != nil {
			t.Fatal(err)
		}
		if _, err := New(&cfg); err == nil || err.Error() != want {
			t.Errorf("New without the portal links' table: %v\nwant %s", err, want)
		}
	})
}
