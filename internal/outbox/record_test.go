package outbox

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"

	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// cutFunc loses every connection a database's pool holds, as a database
// restart or a network blip loses them while attempts are in flight: each
// fails at its next use. The next n connections the pool opens fail too
// (the database is not back yet), until restore, which reports whether
// those n came.
type cutFunc func(n int) (restore func() (came bool))

// openCuttable returns a fresh database of kind b whose connections cut
// loses, and a pool of its own on the same database that cut leaves
// alone, for the test to read what happened. On PostgreSQL the pool reaches the server through a proxy that
// drops them (the client then reads EOF, as in the outage this guards
// against); SQLite has no connection to lose, so a driver wrapper makes
// its connections fail as a lost one does.
func openCuttable(t *testing.T, b dbtest.Backend) (db, observer *bun.DB, cut cutFunc) {
	t.Helper()
	if b == dbtest.SQLite {
		return openStaleSQLite(t)
	}
	dsn := dbtest.RequirePostgres(t)
	owner := dbtest.OpenPostgres(t) // the test's schema, dropped when t ends
	var schema string
	if err := owner.NewRaw("SELECT current_schema()").Scan(context.Background(), &schema); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	db = dbtest.OpenSchema(u.String(), schema)
	t.Cleanup(func() { db.Close() })
	return db, owner, func(n int) func() bool { p.cut(n); return p.restore }
}

// staleConnector opens SQLite connections that cut makes fail as lost
// connections do: the next statement (or ping) on each connection open at
// the cut fails with io.EOF and the connection reports itself invalid, so
// that database/sql discards it, as it does a pgdriver connection that
// read EOF; and the next refusing connections fail to open.
type staleConnector struct {
	drv driver.Driver
	dsn string

	mu       sync.Mutex
	conns    map[*staleConn]bool // open connections: true if cut
	refusing int
}

func openStaleSQLite(t *testing.T) (db, observer *bun.DB, cut cutFunc) {
	t.Helper()
	plain, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	drv := plain.Driver()
	plain.Close()
	path := filepath.Join(t.TempDir(), "test.db")
	c := &staleConnector{drv: drv, dsn: database.SQLiteDSN(path), conns: map[*staleConn]bool{}}
	sqldb := sql.OpenDB(c)
	if err := sqldb.Ping(); err != nil { // switches the new file to WAL, alone
		t.Fatal(err)
	}
	database.Bound(sqldb, database.Options{MaxOpenConns: 8})
	db = bun.NewDB(sqldb, sqlitedialect.New())
	t.Cleanup(func() { db.Close() })
	observer, err = database.OpenSQLite(path, database.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { observer.Close() })
	return db, observer, c.cut
}

func (c *staleConnector) cut(n int) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for cn := range c.conns {
		c.conns[cn] = true
	}
	c.refusing = n
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		came := c.refusing == 0
		c.refusing = 0
		return came
	}
}

func (c *staleConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.mu.Lock()
	if c.refusing > 0 {
		c.refusing--
		c.mu.Unlock()
		return nil, io.EOF
	}
	c.mu.Unlock()
	cn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	s := &staleConn{Conn: cn, c: c}
	c.mu.Lock()
	c.conns[s] = false
	c.mu.Unlock()
	return s, nil
}

func (c *staleConnector) Driver() driver.Driver { return c.drv }

// staleConn is a connection of staleConnector.
type staleConn struct {
	driver.Conn
	c    *staleConnector
	lost bool // failed once; only database/sql's own calls reach it after
}

// fail reports whether the connection was cut and fails it if so.
func (s *staleConn) fail() error {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.c.conns[s] {
		delete(s.c.conns, s)
		s.lost = true
	}
	if s.lost {
		return io.EOF
	}
	return nil
}

func (s *staleConn) Close() error {
	s.c.mu.Lock()
	delete(s.c.conns, s)
	s.c.mu.Unlock()
	return s.Conn.Close()
}

