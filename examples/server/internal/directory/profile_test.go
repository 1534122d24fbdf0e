package directory_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/dbtest"
)

func ptr(s string) *string { return &s }

// fixture is a directory with two tenants and a way to add users.
type fixture struct {
	d             *directory.Directory
	tenant, other directory.Tenant
}

func setupFixture(t *testing.T, db *bun.DB) fixture {
	t.Helper()
	ctx := context.Background()
	d := setup(t, db)
	tn, err := d.EnsureTenant(ctx, "profile")
	if err != nil {
		t.Fatal(err)
	}
	other, err := d.EnsureTenant(ctx, "profile-other")
	if err != nil {
		t.Fatal(err)
	}
	return fixture{d: d, tenant: tn, other: other}
}

func (f fixture) user(t *testing.T, tenantID int64, name string) directory.User {
	t.Helper()
	u, err := f.d.EnsureUserRole(context.Background(), tenantID, name, directory.Role{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestTenant(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setupFixture(t, db)
		got, err := f.d.Tenant(ctx, f.tenant.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(f.tenant, got); diff != "" {
			t.Errorf("Tenant (-want +got):\n%s", diff)
		}
		if _, err := f.d.Tenant(ctx, 987654); !errors.Is(err, directory.ErrNotFound) {
			t.Errorf("unknown tenant: err = %v, want ErrNotFound", err)
		}
	})
}

func TestUpdateUser(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setupFixture(t, db)
		ann := f.user(t, f.tenant.ID, "ann")
		want := ann
		steps := []struct {
			name   string
			change directory.Change
			apply  func(u *directory.User)
		}{
			{"every field", directory.Change{
				Username: ptr("ann.lee"), DisplayName: ptr("Ann Lee"), FirstName: ptr("Ann"), LastName: ptr("Lee"),
				Landline: ptr("+49 30 1234567"), Avatar: ptr("https://example.com/ann.png"), Title: ptr("Engineer"),
				Gender: ptr("FEMALE"), Address: ptr("Unter den Linden 1, Berlin"),
			}, func(u *directory.User) {
				u.Username, u.DisplayName, u.FirstName, u.LastName = "ann.lee", "Ann Lee", "Ann", "Lee"
				u.Landline, u.Avatar, u.Title = "+49 30 1234567", "https://example.com/ann.png", "Engineer"
				u.Gender, u.Address = "FEMALE", "Unter den Linden 1, Berlin"
			}},
			{"nil fields stay", directory.Change{Title: ptr("Lead")}, func(u *directory.User) { u.Title = "Lead" }},
			{"empty strings clear", directory.Change{DisplayName: ptr(""), Avatar: ptr(""), Address: ptr("")}, func(u *directory.User) {
				u.DisplayName, u.Avatar, u.Address = "", "", ""
			}},
			{"no fields", directory.Change{}, func(*directory.User) {}},
			{"the user's own username again", directory.Change{Username: ptr("ann.lee")}, func(*directory.User) {}},
			{"the longest values", directory.Change{FirstName: ptr(strings.Repeat("é", 100)), Gender: ptr(strings.Repeat("x", 16))}, func(u *directory.User) {
				u.FirstName, u.Gender = strings.Repeat("é", 100), strings.Repeat("x", 16)
			}},
		}
		for _, s := range steps {
			s.apply(&want)
			got, err := f.d.UpdateUser(ctx, nil, f.tenant.ID, ann.ID, s.change)
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: returned user (-want +got):\n%s", s.name, diff)
			}
			stored, err := f.d.User(ctx, f.tenant.ID, ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, stored); diff != "" {
				t.Errorf("%s: stored user (-want +got):\n%s", s.name, diff)
			}
		}

		// Without a display name the user is shown by the username.
		if got := want.Info(); got != (deskkit.UserInfo{Name: "ann.lee"}) {
			t.Errorf("Info without a display name = %+v", got)
		}
		resolved, err := f.d.ResolveUsers(ctx, nil, f.tenant.ID, []int64{ann.ID})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[int64]deskkit.UserInfo{ann.ID: {Name: "ann.lee"}}, resolved); diff != "" {
			t.Errorf("ResolveUsers without a display name (-want +got):\n%s", diff)
		}

		// A username is one user's in a tenant; a refused change changes nothing.
		bob := f.user(t, f.tenant.ID, "bob")
		_, err = f.d.UpdateUser(ctx, nil, f.tenant.ID, bob.ID, directory.Change{Username: ptr("ann.lee"), Title: ptr("Thief")})
		if !errors.Is(err, directory.ErrUsernameTaken) || !errors.Is(err, deskkit.ErrConflict) {
			t.Errorf("taken username: err = %v, want ErrUsernameTaken", err)
		}
		if got, _ := f.d.User(ctx, f.tenant.ID, bob.ID); got != bob {
			t.Errorf("a refused change changed bob: %+v", got)
		}
		eve := f.user(t, f.other.ID, "eve")
		if _, err := f.d.UpdateUser(ctx, nil, f.other.ID, eve.ID, directory.Change{Username: ptr("ann.lee")}); err != nil {
			t.Errorf("another tenant's user takes the username: %v", err)
		}

		for name, c := range map[string]struct {
			tenantID, id int64
			change       directory.Change
		}{
			"unknown user":             {f.tenant.ID, 987654, directory.Change{Title: ptr("x")}},
			"unknown user, no fields":  {f.tenant.ID, 987654, directory.Change{}},
			"user of another tenant":   {f.tenant.ID, eve.ID, directory.Change{Title: ptr("x")}},
			"username of unknown user": {f.tenant.ID, 987654, directory.Change{Username: ptr("zed")}},
		} {
			if _, err := f.d.UpdateUser(ctx, nil, c.tenantID, c.id, c.change); !errors.Is(err, directory.ErrNotFound) {
				t.Errorf("%s: err = %v, want ErrNotFound", name, err)
			}
		}

		for _, c := range []struct {
			change directory.Change
			field  string
		}{
			{directory.Change{Username: ptr("")}, "username"},
			{directory.Change{Username: ptr("  ")}, "username"},
			{directory.Change{Username: ptr(strings.Repeat("u", 129))}, "username"},
			{directory.Change{DisplayName: ptr(strings.Repeat("d", 257))}, "displayName"},
			{directory.Change{FirstName: ptr(strings.Repeat("f", 101))}, "firstName"},
			{directory.Change{LastName: ptr(strings.Repeat("l", 101))}, "lastName"},
			{directory.Change{Landline: ptr(strings.Repeat("1", 41))}, "landline"},
			{directory.Change{Avatar: ptr(strings.Repeat("a", 2049))}, "avatar"},
			{directory.Change{Title: ptr(strings.Repeat("t", 101))}, "title"},
			{directory.Change{Gender: ptr(strings.Repeat("g", 17))}, "gender"},
			{directory.Change{Address: ptr(strings.Repeat("a", 201))}, "address"},
			{directory.Change{Address: ptr("line 1\nline 2")}, "address"},
			{directory.Change{Title: ptr("ok"), LastName: ptr("\xff")}, "lastName"},
		} {
			_, err := f.d.UpdateUser(ctx, nil, f.tenant.ID, bob.ID, c.change)
			var in *deskkit.InputError
			if !errors.As(err, &in) || in.Field != c.field {
				t.Errorf("%s: err = %v, want an input error on %s", c.field, err, c.field)
			}
		}
		if got, _ := f.d.User(ctx, f.tenant.ID, bob.ID); got != bob {
			t.Errorf("refused input changed bob: %+v", got)
		}

		// Through the caller's transaction: read back inside it, gone with it.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.d.UpdateUser(ctx, tx, f.tenant.ID, bob.ID, directory.Change{Username: ptr("bobby"), FirstName: ptr("Bob")})
		if err != nil || got.Username != "bobby" || got.FirstName != "Bob" {
			t.Errorf("in a transaction: %+v, %v", got, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if got, _ := f.d.User(ctx, f.tenant.ID, bob.ID); got != bob {
			t.Errorf("a rolled-back change stayed: %+v", got)
		}
	})
}

