package outbox

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// tenantEvent is event(id) of tenant.
func tenantEvent(tenant int64, id string) Event {
	ev := event(id)
	ev.TenantID = tenant
	return ev
}

// fairWorker is a worker with the fairness settings given, over db.
func fairWorker(t *testing.T, db *bun.DB, h Handler, clock *clocktest.Clock, c Config) *Worker {
	t.Helper()
	c.Kind, c.Handler, c.Lease, c.Now = "test", h, 30*time.Second, clock.Now
	c.Schedule, c.Rand = []time.Duration{0, time.Second, time.Minute}, func() float64 { return 0.5 }
	w, err := NewWorker(db, c)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// byTarget counts a claimed batch's deliveries by tenant and target.
func byTarget(batch []Delivery) map[string]int {
	out := map[string]int{}
	for _, d := range batch {
		out[fmt.Sprintf("tenant %d target %d", d.TenantID, d.TargetID)]++
	}
	return out
}

// byTenant counts a claimed batch's deliveries by tenant.
func byTenant(batch []Delivery) map[int64]int {
	out := map[int64]int{}
	for _, d := range batch {
		out[d.TenantID]++
	}
	return out
}

// TestClaimTakesTenantsAndTargetsInTurn: a tenant's backlog, due long
// before another tenant's one event, does not hold that event back: one
// claim takes every tenant's first delivery before any tenant's second,
// and within a tenant every target's first before any target's second.
func TestClaimTakesTenantsAndTargetsInTurn(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		for i := range 20 {
			enqueue(t, db, tenantEvent(1, fmt.Sprintf("msg_a%d", i)), clock.Now(), 7, 8)
		}
		clock.Advance(time.Minute)
		enqueue(t, db, tenantEvent(2, "msg_b"), clock.Now(), 9)
		w := fairWorker(t, db, newScript(), clock, Config{Concurrency: 8, TenantSlots: 8, TargetInFlight: 4})

		batch, err := w.claim(ctx, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"tenant 1 target 7": 2, "tenant 1 target 8": 2, "tenant 2 target 9": 1}
		if diff := cmp.Diff(want, byTarget(batch)); diff != "" {
			t.Errorf("one claim of 5 (-want +got):\n%s", diff)
		}
		// Each target's deliveries are taken in due order: the oldest
		// events first.
		for _, d := range batch {
			if d.TenantID == 1 && d.Event.ID != "msg_a0" && d.Event.ID != "msg_a1" {
				t.Errorf("tenant 1's claim took %s before older events", d.Event.ID)
			}
		}
	})
}

// TestTargetInFlightCap: a target has at most TargetInFlight deliveries
// in flight, counted from the leases of every worker on the database (two
// workers here, as two replicas); recorded outcomes make room, and a
// lease no longer counts InFlightFor after its claim.
func TestTargetInFlightCap(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		for i := range 10 {
			enqueue(t, db, event(fmt.Sprintf("msg_%d", i)), clock.Now(), 7)
		}
		enqueue(t, db, event("msg_other"), clock.Now(), 8)
		s := newScript()
		cfg := Config{Concurrency: 8, TenantSlots: 8, TargetInFlight: 3, InFlightFor: 10 * time.Second}
		one, two := fairWorker(t, db, s, clock, cfg), fairWorker(t, db, s, clock, cfg)

		first, err := one.claim(ctx, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]int{"tenant 1 target 7": 3, "tenant 1 target 8": 1}, byTarget(first)); diff != "" {
			t.Errorf("first claim (-want +got):\n%s", diff)
		}
		second, err := two.claim(ctx, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(second) != 0 {
			t.Errorf("the other worker claimed %v while target 7 had 3 in flight", byTarget(second))
		}

		// The first worker's outcomes make room for as many.
		results := make([]done, 2)
		for i, d := range first[:2] {
			results[i] = done{Result{d, Outcome{OK: true, StatusCode: 204}}, clock.Now(), time.Millisecond, nil, nil}
		}
		if err := one.record(ctx, results); err != nil {
			t.Fatal(err)
		}
		third, err := two.claim(ctx, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		freed := 0
		for _, d := range first[:2] {
			if d.TargetID == 7 {
				freed++
			}
		}
		if got := byTarget(third)["tenant 1 target 7"]; got != freed || len(third) != freed {
			t.Errorf("after %d of target 7's outcomes were recorded the other worker claimed %v", freed, byTarget(third))
		}

		// When the first worker dies, its leases stop counting InFlightFor
		// after its claim, long before they end: the cap is free again
		// for the target's other deliveries.
		clock.Advance(cfg.InFlightFor)
		fourth, err := two.claim(ctx, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := byTarget(fourth)["tenant 1 target 7"]; got != 3 {
			t.Errorf("after InFlightFor: %v; want 3 of target 7", byTarget(fourth))
		}
		for _, d := range fourth {
			for _, f := range first {
				if d.ID == f.ID {
					t.Errorf("delivery %d was claimed again before its lease ended", d.ID)
				}
			}
		}
	})
}

