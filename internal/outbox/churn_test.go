package outbox

import (
	"context"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/deskkit/deskkit/internal/dbtest"
	dkmigrate "github.com/deskkit/deskkit/internal/migrate"
)

// leanVersion is the migration that sets the tables' storage parameters.
const leanVersion = "20261202000002"

// leanOptions are the storage parameters the migration sets, by table, as
// pg_class.reloptions lists them.
var leanOptions = map[string][]string{
	"deskkit_outbox_deliveries": {
		"autovacuum_analyze_scale_factor=0", "autovacuum_analyze_threshold=20000",
		"autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=10000",
		"vacuum_index_cleanup=on",
	},
	"deskkit_outbox_events":   {"autovacuum_vacuum_insert_scale_factor=0.05", "autovacuum_vacuum_scale_factor=0.05"},
	"deskkit_outbox_attempts": {"autovacuum_vacuum_insert_scale_factor=0.05", "autovacuum_vacuum_scale_factor=0.05"},
	"deskkit_outbox_targets":  targetsOptions,
	"deskkit_outbox_workers":  nil,
	"deskkit_outbox_bodies":   bodiesOptions,
}

// bodiesOptions are deskkit_outbox_bodies' own, set by the migration that
// creates it (20261207000001_inspection): written once, deleted by age.
var bodiesOptions = []string{"autovacuum_vacuum_insert_scale_factor=0.05", "autovacuum_vacuum_scale_factor=0.05"}

// targetsOptions are deskkit_outbox_targets' own, set by the migration
// that creates it (20261203000001_target_flow): its updates are HOT.
var targetsOptions = []string{"fillfactor=70"}

// reloptions returns the storage parameters of each outbox table, sorted,
// from the catalog (the tables of the schema the pool searches).
func reloptions(t *testing.T, db *bun.DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range Tables {
		var s string
		err := db.NewRaw("SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = to_regclass(?)", table).
			Scan(context.Background(), &s)
		if err != nil {
			t.Fatalf("reloptions of %s: %v", table, err)
		}
		var opts []string
		if s != "" {
			opts = strings.Split(s, ",")
		}
		slices.Sort(opts)
		out[table] = opts
	}
	return out
}

// withoutLean is the outbox's migrations but the lean tables' one.
func withoutLean(t *testing.T) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	err := fs.WalkDir(migrationFiles, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, leanVersion) {
			return err
		}
		b, err := fs.ReadFile(migrationFiles, path)
		out[path] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLeanTables: Migrate sets the tables' storage parameters (autovacuum
// by churn, the deliveries' index cleanup) on PostgreSQL,
// its down migration resets them to the server's defaults, and it runs on
// SQLite, where it does nothing.
func TestLeanTables(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		d, err := dkmigrate.DialectOf(db)
		if err != nil {
			t.Fatal(err)
		}
		// The tables as they were before the migration, then the
		// migration alone, in a group of its own: a rollback undoes it and
		// nothing else.
		if err := dkmigrate.Run(ctx, db, Migrations.Table, withoutLean(t)); err != nil {
			t.Fatal(err)
		}
		empty := map[string][]string{}
		for _, table := range Tables {
			empty[table] = nil
		}
		empty["deskkit_outbox_targets"] = targetsOptions
		empty["deskkit_outbox_bodies"] = bodiesOptions
		if d.Postgres {
			if got := reloptions(t, db); !maps.EqualFunc(got, empty, slices.Equal) {
				t.Fatalf("before the migration: %v; want none", got)
			}
		}
		migrated(t, db)
		if d.Postgres {
			if got := reloptions(t, db); !maps.EqualFunc(got, leanOptions, slices.Equal) {
				t.Errorf("after Migrate:\n got %v\nwant %v", got, leanOptions)
			}
		}

		ms, err := dkmigrate.Migrations(d, Migrations.FS)
		if err != nil {
			t.Fatal(err)
		}
		m := migrate.NewMigrator(db, ms, migrate.WithTableName(Migrations.Table),
			migrate.WithLocksTableName(Migrations.Table+"_locks"), migrate.WithTemplateData(d))
		group, err := m.Rollback(ctx)
		if err != nil {
			t.Fatalf("rollback: %v", err)
		}
		if names := group.Migrations.String(); !strings.Contains(names, leanVersion) || len(group.Migrations) != 1 {
			t.Fatalf("rolled back %s; want %s alone", names, leanVersion)
		}
		if d.Postgres {
			if got := reloptions(t, db); !maps.EqualFunc(got, empty, slices.Equal) {
				t.Errorf("after the rollback: %v; want none", got)
			}
		}
		// The tables are still there, and the migration applies again.
		if _, err := db.NewSelect().Table("deskkit_outbox_deliveries").ColumnExpr("count(*)").Exec(ctx); err != nil {
			t.Errorf("deliveries after the rollback: %v", err)
		}
		migrated(t, db)
		if d.Postgres {
			if got := reloptions(t, db); !maps.EqualFunc(got, leanOptions, slices.Equal) {
				t.Errorf("after Migrate again:\n got %v\nwant %v", got, leanOptions)
			}
		}
	})
}
