package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

// A cluster is a private PostgreSQL server the bench starts for one
// scenario, in a temporary directory, on a free loopback port, with
// PostgreSQL's defaults (autovacuum on, at its default thresholds): the
// shared server may run with other settings (this machine's runs without
// autovacuum), and other work on it would blur the tables' statistics. It
// is stopped and its directory removed when the scenario ends.
type cluster struct {
	dir   string // the temporary directory: data, socket, log
	port  int
	cmd   *exec.Cmd // the postmaster
	admin *sql.DB   // the cluster's postgres database
}

// clusterWait bounds initdb and the server's start.
const clusterWait = 2 * time.Minute

// postgresBin finds PostgreSQL's programs: the newest
// /usr/lib/postgresql/*/bin (Debian's layout), or the directory of the
// initdb on PATH.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL programs (initdb, postgres) under /usr/lib/postgresql/*/bin or on PATH")
}

// asPostgres makes cmd run as the postgres OS user when the bench runs as
// root: PostgreSQL refuses to run as root.
func asPostgres(cmd *exec.Cmd, cred *syscall.Credential) {
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
}

// postgresCredential is the postgres user's, if the bench runs as root.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs the postgres user: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("postgres user: uid %q, gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort returns a loopback TCP port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startCluster runs initdb in a new temporary directory and starts the
// server there, named name (its processes' titles say it), with
// PostgreSQL's defaults but for settings ("autovacuum=off").
func startCluster(ctx context.Context, name string, settings ...string) (_ *cluster, err error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "deskkit-bench-pg-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, clusterWait)
	defer cancel()
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-sync")
	initdb.Dir = dir
	asPostgres(initdb, cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	if c.port, err = freePort(); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	// PostgreSQL's defaults, but where it listens and settings;
	// autovacuum is on at its default thresholds unless they say.
	args := []string{"-D", data, "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir,
		"-c", "cluster_name=" + name}
	for _, kv := range settings {
		args = append(args, "-c", kv)
	}
	c.cmd = exec.Command(filepath.Join(bin, "postgres"), args...)
	c.cmd.Dir = dir
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	asPostgres(c.cmd, cred)
	if c.cmd.SysProcAttr == nil {
		c.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// The server stops (a fast shutdown) with the bench, whatever stops it.
	c.cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	c.admin = sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(c.url("postgres"))))
	c.admin.SetMaxOpenConns(2)
	err = waitFor(ctx, func() (bool, error) { return c.admin.PingContext(ctx) == nil, nil })
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		return nil, fmt.Errorf("wait for the private PostgreSQL: %w: %s", err, log)
	}
	return c, nil
}

// url is the DSN of database on the cluster.
func (c *cluster) url(database string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: fmt.Sprintf("127.0.0.1:%d", c.port),
		Path: "/" + database, RawQuery: "sslmode=disable"}
	return u.String()
}

// cpu returns, by pid, the CPU time of the cluster's processes: the
// postmaster and its children (backends, autovacuum, checkpointer, ...).
func (c *cluster) cpu() map[int]time.Duration {
	out := map[int]time.Duration{}
	if c.cmd == nil || c.cmd.Process == nil {
		return out
	}
	root := c.cmd.Process.Pid
	if t, err := procCPU(root); err == nil {
		out[root] = t
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || parentOf(pid) != root {
			continue
		}
		if t, err := procCPU(pid); err == nil {
			out[pid] = t
		}
	}
	return out
}

// parentOf returns the parent of process pid, from /proc/<pid>/stat (0 if
// it cannot be read).
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// stop shuts the server down (fast: its sessions are ended) and removes
// its directory.
func (c *cluster) stop() {
	if c.admin != nil {
		c.admin.Close()
	}
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- c.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = c.cmd.Process.Kill()
			<-done
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		fmt.Fprintf(os.Stderr, "bench: remove %s: %v\n", c.dir, err)
	}
}
