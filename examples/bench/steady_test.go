package main

import (
	"math"
	"path/filepath"
	"testing"
	"time"
)

// TestPartitionPIDs: the steady scenario's PostgreSQL CPU leaves out the
// publishers' backends, and counts them apart, a pid in neither list
// lost from neither.
func TestPartitionPIDs(t *testing.T) {
	cpu := map[int]time.Duration{10: time.Second, 11: 2 * time.Second, 12: 3 * time.Second}
	of, rest := partitionPIDs(cpu, []int{11, 99})
	if len(of) != 1 || of[11] != 2*time.Second {
		t.Errorf("of = %v; want 11: 2s", of)
	}
	if len(rest) != 2 || rest[10] != time.Second || rest[12] != 3*time.Second {
		t.Errorf("rest = %v; want 10: 1s, 12: 3s", rest)
	}
	if of, rest := partitionPIDs(nil, []int{1}); len(of)+len(rest) != 0 {
		t.Errorf("no processes: %v, %v; want none", of, rest)
	}
}

// TestSteadyOverDrain: the steady goal is CPU (replica and PostgreSQL)
// per delivery at the steady rate over the drain's.
func TestSteadyOverDrain(t *testing.T) {
	s := &steadyResult{Cost: cost{Items: 1000, ReplicaCPU: 600 * time.Millisecond, PGCPU: 400 * time.Millisecond}} // 1 ms each
	d := &drainResult{Cost: cost{Items: 4000, ReplicaCPU: 1200 * time.Millisecond, PGCPU: 800 * time.Millisecond}} // 0.5 ms each
	if v, ok := steadyOverDrain(s, d); !ok || math.Abs(v-2) > 1e-9 {
		t.Errorf("1 ms over 0.5 ms per delivery: %v, %v; want 2", v, ok)
	}
	if _, ok := steadyOverDrain(s, nil); ok {
		t.Error("a repetition without the drain has a ratio")
	}
	if _, ok := steadyOverDrain(nil, d); ok {
		t.Error("a repetition without the steady rate has a ratio")
	}
	if _, ok := steadyOverDrain(s, &drainResult{Cost: cost{Items: 10}}); ok {
		t.Error("a drain that used no CPU tick gives a ratio")
	}
}

// TestSteadyOverDrainBackends: the reference ratio leaves the server's
// own processes out on both sides.
func TestSteadyOverDrainBackends(t *testing.T) {
	// 1,000 deliveries: replica 0.6 ms, PostgreSQL 0.9 ms each, 0.5 of it the server's own.
	s := &steadyResult{Cost: cost{Items: 1000, ReplicaCPU: 600 * time.Millisecond, PGCPU: 900 * time.Millisecond, PGServerCPU: 500 * time.Millisecond}}
	// 2,000 deliveries: 0.25 + 0.3 ms each, 0.05 of it the server's own.
	d := &drainResult{Cost: cost{Items: 2000, ReplicaCPU: 500 * time.Millisecond, PGCPU: 600 * time.Millisecond, PGServerCPU: 100 * time.Millisecond}}
	if v, ok := steadyOverDrainBackends(s, d); !ok || math.Abs(v-2) > 1e-9 {
		t.Errorf("1.0 ms over 0.5 ms per delivery without the server: %v, %v; want 2", v, ok)
	}
	if v, ok := steadyOverDrain(s, d); !ok || math.Abs(v-1.5/0.55) > 1e-9 {
		t.Errorf("with the server: %v, %v; want 1.5/0.55", v, ok)
	}
}

// TestServerProcesses: serverCPU's rule, servesDatabase of no database,
// keeps the server's own processes and no backend.
func TestServerProcesses(t *testing.T) {
	for _, c := range []struct {
		title string
		want  bool
	}{
		{"postgres: 15/main: walwriter", true},
		{"postgres: 15/main: checkpointer", true},
		{"/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main", true},
		{"postgres: 15/main: postgres bench_ab_1 127.0.0.1(41234) idle", false},
		{"postgres: 15/main: autovacuum worker bench_ab_1", false},
	} {
		if got := servesDatabase(c.title, ""); got != c.want {
			t.Errorf("servesDatabase(%q, \"\") = %v, want %v", c.title, got, c.want)
		}
	}
}

// TestLatencyRatio: deskkit's p99 over River's at one rate.
func TestLatencyRatio(t *testing.T) {
	d := &latencyResult{Latency: latencies{P99: 30 * time.Millisecond}}
	r := &latencyResult{Latency: latencies{P99: 40 * time.Millisecond}}
	if v, ok := latencyRatio(d, r); !ok || math.Abs(v-0.75) > 1e-9 {
		t.Errorf("30 ms over 40 ms: %v, %v; want 0.75", v, ok)
	}
	if _, ok := latencyRatio(d, nil); ok {
		t.Error("a repetition without River's latency has a ratio")
	}
	if _, ok := latencyRatio(d, &latencyResult{}); ok {
		t.Error("River without a p99 gives a ratio")
	}
}

// TestSQLiteOverPostgres: the SQLite goal is its drain's throughput over
// PostgreSQL's, held to at least 0.5.
func TestSQLiteOverPostgres(t *testing.T) {
	sq := &drainResult{Cost: cost{Items: 600, Elapsed: time.Second}}
	pg := &drainResult{Cost: cost{Items: 2000, Elapsed: 2 * time.Second}}
	v, ok := sqliteOverPostgres(sq, pg)
	if !ok || math.Abs(v-0.6) > 1e-9 {
		t.Errorf("600 over 1,000 deliveries/s: %v, %v; want 0.6", v, ok)
	}
	if _, ok := sqliteOverPostgres(nil, pg); ok {
		t.Error("a repetition without SQLite has a ratio")
	}
	g := goal{atLeast: true, bound: 0.5}
	if got := met([]float64{v, 0.49}, g.atLeast, g.limit()); got != "no" {
		t.Errorf("0.6 and 0.49 against >= 0.5: %s; want no", got)
	}
	if got := (goal{}).limit(); got != 1 {
		t.Errorf("a goal without a bound is held to %v; want 1", got)
	}
}

// TestOpenSQLite: the replica's SQLite file runs in the write-ahead log
// with foreign keys on, as deskkit's documentation asks of a host.
func TestOpenSQLite(t *testing.T) {
	db, err := openDatabase(sqliteScheme+filepath.Join(t.TempDir(), "bench.db"), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	var fk int
	if err := db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(t.Context(), "PRAGMA foreign_keys").Scan(&fk); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || fk != 1 {
		t.Errorf("journal_mode %q, foreign_keys %d; want wal, 1", mode, fk)
	}
}
