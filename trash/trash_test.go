package trash_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// fakeRestorer records what the trash asks of the host; its function fields,
// when set, decide the answer.
type fakeRestorer struct {
	mu       sync.Mutex
	calls    []string // "restore TASK 5", "purge TASK_SPRINT 9", in order
	RestoreF func(e trash.Entry) error
	PurgeF   func(e trash.Entry) error
}

var _ trash.Restorer = (*fakeRestorer)(nil)

func (f *fakeRestorer) Restore(_ context.Context, _ bun.Tx, e trash.Entry) error {
	return f.record("restore", e, f.RestoreF)
}

func (f *fakeRestorer) Purge(_ context.Context, _ bun.Tx, e trash.Entry) error {
	return f.record("purge", e, f.PurgeF)
}

func (f *fakeRestorer) record(verb string, e trash.Entry, fn func(trash.Entry) error) error {
	if fn != nil {
		if err := fn(e); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%s %s %d", verb, e.TargetType, e.TargetID))
	return nil
}

func (f *fakeRestorer) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

type fakeAuthorizer func(p deskkit.Principal, projectID int64) (bool, error)

func (f fakeAuthorizer) CanManageProject(_ context.Context, p deskkit.Principal, projectID int64) (bool, error) {
	return f(p, projectID)
}

type fakeUsers struct {
	calls int
	users map[int64]deskkit.UserInfo
}

func (f *fakeUsers) ResolveUsers(_ context.Context, _ bun.IDB, _ int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
	f.calls++
	out := map[int64]deskkit.UserInfo{}
	for _, id := range ids {
		if u, ok := f.users[id]; ok {
			out[id] = u
		}
	}
	return out, nil
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var (
	alice = deskkit.Principal{UserID: 1, TenantID: 1}
	bob   = deskkit.Principal{UserID: 2, TenantID: 1}
	admin = deskkit.Principal{UserID: 3, TenantID: 1, Admin: true}
	eve   = deskkit.Principal{UserID: 4, TenantID: 2, Admin: true} // another tenant
)

type fixture struct {
	db       *bun.DB
	trash    *trash.Trash
	restorer *fakeRestorer
	clock    *clock
}

func setup(t *testing.T, db *bun.DB, cfg *trash.Config) *fixture {
	t.Helper()
	ctx := context.Background()
	if err := trash.Migrate(ctx, db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	f := &fixture{db: db, restorer: &fakeRestorer{}, clock: &clock{now: time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC)}}
	if cfg == nil {
		cfg = &trash.Config{}
	}
	cfg.Now = f.clock.Now
	tr, err := trash.New(db, f.restorer, cfg)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	f.trash = tr
	return f
}

func (f *fixture) add(t *testing.T, p deskkit.Principal, e trash.NewEntry) trash.Entry {
	t.Helper()
	if e.CreatedBy == 0 {
		e.CreatedBy = p.UserID
	}
	if e.ProjectID == 0 {
		e.ProjectID = 1
	}
	got, err := f.trash.Add(context.Background(), f.db, p, e)
	if err != nil {
		t.Fatalf("add %+v: %v", e, err)
	}
	return got
}

func task(id int64, name string, sprint ...int64) trash.NewEntry {
	e := trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: id, TargetName: name}
	if len(sprint) > 0 {
		e.SprintID = &sprint[0]
	}
	return e
}

func sprint(id int64, name string) trash.NewEntry {
	return trash.NewEntry{ProjectID: 1, TargetType: trash.TargetSprint, TargetID: id, TargetName: name}
}

func (f *fixture) ids(t *testing.T, p deskkit.Principal, q trash.Query) []int64 {
	t.Helper()
	page, err := f.trash.Search(context.Background(), p, q)
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	var ids []int64
	for _, e := range page.List {
		ids = append(ids, e.TargetID)
	}
	return ids
}

func (f *fixture) count(t *testing.T, p deskkit.Principal, project int64) int64 {
	t.Helper()
	n, err := f.trash.Count(context.Background(), p, project)
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

// TestConformance runs the whole trash contract against every database.
func TestConformance(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		tests := []struct {
			name string
			fn   func(t *testing.T, db *bun.DB)
		}{
			{"AddValidates", testAddValidates},
			{"AddConflict", testAddConflict},
			{"AddJoinsHostTransaction", testAddJoinsHostTransaction},
			{"SearchName", testSearchName},
			{"SearchOrderAndPaging", testSearchOrderAndPaging},
			{"SearchFilters", testSearchFilters},
			{"SearchDeletedDate", testSearchDeletedDate},
			{"SearchDetail", testSearchDetail},
			{"Get", testGet},
			{"DeletedByAndPurgeDate", testDeletedByAndPurgeDate},
			{"SearchInvalid", testSearchInvalid},
			{"TenantIsolation", testTenantIsolation},
			{"RestoreTaskBringsSprint", testRestoreTaskBringsSprint},
			{"RestoreSprintLeavesOwnTasks", testRestoreSprintLeavesOwnTasks},
			{"Permissions", testPermissions},
			{"HookFailureChangesNothing", testHookFailureChangesNothing},
			{"ClearSprintClearsTasks", testClearSprintClearsTasks},
			{"RestoreAll", testRestoreAll},
			{"ClearAll", testClearAll},
			{"AllOwnEntriesOnly", testAllOwnEntriesOnly},
			{"Retention", testRetention},
			{"ConcurrentRestoreAndClear", testConcurrentRestoreAndClear},
			{"EntriesNeverMove", testEntriesNeverMove},
			{"ConcurrentRetention", testConcurrentRetention},
			{"RestoreClearNoDeadlock", testRestoreClearNoDeadlock},
			{"BatchJobsRace", testBatchJobsRace},
			{"ClearNeverPurgesForeignTasks", testClearNeverPurgesForeignTasks},
			{"ClearForeignTasksAdmin", testClearForeignTasksAdmin},
			{"ClearAllRechecksEachBatch", testClearAllRechecksEachBatch},
			{"AddNames", testAddNames},
			{"ProjectViewer", testProjectViewer},
			{"HooksBeforeLocks", testHooksBeforeLocks},
			{"SearchOneConnection", testSearchOneConnection},
			{"SearchTotals", testSearchTotals},
			{"RightsMatchActions", testRightsMatchActions},
			{"ProjectsVisible", testProjectsVisible},
		}
		// Each case migrates the shared database once more (a no-op after the
		// first) and works in a project of its own, so cases do not meet.
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				tc.fn(t, freshDB(t, db))
				checkCounts(t, db)
			})
		}
	})
}