func (s *staleConn) IsValid() bool {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return !s.lost
}

func (s *staleConn) ResetSession(ctx context.Context) error {
	if !s.IsValid() {
		return driver.ErrBadConn
	}
	return s.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (s *staleConn) Ping(ctx context.Context) error {
	if err := s.fail(); err != nil {
		return err
	}
	return s.Conn.(driver.Pinger).Ping(ctx)
}

func (s *staleConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	return s.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (s *staleConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	return s.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (s *staleConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	return s.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (s *staleConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.fail(); err != nil {
		return nil, err
	}
	return s.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

var (
	_ driver.Connector          = (*staleConnector)(nil)
	_ driver.Validator          = (*staleConn)(nil)
	_ driver.SessionResetter    = (*staleConn)(nil)
	_ driver.Pinger             = (*staleConn)(nil)
	_ driver.ConnBeginTx        = (*staleConn)(nil)
	_ driver.ConnPrepareContext = (*staleConn)(nil)
	_ driver.ExecerContext      = (*staleConn)(nil)
	_ driver.QueryerContext     = (*staleConn)(nil)
)

// fillPool makes db's pool hold n open connections, idle.
func fillPool(t *testing.T, db *bun.DB, n int) {
	t.Helper()
	ctx := context.Background()
	conns := make([]bun.Conn, n)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for _, c := range conns {
		c.Close()
	}
}

// duringAttempt is a script whose attempts first call before.
type duringAttempt struct {
	*script
	before func()
}

func (h duringAttempt) Open(ctx context.Context, batch []Delivery) (func(context.Context, Delivery) Outcome, error) {
	attempt, err := h.script.Open(ctx, batch)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, d Delivery) Outcome {
		h.before()
		return attempt(ctx, d)
	}, nil
}

// TestRecordSurvivesLostConnections is fault 2 of issue 19: the database
// went away for a moment while 8 attempts were in flight; recording their
// outcomes failed on the pool's lost connections ("outbox: record attempt
// ... EOF"), the outcomes were dropped, and each delivery was attempted
// again when its lease ended: a duplicate for the receiver and a lease's
// delay. Now the record is tried again on a fresh connection, through the
// first new connections failing too, and every outcome is recorded at
// once.
func TestRecordSurvivesLostConnections(t *testing.T) {
	for _, b := range []dbtest.Backend{dbtest.SQLite, dbtest.Postgres} {
		t.Run(string(b), func(t *testing.T) {
			ctx := context.Background()
			db, observer, cut := openCuttable(t, b)
			migrated(t, db)
			clock := clocktest.New(t0)
			targets := []int64{1, 2, 3, 4, 5, 6, 7, 8}
			enqueue(t, db, event("msg_blip"), clock.Now(), targets...)

			// Every attempt is in flight when the connections are lost, and
			// answers after that; the first two connections opened then fail
			// as well.
			var inflight sync.WaitGroup
			inflight.Add(len(targets))
			var once sync.Once
			var restore func() bool
			s := newScript()
			var calls atomic.Int32
			h := duringAttempt{s, func() {
				if calls.Add(1) > int32(len(targets)) {
					return // attempted again: the outcome was lost
				}
				inflight.Done()
				inflight.Wait()
				once.Do(func() { restore = cut(2) })
			}}
			w := newWorker(t, db, h, clock)
			var logs logBuffer
			w.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			fillPool(t, db, len(targets))

			start := time.Now()
			if n := runOnce(t, w); n != len(targets) {
				t.Fatalf("claimed %d, want %d", n, len(targets))
			}
			// RunOnce returns once the outcomes are recorded: far within the lease.
			took := time.Since(start)
			if took > w.cfg.Lease/3 {
				t.Errorf("the attempts and their records took %s", took)
			}
			t.Logf("%d attempts and their records through the cut: %s", len(targets), took)
			if !restore() {
				t.Error("the records did not open the connections that failed after the cut")
			}
			var rows []struct {
				Status   string `bun:"status"`
				Attempts int    `bun:"attempts"`
				Logged   int    `bun:"logged"`
			}
			if err := observer.NewRaw(`SELECT d.status, d.attempts,
  (SELECT COUNT(*) FROM deskkit_outbox_attempts a WHERE a.delivery_id = d.id) AS logged
FROM deskkit_outbox_deliveries d ORDER BY d.target_id`).Scan(ctx, &rows); err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(targets) {
				t.Fatalf("%d deliveries, want %d", len(rows), len(targets))
			}
			for i, r := range rows {
				if r.Status != Succeeded || r.Attempts != 1 || r.Logged != 1 {
					t.Errorf("delivery to %d: %s after %d attempts, %d logged; want SUCCEEDED, 1, 1", targets[i], r.Status, r.Attempts, r.Logged)
				}
			}
			if strings.Contains(logs.String(), "level=ERROR") {
				t.Errorf("an outcome was not recorded:\n%s", logs.String())
			}

			// Nothing is left to attempt again when the leases end.
			clock.Advance(w.cfg.Lease + time.Second)
			if n := runOnce(t, w); n != 0 {
				t.Errorf("claimed %d again after the leases ended", n)
			}
			if got := s.total(); got != len(targets) {
				t.Errorf("the receiver got %d requests, want %d", got, len(targets))
			}
		})
	}
}

// pauses replaces w's pauses between the tries of a record: each moves
// clock on instead of waiting. It returns the pauses taken.
func pauses(w *Worker, clock *clocktest.Clock) func() []time.Duration {
	var mu sync.Mutex
	var taken []time.Duration
	w.sleep = func(_ context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		taken = append(taken, d)
		clock.Advance(d)
		return nil
	}
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(taken)
	}
}

// A record whose connections stay lost is tried recordTries times, with
// pauses that grow, and the outcome is then dropped: the delivery is
// attempted again when its lease ends. SQLite alone: the bound is the
// worker's, and TestRecordSurvivesLostConnections loses real PostgreSQL
// connections.
func TestRecordTriesAreBounded(t *testing.T) {
	db, observer, cut := openStaleSQLite(t)
	migrated(t, db)
	clock := clocktest.New(t0)
	enqueue(t, db, event("msg_down"), clock.Now())
	var restore func() bool
	s := newScript()
	w := newWorker(t, db, duringAttempt{s, func() {
		if restore == nil {
			restore = cut(1000) // the database stays down
		}
	}}, clock)
	var logs logBuffer
	w.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	taken := pauses(w, clock)
	if n := runOnce(t, w); n != 1 {
		t.Fatalf("claimed %d, want 1", n)
	}
	ms := time.Millisecond
	want := []time.Duration{37500 * time.Microsecond, 75 * ms, 150 * ms, 300 * ms, 600 * ms, 750 * ms, 750 * ms}
	if diff := cmp.Diff(want, taken()); diff != "" {
		t.Errorf("pauses between the %d tries (-want +got):\n%s", recordTries, diff)
	}
	if !strings.Contains(logs.String(), "tries=8 recorded=false") || !strings.Contains(logs.String(), `level=ERROR msg="outbox: record attempts"`) {
		t.Errorf("logs:\n%s", logs.String())
	}
	restore()
	if in := only(t, observer); in.Status != Pending || in.Attempts != 1 {
		t.Errorf("after the tries: %s, %d attempts; want PENDING, 1", in.Status, in.Attempts)
	}
	clock.Advance(w.cfg.Lease)
	if n := runOnce(t, w); n != 1 || s.total() != 2 {
		t.Errorf("after the lease: claimed %d, %d attempts in all; want 1, 2", n, s.total())
	}
	if in := only(t, observer); in.Status != Succeeded {
		t.Errorf("after the second attempt: %s", in.Status)
	}
}

// No try of a record starts after its lease ended, when another worker
// may have claimed the delivery again.
func TestRecordTriesEndWithTheLease(t *testing.T) {
	db, observer, cut := openStaleSQLite(t)
	migrated(t, db)
	clock := clocktest.New(t0)
	enqueue(t, db, event("msg_late"), clock.Now())
	var restore func() bool
	s := newScript()
	var w *Worker
	w = newWorker(t, db, duringAttempt{s, func() {
		if restore == nil {
			clock.Advance(w.cfg.Lease - 200*time.Millisecond)
			restore = cut(1000)
		}
	}}, clock)
	w.cfg.Logger = slog.New(slog.DiscardHandler)
	taken := pauses(w, clock)
	runOnce(t, w)
	// 37.5 ms, then 75 ms leave 87.5 ms of the lease: less than the next
	// pause, 150 ms.
	if diff := cmp.Diff([]time.Duration{37500 * time.Microsecond, 75 * time.Millisecond}, taken()); diff != "" {
		t.Errorf("pauses (-want +got):\n%s", diff)
	}
	if clock.Now().After(t0.Add(w.cfg.Lease)) {
		t.Errorf("tried at %s, after the lease ended at %s", clock.Now(), t0.Add(w.cfg.Lease))
	}
	restore()
	if in := only(t, observer); in.Status != Pending {
		t.Errorf("after the tries: %s; want PENDING", in.Status)
	}
}

// recordRefused is a script whose Recorded refuses every outcome.
type recordRefused struct{ *script }

var errRefused = errors.New("the handler refuses the record")

func (h recordRefused) Recorded(ctx context.Context, tx bun.Tx, done []Result) error {
	_ = h.script.Recorded(ctx, tx, done)
	return errRefused
}

// An error that is not a lost connection is not tried again.
func TestRecordTriesOnlyLostConnections(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		enqueue(t, db, event("msg_refused"), clock.Now())
		s := newScript()
		w := newWorker(t, db, recordRefused{s}, clock)
		var logs logBuffer
		w.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		taken := pauses(w, clock)
		runOnce(t, w)
		if len(taken()) != 0 || len(s.recorded) != 1 {
			t.Errorf("%d pauses, %d tries; want 0, 1", len(taken()), len(s.recorded))
		}
		if !strings.Contains(logs.String(), errRefused.Error()) {
			t.Errorf("logs:\n%s", logs.String())
		}
		if in := only(t, db); in.Status != Pending {
			t.Errorf("after a refused record: %s; want PENDING", in.Status)
		}
	})
}

// A database restart loses every idle connection of the pool, not only
// the one a record took: the try again does not take them one by one
// (recordTries would run out on a pool of 8) but pings them away and
// records on a fresh one at its second try.
func TestRecordFindsAFreshConnection(t *testing.T) {
	for _, b := range []dbtest.Backend{dbtest.SQLite, dbtest.Postgres} {
		t.Run(string(b), func(t *testing.T) {
			db, observer, cut := openCuttable(t, b)
			migrated(t, db)
			clock := clocktest.New(t0)
			enqueue(t, db, event("msg_restart"), clock.Now())
			var restore func() bool
			s := newScript()
			w := newWorker(t, db, duringAttempt{s, func() {
				if restore == nil {
					restore = cut(0)
				}
			}}, clock)
			fillPool(t, db, 8)
			var logs logBuffer
			w.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			taken := pauses(w, clock)
			runOnce(t, w)
			restore()
			if in := only(t, observer); in.Status != Succeeded {
				t.Errorf("after the restart: %s; want SUCCEEDED", in.Status)
			}
			if len(taken()) != 1 || !strings.Contains(logs.String(), "tries=2 recorded=true") {
				t.Errorf("%d pauses; logs:\n%s", len(taken()), logs.String())
			}
		})
	}
}

// cutInFlush is a script whose Recorded, for the deliveries of event,
// loses the database's connections (cut(n)) in the middle of the flush,
// the first time only: its next statement fails as a lost connection's.
type cutInFlush struct {
	*script
	event   string
	cut     cutFunc
	n       int
	restore func() bool
}

func (h *cutInFlush) Recorded(ctx context.Context, tx bun.Tx, done []Result) error {
	if h.restore == nil && done[0].Delivery.Event.ID == h.event {
		h.restore = h.cut(h.n)
		if _, err := tx.ExecContext(ctx, "SELECT 1"); err != nil {
			return err
		}
	}
	return h.script.Recorded(ctx, tx, done)
}

// TestFlushCut: the database goes away while a flush of outcomes is being
// recorded. Back within the flush's tries, the flush is recorded on a
// fresh connection and nothing is sent twice; down for longer, the
// deliveries of that flush, and only those, are attempted again when their
// leases end (at least once), while an earlier flush's stay recorded.
func TestFlushCut(t *testing.T) {
	for _, b := range []dbtest.Backend{dbtest.SQLite, dbtest.Postgres} {
		for _, down := range []int{2, 1000} {
			t.Run(fmt.Sprintf("%s/%d refused", b, down), func(t *testing.T) {
				ctx := context.Background()
				db, observer, cut := openCuttable(t, b)
				migrated(t, db)
				clock := clocktest.New(t0)
				h := &cutInFlush{script: newScript(), event: "msg_second", cut: cut, n: down}
				w := newWorker(t, db, h, clock)
				w.cfg.Logger = slog.New(slog.DiscardHandler)
				pauses(w, clock)

				enqueue(t, db, event("msg_first"), clock.Now(), 1, 2, 3, 4)
				if n := runOnce(t, w); n != 4 {
					t.Fatalf("first flush: claimed %d, want 4", n)
				}
				enqueue(t, observer, event("msg_second"), clock.Now(), 5, 6, 7, 8)
				if n := runOnce(t, w); n != 4 {
					t.Fatalf("second flush: claimed %d, want 4", n)
				}
				if h.restore == nil {
					t.Fatal("the flush was not cut")
				}
				h.restore()
				clock.Advance(w.cfg.Lease + time.Second)
				again := runOnce(t, w)

				var rows []struct {
					Event    string `bun:"event_id"`
					Status   string `bun:"status"`
					Attempts int    `bun:"attempts"`
					Logged   int    `bun:"logged"`
				}
				if err := observer.NewRaw(`SELECT d.event_id, d.status, d.attempts,
  (SELECT COUNT(*) FROM deskkit_outbox_attempts a WHERE a.delivery_id = d.id) AS logged
FROM deskkit_outbox_deliveries d ORDER BY d.target_id`).Scan(ctx, &rows); err != nil {
					t.Fatal(err)
				}
				wantAttempts := map[string]int{"msg_first": 1, "msg_second": 1}
				if down > 2 {
					// The flush's tries ran out: its four are sent again.
					wantAttempts["msg_second"] = 2
					if again != 4 {
						t.Errorf("after the leases ended %d were claimed again, want the flush's 4", again)
					}
				} else if again != 0 {
					t.Errorf("after the leases ended %d were claimed again, want none", again)
				}
				for _, r := range rows {
					// The attempt whose outcome was lost has no row in the log.
					if r.Status != Succeeded || r.Attempts != wantAttempts[r.Event] || r.Logged != 1 {
						t.Errorf("%s: %s after %d attempts, %d logged; want SUCCEEDED, %d, 1", r.Event, r.Status, r.Attempts, r.Logged, wantAttempts[r.Event])
					}
				}
				if got, want := h.total(), 8+(wantAttempts["msg_second"]-1)*4; got != want {
					t.Errorf("the receiver got %d requests, want %d", got, want)
				}
			})
		}
	}
}
