package database_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/database"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// withHosts is dsn with its host part replaced by hosts, in order.
func withHosts(t *testing.T, dsn string, query string, hosts ...string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "HOSTS"
	if query != "" {
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += query
	}
	return strings.Replace(u.String(), "HOSTS", strings.Join(hosts, ","), 1)
}

// serverAddr is the host:port of the test server's URL.
func serverAddr(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if u.Port() == "" {
		return u.Host + ":5432"
	}
	return u.Host
}

// A URL listing a host that is down before the server tries the next
// one, with and without target_session_attrs=read-write (which pgdriver
// alone would send as a SET, failing with 42704), in the URL and in the
// keyword form, directly and with TransactionPooling's connector.
func TestMultiHostFirstHostDown(t *testing.T) {
	dsn := dbtest.RequirePostgres(t)
	up, down := serverAddr(t, dsn), closedAddr(t)
	u, _ := url.Parse(dsn)
	user := u.User.Username()
	keyword := fmt.Sprintf("host=%s,%s port=%s,%s dbname=%s user=%s sslmode=disable target_session_attrs=read-write",
		strings.Split(down, ":")[0], strings.Split(up, ":")[0], strings.Split(down, ":")[1], strings.Split(up, ":")[1], strings.TrimPrefix(u.Path, "/"), user)
	for name, tc := range map[string]struct {
		url  string
		opts database.Options
	}{
		"any":                     {withHosts(t, dsn, "", down, up), database.Options{MaxOpenConns: 2}},
		"read-write":              {withHosts(t, dsn, "target_session_attrs=read-write", down, up), database.Options{MaxOpenConns: 2}},
		"keyword form":            {keyword, database.Options{MaxOpenConns: 2}},
		"transaction pooling":     {withHosts(t, dsn, "target_session_attrs=read-write", down, up), database.Options{MaxOpenConns: 2, TransactionPooling: true}},
		"one host and read-write": {withHosts(t, dsn, "target_session_attrs=read-write", up), database.Options{MaxOpenConns: 2}},
	} {
		t.Run(name, func(t *testing.T) {
			db, err := database.Open(tc.url, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			var recovery bool
			var port int
			if err := db.NewRaw("SELECT pg_is_in_recovery(), inet_server_port()").Scan(ctx, &recovery, &port); err != nil {
				t.Fatalf("query through %s: %v", tc.url, err)
			}
			if want := strings.Split(up, ":")[1]; fmt.Sprint(port) != want || recovery {
				t.Errorf("served by port %d (in recovery %v), want %s, the host that is up", port, recovery, want)
			}
			// Every connection goes to the host that answered: a
			// transaction on a second one while the first is held.
			err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				_, err := db.ExecContext(ctx, "SELECT 1")
				return err
			})
			if err != nil {
				t.Errorf("second connection: %v", err)
			}
		})
	}
}

// No host up: the error is an outage (503 with Retry-After), naming each
// host's failure.
func TestMultiHostAllDown(t *testing.T) {
	a, b := closedAddr(t), closedAddr(t)
	for _, q := range []string{"", "target_session_attrs=read-write"} {
		db, err := database.Open(withHosts(t, "postgres://postgres@x/test?sslmode=disable", q, a, b), database.Options{MaxOpenConns: 1})
		if err != nil {
			t.Fatal(err)
		}
		err = db.PingContext(context.Background())
		db.Close()
		if !database.Unavailable(err) || !database.ConnLost(err) || !strings.Contains(fmt.Sprint(err), a) || !strings.Contains(fmt.Sprint(err), b) {
			t.Errorf("%s: ping with every host down: %v; want an outage naming the hosts' errors", q, err)
		}
	}
}

// The refusals of Open name the parameter.
func TestOpenRefusesMultiHost(t *testing.T) {
	for raw, name := range map[string]string{
		"postgres://u@h1,h2/db?target_session_attrs=standby": "target_session_attrs",
		"postgres://u@h1:1:2/db":                             "IPv6",
		"host=h1,h2 port=1,2,3 dbname=x":                     "port",
	} {
		db, err := database.Open(raw, database.Options{})
		if err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", raw)
		} else if !strings.Contains(err.Error(), name) {
			t.Errorf("Open(%q): %v; want it to name %s", raw, err, name)
		}
	}
}

// A connection whose server refuses a write as read-only (25006, what a
// demoted primary answers) is dropped: outside a transaction database/sql
// runs the statement again on a fresh connection; inside one, the error
// is an outage (ReadOnlyError, Unavailable) and the connection is not
// handed out again.
func TestReadOnlyConnectionIsDropped(t *testing.T) {
	dsn := dbtest.RequirePostgres(t)
	db, err := database.Open(dsn, database.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	table := bun.Ident(fmt.Sprintf("deskkit_readonly_probe_%d", serverPID(t, db)))
	t.Cleanup(func() { _, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS ?", table) })

	if _, err := db.ExecContext(ctx, "SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	before := serverPID(t, db)
	if _, err := db.ExecContext(ctx, "CREATE TABLE ? (x int)", table); err != nil {
		t.Fatalf("a write refused as read-only outside a transaction was not run again on a fresh connection: %v", err)
	}
	if after := serverPID(t, db); after == before {
		t.Errorf("the read-only connection (backend %d) is still in the pool", before)
	}

	before = serverPID(t, db)
	err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, "SET TRANSACTION READ ONLY"); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO ? VALUES (1)", table)
		return err
	})
	var ro *database.ReadOnlyError
	if !errors.As(err, &ro) || database.SQLSTATE(err) != "25006" || !database.Unavailable(err) || !database.ConnLost(err) {
		t.Fatalf("write in a read-only transaction: %v; want a ReadOnlyError (25006) that is Unavailable and ConnLost", err)
	}
	if after := serverPID(t, db); after == before {
		t.Errorf("the connection that answered 25006 (backend %d) is still in the pool", before)
	}
	var n int
	if err := db.NewRaw("SELECT count(*) FROM ?", table).Scan(ctx, &n); err != nil || n != 0 {
		t.Errorf("rows after the refused insert: %d, %v; want 0", n, err)
	}
}

func serverPID(t *testing.T, db *bun.DB) int {
	t.Helper()
	var pid int
	if err := db.NewRaw("SELECT pg_backend_pid()").Scan(context.Background(), &pid); err != nil {
		t.Fatal(err)
	}
	return pid
}
