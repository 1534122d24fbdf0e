package database

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

// ErrNoPrimary is what connecting answers when every host of a URL with
// target_session_attrs=read-write answered, but as a standby
// (pg_is_in_recovery() is true): a failover is under way, or the
// formation has lost its primary. It counts as Unavailable (503 with
// Retry-After) and ConnLost, as an unreachable server does.
var ErrNoPrimary = errors.New("database: no host is a primary: each one answered as a standby (pg_is_in_recovery)")

// pgTarget is a PostgreSQL URL taken apart for OpenPostgres: its hosts,
// the session it wants, and the one-host URL that pgdriver is given.
type pgTarget struct {
	// addrs are the hosts to try, in order, as host:port.
	addrs []string
	// readWrite is target_session_attrs=read-write: a host must answer
	// pg_is_in_recovery() = false.
	readWrite bool
	// dsn is the URL with the first host only and without
	// target_session_attrs, which pgdriver would send as a SET (and
	// PostgreSQL refuse with 42704).
	dsn string
}

// multi reports whether t needs the multi-host dialer: several hosts, or
// a read-write session to check.
func (t pgTarget) multi() bool { return len(t.addrs) > 1 || t.readWrite }

// parsePostgres takes apart a postgres:// or postgresql:// URL, whose
// host part may list several hosts, each with its port or none (5432):
// postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write, as
// libpq takes it. IPv6 hosts are written in brackets ([::1]:5432). The
// query's target_session_attrs is "any" (the default: the first host that
// answers) or "read-write" (the first that is not a standby); another
// value, a host= parameter naming several hosts, or sslmode=verify-full
// with several hosts (pgdriver checks one server name) is refused with an
// error naming the parameter.
func parsePostgres(raw string) (pgTarget, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "postgres" && scheme != "postgresql") {
		return pgTarget{}, fmt.Errorf("database URL must start with postgres:// or postgresql://, got %q", redact(raw))
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo, hosts := "", authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo, hosts = authority[:at+1], authority[at+1:]
	}
	var t pgTarget
	if hosts != "" {
		for _, h := range strings.Split(hosts, ",") {
			addr, err := hostPort(h)
			if err != nil {
				return pgTarget{}, fmt.Errorf("database URL: host %q: %w", h, err)
			}
			t.addrs = append(t.addrs, addr)
		}
	}
	first := ""
	if len(t.addrs) > 0 {
		first = t.addrs[0]
	}
	u, err := url.Parse(scheme + "://" + userinfo + first + tail)
	if err != nil {
		return pgTarget{}, fmt.Errorf("database URL: %w", errors.Unwrap(err))
	}
	q := u.Query()
	if h := q.Get("host"); strings.Contains(h, ",") {
		return pgTarget{}, errors.New("database URL: host parameter: one host only; list several in the URL's host part (postgres://u@h1:5432,h2:5433/db)")
	}
	if q.Has("host") && len(t.addrs) > 1 {
		return pgTarget{}, errors.New("database URL: host parameter: not with several hosts in the URL's host part")
	}
	switch tsa := q.Get("target_session_attrs"); tsa {
	case "", "any":
	case "read-write":
		t.readWrite = true
	default:
		return pgTarget{}, fmt.Errorf("database URL: target_session_attrs: %q is not supported; use read-write (a primary) or any", tsa)
	}
	if t.readWrite && (len(t.addrs) == 0 || q.Has("host")) {
		return pgTarget{}, errors.New("database URL: target_session_attrs: read-write needs the hosts in the URL's host part (postgres://u@h1:5432,h2:5433/db), not in a host parameter")
	}
	if len(t.addrs) > 1 && q.Get("sslmode") == "verify-full" {
		return pgTarget{}, errors.New("database URL: sslmode: verify-full checks one server name, and the URL lists several hosts; use verify-ca")
	}
	q.Del("target_session_attrs")
	u.RawQuery = q.Encode()
	t.dsn = u.String()
	return t, nil
}

// hostPort is h (host, host:port, [v6] or [v6]:port) as host:port.
func hostPort(h string) (string, error) {
	host, port := h, "5432"
	switch {
	case h == "":
		return "", errors.New("empty host")
	case strings.HasPrefix(h, "["):
		end := strings.Index(h, "]")
		if end < 0 {
			return "", errors.New("missing ] after an IPv6 address")
		}
		host = h[1:end]
		switch after := h[end+1:]; {
		case after == "":
		case strings.HasPrefix(after, ":"):
			port = after[1:]
		default:
			return "", errors.New("only :port may follow ]")
		}
	case strings.Contains(h, ":"):
		host, port, _ = strings.Cut(h, ":")
		if strings.Contains(port, ":") {
			return "", errors.New("write an IPv6 address in brackets: [::1]:5432")
		}
	}
	if !hostChars(host, strings.HasPrefix(h, "[")) {
		return "", errors.New("not a host name or address (letters, digits, '.', '-' and '_'; an IPv6 address in brackets)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
		return "", fmt.Errorf("port %q: must be a number from 1 to 65535", port)
	}
	return net.JoinHostPort(host, port), nil
}

// hostChars reports whether host is made of a host name's characters, or
// with v6 an IPv6 address's (zone names are not supported).
func hostChars(host string, v6 bool) bool {
	if host == "" {
		return false
	}
	for _, r := range host {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'f', r >= 'A' && r <= 'F', r == '.':
		case v6 && r == ':':
		case !v6 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_'):
		default:
			return false
		}
	}
	return true
}

