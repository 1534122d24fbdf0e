package trash_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// eventRow is what testPublisher writes: a row of a table of its own, in
// the transaction it is handed, so that a rollback takes the event back.
type eventRow struct {
	bun.BaseModel `bun:"table:trash_test_events"`

	Seq      int64  `bun:"seq,pk,autoincrement"`
	ID       string `bun:"id,notnull,unique"`
	TenantID int64  `bun:"tenant_id,notnull"`
	Type     string `bun:"type,notnull"`
	Data     string `bun:"data,notnull"`
}

// published is one event handed to testPublisher, and its tenant; its
// Heading and Body are in Title and Text, in English (english), so that
// the tests compare what a reader of English gets.
type published struct {
	TenantID int64
	Event    deskkit.Event
}

// english is ev with its Heading and Body written in English as its Title
// and Text.
func english(ev deskkit.Event) deskkit.Event {
	ev.Title, ev.Text = ev.Message(nil, language.English)
	ev.Heading, ev.Body = deskkit.Text{}, deskkit.Text{}
	return ev
}

// testPublisher is a deskkit.Publisher as the real one behaves for the
// trash: it only writes a row through the db it is given. It also checks
// what a publisher checks (title and text) and that it is called inside a
// transaction, and remembers every event it was handed, committed or not.
type testPublisher struct {
	mu     sync.Mutex
	handed map[string]published     // by event id, in English
	raw    map[string]deskkit.Event // by event id, as handed
	// Fail, when set, decides whether to refuse an event.
	Fail func(ev deskkit.Event) error
}

var _ deskkit.Publisher = (*testPublisher)(nil)

func (p *testPublisher) Publish(ctx context.Context, db bun.IDB, tenantID int64, ev deskkit.Event) error {
	switch db.(type) {
	case bun.Tx, *bun.Tx:
	default:
		return fmt.Errorf("test publisher: handed a %T, not a transaction", db)
	}
	if p.Fail != nil {
		if err := p.Fail(ev); err != nil {
			return err
		}
	}
	if ev.Heading.IsZero() || ev.Title != "" || ev.Text != "" {
		return fmt.Errorf("test publisher: %s has no Heading, or a Title or Text beside it", ev.Type)
	}
	title, text := ev.Message(nil, language.English)
	if err := deskkit.CheckName("title", title, 200); err != nil {
		return err
	}
	if err := deskkit.CheckName("text", text, 3000); err != nil {
		return err
	}
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return err
	}
	if _, err := db.NewInsert().Model(&eventRow{ID: ev.ID, TenantID: tenantID, Type: ev.Type, Data: string(data)}).Exec(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handed == nil {
		p.handed = map[string]published{}
		p.raw = map[string]deskkit.Event{}
	}
	p.handed[ev.ID] = published{TenantID: tenantID, Event: english(ev)}
	p.raw[ev.ID] = ev
	return nil
}

// Handed is how many events the publisher was handed, rolled back or not.
func (p *testPublisher) Handed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.handed)
}

// committed returns the events whose rows committed, in publishing order,
// and removes their rows, so that the next call sees only newer ones.
func (p *testPublisher) committed(t *testing.T, db *bun.DB) []published {
	t.Helper()
	ctx := context.Background()
	var rows []eventRow
	if err := db.NewSelect().Model(&rows).OrderExpr("seq").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.NewDelete().Model((*eventRow)(nil)).Where("1 = 1").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []published{}
	for _, r := range rows {
		e, ok := p.handed[r.ID]
		if !ok {
			t.Fatalf("event row %s was never handed to the publisher", r.ID)
		}
		if !strings.HasPrefix(r.ID, "msg_") || len(r.ID) != 30 {
			t.Errorf("event id %q is not a deskkit.NewEventID", r.ID)
		}
		// The row holds the data as JSON: the data must encode to the same.
		if b, err := json.Marshal(e.Event.Data); err != nil || string(b) != r.Data {
			t.Errorf("event %s: row data %s, handed %s (%v)", r.ID, r.Data, b, err)
		}
		checkRender(t, p.raw[r.ID])
		out = append(out, e)
	}
	return out
}

