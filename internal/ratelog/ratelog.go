// Package ratelog decides when a repeated log line is written: at most once
// per interval, saying how many were left out since. An outage fails every
// request, and one line a request (12,838 for a 13 s outage) buries
// everything else.
package ratelog

import (
	"sync"
	"time"
)

// Every lets one event through per Interval on the clock Now. It is safe
// for concurrent use; the zero value is not: set both fields.
type Every struct {
	Interval time.Duration
	Now      func() time.Time

	mu         sync.Mutex
	last       time.Time // when the last event went through; zero before the first
	suppressed int
}

// Allow reports whether this event is to be logged and, if it is, how many
// events were held back since the last one logged.
func (e *Every) Allow() (ok bool, suppressed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.Now()
	if !e.last.IsZero() && now.Sub(e.last) < e.Interval {
		e.suppressed++
		return false, 0
	}
	suppressed, e.last, e.suppressed = e.suppressed, now, 0
	return true, suppressed
}
