package trash_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/trash"
)

// testClearNeverPurgesForeignTasks is fault 4: alice deleted
// sprint 10, bob deleted his task in it. Alice may not clear bob's task, so
// she may not clear the sprint either (it would purge the task), nor clear
// all of the project; all three change nothing. Restoring bob's task brings
// back alice's sprint: that is allowed (a task needs its sprint).
func testClearNeverPurgesForeignTasks(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	ctx := context.Background()
	sp := f.add(t, alice, sprint(10, "alice's sprint"))
	bobs := f.add(t, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 1, TargetName: "bob's task", SprintID: ptr(int64(10)), CreatedBy: 2})
	own := f.add(t, alice, task(2, "alice's own task"))

	wantErr(t, f.trash.Clear(ctx, alice, bobs.ID), trash.ErrForbidden)
	err := f.trash.Clear(ctx, alice, sp.ID)
	wantErr(t, err, trash.ErrForbidden)
	wantClientMessage(t, err, "sprint 10 holds trashed tasks you may not clear")
	n, err := f.trash.ClearAll(ctx, alice, 1)
	wantErr(t, err, trash.ErrForbidden)
	wantClientMessage(t, err, "sprint 10 holds trashed tasks you may not clear")
	if n != 0 {
		t.Errorf("refused clear all reports %d cleared", n)
	}
	for _, e := range []trash.Entry{sp, bobs, own} {
		if _, err := f.trash.Get(ctx, alice, e.ID); err != nil {
			t.Errorf("%s %d left the trash after a refused clear: %v", e.TargetType, e.TargetID, err)
		}
	}
	if calls := f.restorer.Calls(); len(calls) != 0 {
		t.Fatalf("refused clears reached the host: %v", calls)
	}

	// Bob may restore his task, which brings alice's sprint back with it.
	if err := f.trash.Restore(ctx, bob, bobs.ID); err != nil {
		t.Fatalf("bob restores his task: %v", err)
	}
	if diff := cmp.Diff([]string{"restore TASK_SPRINT 10", "restore TASK 1"}, f.restorer.Calls()); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
	// With nothing foreign left in it, alice clears her project.
	if n, err := f.trash.ClearAll(ctx, alice, 1); err != nil || n != 1 {
		t.Errorf("clear all = %d, %v; want alice's one task", n, err)
	}
}

// testClearForeignTasksAdmin: whoever manages the project may clear the
// sprint with every task in it.
func testClearForeignTasksAdmin(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	ctx := context.Background()
	sp := f.add(t, alice, sprint(10, "alice's sprint"))
	f.add(t, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 1, TargetName: "bob's task", SprintID: ptr(int64(10)), CreatedBy: 2})
	if err := f.trash.Clear(ctx, admin, sp.ID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"purge TASK 1", "purge TASK_SPRINT 10"}, f.restorer.Calls()); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
}

// txRestorer hands the transaction to its function fields.
type txRestorer struct {
	restore, purge func(ctx context.Context, tx bun.Tx, e trash.Entry) error
}

var _ trash.Restorer = txRestorer{}

func (r txRestorer) Restore(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	if r.restore == nil {
		return nil
	}
	return r.restore(ctx, tx, e)
}

func (r txRestorer) Purge(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	if r.purge == nil {
		return nil
	}
	return r.purge(ctx, tx, e)
}

// testClearAllRechecksEachBatch: ClearAll checks before its first batch, but
// a foreign task may be trashed into one of the caller's sprints while it
// runs. Here bob's task arrives while alice's task batch commits; the
// sprint batch sees it inside its own transaction and refuses, so bob's
// task is not purged.
func testClearAllRechecksEachBatch(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	ctx := context.Background()
	var tr *trash.Trash
	host := txRestorer{purge: func(ctx context.Context, tx bun.Tx, e trash.Entry) error {
		if e.TargetType == trash.TargetTask && e.TargetID == 2 {
			_, err := tr.Add(ctx, tx, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 1, TargetName: "bob's late task", SprintID: ptr(int64(10)), CreatedBy: 2})
			return err
		}
		return nil
	}}
	// One entry per batch: with more room, the task pass would go on to
	// the sprint pass in the same transaction, and the refusal would roll
	// the task back too.
	tr, err := trash.New(db, host, &trash.Config{Now: f.clock.Now, BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	sp := f.add(t, alice, sprint(10, "alice's sprint"))
	f.add(t, alice, task(2, "alice's task"))
	n, err := tr.ClearAll(ctx, alice, 1)
	wantErr(t, err, trash.ErrForbidden)
	if n != 1 {
		t.Errorf("clear all = %d; want the task batch before the refusal", n)
	}
	if _, err := tr.Get(ctx, alice, sp.ID); err != nil {
		t.Errorf("sprint cleared despite bob's task: %v", err)
	}
	page, err := tr.Search(ctx, alice, trash.Query{TargetType: trash.TargetTask})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.List) != 1 || page.List[0].TargetID != 1 {
		t.Errorf("tasks left = %+v, want bob's", page.List)
	}
}

