package main

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// adaptiveTables writes the adaptive scenarios' tables and goals, for
// those -scenarios ran.
func adaptiveTables(w io.Writer, o options, reps []*repResult) {
	a := o.adaptive
	type row struct {
		name     string
		f        func(r *repResult) (float64, bool)
		decimals int
	}
	write := func(rows []row) {
		var out [][]string
		for _, x := range rows {
			out = append(out, []string{x.name, fmtSpan(over(reps, x.f), x.decimals)})
		}
		table(w, []string{"figure", "min-max"}, out)
	}
	slow := func(f func(s *slowResult) float64) func(r *repResult) (float64, bool) {
		return func(r *repResult) (float64, bool) {
			if r.Slow == nil {
				return 0, false
			}
			return f(r.Slow), true
		}
	}
	throttled := func(f func(t *throttledResult) float64) func(r *repResult) (float64, bool) {
		return func(r *repResult) (float64, bool) {
			if r.Throttled == nil {
				return 0, false
			}
			return f(r.Throttled), true
		}
	}
	rate := func(f func(l *rateResult) float64) func(r *repResult) (float64, bool) {
		return func(r *repResult) (float64, bool) {
			if r.RateLimit == nil {
				return 0, false
			}
			return f(r.RateLimit), true
		}
	}
	// atFloor is a floor time in ms, NaN if the endpoint never got down
	// to the floor while slow.
	atFloor := func(d float64) float64 {
		if d < 0 {
			return math.NaN()
		}
		return d
	}
	if o.scenarios["slow"] {
		fmt.Fprintf(w, "### 9. An endpoint that turns slow (1 replica, %d workers)\n\n", a.slowWorkers)
		fmt.Fprintf(w, "Tenant A: 1 webhook x %d events; tenant B: %d webhooks x %d events. A's endpoint answers after %s from when half of A's deliveries arrived, for %s, then at once again. In flight is counted at A's endpoint; the floor is %d. B's deliveries/s are from B's first arrival to the slowdown, and over the slow time. The JSON has the in-flight series (the most in each %s).\n\n",
			a.slowEvents, a.slowBChannels, a.slowBEvents, a.slowDelay, a.slowDuration, a.slowFloor, sampleInterval)
		write([]row{
			{"A's endpoint: most in flight, whole drain", slow(func(s *slowResult) float64 { return float64(s.MaxInFlight) }), 0},
			{"A's endpoint: most in flight while slow", slow(func(s *slowResult) float64 { return float64(s.MaxInFlightSlow) }), 0},
			{fmt.Sprintf("ms from the slowdown until in flight first <= %d", a.slowFloor), slow(func(s *slowResult) float64 { return atFloor(ms(s.FirstAtFloor)) }), 0},
			{fmt.Sprintf("ms from the slowdown until in flight <= %d for the rest of the slow time", a.slowFloor), slow(func(s *slowResult) float64 { return atFloor(ms(s.SettledAtFloor)) }), 0},
			{"B deliveries/s before the slowdown", slow(func(s *slowResult) float64 { return s.BBefore }), 0},
			{"B deliveries/s while A is slow", slow(func(s *slowResult) float64 { return nanIf(s.BRanOut, s.BDuring) }), 0},
			{"s from A's recovery until the rest of A's deliveries arrived", slow(func(s *slowResult) float64 { return nanIf(s.ADrainedWhileSlow, s.ADrainAfter.Seconds()) }), 1},
		})
	}
	if o.scenarios["throttled"] {
		fmt.Fprintf(w, "### 10. An endpoint that answers 429 (1 replica)\n\n")
		fmt.Fprintf(w, "1 webhook x %d events; its endpoint answers 429 with Retry-After: 1 for %s from its first request, then 204. An attempt is in a window if it arrived within %s after a 429 was answered. The drain is timed from the recovery; deliveries not through %s after it are counted as left (the time is then that wait, a lower bound).\n\n",
			a.throttleEvents, a.throttleDuration, throttleWindow, a.recoverWait)
		write([]row{
			{"requests", throttled(func(t *throttledResult) float64 { return float64(t.Attempts) }), 0},
			{"answered 429", throttled(func(t *throttledResult) float64 { return float64(t.Refused) }), 0},
			{"requests within 1 s after a 429", throttled(func(t *throttledResult) float64 { return float64(t.InWindow) }), 0},
			{"of those, the latest after its 429, ms", throttled(func(t *throttledResult) float64 {
				if len(t.InWindowAfter) == 0 {
					return math.NaN()
				}
				return ms(slices.Max(t.InWindowAfter))
			}), 1},
			{"s from the recovery until every delivery succeeded", throttled(func(t *throttledResult) float64 { return t.DrainAfter.Seconds() }), 1},
			{"deliveries left after the wait", throttled(func(t *throttledResult) float64 { return float64(t.Left) }), 0},
		})
	}
	if o.scenarios["ratelimit"] {
		fmt.Fprintf(w, "### 11. A channel with a rate limit (%d replicas)\n\n", a.rateReplicas)
		fmt.Fprintf(w, "1 webhook x %d events, rate limit %g messages/s, measured at the receiver for %s from the first arrival (every request, repeats included).\n\n",
			a.rateEvents, a.rateLimit, a.rateDuration)
		write([]row{
			{"mean requests/s", rate(func(l *rateResult) float64 { return l.Mean }), 1},
			{"most requests in any one-second window", rate(func(l *rateResult) float64 { return float64(l.MaxWindow) }), 0},
			{"fewest requests in a whole second", rate(func(l *rateResult) float64 { return float64(minOf(l.PerSecond)) }), 0},
			{"backlog ran out within the measurement (1: yes)", rate(func(l *rateResult) float64 { return b2f(l.RanOut) }), 0},
		})
	}
	var rows [][]string
	add := func(name string, xs []float64, want string, ok func(x float64) bool) {
		if !hasFigure(xs) {
			return
		}
		verdict := "yes"
		for _, x := range xs {
			if !math.IsNaN(x) && !ok(x) {
				verdict = "no"
			}
		}
		rows = append(rows, []string{name, fmtSpan(xs, 2), want, verdict})
	}
	// A rise is no harm: it is the CPU A's fast deliveries no longer take
	// where the machine, not the workers, bounds the drain.
	add("B's deliveries/s while A is slow / before", over(reps, slow(func(s *slowResult) float64 { return s.bRatio() })), ">= 0.9",
		func(x float64) bool { return x >= 0.9 })
	add("requests within 1 s after a 429", over(reps, throttled(func(t *throttledResult) float64 { return float64(t.InWindow) })), "0",
		func(x float64) bool { return x == 0 })
	bound := math.Floor(a.rateLimit * 1.02)
	add(fmt.Sprintf("most requests in a one-second window / %g", bound), over(reps, rate(func(l *rateResult) float64 { return float64(l.MaxWindow) / bound })), "<= 1.0",
		func(x float64) bool { return x <= 1 })
	least := a.rateLimit * 0.95
	add(fmt.Sprintf("mean requests/s / %g", least), over(reps, rate(func(l *rateResult) float64 { return nanIf(l.RanOut, l.Mean/least) })), ">= 1.0",
		func(x float64) bool { return x >= 1 })
	if len(rows) > 0 {
		fmt.Fprintf(w, "### Goals (issue 29, section 2), within each repetition, min-max\n\n")
		table(w, []string{"goal", "figure", "wanted", "met in every repetition"}, rows)
	}
}

// nanIf is NaN if cond, else x.
func nanIf(cond bool, x float64) float64 {
	if cond {
		return math.NaN()
	}
	return x
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// minOf is the least of xs, 0 if none.
func minOf(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	m := xs[0]
	for _, x := range xs[1:] {
		m = min(m, x)
	}
	return m
}

// hasFigure tells whether any of xs is a number.
func hasFigure(xs []float64) bool {
	for _, x := range xs {
		if !math.IsNaN(x) {
			return true
		}
	}
	return false
}
