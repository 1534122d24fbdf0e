package directory_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/dbtest"
)

var epoch = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func setup(t *testing.T, db *bun.DB) *directory.Directory {
	t.Helper()
	if err := directory.Migrate(context.Background(), db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	d, err := directory.New(db, &directory.Config{Now: func() time.Time { return epoch }})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return d
}

func TestDirectory(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		d := setup(t, db)
		// Migrating again is a no-op.
		if err := directory.Migrate(ctx, db); err != nil {
			t.Fatalf("second migrate: %v", err)
		}

		t.Run("EnsureTenant is idempotent", func(t *testing.T) {
			a, err := d.EnsureTenant(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			b, err := d.EnsureTenant(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("second EnsureTenant differs (-first +second):\n%s", diff)
			}
			if a.ID < 1 || a.Name != "acme" || !a.CreatedAt.Equal(epoch) {
				t.Errorf("tenant = %+v", a)
			}
		})

		t.Run("EnsureUser creates, then updates admin", func(t *testing.T) {
			tn, err := d.EnsureTenant(ctx, "users")
			if err != nil {
				t.Fatal(err)
			}
			u, err := d.EnsureUser(ctx, tn.ID, "ada", false)
			if err != nil {
				t.Fatal(err)
			}
			want := directory.User{ID: u.ID, TenantID: tn.ID, Username: "ada", DisplayName: "ada", CreatedAt: epoch}
			if diff := cmp.Diff(want, u); diff != "" {
				t.Errorf("created user (-want +got):\n%s", diff)
			}
			again, err := d.EnsureUser(ctx, tn.ID, "ada", true)
			if err != nil {
				t.Fatal(err)
			}
			want.Admin = true
			if diff := cmp.Diff(want, again); diff != "" {
				t.Errorf("promoted user (-want +got):\n%s", diff)
			}
			stored, err := d.User(ctx, tn.ID, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !stored.Admin {
				t.Errorf("admin flag not stored: %+v", stored)
			}
		})

		t.Run("EnsureUser of a missing tenant", func(t *testing.T) {
			_, err := d.EnsureUser(ctx, 999999, "ghost", false)
			if !errors.Is(err, directory.ErrNotFound) {
				t.Errorf("err = %v, want ErrNotFound", err)
			}
		})

		t.Run("tokens authenticate and are stored hashed", func(t *testing.T) {
			tn, err := d.EnsureTenant(ctx, "tokens")
			if err != nil {
				t.Fatal(err)
			}
			u, err := d.EnsureUser(ctx, tn.ID, "grace", true)
			if err != nil {
				t.Fatal(err)
			}
			token, err := d.IssueToken(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(token, directory.TokenPrefix) || len(token) != len(directory.TokenPrefix)+43 {
				t.Errorf("token %q: want %s and 43 base64url characters", token, directory.TokenPrefix)
			}
			other, err := d.IssueToken(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			if other == token {
				t.Error("two tokens are equal")
			}

			p, err := d.Authenticate(ctx, token)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(deskkit.Principal{UserID: u.ID, TenantID: tn.ID, Admin: true}, p); diff != "" {
				t.Errorf("principal (-want +got):\n%s", diff)
			}

			var stored []string
			if err := db.NewSelect().Table("deskkit_tokens").Column("token_hash").Where("user_id = ?", u.ID).Scan(ctx, &stored); err != nil {
				t.Fatal(err)
			}
			if len(stored) != 2 {
				t.Fatalf("stored %d tokens, want 2", len(stored))
			}
			for _, h := range stored {
				if len(h) != 64 || strings.Contains(h, token[len(directory.TokenPrefix):]) || strings.Contains(h, other[len(directory.TokenPrefix):]) {
					t.Errorf("stored %q: want a 64-character hash, not the token", h)
				}
			}
			var n int
			if err := db.NewSelect().Table("deskkit_tokens").ColumnExpr("count(*)").
				Where("token_hash IN (?)", bun.List([]string{token, other})).Scan(ctx, &n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d tokens stored in clear", n)
			}

			// Demoting the user takes effect on the next request.
			if _, err := d.EnsureUser(ctx, tn.ID, "grace", false); err != nil {
				t.Fatal(err)
			}
			p, err = d.Authenticate(ctx, token)
			if err != nil || p.Admin {
				t.Errorf("after demotion: %+v, %v; want not admin", p, err)
			}

			owner, err := d.RevokeToken(ctx, token)
			if err != nil {
				t.Fatal(err)
			}
			if owner.ID != u.ID || owner.TenantID != tn.ID || owner.Username != "grace" {
				t.Errorf("revoked a token of %+v, want grace", owner)
			}
			if _, err := d.Authenticate(ctx, token); !errors.Is(err, directory.ErrUnauthenticated) {
				t.Errorf("revoked token: err = %v, want ErrUnauthenticated", err)
			}
			if _, err := d.RevokeToken(ctx, token); !errors.Is(err, directory.ErrNotFound) {
				t.Errorf("second revoke: err = %v, want ErrNotFound", err)
			}
			if _, err := d.Authenticate(ctx, other); err != nil {
				t.Errorf("the other token stopped working: %v", err)
			}
		})

		t.Run("unknown tokens", func(t *testing.T) {
			for _, token := range []string{
				"",
				"garbage",
				directory.TokenPrefix + strings.Repeat("A", 43), // well-formed, never issued
				"xx_" + strings.Repeat("A", 43),
				directory.TokenPrefix + strings.Repeat("A", 10000),
			} {
				p, err := d.Authenticate(ctx, token)
				if !errors.Is(err, directory.ErrUnauthenticated) || p != (deskkit.Principal{}) {
					t.Errorf("Authenticate(%.20q) = %+v, %v; want ErrUnauthenticated", token, p, err)
				}
			}
		})

		t.Run("IssueToken for a user of another tenant", func(t *testing.T) {
			a, _ := d.EnsureTenant(ctx, "issue-a")
			b, _ := d.EnsureTenant(ctx, "issue-b")
			u, err := d.EnsureUser(ctx, a.ID, "x", false)
			if err != nil {
				t.Fatal(err)
			}
			u.TenantID = b.ID
			if _, err := d.IssueToken(ctx, u); !errors.Is(err, directory.ErrNotFound) {
				t.Errorf("err = %v, want ErrNotFound", err)
			}
		})

		t.Run("ResolveUsers stays in the tenant", func(t *testing.T) {
			a, _ := d.EnsureTenant(ctx, "resolve-a")
			b, _ := d.EnsureTenant(ctx, "resolve-b")
			ada, err := d.EnsureUser(ctx, a.ID, "ada", false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.UpdateProfile(ctx, a.ID, ada.ID, directory.Profile{DisplayName: "Ada Lovelace", Avatar: "https://example.com/ada.png"}); err != nil {
				t.Fatal(err)
			}
			bea, err := d.EnsureUser(ctx, a.ID, "bea", false)
			if err != nil {
				t.Fatal(err)
			}
			eve, err := d.EnsureUser(ctx, b.ID, "eve", false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.ResolveUsers(ctx, nil, a.ID, []int64{ada.ID, bea.ID, eve.ID, 987654})
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
			empty, err := d.ResolveUsers(ctx, nil, a.ID, nil)
			if err != nil || len(empty) != 0 {
				t.Errorf("no ids: %v, %v", empty, err)
			}
			// Nor may a profile be changed across tenants.
			if _, err := d.UpdateProfile(ctx, a.ID, eve.ID, directory.Profile{DisplayName: "Mallory"}); !errors.Is(err, directory.ErrNotFound) {
				t.Errorf("cross-tenant UpdateProfile: err = %v, want ErrNotFound", err)
			}
		})

		t.Run("invalid input", func(t *testing.T) {
			tn, _ := d.EnsureTenant(ctx, "invalid")
			cases := []struct {
				name  string
				call  func() error
				field string
			}{
				{"empty tenant", func() error { _, err := d.EnsureTenant(ctx, " "); return err }, "name"},
				{"long tenant", func() error { _, err := d.EnsureTenant(ctx, strings.Repeat("x", 129)); return err }, "name"},
				{"tenant with NUL", func() error { _, err := d.EnsureTenant(ctx, "a\x00b"); return err }, "name"},
				{"bad tenant id", func() error { _, err := d.EnsureUser(ctx, 0, "x", false); return err }, "tenantId"},
				{"empty username", func() error { _, err := d.EnsureUser(ctx, tn.ID, "", false); return err }, "username"},
				{"bad UTF-8 username", func() error { _, err := d.EnsureUser(ctx, tn.ID, "\xff", false); return err }, "username"},
				{"empty display name", func() error {
					_, err := d.UpdateProfile(ctx, tn.ID, 1, directory.Profile{})
					return err
				}, "displayName"},
				{"long avatar", func() error {
					_, err := d.UpdateProfile(ctx, tn.ID, 1, directory.Profile{DisplayName: "x", Avatar: strings.Repeat("a", 2049)})
					return err
				}, "avatar"},
			}
			for _, c := range cases {
				err := c.call()
				var in *deskkit.InputError
				if !errors.As(err, &in) || in.Field != c.field {
					t.Errorf("%s: err = %v, want an input error on %s", c.name, err, c.field)
				}
			}
		})
	})
}

func TestNewRequiresDB(t *testing.T) {
	if _, err := directory.New(nil, nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}
