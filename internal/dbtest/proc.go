package dbtest

import (
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// postgresIDs returns the uid and gid of the postgres user when the test
// runs as root, and ok false otherwise. PgBouncer, initdb, pg_ctl and
// pg_autoctl refuse to run as root: run as root, the tests start them as
// that user (asPostgres), in directories chowned to it.
func postgresIDs(t testing.TB, what string) (uid, gid int, ok bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	pg, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("%s refuses to run as root, and there is no postgres user to run it as: %v", what, err)
	}
	uid, _ = strconv.Atoi(pg.Uid)
	gid, _ = strconv.Atoi(pg.Gid)
	return uid, gid, true
}

// asPostgres makes cmd run as the postgres user when the test runs as
// root, with HOME and the XDG folders in home (a folder that user owns),
// which pg_autoctl keeps its state under.
func asPostgres(t testing.TB, cmd *exec.Cmd, home string) {
	t.Helper()
	uid, gid, ok := postgresIDs(t, cmd.Path)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "HOME="+home, "XDG_CONFIG_HOME="+home+"/config", "XDG_DATA_HOME="+home+"/data", "XDG_RUNTIME_DIR="+home+"/run", "TMPDIR="+home+"/tmp")
	if ok {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
}

// ownedDir makes a temporary directory that the postgres user owns when
// the test runs as root (with mode 0700, as initdb wants a data
// directory), removed when t ends.
func ownedDir(t testing.TB, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if uid, gid, ok := postgresIDs(t, "PostgreSQL"); ok {
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitListening waits until addr accepts TCP connections, for at most
// limit, or until exited yields (the process serving it has ended; the
// value is put back). It reports whether addr answered.
func waitListening(addr string, limit time.Duration, exited chan error) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return true
		}
		select {
		case err := <-exited:
			exited <- err
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
}