// checkRender writes ev's Heading and Body as a channel does at delivery:
// in Chinese a translation of the English.
func checkRender(t *testing.T, ev deskkit.Event) {
	t.Helper()
	msgs, err := deskkit.NewMessages()
	if err != nil {
		t.Fatal(err)
	}
	en, enText := ev.Message(nil, language.English)
	title, text := ev.Message(msgs, language.SimplifiedChinese)
	if title == en || text == enText || !strings.ContainsAny(title+text, "回收站永久") {
		t.Errorf("%s written in Chinese: %q / %q", ev.Type, title, text)
	}
}

// setupEvents is setup with a testPublisher and its table, emptied.
func setupEvents(t *testing.T, db *bun.DB, cfg *trash.Config) (*fixture, *testPublisher) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.NewCreateTable().Model((*eventRow)(nil)).IfNotExists().Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.NewDelete().Model((*eventRow)(nil)).Where("1 = 1").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		cfg = &trash.Config{}
	}
	pub := &testPublisher{}
	cfg.Publisher = pub
	return setup(t, db, cfg), pub
}

// ignoreIDs leaves the event ids out of comparisons (committed checks
// them), and the Heading and Body, which published holds in English in
// the Title and Text.
var ignoreIDs = cmpopts.IgnoreFields(deskkit.Event{}, "ID", "Heading", "Body")

func wantEvents(t *testing.T, want, got []published) {
	t.Helper()
	if diff := cmp.Diff(want, got, ignoreIDs); diff != "" {
		t.Errorf("committed events (-want +got):\n%s", diff)
	}
	checkKeys(t, got)
}

// names resolves alice's and the admin's names, not bob's.
func names() *fakeUsers {
	return &fakeUsers{users: map[int64]deskkit.UserInfo{
		alice.UserID: {Name: "Alice"},
		admin.UserID: {Name: "Root_admin"},
	}}
}

func TestEvents(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		for _, tc := range []struct {
			name string
			fn   func(t *testing.T, db *bun.DB)
		}{
			{"EntryEvents", testEntryEvents},
			{"RestoreAllClearAllEvents", testAllEvents},
			{"PartialBatchJobEvent", testPartialBatchJobEvent},
			{"PurgedEvents", testPurgedEvents},
			{"PurgedEventsTwoReplicas", testPurgedEventsTwoReplicas},
			{"RollbackPublishesNothing", testRollbackPublishesNothing},
			{"FailingPublisher", testFailingPublisher},
			{"LongNames", testEventLongNames},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.fn(t, freshDB(t, db))
				checkCounts(t, db)
			})
		}
	})
}

var (
	alicePub = &deskkit.Actor{ID: alice.UserID, Name: "Alice"}
	adminPub = &deskkit.Actor{ID: admin.UserID, Name: "Root_admin"}
	bobPub   = &deskkit.Actor{ID: bob.UserID} // the resolver does not know bob
)

