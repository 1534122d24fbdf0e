package trash_test

import (
	"context"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

type nopRestorer struct{}

func (nopRestorer) Restore(context.Context, bun.Tx, trash.Entry) error { return nil }
func (nopRestorer) Purge(context.Context, bun.Tx, trash.Entry) error   { return nil }

func TestSmoke(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := trash.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		if err := trash.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		tr, err := trash.New(db, nopRestorer{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := deskkit.Principal{UserID: 1, TenantID: 1}
		sp := int64(9)
		if _, err := tr.Add(ctx, db, p, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetSprint, TargetID: 9, TargetName: "S 100%", CreatedBy: 1}); err != nil {
			t.Fatal(err)
		}
		e, err := tr.Add(ctx, db, p, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 5, TargetName: "Hello_World", SprintID: &sp, CreatedBy: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Add(ctx, db, p, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 5, TargetName: "x", CreatedBy: 1}); err == nil {
			t.Fatal("want conflict")
		}
		pg, err := tr.Search(ctx, p, trash.Query{TargetType: trash.TargetTask, TargetName: "o_w", Filters: []trash.Filter{{Key: "deletedDate", Op: trash.OpLessThanEqual, Value: "2999-01-01 00:00:00"}, {Key: "sprintId", Op: trash.OpNotIn, Value: "[1,2]"}}})
		if err != nil || pg.Total != 1 {
			t.Fatal(pg, err)
		}
		n, _ := tr.Count(ctx, p, 1)
		t.Log(pg, n)
		if err := tr.Restore(ctx, p, e.ID); err != nil {
			t.Fatal(err)
		}
		n2, _ := tr.Count(ctx, p, 1)
		if n != 2 || n2 != 0 {
			t.Fatal(n, n2)
		}
	})
}
