package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// results is everything a run measured, as -json writes it.
type results struct {
	Options map[string]any `json:"options"`
	Reps    []*repResult   `json:"repetitions"`
}

// repResult is one repetition's measurements. Maps are keyed by replica
// count, concurrency or rate.
type repResult struct {
	Deskkit      map[int]*drainResult   `json:"deskkit"`
	River        map[int]*drainResult   `json:"river_same_post"`
	SQLite       *drainResult           `json:"sqlite"` // deskkit, 1 replica
	Server       *drainResult           `json:"server"` // the examples/server binary, 1 process
	RiverTrivial *drainResult           `json:"river_trivial"`
	Plain        map[int]*plainResult   `json:"plain"`
	Latency      map[int]*latencyResult `json:"latency"`
	RiverLatency map[int]*latencyResult `json:"river_latency"`
	Steady       map[int]*steadyResult  `json:"steady"`
	FairBacklog  *fairResult            `json:"fairness_backlog"`
	FairHang     *fairResult            `json:"fairness_hanging"`
	// The drains in a row on a private cluster, by churnVariants name.
	Churn map[string]*churnResult `json:"churn"`
	// The adaptive scenarios (adaptive.go).
	Slow      *slowResult      `json:"slow,omitempty"`
	Throttled *throttledResult `json:"throttled,omitempty"`
	RateLimit *rateResult      `json:"ratelimit,omitempty"`
}

func newRepResult() *repResult {
	return &repResult{
		Deskkit:      map[int]*drainResult{},
		River:        map[int]*drainResult{},
		Plain:        map[int]*plainResult{},
		Latency:      map[int]*latencyResult{},
		RiverLatency: map[int]*latencyResult{},
		Steady:       map[int]*steadyResult{},
		Churn:        map[string]*churnResult{},
	}
}

// describeOptions records the run's settings beside its numbers.
func describeOptions(o options) map[string]any {
	m := map[string]any{
		"reps": o.reps, "backlog": o.backlog.String(), "replicas": o.replicas, "workers": o.workers,
		"pool_per_replica": o.pool, "plain_concurrency": o.plain, "timeout": o.timeout.String(),
		"channel_in_flight": o.channelInFlight, "tenant_concurrency": o.tenantConcurrency, "channel_rate_limit": o.channelRateLimit,
		"rates": o.rates, "latency_duration": o.latencyDuration.String(), "latency_tenants": o.latencyTenants,
		"steady_rates": o.steadyRates, "steady_duration": o.steadyDuration.String(),
		"fair_backlog":  layout{tenantA, 1, o.fairChannels, o.fairEvents}.String(),
		"fair_hanging":  layout{tenantA, 1, o.hangChannels, o.hangEvents}.String(),
		"hang_duration": o.hangDuration.String(), "churn_drains": o.churnDrains,
	}
	o.adaptive.describe(m)
	return m
}

