package main

import (
	"math"
	"os"
	"testing"
	"time"
)

func TestSummarise(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // 100 ms down to 1 ms, unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := summarise(ds, 2)
	want := latencies{Count: 100, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond, Missing: 2}
	if got != want {
		t.Errorf("summarise = %+v, want %+v", got, want)
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("summarise sorted its argument in place")
	}
	if got := summarise(nil, 0); got != (latencies{}) {
		t.Errorf("summarise(nil) = %+v, want zero", got)
	}
}

func TestSpanFormat(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want string
	}{
		{[]float64{3.14159, 2.5, math.NaN(), 4}, "2.50-4.00"},
		{[]float64{1.001, 1.004}, "1.00"},
		{[]float64{math.NaN()}, "n/a"},
		{nil, "n/a"},
	} {
		if got := fmtSpan(c.xs, 2); got != c.want {
			t.Errorf("fmtSpan(%v) = %q, want %q", c.xs, got, c.want)
		}
	}
}

func TestServesDatabase(t *testing.T) {
	for _, c := range []struct {
		title string
		want  bool
	}{
		{"postgres: 15/main: postgres bench_ab_1 127.0.0.1(41234) idle", true},
		{"postgres: 15/main: postgres bench_ab_12 127.0.0.1(41234) idle", false},
		{"postgres: 15/main: postgres test 127.0.0.1(41234) INSERT", false},
		{"postgres: 15/main: autovacuum worker bench_ab_1", true},
		{"postgres: 15/main: autovacuum worker test", false},
		{"postgres: 15/main: walwriter", true},
		{"postgres: 15/main: checkpointer", true},
		{"/usr/lib/postgresql/15/bin/postgres -D /var/lib/postgresql/15/main", true},
	} {
		if got := servesDatabase(c.title, "bench_ab_1"); got != c.want {
			t.Errorf("servesDatabase(%q) = %v, want %v", c.title, got, c.want)
		}
	}
}

func TestProcCPU(t *testing.T) {
	// Burn some CPU, so that this process has used at least a tick.
	deadline := time.Now().Add(50 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	got, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if got < tickDuration {
		t.Errorf("procCPU(self) = %v after busy work, want at least %v", got, tickDuration)
	}
	if _, err := procCPU(-1); err == nil {
		t.Error("procCPU(-1) succeeded")
	}
}