// keywordDSN reports whether raw is libpq's keyword/value form
// ("host=h1,h2 port=5432,5433 dbname=test") rather than a URL.
func keywordDSN(raw string) bool {
	key, _, ok := strings.Cut(raw, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return false
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r == '_') {
			return false
		}
	}
	return true
}

// keywordURL turns libpq's keyword/value form into the URL form that
// parsePostgres takes: host and port (comma-separated lists, one port for
// every host or one for all), dbname, user and password go to their
// places, every other keyword to the query. Values may be single-quoted,
// with \' and \\ inside.
func keywordURL(raw string) (string, error) {
	kv := map[string]string{}
	var order []string
	s := strings.TrimSpace(raw)
	for s != "" {
		key, rest, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" || strings.ContainsAny(key, " '\\") {
			return "", fmt.Errorf("database connection string: %q is not keyword=value", s)
		}
		rest = strings.TrimLeft(rest, " ")
		var val strings.Builder
		if strings.HasPrefix(rest, "'") {
			i, closed := 1, false
			for i < len(rest) {
				c := rest[i]
				if c == '\\' && i+1 < len(rest) {
					val.WriteByte(rest[i+1])
					i += 2
					continue
				}
				i++
				if c == '\'' {
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return "", fmt.Errorf("database connection string: %s: unterminated quoted value", key)
			}
			rest = rest[i:]
		} else {
			end := strings.IndexByte(rest, ' ')
			if end < 0 {
				end = len(rest)
			}
			val.WriteString(rest[:end])
			rest = rest[end:]
		}
		if _, dup := kv[key]; dup {
			return "", fmt.Errorf("database connection string: %s: given twice", key)
		}
		kv[key] = val.String()
		order = append(order, key)
		s = strings.TrimSpace(rest)
	}
	var hosts []string
	if h := kv["host"]; h != "" {
		hosts = strings.Split(h, ",")
	}
	var ports []string
	if p := kv["port"]; p != "" {
		ports = strings.Split(p, ",")
	}
	switch {
	case len(ports) > 1 && len(ports) != len(hosts):
		return "", fmt.Errorf("database connection string: port: %d ports for %d hosts; give one for each host, or one for all", len(ports), len(hosts))
	case len(ports) > 0 && len(hosts) == 0:
		hosts = []string{"localhost"}
	}
	for i, h := range hosts {
		if h == "" || strings.HasPrefix(h, "/") {
			return "", errors.New("database connection string: host: each host must be a name or an address (Unix sockets are not supported)")
		}
		if strings.Contains(h, ":") {
			h = "[" + h + "]"
		}
		switch {
		case len(ports) == 1:
			h += ":" + ports[0]
		case len(ports) > 1:
			h += ":" + ports[i]
		}
		hosts[i] = h
	}
	u := url.URL{Scheme: "postgres", Host: "HOSTS"}
	if user, ok := kv["user"]; ok {
		if pw, ok := kv["password"]; ok {
			u.User = url.UserPassword(user, pw)
		} else {
			u.User = url.User(user)
		}
	}
	if db := kv["dbname"]; db != "" {
		u.Path = "/" + db
	}
	q := url.Values{}
	for _, k := range order {
		switch k {
		case "host", "port", "user", "password", "dbname":
		default:
			q.Set(k, kv[k])
		}
	}
	u.RawQuery = q.Encode()
	return strings.Replace(u.String(), "HOSTS", strings.Join(hosts, ","), 1), nil
}

// hostDialer is the dialer of the pgdriver connector of a URL with
// several hosts or target_session_attrs=read-write: it tries the hosts in
// order, from the last one that served, and dials the first that answers
// (with read-write, whose probe session finds pg_is_in_recovery() false).
// pgdriver then speaks PostgreSQL over the connection it returns, as it
// would over its own dial, so that the pool, a pool opened with
// TransactionPooling and outbox.Listen's listener all follow a failover:
// each new connection goes to the primary of the moment.
//
// The probe is a session of its own, closed before the dial: a host
// demoted in between serves the connection as a standby, whose first
// write fails with 25006, on which guardConn drops it.
type hostDialer struct {
	addrs     []string
	readWrite bool
	probes    []*pgdriver.Connector // one per host, with readWrite
	timeout   time.Duration
	last      atomic.Int32 // index in addrs of the host that served last
}

func newHostDialer(t pgTarget, o Options) *hostDialer {
	d := &hostDialer{addrs: t.addrs, readWrite: t.readWrite, timeout: o.DialTimeout}
	if t.readWrite {
		for _, a := range t.addrs {
			d.probes = append(d.probes, pgdriver.NewConnector(pgdriver.WithDSN(t.dsn), pgdriver.WithAddr(a),
				pgdriver.WithDialTimeout(o.DialTimeout), pgdriver.WithReadTimeout(o.DialTimeout), pgdriver.WithConnParams(nil)))
		}
	}
	return d
}

