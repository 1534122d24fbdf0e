package main

import (
	"math"
	"os"
	"testing"
	"time"
)

// TestChurnThird: the churn goal is the third drain's throughput over the
// first's, and a run of fewer drains has none.
func TestChurnThird(t *testing.T) {
	drain := func(perSecond int) churnDrain {
		return churnDrain{Cost: cost{Items: perSecond, Elapsed: time.Second}}
	}
	c := &churnResult{Drains: []churnDrain{drain(2000), drain(1000)}}
	if v, ok := churnThird(c); ok {
		t.Errorf("two drains: %v, true; want none", v)
	}
	c.Drains = append(c.Drains, drain(1800), drain(100))
	if v, ok := churnThird(c); !ok || math.Abs(v-0.9) > 1e-9 {
		t.Errorf("2000, 1000, 1800, 100 deliveries/s: %v, %v; want 0.9 (the third over the first)", v, ok)
	}
	if _, ok := churnThird(nil); ok {
		t.Error("a repetition without the scenario has a ratio")
	}
}

// TestMetBound: a goal's bound is 1 unless it says otherwise (0.9 for the
// churn's).
func TestMetBound(t *testing.T) {
	for _, c := range []struct {
		xs      []float64
		atLeast bool
		bound   float64
		want    string
	}{
		{[]float64{0.95, 1.2}, true, 0.9, "yes"},
		{[]float64{0.95, 0.89}, true, 0.9, "no"},
		{[]float64{0.95}, true, 1, "no"},
		{[]float64{0.5, math.NaN()}, false, 1, "yes"},
		{[]float64{math.NaN()}, true, 0.9, "n/a"},
	} {
		if got := met(c.xs, c.atLeast, c.bound); got != c.want {
			t.Errorf("met(%v, %v, %v) = %s; want %s", c.xs, c.atLeast, c.bound, got, c.want)
		}
	}
}

// TestParentOf reads a process's parent from /proc, as the private
// cluster's CPU is counted (the postmaster's children).
func TestParentOf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if got, want := parentOf(os.Getpid()), os.Getppid(); got != want {
		t.Errorf("parentOf(self) = %d; want %d", got, want)
	}
	if got := parentOf(-1); got != 0 {
		t.Errorf("parentOf(-1) = %d; want 0", got)
	}
}
