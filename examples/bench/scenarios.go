package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// drainResult is one timed drain of a backlog.
type drainResult struct {
	Replicas        int     `json:"replicas"`
	Cost            cost    `json:"cost"`
	BytesPerRequest float64 `json:"bytes_per_request"` // body bytes per POST (0: no POST)
	// deskkit only: the backlog's deliveries, the attempts made (each
	// claim of a row is one), and the deliveries not SUCCEEDED after the
	// drain (none, with a receiver answering 204).
	Deliveries  int `json:"deliveries,omitempty"`
	Attempts    int `json:"attempts,omitempty"`
	Unsucceeded int `json:"unsucceeded,omitempty"`
}

// conflicts is the share of claims that claimed a row again (a lease
// lost, or a row claimed twice): (attempts - deliveries) / deliveries.
func (d *drainResult) conflicts() float64 {
	return float64(d.Attempts-d.Deliveries) / float64(d.Deliveries)
}

// plainResult is one run of the plain client.
type plainResult struct {
	Concurrency     int           `json:"concurrency"`
	Items           int           `json:"items"`
	Elapsed         time.Duration `json:"elapsed_ns"`
	BytesPerRequest float64       `json:"bytes_per_request"`
}

func (p *plainResult) perSecond() float64 { return float64(p.Items) / p.Elapsed.Seconds() }

// latencyResult is commit-to-first-attempt at one publishing rate.
type latencyResult struct {
	Rate     int       `json:"rate"`     // events/s asked for
	Achieved float64   `json:"achieved"` // events/s the publisher committed
	Latency  latencies `json:"latency"`
}

// fairResult is tenant B's commit-to-first-attempt while tenant A holds
// the workers.
type fairResult struct {
	ADeliveries int           `json:"a_deliveries"`
	ADrain      time.Duration `json:"a_drain_ns"` // backlog scenario: A's drain time
	B           latencies     `json:"b"`
}

// scenarioTimeout bounds one scenario, so that a drain that never ends
// fails the run instead of hanging it.
const scenarioTimeout = 15 * time.Minute

// arrivalWait bounds the wait for the last published events to arrive,
// after publishing stopped.
const arrivalWait = time.Minute

// meter measures the cost of one drain: it snapshots the replicas'
// counters and CPU, PostgreSQL's CPU and pg_stat_wal, starts the replicas'
// workers, and takes the differences when the drain is over.
type meter struct {
	set   replicaSet
	pg    func() map[int]time.Duration // CPU of the PostgreSQL processes that count, by pid
	admin *sql.DB
	// server, if not nil, is the CPU of those of pg's processes that are
	// the server's own (postmaster, WAL writer, ...), by pid.
	server  func() map[int]time.Duration
	st0     replicaStats
	cpu0    time.Duration
	pg0     map[int]time.Duration
	server0 map[int]time.Duration
	wal0    int64
	t0      time.Time
}

// startMeter takes the first snapshot and starts the replicas' workers.
// PostgreSQL's CPU is its processes' that serve db (postgresCPU).
func startMeter(ctx context.Context, admin *sql.DB, db string, set replicaSet) (*meter, error) {
	m, err := meterFrom(ctx, admin, func() map[int]time.Duration { return postgresCPU(db) }, serverCPU, set)
	if err != nil {
		return nil, err
	}
	return m, set.start()
}

// startMeterOf is startMeter with PostgreSQL's CPU read by pg, and
// pg_stat_wal through admin (nil: no WAL flushes, as on SQLite).
func startMeterOf(ctx context.Context, admin *sql.DB, pg func() map[int]time.Duration, set replicaSet) (*meter, error) {
	m, err := meterFrom(ctx, admin, pg, nil, set)
	if err != nil {
		return nil, err
	}
	return m, set.start()
}