// TestTenantSlots: a tenant whose attempts hold TenantSlots of the
// worker's slots gets no more, and one holding fewer gets the rest of its
// share; other tenants are not limited by it.
func TestTenantSlots(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		for i := range 6 {
			enqueue(t, db, tenantEvent(1, fmt.Sprintf("msg_a%d", i)), clock.Now(), int64(10+i))
			enqueue(t, db, tenantEvent(2, fmt.Sprintf("msg_b%d", i)), clock.Now(), int64(20+i))
		}
		w := fairWorker(t, db, newScript(), clock, Config{Concurrency: 12, TenantSlots: 3})
		// Claims of 12, which step through all 12 targets.
		batch, err := w.claim(ctx, 12, map[int64]int{1: 3})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[int64]int{2: 3}, byTenant(batch)); diff != "" {
			t.Errorf("tenant 1 holding its 3 slots (-want +got):\n%s", diff)
		}
		batch, err = w.claim(ctx, 12, map[int64]int{1: 1})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[int64]int{1: 2, 2: 3}, byTenant(batch)); diff != "" {
			t.Errorf("tenant 1 holding 1 slot, tenant 2 none of its 3 left (-want +got):\n%s", diff)
		}
	})
}

// hangingScript is a script whose attempts for tenant hang until release
// is closed; each attempt's start is sent to started.
type hangingScript struct {
	*script
	tenant  int64
	release chan struct{}
	started chan Delivery
}

func (h hangingScript) Open(ctx context.Context, batch []Delivery) (func(context.Context, Delivery) Outcome, error) {
	attempt, err := h.script.Open(ctx, batch)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, d Delivery) Outcome {
		h.started <- d
		if d.TenantID == h.tenant {
			<-h.release
		}
		return attempt(ctx, d)
	}, nil
}

// TestHangingTenantLeavesSlots is the second fairness fault in
// small: one tenant's five hanging endpoints, 30 deliveries each, held
// every worker, and another tenant's event waited for their timeouts. Now
// the hanging tenant holds its share of the slots (half) and the other
// tenant's event is attempted at once.
func TestHangingTenantLeavesSlots(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		for i := range 30 {
			enqueue(t, db, tenantEvent(1, fmt.Sprintf("msg_a%d", i)), clock.Now(), 1, 2, 3, 4, 5)
		}
		h := hangingScript{newScript(), 1, make(chan struct{}), make(chan Delivery, 200)}
		w := fairWorker(t, db, h, clock, Config{Concurrency: 8, Poll: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { w.Run(ctx) })
		defer func() {
			cancel()
			close(h.release)
			wg.Wait()
		}()
		next := func() Delivery {
			t.Helper()
			select {
			case d := <-h.started:
				return d
			case <-time.After(10 * time.Second):
				t.Fatal("no attempt started: every slot is held")
				return Delivery{}
			}
		}
		// Tenant 1 takes its share, 4 slots of 8, and hangs in them.
		for range 4 {
			if d := next(); d.TenantID != 1 {
				t.Fatalf("an attempt of tenant %d started first", d.TenantID)
			}
		}
		enqueue(t, db, tenantEvent(2, "msg_b"), clock.Now(), 9)
		w.Wake()
		if d := next(); d.TenantID != 2 {
			t.Errorf("the next attempt was tenant %d's (%s), not tenant 2's: tenant 1 holds more than its share", d.TenantID, d.Event.ID)
		}
	})
}