// checkCounts compares the trigger-kept counts with the rows themselves.
func checkCounts(t *testing.T, db *bun.DB) {
	t.Helper()
	type group struct {
		TenantID   int64  `bun:"tenant_id"`
		TargetType string `bun:"target_type"`
		ProjectID  int64  `bun:"project_id"`
		Entries    int64  `bun:"entries"`
	}
	ctx := context.Background()
	var actual, kept []group
	if err := db.NewRaw("SELECT tenant_id, target_type, project_id, count(*) AS entries FROM deskkit_trash GROUP BY tenant_id, target_type, project_id ORDER BY 1, 2, 3").Scan(ctx, &actual); err != nil {
		t.Fatal(err)
	}
	if err := db.NewRaw("SELECT tenant_id, target_type, project_id, entries FROM deskkit_trash_counts WHERE entries <> 0 ORDER BY 1, 2, 3").Scan(ctx, &kept); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(actual, kept); diff != "" {
		t.Errorf("deskkit_trash_counts disagrees with deskkit_trash (-rows +counts):\n%s", diff)
	}
}

// testConcurrentRetention runs PurgeExpired from two "replicas" (two Trash
// values on one database) at once: every entry is purged exactly once.
func testConcurrentRetention(t *testing.T, db *bun.DB) {
	const entries = 60
	a := setup(t, db, &trash.Config{Retention: time.Hour, BatchSize: 7})
	b := setup(t, db, &trash.Config{Retention: time.Hour, BatchSize: 7})
	for i := int64(1); i <= entries; i++ {
		p := alice
		if i%3 == 0 {
			p = eve
		}
		a.add(t, p, task(i, "expiring"))
	}
	a.clock.Advance(2 * time.Hour)
	b.clock.Advance(3 * time.Hour)
	var wg sync.WaitGroup
	counts := make([]int, 2)
	errs := make([]error, 2)
	for i, f := range []*fixture{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = f.trash.PurgeExpired(context.Background())
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if counts[0]+counts[1] != entries {
		t.Fatalf("purged %d + %d, want %d in all", counts[0], counts[1], entries)
	}
	calls := append(a.restorer.Calls(), b.restorer.Calls()...)
	slices.Sort(calls)
	total := len(calls)
	if distinct := len(slices.Compact(calls)); total != entries || distinct != entries {
		t.Fatalf("hook purged %d times, %d distinct targets; want each of %d once", total, distinct, entries)
	}
}

func testEntriesNeverMove(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	e := f.add(t, alice, task(1, "stays"))
	for _, set := range []string{"project_id = 2", "tenant_id = 2", "target_type = 'TASK_SPRINT'"} {
		if _, err := db.ExecContext(context.Background(), "UPDATE deskkit_trash SET "+set+" WHERE id = ?", e.ID); err == nil {
			t.Errorf("UPDATE SET %s was allowed; the counts would lie", set)
		}
	}
	if _, err := db.ExecContext(context.Background(), "UPDATE deskkit_trash SET target_name = 'renamed' WHERE id = ?", e.ID); err != nil {
		t.Errorf("renaming an entry: %v", err)
	}
}

// freshDB empties the trash table between cases that share a database.
func freshDB(t *testing.T, db *bun.DB) *bun.DB {
	t.Helper()
	if err := trash.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(context.Background(), "DELETE FROM deskkit_trash"); err != nil {
		t.Fatal(err)
	}
	return db
}

func testAddValidates(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	sp := int64(3)
	zero := int64(0)
	long := string(make([]rune, trash.MaxNameLength+1))
	tests := []struct {
		e     trash.NewEntry
		field string
	}{
		{trash.NewEntry{ProjectID: 0, TargetType: trash.TargetTask, TargetID: 1, TargetName: "a", CreatedBy: 1}, "projectId"},
		{trash.NewEntry{ProjectID: 1, TargetType: "BUG", TargetID: 1, TargetName: "a", CreatedBy: 1}, "targetType"},
		{trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: -1, TargetName: "a", CreatedBy: 1}, "targetId"},
		{trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 1, TargetName: "", CreatedBy: 1}, "targetName"},
		{trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 1, TargetName: long, CreatedBy: 1}, "targetName"},
		{trash.NewEntry{ProjectID: 1, TargetType: trash.TargetSprint, TargetID: 1, TargetName: "a", SprintID: &sp, CreatedBy: 1}, "sprintId"},
		{trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 1, TargetName: "a", SprintID: &zero, CreatedBy: 1}, "sprintId"},
		{trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 1, TargetName: "a", CreatedBy: 0}, "createdBy"},
	}
	for _, tc := range tests {
		_, err := f.trash.Add(context.Background(), db, alice, tc.e)
		var ie *deskkit.InputError
		if !errors.As(err, &ie) || ie.Field != tc.field {
			t.Errorf("Add(%+v) = %v, want input error on %s", tc.e, err, tc.field)
		}
	}
	_, err := f.trash.Add(context.Background(), db, deskkit.Principal{}, task(1, "a"))
	wantErr(t, err, trash.ErrUnauthenticated)
	if n := f.count(t, alice, 1); n != 0 {
		t.Fatalf("count after rejected adds = %d, want 0", n)
	}
}

