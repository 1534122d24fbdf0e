package ratelog_test

import (
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/ratelog"
)

func TestEvery(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	e := &ratelog.Every{Interval: 10 * time.Second, Now: func() time.Time { return now }}
	type step struct {
		advance    time.Duration
		ok         bool
		suppressed int
	}
	for i, s := range []step{
		{0, true, 0},                // the first event goes through
		{time.Second, false, 0},     // within the interval: held back
		{5 * time.Second, false, 0}, // still within
		{4 * time.Second, true, 2},  // 10 s after the first: through, two held back
		{9 * time.Second, false, 0}, // within the new interval
		{time.Minute, true, 1},
	} {
		now = now.Add(s.advance)
		ok, suppressed := e.Allow()
		if ok != s.ok || suppressed != s.suppressed {
			t.Errorf("step %d: Allow() = %v, %d; want %v, %d", i, ok, suppressed, s.ok, s.suppressed)
		}
	}
}

// Issue 12, 1.7: the count of an outage came out only with the next
// outage's first line. End reports it when the outage ends.
func TestEnd(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	e := &ratelog.Every{Interval: 10 * time.Second, Now: func() time.Time { return now }}
	type step struct {
		advance    time.Duration
		end        bool // End rather than Allow
		ok         bool
		suppressed int
	}
	for i, s := range []step{
		{0, true, false, 0},               // nothing happened: nothing to end
		{0, false, true, 0},               // an outage: its first event is logged
		{time.Second, true, false, 0},     // a success with nothing held back
		{time.Second, false, false, 0},    // held back
		{time.Second, false, false, 0},    // held back
		{time.Second, true, true, 2},      // the outage ends: its count, now
		{0, true, false, 0},               // reported once
		{time.Second, false, true, 0},     // a new outage is logged at once
		{time.Second, false, false, 0},    // held back
		{time.Second, true, false, 0},     // ends again within the interval: not yet
		{time.Second, false, false, 0},    // held back; 2 now
		{10 * time.Second, true, true, 2}, // the interval passed: reported
		{time.Minute, false, true, 0},
		{time.Second, false, false, 0},
		{time.Minute, false, true, 1}, // no End: the next event logged carries it
		{0, true, false, 0},
	} {
		now = now.Add(s.advance)
		var ok bool
		var suppressed int
		if s.end {
			ok, suppressed = e.End()
		} else {
			ok, suppressed = e.Allow()
		}
		if ok != s.ok || suppressed != s.suppressed {
			t.Errorf("step %d: = %v, %d; want %v, %d", i, ok, suppressed, s.ok, s.suppressed)
		}
	}
}
