package verifytest

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/verify"
)

// DirectoryHarness is what RunDirectoryTests needs of a host: its
// directory, the database the directory writes through, and a way to make
// tenants and users in the host's own store.
type DirectoryHarness struct {
	// Directory is the host's verify.Directory under test.
	Directory verify.Directory
	// DB is the database the Directory's tables live in. The suite runs
	// every UserWriter call in a transaction of it, as the Verifier does.
	DB *bun.DB
	// AddTenant stores a tenant named name and returns its id.
	AddTenant func(ctx context.Context, name string) (int64, error)
	// AddUser stores a user of tenantID with username and no mobile or
	// e-mail address, and returns its id.
	AddUser func(ctx context.Context, tenantID int64, username string) (int64, error)
}

// RunDirectoryTests checks a host's verify.Directory against the contract
// the Verifier relies on (see verify.UserReader and verify.UserWriter):
// users and tenants of another tenant do not exist (deskkit.ErrNotFound);
// Holder finds addresses within a tenant only; UpdateProfile changes only
// the fields it is given and refuses a username another user has
// (deskkit.ErrConflict); SetMobile and SetEmail change an address only if
// it is still the old one and nobody else of the tenant has the new one
// (deskkit.ErrConflict); and every write goes through the transaction it is
// handed, so that a rollback undoes it.
//
// newHarness is called once per subtest, with that subtest's t; each call
// should give a directory over an empty store (a fresh database or
// schema), which the host may clean up with t.Cleanup.
func RunDirectoryTests(t *testing.T, newHarness func(t *testing.T) DirectoryHarness) {
	t.Helper()
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s *dirSuite)
	}{
		{"UserAndTenant", testUserAndTenant},
		{"SetAddressAndHolder", testSetAddressAndHolder},
		{"SetAddressGuards", testSetAddressGuards},
		{"UpdateProfile", testUpdateProfile},
		{"WritesRollBack", testWritesRollBack},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			s := &dirSuite{h: h, ctx: context.Background()}
			s.acme = s.tenant(t, "acme")
			s.other = s.tenant(t, "other")
			s.ann = s.user(t, s.acme, "ann")
			s.bob = s.user(t, s.acme, "bob")
			s.zed = s.user(t, s.other, "zed")
			c.run(t, s)
		})
	}
}

type dirSuite struct {
	h             DirectoryHarness
	ctx           context.Context
	acme, other   int64
	ann, bob, zed int64
}

func (s *dirSuite) tenant(t *testing.T, name string) int64 {
	t.Helper()
	id, err := s.h.AddTenant(s.ctx, name)
	if err != nil || id < 1 {
		t.Fatalf("AddTenant(%q) = %d, %v", name, id, err)
	}
	return id
}

func (s *dirSuite) user(t *testing.T, tenantID int64, username string) int64 {
	t.Helper()
	id, err := s.h.AddUser(s.ctx, tenantID, username)
	if err != nil || id < 1 {
		t.Fatalf("AddUser(%d, %q) = %d, %v", tenantID, username, id, err)
	}
	return id
}

// write runs fn in a transaction, as the Verifier runs a UserWriter call.
func (s *dirSuite) write(fn func(tx bun.Tx) error) error {
	return deskkit.RunInTx(s.ctx, s.h.DB, nil, func(_ context.Context, tx bun.Tx) error { return fn(tx) })
}

func (s *dirSuite) get(t *testing.T, tenantID, userID int64) verify.User {
	t.Helper()
	u, err := s.h.Directory.User(s.ctx, tenantID, userID)
	if err != nil {
		t.Fatalf("User(%d, %d): %v", tenantID, userID, err)
	}
	return u
}

func testUserAndTenant(t *testing.T, s *dirSuite) {
	d := s.h.Directory
	u := s.get(t, s.acme, s.ann)
	if u.ID != s.ann || u.TenantID != s.acme || u.Username != "ann" || u.Mobile != "" || u.Email != "" {
		t.Errorf("User(ann) = %+v; want id %d, tenant %d, username ann, no addresses", u, s.ann, s.acme)
	}
	if _, err := d.User(s.ctx, s.other, s.ann); !errors.Is(err, deskkit.ErrNotFound) {
		t.Errorf("User of another tenant: %v, want deskkit.ErrNotFound", err)
	}
	if _, err := d.User(s.ctx, s.acme, s.zed+1_000_000); !errors.Is(err, deskkit.ErrNotFound) {
		t.Errorf("User of an unknown id: %v, want deskkit.ErrNotFound", err)
	}
	tn, err := d.Tenant(s.ctx, s.acme)
	if err != nil || tn.ID != s.acme || tn.Name != "acme" {
		t.Errorf("Tenant(acme) = %+v, %v", tn, err)
	}
	if _, err := d.Tenant(s.ctx, s.other+1_000_000); !errors.Is(err, deskkit.ErrNotFound) {
		t.Errorf("Tenant of an unknown id: %v, want deskkit.ErrNotFound", err)
	}
}

