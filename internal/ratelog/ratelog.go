// Package ratelog decides when a repeated log line is written: at most once
// per interval, saying how many were left out since, and once more when
// the run of events ends, with the count left out since the last line. An
// outage fails every request, and one line a request (12,838 for a 13 s
// outage) buries everything else; a count that comes out only at the next
// outage (106 s later in issue 12) tells nobody how long this one was.
package ratelog

import (
	"sync"
	"sync/atomic"
	"time"
)

// Every lets one event through per Interval on the clock Now. It is safe
// for concurrent use; the zero value is not: set both fields.
type Every struct {
	Interval time.Duration
	Now      func() time.Time

	mu         sync.Mutex
	last       time.Time // when the last event went through; zero before the first and after End
	lastEnd    time.Time // when End last reported
	suppressed int
	pending    atomic.Bool // suppressed > 0: End has something to report
}

// Allow reports whether this event is to be logged and, if it is, how many
// events were held back since the last one logged.
func (e *Every) Allow() (ok bool, suppressed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.Now()
	if !e.last.IsZero() && now.Sub(e.last) < e.Interval {
		e.suppressed++
		e.pending.Store(true)
		return false, 0
	}
	suppressed, e.last, e.suppressed = e.suppressed, now, 0
	e.pending.Store(false)
	return true, suppressed
}

// End marks the end of a run of events (for an outage: the first success
// after failures). If events were held back since the last one logged, it
// reports true and how many, for a closing line, and the next event is
// logged at once, as the start of a new run. It reports at most once per
// Interval, so that a dependency that fails and recovers many times a
// second still logs a few lines per interval: a count it does not report
// yet comes out at a later End, or with the next event logged. Without
// held-back events it costs an atomic load, so it may be called on every
// success.
func (e *Every) End() (ok bool, suppressed int) {
	if !e.pending.Load() {
		return false, 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.suppressed == 0 {
		return false, 0
	}
	now := e.Now()
	if !e.lastEnd.IsZero() && now.Sub(e.lastEnd) < e.Interval {
		return false, 0
	}
	suppressed, e.suppressed, e.lastEnd, e.last = e.suppressed, 0, now, time.Time{}
	e.pending.Store(false)
	return true, suppressed
}
