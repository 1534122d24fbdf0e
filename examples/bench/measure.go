package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTicks is sysconf(_SC_CLK_TCK), the unit of utime and stime in
// /proc/<pid>/stat: 100 on every Linux the bench runs on (getconf CLK_TCK).
const clockTicks = 100

// tickDuration is one clock tick of /proc CPU times.
const tickDuration = time.Second / clockTicks

// procCPU returns the CPU time (user and system) the process pid has used,
// from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read CPU time of process %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields are counted after its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("read CPU time of process %d: unexpected stat %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	// After the name: state (3), ppid (4), ... utime (14), stime (15).
	if len(f) < 13 {
		return 0, fmt.Errorf("read CPU time of process %d: short stat %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("read CPU time of process %d: bad utime or stime in %q", pid, s)
	}
	return time.Duration(utime+stime) * tickDuration, nil
}

// postgresCPU returns, by pid, the CPU time of the processes named postgres
// that serve database: its backends (and an autovacuum worker on it), and
// the server's own processes (postmaster, checkpointer, background writer,
// WAL writer, launchers), which serve every database. Other databases'
// backends, the tests of others sharing the server, are left out: a
// process's title (its cmdline) names the database of a backend,
// "postgres: 15/main: USER DATABASE HOST(PORT) STATE". PostgreSQL must run
// on this machine, in a PID namespace the bench sees.
func postgresCPU(database string) map[int]time.Duration {
	out := map[int]time.Duration{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(d + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		title, err := os.ReadFile(d + "/cmdline")
		if err != nil || !servesDatabase(string(title), database) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if cpu, err := procCPU(pid); err == nil {
			out[pid] = cpu
		}
	}
	return out
}

// servesDatabase tells whether a postgres process of that title serves
// database: a backend of it, or one of the server's own processes.
func servesDatabase(title, database string) bool {
	if slices.Contains(strings.Fields(title), database) {
		return true
	}
	backend := strings.Contains(title, "(") || // a client backend: HOST(PORT)
		strings.Contains(title, "worker") // autovacuum and parallel workers
	return !backend
}

// postgresCPUDelta is the CPU the postgres processes used between two
// snapshots: a process that started in between counts from zero. A process
// that ended in between (a backend whose connection closed) is lost, so
// the pools are kept open across the window.
func postgresCPUDelta(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, t := range after {
		d += t - before[pid]
	}
	return d
}

// partitionPIDs splits CPU times by pid into those of pids and the rest:
// the bench's own backends from those that serve the replicas.
func partitionPIDs(cpu map[int]time.Duration, pids []int) (of, rest map[int]time.Duration) {
	of, rest = map[int]time.Duration{}, map[int]time.Duration{}
	for pid, t := range cpu {
		if slices.Contains(pids, pid) {
			of[pid] = t
		} else {
			rest[pid] = t
		}
	}
	return of, rest
}

// serverCPU returns, by pid, the CPU time of the PostgreSQL server's own
// processes (postmaster, checkpointer, background writer, WAL writer,
// launchers), which serve every database: those postgresCPU counts for
// any database, none of them a backend.
func serverCPU() map[int]time.Duration { return postgresCPU("") }

// walSyncs returns pg_stat_wal's wal_sync: how many times the server
// flushed WAL to disk, cluster-wide (other databases' commits count too).
func walSyncs(ctx context.Context, db *sql.DB) (int64, error) {
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT wal_sync FROM pg_stat_wal").Scan(&n); err != nil {
		return 0, fmt.Errorf("read pg_stat_wal: %w", err)
	}
	return n, nil
}

