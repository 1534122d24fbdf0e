package directory_test

import (
	"context"
	"errors"
	"go/build"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/dbtest"
)

func TestContacts(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		d := setup(t, db)
		tn, err := d.EnsureTenant(ctx, "contacts")
		if err != nil {
			t.Fatal(err)
		}
		other, err := d.EnsureTenant(ctx, "contacts-other")
		if err != nil {
			t.Fatal(err)
		}
		user := func(tenantID int64, name string) directory.User {
			t.Helper()
			u, err := d.EnsureUserRole(ctx, tenantID, name, directory.Role{})
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		ann, bob, eve := user(tn.ID, "ann"), user(tn.ID, "bob"), user(other.ID, "eve")
		// Users without contacts share the NULLs.
		if diff := cmp.Diff(directory.Contacts{}, ann.Contacts()); diff != "" {
			t.Errorf("new user's contacts (-want +got):\n%s", diff)
		}

		got, err := d.SetContacts(ctx, tn.ID, ann.ID, directory.Contacts{Mobile: "+4915112345678", Country: "DE", Email: " Ann@Example.COM "})
		if err != nil {
			t.Fatal(err)
		}
		// Trimmed, the domain lower-cased; the local part keeps its case.
		want := directory.Contacts{Mobile: "+4915112345678", Country: "DE", Email: "Ann@example.com"}
		if diff := cmp.Diff(want, got.Contacts()); diff != "" {
			t.Errorf("set contacts (-want +got):\n%s", diff)
		}
		stored, err := d.User(ctx, tn.ID, ann.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got, stored); diff != "" {
			t.Errorf("stored user (-returned +stored):\n%s", diff)
		}
		if u, err := d.UserByMobile(ctx, tn.ID, "+4915112345678"); err != nil || u.ID != ann.ID {
			t.Errorf("UserByMobile = %+v, %v; want ann", u, err)
		}
		if u, err := d.UserByEmail(ctx, tn.ID, "\tAnn@EXAMPLE.com "); err != nil || u.ID != ann.ID {
			t.Errorf("UserByEmail = %+v, %v; want ann", u, err)
		}
		// The holders: the same questions, answering the id alone, 0 for
		// none.
		for name, tc := range map[string]struct {
			holder func() (int64, error)
			want   int64
		}{
			"mobile":                   {func() (int64, error) { return d.MobileHolder(ctx, tn.ID, "+4915112345678") }, ann.ID},
			"email":                    {func() (int64, error) { return d.EmailHolder(ctx, tn.ID, "\tAnn@EXAMPLE.com ") }, ann.ID},
			"mobile in another tenant": {func() (int64, error) { return d.MobileHolder(ctx, other.ID, "+4915112345678") }, 0},
			"email in another case":    {func() (int64, error) { return d.EmailHolder(ctx, tn.ID, "ann@example.com") }, 0},
			"empty mobile":             {func() (int64, error) { return d.MobileHolder(ctx, tn.ID, "") }, 0},
			"empty email":              {func() (int64, error) { return d.EmailHolder(ctx, tn.ID, "") }, 0},
		} {
			if id, err := tc.holder(); err != nil || id != tc.want {
				t.Errorf("holder of %s = %d, %v; want %d", name, id, err, tc.want)
			}
		}
		for name, lookup := range map[string]func() error{
			"mobile in another tenant": func() error { _, err := d.UserByMobile(ctx, other.ID, "+4915112345678"); return err },
			"unknown email":            func() error { _, err := d.UserByEmail(ctx, tn.ID, "nobody@example.com"); return err },
			"email in another case":    func() error { _, err := d.UserByEmail(ctx, tn.ID, "ann@example.com"); return err },
			"empty mobile":             func() error { _, err := d.UserByMobile(ctx, tn.ID, ""); return err },
			"empty email":              func() error { _, err := d.UserByEmail(ctx, tn.ID, ""); return err },
		} {
			if err := lookup(); !errors.Is(err, directory.ErrNotFound) {
				t.Errorf("%s: err = %v, want ErrNotFound", name, err)
			}
		}

		// Each address belongs to one user of a tenant, the domain compared
		// without case.
		if _, err := d.SetContacts(ctx, tn.ID, bob.ID, directory.Contacts{Mobile: "+4915112345678"}); !errors.Is(err, directory.ErrMobileTaken) || !errors.Is(err, deskkit.ErrConflict) {
			t.Errorf("taken mobile: err = %v, want ErrMobileTaken", err)
		}
		if _, err := d.SetContacts(ctx, tn.ID, bob.ID, directory.Contacts{Email: "Ann@EXAMPLE.com"}); !errors.Is(err, directory.ErrEmailTaken) {
			t.Errorf("taken email: err = %v, want ErrEmailTaken", err)
		}
		if u, _ := d.User(ctx, tn.ID, bob.ID); u.Contacts() != (directory.Contacts{}) {
			t.Errorf("a refused SetContacts changed bob: %+v", u.Contacts())
		}
		// The index refuses a duplicate even when the check is bypassed.
		if _, err := db.NewUpdate().Table("deskkit_users").Set("email = ?", "Ann@example.com").Where("id = ?", bob.ID).Exec(ctx); err == nil {
			t.Error("the database stored one e-mail address for two users of a tenant")
		}
		// The same addresses in another tenant, and for the same user again.
		if _, err := d.SetContacts(ctx, other.ID, eve.ID, want); err != nil {
			t.Errorf("another tenant's user: %v", err)
		}
		if _, err := d.SetContacts(ctx, tn.ID, ann.ID, want); err != nil {
			t.Errorf("setting ann's own addresses again: %v", err)
		}
		// Clearing frees an address.
		if u, err := d.SetContacts(ctx, tn.ID, ann.ID, directory.Contacts{Country: "FR"}); err != nil || u.Contacts() != (directory.Contacts{Country: "FR"}) {
			t.Errorf("clear: %+v, %v", u.Contacts(), err)
		}
		if _, err := d.SetContacts(ctx, tn.ID, bob.ID, want); err != nil {
			t.Errorf("a freed address: %v", err)
		}
		if _, err := d.SetContacts(ctx, tn.ID, 987654, directory.Contacts{}); !errors.Is(err, directory.ErrNotFound) {
			t.Errorf("unknown user: err = %v, want ErrNotFound", err)
		}
		if _, err := d.SetContacts(ctx, other.ID, ann.ID, directory.Contacts{}); !errors.Is(err, directory.ErrNotFound) {
			t.Errorf("user of another tenant: err = %v, want ErrNotFound", err)
		}

		for _, c := range []struct {
			contacts directory.Contacts
			field    string
		}{
			{directory.Contacts{Mobile: "015112345678"}, "mobile"},
			{directory.Contacts{Mobile: "+0151"}, "mobile"},
			{directory.Contacts{Mobile: "+1"}, "mobile"},
			{directory.Contacts{Mobile: "+1234567890123456"}, "mobile"},
			{directory.Contacts{Mobile: "+49 151 12345678"}, "mobile"},
			{directory.Contacts{Country: "de"}, "country"},
			{directory.Contacts{Country: "DEU"}, "country"},
			{directory.Contacts{Email: "ann"}, "email"},
			{directory.Contacts{Email: "@example.com"}, "email"},
			{directory.Contacts{Email: "ann@"}, "email"},
			{directory.Contacts{Email: "Ann <ann@example.com>"}, "email"},
			{directory.Contacts{Email: "ann@exa\x00mple.com"}, "email"},
			{directory.Contacts{Email: strings.Repeat("a", 250) + "@x.de"}, "email"},
		} {
			_, err := d.SetContacts(ctx, tn.ID, bob.ID, c.contacts)
			var in *deskkit.InputError
			if !errors.As(err, &in) || in.Field != c.field {
				t.Errorf("%+v: err = %v, want an input error on %s", c.contacts, err, c.field)
			}
		}
	})
}

// The directory serves every service of the reference server, so it must
// import none: only the root package, bun and deskkit's internal helpers.
func TestImportsNoService(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		switch {
		case !strings.Contains(imp, "."): // the standard library
		case imp == "github.com/deskkit/deskkit",
			strings.HasPrefix(imp, "github.com/deskkit/deskkit/internal/"),
			imp == "github.com/uptrace/bun":
		default:
			t.Errorf("directory imports %s; it may import only deskkit, bun and deskkit/internal/...", imp)
		}
	}
}