func testAddConflict(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	first := f.add(t, alice, task(7, "write docs"))
	_, err := f.trash.Add(context.Background(), db, alice, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 7, TargetName: "again", CreatedBy: 1})
	wantErr(t, err, trash.ErrConflict)
	// The same target id of the other type, or of another tenant, is another target.
	f.add(t, alice, sprint(7, "sprint seven"))
	f.add(t, eve, task(7, "other tenant"))
	got, err := f.trash.Get(context.Background(), alice, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := trash.Entry{ID: first.ID, TenantID: 1, ProjectID: 1, TargetType: trash.TargetTask, TargetID: 7, TargetName: "write docs", CreatedBy: 1, DeletedBy: 1, DeletedDate: f.clock.Now()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("entry (-want +got):\n%s", diff)
	}
}

func testAddJoinsHostTransaction(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	ctx := context.Background()
	rollback := errors.New("host delete failed")
	a, b := task(1, "a"), task(2, "b")
	a.CreatedBy, b.CreatedBy = 1, 1
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := f.trash.Add(ctx, tx, alice, a); err != nil {
			return err
		}
		// A conflict inside the host's transaction must not abort it (PostgreSQL).
		if _, err := f.trash.Add(ctx, tx, alice, a); !errors.Is(err, trash.ErrConflict) {
			return fmt.Errorf("second add: %v", err)
		}
		if _, err := f.trash.Add(ctx, tx, alice, b); err != nil {
			return fmt.Errorf("add after conflict: %w", err)
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("tx = %v", err)
	}
	if n := f.count(t, alice, 1); n != 0 {
		t.Fatalf("count after rolled back host tx = %d, want 0", n)
	}
}

