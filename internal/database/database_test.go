package database_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

func TestOpenSQLiteFilesAreOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "owner.db")
	db, err := database.Open("sqlite:"+path, database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO t DEFAULT VALUES"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatalf("stat %s: %v (is the journal not WAL?)", name, err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %v, want -rw-------", filepath.Base(name), mode)
		}
	}
	var mode string
	if err := db.NewRaw("PRAGMA journal_mode").Scan(ctx, &mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
}

func TestOpenRejects(t *testing.T) {
	for _, tc := range []struct {
		url  string
		opts database.Options
	}{
		{"mysql://x", database.Options{}},
		{"sqlite:", database.Options{}},
		{"sqlite:x.db", database.Options{MaxOpenConns: -1}},
		{"postgres://postgres@127.0.0.1/test", database.Options{StatementTimeout: -time.Second}},
	} {
		if db, err := database.Open(tc.url, tc.opts); err == nil {
			db.Close()
			t.Errorf("Open(%q, %+v) succeeded", tc.url, tc.opts)
		}
	}
}

func TestPoolIsBounded(t *testing.T) {
	db, err := database.Open("sqlite:"+filepath.Join(t.TempDir(), "pool.db"), database.Options{MaxOpenConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.Stats().MaxOpenConnections; got != 3 {
		t.Errorf("MaxOpenConnections = %d, want 3", got)
	}
	def, err := database.Open("sqlite:"+filepath.Join(t.TempDir(), "def.db"), database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	if got, want := def.Stats().MaxOpenConnections, database.DefaultMaxOpenConns(); got != want || want < 1 {
		t.Errorf("default MaxOpenConnections = %d, want %d", got, want)
	}
}

// closedAddr is a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	down := database.OpenPostgres(fmt.Sprintf("postgres://postgres@%s/test?sslmode=disable", closedAddr(t)), database.Options{MaxOpenConns: 1})
	defer down.Close()
	_, refused := down.ExecContext(ctx, "SELECT 1")

	expired, cancel := context.WithTimeout(ctx, -time.Second)
	defer cancel()

	cases := map[string]struct {
		err  error
		want bool
	}{
		"nil":                {nil, false},
		"plain":              {errors.New("boom"), false},
		"deadline":           {fmt.Errorf("search: %w", context.DeadlineExceeded), true},
		"connection refused": {refused, true},
		"expired context":    {expired.Err(), true},
		"closed pool":        {closedPool(t), true},
	}
	for name, tc := range cases {
		if name != "nil" && tc.err == nil {
			t.Errorf("%s: the setup produced no error", name)
			continue
		}
		if got := database.Unavailable(tc.err); got != tc.want {
			t.Errorf("%s: Unavailable(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}

func closedPool(t *testing.T) error {
	db, err := database.Open("sqlite:"+filepath.Join(t.TempDir(), "closed.db"), database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = db.ExecContext(context.Background(), "SELECT 1")
	return err
}

// The DSN deskkit documents for hosts (doc.go, examples/embed) is this one.
func TestSQLiteDSNIsTheDocumentedOne(t *testing.T) {
	const documented = "file:app.db?_busy_timeout=10000&_foreign_keys=1&_journal_mode=WAL&_txlock=immediate"
	if got := database.SQLiteDSN("app.db"); got != documented {
		t.Errorf("SQLiteDSN = %q; the docs say %q: change both together", got, documented)
	}
}

// Every PostgreSQL connection deskkit opens has the session settings
// PostgresOptions promises.
func TestPostgresSessionSettings(t *testing.T) {
	dsn := dbtest.RequirePostgres(t)
	db := database.OpenPostgres(dsn, database.Options{MaxOpenConns: 1, StatementTimeout: 1500 * time.Millisecond})
	defer db.Close()
	var timeout, parallel string
	if err := db.NewRaw("SELECT current_setting('statement_timeout'), current_setting('max_parallel_workers_per_gather')").
		Scan(context.Background(), &timeout, &parallel); err != nil {
		t.Fatal(err)
	}
	if timeout != "1500ms" || parallel != "0" {
		t.Errorf("statement_timeout = %s, max_parallel_workers_per_gather = %s; want 1500ms and 0", timeout, parallel)
	}
}

// Errors from a real PostgreSQL server: a statement timeout is an outage, a
// syntax error is not.
func TestUnavailablePostgres(t *testing.T) {
	ctx := context.Background()
	pg := database.OpenPostgres(dbtest.RequirePostgres(t), database.Options{MaxOpenConns: 1, StatementTimeout: 50 * time.Millisecond})
	defer pg.Close()
	_, timeout := pg.ExecContext(ctx, "SELECT pg_sleep(5)")
	_, syntax := pg.ExecContext(ctx, "SELEKT 1")
	if got := database.SQLSTATE(timeout); got != "57014" || !database.Unavailable(timeout) {
		t.Errorf("statement timeout %v: SQLSTATE %q, Unavailable %v; want 57014, true", timeout, got, database.Unavailable(timeout))
	}
	if syntax == nil || database.Unavailable(syntax) {
		t.Errorf("syntax error %v: Unavailable true, want false", syntax)
	}
}

// ConnLost tells a lost connection (a reset, EOF, a server that closed the
// connection or cannot be reached) from an error the database answered and
// from a timeout, with errors as drivers return them.
func TestConnLost(t *testing.T) {
	ctx := context.Background()
	// A loopback port nobody listens on, and one that hangs up at once.
	closedAddr := closedAddr(t)
	hangup, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hangup.Close()
	go func() {
		for {
			c, err := hangup.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	pgAt := func(addr string) error {
		db := database.OpenPostgres(fmt.Sprintf("postgres://postgres@%s/test?sslmode=disable", addr), database.Options{MaxOpenConns: 1})
		defer db.Close()
		_, err := db.ExecContext(ctx, "SELECT 1")
		return err
	}
	lite, err := database.Open("sqlite:"+filepath.Join(t.TempDir(), "lost.db"), database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if _, err := lite.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	_, duplicate := lite.ExecContext(ctx, "INSERT INTO t VALUES (1), (1)")

	cases := map[string]struct {
		err  error
		want bool
	}{
		"nil":                {nil, false},
		"plain":              {errors.New("boom"), false},
		"EOF":                {fmt.Errorf("record: %w", io.EOF), true},
		"bad connection":     {driver.ErrBadConn, true},
		"reset":              {&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		"broken pipe":        {&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, true},
		"connection refused": {pgAt(closedAddr), true},
		"hung up":            {pgAt(hangup.Addr().String()), true},
		"deadline":           {context.DeadlineExceeded, false},
		"unique violation":   {duplicate, false},
	}
	for name, tc := range cases {
		if name != "nil" && tc.err == nil {
			t.Errorf("%s: the setup produced no error", name)
			continue
		}
		if got := database.ConnLost(tc.err); got != tc.want {
			t.Errorf("%s: ConnLost(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}

// From a real PostgreSQL server: a connection its backend ended
// (pg_terminate_backend, a restart) is lost; a statement timeout, a syntax
// error or a division by zero is not.
func TestConnLostPostgres(t *testing.T) {
	ctx := context.Background()
	pg := database.OpenPostgres(dbtest.RequirePostgres(t), database.Options{MaxOpenConns: 1, StatementTimeout: 50 * time.Millisecond})
	defer pg.Close()
	_, terminated := pg.ExecContext(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
	_, timeout := pg.ExecContext(ctx, "SELECT pg_sleep(5)")
	_, syntax := pg.ExecContext(ctx, "SELEKT 1")
	_, divide := pg.ExecContext(ctx, "SELECT * FROM (VALUES (1)) v(x) WHERE x = 1/0")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"terminated", terminated, true},
		{"statement timeout", timeout, false},
		{"syntax error", syntax, false},
		{"division by zero", divide, false},
	} {
		if tc.err == nil {
			t.Errorf("%s: the setup produced no error", tc.name)
			continue
		}
		if got := database.ConnLost(tc.err); got != tc.want {
			t.Errorf("%s: ConnLost(%v) (SQLSTATE %q) = %v, want %v", tc.name, tc.err, database.SQLSTATE(tc.err), got, tc.want)
		}
	}
}