// meterFrom takes the first snapshot of replicas that may be working
// already (the steady scenario's, warmed up); server, if not nil, tells
// the server's own processes among pg's.
func meterFrom(ctx context.Context, admin *sql.DB, pg, server func() map[int]time.Duration, set replicaSet) (*meter, error) {
	m := &meter{set: set, pg: pg, server: server, admin: admin}
	var err error
	if m.st0, err = set.stats(ctx); err != nil {
		return nil, err
	}
	if m.cpu0, err = set.cpu(); err != nil {
		return nil, err
	}
	if m.wal0, err = m.walSyncs(ctx); err != nil {
		return nil, err
	}
	m.pg0 = m.pg()
	if m.server != nil {
		m.server0 = m.server()
	}
	m.t0 = time.Now()
	return m, nil
}

// walSyncs reads pg_stat_wal, if the meter has PostgreSQL.
func (m *meter) walSyncs(ctx context.Context) (int64, error) {
	if m.admin == nil {
		return 0, nil
	}
	return walSyncs(ctx, m.admin)
}

// noPostgres is the PostgreSQL CPU of a scenario without it (SQLite's).
func noPostgres() map[int]time.Duration { return nil }

// finish returns what the drain of items used since startMeter.
func (m *meter) finish(ctx context.Context, items int) (cost, error) {
	c := cost{Items: items, Elapsed: time.Since(m.t0)}
	pg1 := m.pg()
	if m.server != nil {
		c.PGServerCPU = postgresCPUDelta(m.server0, m.server())
	}
	cpu1, err := m.set.cpu()
	if err != nil {
		return c, err
	}
	st1, err := m.set.stats(ctx)
	if err != nil {
		return c, err
	}
	wal1, err := m.walSyncs(ctx)
	if err != nil {
		return c, err
	}
	c.ReplicaCPU = cpu1 - m.cpu0
	c.PGCPU = postgresCPUDelta(m.pg0, pg1)
	c.Statements = st1.Statements - m.st0.Statements
	c.WALSyncs = wal1 - m.wal0
	return c, nil
}

// replicaOpts returns the options of replicas of kind over dsn.
func (b *bench) replicaOpts(kind, dsn string) replicaOptions {
	workers := b.opts.workers
	if kind == kindDeskkit && b.opts.deskkitWorkers > 0 {
		workers = b.opts.deskkitWorkers
	}
	return replicaOptions{kind: kind, databaseURL: dsn, workers: workers, pool: b.opts.pool,
		timeout: b.opts.timeout, fetchCooldown: b.opts.riverFetchCooldown,
		channelInFlight: b.opts.channelInFlight, tenantConcurrency: b.opts.tenantConcurrency,
		rateLimit: b.opts.channelRateLimit}
}

// stopGrace is how long a stopping replica may take: its attempts in
// flight end within the attempt timeout.
func (b *bench) stopGrace() time.Duration { return b.opts.timeout + 10*time.Second }

// deskkitDrain fills a backlog through Publish, then times its drain by
// replicas deskkit replicas, until every delivery arrived and none is
// PENDING.
func (b *bench) deskkitDrain(ctx context.Context, replicas int) (*drainResult, error) {
	return b.drainFresh(ctx, replicas, func(ctx context.Context, dsn string) (replicaSet, error) {
		return startReplicas(ctx, replicas, b.replicaOpts(kindDeskkit, dsn), b.env())
	})
}

