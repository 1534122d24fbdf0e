package directory_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// AuthenticateHash is what a server-side session checks on every request:
// the same principal as Authenticate for the token, and the same refusals
// once the token is revoked or expired.
func TestAuthenticateHash(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		d, clk := setupClock(t, db)
		u := newUser(t, d, "hash", directory.Role{Admin: true, Set: true})
		token, err := d.IssueTokenTTL(ctx, u, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		h := directory.TokenHash(token)
		if len(h) != 64 || strings.Contains(h, token[3:]) {
			t.Fatalf("TokenHash = %q", h)
		}
		want, err := d.Authenticate(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := d.AuthenticateHash(ctx, h); err != nil || got != want {
			t.Errorf("AuthenticateHash = %+v, %v; want %+v", got, err, want)
		}
		for _, bad := range []string{"", "abc", strings.Repeat("0", 64), token} {
			if _, err := d.AuthenticateHash(ctx, bad); !errors.Is(err, directory.ErrUnauthenticated) {
				t.Errorf("AuthenticateHash(%q): %v, want ErrUnauthenticated", bad, err)
			}
		}
		clk.Set(epoch.Add(time.Hour + time.Second))
		if _, err := d.AuthenticateHash(ctx, h); !errors.Is(err, directory.ErrUnauthenticated) {
			t.Errorf("expired: %v", err)
		}
		clk.Set(epoch)
		if _, err := d.RevokeToken(ctx, token); err != nil {
			t.Fatal(err)
		}
		if _, err := d.AuthenticateHash(ctx, h); !errors.Is(err, directory.ErrUnauthenticated) {
			t.Errorf("revoked: %v", err)
		}
	})
}