// testEntryEvents checks the events of Add, Restore and Clear, every field.
func testEntryEvents(t *testing.T, db *bun.DB) {
	f, pub := setupEvents(t, db, &trash.Config{Users: names()})
	ctx := context.Background()
	t0 := f.clock.Now()
	sp := f.add(t, alice, sprint(10, "Sprint *1*"))
	tk := f.add(t, alice, task(20, "Fix [login](http://x.test) <b>", 10))
	f.clock.Advance(time.Minute)
	t1 := f.clock.Now()
	if err := f.trash.Restore(ctx, alice, tk.ID); err != nil {
		t.Fatal(err)
	}
	data := func(e trash.Entry, a *deskkit.Actor) trash.EntryEventData {
		return trash.EntryEventData{Actor: a, ProjectID: 1, TrashID: e.ID, TargetType: e.TargetType, TargetID: e.TargetID, TargetName: e.TargetName}
	}
	wantEvents(t, []published{
		{1, deskkit.Event{
			Type: "sprint.trashed", Time: t0, Data: data(sp, alicePub),
			Title: `Sprint "Sprint \*1\*" moved to the trash`,
			Text:  `Alice moved sprint "Sprint \*1\*" of project 1 to the trash.`,
		}},
		{1, deskkit.Event{
			Type: "task.trashed", Time: t0, Data: data(tk, alicePub),
			Title: `Task "Fix \[login\](http://x.test) \<b\>" moved to the trash`,
			Text:  `Alice moved task "Fix \[login\](http://x.test) \<b\>" of project 1 to the trash.`,
		}},
		{1, deskkit.Event{
			Type: "task.restored", Time: t1,
			Data: trash.RestoredEventData{
				EntryEventData: data(tk, alicePub),
				AlsoRestored:   &trash.EventTarget{TrashID: sp.ID, TargetType: trash.TargetSprint, TargetID: 10, TargetName: "Sprint *1*"},
			},
			Title: `Task "Fix \[login\](http://x.test) \<b\>" restored from the trash`,
			Text:  `Alice restored task "Fix \[login\](http://x.test) \<b\>" of project 1 from the trash, and with it its sprint "Sprint \*1\*".`,
		}},
	}, pub.committed(t, db))

	// A sprint cleared with its two tasks, a task cleared alone.
	sp3 := f.add(t, alice, sprint(11, "S11"))
	a := f.add(t, alice, task(21, "a", 11))
	b := f.add(t, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 22, TargetName: "b&c", SprintID: ptr(int64(11)), CreatedBy: 2})
	lone := f.add(t, alice, task(23, "lone"))
	f.clock.Advance(time.Minute)
	t2 := f.clock.Now()
	pub.committed(t, db) // the trashed events, checked above
	if err := f.trash.Clear(ctx, admin, sp3.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.trash.Clear(ctx, alice, lone.ID); err != nil {
		t.Fatal(err)
	}
	got := pub.committed(t, db)
	wantEvents(t, []published{
		{1, deskkit.Event{
			Type: "sprint.cleared", Time: t2,
			Data: trash.ClearedEventData{EntryEventData: data(sp3, adminPub), AlsoCleared: []trash.EventTarget{
				{TrashID: a.ID, TargetType: trash.TargetTask, TargetID: 21, TargetName: "a"},
				{TrashID: b.ID, TargetType: trash.TargetTask, TargetID: 22, TargetName: "b&c"},
			}},
			Title: `Sprint "S11" deleted for good`,
			Text:  `Root\_admin cleared sprint "S11" of project 1 from the trash: it is deleted for good, with the 2 trashed tasks in it.`,
		}},
		{1, deskkit.Event{
			Type: "task.cleared", Time: t2,
			Data:  trash.ClearedEventData{EntryEventData: data(lone, alicePub), AlsoCleared: []trash.EventTarget{}},
			Title: `Task "lone" deleted for good`,
			Text:  `Alice cleared task "lone" of project 1 from the trash: it is deleted for good.`,
		}},
	}, got)

	// A sprint restored alone, by bob, whom the resolver does not know.
	f.clock.Advance(time.Minute)
	sp4 := f.add(t, bob, sprint(13, "S13"))
	if err := f.trash.Restore(ctx, bob, sp4.ID); err != nil {
		t.Fatal(err)
	}
	got = pub.committed(t, db)
	wantEvents(t, []published{
		{1, deskkit.Event{
			Type: "sprint.trashed", Time: f.clock.Now(), Data: data(sp4, bobPub),
			Title: `Sprint "S13" moved to the trash`,
			Text:  `User 2 moved sprint "S13" of project 1 to the trash.`,
		}},
		{1, deskkit.Event{
			Type: "sprint.restored", Time: f.clock.Now(), Data: trash.RestoredEventData{EntryEventData: data(sp4, bobPub)},
			Title: `Sprint "S13" restored from the trash`,
			Text:  `User 2 restored sprint "S13" of project 1 from the trash.`,
		}},
	}, got)

	// Add inside a host transaction publishes in it, and an entry of
	// another tenant in that tenant.
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := f.trash.Add(ctx, tx, eve, trash.NewEntry{ProjectID: 5, TargetType: trash.TargetTask, TargetID: 1, TargetName: "x", CreatedBy: eve.UserID})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got = pub.committed(t, db)
	if len(got) != 1 || got[0].TenantID != eve.TenantID || got[0].Event.Data.(trash.EntryEventData).Actor.ID != eve.UserID {
		t.Errorf("add of another tenant published %+v", got)
	}
}