// drainFresh fills the backlog into a new database of the scenario and
// times its drain by replicas deskkit processes that launch starts over
// it, measured as a drain on PostgreSQL is (startMeter).
func (b *bench) drainFresh(ctx context.Context, replicas int, launch func(ctx context.Context, dsn string) (replicaSet, error)) (*drainResult, error) {
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	dsn, drop, err := b.newDatabase(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()
	return b.drainWith(ctx, dsn, replicas, func() (replicaSet, error) { return launch(ctx, dsn) },
		func(set replicaSet) (*meter, error) { return startMeter(ctx, b.admin, databaseName(dsn), set) })
}

// sqliteDrain is deskkitDrain's backlog drained by one replica from an
// SQLite file in a new temporary directory, removed afterwards. SQLite
// runs inside the replica, so its CPU is the replica's; no statements
// are counted, no WAL flushes read.
func (b *bench) sqliteDrain(ctx context.Context) (*drainResult, error) {
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "deskkit-bench-sqlite-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	dsn := sqliteScheme + filepath.Join(dir, "bench.db")
	return b.drainOn(ctx, dsn, 1, func(set replicaSet) (*meter, error) {
		return startMeterOf(ctx, nil, noPostgres, set)
	})
}

// drainOn fills the backlog into the database at dsn through Publish,
// then times its drain by replicas deskkit replicas, started and measured
// by start, until every delivery arrived and none is PENDING.
func (b *bench) drainOn(ctx context.Context, dsn string, replicas int, start func(replicaSet) (*meter, error)) (*drainResult, error) {
	return b.drainWith(ctx, dsn, replicas, func() (replicaSet, error) {
		return startReplicas(ctx, replicas, b.replicaOpts(kindDeskkit, dsn), b.env())
	}, start)
}

// drainWith is drainOn with the replicas (replicas of them) started by
// launch once the backlog is in.
func (b *bench) drainWith(ctx context.Context, dsn string, replicas int, launch func() (replicaSet, error), start func(replicaSet) (*meter, error)) (*drainResult, error) {
	host, err := newDeskkitHost(ctx, dsn, b.secret, publisherConns)
	if err != nil {
		return nil, err
	}
	defer host.close()
	l := b.opts.backlog
	chans, err := host.addLayout(ctx, b.rcv.base, l)
	if err != nil {
		return nil, err
	}
	if err := host.fill(ctx, l); err != nil {
		return nil, err
	}
	b.rcv.reset()
	set, err := launch()
	if err != nil {
		return nil, err
	}
	defer set.stop(b.stopGrace())
	m, err := start(set)
	if err != nil {
		return nil, err
	}
	n := l.deliveries()
	if err := b.rcv.waitUnique(ctx, int64(n)); err != nil {
		return nil, fmt.Errorf("wait for %d deliveries (%d arrived): %w", n, b.rcv.unique.Load(), err)
	}
	if err := host.waitNoPending(ctx, chans); err != nil {
		return nil, fmt.Errorf("wait for the outcomes: %w", err)
	}
	c, err := m.finish(ctx, n)
	if err != nil {
		return nil, err
	}
	r := &drainResult{Replicas: replicas, Cost: c, BytesPerRequest: b.rcv.bytesPerRequest()}
	if r.Deliveries, r.Attempts, r.Unsucceeded, err = host.claims(ctx, chans); err != nil {
		return nil, err
	}
	return r, nil
}

// riverDrain inserts one job per message of the backlog, then times their
// drain by replicas River replicas of kind (kindRiverPost or
// kindRiverTrivial), until every job is completed.
func (b *bench) riverDrain(ctx context.Context, replicas int, kind string) (*drainResult, error) {
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	dsn, drop, err := b.newDatabase(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()
	host, err := newRiverHost(ctx, dsn, publisherConns, b.opts.riverFetchCooldown)
	if err != nil {
		return nil, err
	}
	defer host.close()
	msgs, err := messages(b.rcv.base, b.opts.backlog)
	if err != nil {
		return nil, err
	}
	if err := host.insert(ctx, msgs); err != nil {
		return nil, err
	}
	b.rcv.reset()
	set, err := startReplicas(ctx, replicas, b.replicaOpts(kind, dsn), b.env())
	if err != nil {
		return nil, err
	}
	defer set.stop(b.stopGrace())
	m, err := startMeter(ctx, b.admin, databaseName(dsn), set)
	if err != nil {
		return nil, err
	}
	n := len(msgs)
	if kind == kindRiverPost {
		err = b.rcv.waitUnique(ctx, int64(n))
	} else {
		err = waitFor(ctx, func() (bool, error) {
			s, err := set.stats(ctx)
			return s.Done >= int64(n), err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("wait for %d jobs worked: %w", n, err)
	}
	err = waitFor(ctx, func() (bool, error) {
		left, err := host.unfinished(ctx)
		return left == 0, err
	})
	if err != nil {
		return nil, fmt.Errorf("wait for %d jobs completed: %w", n, err)
	}
	c, err := m.finish(ctx, n)
	if err != nil {
		return nil, err
	}
	return &drainResult{Replicas: replicas, Cost: c, BytesPerRequest: b.rcv.bytesPerRequest()}, nil
}

// plain posts the backlog's messages with the plain client.
func (b *bench) plain(ctx context.Context, concurrency int) (*plainResult, error) {
	msgs, err := messages(b.rcv.base, b.opts.backlog)
	if err != nil {
		return nil, err
	}
	b.rcv.reset()
	elapsed, err := runPlain(ctx, msgs, concurrency)
	if err != nil {
		return nil, err
	}
	if got := b.rcv.unique.Load(); got != int64(len(msgs)) {
		return nil, fmt.Errorf("plain client: %d of %d messages arrived", got, len(msgs))
	}
	return &plainResult{Concurrency: concurrency, Items: len(msgs), Elapsed: elapsed, BytesPerRequest: b.rcv.bytesPerRequest()}, nil
}

// published is an event the bench committed, for its latency.
type published struct {
	path   string
	id     string
	commit time.Time
}

// latencyOf returns the commit-to-first-attempt times of evs. An event that
// never arrived is counted as missing, and its time so far (a lower bound)
// counts in the percentiles, so that it cannot flatter them.
func (b *bench) latencyOf(evs []published) latencies {
	var ds []time.Duration
	missing := 0
	now := time.Now()
	for _, e := range evs {
		if at, ok := b.rcv.firstArrival(e.path, e.id); ok {
			ds = append(ds, at.Sub(e.commit))
		} else {
			ds = append(ds, now.Sub(e.commit))
			missing++
		}
	}
	return summarise(ds, missing)
}

// waitArrived waits, at most arrivalWait, until every event of evs arrived
// at its path; those still missing then are left to latencyOf.
func (b *bench) waitArrived(ctx context.Context, evs []published) error {
	ctx, cancel := context.WithTimeout(ctx, arrivalWait)
	defer cancel()
	i := 0
	err := waitFor(ctx, func() (bool, error) {
		for ; i < len(evs); i++ {
			if _, ok := b.rcv.firstArrival(evs[i].path, evs[i].id); !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err == context.DeadlineExceeded {
		return nil
	}
	return err
}

// latency publishes, from this process, one event per transaction at rate
// events a second for the latency duration, spread over a channel of
// each of a few tenants, to one replica; and measures commit to first
// attempt.
func (b *bench) latency(ctx context.Context, rate int) (*latencyResult, error) {
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	dsn, drop, err := b.newDatabase(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()
	p, err := b.startPaced(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer p.close(b.stopGrace())
	evs, achieved, err := publishPaced(ctx, rate, b.opts.latencyDuration, p.publish)
	if err != nil {
		return nil, err
	}
	if err := b.waitArrived(ctx, evs); err != nil {
		return nil, err
	}
	return &latencyResult{Rate: rate, Achieved: achieved, Latency: b.latencyOf(evs)}, nil
}

// pacedDeskkit is the setting of the latency and steady scenarios: a
// webhook for each of the latency tenants, one replica working and warmed
// up, and the host that publishes to them, over a pool of
// latencyPublishers connections.
type pacedDeskkit struct {
	host  *deskkitHost
	chans []chanRef
	set   replicaSet
}

// startPaced migrates the database at dsn, adds the channels, starts the
// replica and warms it up.
func (b *bench) startPaced(ctx context.Context, dsn string) (_ *pacedDeskkit, err error) {
	p := &pacedDeskkit{}
	if p.host, err = newDeskkitHost(ctx, dsn, b.secret, latencyPublishers); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.close(b.stopGrace())
		}
	}()
	for t := range b.opts.latencyTenants {
		refs, err := p.host.addChannels(ctx, b.rcv.base, hookPath, int64(t+1), 1)
		if err != nil {
			return nil, err
		}
		p.chans = append(p.chans, refs...)
	}
	if p.set, err = startReplicas(ctx, 1, b.replicaOpts(kindDeskkit, dsn), b.env()); err != nil {
		return nil, err
	}
	if err := p.set.start(); err != nil {
		return nil, err
	}
	return p, b.warmUp(ctx, len(p.chans), p.publish)
}

// publish publishes the i-th event, to the channels in turn, in a
// transaction of its own.
func (p *pacedDeskkit) publish(ctx context.Context, i int) (published, error) {
	c := p.chans[i%len(p.chans)]
	ev := trashedEvent(c.tenant, i)
	at, err := p.host.publishOne(ctx, c.tenant, ev)
	return published{c.path, ev.ID, at}, err
}

// close stops the replica, within grace, and closes the host.
func (p *pacedDeskkit) close(grace time.Duration) {
	p.set.stop(grace)
	p.host.close()
}

// warmUp publishes one event to each of n channels (publish's first n go
// to each once) and waits until all arrived, so that the replica is
// running and listening before the clock starts; then the receiver
// forgets them.
func (b *bench) warmUp(ctx context.Context, n int, publish func(ctx context.Context, i int) (published, error)) error {
	b.rcv.reset()
	for i := range n {
		if _, err := publish(ctx, i); err != nil {
			return fmt.Errorf("warm-up publish: %w", err)
		}
	}
	if err := b.rcv.waitUnique(ctx, int64(n)); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	b.rcv.reset()
	return nil
}

// publishPaced calls publish for events 0, 1, ... at rate events a second
// for d, from latencyPublishers goroutines (one event per transaction
// needs several commits in flight), and returns what they committed and
// the rate they committed at: from the first event's due time to the
// last commit.
func publishPaced(ctx context.Context, rate int, d time.Duration, publish func(ctx context.Context, i int) (published, error)) ([]published, float64, error) {
	total := int(float64(rate) * d.Seconds())
	evs := make([]published, total)
	period := time.Second / time.Duration(rate)
	due := make(chan int, total)
	start := time.Now()
	go func() {
		defer close(due)
		for i := range total {
			if d := time.Until(start.Add(time.Duration(i) * period)); d > 0 {
				select {
				case <-time.After(d): // pacing the publisher, not waiting for state
				case <-ctx.Done():
					return
				}
			}
			due <- i
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, latencyPublishers)
	for range latencyPublishers {
		wg.Go(func() {
			for i := range due {
				e, err := publish(ctx, i)
				if err != nil {
					errs <- err
					return
				}
				evs[i] = e
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, 0, fmt.Errorf("publish: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	last := start
	for _, e := range evs {
		last = maxTime(last, e.commit)
	}
	return evs, float64(total) / last.Sub(start).Seconds(), nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Tenants of the fairness scenarios.
const (
	tenantA = 1 // the one with the backlog or the hanging channels
	tenantB = 2 // the one that publishes every fairInterval
)

// fairInterval is how often tenant B publishes.
const fairInterval = 100 * time.Millisecond

// publishB publishes one event of tenant B every fairInterval to its
// channel c until stop is closed or ctx ends, and returns what it committed.
func (b *bench) publishB(ctx context.Context, host *deskkitHost, c chanRef, stop <-chan struct{}) ([]published, error) {
	var evs []published
	t := time.NewTicker(fairInterval)
	defer t.Stop()
	for i := 0; ; i++ {
		ev := trashedEvent(tenantB, i)
		at, err := host.publishOne(ctx, tenantB, ev)
		if err != nil {
			return evs, fmt.Errorf("tenant B: publish: %w", err)
		}
		evs = append(evs, published{c.path, ev.ID, at})
		select {
		case <-stop:
			return evs, nil
		case <-ctx.Done():
			return evs, ctx.Err()
		case <-t.C:
		}
	}
}

// fairness runs one fairness scenario on one replica: tenant A's channels
// (under prefix) get a backlog of layout a's deliveries before the replica
// starts; then tenant B publishes every fairInterval until until returns
// (it is given the time the replica started), and B's commit to first
// attempt is measured.
func (b *bench) fairness(ctx context.Context, prefix string, a layout, until func(ctx context.Context, start time.Time) error) (*fairResult, error) {
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	dsn, drop, err := b.newDatabase(ctx)
	if err != nil {
		return nil, err
	}
	defer drop()
	host, err := newDeskkitHost(ctx, dsn, b.secret, publisherConns)
	if err != nil {
		return nil, err
	}
	defer host.close()
	if _, err := host.addChannels(ctx, b.rcv.base, prefix, tenantA, a.channels); err != nil {
		return nil, err
	}
	bChans, err := host.addChannels(ctx, b.rcv.base, hookPath, tenantB, 1)
	if err != nil {
		return nil, err
	}
	if err := host.fill(ctx, a); err != nil {
		return nil, err
	}
	b.rcv.reset()
	set, err := startReplicas(ctx, 1, b.replicaOpts(kindDeskkit, dsn), b.env())
	if err != nil {
		return nil, err
	}
	defer set.stop(b.stopGrace())
	if err := set.start(); err != nil {
		return nil, err
	}
	start := time.Now()
	stop := make(chan struct{})
	var evs []published
	var pubErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		evs, pubErr = b.publishB(ctx, host, bChans[0], stop)
	}()
	err = until(ctx, start)
	close(stop)
	<-done
	if err != nil {
		return nil, err
	}
	if pubErr != nil {
		return nil, pubErr
	}
	if err := b.waitArrived(ctx, evs); err != nil {
		return nil, err
	}
	return &fairResult{ADeliveries: a.deliveries(), B: b.latencyOf(evs)}, nil
}

// fairBacklog is B's latency while A's backlog drains.
func (b *bench) fairBacklog(ctx context.Context) (*fairResult, error) {
	a := layout{firstTenant: tenantA, tenants: 1, channels: b.opts.fairChannels, events: b.opts.fairEvents}
	var drain time.Duration
	r, err := b.fairness(ctx, hookPath, a, func(ctx context.Context, start time.Time) error {
		err := waitFor(ctx, func() (bool, error) { return b.rcv.uniqueOf(tenantA) >= int64(a.deliveries()), nil })
		drain = time.Since(start)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fairness with a backlog: %w", err)
	}
	r.ADrain = drain
	return r, nil
}

// fairHang is B's latency while A's channels hang, for the hang duration.
func (b *bench) fairHang(ctx context.Context) (*fairResult, error) {
	a := layout{firstTenant: tenantA, tenants: 1, channels: b.opts.hangChannels, events: b.opts.hangEvents}
	r, err := b.fairness(ctx, hangPath, a, func(ctx context.Context, start time.Time) error {
		select {
		case <-time.After(time.Until(start.Add(b.opts.hangDuration))): // the scenario's length
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("fairness with hanging channels: %w", err)
	}
	return r, nil
}

// churnResult is one run of the churn scenario: the backlog drained
// -churn-drains times in a row on one database of a private cluster.
type churnResult struct {
	Variant string       `json:"variant"` // a churnVariants name
	Drains  []churnDrain `json:"drains"`
}

// churnVariant is one churn scenario: the outbox's tables as its
// migrations leave them (tuned) or with their storage parameters reset to
// PostgreSQL's defaults, on a cluster with autovacuum on or off.
type churnVariant struct {
	name       string // the scenario's name in -scenarios
	tables     string // what the tables' storage parameters are, for the tables
	tuned      bool
	autovacuum bool
}

// churnVariants are the churn scenarios, in the order a repetition runs
// them. The last is this machine's shared server's setting (issue 29), for
// reference: the migrations' settings need autovacuum.
var churnVariants = []churnVariant{
	{"churn", "as migrated", true, true},
	{"churn-defaults", "PostgreSQL's defaults", false, true},
	{"churn-novacuum", "as migrated, autovacuum off", true, false},
}

// churnDrain is one drain of the churn scenario, with the deliveries
// table's state after it (pg_stat_user_tables, sizes).
type churnDrain struct {
	Cost cost `json:"cost"`
	// Over the drain: the deliveries table's row updates, and how many of
	// them were HOT (no index entry written).
	Updates    int64 `json:"updates"`
	HOTUpdates int64 `json:"hot_updates"`
	// Autovacuums of the deliveries table since the previous drain ended
	// (the fill included).
	Autovacuums int64 `json:"autovacuums"`
	// After the drain: dead and live rows (PostgreSQL's estimates), the
	// table's size (heap, free space and visibility maps) and the pending
	// index's (deskkit_outbox_target_due_idx).
	DeadRows     int64 `json:"dead_rows"`
	LiveRows     int64 `json:"live_rows"`
	TableBytes   int64 `json:"table_bytes"`
	PendingBytes int64 `json:"pending_index_bytes"`
}

// hotShare is the share of the drain's updates that were HOT.
func (d churnDrain) hotShare() float64 {
	if d.Updates == 0 {
		return math.NaN()
	}
	return float64(d.HOTUpdates) / float64(d.Updates)
}

// third is the third drain's throughput over the first's (NaN with fewer
// drains).
func (c *churnResult) third() float64 {
	if len(c.Drains) < 3 {
		return math.NaN()
	}
	return c.Drains[2].Cost.perSecond() / c.Drains[0].Cost.perSecond()
}

// deliveriesStats is what pg_stat_user_tables and the catalog say of the
// deliveries table.
type deliveriesStats struct {
	updates, hot, autovacuums, dead, live, table, pending int64
}

// readDeliveriesStats reads them on db, the scenario's database.
func readDeliveriesStats(ctx context.Context, db *sql.DB) (deliveriesStats, error) {
	var s deliveriesStats
	err := db.QueryRowContext(ctx, `SELECT n_tup_upd, n_tup_hot_upd, autovacuum_count, n_dead_tup, n_live_tup,
  pg_table_size(relid), pg_relation_size('deskkit_outbox_target_due_idx')
FROM pg_stat_user_tables WHERE relname = 'deskkit_outbox_deliveries'`).
		Scan(&s.updates, &s.hot, &s.autovacuums, &s.dead, &s.live, &s.table, &s.pending)
	if err != nil {
		return s, fmt.Errorf("read the deliveries table's statistics: %w", err)
	}
	return s, nil
}

// resetStorage resets every storage parameter of the outbox's tables to
// PostgreSQL's default: the tables as they were before the outbox's
// migrations set them.
func resetStorage(ctx context.Context, db *sql.DB) error {
	for _, table := range []string{"deskkit_outbox_deliveries", "deskkit_outbox_events", "deskkit_outbox_attempts"} {
		var opts sql.NullString
		err := db.QueryRowContext(ctx, "SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = to_regclass($1)", table).Scan(&opts)
		if err != nil {
			return fmt.Errorf("read %s's storage parameters: %w", table, err)
		}
		var names []string
		for o := range strings.SplitSeq(opts.String, ",") {
			if name, _, ok := strings.Cut(o, "="); ok {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		// The names are PostgreSQL's own (from the catalog): no quoting.
		if _, err := db.ExecContext(ctx, "ALTER TABLE "+table+" RESET ("+strings.Join(names, ", ")+")"); err != nil {
			return fmt.Errorf("reset %s's storage parameters: %w", table, err)
		}
	}
	return nil
}

// waitSessionsGone waits, at most 10 s, until the database has no client
// session that started after since (the stopped replicas'): a session
// writes its last table statistics when it exits.
func waitSessionsGone(ctx context.Context, db *sql.DB, since time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := waitFor(ctx, func() (bool, error) {
		var n int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND backend_type = 'client backend' AND backend_start > $1 AND pid <> pg_backend_pid()`, since).Scan(&n)
		return n == 0, err
	})
	if err == context.DeadlineExceeded {
		return nil // read what is there
	}
	return err
}

// churn drains the backlog -churn-drains times in a row, each filled anew
// after the previous drain, on one database of a private cluster, one
// replica, as variant v says.
func (b *bench) churn(ctx context.Context, v churnVariant) (*churnResult, error) {
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	var settings []string
	if !v.autovacuum {
		settings = append(settings, "autovacuum=off")
	}
	cl, err := startCluster(ctx, "deskkit-bench-"+b.runID, settings...)
	if err != nil {
		return nil, err
	}
	defer cl.stop()
	if _, err := cl.admin.ExecContext(ctx, "CREATE DATABASE churn"); err != nil {
		return nil, fmt.Errorf("create database churn: %w", err)
	}
	dsn := cl.url("churn")
	host, err := newDeskkitHost(ctx, dsn, b.secret, publisherConns)
	if err != nil {
		return nil, err
	}
	defer host.close()
	if !v.tuned {
		if err := resetStorage(ctx, host.db.DB); err != nil {
			return nil, err
		}
	}
	l := b.opts.backlog
	chans, err := host.addLayout(ctx, b.rcv.base, l)
	if err != nil {
		return nil, err
	}
	r := &churnResult{Variant: v.name}
	before, err := readDeliveriesStats(ctx, host.db.DB)
	if err != nil {
		return nil, err
	}
	for i := range b.opts.churnDrains {
		if err := host.fill(ctx, l); err != nil {
			return nil, err
		}
		d, after, err := b.churnDrain(ctx, cl, host, dsn, chans, before)
		if err != nil {
			return nil, fmt.Errorf("drain %d: %w", i+1, err)
		}
		r.Drains = append(r.Drains, d)
		before = after
	}
	return r, nil
}

// churnDrain times one drain of the churn scenario, from the filled
// backlog, and reads the deliveries table's state after it; before is
// that state after the previous drain.
func (b *bench) churnDrain(ctx context.Context, cl *cluster, host *deskkitHost, dsn string, chans []chanRef, before deliveriesStats) (churnDrain, deliveriesStats, error) {
	var d churnDrain
	b.rcv.reset()
	started := time.Now()
	set, err := startReplicas(ctx, 1, b.replicaOpts(kindDeskkit, dsn), b.env())
	if err != nil {
		return d, before, err
	}
	defer set.stop(b.stopGrace())
	// The fill's inserts and an autovacuum since the previous drain are in
	// the statistics by now, or not: only updates and autovacuums are
	// counted from them, and autovacuums from the previous drain's end.
	s0, err := readDeliveriesStats(ctx, host.db.DB)
	if err != nil {
		return d, before, err
	}
	m, err := startMeterOf(ctx, cl.admin, cl.cpu, set)
	if err != nil {
		return d, before, err
	}
	n := b.opts.backlog.deliveries()
	if err := b.rcv.waitUnique(ctx, int64(n)); err != nil {
		return d, before, fmt.Errorf("wait for %d deliveries (%d arrived): %w", n, b.rcv.unique.Load(), err)
	}
	if err := host.waitNoPending(ctx, chans); err != nil {
		return d, before, fmt.Errorf("wait for the outcomes: %w", err)
	}
	if d.Cost, err = m.finish(ctx, n); err != nil {
		return d, before, err
	}
	set.stop(b.stopGrace())
	if err := waitSessionsGone(ctx, host.db.DB, started); err != nil {
		return d, before, err
	}
	s1, err := readDeliveriesStats(ctx, host.db.DB)
	if err != nil {
		return d, before, err
	}
	d.Updates, d.HOTUpdates = s1.updates-s0.updates, s1.hot-s0.hot
	d.Autovacuums = s1.autovacuums - before.autovacuums
	d.DeadRows, d.LiveRows, d.TableBytes, d.PendingBytes = s1.dead, s1.live, s1.table, s1.pending
	return d, s1, nil
}