func testSearchName(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	f.add(t, alice, task(1, "Fix LOGIN page"))
	f.add(t, alice, task(2, "login audit"))
	f.add(t, alice, task(3, "100% done"))
	f.add(t, alice, task(4, "1000 done"))
	f.add(t, alice, task(5, "snake_case"))
	f.add(t, alice, task(6, "snakeXcase"))
	f.add(t, alice, task(7, "ÄRGER mit Öl"))
	f.add(t, alice, sprint(8, "login sprint"))
	tests := []struct {
		term string
		want []int64
	}{
		{"login", []int64{2, 1}},
		{"LoGiN", []int64{2, 1}},
		{"0%", []int64{3}},
		{"e_c", []int64{5}},
		{"ärger", []int64{7}},
		{"öl", []int64{7}},
		{`\`, nil},
		{"nothing", nil},
	}
	for _, tc := range tests {
		got := f.ids(t, alice, trash.Query{TargetType: trash.TargetTask, TargetName: tc.term})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("targetName %q (-want +got):\n%s", tc.term, diff)
		}
	}
}

func testSearchOrderAndPaging(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	names := []string{"c", "a", "b", "a", "d"}
	for i, n := range names {
		f.add(t, alice, task(int64(i+1), n))
		f.clock.Advance(time.Minute)
	}
	tests := []struct {
		q    trash.Query
		want []int64
	}{
		{trash.Query{}, []int64{5, 4, 3, 2, 1}},
		{trash.Query{OrderSort: trash.Asc}, []int64{1, 2, 3, 4, 5}},
		{trash.Query{OrderBy: trash.OrderByTargetName, OrderSort: trash.Asc}, []int64{2, 4, 3, 1, 5}},
		{trash.Query{OrderBy: trash.OrderByTargetName}, []int64{5, 1, 3, 4, 2}},
		{trash.Query{OrderBy: trash.OrderByDeletedDate, OrderSort: trash.Asc}, []int64{1, 2, 3, 4, 5}},
		{trash.Query{PageSize: 2}, []int64{5, 4}},
		{trash.Query{PageSize: 2, PageNo: 3}, []int64{1}},
		{trash.Query{PageSize: 2, PageNo: 4}, nil},
	}
	for _, tc := range tests {
		tc.q.TargetType = trash.TargetTask
		page, err := f.trash.Search(context.Background(), alice, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range page.List {
			got = append(got, e.TargetID)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.q, diff)
		}
		if page.Total != 5 {
			t.Errorf("%+v: total = %d, want 5", tc.q, page.Total)
		}
	}
}

func testSearchFilters(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	f.add(t, alice, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 1, TargetName: "alpha one", SprintID: ptr(int64(10))})
	f.clock.Advance(time.Hour)
	f.add(t, bob, trash.NewEntry{ProjectID: 2, TargetType: trash.TargetTask, TargetID: 2, TargetName: "beta two", CreatedBy: 1})
	f.clock.Advance(time.Hour)
	f.add(t, bob, trash.NewEntry{ProjectID: 2, TargetType: trash.TargetTask, TargetID: 3, TargetName: "alpha three", SprintID: ptr(int64(11))})
	tests := []struct {
		filters []trash.Filter
		want    []int64
	}{
		{[]trash.Filter{{"projectId", trash.OpEqual, int64(2)}}, []int64{3, 2}},
		{[]trash.Filter{{"projectId", trash.OpNotEqual, 2}}, []int64{1}},
		{[]trash.Filter{{"targetId", trash.OpGreaterThan, int64(1)}}, []int64{3, 2}},
		{[]trash.Filter{{"targetId", trash.OpGreaterThanEqual, int64(2)}, {"targetId", trash.OpLessThan, int64(3)}}, []int64{2}},
		{[]trash.Filter{{"targetId", trash.OpLessThanEqual, int64(1)}}, []int64{1}},
		{[]trash.Filter{{"targetName", trash.OpMatch, "ALPHA"}}, []int64{3, 1}},
		{[]trash.Filter{{"targetName", trash.OpMatchEnd, "alpha t"}}, []int64{3}},
		{[]trash.Filter{{"targetName", trash.OpNotMatch, "alpha"}}, []int64{2}},
		{[]trash.Filter{{"targetName", trash.OpNotMatchEnd, "beta"}}, []int64{3, 1}},
		{[]trash.Filter{{"targetName", trash.OpEqual, "beta two"}}, []int64{2}},
		{[]trash.Filter{{"targetName", trash.OpIn, []string{"beta two", "alpha one"}}}, []int64{2, 1}},
		{[]trash.Filter{{"id", trash.OpIn, []int64{0, 99}}}, nil},
		{[]trash.Filter{{"targetId", trash.OpIn, []int{1, 3}}}, []int64{3, 1}},
		{[]trash.Filter{{"targetId", trash.OpNotIn, []any{int64(1), 3}}}, []int64{2}},
		{[]trash.Filter{{"sprintId", trash.OpIsNull, nil}}, []int64{2}},
		{[]trash.Filter{{"sprintId", trash.OpIsNotNull, nil}}, []int64{3, 1}},
		{[]trash.Filter{{"sprintId", trash.OpNotEqual, int64(10)}}, []int64{3, 2}},
		{[]trash.Filter{{"sprintId", trash.OpNotIn, []int64{10, 11}}}, []int64{2}},
		{[]trash.Filter{{"createdBy", trash.OpEqual, int64(1)}}, []int64{2, 1}},
		{[]trash.Filter{{"deletedBy", trash.OpEqual, int64(2)}}, []int64{3, 2}},
		{[]trash.Filter{{"targetType", trash.OpEqual, trash.TargetSprint}}, nil},
		{[]trash.Filter{{"targetType", trash.OpIn, []trash.TargetType{trash.TargetTask, trash.TargetSprint}}}, []int64{3, 2, 1}},
		{[]trash.Filter{{"deletedDate", trash.OpGreaterThan, time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC)}}, []int64{3, 2}},
		{[]trash.Filter{{"deletedDate", trash.OpLessThan, time.Date(2026, 11, 1, 10, 30, 0, 0, time.UTC)}}, []int64{1}},
		{[]trash.Filter{{"deletedDate", trash.OpEqual, time.Date(2026, 11, 1, 11, 30, 0, 400_000_000, time.FixedZone("", 3600))}}, []int64{2}},
		{[]trash.Filter{{"projectId", trash.OpEqual, int64(2)}, {"targetName", trash.OpMatch, "alpha"}, {"sprintId", trash.OpIsNotNull, nil}}, []int64{3}},
	}
	for _, tc := range tests {
		got := f.ids(t, alice, trash.Query{TargetType: trash.TargetTask, Filters: tc.filters})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.filters, diff)
		}
	}
	// The top-level projectId is an equality filter too.
	if diff := cmp.Diff([]int64{3, 2}, f.ids(t, alice, trash.Query{TargetType: trash.TargetTask, ProjectID: 2})); diff != "" {
		t.Errorf("projectId (-want +got):\n%s", diff)
	}
}

func ptr[T any](v T) *T { return &v }

func testSearchDeletedDate(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	f.clock.now = time.Date(2026, 11, 1, 9, 30, 0, 700_000_000, time.UTC) // the fraction is cut
	f.add(t, alice, task(1, "a"))
	f.clock.Advance(time.Second)
	f.add(t, alice, task(2, "b"))
	// Any time within the second, in any zone, finds the entry.
	for _, d := range []time.Time{
		time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC),
		time.Date(2026, 11, 1, 9, 30, 0, 999_999_999, time.UTC),
		time.Date(2026, 11, 1, 10, 30, 0, 0, time.FixedZone("", 3600)),
	} {
		if diff := cmp.Diff([]int64{1}, f.ids(t, alice, trash.Query{TargetType: trash.TargetTask, DeletedDate: &d})); diff != "" {
			t.Errorf("deletedDate %s (-want +got):\n%s", d, diff)
		}
	}
}

func testSearchDetail(t *testing.T, db *bun.DB) {
	users := &fakeUsers{users: map[int64]deskkit.UserInfo{1: {Name: "Alice", Avatar: "https://img/a.png"}, 2: {Name: "Bob"}}}
	f := setup(t, db, &trash.Config{Users: users})
	f.add(t, alice, task(1, "a"))
	f.add(t, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 2, TargetName: "b", CreatedBy: 1})
	f.add(t, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 3, TargetName: "c", CreatedBy: 99})
	page, err := f.trash.Search(context.Background(), alice, trash.Query{TargetType: trash.TargetTask, InfoScope: trash.InfoDetail, OrderSort: trash.Asc})
	if err != nil {
		t.Fatal(err)
	}
	type shown struct{ CB, CBA, DB, DBA string }
	var got []shown
	for _, e := range page.List {
		got = append(got, shown{e.CreatedByName, e.CreatedByAvatar, e.DeletedByName, e.DeletedByAvatar})
	}
	want := []shown{
		{"Alice", "https://img/a.png", "Alice", "https://img/a.png"},
		{"Alice", "https://img/a.png", "Bob", ""},
		{"", "", "Bob", ""}, // user 99 is unknown
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
	if users.calls != 1 {
		t.Errorf("resolver calls = %d, want one per page", users.calls)
	}
	basic, err := f.trash.Search(context.Background(), alice, trash.Query{TargetType: trash.TargetTask})
	if err != nil {
		t.Fatal(err)
	}
	// A basic search names the deleter only, in one call.
	var deleters []shown
	for _, e := range basic.List {
		deleters = append(deleters, shown{e.CreatedByName, e.CreatedByAvatar, e.DeletedByName, e.DeletedByAvatar})
	}
	if diff := cmp.Diff([]shown{{DB: "Bob"}, {DB: "Bob"}, {DB: "Alice"}}, deleters); diff != "" || users.calls != 2 {
		t.Errorf("basic search (-want +got), %d resolver calls (want 2):\n%s", users.calls, diff)
	}
}

// Every search result says who deleted the entry and when retention purges
// it: deletedBy, deletedByName ("" for a user the resolver does not know,
// but present) and purgeDate (null without retention; deletedDate plus the
// retention the Trash has now, not the one it had when the entry came).
// testGet: Get answers one entry as a DETAIL search lists it, and nothing
// of another tenant, of a hidden project, or that is not there.
func testGet(t *testing.T, db *bun.DB) {
	users := &fakeUsers{users: map[int64]deskkit.UserInfo{1: {Name: "Alice", Avatar: "https://img/a.png"}, 2: {Name: "Bob"}}}
	v := &viewer{sees: func(p deskkit.Principal) (trash.ProjectScope, error) {
		if p.UserID == alice.UserID {
			return trash.ProjectScope{IDs: []int64{1}}, nil
		}
		return trash.ProjectScope{All: true}, nil
	}}
	f := setup(t, db, &trash.Config{Users: users, Authorizer: v, Retention: 720 * time.Hour})
	ctx := context.Background()
	e := f.add(t, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 1, TargetName: "a", CreatedBy: 1, SprintID: ptr(int64(9))})
	hidden := f.add(t, bob, trash.NewEntry{ProjectID: 2, TargetType: trash.TargetTask, TargetID: 2, TargetName: "b"})
	theirs := f.add(t, eve, task(3, "c"))

	got, err := f.trash.Get(ctx, alice, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CreatedByName != "Alice" || got.CreatedByAvatar != "https://img/a.png" || got.DeletedByName != "Bob" || got.DeletedByAvatar != "" {
		t.Errorf("names: %+v", got)
	}
	page, err := f.trash.Search(ctx, alice, trash.Query{TargetType: trash.TargetTask, InfoScope: trash.InfoDetail})
	if err != nil || len(page.List) != 1 {
		t.Fatalf("search: %+v, %v", page, err)
	}
	if diff := cmp.Diff(page.List[0], got); diff != "" {
		t.Errorf("Get differs from the DETAIL search (-search +get):\n%s", diff)
	}

	// Bob sees project 2; alice does not, so its entry does not exist for her.
	if _, err := f.trash.Get(ctx, bob, hidden.ID); err != nil {
		t.Errorf("bob's entry in project 2: %v", err)
	}
	_, err = f.trash.Get(ctx, alice, hidden.ID)
	wantErr(t, err, trash.ErrNotFound)
	// Another tenant's entry, from either side, and an id that is not there.
	_, err = f.trash.Get(ctx, eve, e.ID)
	wantErr(t, err, trash.ErrNotFound)
	_, err = f.trash.Get(ctx, alice, theirs.ID)
	wantErr(t, err, trash.ErrNotFound)
	_, err = f.trash.Get(ctx, alice, theirs.ID+1000)
	wantErr(t, err, trash.ErrNotFound)
	_, err = f.trash.Get(ctx, deskkit.Principal{}, e.ID)
	wantErr(t, err, trash.ErrUnauthenticated)

	// Without a resolver, no names.
	plain := setup(t, db, nil)
	got, err = plain.trash.Get(ctx, alice, e.ID)
	if err != nil || got.DeletedByName != "" || got.CreatedByName != "" || got.ID != e.ID {
		t.Errorf("without a resolver: %+v, %v", got, err)
	}
}

func testDeletedByAndPurgeDate(t *testing.T, db *bun.DB) {
	ctx := context.Background()
	users := &fakeUsers{users: map[int64]deskkit.UserInfo{1: {Name: "Alice"}}}
	f := setup(t, db, &trash.Config{Users: users})
	gone := deskkit.Principal{UserID: 77, TenantID: 1} // a user the resolver no longer knows
	a := f.add(t, alice, task(1, "a"))
	f.clock.Advance(time.Hour)
	f.add(t, gone, task(2, "b"))
	if a.PurgeDate != nil {
		t.Errorf("Add without retention: purgeDate %v, want nil", a.PurgeDate)
	}
	page, err := f.trash.Search(ctx, alice, trash.Query{TargetType: trash.TargetTask, OrderSort: trash.Asc})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(page.List)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"deletedBy": float64(1), "deletedByName": "Alice", "purgeDate": nil},
		{"deletedBy": float64(77), "deletedByName": "", "purgeDate": nil},
	}
	for i := range got {
		for k := range got[i] {
			if _, ok := want[0][k]; !ok {
				delete(got[i], k)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("search without retention (-want +got):\n%s", diff)
	}

	// Retention set later applies to the entries already there, and a
	// changed retention changes the date.
	for _, retention := range []time.Duration{720 * time.Hour, 24 * time.Hour} {
		tr, err := trash.New(db, f.restorer, &trash.Config{Users: users, Now: f.clock.Now, Retention: retention})
		if err != nil {
			t.Fatal(err)
		}
		page, err := tr.Search(ctx, alice, trash.Query{TargetType: trash.TargetTask, OrderSort: trash.Asc})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.List {
			if e.PurgeDate == nil || !e.PurgeDate.Equal(e.DeletedDate.Add(retention)) {
				t.Errorf("retention %v: entry %d deleted %v has purgeDate %v, want deletedDate + retention", retention, e.ID, e.DeletedDate, e.PurgeDate)
			}
		}
		got, err := tr.Get(ctx, alice, a.ID)
		if err != nil || got.PurgeDate == nil || !got.PurgeDate.Equal(a.DeletedDate.Add(retention)) {
			t.Errorf("retention %v: Get = %+v, %v", retention, got, err)
		}
		// PurgeExpired purges the entry on its first run after its purge date.
		f.clock.Advance(retention - time.Hour)
		if n, err := tr.PurgeExpired(ctx); err != nil || n != 0 {
			t.Errorf("retention %v: purge before any purge date: %d, %v", retention, n, err)
		}
		f.clock.Advance(time.Second)
		if n, err := tr.PurgeExpired(ctx); err != nil || n != 1 {
			t.Errorf("retention %v: purge past the first entry's purge date: %d, %v; want 1", retention, n, err)
		}
		if _, err := tr.Get(ctx, alice, a.ID); !errors.Is(err, trash.ErrNotFound) {
			t.Errorf("retention %v: the first entry after its purge: %v", retention, err)
		}
		// Bring it back for the next round, deleted at the same time as before.
		f.clock.Advance(-retention - time.Second)
		a = f.add(t, alice, task(1, "a"))
		f.clock.Advance(time.Hour)
	}
}

func testSearchInvalid(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	tests := []struct {
		q     trash.Query
		field string
	}{
		{trash.Query{}, "targetType"},
		{trash.Query{TargetType: "BUG"}, "targetType"},
		{trash.Query{TargetType: trash.TargetTask, PageSize: 2001}, "pageSize"},
		{trash.Query{TargetType: trash.TargetTask, PageSize: -1}, "pageSize"},
		{trash.Query{TargetType: trash.TargetTask, PageNo: 100001}, "pageNo"},
		{trash.Query{TargetType: trash.TargetTask, OrderBy: "target_name"}, "orderBy"},
		{trash.Query{TargetType: trash.TargetTask, OrderSort: "asc"}, "orderSort"},
		{trash.Query{TargetType: trash.TargetTask, InfoScope: "FULL"}, "infoScope"},
		{trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{"tenantId", trash.OpEqual, int64(1)}}}, "filters[0].key"},
		{trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{"id", trash.OpEqual, int64(1)}, {"id", "LIKE", int64(1)}}}, "filters[1].op"},
		{trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{"id", trash.OpMatch, "1"}}}, "filters[0].op"},
		{trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{"targetName", trash.OpGreaterThan, "a"}}}, "filters[0].op"},
		{trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{"id", trash.OpIsNull, nil}}}, "filters[0].op"},
		{trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{"sprintId", trash.OpIsNull, int64(3)}}}, "filters[0].value"},
		{trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{"id", trash.OpIn, []int64{}}}}, "filters[0].value"},
		{trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{"targetType", trash.OpEqual, trash.TargetType("BUG")}}}, "filters[0].value"},
		{trash.Query{TargetType: trash.TargetTask, DeletedDate: ptr(time.Date(0, 12, 31, 23, 0, 0, 0, time.UTC))}, "deletedDate"},
		{trash.Query{TargetType: trash.TargetTask, Filters: make([]trash.Filter, 4)}, "filters"},
	}
	for _, tc := range tests {
		_, err := f.trash.Search(context.Background(), alice, tc.q)
		var ie *deskkit.InputError
		if !errors.As(err, &ie) || ie.Field != tc.field {
			t.Errorf("Search(%+v) = %v, want input error on %s", tc.q, err, tc.field)
		}
	}
}

func testTenantIsolation(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	mine := f.add(t, alice, task(1, "shared name"))
	theirs := f.add(t, eve, task(2, "shared name"))
	if got := f.ids(t, alice, trash.Query{TargetType: trash.TargetTask, TargetName: "shared"}); !slices.Equal(got, []int64{1}) {
		t.Errorf("alice sees %v", got)
	}
	if got := f.ids(t, eve, trash.Query{TargetType: trash.TargetTask, Filters: []trash.Filter{{"id", trash.OpEqual, mine.ID}}}); got != nil {
		t.Errorf("eve sees alice's entry: %v", got)
	}
	if n := f.count(t, eve, 1); n != 1 {
		t.Errorf("eve's count = %d, want 1", n)
	}
	ctx := context.Background()
	// Eve is an admin, but of another tenant: alice's entry does not exist for her.
	wantErr(t, f.trash.Restore(ctx, eve, mine.ID), trash.ErrNotFound)
	wantErr(t, f.trash.Clear(ctx, eve, mine.ID), trash.ErrNotFound)
	_, err := f.trash.Get(ctx, eve, mine.ID)
	wantErr(t, err, trash.ErrNotFound)
	if n, err := f.trash.ClearAll(ctx, eve, 1); err != nil || n != 1 {
		t.Fatalf("eve's clear all = %d, %v; want her one entry", n, err)
	}
	if _, err := f.trash.Get(ctx, alice, mine.ID); err != nil {
		t.Errorf("alice's entry after eve's clear all: %v", err)
	}
	_, err = f.trash.Get(ctx, eve, theirs.ID)
	wantErr(t, err, trash.ErrNotFound)
	if diff := cmp.Diff([]string{"purge TASK 2"}, f.restorer.Calls()); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
}

func testRestoreTaskBringsSprint(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	ctx := context.Background()
	f.add(t, alice, sprint(10, "sprint"))
	tk := f.add(t, alice, task(1, "in sprint", 10))
	other := f.add(t, alice, task(2, "also in sprint", 10))
	if err := f.trash.Restore(ctx, alice, tk.ID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"restore TASK_SPRINT 10", "restore TASK 1"}, f.restorer.Calls()); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
	if got := f.ids(t, alice, trash.Query{TargetType: trash.TargetSprint}); got != nil {
		t.Errorf("sprint still in trash: %v", got)
	}
	if _, err := f.trash.Get(ctx, alice, other.ID); err != nil {
		t.Errorf("the sprint's other task left the trash: %v", err)
	}
	wantErr(t, f.trash.Restore(ctx, alice, tk.ID), trash.ErrNotFound)
}

func testRestoreSprintLeavesOwnTasks(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	ctx := context.Background()
	tk := f.add(t, alice, task(1, "trashed on its own", 10))
	sp := f.add(t, alice, sprint(10, "sprint"))
	if err := f.trash.Restore(ctx, alice, sp.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.trash.Get(ctx, alice, tk.ID); err != nil {
		t.Errorf("task trashed on its own left the trash with its sprint: %v", err)
	}
	if diff := cmp.Diff([]string{"restore TASK_SPRINT 10"}, f.restorer.Calls()); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
}

func testPermissions(t *testing.T, db *bun.DB) {
	managers := map[int64]bool{2: true}
	f := setup(t, db, &trash.Config{Authorizer: fakeAuthorizer(func(p deskkit.Principal, project int64) (bool, error) {
		if project == 666 {
			return false, errors.New("directory down")
		}
		return p.UserID == 2 && managers[project], nil
	})})
	ctx := context.Background()
	carol := deskkit.Principal{UserID: 5, TenantID: 1}
	byAlice := f.add(t, alice, task(1, "alice deleted"))
	createdByCarol := f.add(t, alice, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 2, TargetName: "carol created", CreatedBy: 5})
	inProject2 := f.add(t, alice, trash.NewEntry{ProjectID: 2, TargetType: trash.TargetTask, TargetID: 3, TargetName: "project 2"})
	inProject666 := f.add(t, alice, trash.NewEntry{ProjectID: 666, TargetType: trash.TargetTask, TargetID: 4, TargetName: "project 666"})

	wantErr(t, f.trash.Restore(ctx, bob, byAlice.ID), trash.ErrForbidden) // bob manages project 2 only
	wantErr(t, f.trash.Clear(ctx, carol, byAlice.ID), trash.ErrForbidden) // neither deleted nor created it
	if err := f.trash.Restore(ctx, carol, inProject666.ID); err == nil || errors.Is(err, trash.ErrForbidden) {
		t.Errorf("restore when the authorizer fails = %v, want its error passed on", err)
	}
	if _, err := f.trash.Get(ctx, alice, byAlice.ID); err != nil {
		t.Fatalf("forbidden restore removed the entry: %v", err)
	}
	if err := f.trash.Restore(ctx, carol, createdByCarol.ID); err != nil {
		t.Errorf("creator restore: %v", err)
	}
	if err := f.trash.Clear(ctx, bob, inProject2.ID); err != nil {
		t.Errorf("project manager clear: %v", err)
	}
	if err := f.trash.Restore(ctx, admin, byAlice.ID); err != nil {
		t.Errorf("admin restore: %v", err)
	}
	if diff := cmp.Diff([]string{"restore TASK 2", "purge TASK 3", "restore TASK 1"}, f.restorer.Calls()); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
}

func testHookFailureChangesNothing(t *testing.T, db *bun.DB) {
	f := setup(t, db, &trash.Config{BatchSize: 2})
	ctx := context.Background()
	boom := errors.New("host failed")
	sp := f.add(t, alice, sprint(10, "sprint"))
	tk := f.add(t, alice, task(1, "task", 10))
	f.restorer.RestoreF = func(e trash.Entry) error {
		if e.TargetType == trash.TargetTask {
			return boom
		}
		return nil
	}
	f.restorer.PurgeF = func(trash.Entry) error { return boom }
	wantErr(t, f.trash.Restore(ctx, alice, tk.ID), boom) // the sprint restored fine, then the task failed
	wantErr(t, f.trash.Clear(ctx, alice, sp.ID), boom)
	n, err := f.trash.ClearAll(ctx, alice, 1)
	wantErr(t, err, boom)
	if n != 0 {
		t.Errorf("clear all reported %d cleared", n)
	}
	if c := f.count(t, alice, 1); c != 2 {
		t.Fatalf("count after failed hooks = %d, want 2", c)
	}
	if _, err := f.trash.Get(ctx, alice, sp.ID); err != nil {
		t.Errorf("sprint entry lost: %v", err)
	}
}

func testClearSprintClearsTasks(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	ctx := context.Background()
	f.add(t, alice, task(1, "a", 10))
	// Bob deleted it, alice created it: alice may clear it, so the sprint too.
	f.add(t, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 2, TargetName: "b", SprintID: ptr(int64(10)), CreatedBy: 1})
	keep := f.add(t, alice, task(3, "c", 11))
	sp := f.add(t, alice, sprint(10, "sprint"))
	if err := f.trash.Clear(ctx, alice, sp.ID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"purge TASK 1", "purge TASK 2", "purge TASK_SPRINT 10"}, f.restorer.Calls()); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
	if got := f.ids(t, alice, trash.Query{TargetType: trash.TargetTask}); !slices.Equal(got, []int64{keep.TargetID}) {
		t.Errorf("tasks left = %v, want only the other sprint's", got)
	}
}

func testRestoreAll(t *testing.T, db *bun.DB) {
	f := setup(t, db, &trash.Config{BatchSize: 2})
	ctx := context.Background()
	f.add(t, alice, task(1, "a", 10))
	f.add(t, alice, task(2, "b"))
	f.add(t, alice, sprint(10, "s10"))
	f.add(t, alice, task(3, "c", 11))
	f.add(t, alice, sprint(11, "s11"))
	f.add(t, alice, sprint(12, "s12"))
	f.add(t, alice, trash.NewEntry{ProjectID: 2, TargetType: trash.TargetTask, TargetID: 4, TargetName: "other project"})
	n, err := f.trash.RestoreAll(ctx, admin, 1)
	if err != nil || n != 6 {
		t.Fatalf("restore all = %d, %v; want 6", n, err)
	}
	want := []string{"restore TASK_SPRINT 10", "restore TASK_SPRINT 11", "restore TASK_SPRINT 12", "restore TASK 1", "restore TASK 2", "restore TASK 3"}
	if diff := cmp.Diff(want, f.restorer.Calls()); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
	if c := f.count(t, alice, 1); c != 0 {
		t.Errorf("count = %d after restore all", c)
	}
	if c := f.count(t, alice, 2); c != 1 {
		t.Errorf("other project's count = %d, want 1", c)
	}
}

func testClearAll(t *testing.T, db *bun.DB) {
	f := setup(t, db, &trash.Config{BatchSize: 2})
	ctx := context.Background()
	for i := int64(1); i <= 5; i++ {
		f.add(t, alice, task(i, "t", 10))
	}
	f.add(t, alice, sprint(10, "s10"))
	f.add(t, alice, trash.NewEntry{ProjectID: 2, TargetType: trash.TargetTask, TargetID: 9, TargetName: "other project"})
	n, err := f.trash.ClearAll(ctx, admin, 1)
	if err != nil || n != 6 {
		t.Fatalf("clear all = %d, %v; want 6", n, err)
	}
	calls := f.restorer.Calls()
	if len(calls) != 6 || calls[5] != "purge TASK_SPRINT 10" {
		t.Errorf("hook calls = %v, want five tasks then the sprint", calls)
	}
	if c := f.count(t, alice, 1); c != 0 {
		t.Errorf("count = %d after clear all", c)
	}
	if c := f.count(t, alice, 2); c != 1 {
		t.Errorf("other project's count = %d, want 1", c)
	}
	_, err = f.trash.ClearAll(ctx, admin, 0)
	var ie *deskkit.InputError
	if !errors.As(err, &ie) || ie.Field != "projectId" {
		t.Errorf("clear all of project 0: %v", err)
	}
}

func testAllOwnEntriesOnly(t *testing.T, db *bun.DB) {
	f := setup(t, db, &trash.Config{BatchSize: 1})
	ctx := context.Background()
	f.add(t, alice, task(1, "deleted by alice"))
	f.add(t, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 2, TargetName: "created by alice", CreatedBy: 1})
	f.add(t, bob, task(3, "bob's"))
	f.add(t, bob, sprint(4, "bob's sprint"))
	n, err := f.trash.RestoreAll(ctx, alice, 1)
	if err != nil || n != 2 {
		t.Fatalf("alice restore all = %d, %v; want her 2", n, err)
	}
	n, err = f.trash.ClearAll(ctx, alice, 1)
	if err != nil || n != 0 {
		t.Fatalf("alice clear all = %d, %v; want 0", n, err)
	}
	if c := f.count(t, alice, 1); c != 2 {
		t.Errorf("count = %d, want bob's 2 left", c)
	}
}

func testRetention(t *testing.T, db *bun.DB) {
	f := setup(t, db, &trash.Config{Retention: 30 * 24 * time.Hour, BatchSize: 2})
	ctx := context.Background()
	f.add(t, alice, task(1, "old", 10))
	f.add(t, eve, task(2, "old, other tenant"))
	f.add(t, alice, sprint(10, "old sprint"))
	f.clock.Advance(20 * 24 * time.Hour)
	young := f.add(t, alice, task(3, "young"))
	f.clock.Advance(10*24*time.Hour + time.Second)
	n, err := f.trash.PurgeExpired(ctx)
	if err != nil || n != 3 {
		t.Fatalf("purge expired = %d, %v; want 3", n, err)
	}
	if _, err := f.trash.Get(ctx, alice, young.ID); err != nil {
		t.Errorf("young entry purged: %v", err)
	}
	if n, err := f.trash.PurgeExpired(ctx); err != nil || n != 0 {
		t.Errorf("second purge = %d, %v", n, err)
	}
	off := setup(t, db, nil)
	if n, err := off.trash.PurgeExpired(ctx); err != nil || n != 0 {
		t.Errorf("purge without retention = %d, %v", n, err)
	}
}

// testConcurrentRestoreAndClear races a restore and a clear of one entry,
// many times: exactly one wins, the other finds nothing, and the host is
// asked exactly once.
func testConcurrentRestoreAndClear(t *testing.T, db *bun.DB) {
	f := setup(t, db, nil)
	ctx := context.Background()
	const rounds = 20
	for i := int64(1); i <= rounds; i++ {
		e := f.add(t, alice, task(i, "racy"))
		errs := make([]error, 2)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); errs[0] = f.trash.Restore(ctx, alice, e.ID) }()
		go func() { defer wg.Done(); errs[1] = f.trash.Clear(ctx, alice, e.ID) }()
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, trash.ErrNotFound):
				t.Fatalf("round %d: unexpected error %v", i, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d winners (%v)", i, wins, errs)
		}
	}
	if calls := f.restorer.Calls(); len(calls) != rounds {
		t.Fatalf("hook calls = %d, want %d", len(calls), rounds)
	}
	if c := f.count(t, alice, 1); c != 0 {
		t.Fatalf("count = %d after races", c)
	}
}

// Every field of a searched entry, its sprint and deletion date included,
// is the one Add returned, on both databases.
func TestSearchReturnsEntriesAsAdded(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := setup(t, db, &trash.Config{Retention: 24 * time.Hour})
		want := []trash.Entry{
			f.add(t, alice, task(7, "seven", 3)),
			f.add(t, alice, task(8, "eight")),
		}
		page, err := f.trash.Search(context.Background(), alice, trash.Query{TargetType: trash.TargetTask, OrderSort: trash.Asc})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, page.List); diff != "" {
			t.Errorf("searched entries (-added +searched):\n%s", diff)
		}
	})
}
