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
