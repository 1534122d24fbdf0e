package dbtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/database"
)

// pgBin is where Debian keeps PostgreSQL 15's server programs.
const pgBin = "/usr/lib/postgresql/15/bin"

// Replica is a private PostgreSQL primary and a hot standby streaming
// from it, each on a loopback port of its own, started by StartReplica.
type Replica struct {
	// PrimaryURL and StandbyURL reach database postgres of each, as user
	// postgres (trust authentication on 127.0.0.1).
	PrimaryURL, StandbyURL string

	home, standbyDir string
}

// StartReplica starts a small private primary (initdb as the postgres
// user in a temporary directory, wal_level = replica, fsync off, 30
// connections) and a hot standby made with pg_basebackup -R that streams
// from it, and waits until the standby has replayed the primary's
// position. Both stop (pg_ctl stop -m immediate) when t ends. The shared
// server's pg_hba has no replication line, hence a primary of its own.
// Without PostgreSQL 15's server programs the test skips, or fails with
// DESKKIT_REQUIRE_HA=1.
func StartReplica(t testing.TB) Replica {
	t.Helper()
	for _, p := range []string{"initdb", "pg_ctl", "pg_basebackup", "postgres"} {
		if _, err := os.Stat(filepath.Join(pgBin, p)); err != nil {
			if os.Getenv(EnvRequireHA) == "1" {
				t.Fatalf("%s/%s is missing (apt-get install postgresql-15) and %s=1", pgBin, p, EnvRequireHA)
			}
			t.Skipf("%s/%s is missing (apt-get install postgresql-15); skipping", pgBin, p)
		}
	}
	home := ownedDir(t, "deskkit-replica-")
	for _, d := range []string{"tmp", "config", "data", "run"} {
		mkOwned(t, filepath.Join(home, d))
	}
	primaryDir, standbyDir := filepath.Join(home, "primary"), filepath.Join(home, "standby")
	mkOwned(t, primaryDir)
	mkOwned(t, standbyDir)
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(pgBin, name), args...)
		asPostgres(t, cmd, home)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("initdb", "-D", primaryDir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	pport, sport := freePort(t), freePort(t)
	conf := fmt.Sprintf(`listen_addresses = '127.0.0.1'
unix_socket_directories = '%s'
shared_buffers = 16MB
max_connections = 30
fsync = off
full_page_writes = off
wal_level = replica
max_wal_senders = 4
wal_keep_size = 64MB
hot_standby = on
hot_standby_feedback = on
max_standby_streaming_delay = 5s
wal_receiver_status_interval = 1s
log_min_messages = warning
`, home)
	appendFile(t, filepath.Join(primaryDir, "postgresql.conf"), conf+fmt.Sprintf("port = %d\n", pport))
	appendFile(t, filepath.Join(primaryDir, "pg_hba.conf"), "host replication postgres 127.0.0.1/32 trust\n")
	start := func(dir string, port int) {
		t.Helper()
		t.Cleanup(func() {
			cmd := exec.Command(filepath.Join(pgBin, "pg_ctl"), "stop", "-D", dir, "-m", "immediate", "-w")
			asPostgres(t, cmd, home)
			_ = cmd.Run()
		})
		cmd := exec.Command(filepath.Join(pgBin, "pg_ctl"), "start", "-D", dir, "-w", "-t", "60", "-l", filepath.Join(dir, "server.log"))
		asPostgres(t, cmd, home)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("pg_ctl start %s: %v\n%s\n%s", dir, err, out.String(), log)
		}
		if !waitListening(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 30*time.Second, make(chan error, 1)) {
			t.Fatalf("PostgreSQL in %s does not listen on %d", dir, port)
		}
	}
	start(primaryDir, pport)
	run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(pport), "-U", "postgres", "-D", standbyDir, "-R", "-X", "stream", "--no-sync", "-c", "fast")
	appendFile(t, filepath.Join(standbyDir, "postgresql.conf"), fmt.Sprintf("port = %d\n", sport))
	start(standbyDir, sport)
	r := Replica{
		PrimaryURL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pport),
		StandbyURL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", sport),
		home:       home, standbyDir: standbyDir,
	}
	if err := r.WaitReplayed(context.Background(), time.Minute); err != nil {
		t.Fatalf("the standby does not catch up: %v", err)
	}
	return r
}

// WaitReplayed waits, for at most limit, until the standby has replayed
// everything the primary had written when it was called.
func (r Replica) WaitReplayed(ctx context.Context, limit time.Duration) error {
	primary := database.OpenPostgres(r.PrimaryURL, adminPool)
	defer primary.Close()
	standby := database.OpenPostgres(r.StandbyURL, adminPool)
	defer standby.Close()
	var target string
	if err := primary.QueryRowContext(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&target); err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	for {
		var done bool
		err := standby.QueryRowContext(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= ?::pg_lsn, false)", target).Scan(&done)
		if err == nil && done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not replayed %s within %s (last error: %v)", target, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// PauseReplay stops the standby replaying WAL (it keeps receiving it)
// until ResumeReplay; it waits until the pause has taken effect.
func (r Replica) PauseReplay(ctx context.Context) error {
	standby := database.OpenPostgres(r.StandbyURL, adminPool)
	defer standby.Close()
	if _, err := standby.ExecContext(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		return err
	}
	for {
		var state string
		if err := standby.QueryRowContext(ctx, "SELECT pg_get_wal_replay_pause_state()").Scan(&state); err != nil {
			return err
		}
		if state == "paused" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ResumeReplay lets a paused standby replay again.
func (r Replica) ResumeReplay(ctx context.Context) error {
	standby := database.OpenPostgres(r.StandbyURL, adminPool)
	defer standby.Close()
	_, err := standby.ExecContext(ctx, "SELECT pg_wal_replay_resume()")
	return err
}

// StopStandby stops the standby at once (pg_ctl stop -m immediate): its
// connections break, and it refuses new ones.
func (r Replica) StopStandby(t testing.TB) {
	t.Helper()
	cmd := exec.Command(filepath.Join(pgBin, "pg_ctl"), "stop", "-D", r.standbyDir, "-m", "immediate", "-w")
	asPostgres(t, cmd, r.home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}

// mkOwned makes dir, owned by the postgres user when the test runs as root.
func mkOwned(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if uid, gid, ok := postgresIDs(t, "PostgreSQL"); ok {
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
}

// appendFile appends text to the file at path.
func appendFile(t testing.TB, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
