package dbtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/database"
)

// FormationDatabase is the database a Formation's nodes serve.
const FormationDatabase = "deskkit"

// FormationSettings are the monitor settings a Formation runs with, to
// fail over in seconds rather than in the defaults' half minute or more
// (examples/server/README.md, "Failover (pg_auto_failover)", says what
// each does and what a shorter one risks). They are set with ALTER
// SYSTEM on the monitor.
var FormationSettings = map[string]string{
	"pgautofailover.health_check_period":               "1000",
	"pgautofailover.health_check_timeout":              "1000",
	"pgautofailover.health_check_max_retries":          "1",
	"pgautofailover.health_check_retry_delay":          "500",
	"pgautofailover.node_considered_unhealthy_timeout": "2000",
	"pgautofailover.primary_demote_timeout":            "2000",
}

// Formation is a pg_auto_failover formation on loopback: a monitor and
// two PostgreSQL nodes, one primary and one secondary in synchronous
// replication (a commit waits for the secondary), each run by its
// pg_autoctl as the postgres user.
type Formation struct {
	t       testing.TB
	dir     string
	monitor *autoctl
	nodes   []*autoctl
	ports   []int
	mon     string // the monitor's URL, as postgres
	// URL is the multi-host URL of the formation's database, with
	// target_session_attrs=read-write: what a user gives -database-url.
	URL string
}

// autoctl is one `pg_autoctl run` process (and its group: the postgres
// it starts).
type autoctl struct {
	name   string
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan error
	killed bool
}

