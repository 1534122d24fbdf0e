package outbox

import (
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/clocktest"
)

// TestDepthFollowsTheBacklog: the deliveries Run lets wait for a slot
// double while claims take at least that many, up to BatchSize, and come
// back to the slots' count after a claim that the due deliveries left
// less than half full, or one of them waited too long for its slot; a
// claim that caps stopped does not bring it back.
func TestDepthFollowsTheBacklog(t *testing.T) {
	w := &Worker{cfg: Config{Concurrency: 8, BatchSize: 32}}
	steps := []struct {
		n, asked     int
		capped, slow bool
		want         int
	}{
		{n: 16, asked: 16, want: 16},
		{n: 17, asked: 24, want: 32},
		{n: 32, asked: 40, want: 32}, // BatchSize
		{n: 10, asked: 40, capped: true, want: 32},
		{n: 10, asked: 40, want: 8},
		{n: 8, asked: 16, want: 16},
		{n: 16, asked: 24, slow: true, want: 8},
		{n: 1, asked: 16, want: 8}, // a trickle
	}
	for i, s := range steps {
		w.capped.Store(s.capped)
		w.slow = s.slow
		w.follow(s.n, s.asked)
		if got := w.ahead(); got != s.want {
			t.Fatalf("step %d (%+v): depth %d, want %d", i, s, got, s.want)
		}
	}
	if w.slow {
		t.Error("follow left the worker marked slow")
	}
}

// TestWaitedTooLong: a delivery that leaves the queue with less than half
// its lease left is not attempted; one that waited longer than an eighth
// of it marks the worker slow.
func TestWaitedTooLong(t *testing.T) {
	clock := clocktest.New(t0)
	w := &Worker{cfg: Config{Lease: 80 * time.Second, Now: clock.Now}}
	d := Delivery{leaseEnd: t0.Add(80 * time.Second)}
	clock.Advance(5 * time.Second)
	if w.waited(d) || w.slow {
		t.Fatalf("after 5 s of 80: waited %v, slow %v", w.waited(d), w.slow)
	}
	clock.Advance(10 * time.Second)
	if w.waited(d) || !w.slow {
		t.Fatalf("after 15 s of 80: waited %v, slow %v; want false, true", w.waited(d), w.slow)
	}
	clock.Advance(26 * time.Second)
	if !w.waited(d) {
		t.Fatal("after 41 s of 80 (39 s left): not waited too long")
	}
}

// TestGatherSkipsSlowAttempts: a capped worker gathering its attempts'
// ends waits for a queued delivery or an attempt younger than gatherFor,
// not for one that has run longer (a receiver turned slow).
func TestGatherSkipsSlowAttempts(t *testing.T) {
	now := time.Unix(1000, 0)
	w := &Worker{attempts: map[int64]time.Time{1: now.Add(-time.Second)}}
	if w.endingSoon(now) {
		t.Error("waits for an attempt running for a second")
	}
	w.attempts[2] = now.Add(-gatherFor / 2)
	if !w.endingSoon(now) {
		t.Error("does not wait for an attempt that just started")
	}
	delete(w.attempts, 2)
	w.queue = []queued{{}}
	if !w.endingSoon(now) {
		t.Error("does not wait for a queued delivery")
	}
}