// recordCounter is a script that counts the flushes recorded.
type recordCounter struct {
	*script
	mu      sync.Mutex
	flushes []int
}

func (h *recordCounter) Recorded(ctx context.Context, tx bun.Tx, done []Result) error {
	h.mu.Lock()
	h.flushes = append(h.flushes, len(done))
	h.mu.Unlock()
	return h.script.Recorded(ctx, tx, done)
}

// TestBatchClaimedAndRecordedTogether: a batch of due deliveries is
// claimed by one claim and its outcomes are recorded in one flush, whatever
// each outcome was; a later retry is due on the schedule.
func TestBatchClaimedAndRecordedTogether(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		enqueue(t, db, event("msg_batch"), clock.Now(), 1, 2, 3, 4, 5, 6, 7, 8)
		h := &recordCounter{script: newScript()}
		h.outcomes[1] = Outcome{StatusCode: 500, Error: deskkit.Plain("down")}
		w := fairWorker(t, db, h, clock, Config{Concurrency: 8, TenantSlots: 8, TargetInFlight: 1})
		if n := runOnce(t, w); n != 8 {
			t.Fatalf("claimed %d, want 8", n)
		}
		if diff := cmp.Diff([]int{8}, h.flushes); diff != "" {
			t.Errorf("flushes (-want +got):\n%s", diff)
		}
		total, list, err := List(ctx, db, 1, "test", 3, Filter{}, 0, 10)
		if err != nil || total != 1 {
			t.Fatalf("List: %v, %d", err, total)
		}
		if in := list[0]; in.Status != Pending || in.Attempts != 1 || in.LastError.String() != "down" || !in.NextAttempt.Equal(t0.Add(time.Second)) {
			t.Errorf("after a failed attempt: %+v", in)
		}
		clock.Advance(time.Second)
		if n := runOnce(t, w); n != 8 {
			t.Fatalf("claimed %d again, want 8", n)
		}
		if diff := cmp.Diff([]int{8, 8}, h.flushes); diff != "" {
			t.Errorf("flushes (-want +got):\n%s", diff)
		}
	})
}

// TestClaimsGoRoundTheTargets: on PostgreSQL a claim looks at a bounded
// span of targets, so that its cost follows the batch; the next claim
// looks at the targets after them, and a due delivery beyond the first
// span is claimed within a round of them, with the worker claiming on
// while the round is not done.
func TestClaimsGoRoundTheTargets(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	ctx := context.Background()
	migrated(t, db)
	clock := clocktest.New(t0)
	span := targetSpan(8)
	// 2.5 spans of targets whose deliveries are due later, then one due
	// now beyond them.
	future := clock.Now().Add(time.Hour)
	for i := range span*5/2 + 1 {
		enqueue(t, db, event(fmt.Sprintf("msg_later_%d", i)), future, int64(100+i))
	}
	enqueue(t, db, event("msg_now"), clock.Now(), 9999)
	w := fairWorker(t, db, newScript(), clock, Config{Concurrency: 8})
	claims := 0
	for {
		claims++
		batch, err := w.claim(ctx, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) > 0 {
			if len(batch) != 1 || batch[0].Event.ID != "msg_now" {
				t.Fatalf("claim %d took %v", claims, byTarget(batch))
			}
			break
		}
		if !w.midRound() {
			t.Fatalf("claim %d took nothing and ended the round before the due delivery", claims)
		}
		if claims > 3 {
			t.Fatalf("no claim of a round took the due delivery")
		}
	}
	if claims != 3 {
		t.Errorf("the due delivery was claimed by claim %d; want 3 (after two spans of %d)", claims, span)
	}
	// The round ended with it: the next claim starts from the first target.
	if w.midRound() {
		t.Errorf("the claim that reached the last target left the worker mid round, at %+v", w.cursor)
	}
}

