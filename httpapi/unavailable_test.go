package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// newAPIWith is newAPI with cfg changed by edit before New.
func newAPIWith(t *testing.T, db *bun.DB, edit func(*Config)) *apiFixture {
	t.Helper()
	f := newAPI(t, db)
	cfg := f.srv.cfg
	edit(&cfg)
	srv, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	return f
}

// logLines decodes the JSON log lines written so far.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func (r response) expect503(t *testing.T) {
	t.Helper()
	r.expect(t, http.StatusServiceUnavailable, "E2", KeyServiceUnavailable)
	if r.header.Get("Retry-After") != "5" {
		t.Errorf("Retry-After %q, want 5 (DefaultRetryAfter)", r.header.Get("Retry-After"))
	}
	if strings.Contains(r.raw, "sql") || strings.Contains(r.raw, "127.0.0.1") || strings.Contains(r.raw, "pool") {
		t.Errorf("503 leaked internals: %s", r.raw)
	}
}

// Fault 2: a request that cannot get a connection before its deadline
// answers 503 with Retry-After, not 500, and the next one, once the pool
// has a connection free again, succeeds.
func TestPoolExhaustionAnswers503(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newAPIWith(t, db, func(c *Config) { c.RequestTimeout = 50 * time.Millisecond })
		f.add(t, "alice", trash.NewEntry{TargetType: trash.TargetTask, TargetID: 1, TargetName: "a task"})
		db.SetMaxOpenConns(1)
		held, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range []string{
			"/api/v1/task/trash/count?projectId=1",
			"/api/v1/task/trash/search?targetType=TASK",
			"/api/v1/task/trash?projectId=1",
		} {
			method := "GET"
			if !strings.Contains(target, "/count") && !strings.Contains(target, "/search") {
				method = "DELETE"
			}
			f.do(t, method, target, "alice", nil).expect503(t)
		}
		held.Close()
		r := f.do(t, "GET", "/api/v1/task/trash/count?projectId=1", "alice", nil)
		r.expect(t, 200, "S", "")
		if r.env.Data != float64(1) {
			t.Errorf("count after the outage = %v, want 1: the refused clear changed something", r.env.Data)
		}
		// One outage line for three 503s within the interval, and one when
		// the outage ends, with the two left out.
		lines := logLines(t, f.logs)
		if len(lines) != 2 || lines[0]["msg"] != "service unavailable" || lines[0]["level"] != "ERROR" ||
			lines[1]["msg"] != "service available again" || lines[1]["suppressed"] != float64(2) {
			t.Errorf("want an outage line and an end line counting 2, got %v", lines)
		}
	})
}

// A database that refuses connections, or a pool the host has closed,
// answers 503.
func TestUnreachableDatabaseAnswers503(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		// A trash built while PostgreSQL answered (trash.New checks its
		// tables), whose connections then go to an address where nothing
		// listens: connection refused.
		dsn := dbtest.RequirePostgres(t)
		schemaDB := dbtest.OpenPostgres(t)
		if err := trash.Migrate(context.Background(), schemaDB); err != nil {
			t.Fatal(err)
		}
		var schema string
		if err := schemaDB.QueryRowContext(context.Background(), "SELECT current_schema()").Scan(&schema); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := ln.Addr().String()
		ln.Close() // nothing listens there now
		var refuse atomic.Bool
		db := dbtest.OpenSchema(dsn, schema, func(c *pgdriver.Config) {
			c.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if refuse.Load() {
					addr = dead
				}
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}
		})
		defer db.Close()
		srv := serverOver(t, db)
		refuse.Store(true)
		db.SetMaxIdleConns(0) // the connection New used goes: the next one is dialled
		srv.do(t, "GET", "/api/v1/task/trash/count?projectId=1", "alice", nil).expect503(t)
	})
	t.Run("closed", func(t *testing.T) {
		db := dbtest.OpenSQLite(t)
		f := newAPI(t, db)
		db.Close()
		f.do(t, "GET", "/api/v1/task/trash/count?projectId=1", "alice", nil).expect503(t)
		f.do(t, "DELETE", "/api/v1/task/trash/1", "alice", nil).expect503(t)
	})
}

