package outbox

import (
	"context"
	"time"
)

// idle reports whether the worker holds no delivery whose lease counts
// toward a cap in its claims: none claimed (queued, in an attempt, or
// waiting for the flusher to take its outcome), and on SQLite, whose
// claim counts the leases of ended attempts until they are recorded, no
// outcome waiting for its flush.
func (w *Worker) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.claimed == 0 && (w.pg || len(w.ended) == 0)
}

// tookAll reports whether a claim that asked for asked deliveries and
// took batch, made from the first target while the worker was idle and
// leaving the cursor there (it reached every target with pending
// deliveries), took every due delivery it could: it took fewer than it
// asked for, and no limit of the claim (claim.go) may have stopped it.
// A target's share of a claim of 3 or more is at least 2 deliveries, so
// a target that gave one gave all it had, unless its cap stopped it: the
// claim reports a target it found at its cap (capped, full), and an idle
// worker's own leases count toward no cap, so only another worker's
// leases, ended later, can have (the poll finds those). A tenant that
// held nothing is stopped at TenantSlots. Run then waits to be woken
// instead of claiming again at once, which at low rates would find
// nothing, a claim per delivery for nothing.
func (w *Worker) tookAll(batch []Delivery, asked int) bool {
	if len(batch) == 0 || len(batch) >= asked || asked < 3 || w.capped.Load() || w.full.Load() {
		return false
	}
	targets := make(map[target]struct{}, len(batch))
	tenants := make(map[int64]int, 1)
	for _, d := range batch {
		t := target{d.TenantID, d.TargetID}
		if _, ok := targets[t]; ok {
			return false
		}
		targets[t] = struct{}{}
		if tenants[d.TenantID]++; tenants[d.TenantID] >= w.cfg.TenantSlots {
			return false
		}
	}
	return true
}

// lingerFor is how long Run waits, once woken, for more wakes before it
// claims: at a few hundred events a second, one claim then takes the
// events of that time together instead of one each (at 500 a second,
// 0.53 claims a delivery instead of 0.73 to 0.87 with 1 ms; it adds
// about 1 ms to the median from commit to attempt).
const lingerFor = 2 * time.Millisecond

// maxLinger is the longest Run lingers: while claims take one delivery
// each (a steady trickle, 100 events a second), the linger doubles from
// lingerFor up to this, so that a claim takes the events of that time
// together; it adds at most this to a delivery's time from commit to
// attempt, and only at such rates.
const maxLinger = 10 * time.Millisecond

// nextLinger is the linger after a claim that took n deliveries, the last
// linger being linger: doubled, up to maxLinger, after a claim of one,
// kept after a claim of two or three, lingerFor after a claim of more
// (events come together: the linger's batch of wakes ends it anyway) or
// none.
func nextLinger(linger time.Duration, n int) time.Duration {
	switch {
	case n == 1:
		return min(2*linger, maxLinger)
	case n == 2 || n == 3:
		return linger
	}
	return lingerFor
}

// linger waits, after a wake, until a batch's worth of wakes (Run's
// ahead) came since woken (w.wakes at the last claim), or timeout
// delivers. It reports false when ctx is done first.
func (w *Worker) linger(ctx context.Context, timeout <-chan time.Time, woken int64) bool {
	want := int64(w.ahead())
	for w.wakes.Load()-woken < want {
		select {
		case <-ctx.Done():
			return false
		case <-w.wake:
		case <-timeout:
			return true
		}
	}
	return true
}
