package database_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestTransactionPoolingThroughPgBouncer opens a pool with
// TransactionPooling through a real PgBouncer in transaction mode and
// checks that every statement, in a transaction or not, runs under the
// pool's statement timeout and without parallel workers, on whichever
// server connection PgBouncer lends; that a statement running past the
// timeout is cancelled; and that preparing fails at once.
func TestTransactionPoolingThroughPgBouncer(t *testing.T) {
	direct := dbtest.RequirePostgres(t)
	pooled := dbtest.PgBouncer(t, direct)
	db, err := database.Open(pooled, database.Options{MaxOpenConns: 3 * dbtest.PgBouncerPoolSize, StatementTimeout: 300 * time.Millisecond, TransactionPooling: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()

	// A session SET through another pool of the same PgBouncer lands on
	// one of its server connections and stays there: the pooled pool's
	// statements must not depend on what the session says.
	other := database.OpenPostgres(pooled, database.Options{MaxOpenConns: 1, TransactionPooling: true})
	defer other.Close()
	if _, err := other.ExecContext(ctx, "SET statement_timeout = 0; SET max_parallel_workers_per_gather = 4"); err != nil {
		t.Fatal(err)
	}

	check := func(q bun.IDB) error {
		var timeout, workers string
		if err := q.NewRaw("SELECT current_setting('statement_timeout'), current_setting('max_parallel_workers_per_gather')").Scan(ctx, &timeout, &workers); err != nil {
			return err
		}
		if timeout != "300ms" || workers != "0" {
			return errors.New("statement_timeout = " + timeout + ", max_parallel_workers_per_gather = " + workers + "; want 300ms and 0")
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 40 {
		wg.Go(func() {
			for range 5 {
				if i%2 == 0 {
					errs <- check(db)
					continue
				}
				errs <- db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return check(tx) })
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	// The timeout cancels, outside a transaction and inside one.
	if _, err := db.ExecContext(ctx, "SELECT pg_sleep(5)"); database.SQLSTATE(err) != "57014" {
		t.Errorf("a statement past the timeout outside a transaction: %v, want 57014", err)
	}
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.ExecContext(ctx, "SELECT pg_sleep(5)")
		return err
	})
	if database.SQLSTATE(err) != "57014" {
		t.Errorf("a statement past the timeout in a transaction: %v, want 57014", err)
	}
	// Rows affected are the statement's, not the SET's in front.
	res, err := db.ExecContext(ctx, "SELECT generate_series(1, 3)")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 3 {
		t.Errorf("rows affected = %d, want 3", n)
	}
	// Isolation levels and read-only transactions.
	err = db.RunInTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable, ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
		var level, ro string
		if err := tx.NewRaw("SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')").Scan(ctx, &level, &ro); err != nil {
			return err
		}
		if level != "serializable" || ro != "on" {
			t.Errorf("isolation %q read only %q, want serializable and on", level, ro)
		}
		return check(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.PrepareContext(ctx, "SELECT 1"); !errors.Is(err, database.ErrPrepared) {
		t.Errorf("Prepare: %v, want ErrPrepared", err)
	}
}

func TestTransactionPoolingRefusesSQLite(t *testing.T) {
	if db, err := database.Open("sqlite:"+t.TempDir()+"/x.db", database.Options{TransactionPooling: true}); err == nil {
		db.Close()
		t.Fatal("TransactionPooling on SQLite was accepted")
	}
}

// TestTransactionPoolingApplicationName: PgBouncer 1.18 takes the one
// startup parameter pgdriver may send besides user and database,
// application_name, without ignore_startup_parameters.
func TestTransactionPoolingApplicationName(t *testing.T) {
	pooled := dbtest.PgBouncer(t, dbtest.RequirePostgres(t))
	db, err := database.Open(pooled+"&application_name=deskkit-test", database.Options{MaxOpenConns: 1, TransactionPooling: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var name string
	if err := db.NewRaw("SELECT current_setting('application_name')").Scan(context.Background(), &name); err != nil {
		t.Fatal(err)
	}
	if name != "deskkit-test" {
		t.Errorf("application_name = %q, want deskkit-test", name)
	}
}

// TestTransactionPoolingLazyBegin checks the transactions of a pool with
// TransactionPooling, whose BEGIN goes out with their first statement:
// the statements of one transaction share it (one transaction id, and a
// rollback undoes the first), a transaction whose first statement fails
// rolls back and leaves its connection serving, and one that runs no
// statement commits and rolls back without error.
func TestTransactionPoolingLazyBegin(t *testing.T) {
	direct := dbtest.RequirePostgres(t)
	pooled := dbtest.PgBouncer(t, direct)
	db, err := database.Open(pooled, database.Options{MaxOpenConns: 1, TransactionPooling: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	table := "deskkit_lazy_begin_test"
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+" (n integer)"); err != nil {
		t.Fatal(err)
	}
	defer db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE "+table) //nolint:errcheck // the test's database is dropped anyway

	var first, second int64
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewRaw("SELECT txid_current()").Scan(ctx, &first); err != nil {
			return err
		}
		return tx.NewRaw("SELECT txid_current()").Scan(ctx, &second)
	})
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Errorf("one transaction's statements ran in transactions %d and %d", first, second)
	}

	errUndo := errors.New("undo")
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+" VALUES (1)"); err != nil {
			return err
		}
		return errUndo
	})
	if !errors.Is(err, errUndo) {
		t.Fatal(err)
	}
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT 1/0"); database.SQLSTATE(err) != "22012" {
			t.Errorf("a failing first statement: %v, want 22012", err)
		}
		return errUndo
	})
	if !errors.Is(err, errUndo) {
		t.Fatal(err)
	}
	for _, opts := range []*sql.TxOptions{nil, {ReadOnly: true}} {
		if err := db.RunInTx(ctx, opts, func(context.Context, bun.Tx) error { return nil }); err != nil {
			t.Errorf("a transaction without statements (%+v): %v", opts, err)
		}
		if err := db.RunInTx(ctx, opts, func(context.Context, bun.Tx) error { return errUndo }); !errors.Is(err, errUndo) {
			t.Errorf("a transaction without statements rolled back (%+v): %v", opts, err)
		}
	}
	var n int
	if err := db.NewRaw("SELECT count(*) FROM "+table).Scan(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d rows after the rolled-back insert, want 0", n)
	}
	// The one connection is out of every transaction: a statement
	// outside one commits on its own.
	if _, err := db.ExecContext(ctx, "INSERT INTO "+table+" VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	var status string
	if err := db.NewRaw("SELECT CASE WHEN count(*) = 1 THEN 'committed' ELSE 'missing' END FROM "+table).Scan(ctx, &status); err != nil {
		t.Fatal(err)
	}
	if status != "committed" {
		t.Errorf("a statement after the transactions: %s", status)
	}
}

// BenchmarkTransactionPoolingTx runs a transaction of one statement (the
// shape of a delivery worker's flush: BEGIN, a statement, COMMIT) through
// a real PgBouncer in transaction mode, on a pool with TransactionPooling.
func BenchmarkTransactionPoolingTx(b *testing.B) {
	pooled := dbtest.PgBouncer(b, dbtest.RequirePostgres(b))
	db, err := database.Open(pooled, database.Options{MaxOpenConns: 1, TransactionPooling: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for b.Loop() {
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var n int
			return tx.NewRaw("SELECT 1").Scan(ctx, &n)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
