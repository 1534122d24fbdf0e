package dbtest

import (
	"context"
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