func TestSetMobileAndEmail(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setupFixture(t, db)
		d, tn := f.d, f.tenant.ID
		ann, bob, eve := f.user(t, tn, "ann"), f.user(t, tn, "bob"), f.user(t, f.other.ID, "eve")
		contacts := func(id int64) directory.Contacts {
			t.Helper()
			u, err := d.User(ctx, tn, id)
			if err != nil {
				t.Fatal(err)
			}
			return u.Contacts()
		}
		steps := []struct {
			name string
			set  func() error
			want directory.Contacts
		}{
			{"email alone", func() error { return d.SetEmail(ctx, nil, tn, ann.ID, " Ann.Lee@Example.ORG ") },
				directory.Contacts{Email: "Ann.Lee@example.org"}},
			{"mobile leaves the email", func() error { return d.SetMobile(ctx, nil, tn, ann.ID, "+8613800138000", "CN") },
				directory.Contacts{Mobile: "+8613800138000", Country: "CN", Email: "Ann.Lee@example.org"}},
			{"email leaves the mobile", func() error { return d.SetEmail(ctx, nil, tn, ann.ID, "ann@example.com") },
				directory.Contacts{Mobile: "+8613800138000", Country: "CN", Email: "ann@example.com"}},
			{"the same again", func() error { return d.SetEmail(ctx, nil, tn, ann.ID, "ann@EXAMPLE.com") },
				directory.Contacts{Mobile: "+8613800138000", Country: "CN", Email: "ann@example.com"}},
			{"clear the mobile", func() error { return d.SetMobile(ctx, nil, tn, ann.ID, "", "") },
				directory.Contacts{Email: "ann@example.com"}},
			{"a mobile again", func() error { return d.SetMobile(ctx, nil, tn, ann.ID, "+4915112345678", "DE") },
				directory.Contacts{Mobile: "+4915112345678", Country: "DE", Email: "ann@example.com"}},
		}
		for _, s := range steps {
			if err := s.set(); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if diff := cmp.Diff(s.want, contacts(ann.ID)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", s.name, diff)
			}
		}
		annContacts := contacts(ann.ID)

		for _, c := range []struct {
			name string
			set  func() error
			want error
		}{
			{"ann's mobile", func() error { return d.SetMobile(ctx, nil, tn, bob.ID, "+4915112345678", "DE") }, directory.ErrMobileTaken},
			{"ann's email", func() error { return d.SetEmail(ctx, nil, tn, bob.ID, " ann@Example.Com") }, directory.ErrEmailTaken},
			{"unknown user's mobile", func() error { return d.SetMobile(ctx, nil, tn, 987654, "+4917000000000", "DE") }, directory.ErrNotFound},
			{"unknown user's email", func() error { return d.SetEmail(ctx, nil, tn, 987654, "") }, directory.ErrNotFound},
			{"another tenant's user", func() error { return d.SetEmail(ctx, nil, tn, eve.ID, "eve@example.com") }, directory.ErrNotFound},
		} {
			if err := c.set(); !errors.Is(err, c.want) {
				t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
			}
		}
		if got := contacts(bob.ID); got != (directory.Contacts{}) {
			t.Errorf("refused writes changed bob: %+v", got)
		}
		// The same addresses are free in another tenant, and differ by the
		// local part's case.
		if err := d.SetEmail(ctx, nil, f.other.ID, eve.ID, "ann@example.com"); err != nil {
			t.Errorf("another tenant: %v", err)
		}
		if err := d.SetEmail(ctx, nil, tn, bob.ID, "ANN@example.com"); err != nil {
			t.Errorf("the local part in another case: %v", err)
		}

		for _, c := range []struct {
			name  string
			set   func() error
			field string
		}{
			{"national mobile", func() error { return d.SetMobile(ctx, nil, tn, bob.ID, "015112345678", "DE") }, "mobile"},
			{"lower-case country", func() error { return d.SetMobile(ctx, nil, tn, bob.ID, "+4915112345679", "de") }, "country"},
			{"no @", func() error { return d.SetEmail(ctx, nil, tn, bob.ID, "bob") }, "email"},
			{"display name", func() error { return d.SetEmail(ctx, nil, tn, bob.ID, "Bob <bob@example.com>") }, "email"},
			{"too long", func() error { return d.SetEmail(ctx, nil, tn, bob.ID, strings.Repeat("b", 250)+"@x.de") }, "email"},
		} {
			var in *deskkit.InputError
			if err := c.set(); !errors.As(err, &in) || in.Field != c.field {
				t.Errorf("%s: err = %v, want an input error on %s", c.name, err, c.field)
			}
		}

		// Through the caller's transaction: visible inside it, gone with it.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetEmail(ctx, tx, tn, ann.ID, "ann@example.net"); err != nil {
			t.Fatal(err)
		}
		if err := d.SetMobile(ctx, tx, tn, ann.ID, "", ""); err != nil {
			t.Fatal(err)
		}
		var inside string
		if err := tx.NewSelect().Table("deskkit_users").Column("email").Where("id = ?", ann.ID).Scan(ctx, &inside); err != nil || inside != "ann@example.net" {
			t.Errorf("inside the transaction: email %q, %v", inside, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(annContacts, contacts(ann.ID)); diff != "" {
			t.Errorf("after rollback (-want +got):\n%s", diff)
		}
	})
}