// testAllEvents checks that restore-all and clear-all publish one event
// each, with the total over several batches, and nothing per entry.
func testAllEvents(t *testing.T, db *bun.DB) {
	f, pub := setupEvents(t, db, &trash.Config{BatchSize: 2, Users: names()})
	ctx := context.Background()
	add := func() {
		f.add(t, alice, task(1, "a", 10))
		f.add(t, alice, task(2, "b"))
		f.add(t, alice, sprint(10, "s10"))
		f.add(t, alice, task(3, "c", 11))
		f.add(t, alice, sprint(11, "s11"))
		f.add(t, alice, task(4, "d"))
		f.add(t, alice, trash.NewEntry{ProjectID: 2, TargetType: trash.TargetTask, TargetID: 9, TargetName: "other project"})
		pub.committed(t, db)
	}
	add()
	f.clock.Advance(time.Hour)
	n, err := f.trash.RestoreAll(ctx, admin, 1)
	if err != nil || n != 6 {
		t.Fatalf("restore all = %d, %v; want 6", n, err)
	}
	wantEvents(t, []published{{1, deskkit.Event{
		Type: "trash.restored", Time: f.clock.Now(),
		Data:  trash.ProjectEventData{Actor: adminPub, ProjectID: 1, Count: 6},
		Title: "6 entries restored from the trash of project 1",
		Text:  `Root\_admin restored 6 entries from the trash of project 1.`,
	}}}, pub.committed(t, db))

	// Nothing left: no event.
	if n, err := f.trash.RestoreAll(ctx, admin, 1); err != nil || n != 0 {
		t.Fatalf("second restore all = %d, %v", n, err)
	}
	if got := pub.committed(t, db); len(got) != 0 {
		t.Errorf("restore all of an empty trash published %+v", got)
	}

	freshDB(t, db)
	add()
	n, err = f.trash.ClearAll(ctx, alice, 1) // alice's own entries: all six
	if err != nil || n != 6 {
		t.Fatalf("clear all = %d, %v; want 6", n, err)
	}
	wantEvents(t, []published{{1, deskkit.Event{
		Type: "trash.cleared", Time: f.clock.Now(),
		Data:  trash.ProjectEventData{Actor: alicePub, ProjectID: 1, Count: 6},
		Title: "6 entries deleted for good from the trash of project 1",
		Text:  "Alice cleared 6 entries from the trash of project 1: they are deleted for good.",
	}}}, pub.committed(t, db))

	// Exactly one batch's worth, sprints only: the last batch is the
	// tasks' empty one, and it publishes.
	freshDB(t, db)
	f.add(t, alice, sprint(30, "s30"))
	f.add(t, alice, sprint(31, "s31"))
	pub.committed(t, db)
	if n, err := f.trash.RestoreAll(ctx, alice, 1); err != nil || n != 2 {
		t.Fatalf("restore all = %d, %v; want 2", n, err)
	}
	got := pub.committed(t, db)
	if len(got) != 1 || !cmp.Equal(got[0].Event.Data, trash.ProjectEventData{Actor: alicePub, ProjectID: 1, Count: 2}) {
		t.Errorf("restore all of two sprints published %+v", got)
	}
}

