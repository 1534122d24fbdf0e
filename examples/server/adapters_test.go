package main

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/verify"
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
		got, err := trashUsers{dir}.ResolveUsers(ctx, db, ada.TenantID, []int64{ada.ID, bea.ID, eve.ID, 987654})
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

// verifyUsers serves the Verifier the directory's users in its vocabulary,
// and the directory's errors match the classes the Verifier expects.
func TestVerifyUsers(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := directory.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		dir, err := directory.New(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		tn, err := dir.EnsureTenant(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		other, err := dir.EnsureTenant(ctx, "other")
		if err != nil {
			t.Fatal(err)
		}
		user := func(tenantID int64, name string) directory.User {
			t.Helper()
			u, err := dir.EnsureUserRole(ctx, tenantID, name, directory.Role{})
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		ann, bob, eve := user(tn.ID, "ann"), user(tn.ID, "bob"), user(other.ID, "eve")
		users := verifyUsers{dir}
		s := func(v string) *string { return &v }

		if err := users.UpdateProfile(ctx, nil, tn.ID, ann.ID, verify.Profile{
			Username: s("ann.lee"), FirstName: s("Ann"), LastName: s("Lee"), FullName: s("Ann Lee"),
			Landline: s("+86 10 12345678"), Avatar: s("https://example.com/ann.png"), Title: s("Engineer"),
			Gender: s("FEMALE"), Address: s("Beijing"),
		}); err != nil {
			t.Fatal(err)
		}
		if err := users.SetMobile(ctx, nil, tn.ID, ann.ID, "", "+8613800138000", "CN"); err != nil {
			t.Fatal(err)
		}
		if err := users.SetEmail(ctx, nil, tn.ID, ann.ID, "", "Ann@example.com"); err != nil {
			t.Fatal(err)
		}
		got, err := users.User(ctx, tn.ID, ann.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := verify.User{
			ID: ann.ID, TenantID: tn.ID, Username: "ann.lee", FirstName: "Ann", LastName: "Lee", FullName: "Ann Lee",
			Mobile: "+8613800138000", Country: "CN", Email: "Ann@example.com", Landline: "+86 10 12345678",
			Avatar: "https://example.com/ann.png", Title: "Engineer", Gender: "FEMALE", Address: "Beijing",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("User (-want +got):\n%s", diff)
		}
		// A cleared full name stays cleared for the Verifier.
		if err := users.UpdateProfile(ctx, nil, tn.ID, ann.ID, verify.Profile{FullName: s("")}); err != nil {
			t.Fatal(err)
		}
		if got, err := users.User(ctx, tn.ID, ann.ID); err != nil || got.FullName != "" || got.FirstName != "Ann" {
			t.Errorf("after clearing the full name: %+v, %v", got, err)
		}

		if got, err := users.Tenant(ctx, tn.ID); err != nil || got != (verify.Tenant{ID: tn.ID, Name: "acme"}) {
			t.Errorf("Tenant = %+v, %v", got, err)
		}

		for _, c := range []struct {
			name     string
			tenantID int64
			kind     verify.Kind
			address  string
			want     int64
		}{
			{"mobile", tn.ID, verify.KindSMS, "+8613800138000", ann.ID},
			{"email", tn.ID, verify.KindEmail, "Ann@example.com", ann.ID},
			{"email, domain in another case", tn.ID, verify.KindEmail, "Ann@EXAMPLE.com", ann.ID},
			{"email, local part in another case", tn.ID, verify.KindEmail, "ann@example.com", 0},
			{"mobile nobody has", tn.ID, verify.KindSMS, "+8613900139000", 0},
			{"another tenant", other.ID, verify.KindSMS, "+8613800138000", 0},
		} {
			if got, err := users.Holder(ctx, c.tenantID, c.kind, c.address); err != nil || got != c.want {
				t.Errorf("Holder(%s) = %d, %v; want %d", c.name, got, err, c.want)
			}
		}

		for _, c := range []struct {
			name string
			call func() error
			want error
		}{
			{"unknown user", func() error { _, err := users.User(ctx, tn.ID, 987654); return err }, deskkit.ErrNotFound},
			{"user of another tenant", func() error { _, err := users.User(ctx, tn.ID, eve.ID); return err }, deskkit.ErrNotFound},
			{"unknown tenant", func() error { _, err := users.Tenant(ctx, 987654); return err }, deskkit.ErrNotFound},
			{"profile of an unknown user", func() error {
				return users.UpdateProfile(ctx, nil, tn.ID, 987654, verify.Profile{Title: s("x")})
			}, deskkit.ErrNotFound},
			{"a username taken", func() error {
				return users.UpdateProfile(ctx, nil, tn.ID, bob.ID, verify.Profile{Username: s("ann.lee")})
			}, deskkit.ErrConflict},
			{"a mobile another user holds", func() error {
				return users.SetMobile(ctx, nil, tn.ID, bob.ID, "", "+8613800138000", "CN")
			}, deskkit.ErrConflict},
			{"an email another user holds", func() error {
				return users.SetEmail(ctx, nil, tn.ID, bob.ID, "", "Ann@Example.com")
			}, deskkit.ErrConflict},
			{"an email changed meanwhile", func() error {
				return users.SetEmail(ctx, nil, tn.ID, ann.ID, "old@example.com", "new@example.com")
			}, deskkit.ErrConflict},
			{"a mobile changed meanwhile", func() error {
				return users.SetMobile(ctx, nil, tn.ID, ann.ID, "", "+8613900139000", "CN")
			}, deskkit.ErrConflict},
		} {
			if err := c.call(); !errors.Is(err, c.want) {
				t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
			}
		}
		if got, _ := dir.User(ctx, tn.ID, bob.ID); got != bob {
			t.Errorf("refused changes changed bob: %+v", got)
		}

		// A change inside the Verifier's transaction goes with it.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := users.SetEmail(ctx, tx, tn.ID, bob.ID, "", "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if got, _ := dir.User(ctx, tn.ID, bob.ID); got != bob {
			t.Errorf("a rolled-back SetEmail changed bob: %+v", got)
		}
		if got, err := users.Holder(ctx, tn.ID, verify.KindEmail, "bob@example.com"); err != nil || got != 0 {
			t.Errorf("Holder after rollback = %d, %v; want 0", got, err)
		}
	})
}
