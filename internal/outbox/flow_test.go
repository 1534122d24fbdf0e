package outbox

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// flowScript answers every attempt with answer's outcome, and counts the
// attempts by target.
type flowScript struct {
	mu       sync.Mutex
	answer   func(d Delivery) Outcome
	byTarget map[int64]int
}

func newFlowScript() *flowScript {
	return &flowScript{answer: func(Delivery) Outcome { return Outcome{OK: true, StatusCode: 204} }, byTarget: map[int64]int{}}
}

func (s *flowScript) Open(context.Context, []Delivery) (func(context.Context, Delivery) Outcome, error) {
	return func(_ context.Context, d Delivery) Outcome {
		s.mu.Lock()
		s.byTarget[d.TargetID]++
		answer := s.answer
		s.mu.Unlock()
		return answer(d)
	}, nil
}

func (s *flowScript) Recorded(context.Context, bun.Tx, []Result) error { return nil }

func (s *flowScript) set(answer func(d Delivery) Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = answer
}

// backlog enqueues n events to each of targets, due at now.
func backlog(t *testing.T, db *bun.DB, n int, now time.Time, targets ...int64) {
	t.Helper()
	for i := range n {
		enqueue(t, db, event(fmt.Sprintf("msg_%d", i)), now, targets...)
	}
}

func limitOf(t *testing.T, db *bun.DB, target int64) TargetState {
	t.Helper()
	states, err := TargetStates(context.Background(), db, "test", 1, []int64{target})
	if err != nil {
		t.Fatal(err)
	}
	return states[target]
}

// TestInFlightLimitAdapts: a target's in-flight limit starts at the
// floor, grows by one for a limit's worth of quick successes up to the
// ceiling, halves (not under the floor) after a flush with a sign of
// overload, and halves too when the successes take far longer than the
// target's usual time. Each RunOnce claims as many as the limit allows
// and records them in one flush.
func TestInFlightLimitAdapts(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		backlog(t, db, 80, t0, 7)
		s := newFlowScript()
		w := fairWorker(t, db, s, clock, Config{Concurrency: 16, TenantSlots: 16, TargetInFlight: 2, TargetInFlightMax: 6})
		step := func(wantClaimed int, wantLimit float64) {
			t.Helper()
			if n := runOnce(t, w); n != wantClaimed {
				t.Errorf("claimed %d, want %d (the limit before the claim)", n, wantClaimed)
			}
			if got := limitOf(t, db, 7).InFlight; got != wantLimit {
				t.Errorf("limit after the flush %v, want %v", got, wantLimit)
			}
		}
		// Growth: a new target at the floor, then +1 per limit's worth.
		step(2, 2)
		step(2, 3)
		step(3, 4)
		step(4, 5)
		step(5, 6)
		step(6, 6) // the ceiling
		// Overload: halved, never under the floor.
		s.set(func(Delivery) Outcome { return Outcome{StatusCode: 503, Error: deskkit.Plain("busy"), Busy: true} })
		step(6, 3)
		step(3, 2)
		step(2, 2)
		// Quick again, then slow: successes that took 100 ms each against
		// a usual 0 ms are a sign of overload too.
		s.set(func(Delivery) Outcome { return Outcome{OK: true, StatusCode: 204} })
		step(2, 3)
		step(3, 4)
		s.set(func(Delivery) Outcome {
			clock.Advance(100 * time.Millisecond)
			return Outcome{OK: true, StatusCode: 204}
		})
		step(4, 2)
	})
}

