package migrate_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/migrate"
)

// TestCheckTables: the tables present pass; missing ones are named with the
// call that creates them; a table of another schema (PostgreSQL) or a view
// or index of the name does not count.
func TestCheckTables(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := migrate.Run(ctx, db, "deskkit_migrate_test_migrations", files); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "CREATE VIEW deskkit_check_view AS SELECT 1 AS one"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "CREATE INDEX deskkit_check_index ON deskkit_migrate_test (note)"); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			tables []string
			want   string
		}{
			{[]string{"deskkit_migrate_test"}, ""},
			{[]string{"deskkit_migrate_test", "deskkit_check_absent"},
				"x.New: table deskkit_check_absent does not exist: run x.Migrate(ctx, db) first"},
			{[]string{"deskkit_check_view", "deskkit_migrate_test", "deskkit_check_index"},
				"x.New: tables deskkit_check_view, deskkit_check_index do not exist: run x.Migrate(ctx, db) first"},
		} {
			err := migrate.Check(db, "x.New", "x.Migrate", c.tables)
			if got := errText(err); got != c.want {
				t.Errorf("CheckTables(%v) = %q, want %q", c.tables, got, c.want)
			}
		}
	})
}

// On PostgreSQL a table counts only if the connection's search_path finds
// it: one in another schema is as good as missing.
func TestCheckTablesSearchPath(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	other := dbtest.OpenPostgres(t)
	ctx := context.Background()
	if err := migrate.Run(ctx, other, "deskkit_migrate_test_migrations", files); err != nil {
		t.Fatal(err)
	}
	err := migrate.Check(db, "x.New", "x.Migrate", []string{"deskkit_migrate_test"})
	want := "x.New: table deskkit_migrate_test does not exist: run x.Migrate(ctx, db) first"
	if errText(err) != want {
		t.Fatalf("CheckTables with the table in another schema = %v, want %q", err, want)
	}
}

// A database that cannot answer is not a missing table: the error says
// the database failed (and never tells the host to migrate).
func TestCheckTablesDatabaseDown(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		db.Close()
		err := migrate.Check(db, "x.New", "x.Migrate", []string{"deskkit_migrate_test"})
		if err == nil || strings.Contains(err.Error(), "Migrate") || !strings.Contains(err.Error(), "x.New: checking for its tables: ") ||
			!strings.Contains(err.Error(), "database is closed") {
			t.Fatalf("CheckTables on a closed pool = %v, want the database's error and no word of migrating", err)
		}
	})
}

// The check runs under a deadline CheckTimeout away, and a database that
// lets it pass is named as slow, not as lacking tables. The hook stands for
// the database that does not answer: it notes the deadline the query got
// and lets it expire at once, so the test waits for nothing.
func TestCheckTablesBound(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		h := &expire{}
		db.AddQueryHook(h)
		before := time.Now()
		err := migrate.Check(db, "x.New", "x.Migrate", []string{"deskkit_migrate_test"})
		after := time.Now()
		deadline, ok := h.deadline()
		if !ok || deadline.Before(before.Add(migrate.CheckTimeout)) || deadline.After(after.Add(migrate.CheckTimeout)) {
			t.Errorf("the check's deadline = %v (set %v), want CheckTimeout (%s) after the call", deadline, ok, migrate.CheckTimeout)
		}
		if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "Migrate") ||
			!strings.HasPrefix(err.Error(), "x.New: checking for its tables: the database did not answer within 5s: ") {
			t.Fatalf("CheckTables past its deadline = %v, want the database named as too slow", err)
		}
	})
}

// expire is a query hook that records the deadline of the first query and
// hands it a context whose deadline has passed.
type expire struct {
	mu  sync.Mutex
	dl  time.Time
	set bool
}

var _ bun.QueryHook = (*expire)(nil)

func (e *expire) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	e.mu.Lock()
	if !e.set {
		e.dl, e.set = ctx.Deadline()
	}
	e.mu.Unlock()
	c, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
	cancel() // it ended already, with DeadlineExceeded; cancel keeps that
	return c
}

func (e *expire) AfterQuery(context.Context, *bun.QueryEvent) {}

func (e *expire) deadline() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dl, e.set
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