// testPartialBatchJobEvent checks that a batch job that fails after some
// batches committed still announces those, once, with their count.
func testPartialBatchJobEvent(t *testing.T, db *bun.DB) {
	f, pub := setupEvents(t, db, &trash.Config{BatchSize: 2})
	ctx := context.Background()
	for i := int64(1); i <= 5; i++ {
		f.add(t, alice, task(i, "t"))
	}
	pub.committed(t, db)
	boom := errors.New("host failed")
	f.restorer.RestoreF = func(e trash.Entry) error {
		if e.TargetID == 5 {
			return boom
		}
		return nil
	}
	n, err := f.trash.RestoreAll(ctx, alice, 1)
	wantErr(t, err, boom)
	if n != 4 {
		t.Fatalf("restore all = %d, want the 4 of the first two batches", n)
	}
	got := pub.committed(t, db)
	if len(got) != 1 || got[0].Event.Type != "trash.restored" || !cmp.Equal(got[0].Event.Data, trash.ProjectEventData{Actor: &deskkit.Actor{ID: 1}, ProjectID: 1, Count: 4}) {
		t.Errorf("partial restore all published %+v", got)
	}
	if c := f.count(t, alice, 1); c != 1 {
		t.Errorf("count = %d, want the failed entry left", c)
	}
}

// testPurgedEvents checks one trash.purged per project per run, over
// several batches, tenants and projects, with no actor.
func testPurgedEvents(t *testing.T, db *bun.DB) {
	f, pub := setupEvents(t, db, &trash.Config{Retention: 30 * 24 * time.Hour, BatchSize: 2})
	ctx := context.Background()
	f.add(t, alice, task(1, "a", 10))
	f.add(t, alice, sprint(10, "s10"))
	f.add(t, eve, task(2, "other tenant"))
	f.add(t, alice, trash.NewEntry{ProjectID: 2, TargetType: trash.TargetTask, TargetID: 3, TargetName: "p2"})
	f.add(t, alice, task(4, "b"))
	f.clock.Advance(20 * 24 * time.Hour)
	f.add(t, alice, task(5, "young"))
	pub.committed(t, db)
	f.clock.Advance(10*24*time.Hour + time.Second)
	n, err := f.trash.PurgeExpired(ctx)
	if err != nil || n != 5 {
		t.Fatalf("purge expired = %d, %v; want 5", n, err)
	}
	purged := func(tenant, project int64, count int, title, text string) published {
		return published{tenant, deskkit.Event{
			Type: "trash.purged", Time: f.clock.Now(), Title: title, Text: text,
			Data: trash.ProjectEventData{ProjectID: project, Count: count, RetentionSeconds: 30 * 24 * 60 * 60},
		}}
	}
	wantEvents(t, []published{
		purged(1, 1, 3, "3 entries purged from the trash of project 1",
			"Retention purged 3 entries deleted more than 30 days ago from the trash of project 1: they are deleted for good."),
		purged(1, 2, 1, "1 entry purged from the trash of project 2",
			"Retention purged 1 entry deleted more than 30 days ago from the trash of project 2: it is deleted for good."),
		purged(2, 1, 1, "1 entry purged from the trash of project 1",
			"Retention purged 1 entry deleted more than 30 days ago from the trash of project 1: it is deleted for good."),
	}, pub.committed(t, db))
	if n, err := f.trash.PurgeExpired(ctx); err != nil || n != 0 {
		t.Fatalf("second purge = %d, %v", n, err)
	}
	if got := pub.committed(t, db); len(got) != 0 {
		t.Errorf("a run that purged nothing published %+v", got)
	}
}

