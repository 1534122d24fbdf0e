package readroute_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/readroute"
)

// TestStandby runs the router's tests over one private primary and its
// streaming standby (each takes seconds to start); each uses tenants of
// its own and resumes replay when it ends.
func TestStandby(t *testing.T) {
	r, primary, standby := replica(t)
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, r dbtest.Replica, primary, standby *bun.DB)
	}{
		{"ReadYourWrites", testReadYourWrites},
		{"PausedStandbyOwnWrite", testPausedStandbyOwnWrite},
		{"LagBound", testLagBound},
		{"StandbyDies", testStandbyDies}, // last: it stops the standby
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.WaitReplayed(context.Background(), time.Minute); err != nil {
				t.Fatal(err)
			}
			tc.fn(t, r, primary, standby)
		})
	}
}

// replica starts a private primary and standby with a table t(tenant,
// v) replayed on both, and returns their pools.
func replica(t *testing.T) (dbtest.Replica, *bun.DB, *bun.DB) {
	t.Helper()
	r := dbtest.StartReplica(t)
	primary := database.OpenPostgres(r.PrimaryURL, database.Options{MaxOpenConns: 4})
	t.Cleanup(func() { primary.Close() })
	standby := database.OpenPostgres(r.StandbyURL, database.Options{MaxOpenConns: 4})
	t.Cleanup(func() { standby.Close() })
	ctx := context.Background()
	if _, err := primary.ExecContext(ctx, "CREATE TABLE t (tenant bigint, v int)"); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReplayed(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	return r, primary, standby
}

// count reads tenant's rows through rt, and whether the standby served
// the read.
func count(t *testing.T, rt *readroute.Router, tenant int64) (n int, onStandby bool) {
	t.Helper()
	before := rt.Stats()
	err := rt.Do(context.Background(), tenant, func(db bun.IDB) error {
		return db.QueryRowContext(context.Background(), "SELECT count(*) FROM t WHERE tenant = ?", tenant).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, rt.Stats().Standby > before.Standby
}

// testReadYourWrites: a read of a tenant right after its write, noted
// with Wrote, always sees it (against a real streaming standby), and the
// standby serves reads: a router that sent everything to the primary
// fails the test.
func testReadYourWrites(t *testing.T, _ dbtest.Replica, primary, standby *bun.DB) {
	ctx := context.Background()
	rt, err := readroute.New(primary, standby, readroute.Config{Now: clocktest.New(time.Now()).Now})
	if err != nil {
		t.Fatal(err)
	}
	const tries = 300
	stale := 0
	for i := 1; i <= tries; i++ {
		if _, err := primary.ExecContext(ctx, "INSERT INTO t VALUES (1, ?)", i); err != nil {
			t.Fatal(err)
		}
		rt.Wrote(ctx, 1)
		if n, _ := count(t, rt, 1); n != i {
			stale++
		}
	}
	if stale != 0 {
		t.Errorf("%d stale reads of %d", stale, tries)
	}
	// Steady state: no write pending, no lag: the standby answers.
	for range 10 {
		if n, on := count(t, rt, 1); !on || n != tries {
			t.Fatalf("steady read: %d rows, on the standby %v", n, on)
		}
	}
	s := rt.Stats()
	t.Logf("%d stale of %d; reads: %d standby, %d primary", stale, tries, s.Standby, s.Primary)
	if s.Standby < 10 {
		t.Errorf("the standby served %d reads", s.Standby)
	}
}

// testLagBound: writes made elsewhere (not noted with Wrote) while the
// standby does not replay send every read to the primary once they are
// older than MaxLag; replaying again, the standby gets the reads back.
func testLagBound(t *testing.T, r dbtest.Replica, primary, standby *bun.DB) {
	ctx := context.Background()
	clock := clocktest.New(time.Now())
	const lag, refresh = time.Second, 100 * time.Millisecond
	rt, err := readroute.New(primary, standby, readroute.Config{Now: clock.Now, MaxLag: lag, Refresh: refresh})
	if err != nil {
		t.Fatal(err)
	}
	if _, on := count(t, rt, 2); !on {
		t.Fatal("before the pause, the read went to the primary")
	}
	if err := r.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.ResumeReplay(context.Background()) })
	if _, err := primary.ExecContext(ctx, "INSERT INTO t VALUES (2, 1)"); err != nil {
		t.Fatal(err)
	}
	// Step the clock by 10 ms: the reads may stay on the standby (stale)
	// while the lag is under the bound, and must all go to the primary
	// once it reaches it.
	var moved time.Duration
	for moved = 0; moved <= lag+refresh; moved += 10 * time.Millisecond {
		n, on := count(t, rt, 2)
		if on && moved >= lag {
			t.Fatalf("%s after the write, at or past the bound, a read went to the standby", moved)
		}
		if !on {
			if n != 1 {
				t.Fatalf("the primary answered %d rows", n)
			}
			break
		}
		clock.Advance(10 * time.Millisecond)
	}
	t.Logf("every read went to the primary %s after the stopped standby's first unreplayed write (bound %s, ratio %.2f)", moved, lag, float64(moved)/float64(lag))
	for range 5 {
		if n, on := count(t, rt, 2); on || n != 1 {
			t.Fatalf("while paused: %d rows, on the standby %v", n, on)
		}
	}
	if err := r.ResumeReplay(ctx); err != nil {
		t.Fatal(err)
	}
	// The primary writes WAL of its own now and then (a checkpoint), which
	// a check may catch unreplayed: the clock moves a refresh at a time
	// until a check finds the standby caught up, for at most 100 checks.
	for i := 0; ; i++ {
		if err := r.WaitReplayed(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
		clock.Advance(refresh)
		n, on := count(t, rt, 2)
		if on {
			if n != 1 {
				t.Fatalf("after the resume the standby answered %d rows", n)
			}
			break
		}
		if i == 100 {
			t.Fatal("after the resume, 100 checks with the standby caught up left the reads on the primary")
		}
	}
}

// testPausedStandbyOwnWrite: a tenant's own write that the standby does
// not replay sends its reads to the primary after the bounded wait; other
// tenants keep reading the standby within the lag bound.
func testPausedStandbyOwnWrite(t *testing.T, r dbtest.Replica, primary, standby *bun.DB) {
	ctx := context.Background()
	rt, err := readroute.New(primary, standby, readroute.Config{Now: clocktest.New(time.Now()).Now, MaxWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.ResumeReplay(context.Background()) })
	if _, err := primary.ExecContext(ctx, "INSERT INTO t VALUES (3, 1)"); err != nil {
		t.Fatal(err)
	}
	rt.Wrote(ctx, 3)
	for range 3 {
		if n, on := count(t, rt, 3); on || n != 1 {
			t.Fatalf("own write: %d rows, on the standby %v", n, on)
		}
	}
	if _, on := count(t, rt, 4); !on {
		t.Fatal("another tenant's read left the standby within the lag bound")
	}
	// A write in a transaction the router does not see commit.
	rt.Pending(4)
	if _, err := primary.ExecContext(ctx, "INSERT INTO t VALUES (4, 1)"); err != nil {
		t.Fatal(err)
	}
	if n, on := count(t, rt, 4); on || n != 1 {
		t.Fatalf("pending write: %d rows, on the standby %v", n, on)
	}
}

// testStandbyDies: a read the router sends to a standby that has just
// died (the router's last check found it up) fails there and runs again
// on the primary: no error reaches the caller, and the next reads go to
// the primary.
func testStandbyDies(t *testing.T, r dbtest.Replica, primary, standby *bun.DB) {
	ctx := context.Background()
	rt, err := readroute.New(primary, standby, readroute.Config{Now: clocktest.New(time.Now()).Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, on := count(t, rt, 5); !on {
		t.Fatal("with the standby up, the read went to the primary")
	}
	r.StopStandby(t)
	for range 3 {
		var n int
		if err := rt.Do(ctx, 5, func(db bun.IDB) error {
			return db.QueryRowContext(ctx, "SELECT count(*) FROM t WHERE tenant = 5").Scan(&n)
		}); err != nil {
			t.Fatalf("read with the standby just died: %v", err)
		}
	}
	// The first read after the stop: on the standby (failed), then again
	// on the primary; the other two on the primary alone.
	if s := rt.Stats(); s.Standby != 2 || s.Primary != 3 {
		t.Fatalf("stats %+v, want 2 on the standby (one failed) and 3 on the primary", s)
	}
}

// TestStandbyUnreachable: a standby that does not answer costs no
// error, whether it refuses connections or accepts them and never answers
// (a loopback listener that reads nothing): the check gives up within its
// bound and every read goes to the primary.
func TestStandbyUnreachable(t *testing.T) {
	dsn := dbtest.RequirePostgres(t)
	primary := database.OpenPostgres(dsn, database.Options{MaxOpenConns: 2})
	defer primary.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	for _, tc := range []struct{ name, addr string }{{"refused", "127.0.0.1:1"}, {"hung", ln.Addr().String()}} {
		t.Run(tc.name, func(t *testing.T) {
			standby := database.OpenPostgres("postgres://postgres@"+tc.addr+"/x?sslmode=disable", database.Options{MaxOpenConns: 2, DialTimeout: time.Second})
			defer standby.Close()
			rt, err := readroute.New(primary, standby, readroute.Config{Now: clocktest.New(time.Now()).Now})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for range 3 {
				var one int
				if err := rt.Do(ctx, 1, func(db bun.IDB) error { return db.QueryRowContext(ctx, "SELECT 1").Scan(&one) }); err != nil || one != 1 {
					t.Fatalf("read with the standby %s: %d, %v", tc.name, one, err)
				}
			}
			if s := rt.Stats(); s.Standby != 0 || s.Primary != 3 {
				t.Fatalf("stats %+v, want 3 reads on the primary", s)
			}
		})
	}
}

func TestParseLSN(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0/0", 0, true}, {"16/B374D848", 0x16B374D848, true}, {"FFFFFFFF/FFFFFFFF", ^uint64(0), true},
		{"", 0, false}, {"16", 0, false}, {"x/1", 0, false}, {"1/100000000", 0, false},
	} {
		got, err := readroute.ParseLSN(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseLSN(%q) = %x, %v", tc.in, got, err)
		}
	}
}