func (d *hostDialer) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	start := int(d.last.Load())
	var errs []error
	for i := range d.addrs {
		k := (start + i) % len(d.addrs)
		if d.readWrite {
			if err := d.primary(ctx, k); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", d.addrs[k], err))
				continue
			}
		}
		nd := net.Dialer{Timeout: d.timeout, KeepAlive: 5 * time.Minute}
		c, err := nd.DialContext(ctx, network, d.addrs[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.last.Store(int32(k))
		return c, nil
	}
	return nil, errors.Join(errs...)
}

// primary opens a probe session on host k and reports nil if it is not
// in recovery, ErrNoPrimary if it is, or the error that kept it from
// answering.
func (d *hostDialer) primary(ctx context.Context, k int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*d.timeout)
	defer cancel()
	cn, err := d.probes[k].Connect(ctx)
	if err != nil {
		return err
	}
	defer cn.Close()
	rows, err := cn.(driver.QueryerContext).QueryContext(ctx, "SELECT pg_is_in_recovery()", nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	dest := make([]driver.Value, 1)
	if err := rows.Next(dest); err != nil {
		return err
	}
	if standby, _ := dest[0].(bool); standby {
		return ErrNoPrimary
	}
	return nil
}

// guardConnector wraps every connection of a PostgreSQL pool in a
// guardConn. Its Driver is the inner connector's, pgdriver's, so that
// outbox.Listen still finds a pgdriver pool and its connector.
type guardConnector struct{ inner driver.Connector }

func (c guardConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &guardConn{pgConn: cn.(pgConn)}, nil
}

func (c guardConnector) Driver() driver.Driver { return c.inner.Driver() }

// pgConn is what *pgdriver.Conn and pooledConn implement and guardConn
// passes on.
type pgConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// guardConn drops a connection whose server has become read-only: a
// statement that fails with SQLSTATE 25006 (read_only_sql_transaction: a
// write reached a standby, such as a primary demoted by a failover)
// marks it, and database/sql closes it when it comes back to the pool
// (IsValid, ResetSession) instead of handing it out again. pgdriver
// itself drops a connection on FATAL, 25P02 and 57014 only.
//
// The error is returned as a ReadOnlyError, which also matches
// driver.ErrBadConn: a statement run outside a transaction is then tried
// again by database/sql on another connection (safe: the server refused
// it, and its implicit transaction was rolled back), and a transaction's
// error counts as ConnLost and Unavailable (the API answers 503 with
// Retry-After), as the statement changed nothing.
type guardConn struct {
	pgConn
	readOnly atomic.Bool
}

var (
	_ pgConn      = (*guardConn)(nil)
	_ pgConn      = (*pooledConn)(nil)
	_ pgConn      = (*pgdriver.Conn)(nil)
	_ driver.Stmt = guardStmt{}
)

// ReadOnlyError is the error of a statement that a read-only server
// refused (SQLSTATE 25006): the connection it ran on has been dropped.
// It unwraps to the driver's error and to driver.ErrBadConn.
type ReadOnlyError struct{ Err error }

func (e *ReadOnlyError) Error() string {
	return e.Err.Error() + " (the server is read-only, as a demoted primary is: the connection is dropped)"
}

func (e *ReadOnlyError) Unwrap() []error { return []error{e.Err, driver.ErrBadConn} }

func (cn *guardConn) check(err error) error {
	if err == nil || SQLSTATE(err) != "25006" {
		return err
	}
	cn.readOnly.Store(true)
	return &ReadOnlyError{Err: err}
}

func (cn *guardConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if cn.readOnly.Load() {
		return nil, driver.ErrBadConn
	}
	res, err := cn.pgConn.ExecContext(ctx, query, args)
	return res, cn.check(err)
}

func (cn *guardConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if cn.readOnly.Load() {
		return nil, driver.ErrBadConn
	}
	rows, err := cn.pgConn.QueryContext(ctx, query, args)
	return rows, cn.check(err)
}

func (cn *guardConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := cn.pgConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, cn.check(err)
	}
	return guardStmt{Stmt: st, cn: cn}, nil
}

func (cn *guardConn) Prepare(query string) (driver.Stmt, error) {
	return cn.PrepareContext(context.Background(), query)
}

func (cn *guardConn) IsValid() bool { return !cn.readOnly.Load() && cn.pgConn.IsValid() }

func (cn *guardConn) ResetSession(ctx context.Context) error {
	if cn.readOnly.Load() {
		return driver.ErrBadConn
	}
	return cn.pgConn.ResetSession(ctx)
}

// guardStmt is a prepared statement of a guardConn.
type guardStmt struct {
	driver.Stmt
	cn *guardConn
}

func (s guardStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	return res, s.cn.check(err)
}

func (s guardStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	return rows, s.cn.check(err)
}
