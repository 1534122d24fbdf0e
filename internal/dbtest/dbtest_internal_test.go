package dbtest

import (
	"context"
	"net/url"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/verify"
)

// A test database that already holds deskkit's tables in public (an
// installation, or a developer's server pointed at it) is invisible to the
// tests: each sees its own schema only. Here a database of its own plays
// that test database, so that the tables in its public schema never meet
// the tests of other packages running at the same time.
func TestSchemaSeesOnlyItself(t *testing.T) {
	dsn := RequirePostgres(t)
	ctx := context.Background()
	admin := database.OpenPostgres(dsn, adminPool)
	defer admin.Close()
	name := "deskkit_dbtest_" + randomHex(6)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE ?", bun.Ident(name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin := database.OpenPostgres(dsn, adminPool)
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE ? WITH (FORCE)", bun.Ident(name)); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	other := u.String()

	// deskkit installed in public, as the reference server does; the
	// trash's migration creates pg_trgm there too.
	public := database.OpenPostgres(other, database.Options{MaxOpenConns: 2})
	migrateAll(t, public)
	public.Close()

	db := openPostgresAt(t, other)
	var path string
	if err := db.NewRaw("SHOW search_path").Scan(ctx, &path); err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := db.NewRaw("SELECT current_schema()").Scan(ctx, &schema); err != nil {
		t.Fatal(err)
	}
	if path != `"`+schema+`"` && path != schema {
		t.Errorf("search_path = %s, want the test schema %s alone", path, schema)
	}
	var ext string
	if err := db.NewRaw("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'").Scan(ctx, &ext); err != nil || ext != "pg_catalog" {
		t.Errorf("pg_trgm in %q (%v), want pg_catalog", ext, err)
	}
	// Every migration works there, the trash's trigram index included.
	migrateAll(t, db)
	for _, table := range []string{"deskkit_verify_limits", "deskkit_channels", "deskkit_trash"} {
		if _, err := db.ExecContext(ctx, "DROP TABLE ? CASCADE", bun.Ident(table)); err != nil {
			t.Fatal(err)
		}
		// A test that dropped its table must not find public's instead.
		if _, err := db.ExecContext(ctx, "SELECT 1 FROM ?", bun.Ident(table)); err == nil {
			t.Errorf("%s: the test schema dropped it but still reads one (public's)", table)
		}
	}
}

func migrateAll(t *testing.T, db *bun.DB) {
	t.Helper()
	ctx := context.Background()
	for name, migrate := range map[string]func(context.Context, *bun.DB) error{
		"trash": trash.Migrate, "verify": verify.Migrate, "channel": channel.Migrate,
	} {
		if err := migrate(ctx, db); err != nil {
			t.Fatalf("migrate %s: %v", name, err)
		}
	}
}
