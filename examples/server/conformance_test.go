package main

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/directory"
	"github.com/deskkit/deskkit/verify/verifytest"
)

// The reference server's directory adapter passes deskkit's conformance
// suite for a verify.Directory, on both databases.
func TestVerifyUsersConformance(t *testing.T) {
	for _, b := range []struct {
		name string
		open func(testing.TB) *bun.DB
	}{{"sqlite", dbtest.OpenSQLite}, {"postgres", dbtest.OpenPostgres}} {
		t.Run(b.name, func(t *testing.T) {
			verifytest.RunDirectoryTests(t, func(t *testing.T) verifytest.DirectoryHarness {
				db := b.open(t)
				ctx := context.Background()
				if err := directory.Migrate(ctx, db); err != nil {
					t.Fatal(err)
				}
				dir, err := directory.New(db, nil)
				if err != nil {
					t.Fatal(err)
				}
				return verifytest.DirectoryHarness{
					Directory: verifyUsers{dir},
					DB:        db,
					AddTenant: func(ctx context.Context, name string) (int64, error) {
						tn, err := dir.EnsureTenant(ctx, name)
						return tn.ID, err
					},
					AddUser: func(ctx context.Context, tenantID int64, username string) (int64, error) {
						u, err := dir.EnsureUserRole(ctx, tenantID, username, directory.Role{})
						return u.ID, err
					},
				}
			})
		})
	}
}
