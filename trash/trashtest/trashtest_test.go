package trashtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
	"github.com/deskkit/deskkit/trash/trashtest"
)

// The fake Restorer hands the trash's calls to its function fields: a
// refusal keeps the entry, an acceptance removes it.
func TestRestorer(t *testing.T) {
	ctx := context.Background()
	db := dbtest.OpenSQLite(t)
	if err := trash.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	refuse := errors.New("the task's sprint is gone")
	var restored []int64
	r := &trashtest.Restorer{RestoreFn: func(_ context.Context, _ bun.Tx, e trash.Entry) error {
		if e.TargetID == 1 {
			return refuse
		}
		restored = append(restored, e.TargetID)
		return nil
	}}
	tr, err := trash.New(db, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	admin := deskkit.Principal{UserID: 1, TenantID: 1, Admin: true}
	add := func(target int64) trash.Entry {
		t.Helper()
		var e trash.Entry
		err := deskkit.RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error {
			var err error
			e, err = tr.Add(ctx, tx, admin, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: target, TargetName: "t", CreatedBy: 1})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	refused, taken := add(1), add(2)
	if err := tr.Restore(ctx, admin, refused.ID); !errors.Is(err, refuse) {
		t.Errorf("Restore refused by RestoreFn: %v", err)
	}
	if _, err := tr.Get(ctx, admin, refused.ID); err != nil {
		t.Errorf("the refused entry: %v, want it kept", err)
	}
	if err := tr.Restore(ctx, admin, taken.ID); err != nil || len(restored) != 1 || restored[0] != 2 {
		t.Errorf("Restore = %v, RestoreFn saw %v; want target 2", err, restored)
	}
	if err := tr.Clear(ctx, admin, refused.ID); err != nil { // PurgeFn nil: accepted
		t.Errorf("Clear with no PurgeFn: %v", err)
	}
}
