package trash_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/trash"
)

// hostTasks is a host application's restorer. A real one would update its
// own tasks table in tx; this one prints what it is asked.
type hostTasks struct{}

func (hostTasks) Restore(_ context.Context, _ bun.Tx, e trash.Entry) error {
	fmt.Printf("host: bring back %s %d\n", e.TargetType, e.TargetID)
	return nil
}

func (hostTasks) Purge(_ context.Context, _ bun.Tx, e trash.Entry) error {
	fmt.Printf("host: delete %s %d for good\n", e.TargetType, e.TargetID)
	return nil
}

// Deleting a task puts it in the trash in the host's own transaction; a
// search finds it, and a restore brings it back through the host's hook.
func Example() {
	dir, err := os.MkdirTemp("", "deskkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := database.OpenSQLite(filepath.Join(dir, "example.db"), database.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	ctx := context.Background()
	if err := trash.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	now := func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }
	tr, err := trash.New(db, hostTasks{}, &trash.Config{Now: now})
	if err != nil {
		log.Fatal(err)
	}
	me := deskkit.Principal{UserID: 7, TenantID: 1}

	// The host deletes task 42 and trashes it in one transaction.
	var entry trash.Entry
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// ... the host hides task 42 in its own table here, using tx ...
		entry, err = tr.Add(ctx, tx, me, trash.NewEntry{
			ProjectID: 3, TargetType: trash.TargetTask, TargetID: 42, TargetName: "Write the release notes", CreatedBy: 7,
		})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	page, err := tr.Search(ctx, me, trash.Query{TargetType: trash.TargetTask, TargetName: "RELEASE"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(page.Total, page.List[0].TargetName, page.List[0].DeletedDate.Format(time.RFC3339))

	if err := tr.Restore(ctx, me, entry.ID); err != nil {
		log.Fatal(err)
	}
	n, err := tr.Count(ctx, me, 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("left in project 3:", n)
	// Output:
	// 1 Write the release notes 2026-11-22T10:00:00Z
	// host: bring back TASK 42
	// left in project 3: 0
}