func wantClientMessage(t *testing.T, err error, want string) {
	t.Helper()
	var cm deskkit.ClientMessager
	if !errors.As(err, &cm) || cm.ClientMessage() != want {
		t.Errorf("error %v: client message %q, want %q", err, clientMessage(err), want)
	}
}

func clientMessage(err error) string {
	var cm deskkit.ClientMessager
	if errors.As(err, &cm) {
		return cm.ClientMessage()
	}
	return ""
}

// testAddNames is fault 10: names a database would store as
// something else (or refuse) are input errors, and every accepted name
// comes back from Get exactly as it went in.
func testAddNames(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	ctx := context.Background()
	for i, name := range []string{
		"nul\x00byte",
		"bad \xff utf-8",
		"\xc3",                 // a truncated sequence
		"tab\there",            // control characters
		"line\nbreak",          //
		"next\u0085line",       // C1 control
		"invoice\u202Efdp.exe", // a right-to-left override
		"isolate \u2067x\u2069",
		"   ",
		strings.Repeat("é", trash.MaxNameLength+1),
	} {
		e := task(int64(i+1), name)
		e.CreatedBy = alice.UserID
		_, err := f.trash.Add(ctx, db, alice, e)
		var ie *deskkit.InputError
		if !errors.As(err, &ie) || ie.Field != "targetName" {
			t.Errorf("Add(%.40q) = %v, want an input error on targetName", name, err)
		}
	}
	accepted := []string{
		"plain",
		" leading and trailing spaces ",
		"Ünïcödé ÄÖÜ ß",
		"日本語のタスク",
		"emoji 🎉👩‍💻",
		"zero\u200bwidth",
		"right-to-left שלום\u200f 12", // a bidirectional mark
		`quotes ' " \ % _ ?`,
		strings.Repeat("é", trash.MaxNameLength),
		strings.Repeat("🎉", trash.MaxNameLength),
	}
	for i, name := range accepted {
		ne := task(int64(100+i), name)
		ne.CreatedBy = alice.UserID
		e, err := f.trash.Add(ctx, db, alice, ne)
		if err != nil {
			t.Errorf("Add(%.40q): %v", name, err)
			continue
		}
		got, err := f.trash.Get(ctx, alice, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.TargetName != name || e.TargetName != name {
			t.Errorf("Add(%q) returned %q, Get returns %q", name, e.TargetName, got.TargetName)
		}
	}
	// A search term no name can contain is an input error, not a database one.
	for _, term := range []string{"nul\x00", "\xff"} {
		_, err := f.trash.Search(ctx, alice, trash.Query{TargetType: trash.TargetTask, TargetName: term})
		var ie *deskkit.InputError
		if !errors.As(err, &ie) || ie.Field != "targetName" {
			t.Errorf("Search(%q) = %v, want an input error on targetName", term, err)
		}
		_, err = f.trash.Search(ctx, alice, trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{Key: "targetName", Op: trash.OpMatch, Value: term}}})
		if !errors.As(err, &ie) || ie.Field != "filters[0].value" {
			t.Errorf("filter MATCH %q = %v, want an input error on filters[0].value", term, err)
		}
	}
}

// viewer is an Authorizer and ProjectViewer: who manages and who sees what.
type viewer struct {
	manages func(p deskkit.Principal, projectID int64) bool
	sees    func(p deskkit.Principal) (trash.ProjectScope, error)
	asked   int
}

var (
	_ trash.Authorizer    = (*viewer)(nil)
	_ trash.ProjectViewer = (*viewer)(nil)
)

func (v *viewer) CanManageProject(_ context.Context, p deskkit.Principal, projectID int64) (bool, error) {
	return v.manages != nil && v.manages(p, projectID), nil
}

func (v *viewer) VisibleProjects(_ context.Context, p deskkit.Principal) (trash.ProjectScope, error) {
	v.asked++
	return v.sees(p)
}

