package directory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestPrincipal: the console's question "who is this user now?" answers
// the user's current admin flag, and ErrNotFound for a user the tenant
// does not have (another tenant's included). Both databases.
func TestPrincipal(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		d := setup(t, db)
		u := newUser(t, d, "acme", directory.Role{Admin: true})
		other := newUser(t, d, "globex", directory.Role{})
		p, err := d.Principal(ctx, u.TenantID, u.ID)
		if err != nil || p != (deskkit.Principal{TenantID: u.TenantID, UserID: u.ID, Admin: true}) {
			t.Fatalf("Principal = %+v, %v", p, err)
		}
		// What token -admin=false does.
		if _, err := d.EnsureUserRole(ctx, u.TenantID, u.Username, directory.Role{Admin: false, Set: true}); err != nil {
			t.Fatal(err)
		}
		if p, err := d.Principal(ctx, u.TenantID, u.ID); err != nil || p.Admin {
			t.Errorf("after the demotion: %+v, %v", p, err)
		}
		for _, q := range [][2]int64{{other.TenantID, u.ID}, {u.TenantID, other.ID}, {u.TenantID, 999999}} {
			if _, err := d.Principal(ctx, q[0], q[1]); !errors.Is(err, directory.ErrNotFound) {
				t.Errorf("Principal(tenant %d, user %d): %v, want ErrNotFound", q[0], q[1], err)
			}
		}
	})
}

// benchPrincipal is the look-up the console makes on every request of
// every session, beside Authenticate's for comparison.
func benchPrincipal(b *testing.B, db *bun.DB) {
	ctx := context.Background()
	if err := directory.Migrate(ctx, db); err != nil {
		b.Fatal(err)
	}
	d, err := directory.New(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	tn, err := d.EnsureTenant(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	u, err := d.EnsureUser(ctx, tn.ID, "ann", true)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := d.Principal(ctx, tn.ID, u.ID)
		if err != nil || !p.Admin {
			b.Fatalf("Principal = %+v, %v", p, err)
		}
	}
}

// BenchmarkPrincipalSQLite is Principal on SQLite.
func BenchmarkPrincipalSQLite(b *testing.B) { benchPrincipal(b, dbtest.OpenSQLite(b)) }

// BenchmarkPrincipalPostgres is Principal on PostgreSQL.
func BenchmarkPrincipalPostgres(b *testing.B) { benchPrincipal(b, dbtest.OpenPostgres(b)) }
