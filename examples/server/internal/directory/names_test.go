package directory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// Usernames and tenant names are unique without case: "ALICE" is alice.
func TestNamesUniqueWithoutCase(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		d := setup(t, db)
		acme, err := d.EnsureTenant(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if again, err := d.EnsureTenant(ctx, "ACME"); err != nil || again.ID != acme.ID || again.Name != "acme" {
			t.Fatalf("EnsureTenant(ACME) = %+v, %v; want the tenant acme", again, err)
		}
		alice, err := d.EnsureUserRole(ctx, acme.ID, "alice", directory.Role{})
		if err != nil {
			t.Fatal(err)
		}
		if again, err := d.EnsureUserRole(ctx, acme.ID, "ALICE", directory.Role{}); err != nil || again.ID != alice.ID || again.Username != "alice" {
			t.Fatalf("EnsureUserRole(ALICE) = %+v, %v; want the user alice", again, err)
		}
		bob, err := d.EnsureUserRole(ctx, acme.ID, "bob", directory.Role{})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"ALICE", "Alice", "aLiCe"} {
			if _, err := d.UpdateUser(ctx, nil, acme.ID, bob.ID, directory.Change{Username: &name}); !errors.Is(err, directory.ErrUsernameTaken) {
				t.Errorf("renaming bob to %q beside alice: %v, want ErrUsernameTaken", name, err)
			}
		}
		// A user may change the case of their own name.
		upper := "Alice"
		if u, err := d.UpdateUser(ctx, nil, acme.ID, alice.ID, directory.Change{Username: &upper}); err != nil || u.Username != "Alice" {
			t.Fatalf("renaming alice to Alice: %+v, %v", u, err)
		}
		// The same name in another tenant is another user.
		other, err := d.EnsureTenant(ctx, "globex")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.EnsureUserRole(ctx, other.ID, "ALICE", directory.Role{}); err != nil {
			t.Fatalf("ALICE in another tenant: %v", err)
		}
	})
}

// Invisible characters, spaces at the ends and bidirectional controls are
// refused in usernames and tenant names, naming the field.
func TestNamesRefuseLookalikes(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		d := setup(t, db)
		tn, err := d.EnsureTenant(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		u, err := d.EnsureUserRole(ctx, tn.ID, "wh2", directory.Role{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ name, rule string }{
			{"wh2\u200b", "invisible characters"},
			{"wh2 ", "must not begin or end with a space"},
			{"\u202Eecila", "bidirectional control characters"},
			{"ali\u2066ce", "bidirectional control characters"},
		} {
			check := func(what, field string, err error) {
				t.Helper()
				var ie *deskkit.InputError
				if !errors.As(err, &ie) || ie.Field != field || !strings.Contains(ie.Rule.String(), c.rule) {
					t.Errorf("%s %q: %v, want %s %s", what, c.name, err, field, c.rule)
				}
			}
			_, err := d.EnsureUserRole(ctx, tn.ID, c.name, directory.Role{})
			check("EnsureUserRole", "username", err)
			name := c.name
			_, err = d.UpdateUser(ctx, nil, tn.ID, u.ID, directory.Change{Username: &name})
			check("UpdateUser", "username", err)
			_, err = d.EnsureTenant(ctx, c.name)
			check("EnsureTenant", "name", err)
		}
		// Nothing was written.
		var n int
		if err := db.NewRaw("SELECT count(*) FROM deskkit_users").Scan(ctx, &n); err != nil || n != 1 {
			t.Fatalf("%d users (%v), want 1", n, err)
		}
		if got, err := d.User(ctx, tn.ID, u.ID); err != nil || got.Username != "wh2" {
			t.Fatalf("user after refused renames: %+v, %v", got, err)
		}
	})
}
