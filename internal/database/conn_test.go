package database_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

type ctxKey struct{}

func TestInTxCommitsAndRollsBack(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if _, err := db.ExecContext(ctx, "CREATE TABLE intx (id INTEGER PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		insert := func(id int) func(context.Context, bun.IDB) error {
			return func(ctx context.Context, tx bun.IDB) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO intx (id) VALUES (?)", id)
				return err
			}
		}
		if err := database.InTx(ctx, db, insert(1)); err != nil {
			t.Fatal(err)
		}
		refused := errors.New("refused")
		err := database.InTx(ctx, db, func(ctx context.Context, tx bun.IDB) error {
			if err := insert(2)(ctx, tx); err != nil {
				return err
			}
			return refused
		})
		if !errors.Is(err, refused) {
			t.Fatalf("InTx = %v, want fn's error", err)
		}
		// A statement that fails inside the transaction rolls it back too.
		err = database.InTx(ctx, db, func(ctx context.Context, tx bun.IDB) error {
			if err := insert(3)(ctx, tx); err != nil {
				return err
			}
			return insert(1)(ctx, tx)
		})
		if !database.UniqueViolation(err, "", "intx.id") {
			t.Fatalf("InTx = %v, want the duplicate key", err)
		}
		// A transaction begun inside is refused (on PostgreSQL it would
		// commit the outer one early), or is a savepoint (bun.Tx's).
		err = database.InTx(ctx, db, func(ctx context.Context, tx bun.IDB) error {
			if err := insert(4)(ctx, tx); err != nil {
				return err
			}
			if err := tx.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return insert(5)(ctx, tx) }); err != nil {
				return err
			}
			return refused
		})
		if err == nil {
			t.Fatal("InTx with a transaction inside succeeded")
		}
		var ids []int
		if err := db.NewRaw("SELECT id FROM intx ORDER BY id").Scan(ctx, &ids); err != nil {
			t.Fatal(err)
		}
		if len(ids) != 1 || ids[0] != 1 {
			t.Errorf("rows = %v, want [1]: only the committed transaction's", ids)
		}
	})
}

// TestInTxContext: on PostgreSQL, fn's context has ctx's deadline and
// values and no Done channel (which database/sql would watch); elsewhere
// it is ctx.
func TestInTxContext(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "v"), time.Hour)
		defer cancel()
		want, _ := ctx.Deadline()
		pg := db.Dialect().Name().String() == "pg"
		check := func(name string, got context.Context) {
			t.Helper()
			if d, ok := got.Deadline(); !ok || !d.Equal(want) {
				t.Errorf("%s: deadline %v, %v; want %v", name, d, ok, want)
			}
			if got.Value(ctxKey{}) != "v" {
				t.Errorf("%s: the context lost its values", name)
			}
			if (got.Done() == nil) != pg {
				t.Errorf("%s: Done() = %v on %s", name, got.Done(), db.Dialect().Name())
			}
		}
		if err := database.InTx(ctx, db, func(ctx context.Context, _ bun.IDB) error { check("InTx", ctx); return nil }); err != nil {
			t.Fatal(err)
		}
		if err := database.OnConn(ctx, db, func(ctx context.Context, _ bun.IDB) error { check("OnConn", ctx); return nil }); err != nil {
			t.Fatal(err)
		}
	})
}