// TestRetryAfterPausesTheTarget: a failure whose answer says Retry-After
// pauses its whole target, at most MaxPause: claims take none of its due
// deliveries until the pause ends, while other targets go on.
func TestRetryAfterPausesTheTarget(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		backlog(t, db, 6, t0, 7, 8)
		s := newFlowScript()
		s.set(func(d Delivery) Outcome {
			if d.TargetID == 7 {
				return Outcome{StatusCode: 429, Error: deskkit.Plain("slow down"), RetryAfter: 30 * time.Second, Busy: true}
			}
			return Outcome{OK: true, StatusCode: 204}
		})
		w := fairWorker(t, db, s, clock, Config{Concurrency: 2, TenantSlots: 2, TargetInFlight: 1, TargetInFlightMax: 1})
		runOnce(t, w) // one of each target
		if got, want := limitOf(t, db, 7).PausedUntil, t0.Add(30*time.Second); !got.Equal(want) {
			t.Fatalf("target 7 paused until %v, want %v", got, want)
		}
		if s := limitOf(t, db, 7); s.Limit(2, 8) != 1 {
			t.Errorf("target 7's limit after the pause: %v (%d), want a probe of 1 under the floor", s.InFlight, s.Limit(2, 8))
		}
		for range 5 {
			runOnce(t, w)
		}
		if s.byTarget[7] != 1 || s.byTarget[8] != 6 {
			t.Errorf("attempts by target while 7 is paused: %v, want 7: 1, 8: 6", s.byTarget)
		}
		clock.Advance(30 * time.Second)
		s.set(func(Delivery) Outcome { return Outcome{StatusCode: 429, RetryAfter: 3 * time.Hour} })
		runOnce(t, w)
		if s.byTarget[7] != 2 {
			t.Errorf("attempts of target 7 after its pause: %d, want 2", s.byTarget[7])
		}
		if got, want := limitOf(t, db, 7).PausedUntil, clock.Now().Add(MaxPause); !got.Equal(want) {
			t.Errorf("a Retry-After of 3 hours paused target 7 until %v, want %v (MaxPause)", got, want)
		}
	})
}

// TestRateLimitSpacesStarts: a rate-limited target gives a claim only the
// deliveries that fall due within the horizon, each with a start 1/rate
// after the one before, the mark shared by every worker on the database:
// claims of three workers at one instant, side by side, take exactly the
// horizon's deliveries between them, with distinct starts, and later
// claims go on from the mark, with no credit saved while idle.
func TestRateLimitSpacesStarts(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		backlog(t, db, 40, t0, 7)
		ctx := context.Background()
		if err := SetTargetRate(ctx, db, "test", 1, 7, 40, 2, t0); err != nil {
			t.Fatal(err)
		}
		if got := limitOf(t, db, 7).Rate; got != 40 {
			t.Fatalf("rate %v, want 40", got)
		}
		var workers []*Worker
		for _, p := range replicaPools(t, db, 3) {
			workers = append(workers, fairWorker(t, p, newFlowScript(), clock,
				Config{Concurrency: 16, TenantSlots: 16, TargetInFlight: 100, TargetInFlightMax: 100}))
		}
		// 40 a second, 100 ms ahead: starts at 0, 25, 50, 75 and 100 ms.
		var (
			mu     sync.Mutex
			starts []time.Duration
			wg     sync.WaitGroup
		)
		claim := func(w *Worker) int {
			batch, err := w.claim(ctx, 16, nil)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, d := range batch {
				starts = append(starts, d.notBefore.Sub(t0))
			}
			return len(batch)
		}
		for _, w := range workers {
			wg.Go(func() {
				for range 3 {
					claim(w)
				}
			})
		}
		wg.Wait()
		claim(workers[0]) // what a claim that found the lock taken left
		want := map[time.Duration]bool{0: true, 25 * time.Millisecond: true, 50 * time.Millisecond: true,
			75 * time.Millisecond: true, 100 * time.Millisecond: true}
		got := map[time.Duration]bool{}
		for _, s := range starts {
			got[s] = true
		}
		if len(starts) != len(want) || len(got) != len(want) {
			t.Fatalf("starts at one instant %v, want %v, each once", starts, want)
		}
		for s := range want {
			if !got[s] {
				t.Errorf("no start at %v: %v", s, starts)
			}
		}
		// 60 ms on: the mark is at 125 ms, and 160 ms is the horizon.
		clock.Advance(60 * time.Millisecond)
		starts = nil
		if n := claim(workers[1]); n != 2 || starts[0] != 125*time.Millisecond || starts[1] != 150*time.Millisecond {
			t.Errorf("claimed %d at 60 ms, starts %v, want 125 and 150 ms", n, starts)
		}
		// Idle for a minute: no credit saved up, starts from now.
		clock.Advance(time.Minute)
		starts = nil
		now := clock.Now().Sub(t0)
		if n := claim(workers[2]); n != 5 || starts[0] != now || starts[4] != now+100*time.Millisecond {
			t.Errorf("claimed %d after a minute idle, starts %v, want 5 from %v", n, starts, now)
		}
		// Back to the default (none here): no spacing.
		if err := SetTargetRate(ctx, db, "test", 1, 7, 0, 2, clock.Now()); err != nil {
			t.Fatal(err)
		}
		batch, err := workers[0].claim(ctx, 16, nil)
		if err != nil || len(batch) != 16 {
			t.Fatalf("claimed %d without a rate (%v), want 16", len(batch), err)
		}
		for _, d := range batch {
			if !d.notBefore.IsZero() {
				t.Errorf("delivery %d has a start %v without a rate", d.ID, d.notBefore)
			}
		}
	})
}