// testProjectViewer is fault 13: a host can hide projects. Alice
// sees projects 1 and 2, bob none, carol all.
func testProjectViewer(t *testing.T, db *bun.DB) {
	carol := deskkit.Principal{UserID: 5, TenantID: 1}
	down := deskkit.Principal{UserID: 6, TenantID: 1}
	v := &viewer{sees: func(p deskkit.Principal) (trash.ProjectScope, error) {
		switch p.UserID {
		case alice.UserID:
			return trash.ProjectScope{IDs: []int64{1, 2}}, nil
		case carol.UserID:
			return trash.ProjectScope{All: true}, nil
		case down.UserID:
			return trash.ProjectScope{}, errors.New("directory down")
		}
		return trash.ProjectScope{}, nil
	}}
	f := setup(t, db, &trash.Config{Authorizer: v})
	ctx := context.Background()
	for i, project := range []int64{1, 1, 2, 3, 3, 3} {
		f.add(t, alice, trash.NewEntry{ProjectID: project, TargetType: trash.TargetTask, TargetID: int64(i + 1), TargetName: "shared name"})
	}
	hidden := f.add(t, alice, trash.NewEntry{ProjectID: 3, TargetType: trash.TargetTask, TargetID: 7, TargetName: "hidden"})

	// Across projects, the visible ones only; totals from the counts table
	// (a full page) and from counting rows (a name term) agree.
	for _, q := range []trash.Query{
		{TargetType: trash.TargetTask, PageSize: 1},
		{TargetType: trash.TargetTask, PageSize: 1, TargetName: "shared"},
		{TargetType: trash.TargetTask, PageSize: 1, Filters: []trash.Filter{{Key: "sprintId", Op: trash.OpIsNull}}},
		{TargetType: trash.TargetTask},
	} {
		page, err := f.trash.Search(ctx, alice, q)
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != 3 || len(page.List) == 0 || page.List[0].ProjectID == 3 {
			t.Errorf("%+v: total %d, first %+v; want 3 in all from projects 1 and 2", q, page.Total, page.List)
		}
	}
	if got := f.ids(t, alice, trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{Key: "projectId", Op: trash.OpEqual, Value: int64(3)}}}); got != nil {
		t.Errorf("a filter reached a hidden project: %v", got)
	}
	// A hidden project, and its entries, do not exist for alice.
	_, err := f.trash.Search(ctx, alice, trash.Query{TargetType: trash.TargetTask, ProjectID: 3})
	wantErr(t, err, trash.ErrNotFound)
	_, err = f.trash.Count(ctx, alice, 3)
	wantErr(t, err, trash.ErrNotFound)
	_, err = f.trash.Get(ctx, alice, hidden.ID)
	wantErr(t, err, trash.ErrNotFound)
	wantErr(t, f.trash.Restore(ctx, alice, hidden.ID), trash.ErrNotFound)
	wantErr(t, f.trash.Clear(ctx, alice, hidden.ID), trash.ErrNotFound)
	_, err = f.trash.RestoreAll(ctx, alice, 3)
	wantErr(t, err, trash.ErrNotFound)
	_, err = f.trash.ClearAll(ctx, alice, 3)
	wantErr(t, err, trash.ErrNotFound)
	if n := f.count(t, alice, 1); n != 2 {
		t.Errorf("alice's count of project 1 = %d, want 2", n)
	}

	// Bob sees nothing; carol and admins everything; errors are passed on.
	page, err := f.trash.Search(ctx, bob, trash.Query{TargetType: trash.TargetTask})
	if err != nil || page.Total != 0 || len(page.List) != 0 || page.List == nil {
		t.Errorf("bob's search = %+v, %v; want an empty page", page, err)
	}
	for _, p := range []deskkit.Principal{carol, admin} {
		page, err := f.trash.Search(ctx, p, trash.Query{TargetType: trash.TargetTask, PageSize: 2})
		if err != nil || page.Total != 7 {
			t.Errorf("user %d: total %d, %v; want all 7", p.UserID, page.Total, err)
		}
	}
	asked := v.asked
	if _, err := f.trash.Count(ctx, admin, 3); err != nil || v.asked != asked {
		t.Errorf("admin count: %v, viewer asked %d times", err, v.asked-asked)
	}
	if _, err := f.trash.Search(ctx, down, trash.Query{TargetType: trash.TargetTask}); err == nil || errors.Is(err, trash.ErrNotFound) {
		t.Errorf("search when the viewer fails = %v, want its error", err)
	}
	// Alice may still act on what she sees.
	if err := f.trash.Clear(ctx, alice, mustFirst(t, f, alice, 1).ID); err != nil {
		t.Errorf("clear in a visible project: %v", err)
	}
	if calls := f.restorer.Calls(); len(calls) != 1 {
		t.Errorf("hook calls = %v, want the one clear", calls)
	}
}

