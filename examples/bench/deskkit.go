package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/trash"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	_ "modernc.org/sqlite" // the pure-Go "sqlite" driver, as the reference server's
)

// secretEnv passes the server secret (hex) from the bench to its deskkit
// replicas, which decrypt the channels with it.
const secretEnv = "DESKKIT_BENCH_SECRET"

// replicaConfig is the channel.Config every deskkit replica runs with: the
// one place to set the worker's knobs. The batch size, the per-channel
// in-flight cap and the tenant's share keep their defaults (Concurrency,
// 4, half of Concurrency), as a reference server runs them, unless
// -channel-in-flight and -tenant-concurrency set them; a channel without a
// rate limit of its own has none unless -channel-rate-limit sets one.
func replicaConfig(o replicaOptions) *channel.Config {
	return &channel.Config{
		Concurrency:           o.workers,
		MaxInFlightPerChannel: o.channelInFlight,
		TenantConcurrency:     o.tenantConcurrency,
		RateLimit:             o.rateLimit,
		Timeout:               o.timeout,
		AllowPrivateNetworks:  true, // the receiver is on loopback
		// Failed attempts (the hanging scenario's timeouts) are expected:
		// only errors reach stderr.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	}
}

// deskkitReplica is a replica process's channel.ChannelRegistry, running Run.
type deskkitReplica struct {
	db         *bun.DB
	reg        *channel.ChannelRegistry
	statements atomic.Int64
}

// newDeskkitReplica builds the registry a replica runs, over the scenario's
// database, with the event types the bench publishes registered.
func newDeskkitReplica(_ context.Context, o replicaOptions) (*deskkitReplica, error) {
	secret, err := hex.DecodeString(os.Getenv(secretEnv))
	if err != nil {
		return nil, fmt.Errorf("deskkit replica: read %s: %w", secretEnv, err)
	}
	r := &deskkitReplica{}
	if r.db, err = openDatabase(o.databaseURL, o.pool, &r.statements); err != nil {
		return nil, err
	}
	if r.reg, err = newRegistry(r.db, secret, replicaConfig(o)); err != nil {
		r.db.Close()
		return nil, err
	}
	return r, nil
}

func (r *deskkitReplica) run(ctx context.Context) error { return r.reg.Run(ctx) }

func (r *deskkitReplica) stats() replicaStats {
	return replicaStats{Statements: r.statements.Load()}
}

func (r *deskkitReplica) close() { r.db.Close() }

// newRegistry returns a registry over db that knows the trash's event types.
func newRegistry(db *bun.DB, secret []byte, cfg *channel.Config) (*channel.ChannelRegistry, error) {
	reg, err := channel.New(db, secret, nil, cfg)
	if err != nil {
		return nil, fmt.Errorf("channel.New: %w", err)
	}
	if err := reg.RegisterEventTypes(trash.EventTypes()...); err != nil {
		return nil, fmt.Errorf("register the trash's event types: %w", err)
	}
	return reg, nil
}

// sqliteScheme starts the URL of an SQLite file, as the reference
// server's -database-url takes it: "sqlite:PATH".
const sqliteScheme = "sqlite:"

// openDatabase opens the database at dsn, PostgreSQL (openBun) or an
// SQLite file (openSQLite), at most maxConns connections. Statements are
// counted on PostgreSQL only: the counting connector wraps pgdriver's.
func openDatabase(dsn string, maxConns int, statements *atomic.Int64) (*bun.DB, error) {
	if path, ok := strings.CutPrefix(dsn, sqliteScheme); ok {
		return openSQLite(path, maxConns)
	}
	return openBun(dsn, maxConns, statements), nil
}

// sqliteBusyTimeout is how long an SQLite writer queues for the lock: the
// reference server's (database.DefaultBusyTimeout).
const sqliteBusyTimeout = 10 * time.Second

// openSQLite opens (creating) the SQLite file at path with the settings
// deskkit's package documentation gives a host ("Storage") and the
// reference server uses: write-ahead log, so that readers never block the
// writer; IMMEDIATE transactions, so that two writers queue instead of one
// failing half-way; a busy timeout to queue on; foreign keys on. It pings
// once before the pool opens more connections: switching a new file to
// the write-ahead log takes a lock SQLite does not wait for.
func openSQLite(path string, maxConns int) (*bun.DB, error) {
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Set("_busy_timeout", fmt.Sprint(sqliteBusyTimeout.Milliseconds()))
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "1")
	sqldb, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err == nil {
		err = sqldb.Ping()
	}
	if err != nil {
		if sqldb != nil {
			sqldb.Close()
		}
		return nil, fmt.Errorf("open SQLite %s: %w", path, err)
	}
	sqldb.SetMaxOpenConns(maxConns)
	sqldb.SetMaxIdleConns(maxConns)
	return bun.NewDB(sqldb, sqlitedialect.New()), nil
}

