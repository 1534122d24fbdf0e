package dbtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// WithoutEachTable calls fn once for each table deskkit's migrations
// created in db (every deskkit_ table but the migrations' bookkeeping),
// with that table renamed away for the call and given back after it: what
// a test of a constructor's check for its tables runs over, so that a
// table a new migration adds is checked for without the test naming it.
// It returns the tables, in the order of the calls.
func WithoutEachTable(t testing.TB, db *bun.DB, fn func(table string)) []string {
	t.Helper()
	ctx := context.Background()
	q := `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`
	if db.Dialect().Name() == dialect.PG {
		q = `SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema() ORDER BY tablename`
	}
	var all []string
	if err := db.NewRaw(q).Scan(ctx, &all); err != nil {
		t.Fatalf("list tables: %v", err)
	}
	var tables []string
	for _, name := range all {
		if !strings.HasPrefix(name, "deskkit_") || strings.HasSuffix(name, "_migrations") || strings.HasSuffix(name, "_migrations_locks") {
			continue
		}
		tables = append(tables, name)
		away := name + "_away"
		if _, err := db.ExecContext(ctx, "ALTER TABLE ? RENAME TO ?", bun.Ident(name), bun.Ident(away)); err != nil {
			t.Fatalf("rename %s away: %v", name, err)
		}
		fn(name)
		if _, err := db.ExecContext(ctx, "ALTER TABLE ? RENAME TO ?", bun.Ident(away), bun.Ident(name)); err != nil {
			t.Fatalf("rename %s back: %v", name, err)
		}
	}
	return tables
}

// Migrated is what TestMigrationChecked needs of a service: its name
// ("trash"), its constructor over db, its Migrate, the tables New names
// before Migrate ran (in New's order), and its newest migration's
// table, version and label ("deskkit_trash_migrations",
// "20261122000003", "20261122000003_trgm_no_pending_list").
type Migrated struct {
	Service        string
	New            func(db *bun.DB) error
	Migrate        func(ctx context.Context, db *bun.DB) error
	Tables         []string
	NewestTable    string
	NewestVersion  string
	NewestLabel    string
	AtLeastChecked int // tables WithoutEachTable must find
}

// TestMigrationChecked checks, on db, that m's New fails naming m's
// Migrate: before Migrate ran (every table named), with each table Migrate
// created missing alone, and with its newest migration not applied (a
// deskkit upgraded without Migrate run again); that New passes once
// Migrate ran again; and that over a closed pool its error is the
// database's, not advice to migrate.
func TestMigrationChecked(t *testing.T, db *bun.DB, m Migrated) {
	t.Helper()
	ctx := context.Background()
	run := fmt.Sprintf("run %s.Migrate(ctx, db) first", m.Service)
	want := fmt.Sprintf("%s.New: tables %s do not exist: %s", m.Service, strings.Join(m.Tables, ", "), run)
	if err := m.New(db); err == nil || err.Error() != want {
		t.Fatalf("New before Migrate = %v, want %q", err, want)
	}
	if err := m.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	checked := WithoutEachTable(t, db, func(table string) {
		want := fmt.Sprintf("%s.New: table %s does not exist: %s", m.Service, table, run)
		if err := m.New(db); err == nil || err.Error() != want {
			t.Errorf("New without %s = %v, want %q", table, err, want)
		}
	})
	if len(checked) < m.AtLeastChecked {
		t.Errorf("Migrate created the tables %v, want at least the %d New checks for", checked, m.AtLeastChecked)
	}
	if err := m.New(db); err != nil {
		t.Fatalf("New after Migrate: %v", err)
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM ? WHERE name = ?", bun.Ident(m.NewestTable), m.NewestVersion); err != nil {
		t.Fatal(err)
	}
	want = fmt.Sprintf("%s.New: 1 migration is not applied (%s): %s", m.Service, m.NewestLabel, run)
	if err := m.New(db); err == nil || err.Error() != want {
		t.Errorf("New without the newest migration = %v, want %q", err, want)
	}
	if err := m.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := m.New(db); err != nil {
		t.Fatalf("New after Migrate again: %v", err)
	}
	db.Close()
	if err := m.New(db); err == nil || strings.Contains(err.Error(), "Migrate") || !strings.HasPrefix(err.Error(), m.Service+".New: checking for its tables: ") {
		t.Fatalf("New over a closed pool = %v, want the database's error, not advice to migrate", err)
	}
}