// testPurgedEventsTwoReplicas runs retention from two replicas at once:
// each run announces what it purged, at most one event per project, and
// the counts add up to every entry once.
func testPurgedEventsTwoReplicas(t *testing.T, db *bun.DB) {
	const entries = 40
	a, pub := setupEvents(t, db, &trash.Config{Retention: time.Hour, BatchSize: 3})
	b := setup(t, db, &trash.Config{Retention: time.Hour, BatchSize: 3, Publisher: pub})
	for i := int64(1); i <= entries; i++ {
		a.add(t, alice, trash.NewEntry{ProjectID: 1 + i%4, TargetType: trash.TargetTask, TargetID: i, TargetName: "expiring"})
	}
	pub.committed(t, db)
	a.clock.Advance(2 * time.Hour)
	b.clock.Advance(2 * time.Hour)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, f := range []*fixture{a, b} {
		wg.Go(func() { _, errs[i] = f.trash.PurgeExpired(context.Background()) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	perProject := map[int64]int{} // entries announced
	events := map[int64]int{}     // events announcing them
	for _, e := range pub.committed(t, db) {
		d := e.Event.Data.(trash.ProjectEventData)
		perProject[d.ProjectID] += d.Count
		events[d.ProjectID]++
	}
	for project, n := range events {
		if n > 2 {
			t.Errorf("project %d announced %d times by two runs, want at most once per run", project, n)
		}
	}
	want := map[int64]int{1: 10, 2: 10, 3: 10, 4: 10}
	if diff := cmp.Diff(want, perProject); diff != "" {
		t.Errorf("purged per project (-want +got):\n%s", diff)
	}
}

// testRollbackPublishesNothing: the publisher was handed the events, but
// the operations rolled back, and so did their events.
func testRollbackPublishesNothing(t *testing.T, db *bun.DB) {
	f, pub := setupEvents(t, db, nil)
	ctx := context.Background()
	rollback := errors.New("host delete failed")
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := f.trash.Add(ctx, tx, alice, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 1, TargetName: "a", CreatedBy: 1}); err != nil {
			return err
		}
		return rollback
	})
	wantErr(t, err, rollback)
	sp := f.add(t, alice, sprint(10, "s"))
	tk := f.add(t, alice, task(2, "b", 10))
	pub.committed(t, db)
	handed := pub.Handed()

	boom := errors.New("host failed")
	f.restorer.RestoreF = func(e trash.Entry) error {
		if e.TargetType == trash.TargetTask {
			return boom
		}
		return nil
	}
	f.restorer.PurgeF = func(trash.Entry) error { return boom }
	wantErr(t, f.trash.Restore(ctx, alice, tk.ID), boom)
	wantErr(t, f.trash.Clear(ctx, alice, sp.ID), boom)
	_, err = f.trash.ClearAll(ctx, alice, 1) // fails in its first batch
	wantErr(t, err, boom)
	if got := pub.committed(t, db); len(got) != 0 {
		t.Errorf("rolled back operations left events %+v", got)
	}
	if c := f.count(t, alice, 1); c != 2 {
		t.Errorf("count = %d, want both entries still there", c)
	}
	// The Add of the rolled back host transaction was handed over too: a
	// check that rollback, not silence, kept the table empty.
	if handed < 3 {
		t.Errorf("publisher handed %d events, want the rolled back add's too", handed)
	}
}

// testFailingPublisher: an event the publisher refuses fails the operation,
// which changes nothing. (A batch job larger than one batch keeps the
// batches before its last, as on any error; see Events in the package
// documentation.)
func testFailingPublisher(t *testing.T, db *bun.DB) {
	f, pub := setupEvents(t, db, &trash.Config{Retention: time.Hour})
	ctx := context.Background()
	sp := f.add(t, alice, sprint(10, "s"))
	tk := f.add(t, alice, task(1, "a", 10))
	// Project 3: restore-all and clear-all take its sprint and tasks in one
	// batch, so one transaction.
	f.add(t, alice, trash.NewEntry{ProjectID: 3, TargetType: trash.TargetSprint, TargetID: 30, TargetName: "s30"})
	f.add(t, alice, trash.NewEntry{ProjectID: 3, TargetType: trash.TargetTask, TargetID: 31, TargetName: "t31", SprintID: ptr(int64(30))})
	f.add(t, alice, trash.NewEntry{ProjectID: 3, TargetType: trash.TargetTask, TargetID: 32, TargetName: "t32"})
	pub.committed(t, db)
	refused := errors.New("publisher refused")
	pub.Fail = func(deskkit.Event) error { return refused }

	newTask := func(id int64) trash.NewEntry {
		return trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: id, TargetName: "new", CreatedBy: 1}
	}
	if _, err := f.trash.Add(ctx, db, alice, newTask(2)); !errors.Is(err, refused) {
		t.Errorf("add: %v, want the publisher's error", err)
	}
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := f.trash.Add(ctx, tx, alice, newTask(3))
		return err
	})
	if !errors.Is(err, refused) {
		t.Errorf("add in a host transaction: %v, want the publisher's error", err)
	}
	wantErr(t, f.trash.Restore(ctx, alice, tk.ID), refused)
	wantErr(t, f.trash.Clear(ctx, alice, sp.ID), refused)
	for name, all := range map[string]func(context.Context, deskkit.Principal, int64) (int, error){
		"restore all": f.trash.RestoreAll, "clear all": f.trash.ClearAll,
	} {
		if n, err := all(ctx, alice, 3); !errors.Is(err, refused) || n != 0 {
			t.Errorf("%s = %d, %v; want 0 and the publisher's error", name, n, err)
		}
	}
	f.clock.Advance(2 * time.Hour)
	if n, err := f.trash.PurgeExpired(ctx); !errors.Is(err, refused) || n != 0 {
		t.Errorf("purge expired = %d, %v; want 0 and the publisher's error", n, err)
	}
	var left []int64
	if err := db.NewSelect().Table("deskkit_trash").Column("target_id").Order("target_id").Scan(ctx, &left); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{1, 10, 30, 31, 32}, left); diff != "" {
		t.Errorf("entries after refused events (-want +got):\n%s", diff)
	}
	if got := pub.committed(t, db); len(got) != 0 {
		t.Errorf("refused events committed: %+v", got)
	}
	// Once the publisher takes events again, the same operations go through.
	pub.Fail = nil
	if err := f.trash.Restore(ctx, alice, tk.ID); err != nil {
		t.Fatal(err)
	}
	if got := pub.committed(t, db); len(got) != 1 || got[0].Event.Type != trash.EventTaskRestored {
		t.Errorf("restore after the publisher recovered published %+v", got)
	}
}

