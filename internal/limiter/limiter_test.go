package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/limiter"
)

func TestTake(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		createTable(t, db)
		take := func(now int64, cost int) error {
			return limiter.Take(ctx, db, "test_limits", now, []limiter.Limit{{Key: "k", Max: 5, Window: time.Minute, Msg: deskkit.Plain("five a minute"), Cost: cost}})
		}
		wantRefused := func(err error, retry time.Duration) {
			t.Helper()
			var rl *deskkit.RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter != retry || rl.Message.String() != "five a minute" {
				t.Fatalf("got %v, want a refusal to retry after %s", err, retry)
			}
		}
		// 1 + 3 fit in the window that opens at 0; 2 more do not, 1 does.
		for _, cost := range []int{0, 3} {
			if err := take(0, cost); err != nil {
				t.Fatal(err)
			}
		}
		wantRefused(take(10_000, 2), 50*time.Second)
		if err := take(10_000, 1); err != nil {
			t.Fatal(err)
		}
		wantRefused(take(59_999, 1), time.Second)
		// The window closes at 60s: a new one opens with the event.
		if err := take(60_000, 5); err != nil {
			t.Fatal(err)
		}
		wantRefused(take(60_000, 1), 60*time.Second)
		// A cost above the limit never fits.
		wantRefused(take(500_000, 6), time.Minute)
		if n, err := limiter.Purge(ctx, db, "test_limits", 120_001); err != nil || n != 1 {
			t.Fatalf("purge: %d %v", n, err)
		}
	})
}

// TestGiveBack: an event goes back to the window that counted it, and only
// to it: a give-back that comes after the window closed (a send's outcome
// recorded once the database is back) must not free a unit of the next.
func TestGiveBack(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		createTable(t, db)
		take := func(now int64) error {
			return limiter.Take(ctx, db, "test_limits", now, []limiter.Limit{{Key: "k", Max: 1, Window: time.Minute, Msg: deskkit.Plain("one a minute")}})
		}
		if err := take(0); err != nil {
			t.Fatal(err)
		}
		if err := limiter.GiveBack(ctx, db, "test_limits", "k", 0); err != nil {
			t.Fatal(err)
		}
		if err := take(1_000); err != nil {
			t.Fatalf("after giving back: %v", err)
		}
		// The window of 0 to 60 s closed; one opened at 70 s. Giving back
		// the event of 1 s leaves it alone.
		if err := take(70_000); err != nil {
			t.Fatal(err)
		}
		if err := limiter.GiveBack(ctx, db, "test_limits", "k", 1_000); err != nil {
			t.Fatal(err)
		}
		if err := take(71_000); err == nil {
			t.Error("a give-back for a closed window freed a unit of the next one")
		}
		// Nothing goes below zero.
		for range 2 {
			if err := limiter.GiveBack(ctx, db, "test_limits", "k", 70_000); err != nil {
				t.Fatal(err)
			}
		}
		var hits int
		if err := db.NewSelect().Table("test_limits").Column("hits").Where("limit_key = 'k'").Scan(ctx, &hits); err != nil || hits != 0 {
			t.Errorf("hits %d, %v; want 0", hits, err)
		}
	})
}

// TestTakeSeveral: several limits are taken in one statement; the refusal
// names the first exhausted limit in key order, and a key given twice
// counts once with the summed cost, as taking them one by one would.
func TestTakeSeveral(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		createTable(t, db)
		a := limiter.Limit{Key: "a", Max: 3, Window: time.Minute, Msg: deskkit.Plain("a")}
		b := limiter.Limit{Key: "b", Max: 2, Window: time.Minute, Msg: deskkit.Plain("b")}
		day := limiter.Limit{Key: "day", Max: 3, Window: time.Hour, Msg: deskkit.Plain("day")}
		hits := func() map[string]int {
			t.Helper()
			var rows []struct {
				Key  string `bun:"limit_key"`
				Hits int    `bun:"hits"`
			}
			if err := db.NewSelect().Table("test_limits").Column("limit_key", "hits").Scan(ctx, &rows); err != nil {
				t.Fatal(err)
			}
			out := map[string]int{}
			for _, r := range rows {
				out[r.Key] = r.Hits
			}
			return out
		}
		// day twice (two addresses, one user): counts 2.
		if err := limiter.Take(ctx, db, "test_limits", 0, []limiter.Limit{day, b, a, day}); err != nil {
			t.Fatal(err)
		}
		if got := hits(); got["a"] != 1 || got["b"] != 1 || got["day"] != 2 {
			t.Fatalf("hits %v, want a 1, b 1, day 2", got)
		}
		// b and day both run out with 2 more: the refusal names b (key order).
		err := limiter.Take(ctx, db, "test_limits", 1000, []limiter.Limit{day, b, day, b})
		var rl *deskkit.RateLimitError
		if !errors.As(err, &rl) || rl.Message.String() != "b" || rl.RetryAfter != 59*time.Second {
			t.Fatalf("got %v, want b's refusal after 59s", err)
		}
		// One more of each fits exactly.
		if err := limiter.Take(ctx, db, "test_limits", 2000, []limiter.Limit{day, b, a}); err != nil {
			t.Fatal(err)
		}
		if got := hits(); got["a"] != 2 || got["b"] != 2 || got["day"] != 3 {
			t.Fatalf("hits %v, want a 2, b 2, day 3", got)
		}
		err = limiter.Take(ctx, db, "test_limits", 3000, []limiter.Limit{a, day})
		if !errors.As(err, &rl) || rl.Message.String() != "day" {
			t.Fatalf("got %v, want day's refusal", err)
		}
	})
}

