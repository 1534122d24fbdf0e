package deskkit_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// pgxError has pgx's and lib/pq's method; fieldError bun pgdriver's.
type pgxError struct{ code string }

func (e pgxError) Error() string    { return "pgx: " + e.code }
func (e pgxError) SQLState() string { return e.code }

type fieldError struct{ code string }

func (e fieldError) Error() string { return "pgdriver: " + e.code }
func (e fieldError) Field(f byte) string {
	if f == 'C' {
		return e.code
	}
	return ""
}

func TestSQLState(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{pgxError{"40P01"}, "40P01"},
		{fmt.Errorf("wrapped: %w", fieldError{"40001"}), "40001"},
		{errors.New("sqlite: busy"), ""},
		{nil, ""},
	} {
		if got := deskkit.SQLState(c.err); got != c.want {
			t.Errorf("SQLState(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A deadlock or serialization failure runs fn again, up to MaxTxAttempts
// in all; any other error returns at once.
func TestRunInTxAttempts(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	for _, c := range []struct {
		name      string
		fails     int // attempts that fail with err before one succeeds
		err       error
		wantCalls int
		wantErr   bool
	}{
		{"deadlock twice", 2, pgxError{"40P01"}, 3, false},
		{"serialization, pgdriver", 1, fmt.Errorf("update: %w", fieldError{"40001"}), 2, false},
		{"deadlock always", 100, pgxError{"40P01"}, deskkit.MaxTxAttempts, true},
		{"unique violation", 100, pgxError{"23505"}, 1, true},
		{"plain error", 100, errors.New("boom"), 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := deskkit.RunInTx(context.Background(), db, nil, func(context.Context, bun.Tx) error {
				calls++
				if calls <= c.fails {
					return c.err
				}
				return nil
			})
			if calls != c.wantCalls || (err != nil) != c.wantErr || (c.wantErr && !errors.Is(err, c.err)) {
				t.Errorf("%d calls, err %v; want %d calls, error %v", calls, err, c.wantCalls, c.wantErr)
			}
		})
	}
}

// Two transactions that lock two rows in opposite orders deadlock; PostgreSQL
// aborts one with 40P01 and RunInTx runs it again, so both succeed.
func TestRunInTxRetriesDeadlock(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE pair (id int PRIMARY KEY, n int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO pair VALUES (1, 0), (2, 0)"); err != nil {
		t.Fatal(err)
	}
	var (
		attempts    atomic.Int32
		firstLocked sync.WaitGroup // both transactions hold their first row
	)
	firstLocked.Add(2)
	lockBoth := func(first, second int) func(ctx context.Context, tx bun.Tx) error {
		firstTry := true
		return func(ctx context.Context, tx bun.Tx) error {
			attempts.Add(1)
			// Detect the deadlock at once instead of after the default second.
			if _, err := tx.ExecContext(ctx, "SET LOCAL deadlock_timeout = '10ms'"); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE pair SET n = n + 1 WHERE id = ?", first); err != nil {
				return err
			}
			if firstTry {
				firstTry = false
				firstLocked.Done()
				firstLocked.Wait()
			}
			_, err := tx.ExecContext(ctx, "UPDATE pair SET n = n + 1 WHERE id = ?", second)
			return err
		}
	}
	errs := make(chan error, 2)
	go func() { errs <- deskkit.RunInTx(ctx, db, nil, lockBoth(1, 2)) }()
	go func() { errs <- deskkit.RunInTx(ctx, db, nil, lockBoth(2, 1)) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("RunInTx: %v", err)
		}
	}
	if got := attempts.Load(); got < 3 {
		t.Errorf("%d attempts in all; a deadlock should have cost one more than 2", got)
	}
	var sum int
	if err := db.NewRaw("SELECT sum(n) FROM pair").Scan(ctx, &sum); err != nil || sum != 4 {
		t.Errorf("sum = %d, %v; want 4: both transactions applied exactly once", sum, err)
	}
}

func TestRunInTxDoesNotRetryOtherErrors(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	calls := 0
	boom := errors.New("boom")
	err := deskkit.RunInTx(context.Background(), db, nil, func(context.Context, bun.Tx) error {
		calls++
		return boom
	})
	if !errors.Is(err, boom) || calls != 1 {
		t.Errorf("err %v after %d calls; want boom after 1", err, calls)
	}
}

type ctxKey struct{}

// fn runs with the caller's context, its values and its end: a caller
// that goes away ends the transaction, and nothing of it commits.
func TestRunInTxKeepsTheCallersContext(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if _, err := db.ExecContext(ctx, "CREATE TABLE hangup (id INTEGER PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		rctx, hangUp := context.WithCancel(context.WithValue(ctx, ctxKey{}, "v"))
		defer hangUp()
		err := deskkit.RunInTx(rctx, db, nil, func(ctx context.Context, tx bun.Tx) error {
			if ctx.Done() == nil || ctx.Value(ctxKey{}) != "v" {
				t.Errorf("fn's context is not the caller's: Done %v, value %v", ctx.Done(), ctx.Value(ctxKey{}))
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO hangup (id) VALUES (1)"); err != nil {
				return err
			}
			hangUp()
			return nil
		})
		// database/sql's Commit answers the context's error, or, if its
		// watcher rolled back first, ErrTxDone.
		if !errors.Is(err, context.Canceled) && !errors.Is(err, sql.ErrTxDone) {
			t.Errorf("RunInTx whose caller went away = %v, want context.Canceled", err)
		}
		var n int
		if err := db.NewRaw("SELECT count(*) FROM hangup").Scan(ctx, &n); err != nil || n != 0 {
			t.Errorf("%d rows (%v), want none: the transaction must not commit", n, err)
		}
	})
}
