// Command bench measures deskkit's webhook delivery against River doing
// the same work, on one PostgreSQL, with one loopback receiver, in one run:
// backlog drains with 1, 2 and 4 replica processes (and with one on
// SQLite), a plain Go client as the I/O limit, commit-to-first-attempt
// latency (deskkit's and River's), fairness between tenants, and the cost
// of each delivery (CPU, statements, WAL flushes), in a drain and at a
// steady rate.
// See README.md for what is measured and how.
//
// It is a module of its own, so that River and pgx never enter deskkit's
// go.mod; it uses deskkit's public API only.
package main

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/deskkit/deskkit/channel"
	"github.com/uptrace/bun/driver/pgdriver"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "replica" {
		err = replicaMain(os.Args[2:])
	} else {
		err = benchMain(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// options are the bench's flags.
type options struct {
	databaseURL string
	reps        int
	quick       bool
	jsonPath    string
	// scenarios are the scenarios each repetition runs (scenarioNames).
	scenarios map[string]bool

	backlog  layout
	replicas []int
	workers  int
	// deskkitWorkers is deskkit's Concurrency when not workers.
	deskkitWorkers int
	// serverBinary and serverSource name the reference server's binary,
	// or the folder it is built from (the server scenario).
	serverBinary, serverSource string

	pool    int
	plain   []int
	timeout time.Duration
	// riverFetchCooldown is River's Config.FetchCooldown.
	riverFetchCooldown time.Duration
	// channelInFlight and tenantConcurrency are deskkit's
	// MaxInFlightPerChannel and TenantConcurrency; 0 keeps channel's
	// defaults, as the reference server runs them.
	channelInFlight, tenantConcurrency int
	// channelRateLimit is deskkit's channel.Config.RateLimit, the rate
	// limit of channels without one (messages/s; 0: none).
	channelRateLimit float64

	rates           []int
	latencyDuration time.Duration
	latencyTenants  int

	steadyRates    []int
	steadyDuration time.Duration

	fairChannels int
	fairEvents   int
	hangChannels int
	hangEvents   int
	hangDuration time.Duration

	churnDrains int

	// adaptive are the slow, throttled and ratelimit scenarios' flags.
	adaptive adaptiveOptions
}

// parseOptions reads the flags; -quick shrinks the sizes not set
// explicitly.
func parseOptions(args []string) (options, error) {
	o := options{backlog: layout{firstTenant: 1}}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	defaultURL := os.Getenv("DESKKIT_TEST_DATABASE_URL")
	if defaultURL == "" {
		defaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	fs.StringVar(&o.databaseURL, "database-url", defaultURL, "PostgreSQL to connect to; each scenario creates a database bench_* there and drops it")
	fs.IntVar(&o.reps, "reps", 3, "repetitions of the whole interleaved set")
	fs.BoolVar(&o.quick, "quick", false, "small sizes, one repetition: a check that everything runs")
	fs.StringVar(&o.jsonPath, "json", "", "also write the raw numbers to this JSON file")
	scenarios := fs.String("scenarios", strings.Join(scenarioNames, ","), "the scenarios each repetition runs, in their order: "+strings.Join(scenarioNames, ", "))
	fs.IntVar(&o.backlog.tenants, "tenants", 20, "backlog: tenants")
	fs.IntVar(&o.backlog.channels, "channels", 5, fmt.Sprintf("backlog: webhook channels per tenant (at most the quota, %d)", channel.Webhook.Quota()))
	fs.IntVar(&o.backlog.events, "events", 200, "backlog: events per tenant, each delivered to every channel of the tenant")
	replicas := fs.String("replicas", "1,2,4", "backlog: replica processes to drain with")
	fs.IntVar(&o.workers, "workers", 8, "workers per replica (channel.Config.Concurrency, River's MaxWorkers); 8, as issue 20 compares them")
	fs.IntVar(&o.deskkitWorkers, "deskkit-workers", 0, "deskkit's channel.Config.Concurrency per replica, if not -workers: 16 is the reference server's default, against River's -workers (issue 29's one endpoint at the server's defaults)")
	fs.StringVar(&o.serverBinary, "server-binary", "", "server: the reference server's binary; empty: built from -server-source")
	fs.StringVar(&o.serverSource, "server-source", "../server", "server: examples/server's folder, built with go build when -server-binary is empty")
	fs.IntVar(&o.pool, "pool", 10, "database connections per replica at most")
	plain := fs.String("plain", "8,16,32", "plain client: concurrencies")
	fs.DurationVar(&o.timeout, "timeout", channel.DefaultTimeout, "channel.Config.Timeout: bounds an attempt, a hanging one too")
	fs.IntVar(&o.channelInFlight, "channel-in-flight", 0, "deskkit's channel.Config.MaxInFlightPerChannel (the reference server's -event-channel-in-flight); 0: its default, 4")
	fs.IntVar(&o.tenantConcurrency, "tenant-concurrency", 0, "deskkit's channel.Config.TenantConcurrency (the reference server's -event-tenant-concurrency); 0: its default, half of -workers")
	fs.Float64Var(&o.channelRateLimit, "channel-rate-limit", 0, "deskkit's channel.Config.RateLimit: messages/s of a channel without a rate limit of its own; 0: none")
	fs.DurationVar(&o.riverFetchCooldown, "river-fetch-cooldown", time.Millisecond, "River's Config.FetchCooldown: its least wait between fetches, which caps a replica at MaxWorkers jobs per cooldown (River's default, 100ms, is 80 jobs/s at 8 workers); 1ms is River's minimum")
	rates := fs.String("rates", "100,1000,2000", "latency (deskkit's and River's): events per second")
	fs.DurationVar(&o.latencyDuration, "latency-duration", 10*time.Second, "latency: how long to publish at each rate")
	fs.IntVar(&o.latencyTenants, "latency-tenants", 10, "latency: tenants, one webhook each, published to in turn")
	steadyRates := fs.String("steady-rates", "100,500", "steady: events per second, published as the latency scenario does")
	fs.DurationVar(&o.steadyDuration, "steady-duration", 20*time.Second, "steady: how long to publish at each rate")
	fs.IntVar(&o.fairChannels, "fair-channels", 2, "fairness: tenant A's channels")
	fs.IntVar(&o.fairEvents, "fair-events", 10000, "fairness: tenant A's events, each to every one of its channels")
	fs.IntVar(&o.hangChannels, "hang-channels", 5, "fairness: tenant A's hanging channels")
	fs.IntVar(&o.hangEvents, "hang-events", 30, "fairness: tenant A's events to its hanging channels")
	fs.DurationVar(&o.hangDuration, "hang-duration", 15*time.Second, "fairness: how long tenant B publishes beside the hanging channels")
	fs.IntVar(&o.churnDrains, "churn-drains", 3, "churn: drains of the backlog in a row on one database")
	adaptiveFlags(fs, &o.adaptive)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		small := map[string]func(){
			"reps":             func() { o.reps = 1 },
			"tenants":          func() { o.backlog.tenants = 4 },
			"events":           func() { o.backlog.events = 50 },
			"latency-duration": func() { o.latencyDuration = 2 * time.Second },
			"steady-duration":  func() { o.steadyDuration = 3 * time.Second },
			"fair-events":      func() { o.fairEvents = 500 },
			"hang-duration":    func() { o.hangDuration = 3 * time.Second },
			"hang-events":      func() { o.hangEvents = 5 },
			"timeout":          func() { o.timeout = 2 * time.Second },
		}
		maps.Copy(small, adaptiveQuick(&o.adaptive))
		for name, shrink := range small {
			if !set[name] {
				shrink()
			}
		}
	}
	var err error
	if o.replicas, err = intList("replicas", *replicas); err != nil {
		return o, err
	}
	if o.plain, err = intList("plain", *plain); err != nil {
		return o, err
	}
	if o.rates, err = intList("rates", *rates); err != nil {
		return o, err
	}
	if o.steadyRates, err = intList("steady-rates", *steadyRates); err != nil {
		return o, err
	}
	if o.scenarios, err = scenarioSet(*scenarios); err != nil {
		return o, err
	}
	for _, c := range []struct {
		name   string
		n, max int
	}{
		{"reps", o.reps, 100}, {"tenants", o.backlog.tenants, 1000},
		{"channels", o.backlog.channels, channel.Webhook.Quota()}, {"events", o.backlog.events, 1_000_000},
		{"workers", o.workers, channel.MaxConcurrency}, {"pool", o.pool, 100},
		{"latency-tenants", o.latencyTenants, 1000}, {"fair-channels", o.fairChannels, channel.Webhook.Quota()},
		{"fair-events", o.fairEvents, 1_000_000}, {"hang-channels", o.hangChannels, channel.Webhook.Quota()},
		{"hang-events", o.hangEvents, 100_000}, {"churn-drains", o.churnDrains, 100},
	} {
		if c.n < 1 || c.n > c.max {
			return o, fmt.Errorf("-%s must be between 1 and %d", c.name, c.max)
		}
	}
	if o.latencyDuration <= 0 || o.steadyDuration <= 0 || o.hangDuration <= 0 || o.timeout <= 0 {
		return o, errors.New("-latency-duration, -steady-duration, -hang-duration and -timeout must be positive")
	}
	if o.channelInFlight < 0 || o.tenantConcurrency < 0 || o.tenantConcurrency > o.workers {
		return o, errors.New("-channel-in-flight must be 0 or more, -tenant-concurrency between 0 and -workers")
	}
	if o.channelRateLimit < 0 || o.channelRateLimit > channel.MaxRateLimit {
		return o, fmt.Errorf("-channel-rate-limit must be between 0 and %d", int(channel.MaxRateLimit))
	}
	if err := o.adaptive.check(); err != nil {
		return o, err
	}
	if o.riverFetchCooldown < time.Millisecond {
		return o, errors.New("-river-fetch-cooldown must be at least 1ms (River's minimum)")
	}
	return o, nil
}

// intList reads a comma-separated list of positive integers.
func intList(name, s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-%s: %q is not a positive integer", name, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// scenarioNames are the scenarios of a repetition, in the order it runs
// them: the deskkit and River (same POST) drains at each replica count,
// the reference server's drain (examples/server), deskkit's one-replica
// drain on SQLite, River's trivial job, the plain
// client, the latencies (deskkit's and River's at each rate), deskkit's
// CPU at a steady rate, the fairness scenarios, the drains in a row on a
// private cluster (churnVariants: the outbox's tables as migrated, with
// PostgreSQL's storage defaults, and as migrated without autovacuum), and
// the adaptive scenarios (an endpoint turning slow, one answering 429, a
// channel's rate limit).
var scenarioNames = []string{"deskkit", "river", "server", "sqlite", "trivial", "plain", "latency", "river-latency", "steady", "fairness", "churn", "churn-defaults", "churn-novacuum",
	"slow", "throttled", "ratelimit"}

// scenarioSet reads -scenarios: a comma-separated list of scenarioNames.
func scenarioSet(s string) (map[string]bool, error) {
	set := map[string]bool{}
	for f := range strings.SplitSeq(s, ",") {
		name := strings.TrimSpace(f)
		if !slices.Contains(scenarioNames, name) {
			return nil, fmt.Errorf("-scenarios: %q is not one of %s", name, strings.Join(scenarioNames, ", "))
		}
		set[name] = true
	}
	return set, nil
}

// bench is one run: its options, the receiver, the server secret of its
// deskkit registries, and the databases it created.
type bench struct {
	opts     options
	admin    *sql.DB // the -database-url database: CREATE and DROP DATABASE, pg_stat_wal
	adminURL *url.URL
	runID    string
	secret   []byte
	rcv      *receiver

	mu  sync.Mutex
	seq int
	dbs map[string]bool // created and not yet dropped
}

// benchMain runs the benchmark and prints its tables.
func benchMain(args []string) error {
	o, err := parseOptions(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	u, err := url.Parse(o.databaseURL)
	if err != nil {
		return fmt.Errorf("-database-url: %w", err)
	}
	b := &bench{opts: o, adminURL: u, runID: hex.EncodeToString(randomBytes(4)), secret: []byte(hex.EncodeToString(randomBytes(32))), dbs: map[string]bool{}}
	b.admin = sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(o.databaseURL)))
	b.admin.SetMaxOpenConns(2)
	defer b.admin.Close()
	defer b.dropAll()
	if err := b.admin.PingContext(ctx); err != nil {
		return fmt.Errorf("connect to %s: %w", u.Redacted(), err)
	}
	if b.rcv, err = startReceiver(); err != nil {
		return err
	}
	defer b.rcv.close()

	res := &results{Options: describeOptions(o)}
	for rep := range o.reps {
		r, err := b.repetition(ctx, rep)
		if r != nil {
			res.Reps = append(res.Reps, r)
		}
		if err != nil {
			return fmt.Errorf("repetition %d: %w", rep+1, err)
		}
	}
	report(os.Stdout, o, res)
	if o.jsonPath != "" {
		if err := writeJSON(o.jsonPath, res); err != nil {
			return err
		}
	}
	return nil
}

// repetition runs every scenario of -scenarios once, interleaved: each
// replica count for deskkit then River, deskkit on SQLite, River's trivial
// job, the plain client, the latencies (deskkit then River at each rate),
// the steady rates, the fairness scenarios and the drains in a row.
func (b *bench) repetition(ctx context.Context, rep int) (*repResult, error) {
	r := newRepResult()
	step := func(name string, f func() (string, error)) error {
		fmt.Fprintf(os.Stderr, "rep %d/%d: %s ...", rep+1, b.opts.reps, name)
		t := time.Now()
		summary, err := f()
		if err != nil {
			fmt.Fprintln(os.Stderr, " failed")
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(os.Stderr, " %s (%.1fs)\n", summary, time.Since(t).Seconds())
		return nil
	}
	run := b.opts.scenarios
	for _, n := range b.opts.replicas {
		if run["deskkit"] {
			err := step(fmt.Sprintf("deskkit drain, %d replica(s)", n), func() (string, error) {
				d, err := b.deskkitDrain(ctx, n)
				if err != nil {
					return "", err
				}
				r.Deskkit[n] = d
				return fmt.Sprintf("%.0f deliveries/s", d.Cost.perSecond()), nil
			})
			if err != nil {
				return r, err
			}
		}
		if run["river"] {
			err := step(fmt.Sprintf("River drain, same POST, %d replica(s)", n), func() (string, error) {
				d, err := b.riverDrain(ctx, n, kindRiverPost)
				if err != nil {
					return "", err
				}
				r.River[n] = d
				return fmt.Sprintf("%.0f jobs/s", d.Cost.perSecond()), nil
			})
			if err != nil {
				return r, err
			}
		}
	}
	if run["server"] {
		err := step("the reference server's drain (examples/server, its defaults), 1 process", func() (string, error) {
			d, err := b.serverDrain(ctx)
			if err != nil {
				return "", err
			}
			r.Server = d
			return fmt.Sprintf("%.0f deliveries/s", d.Cost.perSecond()), nil
		})
		if err != nil {
			return r, err
		}
	}
	if run["sqlite"] {
		err := step("deskkit drain on SQLite, 1 replica", func() (string, error) {
			d, err := b.sqliteDrain(ctx)
			if err != nil {
				return "", err
			}
			r.SQLite = d
			return fmt.Sprintf("%.0f deliveries/s", d.Cost.perSecond()), nil
		})
		if err != nil {
			return r, err
		}
	}
	if run["trivial"] {
		err := step("River drain, trivial job, 1 replica", func() (string, error) {
			d, err := b.riverDrain(ctx, 1, kindRiverTrivial)
			if err != nil {
				return "", err
			}
			r.RiverTrivial = d
			return fmt.Sprintf("%.0f jobs/s", d.Cost.perSecond()), nil
		})
		if err != nil {
			return r, err
		}
	}
	for _, c := range b.opts.plain {
		if !run["plain"] {
			break
		}
		err := step(fmt.Sprintf("plain client, concurrency %d", c), func() (string, error) {
			p, err := b.plain(ctx, c)
			if err != nil {
				return "", err
			}
			r.Plain[c] = p
			return fmt.Sprintf("%.0f POSTs/s", p.perSecond()), nil
		})
		if err != nil {
			return r, err
		}
	}
	for _, rate := range b.opts.rates {
		if err := b.latencySteps(ctx, r, rate, step); err != nil {
			return r, err
		}
	}
	for _, rate := range b.opts.steadyRates {
		if !run["steady"] {
			break
		}
		err := step(fmt.Sprintf("steady %d events/s", rate), func() (string, error) {
			s, err := b.steady(ctx, rate)
			if err != nil {
				return "", err
			}
			r.Steady[rate] = s
			return fmt.Sprintf("%.0f committed/s, %.3f ms CPU per delivery", s.Achieved, s.Cost.totalCPUms()), nil
		})
		if err != nil {
			return r, err
		}
	}
	if run["fairness"] {
		if err := b.fairnessSteps(ctx, r, step); err != nil {
			return r, err
		}
	}
	for _, v := range churnVariants {
		if !run[v.name] {
			continue
		}
		err := step(fmt.Sprintf("%d drains in a row on a private cluster, tables %s", b.opts.churnDrains, v.tables), func() (string, error) {
			c, err := b.churn(ctx, v)
			if err != nil {
				return "", err
			}
			r.Churn[v.name] = c
			var each []string
			for _, d := range c.Drains {
				each = append(each, fmt.Sprintf("%.0f", d.Cost.perSecond()))
			}
			return fmt.Sprintf("%s deliveries/s, third/first %.2f", strings.Join(each, ", "), c.third()), nil
		})
		if err != nil {
			return r, err
		}
	}
	if err := b.adaptiveSteps(ctx, r, step); err != nil {
		return r, err
	}
	return r, nil
}

// latencySteps runs deskkit's and River's latency at one rate, as steps of
// a repetition, each if -scenarios names it.
func (b *bench) latencySteps(ctx context.Context, r *repResult, rate int, step func(string, func() (string, error)) error) error {
	if b.opts.scenarios["latency"] {
		err := step(fmt.Sprintf("latency at %d events/s", rate), func() (string, error) {
			l, err := b.latency(ctx, rate)
			if err != nil {
				return "", err
			}
			r.Latency[rate] = l
			return fmt.Sprintf("p99 %s", fmtMs(l.Latency.P99)), nil
		})
		if err != nil {
			return err
		}
	}
	if !b.opts.scenarios["river-latency"] {
		return nil
	}
	return step(fmt.Sprintf("River latency at %d events/s", rate), func() (string, error) {
		l, err := b.riverLatency(ctx, rate)
		if err != nil {
			return "", err
		}
		r.RiverLatency[rate] = l
		return fmt.Sprintf("p99 %s", fmtMs(l.Latency.P99)), nil
	})
}

// fairnessSteps runs the two fairness scenarios, as steps of a repetition.
func (b *bench) fairnessSteps(ctx context.Context, r *repResult, step func(string, func() (string, error)) error) error {
	err := step("fairness, A's backlog", func() (string, error) {
		f, err := b.fairBacklog(ctx)
		if err != nil {
			return "", err
		}
		r.FairBacklog = f
		return fmt.Sprintf("B's p99 %s", fmtMs(f.B.P99)), nil
	})
	if err != nil {
		return err
	}
	err = step("fairness, A's hanging channels", func() (string, error) {
		f, err := b.fairHang(ctx)
		if err != nil {
			return "", err
		}
		r.FairHang = f
		return fmt.Sprintf("B's p99 %s", fmtMs(f.B.P99)), nil
	})
	return err
}

// env is the environment of replica processes: the server secret.
func (b *bench) env() []string {
	return []string{secretEnv + "=" + hex.EncodeToString(b.secret)}
}

// newDatabase creates a fresh database for one scenario and returns its
// URL and a function that drops it (also called by dropAll at the end).
func (b *bench) newDatabase(ctx context.Context) (string, func(), error) {
	b.mu.Lock()
	b.seq++
	name := fmt.Sprintf("bench_%s_%d", b.runID, b.seq)
	b.mu.Unlock()
	// The name is ours (hex and digits): it needs no quoting.
	if _, err := b.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	b.mu.Lock()
	b.dbs[name] = true
	b.mu.Unlock()
	u := *b.adminURL
	u.Path = "/" + name
	return u.String(), func() { b.drop(name) }, nil
}

// databaseName is the database of a scenario's URL.
func databaseName(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

// drop drops a database the run created, whatever still holds it.
func (b *bench) drop(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", name, err)
		return
	}
	b.mu.Lock()
	delete(b.dbs, name)
	b.mu.Unlock()
}

// dropAll drops every database the run created and has not dropped.
func (b *bench) dropAll() {
	b.mu.Lock()
	var names []string
	for name := range b.dbs {
		names = append(names, name)
	}
	b.mu.Unlock()
	for _, name := range names {
		b.drop(name)
	}
}