// TestHold: a hold refuses as a take of 1 would, counts nothing, opens a
// window like a take, and keeps the row locked until its transaction ends.
func TestHold(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		createTable(t, db)
		l := limiter.Limit{Key: "k", Max: 2, Window: time.Minute, Msg: deskkit.Plain("two a minute")}
		hits := func() (n int, end int64) {
			t.Helper()
			if err := db.NewSelect().Table("test_limits").Column("hits", "window_end_ms").Where("limit_key = 'k'").Scan(ctx, &n, &end); err != nil {
				t.Fatal(err)
			}
			return n, end
		}
		// On no row: a row of 0 hits whose window opens now.
		if err := limiter.Hold(ctx, db, "test_limits", 0, l); err != nil {
			t.Fatal(err)
		}
		if n, end := hits(); n != 0 || end != 60_000 {
			t.Fatalf("after a hold: %d hits, window ends %d; want 0, 60000", n, end)
		}
		for i := range 2 {
			if err := limiter.Hold(ctx, db, "test_limits", 1000, l); err != nil {
				t.Fatalf("hold with %d hits: %v", i, err)
			}
			if err := limiter.Take(ctx, db, "test_limits", 1000, []limiter.Limit{l}); err != nil {
				t.Fatal(err)
			}
		}
		err := limiter.Hold(ctx, db, "test_limits", 10_000, l)
		var rl *deskkit.RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != 50*time.Second || rl.Message.String() != "two a minute" {
			t.Fatalf("hold of an exhausted limit: %v, want a refusal to retry after 50s", err)
		}
		if n, _ := hits(); n != 2 {
			t.Fatalf("a refused hold changed hits to %d", n)
		}
		// The window closed: a hold opens a new one, empty.
		if err := limiter.Hold(ctx, db, "test_limits", 60_000, l); err != nil {
			t.Fatal(err)
		}
		if n, end := hits(); n != 0 || end != 120_000 {
			t.Fatalf("a hold after the window: %d hits, window ends %d; want 0, 120000", n, end)
		}
		if db.Dialect().Name() != dialect.PG {
			return // SQLite's writers queue on the database, not on rows
		}
		// The row stays locked until the holder's transaction ends: a
		// second hold waits (here, gives up at its lock timeout).
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := limiter.Hold(ctx, tx, "test_limits", 61_000, l); err != nil {
			t.Fatal(err)
		}
		err = db.RunInTx(ctx, nil, func(ctx context.Context, tx2 bun.Tx) error {
			if _, err := tx2.ExecContext(ctx, "SET LOCAL lock_timeout = '50ms'"); err != nil {
				return err
			}
			return limiter.Hold(ctx, tx2, "test_limits", 61_000, l)
		})
		if deskkit.SQLState(err) != "55P03" {
			t.Fatalf("a second hold while the first's transaction is open: %v, want a lock timeout (55P03)", err)
		}
	})
}

// createTable creates test_limits, in the shape the package doc gives.
func createTable(t *testing.T, db *bun.DB) {
	t.Helper()
	_, err := db.ExecContext(context.Background(), `CREATE TABLE test_limits (
    limit_key       VARCHAR(400) NOT NULL PRIMARY KEY,
    window_start_ms BIGINT       NOT NULL,
    window_end_ms   BIGINT       NOT NULL,
    hits            INTEGER      NOT NULL)`)
	if err != nil {
		t.Fatal(err)
	}
}

// TestTakeThen: the caller's statement runs with the take when every
// limit fits, and writes nothing when one is refused (PostgreSQL runs
// it in the same statement, SQLite after the take).
func TestTakeThen(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		createTable(t, db)
		if _, err := db.ExecContext(ctx, "CREATE TABLE test_after (n INTEGER NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		a := limiter.Limit{Key: "a", Max: 1, Window: time.Minute, Msg: deskkit.Plain("a")}
		b := limiter.Limit{Key: "b", Max: 5, Window: time.Minute, Msg: deskkit.Plain("b")}
		never := limiter.Limit{Key: "c", Max: 1, Cost: 2, Window: time.Minute, Msg: deskkit.Plain("c")}
		take := func(n int, ls ...limiter.Limit) error {
			return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return limiter.TakeThen(ctx, tx, "test_limits", 0, ls, func(fits string) bun.Query {
					return tx.NewRaw("INSERT INTO test_after (n) SELECT ? WHERE "+fits, n)
				})
			})
		}
		if err := take(1, b, a); err != nil {
			t.Fatal(err)
		}
		var rl *deskkit.RateLimitError
		if err := take(2, b, a); !errors.As(err, &rl) || rl.Message.String() != "a" {
			t.Fatalf("a second take: %v, want a's refusal", err)
		}
		if err := take(3, b, never); !errors.As(err, &rl) || rl.Message.String() != "c" {
			t.Fatalf("a take that never fits: %v, want c's refusal", err)
		}
		if err := take(4); err != nil {
			t.Fatalf("no limits: %v", err)
		}
		var got []int
		if err := db.NewSelect().Table("test_after").Column("n").Order("n").Scan(ctx, &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != 1 || got[1] != 4 {
			t.Errorf("statements run after the takes: %v, want [1 4]", got)
		}
	})
}
