package trashtest

import (
	"context"
	"errors"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/trash"
)

// State is what became of one of the host's targets.
type State string

// The states RestorerHarness.State reports.
const (
	Live    State = "live"    // visible, as before any delete
	Trashed State = "trashed" // deleted into the trash, with an entry of its own
	Hidden  State = "hidden"  // a task gone with its trashed sprint
	Gone    State = "gone"    // purged: the row is no more
)

// RestorerHarness is what RunRestorerTests needs of a host.
type RestorerHarness struct {
	// DB holds the host's tables and deskkit's trash tables (trash.Migrate
	// has run).
	DB *bun.DB
	// Restorer is the host's trash.Restorer under test.
	Restorer trash.Restorer
	// Principal is an admin of the tenant the targets are made in.
	Principal deskkit.Principal
	// ProjectID is the project the targets are made in.
	ProjectID int64
	// NewTask makes a live task in the project, in sprint sprintID (0 for
	// none), and returns its id.
	NewTask func(ctx context.Context, sprintID int64) (int64, error)
	// NewSprint makes a live sprint in the project and returns its id; nil
	// when the host has no sprints (the sprint tests are then skipped).
	NewSprint func(ctx context.Context) (int64, error)
	// Delete moves the target into the trash as the host's delete does (its
	// rows hidden and trash.Trash.Add in one transaction) and returns the
	// trash entry's id.
	Delete func(ctx context.Context, t trash.TargetType, id int64) (int64, error)
	// State reports what became of the target.
	State func(ctx context.Context, t trash.TargetType, id int64) (State, error)
}

// RunRestorerTests checks a host's trash.Restorer against the contract of
// trash.Restorer, through a trash.Trash over the host's database: a
// restored task is live again and its entry gone; a cleared one is gone for
// good; restore-all and clear-all handle a project's entries (through the
// batch capabilities when the Restorer has them); a restored sprint brings
// back the tasks that went with it but not one trashed on its own, and a
// cleared sprint takes its tasks; and the Restorer works through the
// transaction it is handed only, so that when the trash's transaction rolls
// back, nothing it did remains.
//
// newHarness is called once per subtest, with that subtest's t; each call
// should give a Restorer over an empty store.
func RunRestorerTests(t *testing.T, newHarness func(t *testing.T) RestorerHarness) {
	t.Helper()
	for _, c := range []struct {
		name    string
		sprints bool
		run     func(t *testing.T, s *suite)
	}{
		{"RestoreTask", false, testRestoreTask},
		{"ClearTask", false, testClearTask},
		{"RestoreAllClearAll", false, testAll},
		{"RollbackUndoesRestore", false, testRollbackRestore},
		{"RollbackUndoesPurge", false, testRollbackPurge},
		{"RestoreSprint", true, testRestoreSprint},
		{"ClearSprint", true, testClearSprint},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			if c.sprints && h.NewSprint == nil {
				t.Skip("the host has no sprints")
			}
			tr, err := trash.New(h.DB, h.Restorer, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.run(t, &suite{h: h, tr: tr, ctx: context.Background()})
		})
	}
}

type suite struct {
	h   RestorerHarness
	tr  *trash.Trash
	ctx context.Context
}

func (s *suite) task(t *testing.T, sprintID int64) int64 {
	t.Helper()
	id, err := s.h.NewTask(s.ctx, sprintID)
	if err != nil || id < 1 {
		t.Fatalf("NewTask(%d) = %d, %v", sprintID, id, err)
	}
	return id
}

func (s *suite) sprint(t *testing.T) int64 {
	t.Helper()
	id, err := s.h.NewSprint(s.ctx)
	if err != nil || id < 1 {
		t.Fatalf("NewSprint = %d, %v", id, err)
	}
	return id
}

func (s *suite) delete(t *testing.T, tt trash.TargetType, id int64) int64 {
	t.Helper()
	e, err := s.h.Delete(s.ctx, tt, id)
	if err != nil || e < 1 {
		t.Fatalf("Delete(%s %d) = %d, %v", tt, id, e, err)
	}
	return e
}

// want checks the state of a target.
func (s *suite) want(t *testing.T, tt trash.TargetType, id int64, want State) {
	t.Helper()
	got, err := s.h.State(s.ctx, tt, id)
	if err != nil || got != want {
		t.Errorf("%s %d is %q (%v), want %q", tt, id, got, err, want)
	}
}

// entryGone checks that the trash has no entry id any more.
func (s *suite) entryGone(t *testing.T, id int64) {
	t.Helper()
	if _, err := s.tr.Get(s.ctx, s.h.Principal, id); !errors.Is(err, trash.ErrNotFound) {
		t.Errorf("entry %d: %v, want trash.ErrNotFound", id, err)
	}
}

func testRestoreTask(t *testing.T, s *suite) {
	id := s.task(t, 0)
	e := s.delete(t, trash.TargetTask, id)
	s.want(t, trash.TargetTask, id, Trashed)
	if err := s.tr.Restore(s.ctx, s.h.Principal, e); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	s.want(t, trash.TargetTask, id, Live)
	s.entryGone(t, e)
}

