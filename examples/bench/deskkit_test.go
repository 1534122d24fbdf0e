package main

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
)

// testDatabaseURL returns the PostgreSQL the tests may use, or skips.
func testDatabaseURL(t *testing.T) string {
	dsn := os.Getenv("DESKKIT_TEST_DATABASE_URL")
	if dsn == "" {
		if os.Getenv("DESKKIT_REQUIRE_POSTGRES") != "" {
			t.Fatal("DESKKIT_REQUIRE_POSTGRES is set but DESKKIT_TEST_DATABASE_URL is not")
		}
		t.Skip("DESKKIT_TEST_DATABASE_URL is not set")
	}
	return dsn
}

// TestCountingConnector checks the rule statements are counted by: BEGIN,
// each statement, COMMIT; a prepare and each execution of the prepared
// statement; and that the database still looks like pgdriver's, so that
// the registry LISTENs.
func TestCountingConnector(t *testing.T) {
	var n atomic.Int64
	db := openBun(testDatabaseURL(t), 2, &n)
	defer db.Close()
	ctx := t.Context()
	if _, ok := db.Driver().(pgdriver.Driver); !ok {
		t.Errorf("Driver() is %T, want pgdriver.Driver", db.Driver())
	}
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "SELECT 2")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 4 { // BEGIN, SELECT 1, SELECT 2, COMMIT
		t.Errorf("a transaction of two statements counted %d, want 4", got)
	}
	n.Store(0)
	st, err := db.PrepareContext(ctx, "SELECT $1::int")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 3 {
		var got int
		if err := st.QueryRowContext(ctx, i).Scan(&got); err != nil || got != i {
			t.Fatalf("prepared statement: %d, %v", got, err)
		}
	}
	if got := n.Load(); got != 4 { // the prepare and three executions
		t.Errorf("a prepare and three executions counted %d, want 4", got)
	}
}
