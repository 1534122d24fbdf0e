package trash_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/trash"
)

// logRestorer is a host that writes what it is asked into a table, through
// the transaction it is given: a transaction that rolls back (or is retried)
// leaves no trace, so the log is exactly what committed.
type logRestorer struct{}

var _ trash.Restorer = logRestorer{}

type hostLog struct {
	bun.BaseModel `bun:"table:test_host_log"`

	ID         int64  `bun:"id,pk,autoincrement"`
	Verb       string `bun:"verb"`
	TargetType string `bun:"target_type"`
	TargetID   int64  `bun:"target_id"`
}

func (logRestorer) Restore(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	return logCall(ctx, tx, "restore", e)
}

func (logRestorer) Purge(ctx context.Context, tx bun.Tx, e trash.Entry) error {
	return logCall(ctx, tx, "purge", e)
}

func logCall(ctx context.Context, tx bun.Tx, verb string, e trash.Entry) error {
	_, err := tx.NewInsert().Model(&hostLog{Verb: verb, TargetType: string(e.TargetType), TargetID: e.TargetID}).Exec(ctx)
	return err
}

// testRestoreClearNoDeadlock is fault 1: in one project, clearing
// sprint i while restoring the task of sprint i+1 (which pulls sprint i+1,
// which another goroutine clears) once deadlocked on PostgreSQL. Every pair
// of sprint and task must end up restored together or cleared together, and
// the only error allowed is ErrNotFound for the loser of each pair.
func testRestoreClearNoDeadlock(t *testing.T, db *bun.DB) {
	ctx := context.Background()
	resetHostLog(t, db)
	f := setup(t, db, nil)
	tr, err := trash.New(db, logRestorer{}, &trash.Config{Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	const sprints, rounds = 15, 6
	for round := range rounds {
		base := int64(round * 100)
		sprintEntries := make([]trash.Entry, sprints)
		taskEntries := make([]trash.Entry, sprints)
		for i := range int64(sprints) {
			sprintEntries[i] = f.add(t, alice, sprint(base+i+1, "sprint"))
			taskEntries[i] = f.add(t, alice, task(base+i+1, "task", base+i+1))
		}
		// Goroutine 2i clears sprint i; goroutine 2i+1 restores the task of
		// sprint i+1 (wrapping), so each pair is raced by one clear and one
		// restore, and neighbouring pairs overlap in time.
		errs := make([]error, 2*sprints)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range sprints {
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				errs[2*i] = tr.Clear(ctx, alice, sprintEntries[i].ID)
			}()
			go func() {
				defer wg.Done()
				<-start
				errs[2*i+1] = tr.Restore(ctx, alice, taskEntries[(i+1)%sprints].ID)
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil && !errors.Is(err, trash.ErrNotFound) {
				t.Fatalf("round %d, call %d: %v", round, i, err)
			}
		}
		for i := range sprints {
			cleared, restored := errs[2*i] == nil, errs[2*((i+sprints-1)%sprints)+1] == nil
			if cleared == restored {
				t.Fatalf("round %d, sprint %d: clear ok %v, restore ok %v; want exactly one to win", round, i+1, cleared, restored)
			}
		}
		if n := f.count(t, alice, 1); n != 0 {
			t.Fatalf("round %d: %d entries left in the trash", round, n)
		}
		checkCounts(t, db)
	}
	// The host's committed log: each sprint and its task, both restored or
	// both purged, once each.
	var log []hostLog
	if err := db.NewSelect().Model(&log).Order("id").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	verbs := map[string]string{} // "TASK 7" -> "restore"
	for _, l := range log {
		k := fmt.Sprintf("%s %d", l.TargetType, l.TargetID)
		if v, ok := verbs[k]; ok {
			t.Fatalf("%s was handled twice (%s, then %s)", k, v, l.Verb)
		}
		verbs[k] = l.Verb
	}
	for round := range rounds {
		for i := range int64(sprints) {
			id := int64(round*100) + i + 1
			s, k := verbs[fmt.Sprintf("TASK_SPRINT %d", id)], verbs[fmt.Sprintf("TASK %d", id)]
			if s == "" || s != k {
				t.Errorf("sprint %d was %q, its task %q; want both restored or both purged", id, s, k)
			}
		}
	}
}

// testBatchJobsRace runs restore-all, clear-all, retention and single
// restores and clears of one project at once, in small batches, so their
// transactions interleave: none may fail (but for ErrNotFound on a single
// entry another took), every target is handled exactly once, and the trash
// ends empty with counts that agree.
func testBatchJobsRace(t *testing.T, db *bun.DB) {
	ctx := context.Background()
	resetHostLog(t, db)
	f := setup(t, db, nil)
	tr, err := trash.New(db, logRestorer{}, &trash.Config{Now: f.clock.Now, BatchSize: 3, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var singles []trash.Entry
	for s := int64(1); s <= 8; s++ {
		singles = append(singles, f.add(t, alice, sprint(s, "sprint")))
		for k := range int64(3) {
			singles = append(singles, f.add(t, alice, task(s*10+k, "task", s)))
		}
		f.add(t, alice, task(1000+s, "loose"))
	}
	f.clock.Advance(2 * time.Hour) // everything has expired for retention
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	run := func(fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := fn(); err != nil && !errors.Is(err, trash.ErrNotFound) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	run(func() error { _, err := tr.RestoreAll(ctx, admin, 1); return err })
	run(func() error { _, err := tr.ClearAll(ctx, admin, 1); return err })
	run(func() error { _, err := tr.PurgeExpired(ctx); return err })
	for i, e := range singles {
		if i%2 == 0 {
			run(func() error { return tr.Restore(ctx, alice, e.ID) })
		} else {
			run(func() error { return tr.Clear(ctx, alice, e.ID) })
		}
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// Whatever the interleaving left (a job may have passed an id before a
	// restore put nothing back: ids only grow), a last clear-all empties it.
	if _, err := tr.ClearAll(ctx, admin, 1); err != nil {
		t.Fatal(err)
	}
	if n := f.count(t, alice, 1); n != 0 {
		t.Fatalf("%d entries left", n)
	}
	checkCounts(t, db)
	var log []hostLog
	if err := db.NewSelect().Model(&log).Scan(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range log {
		k := fmt.Sprintf("%s %d", l.TargetType, l.TargetID)
		if seen[k] {
			t.Errorf("%s handled twice", k)
		}
		seen[k] = true
	}
	if len(seen) != 8*5 {
		t.Errorf("%d targets handled, want %d", len(seen), 8*5)
	}
}

// resetHostLog creates the host log table if missing and empties it.
func resetHostLog(t *testing.T, db *bun.DB) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.NewCreateTable().Model((*hostLog)(nil)).IfNotExists().Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.NewDelete().Model((*hostLog)(nil)).Where("1 = 1").Exec(ctx); err != nil {
		t.Fatal(err)
	}
}