// Two writers claiming one username, mobile or e-mail address for two users
// at once: exactly one wins, the other gets the directory's error and not
// the driver's, whether the check or the unique index stops it. Each claim
// runs as statements of its own and inside a transaction of the caller's.
func TestConcurrentClaims(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setupFixture(t, db)
		d, tn := f.d, f.tenant.ID
		claims := []struct {
			name  string
			want  error
			claim func(ctx context.Context, db bun.IDB, userID int64, round int) error
		}{
			{"email", directory.ErrEmailTaken, func(ctx context.Context, db bun.IDB, id int64, round int) error {
				return d.SetEmail(ctx, db, tn, id, fmt.Sprintf("race%d@example.com", round))
			}},
			{"mobile", directory.ErrMobileTaken, func(ctx context.Context, db bun.IDB, id int64, round int) error {
				return d.SetMobile(ctx, db, tn, id, fmt.Sprintf("+49151000%04d", round), "DE")
			}},
			{"username", directory.ErrUsernameTaken, func(ctx context.Context, db bun.IDB, id int64, round int) error {
				_, err := d.UpdateUser(ctx, db, tn, id, directory.Change{Username: ptr(fmt.Sprintf("race-%d", round))})
				return err
			}},
		}
		const rounds = 8
		round := 0
		for _, c := range claims {
			for _, inTx := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/tx=%v", c.name, inTx), func(t *testing.T) {
					ctx := context.Background()
					for range rounds {
						round++
						users := []int64{f.user(t, tn, fmt.Sprintf("a%d", round)).ID, f.user(t, tn, fmt.Sprintf("b%d", round)).ID}
						var (
							wg    sync.WaitGroup
							start = make(chan struct{})
							errs  = make([]error, len(users))
						)
						for i, id := range users {
							wg.Go(func() {
								<-start
								if !inTx {
									errs[i] = c.claim(ctx, nil, id, round)
									return
								}
								errs[i] = deskkit.RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error {
									return c.claim(ctx, tx, id, round)
								})
							})
						}
						close(start)
						wg.Wait()
						won := 0
						for _, err := range errs {
							switch {
							case err == nil:
								won++
							case !errors.Is(err, c.want):
								t.Errorf("round %d: err = %v, want nil or %v", round, err, c.want)
							}
						}
						if won != 1 {
							t.Errorf("round %d: %d claims won (errors %v), want 1", round, won, errs)
						}
					}
				})
			}
		}
	})
}