// openBun opens PostgreSQL at dsn through bun's pgdriver, at most maxConns
// connections, counting in statements (if not nil) every statement sent.
func openBun(dsn string, maxConns int, statements *atomic.Int64) *bun.DB {
	var conn driver.Connector = pgdriver.NewConnector(pgdriver.WithDSN(dsn))
	if statements != nil {
		conn = countingConnector{conn.(*pgdriver.Connector), statements}
	}
	sqldb := sql.OpenDB(conn)
	sqldb.SetMaxOpenConns(maxConns)
	sqldb.SetMaxIdleConns(maxConns)
	return bun.NewDB(sqldb, pgdialect.New())
}

// countingConnector counts the statements sent on its connections: every
// Exec and Query (of the connection, or of a prepared statement), every
// BEGIN, COMMIT and ROLLBACK, and every Prepare. It embeds pgdriver's
// connector, so that Driver is still pgdriver's and the registry still
// LISTENs (on a connection of its own, outside the pool, not counted).
type countingConnector struct {
	*pgdriver.Connector
	n *atomic.Int64
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{cn.(*pgdriver.Conn), c.n}, nil
}

// countingConn is a pgdriver connection that counts statements. It
// implements what *pgdriver.Conn implements, each method passed on.
type countingConn struct {
	cn *pgdriver.Conn
	n  *atomic.Int64
}

var (
	_ driver.ConnBeginTx        = (*countingConn)(nil)
	_ driver.ConnPrepareContext = (*countingConn)(nil)
	_ driver.ExecerContext      = (*countingConn)(nil)
	_ driver.QueryerContext     = (*countingConn)(nil)
	_ driver.Pinger             = (*countingConn)(nil)
	_ driver.SessionResetter    = (*countingConn)(nil)
	_ driver.Validator          = (*countingConn)(nil)
)

func (c *countingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.n.Add(1)
	st, err := c.cn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &countingStmt{st, c.n}, nil
}

func (c *countingConn) Close() error { return c.cn.Close() }

func (c *countingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.n.Add(1)
	tx, err := c.cn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return countingTx{tx, c.n}, nil
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.n.Add(1)
	return c.cn.ExecContext(ctx, query, args)
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.Add(1)
	return c.cn.QueryContext(ctx, query, args)
}

func (c *countingConn) Ping(ctx context.Context) error {
	c.n.Add(1)
	return c.cn.Ping(ctx)
}

func (c *countingConn) ResetSession(ctx context.Context) error { return c.cn.ResetSession(ctx) }

func (c *countingConn) IsValid() bool { return c.cn.IsValid() }

// countingTx counts the COMMIT or ROLLBACK that ends it.
type countingTx struct {
	tx driver.Tx
	n  *atomic.Int64
}

func (t countingTx) Commit() error {
	t.n.Add(1)
	return t.tx.Commit()
}

func (t countingTx) Rollback() error {
	t.n.Add(1)
	return t.tx.Rollback()
}

// countingStmt counts the executions of a prepared statement.
type countingStmt struct {
	st driver.Stmt
	n  *atomic.Int64
}

var (
	_ driver.StmtExecContext  = (*countingStmt)(nil)
	_ driver.StmtQueryContext = (*countingStmt)(nil)
)

func (s *countingStmt) Close() error  { return s.st.Close() }
func (s *countingStmt) NumInput() int { return s.st.NumInput() }

func (s *countingStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *countingStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

// named returns args as the positional driver.NamedValues they are.
func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.n.Add(1)
	return s.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.n.Add(1)
	return s.st.(driver.StmtQueryContext).QueryContext(ctx, args)
}

// deskkitHost is the bench's side of deskkit in one scenario's database: a
// registry that adds channels and publishes (it never runs Run; the
// replicas do), over the publishers' pool.
type deskkitHost struct {
	db  *bun.DB
	reg *channel.ChannelRegistry
}

// publisherConns bounds the bench's own pool in a scenario's database.
const publisherConns = 5

// latencyPublishers is the bench's pool, and its publishing goroutines,
// in the latency scenario: one event per transaction at 1,000/s needs
// several commits in flight (one replica runs beside it, so the server's
// connections suffice).
const latencyPublishers = 16

// newDeskkitHost migrates the scenario's database and builds the registry,
// over a pool of conns connections.
func newDeskkitHost(ctx context.Context, dsn string, secret []byte, conns int) (*deskkitHost, error) {
	db, err := openDatabase(dsn, conns, nil)
	if err != nil {
		return nil, err
	}
	if err := channel.Migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("channel.Migrate: %w", err)
	}
	reg, err := newRegistry(db, secret, &channel.Config{AllowPrivateNetworks: true})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &deskkitHost{db: db, reg: reg}, nil
}

func (h *deskkitHost) close() { h.db.Close() }