func testClearTask(t *testing.T, s *suite) {
	id, keep := s.task(t, 0), s.task(t, 0)
	e := s.delete(t, trash.TargetTask, id)
	if err := s.tr.Clear(s.ctx, s.h.Principal, e); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	s.want(t, trash.TargetTask, id, Gone)
	s.want(t, trash.TargetTask, keep, Live)
	s.entryGone(t, e)
}

func testAll(t *testing.T, s *suite) {
	a, b := s.task(t, 0), s.task(t, 0)
	s.delete(t, trash.TargetTask, a)
	s.delete(t, trash.TargetTask, b)
	if n, err := s.tr.RestoreAll(s.ctx, s.h.Principal, s.h.ProjectID); err != nil || n != 2 {
		t.Fatalf("RestoreAll = %d, %v; want 2", n, err)
	}
	s.want(t, trash.TargetTask, a, Live)
	s.want(t, trash.TargetTask, b, Live)
	s.delete(t, trash.TargetTask, a)
	s.delete(t, trash.TargetTask, b)
	if n, err := s.tr.ClearAll(s.ctx, s.h.Principal, s.h.ProjectID); err != nil || n != 2 {
		t.Fatalf("ClearAll = %d, %v; want 2", n, err)
	}
	s.want(t, trash.TargetTask, a, Gone)
	s.want(t, trash.TargetTask, b, Gone)
}

// failAfter runs the host's method and then fails, so that the trash rolls
// its transaction back: what the method did must go with it.
var errAfter = errors.New("trashtest: failing after the host's method")

func (s *suite) failing() *trash.Trash {
	r := &Restorer{
		RestoreFn: func(ctx context.Context, tx bun.Tx, e trash.Entry) error {
			if err := s.h.Restorer.Restore(ctx, tx, e); err != nil {
				return err
			}
			return errAfter
		},
		PurgeFn: func(ctx context.Context, tx bun.Tx, e trash.Entry) error {
			if err := s.h.Restorer.Purge(ctx, tx, e); err != nil {
				return err
			}
			return errAfter
		},
	}
	tr, err := trash.New(s.h.DB, r, nil)
	if err != nil {
		panic(err) // the harness's DB served trash.New once already
	}
	return tr
}

func testRollbackRestore(t *testing.T, s *suite) {
	id := s.task(t, 0)
	e := s.delete(t, trash.TargetTask, id)
	if err := s.failing().Restore(s.ctx, s.h.Principal, e); !errors.Is(err, errAfter) {
		t.Fatalf("Restore failing after the host's method: %v", err)
	}
	s.want(t, trash.TargetTask, id, Trashed)
	if err := s.tr.Restore(s.ctx, s.h.Principal, e); err != nil {
		t.Errorf("Restore after the rollback: %v", err)
	}
	s.want(t, trash.TargetTask, id, Live)
}

func testRollbackPurge(t *testing.T, s *suite) {
	id := s.task(t, 0)
	e := s.delete(t, trash.TargetTask, id)
	if err := s.failing().Clear(s.ctx, s.h.Principal, e); !errors.Is(err, errAfter) {
		t.Fatalf("Clear failing after the host's method: %v", err)
	}
	s.want(t, trash.TargetTask, id, Trashed)
	if err := s.tr.Clear(s.ctx, s.h.Principal, e); err != nil {
		t.Errorf("Clear after the rollback: %v", err)
	}
	s.want(t, trash.TargetTask, id, Gone)
}

func testRestoreSprint(t *testing.T, s *suite) {
	sp := s.sprint(t)
	with, alone := s.task(t, sp), s.task(t, sp)
	s.delete(t, trash.TargetTask, alone) // trashed on its own first
	e := s.delete(t, trash.TargetSprint, sp)
	s.want(t, trash.TargetSprint, sp, Trashed)
	s.want(t, trash.TargetTask, with, Hidden)
	if err := s.tr.Restore(s.ctx, s.h.Principal, e); err != nil {
		t.Fatalf("Restore sprint: %v", err)
	}
	s.want(t, trash.TargetSprint, sp, Live)
	s.want(t, trash.TargetTask, with, Live)
	s.want(t, trash.TargetTask, alone, Trashed)
}

func testClearSprint(t *testing.T, s *suite) {
	sp := s.sprint(t)
	with, alone := s.task(t, sp), s.task(t, sp)
	s.delete(t, trash.TargetTask, alone)
	e := s.delete(t, trash.TargetSprint, sp)
	if err := s.tr.Clear(s.ctx, s.h.Principal, e); err != nil {
		t.Fatalf("Clear sprint: %v", err)
	}
	s.want(t, trash.TargetSprint, sp, Gone)
	s.want(t, trash.TargetTask, with, Gone)
	s.want(t, trash.TargetTask, alone, Gone) // its entry was purged first
}