// testEventLongNames: names as long as Add accepts, made of characters
// that all need escaping, still give titles and texts within the bounds
// of deskkit.Event (testPublisher checks them).
func testEventLongNames(t *testing.T, db *bun.DB) {
	long := strings.Repeat("*", trash.MaxNameLength)
	f, pub := setupEvents(t, db, &trash.Config{Users: &fakeUsers{users: map[int64]deskkit.UserInfo{
		alice.UserID: {Name: strings.Repeat("[", 300)},
		bob.UserID:   {Name: "two\nlines"},
	}}})
	ctx := context.Background()
	sp := f.add(t, alice, sprint(10, long))
	tk := f.add(t, bob, trash.NewEntry{ProjectID: 1, TargetType: trash.TargetTask, TargetID: 1, TargetName: long, SprintID: ptr(int64(10)), CreatedBy: 1})
	if err := f.trash.Restore(ctx, alice, tk.ID); err != nil {
		t.Fatal(err)
	}
	got := pub.committed(t, db)
	if len(got) != 3 {
		t.Fatalf("published %d events, want 3", len(got))
	}
	wantTitle := `Sprint "` + strings.Repeat(`\*`, 59) + `…" moved to the trash`
	if got[0].Event.Title != wantTitle {
		t.Errorf("title = %q, want %q", got[0].Event.Title, wantTitle)
	}
	if !strings.HasPrefix(got[1].Event.Text, "User 2 moved task") {
		t.Errorf("a name with a line break is shown as %q, want the user id", got[1].Event.Text)
	}
	if got[2].Event.Data.(trash.RestoredEventData).AlsoRestored.TrashID != sp.ID {
		t.Errorf("restore data %+v", got[2].Event.Data)
	}
}

// checkKeys checks that the data of every event has exactly the JSON keys,
// nested ones included, of its type's example in EventTypes: the catalogue
// shows the shape receivers get.
func checkKeys(t *testing.T, events []published) {
	t.Helper()
	examples := map[string]any{}
	for _, et := range trash.EventTypes() {
		examples[et.Name] = et.Example
	}
	for _, e := range events {
		ex, ok := examples[e.Event.Type]
		if !ok {
			t.Errorf("event type %s is not in EventTypes", e.Event.Type)
			continue
		}
		want, got := keyPaths(t, ex), keyPaths(t, e.Event.Data)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: keys of the data (-example +real):\n%s", e.Event.Type, diff)
		}
	}
}

