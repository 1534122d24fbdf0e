package directory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// takenError names the unique index each driver reports refusing a write,
// so that a writer losing a race past the check gets ErrMobileTaken,
// ErrEmailTaken or ErrUsernameTaken, never the driver's error. The writes
// here skip the check, so the index alone refuses them.
func TestTakenErrorNamesTheIndex(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		d, err := New(db, &Config{Now: func() time.Time { return time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC) }})
		if err != nil {
			t.Fatal(err)
		}
		tn, err := d.EnsureTenant(ctx, "unique")
		if err != nil {
			t.Fatal(err)
		}
		ann, err := d.EnsureUserRole(ctx, tn.ID, "ann", Role{})
		if err != nil {
			t.Fatal(err)
		}
		bob, err := d.EnsureUserRole(ctx, tn.ID, "bob", Role{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.SetContacts(ctx, tn.ID, ann.ID, Contacts{Mobile: "+4915112345678", Email: "ann@example.com"}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			column, value string
			want          error
		}{
			{"username", "ann", ErrUsernameTaken},
			{"username_folded", "ann", ErrUsernameTaken}, // the key of "ANN", refused by the folded index
			{"mobile", "+4915112345678", ErrMobileTaken},
			{"email", "ann@example.com", ErrEmailTaken},
		} {
			_, err := db.NewUpdate().Model((*userRow)(nil)).
				Set("? = ?", bun.Ident(c.column), c.value).
				Where("u.id = ?", bob.ID).
				Exec(ctx)
			if err == nil {
				t.Errorf("%s: the index let bob take ann's %s", c.column, c.value)
				continue
			}
			if got := takenError(err); got != c.want {
				t.Errorf("%s: takenError(%v) = %v, want %v", c.column, err, got, c.want)
			}
		}
		// Errors that are no unique violation are left to the caller.
		for _, err := range []error{errors.New("boom"), context.DeadlineExceeded} {
			if got := takenError(err); got != nil {
				t.Errorf("takenError(%v) = %v, want nil", err, got)
			}
		}
		_, err = db.NewInsert().Model(&tenantRow{Name: "unique", CreatedAt: time.Now()}).Exec(ctx)
		if got := takenError(err); !errors.Is(got, ErrConflict) || !strings.Contains(got.Error(), err.Error()) {
			t.Errorf("duplicate tenant: takenError(%v) = %v, want a conflict wrapping it", err, got)
		}
	})
}