// TestCeilingCountsWorkers: the default ceiling is the tenant slots of the
// kind's workers heard of in the last three beats, across replicas; a
// configured one overrides it, and none is under the floor.
func TestCeilingCountsWorkers(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		a := fairWorker(t, db, newFlowScript(), clock, Config{Concurrency: 8, TenantSlots: 4, TargetInFlight: 2})
		b := fairWorker(t, db, newFlowScript(), clock, Config{Concurrency: 12, TenantSlots: 6, TargetInFlight: 2})
		if got := a.ceiling(); got != 4 {
			t.Errorf("ceiling before a beat %d, want its own 4 slots", got)
		}
		ctx := context.Background()
		for _, w := range []*Worker{a, b, a} {
			if err := w.beat(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if a.ceiling() != 10 || a.slotsAlive.Load() != 10 {
			t.Errorf("ceiling with two workers %d, want 4 + 6", a.ceiling())
		}
		clock.Advance(3*beatEvery + time.Second)
		if err := a.beat(ctx); err != nil {
			t.Fatal(err)
		}
		if got := a.ceiling(); got != 4 {
			t.Errorf("ceiling once b went silent %d, want 4", got)
		}
		c := fairWorker(t, db, newFlowScript(), clock, Config{Concurrency: 8, TenantSlots: 4, TargetInFlight: 5, TargetInFlightMax: 3})
		if got := c.ceiling(); got != 5 {
			t.Errorf("a configured ceiling under the floor: %d, want the floor 5", got)
		}
	})
}

// TestRunHoldsBackAPausedTarget: Run does not start a delivery it claimed
// before its target's Retry-After came back: it gives it back, due when
// the pause ends and without the attempt its claim counted.
func TestRunHoldsBackAPausedTarget(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		backlog(t, db, 2, t0, 7)
		enqueue(t, db, tenantEvent(2, "other"), t0, 9)
		// Two slots: tenant 2's attempt holds one until the end, so that
		// tenant 1's second delivery waits in the queue while its first
		// gets the 429.
		release := make(chan struct{})
		s := newFlowScript()
		s.set(func(d Delivery) Outcome {
			if d.TenantID == 2 {
				<-release
				return Outcome{OK: true, StatusCode: 204}
			}
			return Outcome{StatusCode: 429, RetryAfter: 30 * time.Second, Busy: true}
		})
		w := fairWorker(t, db, s, clock, Config{Concurrency: 2, BatchSize: 3, TenantSlots: 2, TargetInFlight: 2, TargetInFlightMax: 2, Poll: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			w.Run(ctx)
			close(done)
		}()
		type row struct {
			Attempts int     `bun:"attempts"`
			DueAt    int64   `bun:"due_at_ms"`
			Token    *string `bun:"lease_token"`
		}
		var rows []row
		for {
			rows = nil
			err := db.NewSelect().Table("deskkit_outbox_deliveries").Column("attempts", "due_at_ms", "lease_token").
				Where("tenant_id = 1").OrderExpr("id").Scan(context.Background(), &rows)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) == 2 && rows[0].Token == nil && rows[1].Token == nil && rows[0].Attempts == 1 && rows[1].DueAt != t0.UnixMilli() {
				break
			}
			runtime.Gosched()
		}
		close(release)
		cancel()
		<-done
		pauseEnd := t0.Add(30 * time.Second).UnixMilli()
		if rows[1].Attempts != 0 || rows[1].DueAt != pauseEnd {
			t.Errorf("the delivery claimed before the 429: %d attempts, due %d; want 0, due at the pause's end %d", rows[1].Attempts, rows[1].DueAt, pauseEnd)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.byTarget[7] != 1 {
			t.Errorf("%d attempts to the paused target, want 1", s.byTarget[7])
		}
	})
}

