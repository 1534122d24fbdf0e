package outbox

import (
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestNextFlushWait: a flush waits longer, doubling up to trickleFlush,
// while each records fewer than trickleOutcomes, and Config.FlushEvery
// again once that many come together or a claim was capped.
func TestNextFlushWait(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	w := fairWorker(t, db, newFlowScript(), clocktest.New(t0), Config{FlushEvery: 5 * time.Millisecond})
	w.capped.Store(false)
	wait := w.cfg.FlushEvery
	var got []time.Duration
	for n := range 4 {
		wait = w.nextFlushWait(wait, n%trickleOutcomes)
		got = append(got, wait)
	}
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, trickleFlush, trickleFlush}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits while one outcome a flush: %v, want %v", got, want)
		}
	}
	if wait := w.nextFlushWait(trickleFlush, trickleOutcomes); wait != 5*time.Millisecond {
		t.Errorf("after a flush of %d: %v, want FlushEvery", trickleOutcomes, wait)
	}
	w.capped.Store(true)
	if wait := w.nextFlushWait(trickleFlush, 1); wait != 5*time.Millisecond {
		t.Errorf("a capped worker's: %v, want FlushEvery", wait)
	}
	slow := fairWorker(t, db, newFlowScript(), clocktest.New(t0), Config{FlushEvery: time.Second})
	slow.capped.Store(false)
	if wait := slow.nextFlushWait(time.Second, 1); wait != time.Second {
		t.Errorf("with FlushEvery over trickleFlush: %v, want FlushEvery", wait)
	}
}