// TestInTxConnection follows the connection of each of InTx's endings on
// PostgreSQL, in a pool of one: it goes back to the pool after a commit or
// a rollback, outside any transaction, and is closed (PostgreSQL rolls its
// transaction back) after a panic or a deadline.
func TestInTxConnection(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE intx (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	// backend is the process serving the pool's connection, and whether
	// that connection is outside any transaction (now() is the start of
	// the transaction, which, outside one, is the statement's start).
	backend := func() (pid int, idle bool) {
		t.Helper()
		if err := db.QueryRowContext(ctx, "SELECT pg_backend_pid(), now() = statement_timestamp()").Scan(&pid, &idle); err != nil {
			t.Fatal(err)
		}
		return pid, idle
	}
	rows := func() (n int) {
		t.Helper()
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM intx").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert := func(ctx context.Context, tx bun.IDB) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO intx (id) VALUES (1)")
		return err
	}
	pid, _ := backend()

	if err := database.InTx(ctx, db, func(ctx context.Context, tx bun.IDB) error {
		if err := insert(ctx, tx); err != nil {
			return err
		}
		return errors.New("refused")
	}); err == nil {
		t.Fatal("InTx succeeded")
	}
	if p, idle := backend(); p != pid || !idle {
		t.Errorf("after a rollback: backend %d (in a transaction: %v), want %d outside one", p, !idle, pid)
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not come through")
			}
		}()
		_ = database.InTx(ctx, db, func(ctx context.Context, tx bun.IDB) error {
			if err := insert(ctx, tx); err != nil {
				return err
			}
			panic("fn")
		})
	}()
	if p, idle := backend(); p == pid || !idle {
		t.Errorf("after a panic: backend %d, want a new connection (not %d) outside a transaction", p, pid)
	}
	pid, _ = backend()

	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := database.InTx(dctx, db, func(ctx context.Context, tx bun.IDB) error {
		// Another id than the others': the backend sleeps on after the
		// connection closes, holding its uncommitted row until the
		// statement timeout, as it did under database/sql's watcher.
		if _, err := tx.ExecContext(ctx, "INSERT INTO intx (id) VALUES (2)"); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "SELECT pg_sleep(30)")
		return err
	})
	if !database.Unavailable(err) {
		t.Errorf("past the deadline: %v, want an error Unavailable reports", err)
	}
	if p, idle := backend(); p == pid || !idle {
		t.Errorf("after the deadline: backend %d, want a new connection (not %d) outside a transaction", p, pid)
	}
	if n := rows(); n != 0 {
		t.Errorf("%d rows written by transactions that did not commit", n)
	}
	// End the sleeping backend now, rather than make the schema's drop
	// wait for its statement timeout.
	if _, err := db.ExecContext(ctx, "SELECT pg_terminate_backend(?)", pid); err != nil {
		t.Fatal(err)
	}

	if err := database.InTx(ctx, db, insert); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 1 {
		t.Errorf("%d rows after a commit, want 1", n)
	}
}

// TestInTxWaitsForThePoolWithinTheDeadline: the pool's wait for a
// connection keeps ctx's Done, though the statements do not.
func TestInTxWaitsForThePoolWithinTheDeadline(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(context.Background()) // the pool's one connection
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	ran := false
	err = database.InTx(ctx, db, func(context.Context, bun.IDB) error { ran = true; return nil })
	if !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Errorf("InTx on a full pool = %v (fn ran: %v), want the deadline before fn", err, ran)
	}
	err = database.OnConn(ctx, db, func(context.Context, bun.IDB) error { ran = true; return nil })
	if !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Errorf("OnConn on a full pool = %v (fn ran: %v), want the deadline before fn", err, ran)
	}
}

// TestInTxRetriesOnPostgres: a serialization failure rolls the attempt
// back and runs fn again.
func TestInTxRetriesOnPostgres(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE intx (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	err := database.InTx(ctx, db, func(ctx context.Context, tx bun.IDB) error {
		attempts++
		if _, err := tx.ExecContext(ctx, "INSERT INTO intx (id) VALUES (?)", attempts); err != nil {
			return err
		}
		if attempts == 1 {
			_, err := tx.ExecContext(ctx, `DO $$ BEGIN RAISE EXCEPTION 'lost' USING ERRCODE = '40001'; END $$`)
			return err
		}
		return nil
	})
	if err != nil || attempts != 2 {
		t.Fatalf("InTx = %v after %d attempts, want success on the second", err, attempts)
	}
	var ids []int
	if err := db.NewRaw("SELECT id FROM intx").Scan(ctx, &ids); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != 2 {
		t.Errorf("rows = %v, want the second attempt's only", ids)
	}
}