// serverOver serves a trash over db, which trash.Migrate has migrated.
func serverOver(t *testing.T, db *bun.DB) *apiFixture {
	t.Helper()
	tr, err := trash.New(db, &recordingRestorer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &apiFixture{db: db, trash: tr, logs: &bytes.Buffer{}}
	f.srv, err = New(&Config{
		Authenticator: users, Trash: tr,
		Now:    func() time.Time { return fixedNow },
		Logger: slog.New(slog.NewJSONHandler(f.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The request deadline reaches the endpoint: one that waits on the
// database past it answers 503.
func TestRequestDeadline(t *testing.T) {
	f := newAPIWith(t, dbtest.OpenSQLite(t), func(c *Config) { c.RequestTimeout = time.Millisecond })
	var deadline time.Time
	f.srv.Handle("GET", "/test/slow", func(r *http.Request, _ deskkit.Principal) (any, error) {
		deadline, _ = r.Context().Deadline()
		<-r.Context().Done()
		return nil, fmt.Errorf("query: %w", r.Context().Err())
	})
	// An error that lost its cause on the way up is still an outage when the
	// deadline has passed.
	f.srv.Handle("GET", "/test/opaque", func(r *http.Request, _ deskkit.Principal) (any, error) {
		<-r.Context().Done()
		return nil, errors.New("something failed")
	})
	f.do(t, "GET", "/api/v1/test/slow", "alice", nil).expect503(t)
	if deadline.IsZero() {
		t.Error("the endpoint's context had no deadline")
	}
	f.do(t, "GET", "/api/v1/test/opaque", "alice", nil).expect503(t)
}

type retryLater struct{}

func (retryLater) Error() string                     { return "upstream is down" }
func (retryLater) Is(target error) bool              { return target == deskkit.ErrUnavailable }
func (retryLater) RetryAfterDuration() time.Duration { return 29500 * time.Millisecond }
func (retryLater) ClientMessage() string             { return "the mail relay is down; retry in 30 seconds" }

func TestUnavailableErrors(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	errs := map[string]error{
		"/sentinel":  fmt.Errorf("store: %w", deskkit.ErrUnavailable),
		"/own":       retryLater{},
		"/canceled":  context.Canceled,
		"/deadline":  fmt.Errorf("select: %w", context.DeadlineExceeded),
		"/sqliteBsy": errors.New("database is locked (5) (SQLITE_BUSY)"),
	}
	for path, err := range errs {
		f.srv.Handle("GET", "/test"+path, func(*http.Request, deskkit.Principal) (any, error) { return nil, err })
	}
	for _, path := range []string{"/sentinel", "/deadline", "/sqliteBsy"} {
		f.do(t, "GET", "/api/v1/test"+path, "alice", nil).expect503(t)
	}
	r := f.do(t, "GET", "/api/v1/test/own", "alice", nil)
	r.expect(t, 503, "E2", KeyServiceUnavailable)
	if r.header.Get("Retry-After") != "30" || r.env.Msg != "the mail relay is down; retry in 30 seconds" {
		t.Errorf("RetryAfterer/ClientMessager: Retry-After %q msg %q", r.header.Get("Retry-After"), r.env.Msg)
	}
	// context.Canceled while the client is still there is a bug too.
	f.do(t, "GET", "/api/v1/test/canceled", "alice", nil).expect(t, 500, "E2", KeyInternal)
}

// A client that went away is not logged: nobody waits for the answer, and
// nothing failed on our side.
func TestClientGoneNotLogged(t *testing.T) {
	f := newAPI(t, dbtest.OpenSQLite(t))
	f.srv.Handle("GET", "/test/gone", func(r *http.Request, _ deskkit.Principal) (any, error) {
		<-r.Context().Done()
		return nil, fmt.Errorf("query: %w", r.Context().Err())
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "/api/v1/test/gone", nil)
	req.Header.Set("Authorization", "Bearer alice")
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, req)
	if rec.Code == http.StatusInternalServerError || f.logs.Len() != 0 {
		t.Errorf("client gone: %d, logged %q", rec.Code, f.logs)
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// An outage is logged once per OutageLogInterval, the next line saying how
// many 503s were left out (a 13 s outage once logged 12,838 lines).
func TestOutageLoggedOncePerInterval(t *testing.T) {
	clock := &fakeClock{now: fixedNow}
	logs := &bytes.Buffer{}
	srv, err := New(&Config{
		Authenticator:     users,
		Now:               clock.Now,
		Logger:            slog.New(slog.NewJSONHandler(logs, nil)),
		OutageLogInterval: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle("GET", "/down", func(*http.Request, deskkit.Principal) (any, error) {
		return nil, fmt.Errorf("select: %w", deskkit.ErrUnavailable)
	})
	hit := func(n int) {
		for range n {
			req := httptest.NewRequest("GET", "/api/v1/down", nil)
			req.Header.Set("Authorization", "Bearer alice")
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			if rec.Code != http.StatusServiceUnavailable {
				t.Fatalf("status %d", rec.Code)
			}
		}
	}
	hit(100) // 1 line, 99 left out
	clock.advance(9999 * time.Millisecond)
	hit(50)                         // still within the interval
	clock.advance(time.Millisecond) // 10 s after the first line
	hit(1)                          // 2nd line: 149 left out
	clock.advance(time.Hour)
	hit(1) // 3rd line: none left out
	var got []float64
	for _, l := range logLines(t, logs) {
		if l["msg"] != "service unavailable" {
			t.Errorf("unexpected line %v", l)
		}
		got = append(got, l["suppressed"].(float64))
	}
	if want := []float64{0, 149, 0}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("suppressed counts %v, want %v", got, want)
	}
}

// On PostgreSQL, a statement that runs out of its statement_timeout is an
// outage (503); a statement the database rejects as wrong is a bug (500).
func TestPostgresStatementErrors(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	f := newAPI(t, db)
	f.srv.Handle("GET", "/test/timeout", func(r *http.Request, _ deskkit.Principal) (any, error) {
		return nil, db.RunInTx(r.Context(), nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, "SET LOCAL statement_timeout = 10"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "SELECT pg_sleep(5)")
			return err
		})
	})
	f.srv.Handle("GET", "/test/syntax", func(r *http.Request, _ deskkit.Principal) (any, error) {
		_, err := db.ExecContext(r.Context(), "SELEC 1")
		return nil, err
	})
	f.do(t, "GET", "/api/v1/test/timeout", "alice", nil).expect503(t)
	f.do(t, "GET", "/api/v1/test/syntax", "alice", nil).expect(t, 500, "E2", KeyInternal)
}

// Issue 12, 1.7: 24,309 503s in a 10 s outage logged one line, and the
// count of the rest came out with the next outage, 106 s later. The count
// comes out when the outage ends (the first success after it), and every
// interval while it lasts.
func TestOutageSummaryWhenItEnds(t *testing.T) {
	clock := &fakeClock{now: fixedNow}
	logs := &bytes.Buffer{}
	srv, err := New(&Config{
		Authenticator:     users,
		Now:               clock.Now,
		Logger:            slog.New(slog.NewJSONHandler(logs, nil)),
		OutageLogInterval: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	down := true
	srv.Handle("GET", "/db", func(*http.Request, deskkit.Principal) (any, error) {
		if down {
			return nil, fmt.Errorf("select: %w", deskkit.ErrUnavailable)
		}
		return "ok", nil
	})
	hit := func(n int) {
		for range n {
			req := httptest.NewRequest("GET", "/api/v1/db", nil)
			req.Header.Set("Authorization", "Bearer alice")
			srv.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	type line struct {
		msg        string
		suppressed float64
	}
	read := func() []line {
		var out []line
		for _, l := range logLines(t, logs) {
			out = append(out, line{l["msg"].(string), l["suppressed"].(float64)})
		}
		logs.Reset()
		return out
	}
	hit(100) // the outage starts: one line
	clock.advance(3 * time.Second)
	hit(200)
	clock.advance(8 * time.Second) // 11 s in: the next 503 is logged with the count
	hit(50)
	clock.advance(2 * time.Second)
	down = false
	hit(5) // the outage ends: one line with the 49 since
	want := []line{{"service unavailable", 0}, {"service unavailable", 299}, {"service available again", 49}}
	if got := read(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines %v, want %v", got, want)
	}
	// A new outage a moment later is logged at once, as a new outage.
	down = true
	clock.advance(time.Second)
	hit(3)
	if got := read(); fmt.Sprint(got) != fmt.Sprint([]line{{"service unavailable", 0}}) {
		t.Errorf("lines %v", got)
	}
}
