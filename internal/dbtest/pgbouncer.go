package dbtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/database"
)

// EnvRequireHA, set to 1, turns the skip of a test that needs a
// high-availability component this machine lacks (PgBouncer) into a
// failure: CI sets it.
const EnvRequireHA = "DESKKIT_REQUIRE_HA"

// PgBouncerPoolSize is how many server connections a PgBouncer started by
// PgBouncer opens to PostgreSQL at most: the shared server allows 100.
const PgBouncerPoolSize = 10

// PgBouncer starts Debian's pgbouncer on a free loopback port in
// transaction mode (pool_mode = transaction, trust authentication, at most
// PgBouncerPoolSize server connections) in front of the PostgreSQL of
// direct, and returns direct's URL with its host and port replaced by
// PgBouncer's: the same database and user, through the pooler. PgBouncer
// is stopped when t ends (before the cleanups registered earlier, such as
// dropping the database). Run as root, PgBouncer drops its privileges to
// the postgres user (it refuses to run as root), which gets the temporary
// directory its files live in. Without pgbouncer installed the test
// skips, or fails with DESKKIT_REQUIRE_HA=1.
func PgBouncer(t testing.TB, direct string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr == nil {
			bin, err = "/usr/sbin/pgbouncer", nil
		}
	}
	if err != nil {
		if os.Getenv(EnvRequireHA) == "1" {
			t.Fatalf("pgbouncer is not installed (apt-get install pgbouncer) and %s=1", EnvRequireHA)
		}
		t.Skip("pgbouncer is not installed (apt-get install pgbouncer); skipping")
	}
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatalf("PostgreSQL URL: %v", err)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	name := "postgres"
	if u.User != nil && u.User.Username() != "" {
		name = u.User.Username()
	}
	dir := ownedDir(t, "deskkit-pgbouncer-")
	listen := freePort(t)
	runAs := ""
	uid, gid, asRoot := postgresIDs(t, "pgbouncer")
	if asRoot {
		runAs = "user = postgres\n"
	}
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir = %s
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 200
default_pool_size = %d
max_db_connections = %d
server_login_retry = 1
pidfile = %s
logfile = %s
%s`, host, port, listen, dir, filepath.Join(dir, "userlist.txt"), PgBouncerPoolSize, PgBouncerPoolSize,
		filepath.Join(dir, "pgbouncer.pid"), filepath.Join(dir, "pgbouncer.log"), runAs)
	files := map[string]string{
		"pgbouncer.ini": ini,
		"userlist.txt":  strconv.Quote(name) + ` ""` + "\n",
	}
	for f, text := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if asRoot {
		for _, p := range []string{filepath.Join(dir, "pgbouncer.ini"), filepath.Join(dir, "userlist.txt")} {
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT) // a fast shutdown: it closes its connections
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(listen))
	if !waitListening(addr, 15*time.Second, exited) {
		log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
		t.Fatalf("pgbouncer did not listen on %s within 15 s:\n%s\n%s", addr, out.String(), log)
	}
	p := *u
	p.Host = addr
	return p.String()
}

// Database creates a fresh PostgreSQL database on the test server for t
// and returns its URL; it is dropped (WITH (FORCE)) when t ends. For
// tests that go through PgBouncer, which lends server sessions and so
// cannot keep OpenPostgres's per-connection search_path.
func Database(t testing.TB) string {
	t.Helper()
	dsn := RequirePostgres(t)
	name := "deskkit_test_db_" + randomHex(6)
	ctx := context.Background()
	admin := database.OpenPostgres(dsn, adminPool)
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE ?", bun.Ident(name)); err != nil {
		// The test role may lack CREATEDB where schemas are all EachDB
		// needs: a skip, unless PostgreSQL is required.
		if os.Getenv(EnvRequirePostgres) == "1" {
			t.Fatalf("create database: %v", err)
		}
		t.Skipf("cannot create a database, skipping: %v", err)
	}
	t.Cleanup(func() {
		cleanup := database.OpenPostgres(dsn, adminPool)
		defer cleanup.Close()
		// DROP DATABASE asks for a checkpoint, which on a busy shared
		// server can outlast pgdriver's read timeout: asked again, a few
		// times, before the test reports it.
		var err error
		for range 5 {
			if _, err = cleanup.ExecContext(context.Background(), "DROP DATABASE IF EXISTS ? WITH (FORCE)", bun.Ident(name)); err == nil {
				return
			}
		}
		t.Errorf("drop database %s: %v", name, err)
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
