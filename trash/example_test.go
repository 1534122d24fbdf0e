package trash_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/trash"
)

// openSQLite opens the SQLite file at path with the settings deskkit needs:
//
//   - _txlock=immediate: every transaction takes the write lock when it
//     begins, so two writers queue instead of one failing half-way when it
//     first writes (SQLite cannot upgrade a read transaction under a writer);
//   - _busy_timeout=10000: a writer waits up to 10 s for that lock rather
//     than failing at once with "database is locked";
//   - _journal_mode=WAL: readers (searches) do not block the writer, nor it
//     them;
//   - _foreign_keys=1: SQLite enforces foreign keys only when asked.
//
// A host that already opens SQLite itself only has to add these to its DSN.
// (deskkit's own server opens it the same way, and creates the file
// readable by its owner only.)
func openSQLite(path string) (*bun.DB, error) {
	dsn := "file:" + path + "?_txlock=immediate&_busy_timeout=10000&_journal_mode=WAL&_foreign_keys=1"
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	// Bound the pool, as every deskkit database is.
	sqldb.SetMaxOpenConns(8)
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

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
	db, err := openSQLite(filepath.Join(dir, "example.db"))
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

	// The host deletes task 42 and trashes it in one transaction: Add
	// first, then its own rows, so that it takes locks in the trash's order.
	var entry trash.Entry
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		// ... the host reads task 42 (without locking it) ...
		entry, err = tr.Add(ctx, tx, me, trash.NewEntry{
			ProjectID: 3, TargetType: trash.TargetTask, TargetID: 42, TargetName: "Write the release notes", CreatedBy: 7,
		})
		// ... and hides task 42 in its own table here, using tx.
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

// privateProjects is a host's policy: user 7 manages project 3 and sees
// projects 3 and 4 only; other users see every project.
type privateProjects struct{}

func (privateProjects) CanManageProject(_ context.Context, p deskkit.Principal, projectID int64) (bool, error) {
	return p.UserID == 7 && projectID == 3, nil
}

func (privateProjects) VisibleProjects(_ context.Context, p deskkit.Principal) (trash.ProjectScope, error) {
	if p.UserID == 7 {
		return trash.ProjectScope{IDs: []int64{3, 4}}, nil
	}
	return trash.ProjectScope{All: true}, nil
}

// A host restricts what a user may see by making its Authorizer a
// ProjectViewer too: searches across projects cover the visible ones only,
// and an invisible project does not exist.
func ExampleProjectViewer() {
	dir, err := os.MkdirTemp("", "deskkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := openSQLite(filepath.Join(dir, "example.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := trash.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	tr, err := trash.New(db, hostTasks{}, &trash.Config{Authorizer: privateProjects{}})
	if err != nil {
		log.Fatal(err)
	}
	ann := deskkit.Principal{UserID: 8, TenantID: 1}
	for project := int64(3); project <= 5; project++ {
		_, err := tr.Add(ctx, db, ann, trash.NewEntry{
			ProjectID: project, TargetType: trash.TargetTask, TargetID: project, TargetName: fmt.Sprint("task of project ", project), CreatedBy: 8,
		})
		if err != nil {
			log.Fatal(err)
		}
	}

	me := deskkit.Principal{UserID: 7, TenantID: 1}
	page, err := tr.Search(ctx, me, trash.Query{TargetType: trash.TargetTask, OrderSort: trash.Asc})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("total:", page.Total)
	for _, e := range page.List {
		fmt.Println(e.TargetName)
	}
	_, err = tr.Count(ctx, me, 5)
	fmt.Println("count of project 5:", errors.Is(err, trash.ErrNotFound))
	// Output:
	// total: 2
	// task of project 3
	// task of project 4
	// count of project 5: true
}