// TestRunStartsWithinTheSlot: Run starts a rate-limited delivery within
// one interval of its slot, or gives it back for a new one: here every
// wait for a slot wakes 150 ms late (10 a second: 100 ms apart), and
// still no attempt starts more than 100 ms after its slot, while every
// delivery is made once.
func TestRunStartsWithinTheSlot(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		backlog(t, db, 3, t0, 7)
		if err := SetTargetRate(context.Background(), db, "test", 1, 7, 10, 2, t0); err != nil {
			t.Fatal(err)
		}
		var (
			mu    sync.Mutex
			lates []time.Duration
		)
		s := newFlowScript()
		s.set(func(d Delivery) Outcome {
			mu.Lock()
			defer mu.Unlock()
			lates = append(lates, clock.Now().Sub(d.notBefore))
			return Outcome{OK: true, StatusCode: 204}
		})
		// One delivery in flight at a time: one wait at a time moves the
		// clock, so that the attempts read it as the worker did.
		w := fairWorker(t, db, s, clock, Config{Concurrency: 4, TenantSlots: 4, TargetInFlight: 1, TargetInFlightMax: 1, Poll: time.Millisecond})
		w.sleep = func(ctx context.Context, d time.Duration) error {
			clock.Advance(d + 150*time.Millisecond)
			return ctx.Err()
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			w.Run(ctx)
			close(done)
		}()
		for {
			n, err := db.NewSelect().Table("deskkit_outbox_deliveries").Where("status = 'SUCCEEDED'").Count(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n == 3 {
				break
			}
			runtime.Gosched()
		}
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if len(lates) != 3 {
			t.Errorf("%d attempts, want 3", len(lates))
		}
		for _, l := range lates {
			if l > 100*time.Millisecond {
				t.Errorf("an attempt started %v after its slot, more than the 100 ms interval: %v", l, lates)
			}
		}
	})
}

// TestFlowAcrossReplicas: the limit is the database's, not a worker's:
// one worker's successes raise it for the other's claims, and one busy
// answer to the other halves it for both; the default ceiling counts
// both workers' tenant slots once each has beaten.
func TestFlowAcrossReplicas(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		backlog(t, db, 60, t0, 7)
		pools := replicaPools(t, db, 2)
		sa, sb := newFlowScript(), newFlowScript()
		a := fairWorker(t, pools[0], sa, clock, Config{Concurrency: 8, TenantSlots: 3, TargetInFlight: 2})
		b := fairWorker(t, pools[1], sb, clock, Config{Concurrency: 8, TenantSlots: 6, TargetInFlight: 2})
		for _, w := range []*Worker{a, b, a} { // a's second beat counts b
			if err := w.beat(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if a.ceiling() != 9 || b.ceiling() != 9 {
			t.Fatalf("ceilings %d and %d, want 3 + 6", a.ceiling(), b.ceiling())
		}
		// a's successes: 2, 3, 4, 4.75, 5.38 (a claims at most its 3
		// slots).
		for range 5 {
			runOnce(t, a)
		}
		raised := limitOf(t, db, 7).InFlight
		if raised < 5 {
			t.Fatalf("limit after a's successes %v, want at least 5", raised)
		}
		if n := runOnce(t, b); n != int(raised) {
			t.Errorf("b claimed %d under the limit %v that a raised", n, raised)
		}
		sb.set(func(Delivery) Outcome { return Outcome{StatusCode: 503, Busy: true} })
		before := limitOf(t, db, 7).InFlight
		runOnce(t, b)
		after := limitOf(t, db, 7).InFlight
		if after != max(2, before/2) {
			t.Errorf("limit after b's busy answers %v, want half of %v", after, before)
		}
		if n := runOnce(t, a); n != min(3, int(after)) {
			t.Errorf("a claimed %d after b's busy answers, want the halved limit %v (at most its 3 slots)", n, after)
		}
	})
}