// On PostgreSQL, a writer whose snapshot predates another's committed
// claim passes the check and is refused by the index alone: it still gets
// ErrEmailTaken. (SQLite serializes writers, so its check always sees the
// winner; TestTakenErrorNamesTheIndex covers its index's report.)
func TestSetEmailRefusedByTheIndex(t *testing.T) {
	db := dbtest.Open(t, dbtest.Postgres)
	ctx := context.Background()
	f := setupFixture(t, db)
	ann, bob := f.user(t, f.tenant.ID, "ann"), f.user(t, f.tenant.ID, "bob")
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.NewSelect().Table("deskkit_users").ColumnExpr("count(*)").Scan(ctx, &n); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	if err := f.d.SetEmail(ctx, nil, f.tenant.ID, ann.ID, "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := f.d.SetEmail(ctx, tx, f.tenant.ID, bob.ID, "ann@example.com"); !errors.Is(err, directory.ErrEmailTaken) {
		t.Errorf("err = %v, want ErrEmailTaken", err)
	}
}

// SwapMobile and SwapEmail change an address only if it is still the one
// the caller read.
func TestSwapContacts(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		f := setupFixture(t, db)
		d, tn := f.d, f.tenant.ID
		ann, bob, eve := f.user(t, tn, "ann"), f.user(t, tn, "bob"), f.user(t, f.other.ID, "eve")
		steps := []struct {
			name    string
			swap    func() error
			wantErr error
			want    directory.Contacts
		}{
			{"a first mobile", func() error { return d.SwapMobile(ctx, nil, tn, ann.ID, "", "+4915112345678", "DE") },
				nil, directory.Contacts{Mobile: "+4915112345678", Country: "DE"}},
			{"a first mobile again", func() error { return d.SwapMobile(ctx, nil, tn, ann.ID, "", "+4917000000000", "DE") },
				directory.ErrContactChanged, directory.Contacts{Mobile: "+4915112345678", Country: "DE"}},
			{"another mobile", func() error { return d.SwapMobile(ctx, nil, tn, ann.ID, "+4915112345678", "+8613800138000", "CN") },
				nil, directory.Contacts{Mobile: "+8613800138000", Country: "CN"}},
			{"a first email", func() error { return d.SwapEmail(ctx, nil, tn, ann.ID, "", " Ann@Example.COM") },
				nil, directory.Contacts{Mobile: "+8613800138000", Country: "CN", Email: "Ann@example.com"}},
			{"from a stale email", func() error { return d.SwapEmail(ctx, nil, tn, ann.ID, "old@example.com", "new@example.com") },
				directory.ErrContactChanged, directory.Contacts{Mobile: "+8613800138000", Country: "CN", Email: "Ann@example.com"}},
			{"from the email in another case", func() error { return d.SwapEmail(ctx, nil, tn, ann.ID, "ann@example.com", "new@example.com") },
				directory.ErrContactChanged, directory.Contacts{Mobile: "+8613800138000", Country: "CN", Email: "Ann@example.com"}},
			{"clear the email, old normalized", func() error { return d.SwapEmail(ctx, nil, tn, ann.ID, "Ann@EXAMPLE.com ", "") },
				nil, directory.Contacts{Mobile: "+8613800138000", Country: "CN"}},
			{"clear the mobile", func() error { return d.SwapMobile(ctx, nil, tn, ann.ID, "+8613800138000", "", "") },
				nil, directory.Contacts{}},
		}
		for _, s := range steps {
			if err := s.swap(); !errors.Is(err, s.wantErr) {
				t.Errorf("%s: err = %v, want %v", s.name, err, s.wantErr)
			}
			u, err := d.User(ctx, tn, ann.ID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(s.want, u.Contacts()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", s.name, diff)
			}
		}
		if !errors.Is(directory.ErrContactChanged, deskkit.ErrConflict) {
			t.Error("ErrContactChanged is no conflict")
		}
		if err := d.SetEmail(ctx, nil, tn, bob.ID, "bob@example.com"); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			swap func() error
			want error
		}{
			{"another user's email", func() error { return d.SwapEmail(ctx, nil, tn, ann.ID, "", "bob@example.com") }, directory.ErrEmailTaken},
			{"unknown user", func() error { return d.SwapEmail(ctx, nil, tn, 987654, "", "zed@example.com") }, directory.ErrNotFound},
			{"user of another tenant", func() error { return d.SwapMobile(ctx, nil, tn, eve.ID, "", "+4917000000001", "DE") }, directory.ErrNotFound},
		} {
			if err := c.swap(); !errors.Is(err, c.want) {
				t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
			}
		}

		// Two swaps from one old address at once: one wins, one is told.
		for round := range 6 {
			u := f.user(t, tn, fmt.Sprintf("swap%d", round))
			var (
				wg    sync.WaitGroup
				start = make(chan struct{})
				errs  = make([]error, 2)
			)
			for i := range errs {
				wg.Go(func() {
					<-start
					errs[i] = d.SwapEmail(ctx, nil, tn, u.ID, "", fmt.Sprintf("swap%d-%d@example.com", round, i))
				})
			}
			close(start)
			wg.Wait()
			if (errs[0] == nil) == (errs[1] == nil) || !errors.Is(errors.Join(errs...), directory.ErrContactChanged) {
				t.Errorf("round %d: errors %v, want one nil and one ErrContactChanged", round, errs)
			}
		}
	})
}
