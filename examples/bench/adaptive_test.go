package main

import (
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// at returns times t0 + each of ms milliseconds.
func at(t0 time.Time, ms ...int) []time.Time {
	var out []time.Time
	for _, m := range ms {
		out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
	}
	return out
}

func TestInWindows(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name               string
		arrivals, refusals []int // ms from t0
		want               []int // ms after the latest refusal
	}{
		{"no refusal", []int{0, 10, 2000}, nil, nil},
		// Arrivals before the first 429 was answered (in flight with
		// it) are not in a window; one at the instant of the answer is.
		{"in flight beside the 429", []int{0, 1, 2, 3}, []int{5}, nil},
		{"at the answer", []int{5}, []int{5}, []int{0}},
		{"inside and at the window's end", []int{0, 6, 500, 1004, 1005, 1006}, []int{5}, []int{1, 495, 999}},
		// The latest refusal before an arrival decides: a second 429
		// opens a new window.
		{"windows in a row", []int{0, 900, 1200, 1900, 2200, 3000}, []int{100, 1100}, []int{800, 100, 800}},
		{"arrival after every window", []int{0, 5000}, []int{100, 200}, nil},
	} {
		var want []time.Duration
		for _, m := range c.want {
			want = append(want, time.Duration(m)*time.Millisecond)
		}
		if got := inWindows(at(t0, c.arrivals...), at(t0, c.refusals...), time.Second); !slices.Equal(got, want) {
			t.Errorf("%s: inWindows = %v, want %v", c.name, got, want)
		}
	}
}

func TestMaxInWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		ts   []int
		want int
	}{
		{"none", nil, 0},
		{"one", []int{7}, 1},
		// [0, 1000) holds 0, 500, 999; 1000 starts the next window.
		{"half-open", []int{0, 500, 999, 1000}, 3},
		// The busiest window straddles two whole seconds: 4 in
		// [900, 1900), while each whole second has 2 or 3.
		{"across seconds", []int{100, 900, 950, 1100, 1200, 2500}, 4},
		{"equal times", []int{10, 10, 10, 1010}, 3},
	} {
		if got := maxInWindow(at(t0, c.ts...), time.Second); got != c.want {
			t.Errorf("%s: maxInWindow = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestPerSecondAndWithin(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	ts := at(t0, -1, 0, 999, 1000, 1500, 2999, 3000)
	if got, want := perSecond(ts, t0, 3*time.Second), []int{2, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("perSecond = %v, want %v", got, want)
	}
	// A part second at the end is a bin of its own.
	if got, want := perSecond(ts, t0, 2500*time.Millisecond), []int{2, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("perSecond over 2.5 s = %v, want %v", got, want)
	}
	if got, want := within(ts, t0, 3*time.Second), at(t0, 0, 999, 1000, 1500, 2999); !slices.Equal(got, want) {
		t.Errorf("within = %v, want %v", got, want)
	}
}

func TestFloorTimes(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	ch := func(pairs ...int) []inFlightChange { // ms, n, ms, n, ...
		var out []inFlightChange
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, inFlightChange{t0.Add(time.Duration(pairs[i]) * time.Millisecond), pairs[i+1]})
		}
		return out
	}
	ms := time.Millisecond
	from, to := t0.Add(100*ms), t0.Add(1000*ms)
	for _, c := range []struct {
		name           string
		changes        []inFlightChange
		first, settled time.Duration
		ok             bool
	}{
		{"at the floor already", ch(0, 3, 50, 4, 300, 2), 0, 0, true},
		{"drops, rises, drops for good", ch(0, 8, 150, 4, 200, 6, 400, 4, 900, 3), 50 * ms, 300 * ms, true},
		{"never down", ch(0, 8, 500, 7), 0, 0, false},
		// Down only after to: outside the slow time.
		{"down after the end", ch(0, 8, 1000, 1), 0, 0, false},
		{"up again at the end", ch(0, 8, 200, 4, 999, 5), 100 * ms, 900 * ms, true},
	} {
		first, settled, ok := floorTimes(c.changes, 4, from, to)
		if first != c.first || settled != c.settled || ok != c.ok {
			t.Errorf("%s: floorTimes = %v, %v, %v; want %v, %v, %v", c.name, first, settled, ok, c.first, c.settled, c.ok)
		}
	}
	if got := maxInFlight(ch(0, 9, 150, 4, 200, 6, 400, 4, 1000, 12), from, to); got != 9 {
		t.Errorf("maxInFlight = %d, want 9 (in flight at from)", got)
	}
	if got := maxInFlight(ch(0, 2, 150, 4, 200, 6, 1000, 12), from, to); got != 6 {
		t.Errorf("maxInFlight = %d, want 6", got)
	}
}

func TestRateBetween(t *testing.T) {
	s := func(atMs int, n int64) slowSample {
		return slowSample{At: time.Duration(atMs) * time.Millisecond, BArrived: n}
	}
	samples := []slowSample{s(100, 0), s(200, 10), s(300, 50), s(400, 90), s(500, 100)}
	// From the first sample at or after 150 ms (200: 10) to the last at or
	// before 420 ms (400: 90): 80 in 0.2 s.
	if got := rateBetween(samples, 150*time.Millisecond, 420*time.Millisecond); got != 400 {
		t.Errorf("rateBetween = %v, want 400", got)
	}
	if got := rateBetween(samples, 450*time.Millisecond, 480*time.Millisecond); !math.IsNaN(got) {
		t.Errorf("rateBetween over no sample span = %v, want NaN", got)
	}
}

// TestThrottledEndpoint checks what the throttled endpoint answers and
// logs: 429 with Retry-After: 1 while throttled, then 204, each refusal
// logged.
func TestThrottledEndpoint(t *testing.T) {
	e := &throttledEndpoint{duration: time.Hour, ok: map[string]bool{}}
	req := httptest.NewRequest(http.MethodPost, throttlePath+"t1/c1", nil)
	req.Header.Set("webhook-id", "msg_1")
	w := httptest.NewRecorder()
	e.serve(w, req, time.Now())
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("throttled: %d, Retry-After %q; want 429, 1", w.Code, w.Header().Get("Retry-After"))
	}
	e.start = e.start.Add(-2 * time.Hour) // the throttle over
	w = httptest.NewRecorder()
	e.serve(w, req, time.Now())
	if w.Code != http.StatusNoContent {
		t.Errorf("after the throttle: %d, want 204", w.Code)
	}
	if n, _ := e.succeeded(); n != 1 || len(e.arrivals) != 2 || len(e.refusals) != 1 {
		t.Errorf("logged %d succeeded, %d arrivals, %d refusals; want 1, 2, 1", n, len(e.arrivals), len(e.refusals))
	}
}
