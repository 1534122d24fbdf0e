package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/directory"
)

// trashUsers hands the trash the directory's display names and avatars, in
// the caller's tenant only.
func TestTrashUsers(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := directory.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		dir, err := directory.New(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		user := func(tenant, name string) directory.User {
			t.Helper()
			tn, err := dir.EnsureTenant(ctx, tenant)
			if err != nil {
				t.Fatal(err)
			}
			u, err := dir.EnsureUserRole(ctx, tn.ID, name, directory.Role{})
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		ada, bea, eve := user("a", "ada"), user("a", "bea"), user("b", "eve")
		if _, err := dir.UpdateProfile(ctx, ada.TenantID, ada.ID, directory.Profile{DisplayName: "Ada Lovelace", Avatar: "https://example.com/ada.png"}); err != nil {
			t.Fatal(err)
		}
		got, err := trashUsers{dir}.ResolveUsers(ctx, ada.TenantID, []int64{ada.ID, bea.ID, eve.ID, 987654})
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]deskkit.UserInfo{
			ada.ID: {Name: "Ada Lovelace", Avatar: "https://example.com/ada.png"},
			bea.ID: {Name: "bea"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ResolveUsers (-want +got):\n%s", diff)
		}
	})
}
