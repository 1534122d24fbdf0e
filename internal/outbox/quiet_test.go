package outbox

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// quietRun runs w until the test ends, with Run's recorded outcomes
// counted by h; it returns a function that waits until n outcomes in all
// are recorded and the worker holds nothing (its flush over), for at
// most 10 s.
func quietRun(t *testing.T, w *Worker, s *script) func(n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		w.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return func(n int) {
		t.Helper()
		guard := time.Now()
		for {
			s.mu.Lock()
			recorded := len(s.recorded)
			s.mu.Unlock()
			w.mu.Lock()
			settled := w.claimed == 0 && len(w.ended) == 0
			w.mu.Unlock()
			if recorded >= n && settled {
				return
			}
			if time.Since(guard) > 10*time.Second {
				t.Fatalf("%d of %d outcomes recorded in 10 s", recorded, n)
			}
			runtime.Gosched()
		}
	}
}

// TestRunWaitsForWorkAfterTakingAll: a claim that took every due
// delivery (fewer than it asked for, one per target, none held back by a
// cap) is not followed by another until a wake, while a listener holds:
// at a few events a second each claim would otherwise be followed by one
// that finds nothing.
func TestRunWaitsForWorkAfterTakingAll(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		for i, target := range []int64{1, 2, 3} {
			enqueue(t, db, event(fmt.Sprintf("msg_%d", i)), clock.Now(), target)
		}
		s := newScript()
		w, err := NewWorker(db, Config{Kind: "test", Handler: s, Lease: 30 * time.Second, Poll: time.Hour, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		// As Listen counts itself once its LISTEN holds: no quick polls.
		w.listening.Add(1)
		settled := quietRun(t, w, s)
		settled(3)
		enqueue(t, db, event("msg_last"), clock.Now(), 4)
		w.Wake()
		settled(4)
		// Run's first claim (at its start) took three, the wake's the
		// fourth; none came between.
		if got := w.claimClock.claims.Load(); got != 2 {
			t.Errorf("%d claims for two that found deliveries; want 2", got)
		}
		if got := s.total(); got != 4 {
			t.Errorf("%d attempts; want 4", got)
		}
	})
}

// TestRunClaimsAgainAfterATenantsShare: a claim that a tenant's share of
// the slots stopped (a tenant that held nothing takes TenantSlots, fewer
// than the claim asked for, and the claim does not report it capped) is
// followed by the next as attempts end, without a wake (the poll is an
// hour).
func TestRunClaimsAgainAfterATenantsShare(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		for i, target := range []int64{1, 2, 3, 4, 5, 6} {
			enqueue(t, db, event(fmt.Sprintf("msg_%d", i)), clock.Now(), target)
		}
		s := newScript()
		w, err := NewWorker(db, Config{Kind: "test", Handler: s, Lease: 30 * time.Second, Poll: time.Hour,
			Concurrency: 8, TenantSlots: 2, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		w.listening.Add(1)
		quietRun(t, w, s)(6)
		if got := s.total(); got != 6 {
			t.Errorf("%d attempts; want 6", got)
		}
	})
}

// TestLinger: once woken, Run waits for a batch's worth of wakes (Run's
// ahead) or the linger's timeout, whichever comes first, and stops
// waiting when its context is done.
func TestLinger(t *testing.T) {
	w, err := NewWorker(dbtest.OpenSQLite(t), Config{Kind: "test", Handler: newScript(), Lease: time.Minute, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	never := make(chan time.Time)

	woken := w.wakes.Load()
	go func() {
		for range w.ahead() {
			w.Wake()
		}
	}()
	if !w.linger(ctx, never, woken) {
		t.Error("linger reported a done context after a batch of wakes")
	}
	if got := w.wakes.Load() - woken; got != int64(w.ahead()) {
		t.Errorf("linger returned after %d wakes; want %d", got, w.ahead())
	}

	timeout := make(chan time.Time, 1)
	timeout <- t0
	if !w.linger(ctx, timeout, w.wakes.Load()) {
		t.Error("linger reported a done context at its timeout")
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if w.linger(cancelled, never, w.wakes.Load()) {
		t.Error("linger did not report its done context")
	}
}

// TestNextLinger: the linger doubles up to maxLinger while claims take
// one delivery each, holds while they take two or three, and drops back
// to lingerFor once they take more, or none.
func TestNextLinger(t *testing.T) {
	var got []time.Duration
	l := lingerFor
	for _, n := range []int{1, 1, 1, 1, 2, 3, 1, 5, 1, 0} {
		l = nextLinger(l, n)
		got = append(got, l)
	}
	ms := time.Millisecond
	want := []time.Duration{4 * ms, 8 * ms, maxLinger, maxLinger, maxLinger, maxLinger, maxLinger, lingerFor, 4 * ms, lingerFor}
	if !slices.Equal(got, want) {
		t.Errorf("lingers %v, want %v", got, want)
	}
}

// TestRunGoesRoundAfterAnEmptyTail: a claim that started mid-round (its
// cursor past the first tenant) and found nothing due after its cursor
// has not looked at the targets before it: Run claims again from the
// first target at once, not after the poll. A drain's tail waited a
// second for it, with deliveries due.
func TestRunGoesRoundAfterAnEmptyTail(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		// Tenant 1's delivery is due; tenant 3's only in an hour.
		enqueue(t, db, event("msg_due"), clock.Now(), 1)
		later := event("msg_later")
		later.TenantID = 3
		q, args := idsQuery([]int64{1})
		if _, _, err := NewEnqueuer(dbOf(db), "test", q).Enqueue(context.Background(), db, later, args, clock.Now(), time.Hour); err != nil {
			t.Fatal(err)
		}
		s := newScript()
		// Rand 0.99 starts PostgreSQL's worker at the last tenant with
		// pending deliveries (phase); SQLite's starts where its cursor is.
		w, err := NewWorker(db, Config{Kind: "test", Handler: s, Lease: 30 * time.Second, Poll: time.Hour, Now: clock.Now,
			Rand: func() float64 { return 0.99 }})
		if err != nil {
			t.Fatal(err)
		}
		w.cursor = target{3, math.MinInt64}
		w.listening.Add(1) // no quick polls, as while a LISTEN holds
		settled := quietRun(t, w, s)
		settled(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.recorded) != 1 || !s.recorded[0].OK {
			t.Errorf("recorded %+v, want tenant 1's one success", s.recorded)
		}
	})
}