// TestClaimCommitsLazilyAlone: the claim's own transaction commits with
// synchronous_commit off, and the setting does not outlive it: the next
// statement on the same connection (an outcome's record) commits
// synchronously.
func TestClaimCommitsLazilyAlone(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	ctx := context.Background()
	migrated(t, db)
	db.SetMaxOpenConns(1)
	clock := clocktest.New(t0)
	enqueue(t, db, event("msg_lazy"), clock.Now(), 7)
	w := fairWorker(t, db, newScript(), clock, Config{Concurrency: 8})
	batch, err := w.claim(ctx, 8, nil)
	if err != nil || len(batch) != 1 {
		t.Fatalf("claim: %v, %d", err, len(batch))
	}
	var setting string
	if err := db.NewRaw("SHOW synchronous_commit").Scan(ctx, &setting); err != nil {
		t.Fatal(err)
	}
	if setting != "on" {
		t.Errorf("after a claim the connection's synchronous_commit is %q, want on", setting)
	}
}

func TestNumbered(t *testing.T) {
	got := numbered("a = ?0 AND b = ?10 OR c <= ?1")
	if want := "a = $1 AND b = $11 OR c <= $2"; got != want {
		t.Errorf("numbered: %q, want %q", got, want)
	}
}

// TestPreparedClaim: the claim prepared, as Run runs it on PostgreSQL,
// takes what the plain one takes, with its events, and a claim that takes
// nothing still says where the round is.
func TestPreparedClaim(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	ctx := context.Background()
	migrated(t, db)
	clock := clocktest.New(t0)
	for i := range 3 {
		enqueue(t, db, tenantEvent(int64(1+i), fmt.Sprintf("msg_%d", i)), clock.Now(), 7, 8)
	}
	w := fairWorker(t, db, newScript(), clock, Config{Concurrency: 8, TenantSlots: 1})
	w.prepareClaim(ctx)
	if w.claimStmt.Load() == nil {
		t.Fatal("the claim was not prepared")
	}
	batch, err := w.claim(ctx, 8, map[int64]int{3: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range batch {
		if d.Event.Type != "task.trashed" || string(d.Event.Data) != `{"a":1}` {
			t.Errorf("delivery %d came with event %+v", d.ID, d.Event)
		}
	}
	if diff := cmp.Diff(map[int64]int{1: 1, 2: 1}, byTenant(batch)); diff != "" {
		t.Errorf("prepared claim with one slot per tenant, tenant 3's held (-want +got):\n%s", diff)
	}
	if batch, err := w.claim(ctx, 8, map[int64]int{1: 1, 2: 1, 3: 1}); err != nil || len(batch) != 0 || w.midRound() {
		t.Errorf("a claim with every tenant at its share: %v, %d claimed, mid round %v", err, len(batch), w.midRound())
	}
}

// TestRunClaimsAhead: while every slot's attempt runs, Run claims up to a
// batch more, which wait in the worker for a slot and start as attempts
// end; at shutdown the ones that have not started are given back, due at
// once and without the attempt their claim counted, and the ones in
// flight are recorded.
func TestRunClaimsAhead(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		for tenant := range int64(4) {
			enqueue(t, db, tenantEvent(tenant+1, fmt.Sprintf("msg_%d", tenant)), clock.Now(), 10+tenant)
		}
		s := newScript()
		s.block = make(chan struct{})
		s.started = make(chan struct{}, 4)
		w := fairWorker(t, db, s, clock, Config{Concurrency: 2, BatchSize: 2, TenantSlots: 1, Poll: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			w.Run(ctx)
			close(done)
		}()
		<-s.started
		<-s.started
		// Two attempts run, two deliveries wait for a slot: all four are
		// leased.
		leased := func() int {
			t.Helper()
			n, err := db.NewSelect().Table("deskkit_outbox_deliveries").Where("lease_token IS NOT NULL").Count(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		for leased() < 4 {
			runtime.Gosched()
		}
		if n := leased(); n != 4 {
			t.Fatalf("%d deliveries leased; want the 2 in attempts and 2 waiting", n)
		}
		// An attempt that ends starts a waiting one, with no claim.
		s.block <- struct{}{}
		<-s.started
		// Shutdown gives the one still waiting back; the first attempt is
		// recorded: two leases are left, the attempts in flight.
		cancel()
		for leased() > 2 {
			runtime.Gosched()
		}
		close(s.block)
		<-done
		var states []struct {
			Status   string
			Attempts int
			Leased   bool
		}
		err := db.NewSelect().Table("deskkit_outbox_deliveries").
			Column("status", "attempts").ColumnExpr("lease_token IS NOT NULL AS leased").
			Order("status", "attempts").Scan(context.Background(), &states)
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			Status   string
			Attempts int
			Leased   bool
		}{
			// The one given back.
			{"PENDING", 0, false},
			{"SUCCEEDED", 1, false}, {"SUCCEEDED", 1, false}, {"SUCCEEDED", 1, false},
		}
		if diff := cmp.Diff(want, states); diff != "" {
			t.Errorf("after the shutdown (-want +got):\n%s", diff)
		}
		if got := s.total(); got != 3 {
			t.Errorf("%d attempts made; want 3", got)
		}
	})
}

// TestClaimTellsCapped: on PostgreSQL a claim tells whether it reached a
// target at its cap, so that a flush, which ends leases, wakes the worker
// only then; at a steady low rate with nothing capped a flush costs no
// extra claim.
func TestClaimTellsCapped(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	ctx := context.Background()
	migrated(t, db)
	clock := clocktest.New(t0)
	enqueue(t, db, event("msg_1"), clock.Now(), 7)
	enqueue(t, db, event("msg_2"), clock.Now(), 7)
	w := fairWorker(t, db, newScript(), clock, Config{Concurrency: 8, TenantSlots: 8, TargetInFlight: 1})
	for i, want := range []struct {
		claimed int
		capped  bool
	}{{1, false}, {0, true}} {
		batch, err := w.claim(ctx, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) != want.claimed || w.capped.Load() != want.capped {
			t.Errorf("claim %d took %d and capped is %v; want %d and %v", i+1, len(batch), w.capped.Load(), want.claimed, want.capped)
		}
	}
}

// TestRunLooksAgainSoon: a worker whose claim found deliveries looks
// again soon without a wake (its poll here is an hour), so that a NOTIFY
// that comes late does not set the latency while events flow.
func TestRunLooksAgainSoon(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		enqueue(t, db, event("msg_first"), clock.Now())
		s := newScript()
		s.started = make(chan struct{}, 2)
		w := fairWorker(t, db, s, clock, Config{Concurrency: 2, Poll: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			w.Run(ctx)
			close(done)
		}()
		defer func() { cancel(); <-done }()
		next := func(what string) {
			t.Helper()
			select {
			case <-s.started:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s was not attempted: the worker waits for its hour's poll", what)
			}
		}
		next("the first delivery, at Run's first look")
		// Written without a wake.
		enqueue(t, db, event("msg_second"), clock.Now())
		next("the second delivery, written without a wake")
	})
}
