package trash

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
)

type nopRestorer struct{}

func (nopRestorer) Restore(context.Context, bun.Tx, Entry) error { return nil }
func (nopRestorer) Purge(context.Context, bun.Tx, Entry) error   { return nil }

// Search and Count check their input before they pick a pool (a read for
// a tenant that just wrote may first wait for the standby's replay): a
// refused input routes no read; an accepted one routes one.
func TestInputCheckedBeforeRouting(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	ctx := context.Background()
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	tr, err := New(db, nopRestorer{}, &Config{})
	if err != nil {
		t.Fatal(err)
	}
	ann := deskkit.Principal{UserID: 1, TenantID: 1}
	routed := func() int64 { s := tr.reads.Stats(); return s.Primary + s.Standby }
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"search without a principal", func() error { _, err := tr.Search(ctx, deskkit.Principal{}, Query{TargetType: TargetTask}); return err }},
		{"search without a type", func() error { _, err := tr.Search(ctx, ann, Query{}); return err }},
		{"search of page -1", func() error { _, err := tr.Search(ctx, ann, Query{TargetType: TargetTask, PageNo: -1}); return err }},
		{"count without a principal", func() error { _, err := tr.Count(ctx, deskkit.Principal{}, 1); return err }},
		{"count of project 0", func() error { _, err := tr.Count(ctx, ann, 0); return err }},
	} {
		before := routed()
		err := c.call()
		var in *deskkit.InputError
		if !errors.As(err, &in) && !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: %v, want an input error or ErrUnauthenticated", c.name, err)
		}
		if n := routed() - before; n != 0 {
			t.Errorf("%s: routed %d reads, want none", c.name, n)
		}
	}
	before := routed()
	if _, err := tr.Search(ctx, ann, Query{TargetType: TargetTask}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Count(ctx, ann, 1); err != nil {
		t.Fatal(err)
	}
	if n := routed() - before; n != 2 {
		t.Errorf("a search and a count routed %d reads, want 2", n)
	}
}