// cost is what a drain used, as measured around it.
type cost struct {
	Items      int           `json:"items"`       // deliveries or jobs
	Elapsed    time.Duration `json:"elapsed_ns"`  // wall time of the drain
	ReplicaCPU time.Duration `json:"replica_cpu"` // user+system CPU of the replica processes
	PGCPU      time.Duration `json:"pg_cpu"`      // user+system CPU of the postgres processes
	// PGServerCPU is the part of PGCPU the server's own processes used
	// (0 where not told apart: the private cluster, SQLite).
	PGServerCPU time.Duration `json:"pg_server_cpu,omitempty"`
	Statements  int64         `json:"statements"` // statements the replicas sent
	WALSyncs    int64         `json:"wal_syncs"`  // pg_stat_wal.wal_sync delta, cluster-wide
}

// perSecond is the drain's throughput.
func (c cost) perSecond() float64 { return float64(c.Items) / c.Elapsed.Seconds() }

// replicaCPUms is the replicas' CPU per item in milliseconds.
func (c cost) replicaCPUms() float64 { return msPer(c.ReplicaCPU, c.Items) }

// pgCPUms is PostgreSQL's CPU per item in milliseconds.
func (c cost) pgCPUms() float64 { return msPer(c.PGCPU, c.Items) }

// perPGCore is the items a second one PostgreSQL core would sustain at
// pgCPUms a item: 1,000 ms over it. It leaves out what else bounds a
// database (its disk's flushes, lock waits), so it is a ceiling.
func (c cost) perPGCore() float64 {
	if c.PGCPU <= 0 {
		return 0
	}
	return float64(time.Second) / (float64(c.PGCPU) / float64(c.Items))
}

// totalCPUms is the CPU of the replicas and PostgreSQL per item.
func (c cost) totalCPUms() float64 { return msPer(c.ReplicaCPU+c.PGCPU, c.Items) }

// backendsCPUms is totalCPUms without the PostgreSQL server's own
// processes.
func (c cost) backendsCPUms() float64 { return msPer(c.ReplicaCPU+c.PGCPU-c.PGServerCPU, c.Items) }

// statementsPer is the statements sent per item.
func (c cost) statementsPer() float64 { return float64(c.Statements) / float64(c.Items) }

// walSyncsPer is the WAL flushes per item.
func (c cost) walSyncsPer() float64 { return float64(c.WALSyncs) / float64(c.Items) }

func msPer(d time.Duration, n int) float64 {
	return float64(d) / float64(time.Millisecond) / float64(n)
}

// latencies summarises commit-to-first-attempt times.
type latencies struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
	// Missing counts events that never arrived within the wait.
	Missing int `json:"missing"`
}

// summarise returns the p50, p99 and max of ds (nearest rank).
func summarise(ds []time.Duration, missing int) latencies {
	l := latencies{Count: len(ds), Missing: missing}
	if len(ds) == 0 {
		return l
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(i, 0)]
	}
	l.P50, l.P99, l.Max = rank(0.50), rank(0.99), s[len(s)-1]
	return l
}

// span is the range of one figure over the repetitions.
type span struct{ lo, hi float64 }

// spanOf returns the min and max of xs, ignoring NaNs.
func spanOf(xs []float64) span {
	sp := span{math.NaN(), math.NaN()}
	for _, x := range xs {
		if math.IsNaN(x) {
			continue
		}
		if math.IsNaN(sp.lo) || x < sp.lo {
			sp.lo = x
		}
		if math.IsNaN(sp.hi) || x > sp.hi {
			sp.hi = x
		}
	}
	return sp
}

// format writes the span with the given number of decimals: "lo-hi", or
// one number when both ends round the same.
func (sp span) format(decimals int) string {
	if math.IsNaN(sp.lo) {
		return "n/a"
	}
	lo := strconv.FormatFloat(sp.lo, 'f', decimals, 64)
	hi := strconv.FormatFloat(sp.hi, 'f', decimals, 64)
	if lo == hi {
		return lo
	}
	return lo + "-" + hi
}

// fmtSpan is spanOf(xs).format(decimals).
func fmtSpan(xs []float64, decimals int) string { return spanOf(xs).format(decimals) }