// backendPIDs opens n connections of the host's pool at once and returns
// their PostgreSQL backends' pids. The pool keeps them (as many idle as
// open), and opens no other while it has n at most, so that these are the
// host's backends for as long as it runs.
func (h *deskkitHost) backendPIDs(ctx context.Context, n int) ([]int, error) {
	var conns []*sql.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	pids := make([]int, 0, n)
	for range n {
		c, err := h.db.DB.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("open the host's connections: %w", err)
		}
		conns = append(conns, c)
		var pid int
		if err := c.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			return nil, fmt.Errorf("read a backend's pid: %w", err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// chanRef is a channel the bench added.
type chanRef struct {
	tenant int64
	id     int64
	path   string
}

// admin is the principal the bench acts as in tenant: an admin.
func admin(tenant int64) deskkit.Principal {
	return deskkit.Principal{UserID: 1, TenantID: tenant, Admin: true}
}

// addChannels adds n webhooks to tenant, subscribed to task.trashed, whose
// URLs are the receiver's paths under prefix (hookPath or hangPath).
func (h *deskkitHost) addChannels(ctx context.Context, base, prefix string, tenant int64, n int) ([]chanRef, error) {
	var out []chanRef
	for c := range n {
		path := channelPath(prefix, tenant, c)
		added, err := h.reg.Add(ctx, admin(tenant), channel.Input{
			Type:    string(channel.Webhook),
			Name:    fmt.Sprintf("bench %d", c+1),
			Address: base + path,
			Events:  []string{trash.EventTaskTrashed},
		})
		if err != nil {
			return nil, fmt.Errorf("add channel %s: %w", path, err)
		}
		out = append(out, chanRef{tenant: tenant, id: added.ID, path: path})
	}
	return out, nil
}

// addLayout adds the channels of a backlog's layout.
func (h *deskkitHost) addLayout(ctx context.Context, base string, l layout) ([]chanRef, error) {
	var out []chanRef
	for t := range l.tenants {
		refs, err := h.addChannels(ctx, base, hookPath, l.firstTenant+int64(t), l.channels)
		if err != nil {
			return nil, err
		}
		out = append(out, refs...)
	}
	return out, nil
}

// fillEventsPerTx is how many events one transaction of the fill publishes.
const fillEventsPerTx = 100

// fill publishes each tenant's events of the layout (each delivered to
// every channel of its tenant), many per transaction, from a few
// goroutines.
func (h *deskkitHost) fill(ctx context.Context, l layout) error {
	type batch struct {
		tenant   int64
		from, to int
	}
	batches := make(chan batch)
	go func() {
		defer close(batches)
		for t := range l.tenants {
			for from := 0; from < l.events; from += fillEventsPerTx {
				select {
				case batches <- batch{l.firstTenant + int64(t), from, min(from+fillEventsPerTx, l.events)}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, publisherConns-1)
	for g := range errs {
		wg.Go(func() {
			for b := range batches {
				if errs[g] != nil {
					continue
				}
				errs[g] = h.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
					for i := b.from; i < b.to; i++ {
						if err := h.reg.Publish(ctx, tx, b.tenant, trashedEvent(b.tenant, i)); err != nil {
							return err
						}
					}
					return nil
				})
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fill the backlog: %w", err)
	}
	return nil
}

// publishOne publishes ev in a transaction of its own and returns when the
// commit returned.
func (h *deskkitHost) publishOne(ctx context.Context, tenant int64, ev deskkit.Event) (time.Time, error) {
	err := h.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return h.reg.Publish(ctx, tx, tenant, ev)
	})
	return time.Now(), err
}

// waitNoPending waits until none of the channels has a PENDING delivery
// left (outcomes recorded), asking each channel until it has none: no
// delivery is published meanwhile, so a channel with none stays so.
func (h *deskkitHost) waitNoPending(ctx context.Context, chans []chanRef) error {
	left := chans
	return waitFor(ctx, func() (bool, error) {
		for len(left) > 0 {
			c := left[0]
			page, err := h.reg.Deliveries(ctx, admin(c.tenant), c.id, channel.DeliveryFilter{Status: channel.DeliveryPending}, 1, 1)
			if err != nil {
				return false, fmt.Errorf("count pending deliveries: %w", err)
			}
			if page.Total > 0 {
				return false, nil
			}
			left = left[1:]
		}
		return true, nil
	})
}

// claims counts, over the channels' deliveries, the deliveries and the
// attempts made (each claim of a row is an attempt), and the deliveries
// that did not succeed.
func (h *deskkitHost) claims(ctx context.Context, chans []chanRef) (deliveries, attempts, unsucceeded int, err error) {
	for _, c := range chans {
		for pageNo := 1; ; pageNo++ {
			page, err := h.reg.Deliveries(ctx, admin(c.tenant), c.id, channel.DeliveryFilter{}, pageNo, channel.MaxPageSize)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("list deliveries: %w", err)
			}
			for _, d := range page.List {
				deliveries++
				attempts += d.Attempts
				if d.Status != channel.DeliverySucceeded {
					unsucceeded++
				}
			}
			if len(page.List) < channel.MaxPageSize {
				break
			}
		}
	}
	return deliveries, attempts, unsucceeded, nil
}