func testSetAddressAndHolder(t *testing.T, s *dirSuite) {
	d := s.h.Directory
	const mobile, email = "+8613800138000", "ann@example.com"
	err := s.write(func(tx bun.Tx) error {
		if err := d.SetMobile(s.ctx, tx, s.acme, s.ann, "", mobile, "CN"); err != nil {
			return err
		}
		return d.SetEmail(s.ctx, tx, s.acme, s.ann, "", email)
	})
	if err != nil {
		t.Fatalf("SetMobile and SetEmail: %v", err)
	}
	if u := s.get(t, s.acme, s.ann); u.Mobile != mobile || u.Country != "CN" || u.Email != email {
		t.Errorf("after the sets, ann = %+v", u)
	}
	for _, c := range []struct {
		tenantID int64
		k        verify.Kind
		address  string
		want     int64
	}{
		{s.acme, verify.KindSMS, mobile, s.ann},
		{s.acme, verify.KindEmail, email, s.ann},
		{s.acme, verify.KindEmail, "nobody@example.com", 0},
		{s.other, verify.KindSMS, mobile, 0}, // addresses are per tenant
		{s.other, verify.KindEmail, email, 0},
	} {
		if got, err := d.Holder(s.ctx, c.tenantID, c.k, c.address); err != nil || got != c.want {
			t.Errorf("Holder(%d, %s, %s) = %d, %v; want %d", c.tenantID, c.k, c.address, got, err, c.want)
		}
	}
	// Another tenant may hold the same address.
	if err := s.write(func(tx bun.Tx) error { return d.SetEmail(s.ctx, tx, s.other, s.zed, "", email) }); err != nil {
		t.Errorf("the same e-mail address in another tenant: %v", err)
	}
}

func testSetAddressGuards(t *testing.T, s *dirSuite) {
	d := s.h.Directory
	if err := s.write(func(tx bun.Tx) error { return d.SetEmail(s.ctx, tx, s.acme, s.ann, "", "ann@example.com") }); err != nil {
		t.Fatalf("SetEmail: %v", err)
	}
	for _, c := range []struct {
		name string
		fn   func(tx bun.Tx) error
	}{
		{"an address another user has", func(tx bun.Tx) error {
			return d.SetEmail(s.ctx, tx, s.acme, s.bob, "", "ann@example.com")
		}},
		{"an old address that is no longer the user's", func(tx bun.Tx) error {
			return d.SetEmail(s.ctx, tx, s.acme, s.ann, "old@example.com", "new@example.com")
		}},
		{"a mobile number with a stale old one", func(tx bun.Tx) error {
			return d.SetMobile(s.ctx, tx, s.acme, s.ann, "+8613800138000", "+8613900139000", "CN")
		}},
	} {
		if err := s.write(c.fn); !errors.Is(err, deskkit.ErrConflict) {
			t.Errorf("%s: %v, want deskkit.ErrConflict", c.name, err)
		}
	}
	if u := s.get(t, s.acme, s.ann); u.Email != "ann@example.com" || u.Mobile != "" {
		t.Errorf("after refused sets, ann = %+v", u)
	}
	if u := s.get(t, s.acme, s.bob); u.Email != "" {
		t.Errorf("after a refused set, bob = %+v", u)
	}
	err := s.write(func(tx bun.Tx) error { return d.SetEmail(s.ctx, tx, s.other, s.ann, "", "x@example.com") })
	if !errors.Is(err, deskkit.ErrNotFound) {
		t.Errorf("SetEmail of a user of another tenant: %v, want deskkit.ErrNotFound", err)
	}
}

func testUpdateProfile(t *testing.T, s *dirSuite) {
	d := s.h.Directory
	first, title := "Ann", "Engineer"
	err := s.write(func(tx bun.Tx) error {
		return d.UpdateProfile(s.ctx, tx, s.acme, s.ann, verify.Profile{FirstName: &first, Title: &title})
	})
	if err != nil {
		t.Fatalf("UpdateProfile: %v", err)
	}
	u := s.get(t, s.acme, s.ann)
	if u.FirstName != first || u.Title != title || u.Username != "ann" || u.LastName != "" {
		t.Errorf("after UpdateProfile, ann = %+v; want first name and title set, nothing else", u)
	}
	taken := "bob"
	err = s.write(func(tx bun.Tx) error {
		return d.UpdateProfile(s.ctx, tx, s.acme, s.ann, verify.Profile{Username: &taken})
	})
	if !errors.Is(err, deskkit.ErrConflict) {
		t.Errorf("a username another user has: %v, want deskkit.ErrConflict", err)
	}
	zed := "zed" // zed is of another tenant: the name is free here
	if err := s.write(func(tx bun.Tx) error {
		return d.UpdateProfile(s.ctx, tx, s.acme, s.ann, verify.Profile{Username: &zed})
	}); err != nil {
		t.Errorf("a username only another tenant has: %v", err)
	}
	err = s.write(func(tx bun.Tx) error {
		return d.UpdateProfile(s.ctx, tx, s.other, s.bob, verify.Profile{FirstName: &first})
	})
	if !errors.Is(err, deskkit.ErrNotFound) {
		t.Errorf("UpdateProfile of a user of another tenant: %v, want deskkit.ErrNotFound", err)
	}
}

// A write goes through the transaction it is handed: when the Verifier's
// transaction rolls back, the change goes with it.
func testWritesRollBack(t *testing.T, s *dirSuite) {
	d := s.h.Directory
	rollback := errors.New("roll back")
	first := "Ann"
	err := s.write(func(tx bun.Tx) error {
		if err := d.SetEmail(s.ctx, tx, s.acme, s.ann, "", "ann@example.com"); err != nil {
			return err
		}
		if err := d.SetMobile(s.ctx, tx, s.acme, s.ann, "", "+8613800138000", "CN"); err != nil {
			return err
		}
		if err := d.UpdateProfile(s.ctx, tx, s.acme, s.ann, verify.Profile{FirstName: &first}); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("the writes: %v", err)
	}
	if u := s.get(t, s.acme, s.ann); u.Email != "" || u.Mobile != "" || u.FirstName != "" {
		t.Errorf("after a rollback, ann = %+v: the directory wrote outside the transaction", u)
	}
}