// keyPaths returns the keys of v encoded as a JSON object, with those of
// nested objects as "a.b" and of objects in arrays as "a[].b", sorted. A
// null or an empty array stands for its key alone.
func keyPaths(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s is not a JSON object: %v", b, err)
	}
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				out = append(out, prefix+k)
				walk(prefix+k+".", x)
			}
		case []any:
			for _, x := range v {
				walk(strings.TrimSuffix(prefix, ".")+"[].", x)
			}
		}
	}
	walk("", m)
	slices.Sort(out)
	return slices.Compact(out)
}

func TestEventTypes(t *testing.T) {
	types := trash.EventTypes()
	var got []string
	for _, et := range types {
		got = append(got, et.Name)
		if et.About.String() == "" || !strings.HasSuffix(et.About.String(), ".") {
			t.Errorf("%s: description %q is not a sentence", et.Name, et.About.String())
		}
		b, err := json.Marshal(et.Example)
		if err != nil || len(b) == 0 || b[0] != '{' {
			t.Errorf("%s: example %s does not encode as a JSON object (%v)", et.Name, b, err)
		}
		if strings.Contains(string(b), "tenantId") {
			t.Errorf("%s: example %s holds a tenantId, which the publisher adds", et.Name, b)
		}
	}
	want := []string{
		trash.EventTaskTrashed, trash.EventSprintTrashed, trash.EventTaskRestored, trash.EventSprintRestored,
		trash.EventTaskCleared, trash.EventSprintCleared, trash.EventTrashRestored, trash.EventTrashCleared, trash.EventTrashPurged,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
	// A fresh copy each call: changing one changes nothing for the next.
	types[0].Name = "changed"
	types[2].Example.(trash.RestoredEventData).AlsoRestored.TargetName = "changed"
	again := trash.EventTypes()
	if again[0].Name != trash.EventTaskTrashed || again[2].Example.(trash.RestoredEventData).AlsoRestored.TargetName != "Sprint 14" {
		t.Errorf("EventTypes shares its values between calls")
	}
}

// dbUsers is a UserResolver that reads the database, as a host's does: it
// reads each name through the db it is handed.
type dbUsers struct{ names map[int64]string }

func (u dbUsers) ResolveUsers(ctx context.Context, db bun.IDB, _ int64, ids []int64) (map[int64]deskkit.UserInfo, error) {
	out := map[int64]deskkit.UserInfo{}
	for _, id := range ids {
		if n, ok := u.names[id]; ok {
			var name string
			if err := db.NewSelect().ColumnExpr("?", n).Scan(ctx, &name); err != nil {
				return nil, err
			}
			out[id] = deskkit.UserInfo{Name: name}
		}
	}
	return out, nil
}

// TestPoolOfOne: with a pool of one connection, Add in the host's
// transaction names the actor through that transaction (a lookup through
// the pool would wait for a second connection until the deadline), and
// Restore and Clear name it before theirs.
func TestPoolOfOne(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f, pub := setupEvents(t, db, &trash.Config{Users: dbUsers{map[int64]string{alice.UserID: "Alice"}}})
		db.SetMaxOpenConns(1)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var entries []trash.Entry
		for _, e := range []trash.NewEntry{task(20, "Fix login"), task(21, "Ship it")} {
			e.CreatedBy = alice.UserID
			err := deskkit.RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error {
				got, err := f.trash.Add(ctx, tx, alice, e)
				entries = append(entries, got)
				return err
			})
			if err != nil {
				t.Fatalf("Add in the host's transaction on a pool of one: %v", err)
			}
		}
		if err := f.trash.Restore(ctx, alice, entries[0].ID); err != nil {
			t.Fatalf("Restore on a pool of one: %v", err)
		}
		if err := f.trash.Clear(ctx, alice, entries[1].ID); err != nil {
			t.Fatalf("Clear on a pool of one: %v", err)
		}
		got := pub.committed(t, db)
		if len(got) != 4 {
			t.Fatalf("%d events, want 4: %+v", len(got), got)
		}
		for _, e := range got {
			if !strings.HasPrefix(e.Event.Text, "Alice ") {
				t.Errorf("%s names its actor %q, want Alice", e.Event.Type, e.Event.Text)
			}
		}
	})
}
