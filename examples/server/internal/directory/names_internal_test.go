package directory

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/migrate"
)

// The migration that makes names unique without case meets a database that
// already holds names folding to one key: it keeps the older name, renames
// the newer with a numbered suffix, logs each rename, and starts.
func TestMigrationResolvesFoldedCollisions(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		// The schema before the migration: the SQL files alone.
		if err := migrate.Run(ctx, db, "deskkit_directory_migrations", migrationFiles); err != nil {
			t.Fatal(err)
		}
		at := func(min int) time.Time { return time.Date(2026, 1, 1, 0, min, 0, 0, time.UTC) }
		// Ids and ages disagree on purpose: age decides, not the id.
		tenants := []tenantRow{
			{ID: 1, Name: "ACME", CreatedAt: at(5)},
			{ID: 2, Name: "acme", CreatedAt: at(1)},
			{ID: 3, Name: "globex", CreatedAt: at(2)},
		}
		if _, err := db.NewInsert().Model(&tenants).ExcludeColumn("name_folded").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		users := []userRow{
			{ID: 10, TenantID: 2, Username: "ALICE", CreatedAt: at(3)},
			{ID: 11, TenantID: 2, Username: "alice", CreatedAt: at(2)},
			{ID: 12, TenantID: 2, Username: "alice (2)", CreatedAt: at(9)}, // younger, but no collision: keeps its name
			{ID: 13, TenantID: 2, Username: "Alice", CreatedAt: at(4)},
			{ID: 14, TenantID: 2, Username: "wh2", CreatedAt: at(1)},
			{ID: 15, TenantID: 2, Username: "wh2\u200b", CreatedAt: at(6)},
			{ID: 16, TenantID: 3, Username: "alice", CreatedAt: at(7)}, // another tenant
		}
		if _, err := db.NewInsert().Model(&users).ExcludeColumn("username_folded").Exec(ctx); err != nil {
			t.Fatal(err)
		}

		var buf bytes.Buffer
		if err := migrateLogged(ctx, db, slog.New(slog.NewJSONHandler(&buf, nil))); err != nil {
			t.Fatalf("migrate over collisions: %v", err)
		}

		var gotTenants []tenantRow
		if err := db.NewSelect().Model(&gotTenants).Column("id", "name", "name_folded").Order("id").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		wantTenants := []tenantRow{
			{ID: 1, Name: "ACME (2)", NameFolded: "acme (2)"},
			{ID: 2, Name: "acme", NameFolded: "acme"},
			{ID: 3, Name: "globex", NameFolded: "globex"},
		}
		if diff := cmp.Diff(wantTenants, gotTenants); diff != "" {
			t.Errorf("tenants (-want +got):\n%s", diff)
		}
		var gotUsers []userRow
		if err := db.NewSelect().Model(&gotUsers).Column("id", "username", "username_folded").Order("id").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		wantUsers := []userRow{
			{ID: 10, Username: "ALICE (3)", UsernameKey: "alice (3)"},
			{ID: 11, Username: "alice", UsernameKey: "alice"},
			{ID: 12, Username: "alice (2)", UsernameKey: "alice (2)"},
			{ID: 13, Username: "Alice (4)", UsernameKey: "alice (4)"},
			{ID: 14, Username: "wh2", UsernameKey: "wh2"},
			{ID: 15, Username: "wh2 (2)", UsernameKey: "wh2 (2)"},
			{ID: 16, Username: "alice", UsernameKey: "alice"},
		}
		if diff := cmp.Diff(wantUsers, gotUsers); diff != "" {
			t.Errorf("users (-want +got):\n%s", diff)
		}

		type report struct {
			Table, OldName, NewName, KeptName string
			KeptID, RenamedID                 int64
		}
		var got []report
		for line := range bytes.Lines(buf.Bytes()) {
			var r struct {
				Level     string `json:"level"`
				Table     string `json:"table"`
				OldName   string `json:"old_name"`
				NewName   string `json:"new_name"`
				KeptName  string `json:"kept_name"`
				KeptID    int64  `json:"kept_id"`
				RenamedID int64  `json:"renamed_id"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("log line %s: %v", line, err)
			}
			if r.Level != "WARN" {
				t.Errorf("logged at %s, want WARN: %s", r.Level, line)
			}
			got = append(got, report{r.Table, r.OldName, r.NewName, r.KeptName, r.KeptID, r.RenamedID})
		}
		want := []report{
			{"deskkit_tenants", "ACME", "ACME (2)", "acme", 2, 1},
			{"deskkit_users", "ALICE", "ALICE (3)", "alice", 11, 10},
			{"deskkit_users", "Alice", "Alice (4)", "alice", 11, 13},
			{"deskkit_users", "wh2\u200b", "wh2 (2)", "wh2", 14, 15},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("reported collisions (-want +got):\n%s", diff)
		}

		// The index holds from now on, and the directory finds the names.
		d, err := New(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		if u, err := d.EnsureUserRole(ctx, 2, "ALICE", Role{}); err != nil || u.ID != 11 {
			t.Errorf("EnsureUserRole(ALICE) = %+v, %v; want user 11", u, err)
		}
		if _, err := db.NewUpdate().Model((*userRow)(nil)).Set("username_folded = 'alice'").Where("id = 13").Exec(ctx); takenError(err) != ErrUsernameTaken {
			t.Errorf("a second key alice in tenant 2: %v, want the index to refuse it", err)
		}
		// Running the migrations again changes nothing.
		buf.Reset()
		if err := migrateLogged(ctx, db, slog.New(slog.NewJSONHandler(&buf, nil))); err != nil || buf.Len() != 0 {
			t.Errorf("second run: %v, logged %q", err, buf.String())
		}
	})
}