// syncBuffer is a bytes.Buffer written by a process and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// StartFormation starts a formation and waits until it has a primary and
// a synchronous secondary; it is stopped, and its files removed, when t
// ends. Without pg_autoctl (Debian's pg-auto-failover-cli and
// postgresql-15-auto-failover) the test skips, or fails with
// DESKKIT_REQUIRE_HA=1. It takes 15 to 30 s.
func StartFormation(t testing.TB) *Formation {
	t.Helper()
	bin, err := exec.LookPath("pg_autoctl")
	pgctl := "/usr/lib/postgresql/15/bin/pg_ctl"
	if err == nil {
		_, err = os.Stat(pgctl)
	}
	if err != nil {
		if os.Getenv(EnvRequireHA) == "1" {
			t.Fatalf("pg_auto_failover is not installed (apt-get install postgresql-15-auto-failover pg-auto-failover-cli) and %s=1: %v", EnvRequireHA, err)
		}
		t.Skipf("pg_auto_failover is not installed (apt-get install postgresql-15-auto-failover pg-auto-failover-cli); skipping: %v", err)
	}
	f := &Formation{t: t, dir: ownedDir(t, "deskkit-formation-")}
	for _, sub := range []string{"tmp", "run", "config", "data"} {
		f.mkdir(filepath.Join(f.dir, sub))
	}
	t.Cleanup(f.stop)
	// pg_autoctl asks for its own PATH entries (pg_ctl, pg_config).
	env := append(os.Environ(), "PATH=/usr/lib/postgresql/15/bin:"+os.Getenv("PATH"), "PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config")
	create := func(args ...string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		asPostgres(t, cmd, f.dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pg_autoctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	monPort := freePort(t)
	create("create", "monitor", "--pgctl", pgctl, "--pgdata", filepath.Join(f.dir, "monitor"), "--pgport", fmt.Sprint(monPort),
		"--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl")
	// The monitor's PostgreSQL listens on loopback only.
	create("config", "set", "--pgdata", filepath.Join(f.dir, "monitor"), "postgresql.listen_addresses", "127.0.0.1")
	f.monitor = f.run(bin, env, "monitor")
	f.mon = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/pg_auto_failover?sslmode=disable", monPort)
	f.waitMonitor()
	f.tune()
	monitorURI := fmt.Sprintf("postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable", monPort)
	var hosts []string
	for i := range 2 {
		name := fmt.Sprintf("node%d", i+1)
		port := freePort(t)
		create("create", "postgres", "--pgctl", pgctl, "--pgdata", filepath.Join(f.dir, name), "--pgport", fmt.Sprint(port),
			"--listen", "127.0.0.1", "--hostname", "127.0.0.1", "--name", name, "--auth", "trust", "--no-ssl",
			"--monitor", monitorURI, "--dbname", FormationDatabase)
		f.nodes = append(f.nodes, f.run(bin, env, name))
		f.ports = append(f.ports, port)
		hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", port))
		if i == 0 {
			// The second node clones the first once it is primary.
			f.waitStates(60*time.Second, "single")
		}
	}
	f.waitStates(90*time.Second, "primary", "secondary")
	f.URL = fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&target_session_attrs=read-write", strings.Join(hosts, ","), FormationDatabase)
	return f
}

func (f *Formation) mkdir(dir string) {
	f.t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		f.t.Fatal(err)
	}
	if uid, gid, ok := postgresIDs(f.t, "pg_autoctl"); ok {
		if err := os.Chown(dir, uid, gid); err != nil {
			f.t.Fatal(err)
		}
	}
}

// run starts `pg_autoctl run` for the node in f.dir/name, in a process
// group of its own, so that a kill reaches its postgres too.
func (f *Formation) run(bin string, env []string, name string) *autoctl {
	f.t.Helper()
	cmd := exec.Command(bin, "run", "--pgdata", filepath.Join(f.dir, name))
	cmd.Env = env
	asPostgres(f.t, cmd, f.dir)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	a := &autoctl{name: name, cmd: cmd, out: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = a.out, a.out
	if err := cmd.Start(); err != nil {
		f.t.Fatalf("pg_autoctl run %s: %v", name, err)
	}
	go func() { a.exited <- cmd.Wait() }()
	return a
}

// query runs fn on a fresh pool of one connection to rawURL, bounded by
// limit.
func query(rawURL string, limit time.Duration, fn func(ctx context.Context, db *bun.DB) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	db, err := database.Open(rawURL, database.Options{MaxOpenConns: 1, DialTimeout: limit, StatementTimeout: limit})
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(ctx, db)
}

// waitMonitor waits until the monitor's PostgreSQL answers.
func (f *Formation) waitMonitor() {
	f.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = query(f.mon, time.Second, func(ctx context.Context, db *bun.DB) error { return db.PingContext(ctx) }); err == nil {
			return
		}
		select {
		case e := <-f.monitor.exited:
			f.t.Fatalf("the monitor's pg_autoctl ended: %v\n%s", e, f.monitor.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	f.t.Fatalf("the monitor did not answer within 60 s: %v\n%s", err, f.monitor.out.String())
}

// tune sets FormationSettings on the monitor.
func (f *Formation) tune() {
	f.t.Helper()
	err := query(f.mon, 10*time.Second, func(ctx context.Context, db *bun.DB) error {
		for k, v := range FormationSettings {
			if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = %s", k, v)); err != nil {
				return err
			}
		}
		_, err := db.ExecContext(ctx, "SELECT pg_reload_conf()")
		return err
	})
	if err != nil {
		f.t.Fatalf("monitor settings: %v", err)
	}
}

// States is the monitor's view of the nodes: each node's name to its
// reported state where it equals its goal state, else
// "reported->goal".
func (f *Formation) States() (map[string]string, error) {
	states := map[string]string{}
	err := query(f.mon, 2*time.Second, func(ctx context.Context, db *bun.DB) error {
		rows, err := db.QueryContext(ctx, "SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, reported, goal string
			if err := rows.Scan(&name, &reported, &goal); err != nil {
				return err
			}
			if reported == goal {
				states[name] = reported
			} else {
				states[name] = reported + "->" + goal
			}
		}
		return rows.Err()
	})
	return states, err
}

// waitStates waits until the nodes' states, in node order, are want.
func (f *Formation) waitStates(limit time.Duration, want ...string) {
	f.t.Helper()
	deadline := time.Now().Add(limit)
	var states map[string]string
	var err error
	for time.Now().Before(deadline) {
		states, err = f.States()
		if err == nil && len(states) == len(want) {
			got := make([]string, 0, len(want))
			for i := range want {
				got = append(got, states[fmt.Sprintf("node%d", i+1)])
			}
			if strings.Join(got, ",") == strings.Join(want, ",") {
				return
			}
		}
		for _, a := range append([]*autoctl{f.monitor}, f.nodes...) {
			select {
			case e := <-a.exited:
				f.t.Fatalf("pg_autoctl of %s ended: %v\n%s", a.name, e, a.out.String())
			default:
			}
		}
		<-time.After(100 * time.Millisecond) // the next poll of the monitor's state
	}
	f.t.Fatalf("formation states %v (%v) after %s, want %v\n%s", states, err, limit, want, f.logs())
}

// NodeURL is the URL of node i (0 or 1) alone.
func (f *Formation) NodeURL(i int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", f.ports[i], FormationDatabase)
}

// Primary is the index of the node the monitor has as primary, or -1.
func (f *Formation) Primary() int {
	states, err := f.States()
	if err != nil {
		return -1
	}
	for i := range f.nodes {
		if states[fmt.Sprintf("node%d", i+1)] == "primary" {
			return i
		}
	}
	return -1
}

// KillNode kills node i as a crash would: SIGKILL to its pg_autoctl and
// the postgres it runs (their process group); the postmaster's children
// end on their own when they find it gone. The node stays down.
func (f *Formation) KillNode(i int) {
	f.t.Helper()
	a := f.nodes[i]
	a.killed = true
	if err := syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		f.t.Fatalf("kill node%d: %v", i+1, err)
	}
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		f.t.Fatalf("node%d's pg_autoctl outlived SIGKILL", i+1)
	}
}

// Writable reports whether node i takes a write now: a fresh connection
// with a one-second deadline commits a row into a table of its own.
func (f *Formation) Writable(i int) bool {
	err := query(f.NodeURL(i), time.Second, func(ctx context.Context, db *bun.DB) error {
		_, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS deskkit_formation_probe (at timestamptz); INSERT INTO deskkit_formation_probe VALUES (now())")
		return err
	})
	return err == nil
}

// logs is the tail of every pg_autoctl's output, for a failure.
func (f *Formation) logs() string {
	var b strings.Builder
	for _, a := range append([]*autoctl{f.monitor}, f.nodes...) {
		if a == nil {
			continue
		}
		out := a.out.String()
		if len(out) > 3000 {
			out = out[len(out)-3000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", a.name, out)
	}
	return b.String()
}

// stop stops the nodes, then the monitor: SIGINT (pg_autoctl stops its
// postgres with a fast shutdown), then SIGKILL to the group after 20 s.
func (f *Formation) stop() {
	for i, a := range append(append([]*autoctl{}, f.nodes...), f.monitor) {
		if a == nil {
			continue
		}
		if a.killed {
			f.removeSocket(f.ports[i], filepath.Join(f.dir, a.name))
			continue
		}
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-a.exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
			<-a.exited
		}
	}
}

// removeSocket removes the Unix socket and its lock file that a killed
// node's postgres left in /var/run/postgresql (a clean shutdown removes
// them), if the lock names that node's data directory.
func (f *Formation) removeSocket(port int, pgdata string) {
	sock := fmt.Sprintf("/var/run/postgresql/.s.PGSQL.%d", port)
	lock, err := os.ReadFile(sock + ".lock")
	if err != nil {
		return
	}
	if lines := strings.Split(string(lock), "\n"); len(lines) > 1 && lines[1] == pgdata {
		_ = os.Remove(sock)
		_ = os.Remove(sock + ".lock")
	}
}
