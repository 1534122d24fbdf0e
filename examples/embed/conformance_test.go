package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/deskkit/deskkit/verify/verifytest"
)

// The host's users store passes deskkit's conformance suite for a
// verify.Directory, over its real tables.
func TestHostUsersConformance(t *testing.T) {
	verifytest.RunDirectoryTests(t, func(t *testing.T) verifytest.DirectoryHarness {
		db, err := openDB(filepath.Join(t.TempDir(), "embed.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		ctx := context.Background()
		for _, stmt := range usersSchema {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		return verifytest.DirectoryHarness{
			Directory: hostUsers{db},
			DB:        db,
			AddTenant: func(ctx context.Context, name string) (int64, error) {
				row := tenantRow{Name: name}
				_, err := db.NewInsert().Model(&row).ExcludeColumn("id").Returning("id").Exec(ctx)
				return row.ID, err
			},
			AddUser: func(ctx context.Context, tenantID int64, username string) (int64, error) {
				row := userRow{TenantID: tenantID, Username: username}
				_, err := db.NewInsert().Model(&row).ExcludeColumn("id").Returning("id").Exec(ctx)
				return row.ID, err
			},
		}
	})
}
