package directory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/examples/server/internal/directory"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// setupClock is setup with a clock the test moves.
func setupClock(t *testing.T, db *bun.DB) (*directory.Directory, *clock) {
	t.Helper()
	setup(t, db) // migrates
	clk := &clock{now: epoch}
	d, err := directory.New(db, &directory.Config{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return d, clk
}

// newUser makes a user of a tenant of its own, with role.
func newUser(t *testing.T, d *directory.Directory, tenant string, role directory.Role) directory.User {
	t.Helper()
	ctx := context.Background()
	tn, err := d.EnsureTenant(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	u, err := d.EnsureUserRole(ctx, tn.ID, "ann", role)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Fault 11: ensuring a user without saying its role must not change it.
func TestEnsureUserRole(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		d := setup(t, db)
		tn, err := d.EnsureTenant(ctx, "roles")
		if err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			name      string
			username  string
			role      directory.Role
			wantAdmin bool
		}{
			{"a new user without a role is not an admin", "bob", directory.Role{}, false},
			{"a new user created as admin", "ann", directory.Role{Admin: true}, true},
			{"keeping the role keeps the admin", "ann", directory.Role{}, true},
			{"the creation role does not touch an existing user", "bob", directory.Role{Admin: true}, false},
			{"Set demotes", "ann", directory.Role{Set: true}, false},
			{"keeping the role keeps the non-admin", "ann", directory.Role{}, false},
			{"Set promotes", "ann", directory.Role{Admin: true, Set: true}, true},
			{"Set demotes again", "ann", directory.Role{Set: true}, false},
		}
		var annID int64
		for _, s := range steps {
			u, err := d.EnsureUserRole(ctx, tn.ID, s.username, s.role)
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if u.Admin != s.wantAdmin {
				t.Errorf("%s: admin = %v, want %v", s.name, u.Admin, s.wantAdmin)
			}
			stored, err := d.User(ctx, tn.ID, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Admin != s.wantAdmin {
				t.Errorf("%s: stored admin = %v, want %v", s.name, stored.Admin, s.wantAdmin)
			}
			if s.username == "ann" {
				if annID != 0 && u.ID != annID {
					t.Errorf("%s: user id changed from %d to %d", s.name, annID, u.ID)
				}
				annID = u.ID
			}
		}
		// EnsureUser states the role, for callers that decide it.
		u, err := d.EnsureUser(ctx, tn.ID, "ann", true)
		if err != nil || !u.Admin {
			t.Errorf("EnsureUser(admin) = %+v, %v; want an admin", u, err)
		}
	})
}

func TestTokenExpiry(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		d, clk := setupClock(t, db)
		u := newUser(t, d, "expiry", directory.Role{})
		// The clock is not on a whole second: the token must still live at
		// least the hour asked.
		start := epoch.Add(300 * time.Millisecond)
		clk.Set(start)
		token, err := d.IssueTokenTTL(ctx, u, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		forever, err := d.IssueTokenTTL(ctx, u, 0)
		if err != nil {
			t.Fatal(err)
		}
		var stored []time.Time
		if err := db.NewSelect().Table("deskkit_tokens").Column("expires_at").
			Where("user_id = ? AND expires_at IS NOT NULL", u.ID).Scan(ctx, &stored); err != nil {
			t.Fatal(err)
		}
		if want := epoch.Add(time.Hour + time.Second); len(stored) != 1 || !stored[0].Equal(want) {
			t.Errorf("stored expiry %v, want one at %v", stored, want)
		}

		for _, c := range []struct {
			at   time.Time
			live bool
		}{
			{start.Add(time.Hour - time.Nanosecond), true},
			{start.Add(time.Hour), true}, // rounded up to the next second
			{epoch.Add(time.Hour + time.Second), false},
			{epoch.Add(1000 * time.Hour), false},
		} {
			clk.Set(c.at)
			p, err := d.Authenticate(ctx, token)
			switch {
			case c.live && (err != nil || p != u.Principal()):
				t.Errorf("at %v: %+v, %v; want %+v", c.at, p, err, u.Principal())
			case !c.live && (!errors.Is(err, directory.ErrUnauthenticated) || p != (deskkit.Principal{})):
				t.Errorf("at %v: %+v, %v; want ErrUnauthenticated", c.at, p, err)
			}
			if _, err := d.Authenticate(ctx, forever); err != nil {
				t.Errorf("at %v the token without expiry fails: %v", c.at, err)
			}
			// AuthenticateUser accepts and refuses as Authenticate does,
			// answering the whole user.
			au, err := d.AuthenticateUser(ctx, token)
			switch {
			case c.live && (err != nil || au != u):
				t.Errorf("AuthenticateUser at %v: %+v, %v; want %+v", c.at, au, err, u)
			case !c.live && (!errors.Is(err, directory.ErrUnauthenticated) || au != (directory.User{})):
				t.Errorf("AuthenticateUser at %v: %+v, %v; want ErrUnauthenticated", c.at, au, err)
			}
		}
		// An expired token can still be revoked.
		if _, err := d.RevokeToken(ctx, token); err != nil {
			t.Errorf("revoke an expired token: %v", err)
		}
		for _, bad := range []string{token, "not a token"} {
			if _, err := d.AuthenticateUser(ctx, bad); !errors.Is(err, directory.ErrUnauthenticated) {
				t.Errorf("AuthenticateUser(%q) after revoking: %v, want ErrUnauthenticated", bad, err)
			}
		}

		var in *deskkit.InputError
		if _, err := d.IssueTokenTTL(ctx, u, -time.Second); !errors.As(err, &in) || in.Field != "ttl" {
			t.Errorf("negative ttl: err = %v, want an input error on ttl", err)
		}
		if _, err := d.IssueTokenIfNone(ctx, u, -time.Second); !errors.As(err, &in) || in.Field != "ttl" {
			t.Errorf("IssueTokenIfNone with a negative ttl: err = %v, want an input error on ttl", err)
		}
	})
}

func TestIssueTokenIfNone(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		d, clk := setupClock(t, db)
		u := newUser(t, d, "first", directory.Role{Admin: true})

		first, err := d.IssueTokenIfNone(ctx, u, time.Hour)
		if err != nil || first == "" {
			t.Fatalf("first call = %q, %v; want a token", first, err)
		}
		if p, err := d.Authenticate(ctx, first); err != nil || !p.Admin {
			t.Errorf("first token: %+v, %v", p, err)
		}
		again, err := d.IssueTokenIfNone(ctx, u, time.Hour)
		if err != nil || again != "" {
			t.Errorf("with a usable token: %q, %v; want none", again, err)
		}

		// Once the only token has expired, the user has none usable.
		clk.Set(epoch.Add(2 * time.Hour))
		afterExpiry, err := d.IssueTokenIfNone(ctx, u, 0)
		if err != nil || afterExpiry == "" {
			t.Fatalf("after expiry: %q, %v; want a token", afterExpiry, err)
		}
		if again, err := d.IssueTokenIfNone(ctx, u, 0); err != nil || again != "" {
			t.Errorf("with a token that never expires: %q, %v; want none", again, err)
		}
		// Nor once it is revoked.
		if _, err := d.RevokeToken(ctx, afterExpiry); err != nil {
			t.Fatal(err)
		}
		if afterRevoke, err := d.IssueTokenIfNone(ctx, u, 0); err != nil || afterRevoke == "" {
			t.Errorf("after revocation: %q, %v; want a token", afterRevoke, err)
		}

		ghost := u
		ghost.ID = 987654
		if _, err := d.IssueTokenIfNone(ctx, ghost, 0); !errors.Is(err, directory.ErrNotFound) {
			t.Errorf("unknown user: err = %v, want ErrNotFound", err)
		}
	})
}

// Servers starting at once on one database issue one token between them.
func TestIssueTokenIfNoneConcurrent(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		d, _ := setupClock(t, db)
		u := newUser(t, d, "race", directory.Role{Admin: true})

		const n = 6
		var (
			wg     sync.WaitGroup
			start  = make(chan struct{})
			tokens = make([]string, n)
			errs   = make([]error, n)
		)
		for i := range n {
			wg.Go(func() {
				<-start
				tokens[i], errs[i] = d.IssueTokenIfNone(ctx, u, 0)
			})
		}
		close(start)
		wg.Wait()
		issued := 0
		for i := range n {
			if errs[i] != nil {
				t.Errorf("call %d: %v", i, errs[i])
			}
			if tokens[i] != "" {
				issued++
			}
		}
		var stored int
		if err := db.NewSelect().Table("deskkit_tokens").ColumnExpr("count(*)").Where("user_id = ?", u.ID).Scan(ctx, &stored); err != nil {
			t.Fatal(err)
		}
		if issued != 1 || stored != 1 {
			t.Errorf("%d calls returned %d tokens and stored %d; want 1", n, issued, stored)
		}
	})
}