// writeJSON writes res to path.
func writeJSON(path string, res *results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// fmtMs writes a duration in milliseconds.
func fmtMs(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// table writes a markdown table.
func table(w io.Writer, head []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(head, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(head)))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(w)
}

// over collects f over the repetitions; a repetition without the figure
// gives NaN, which spans skip.
func over(reps []*repResult, f func(r *repResult) (float64, bool)) []float64 {
	out := make([]float64, len(reps))
	for i, r := range reps {
		v, ok := f(r)
		if !ok {
			v = math.NaN()
		}
		out[i] = v
	}
	return out
}

// drainFigure returns f of a drain, if the repetition has it.
func drainFigure(d *drainResult, f func(*drainResult) float64) (float64, bool) {
	if d == nil {
		return 0, false
	}
	return f(d), true
}

// ms is a duration in milliseconds, as a float.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// report writes the run's tables: each figure as min-max over the
// repetitions, and the goals' ratios, each computed within a repetition.
func report(w io.Writer, o options, res *results) {
	reps := res.Reps
	fmt.Fprintf(w, "## deskkit delivery benchmark\n\n")
	workers := fmt.Sprintf("%d workers per replica process", o.workers)
	if o.deskkitWorkers > 0 && o.deskkitWorkers != o.workers {
		workers = fmt.Sprintf("%d workers per deskkit replica process and %d per River one", o.deskkitWorkers, o.workers)
	}
	fmt.Fprintf(w, "%d repetition(s), interleaved; figures are min-max over them. Backlog: %s. %s, %d database connections per replica at most.\n\n",
		len(reps), o.backlog, workers, o.pool)

	fmt.Fprintf(w, "### 1-3. Backlog drain throughput (items/s)\n\n")
	var rows [][]string
	for i, n := range o.replicas {
		row := []string{fmt.Sprintf("%d (%d)", n, n*o.workers)}
		row = append(row, fmtSpan(over(reps, func(r *repResult) (float64, bool) {
			return drainFigure(r.Deskkit[n], func(d *drainResult) float64 { return d.Cost.perSecond() })
		}), 0))
		trivial := ""
		if n == 1 {
			trivial = fmtSpan(over(reps, func(r *repResult) (float64, bool) {
				return drainFigure(r.RiverTrivial, func(d *drainResult) float64 { return d.Cost.perSecond() })
			}), 0)
		}
		row = append(row, trivial, fmtSpan(over(reps, func(r *repResult) (float64, bool) {
			return drainFigure(r.River[n], func(d *drainResult) float64 { return d.Cost.perSecond() })
		}), 0))
		plain := ""
		if i < len(o.plain) {
			c := o.plain[i]
			plain = fmt.Sprintf("%s (%d)", fmtSpan(over(reps, func(r *repResult) (float64, bool) {
				p := r.Plain[c]
				if p == nil {
					return 0, false
				}
				return p.perSecond(), true
			}), 0), c)
		}
		rows = append(rows, append(row, plain))
	}
	table(w, []string{"replicas (workers)", "deskkit deliveries/s", "River jobs/s, trivial job", "River, same POST per job", "plain Go client, same POSTs (concurrency)"}, rows)
	fmt.Fprintf(w, "Body bytes per POST at the receiver: deskkit %s, River %s, plain %s.\n\n",
		fmtSpan(over(reps, func(r *repResult) (float64, bool) {
			return drainFigure(r.Deskkit[o.replicas[0]], func(d *drainResult) float64 { return d.BytesPerRequest })
		}), 1),
		fmtSpan(over(reps, func(r *repResult) (float64, bool) {
			return drainFigure(r.River[o.replicas[0]], func(d *drainResult) float64 { return d.BytesPerRequest })
		}), 1),
		fmtSpan(over(reps, func(r *repResult) (float64, bool) {
			p := r.Plain[o.plain[0]]
			if p == nil {
				return 0, false
			}
			return p.BytesPerRequest, true
		}), 1))

	sqliteTable(w, reps)
	serverTable(w, o, reps)

	fmt.Fprintf(w, "### 6. Cost per delivery (deskkit) and per job (River)\n\n")
	fmt.Fprintf(w, "CPU from /proc (utime+stime); PostgreSQL is the backends of the scenario's database and the server's own processes; WAL flushes are pg_stat_wal.wal_sync, cluster-wide (other databases' commits count too). \"Per PostgreSQL core /s\" is 1,000 ms over PostgreSQL's CPU ms: the deliveries (jobs) a second one PostgreSQL core sustains, a ceiling that leaves out the disk's flushes and lock waits.\n\n")
	rows = nil
	costRow := func(name string, get func(r *repResult) *drainResult) []string {
		fig := func(f func(c cost) float64, decimals int) string {
			return fmtSpan(over(reps, func(r *repResult) (float64, bool) {
				return drainFigure(get(r), func(d *drainResult) float64 { return f(d.Cost) })
			}), decimals)
		}
		return []string{name, fig(cost.replicaCPUms, 3), fig(cost.pgCPUms, 3), fig(cost.perPGCore, 0), fig(cost.totalCPUms, 3), fig(cost.statementsPer, 2), fig(cost.walSyncsPer, 3)}
	}
	for _, n := range o.replicas {
		rows = append(rows, costRow(fmt.Sprintf("deskkit, %d replica(s)", n), func(r *repResult) *drainResult { return r.Deskkit[n] }))
	}
	for _, n := range o.replicas {
		rows = append(rows, costRow(fmt.Sprintf("River same POST, %d replica(s)", n), func(r *repResult) *drainResult { return r.River[n] }))
	}
	rows = append(rows, costRow("River trivial job, 1 replica", func(r *repResult) *drainResult { return r.RiverTrivial }))
	table(w, []string{"system", "replica CPU ms", "PostgreSQL CPU ms", "per PostgreSQL core /s", "total CPU ms", "statements", "WAL flushes"}, rows)

	fmt.Fprintf(w, "### 7. deskkit claim conflicts\n\n")
	fmt.Fprintf(w, "(sum(attempts) - deliveries) / deliveries after each drain; every attempt succeeded (deliveries not SUCCEEDED: %s).\n\n",
		fmtSpan(over(reps, func(r *repResult) (float64, bool) {
			v := 0
			for _, d := range r.Deskkit {
				v += d.Unsucceeded
			}
			return float64(v), true
		}), 0))
	rows = nil
	for _, n := range o.replicas {
		rows = append(rows, []string{fmt.Sprint(n), fmtSpan(over(reps, func(r *repResult) (float64, bool) {
			return drainFigure(r.Deskkit[n], func(d *drainResult) float64 { return 100 * d.conflicts() })
		}), 2) + " %"})
	}
	table(w, []string{"replicas", "rows claimed again / rows claimed"}, rows)

	latencyTable(w, o, reps)
	steadyTable(w, o, reps)

	fmt.Fprintf(w, "### 5. Fairness: tenant B publishes one event every %s (1 replica)\n\n", fairInterval)
	rows = nil
	fairRow := func(name string, get func(r *repResult) *fairResult) []string {
		fig := func(f func(x *fairResult) float64, decimals int) string {
			return fmtSpan(over(reps, func(r *repResult) (float64, bool) {
				x := get(r)
				if x == nil {
					return 0, false
				}
				return f(x), true
			}), decimals)
		}
		return []string{name, fig(func(x *fairResult) float64 { return float64(x.B.Count) }, 0),
			fig(func(x *fairResult) float64 { return ms(x.B.P50) }, 1),
			fig(func(x *fairResult) float64 { return ms(x.B.P99) }, 1),
			fig(func(x *fairResult) float64 { return ms(x.B.Max) }, 1),
			fig(func(x *fairResult) float64 { return float64(x.B.Missing) }, 0)}
	}
	rows = append(rows, fairRow(fmt.Sprintf("A drains %s", layout{tenantA, 1, o.fairChannels, o.fairEvents}), func(r *repResult) *fairResult { return r.FairBacklog }))
	rows = append(rows, fairRow(fmt.Sprintf("A has %d hanging channels x %d events, %s, timeout %s", o.hangChannels, o.hangEvents, o.hangDuration, o.timeout), func(r *repResult) *fairResult { return r.FairHang }))
	table(w, []string{"while", "B's events", "B p50 ms", "B p99 ms", "B max ms", "never arrived"}, rows)
	fmt.Fprintf(w, "A's backlog drained in %s s.\n\n", fmtSpan(over(reps, func(r *repResult) (float64, bool) {
		if r.FairBacklog == nil {
			return 0, false
		}
		return r.FairBacklog.ADrain.Seconds(), true
	}), 1))

	churnTable(w, o, reps)
	adaptiveTables(w, o, reps)

	fmt.Fprintf(w, "### Goals (issue 20, section 3; issue 29, section 2): ratios within each repetition, min-max\n\n")
	rows = nil
	for _, g := range goals(o) {
		xs := over(reps, g.ratio)
		rows = append(rows, []string{g.name, fmtSpan(xs, 2), g.want, met(xs, g.atLeast, g.limit())})
	}
	table(w, []string{"goal", "ratio", "wanted", "met in every repetition"}, rows)
}

// goal is one of the goals, as a ratio to its limit.
type goal struct {
	name    string
	ratio   func(r *repResult) (float64, bool)
	atLeast bool    // the ratio must be >= bound (else <= bound)
	bound   float64 // 0: 1
	want    string
}

// limit is the bound the ratio is held to.
func (g goal) limit() float64 {
	if g.bound == 0 {
		return 1
	}
	return g.bound
}

// goals lists the goals for the run's settings.
func goals(o options) []goal {
	perSec := func(m map[int]*drainResult, n int) (float64, bool) {
		d := m[n]
		if d == nil {
			return 0, false
		}
		return d.Cost.perSecond(), true
	}
	ratio := func(a, b func(r *repResult) (float64, bool)) func(r *repResult) (float64, bool) {
		return func(r *repResult) (float64, bool) {
			x, ok1 := a(r)
			y, ok2 := b(r)
			return x / y, ok1 && ok2 && y != 0
		}
	}
	constant := func(v float64) func(*repResult) (float64, bool) {
		return func(*repResult) (float64, bool) { return v, true }
	}
	deskkit := func(n int, f func(d *drainResult) float64) func(r *repResult) (float64, bool) {
		return func(r *repResult) (float64, bool) { return drainFigure(r.Deskkit[n], f) }
	}
	river := func(n int, f func(d *drainResult) float64) func(r *repResult) (float64, bool) {
		return func(r *repResult) (float64, bool) { return drainFigure(r.River[n], f) }
	}
	first := o.replicas[0]
	var gs []goal
	gs = append(gs, goal{
		name:    fmt.Sprintf("deskkit deliveries/s / River same POST jobs/s, %d replica", first),
		ratio:   ratio(func(r *repResult) (float64, bool) { return perSec(r.Deskkit, first) }, func(r *repResult) (float64, bool) { return perSec(r.River, first) }),
		atLeast: true, want: ">= 1.0",
	})
	for _, n := range o.replicas[1:] {
		gs = append(gs, goal{
			name:    fmt.Sprintf("deskkit %d replicas / %d replica, deliveries/s", n, first),
			ratio:   ratio(func(r *repResult) (float64, bool) { return perSec(r.Deskkit, n) }, func(r *repResult) (float64, bool) { return perSec(r.Deskkit, first) }),
			atLeast: true, want: ">= 1.0",
		})
	}
	for _, n := range o.replicas[1:] {
		gs = append(gs, goal{
			name:    fmt.Sprintf("(River %d replicas / %d replica, jobs/s, for reference)", n, first),
			ratio:   ratio(func(r *repResult) (float64, bool) { return perSec(r.River, n) }, func(r *repResult) (float64, bool) { return perSec(r.River, first) }),
			atLeast: true, want: ">= 1.0",
		})
	}
	total := func(d *drainResult) float64 { return d.Cost.totalCPUms() }
	for _, n := range o.replicas {
		gs = append(gs, goal{
			name:  fmt.Sprintf("CPU (replicas + PostgreSQL) per delivery / River's per job, %d replica(s)", n),
			ratio: ratio(deskkit(n, total), river(n, total)),
			want:  "<= 1.0",
		})
	}
	for _, n := range o.replicas {
		gs = append(gs, goal{
			name:  fmt.Sprintf("statements per delivery / 2, %d replica(s)", n),
			ratio: ratio(deskkit(n, func(d *drainResult) float64 { return d.Cost.statementsPer() }), constant(2)),
			want:  "<= 1.0",
		})
	}
	for _, n := range o.replicas {
		gs = append(gs, goal{
			name:  fmt.Sprintf("WAL flushes per delivery / 0.2, %d replica(s)", n),
			ratio: ratio(deskkit(n, func(d *drainResult) float64 { return d.Cost.walSyncsPer() }), constant(0.2)),
			want:  "<= 1.0",
		})
	}
	for _, n := range o.replicas[1:] {
		gs = append(gs, goal{
			name:  fmt.Sprintf("claim conflicts / 5 %%, %d replicas", n),
			ratio: ratio(deskkit(n, func(d *drainResult) float64 { return d.conflicts() }), constant(0.05)),
			want:  "< 1.0",
		})
	}
	for _, rate := range o.rates {
		if rate != 1000 {
			continue
		}
		gs = append(gs, goal{
			name: "p99 commit to first attempt at 1,000 events/s / 50 ms",
			ratio: func(r *repResult) (float64, bool) {
				l := r.Latency[rate]
				if l == nil {
					return 0, false
				}
				return ms(l.Latency.P99) / 50, true
			},
			want: "< 1.0",
		})
	}
	for _, rate := range o.rates {
		if rate != 1000 {
			continue
		}
		gs = append(gs, goal{
			name: "deskkit's p99 commit to first attempt / River's, at 1,000 events/s",
			ratio: func(r *repResult) (float64, bool) {
				return latencyRatio(r.Latency[rate], r.RiverLatency[rate])
			},
			want: "<= 1.0",
		})
	}
	for _, rate := range o.steadyRates {
		gs = append(gs, goal{
			name: fmt.Sprintf("CPU (replica + PostgreSQL) per delivery at a steady %d events/s / the 1-replica drain's", rate),
			ratio: func(r *repResult) (float64, bool) {
				return steadyOverDrain(r.Steady[rate], r.Deskkit[1])
			},
			bound: 2, want: "<= 2.0",
		})
	}
	gs = append(gs, goal{
		name: "SQLite deliveries/s / PostgreSQL's, 1 replica",
		ratio: func(r *repResult) (float64, bool) {
			return sqliteOverPostgres(r.SQLite, r.Deskkit[1])
		},
		atLeast: true, bound: 0.5, want: ">= 0.5",
	})
	gs = append(gs, goal{
		name: "the reference server (examples/server, its defaults) deliveries/s / River same POST jobs/s, 1 process each",
		ratio: func(r *repResult) (float64, bool) {
			return serverOverRiver(r, cost.perSecond)
		},
		atLeast: true, bound: 1, want: ">= 1.0",
	})
	fairP99 := func(get func(r *repResult) *fairResult) func(r *repResult) (float64, bool) {
		return func(r *repResult) (float64, bool) {
			f := get(r)
			if f == nil {
				return 0, false
			}
			return f.B.P99.Seconds() / 1, true
		}
	}
	for i, v := range churnVariants {
		name := v.tables
		if i > 0 {
			name += " (for reference)"
		}
		gs = append(gs, goal{
			name: fmt.Sprintf("third drain of %d in a row / the first, deliveries/s, tables %s", o.backlog.deliveries(), name),
			ratio: func(r *repResult) (float64, bool) {
				return churnThird(r.Churn[v.name])
			},
			atLeast: true, bound: 0.9, want: ">= 0.9",
		})
	}
	gs = append(gs,
		goal{name: "B's p99 while A drains its backlog / 1 s", ratio: fairP99(func(r *repResult) *fairResult { return r.FairBacklog }), want: "< 1.0"},
		goal{name: "B's p99 while A's channels hang / 1 s", ratio: fairP99(func(r *repResult) *fairResult { return r.FairHang }), want: "< 1.0"},
	)
	return gs
}

// met tells whether every repetition's ratio met the goal: at least, or
// at most, bound.
func met(xs []float64, atLeast bool, bound float64) string {
	any := false
	for _, x := range xs {
		if math.IsNaN(x) {
			continue
		}
		any = true
		if atLeast && x < bound || !atLeast && x > bound {
			return "no"
		}
	}
	if !any {
		return "n/a"
	}
	return "yes"
}

// churnTable writes the churn scenarios' table: each drain's throughput
// and cost, and the deliveries table's state after it.
func churnTable(w io.Writer, o options, reps []*repResult) {
	fmt.Fprintf(w, "### 8. %d drains of %s in a row on one database (a private cluster, autovacuum at PostgreSQL's defaults unless said, 1 replica)\n\n", o.churnDrains, o.backlog)
	fmt.Fprintf(w, "Updates and HOT updates of deskkit_outbox_deliveries over the drain, autovacuums of it since the previous drain; dead rows (n_dead_tup), the table's size and the pending index's (deskkit_outbox_target_due_idx) after the drain.\n\n")
	var rows [][]string
	ran := func(v churnVariant) bool {
		return slices.ContainsFunc(reps, func(r *repResult) bool { return r.Churn[v.name] != nil })
	}
	for _, v := range churnVariants {
		if !ran(v) {
			continue
		}
		for i := range o.churnDrains {
			fig := func(f func(d churnDrain) float64, decimals int) string {
				return fmtSpan(over(reps, func(r *repResult) (float64, bool) {
					c := r.Churn[v.name]
					if c == nil || i >= len(c.Drains) {
						return 0, false
					}
					return f(c.Drains[i]), true
				}), decimals)
			}
			mb := func(n int64) float64 { return float64(n) / (1 << 20) }
			rows = append(rows, []string{v.tables, fmt.Sprint(i + 1),
				fig(func(d churnDrain) float64 { return d.Cost.perSecond() }, 0),
				fig(func(d churnDrain) float64 { return d.Cost.replicaCPUms() }, 3),
				fig(func(d churnDrain) float64 { return d.Cost.pgCPUms() }, 3),
				fig(func(d churnDrain) float64 { return float64(d.Updates) / float64(d.Cost.Items) }, 2),
				fig(func(d churnDrain) float64 { return 100 * d.hotShare() }, 1),
				fig(func(d churnDrain) float64 { return float64(d.Autovacuums) }, 0),
				fig(func(d churnDrain) float64 { return float64(d.DeadRows) }, 0),
				fig(func(d churnDrain) float64 { return mb(d.TableBytes) }, 1),
				fig(func(d churnDrain) float64 { return mb(d.PendingBytes) }, 2)})
		}
	}
	table(w, []string{"tables' storage parameters", "drain", "deliveries/s", "replica CPU ms", "PostgreSQL CPU ms", "updates per delivery", "HOT %", "autovacuums", "dead rows after", "table MB", "pending index MB"}, rows)
	var thirds, cpu []string
	for _, v := range churnVariants {
		if !ran(v) {
			continue
		}
		thirds = append(thirds, fmt.Sprintf("%s %s", v.tables, fmtSpan(over(reps, func(r *repResult) (float64, bool) { return churnThird(r.Churn[v.name]) }), 2)))
		cpu = append(cpu, fmt.Sprintf("%s %s", v.tables, fmtSpan(over(reps, func(r *repResult) (float64, bool) {
			c := r.Churn[v.name]
			if c == nil || len(c.Drains) < 3 {
				return 0, false
			}
			return c.Drains[2].Cost.pgCPUms() / c.Drains[0].Cost.pgCPUms(), true
		}), 2)))
	}
	fmt.Fprintf(w, "Third drain / first, deliveries/s: %s. PostgreSQL's CPU per delivery, third drain / first (what bloat would raise, less moved by other work on the machine than throughput): %s.\n\n",
		strings.Join(thirds, "; "), strings.Join(cpu, "; "))
}

// churnThird is c's third drain over its first, if the repetition ran it.
func churnThird(c *churnResult) (float64, bool) {
	if c == nil || len(c.Drains) < 3 {
		return 0, false
	}
	return c.third(), true
}

// latencyRatio is deskkit's p99 commit to first attempt over River's at
// one rate, if the repetition ran both.
func latencyRatio(deskkit, river *latencyResult) (float64, bool) {
	if deskkit == nil || river == nil || river.Latency.P99 == 0 {
		return 0, false
	}
	return float64(deskkit.Latency.P99) / float64(river.Latency.P99), true
}

// sqliteOverPostgres is the SQLite drain's throughput over PostgreSQL's,
// if the repetition ran both.
func sqliteOverPostgres(sqlite, postgres *drainResult) (float64, bool) {
	if sqlite == nil || postgres == nil {
		return 0, false
	}
	return sqlite.Cost.perSecond() / postgres.Cost.perSecond(), true
}

// sqliteTable writes the one-replica drain on SQLite beside PostgreSQL's.
func sqliteTable(w io.Writer, reps []*repResult) {
	fmt.Fprintf(w, "### 1b. The backlog on SQLite (deskkit, 1 replica)\n\n")
	fmt.Fprintf(w, "SQLite runs inside the replica: its CPU is the replica's alone; PostgreSQL's row adds the server's.\n\n")
	table(w, []string{"database", "deliveries/s", "replica CPU ms", "total CPU ms", "rows claimed again", "not SUCCEEDED"}, [][]string{
		drainRow(reps, "PostgreSQL", func(r *repResult) *drainResult { return r.Deskkit[1] }, true),
		drainRow(reps, "SQLite (a temporary file)", func(r *repResult) *drainResult { return r.SQLite }, true),
	})
}

// drainRow is a table's row of the drains get picks: name, deliveries/s,
// the processes' CPU per delivery and the total's, with conflicts the
// rows claimed again, and the deliveries not SUCCEEDED.
func drainRow(reps []*repResult, name string, get func(r *repResult) *drainResult, conflicts bool) []string {
	fig := func(f func(d *drainResult) float64, decimals int) string {
		return fmtSpan(over(reps, func(r *repResult) (float64, bool) { return drainFigure(get(r), f) }), decimals)
	}
	row := []string{name, fig(func(d *drainResult) float64 { return d.Cost.perSecond() }, 0),
		fig(func(d *drainResult) float64 { return d.Cost.replicaCPUms() }, 3),
		fig(func(d *drainResult) float64 { return d.Cost.totalCPUms() }, 3)}
	if conflicts {
		row = append(row, fig(func(d *drainResult) float64 { return 100 * d.conflicts() }, 2)+" %")
	}
	return append(row, fig(func(d *drainResult) float64 { return float64(d.Unsucceeded) }, 0))
}

// serverTable writes the reference server's drain beside River's and the
// bench's own replica's, 1 process each.
func serverTable(w io.Writer, o options, reps []*repResult) {
	fmt.Fprintf(w, "### 1c. The backlog drained by the reference server (examples/server, its defaults), 1 process\n\n")
	fmt.Fprintf(w, "River with %d workers (-workers); the server's statements are not counted.\n\n", o.workers)
	table(w, []string{"drained by", "deliveries/s", "process CPU ms", "total CPU ms", "not SUCCEEDED"}, [][]string{
		drainRow(reps, "the reference server", func(r *repResult) *drainResult { return r.Server }, false),
		drainRow(reps, "the bench's deskkit replica", func(r *repResult) *drainResult { return r.Deskkit[1] }, false),
		drainRow(reps, "River, same POST", func(r *repResult) *drainResult { return r.River[1] }, false),
	})
	fmt.Fprintf(w, "The reference server over River, deliveries/s: %s; CPU per delivery: %s\n\n",
		fmtSpan(over(reps, func(r *repResult) (float64, bool) { return serverOverRiver(r, cost.perSecond) }), 2),
		fmtSpan(over(reps, func(r *repResult) (float64, bool) { return serverOverRiver(r, cost.totalCPUms) }), 2))
}

// serverOverRiver is f of the reference server's drain over f of River's
// (1 replica), if the repetition ran both.
func serverOverRiver(r *repResult, f func(c cost) float64) (float64, bool) {
	if r.Server == nil || r.River[1] == nil {
		return 0, false
	}
	return f(r.Server.Cost) / f(r.River[1].Cost), true
}

// latencyTable writes deskkit's and River's commit to first attempt, side
// by side at each rate.
func latencyTable(w io.Writer, o options, reps []*repResult) {
	fmt.Fprintf(w, "### 4. Commit to first attempt (1 replica, one event per transaction, %d tenants with one webhook each), deskkit and River\n\n", o.latencyTenants)
	fmt.Fprintf(w, "River: the job inserted with InsertTx in the transaction that writes the event's row, worked by the same POST; both measured to the first arrival at the receiver.\n\n")
	var rows [][]string
	for _, rate := range o.rates {
		row := []string{fmt.Sprint(rate)}
		for _, get := range []func(r *repResult) *latencyResult{
			func(r *repResult) *latencyResult { return r.Latency[rate] },
			func(r *repResult) *latencyResult { return r.RiverLatency[rate] },
		} {
			fig := func(f func(l *latencyResult) float64, decimals int) string {
				return fmtSpan(over(reps, func(r *repResult) (float64, bool) {
					l := get(r)
					if l == nil {
						return 0, false
					}
					return f(l), true
				}), decimals)
			}
			row = append(row, fig(func(l *latencyResult) float64 { return l.Achieved }, 0),
				fig(func(l *latencyResult) float64 { return ms(l.Latency.P50) }, 1),
				fig(func(l *latencyResult) float64 { return ms(l.Latency.P99) }, 1),
				fig(func(l *latencyResult) float64 { return ms(l.Latency.Max) }, 1),
				fig(func(l *latencyResult) float64 { return float64(l.Latency.Missing) }, 0))
		}
		rows = append(rows, row)
	}
	table(w, []string{"events/s asked", "deskkit committed/s", "deskkit p50 ms", "deskkit p99 ms", "deskkit max ms", "deskkit never arrived",
		"River committed/s", "River p50 ms", "River p99 ms", "River max ms", "River never arrived"}, rows)
}

// steadyTable writes deskkit's CPU per delivery at the steady rates, beside
// the one-replica drain's of the same repetition.
func steadyTable(w io.Writer, o options, reps []*repResult) {
	fmt.Fprintf(w, "### 4b. CPU per delivery at a steady rate (deskkit, 1 replica, one event per transaction for %s, %d tenants with one webhook each)\n\n", o.steadyDuration, o.latencyTenants)
	fmt.Fprintf(w, "PostgreSQL's CPU leaves out the backends of the bench's publishers (their own column); the server's own processes (postmaster, WAL writer, ...) count over the whole window, as in a drain, and on a shared server serve others' commits too: the last ratio leaves them out on both sides, for reference.\n\n")
	var rows [][]string
	for _, rate := range o.steadyRates {
		fig := func(f func(s *steadyResult, d *drainResult) (float64, bool), decimals int) string {
			return fmtSpan(over(reps, func(r *repResult) (float64, bool) {
				s := r.Steady[rate]
				if s == nil {
					return 0, false
				}
				return f(s, r.Deskkit[1])
			}), decimals)
		}
		of := func(f func(c cost) float64) func(s *steadyResult, d *drainResult) (float64, bool) {
			return func(s *steadyResult, _ *drainResult) (float64, bool) { return f(s.Cost), true }
		}
		rows = append(rows, []string{fmt.Sprint(rate),
			fig(func(s *steadyResult, _ *drainResult) (float64, bool) { return s.Achieved, true }, 0),
			fig(func(s *steadyResult, _ *drainResult) (float64, bool) { return float64(s.Cost.Items), true }, 0),
			fig(of(cost.replicaCPUms), 3), fig(of(cost.pgCPUms), 3), fig(of(cost.totalCPUms), 3), fig(of(cost.statementsPer), 2),
			fig(func(_ *steadyResult, d *drainResult) (float64, bool) {
				return drainFigure(d, func(d *drainResult) float64 { return d.Cost.totalCPUms() })
			}, 3),
			fig(steadyOverDrain, 2),
			fig(func(s *steadyResult, _ *drainResult) (float64, bool) {
				return msPer(s.PublisherPGCPU, s.Cost.Items), true
			}, 3),
			fig(func(s *steadyResult, _ *drainResult) (float64, bool) {
				return msPer(s.Cost.PGServerCPU, s.Cost.Items), true
			}, 3),
			fig(steadyOverDrainBackends, 2)})
	}
	table(w, []string{"events/s asked", "events/s committed", "deliveries", "replica CPU ms", "PostgreSQL CPU ms", "total CPU ms", "statements",
		"drain's total CPU ms (1 replica)", "steady / drain", "publishers' PostgreSQL CPU ms (left out)", "server's own processes ms (in PostgreSQL's)", "steady / drain without the server's own"}, rows)
}