func mustFirst(t *testing.T, f *fixture, p deskkit.Principal, project int64) trash.Entry {
	t.Helper()
	page, err := f.trash.Search(context.Background(), p, trash.Query{TargetType: trash.TargetTask, ProjectID: project, PageSize: 1})
	if err != nil || len(page.List) == 0 {
		t.Fatalf("first entry of project %d: %+v, %v", project, page, err)
	}
	return page.List[0]
}

// testHooksBeforeLocks: the Authorizer and the ProjectViewer are asked
// before the trash opens its transaction. Each writes to the trash from
// its own connection when asked: under the trash's locks (on SQLite, the
// write lock) that write would wait for a transaction that waits for it.
func testHooksBeforeLocks(t *testing.T, db *bun.DB) {
	var tr *trash.Trash
	next := int64(1000)
	write := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second) // a guard: it answers at once when right
		defer cancel()
		next++
		_, err := tr.Add(ctx, db, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: next, TargetName: "written by a hook", CreatedBy: 2})
		return err
	}
	var hookErrs []error
	v := &viewer{
		manages: func(p deskkit.Principal, _ int64) bool {
			hookErrs = append(hookErrs, write(context.Background()))
			return true
		},
		sees: func(p deskkit.Principal) (trash.ProjectScope, error) {
			hookErrs = append(hookErrs, write(context.Background()))
			return trash.ProjectScope{All: true}, nil
		},
	}
	f := setup(t, db, &trash.Config{Authorizer: v})
	tr = f.trash
	ctx := context.Background()
	carol := deskkit.Principal{UserID: 5, TenantID: 1} // neither deleted nor created: the Authorizer decides
	s := f.add(t, alice, sprint(10, "s"))
	a := f.add(t, alice, task(1, "a", 10))
	b := f.add(t, alice, task(2, "b"))
	if err := f.trash.Restore(ctx, carol, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.trash.Clear(ctx, carol, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.trash.ClearAll(ctx, carol, 1); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(hookErrs...); err != nil {
		t.Fatalf("a hook could not write: it ran under the trash's lock: %v", err)
	}
	if len(hookErrs) < 6 {
		t.Fatalf("hooks asked %d times, want both hooks for each of the 3 calls", len(hookErrs))
	}
	_, err := f.trash.Get(ctx, alice, s.ID)
	wantErr(t, err, trash.ErrNotFound) // restored with its task
}

// testSearchOneConnection is item 9: a search never waits for a
// second connection while it holds one. With a pool of one, a search that
// ran its page and its total concurrently waited for the connection the
// other held; one that runs them in turn never waits.
func testSearchOneConnection(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	ctx := context.Background()
	for i := range int64(5) {
		f.add(t, alice, task(i+1, "common name"))
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.SetMaxOpenConns(8) })
	before := db.Stats().WaitCount
	for _, q := range []trash.Query{
		{TargetType: trash.TargetTask, PageSize: 2},                          // total from the counts table
		{TargetType: trash.TargetTask, PageSize: 2, TargetName: "common"},    // total counted
		{TargetType: trash.TargetTask, PageSize: 2, PageNo: 9, ProjectID: 1}, // empty page
	} {
		page, err := f.trash.Search(ctx, alice, q)
		if err != nil || page.Total != 5 {
			t.Fatalf("%+v: total %d, %v", q, page.Total, err)
		}
	}
	if waits := db.Stats().WaitCount - before; waits != 0 {
		t.Errorf("searches waited %d times for a second connection", waits)
	}
}

// testSearchTotals: the total comes from the page when the page is short,
// and agrees with the count otherwise.
func testSearchTotals(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	for i := range int64(7) {
		f.add(t, alice, task(i+1, "name"))
	}
	for _, q := range []trash.Query{
		{PageSize: 3}, {PageSize: 3, PageNo: 3}, {PageSize: 3, PageNo: 4}, {PageSize: 10},
		{PageSize: 3, TargetName: "nam"}, {PageSize: 3, PageNo: 3, TargetName: "nam"}, {PageSize: 3, PageNo: 5, TargetName: "nam"},
	} {
		q.TargetType = trash.TargetTask
		page, err := f.trash.Search(context.Background(), alice, q)
		if err != nil || page.Total != 7 {
			t.Errorf("%+v: total %d, %v; want 7", q, page.Total, err)
		}
	}
	if got := f.ids(t, alice, trash.Query{TargetType: trash.TargetTask, TargetName: "nothing"}); !slices.Equal(got, nil) {
		t.Errorf("no match: %v", got)
	}
}
