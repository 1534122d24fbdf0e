package directory_test

import (
	"context"
	"testing"

	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// BenchmarkAuthenticate is the token lookup every request makes, on
// PostgreSQL; allocs/op is deskkit's own share of it (the driver's is the
// same for any caller).
func BenchmarkAuthenticate(b *testing.B) {
	db := dbtest.OpenPostgres(b)
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
	token, err := d.IssueToken(ctx, u)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p, err := d.Authenticate(ctx, token)
		if err != nil || p.UserID != u.ID || !p.Admin {
			b.Fatalf("Authenticate = %+v, %v", p, err)
		}
	}
}
