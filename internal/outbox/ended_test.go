package outbox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// TestEndedAttemptsFreeTheCap: on PostgreSQL a worker's claim does not
// count toward a target's cap the leases of its own attempts that ended,
// their outcomes not yet recorded: an attempt that ends frees its room at
// once for that worker, while another worker (a replica, which cannot
// know the attempt ended) still counts the lease until it is recorded. A
// lease recorded before the claim's count is not taken off twice.
func TestEndedAttemptsFreeTheCap(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	ctx := context.Background()
	migrated(t, db)
	clock := clocktest.New(t0)
	for i := range 8 {
		enqueue(t, db, event(fmt.Sprintf("msg_%d", i)), clock.Now(), 7)
	}
	s := newScript()
	cfg := Config{Concurrency: 8, TenantSlots: 8, TargetInFlight: 2}
	one, two := fairWorker(t, db, s, clock, cfg), fairWorker(t, db, s, clock, cfg)
	claim := func(w *Worker) []Delivery {
		t.Helper()
		batch, err := w.claim(ctx, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		return batch
	}
	// end makes d's attempt through the worker's own path and returns its
	// outcome, handed over but not recorded.
	end := func(w *Worker, d Delivery) done {
		t.Helper()
		attempt, err := s.Open(ctx, []Delivery{d})
		if err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		w.claimed++
		w.held[d.TenantID]++
		w.mu.Unlock()
		var got done
		w.attempt(ctx, queued{d, attempt}, func(d done) { got = d })
		return got
	}

	first := claim(one)
	if len(first) != 2 {
		t.Fatalf("the first claim took %d deliveries; the cap is 2", len(first))
	}
	if !one.full.Load() {
		t.Error("a claim that filled its one target's cap does not say every target it reached is full")
	}
	if got := claim(two); len(got) != 0 {
		t.Fatalf("the other worker claimed %d while the target had 2 in flight", len(got))
	}
	outcome := end(one, first[0])
	if got := claim(two); len(got) != 0 {
		t.Errorf("the other worker claimed %d while the first's outcome was not recorded: it cannot know the attempt ended", len(got))
	}
	second := claim(one)
	if len(second) != 1 {
		t.Fatalf("the worker whose attempt ended claimed %d; want 1 (1 attempt runs, cap 2)", len(second))
	}
	if got := claim(one); len(got) != 0 {
		t.Errorf("the worker claimed %d more with 2 attempts running", len(got))
	}

	// Recorded (its lease cleared) but not yet forgotten, as while a
	// flush commits during a claim: the lease is counted neither way.
	if err := one.record(ctx, []done{outcome}); err != nil {
		t.Fatal(err)
	}
	if got := claim(one); len(got) != 0 {
		t.Errorf("the worker claimed %d with 2 attempts running and one recorded outcome still known as ended", len(got))
	}
	one.forgetEnded([]done{outcome})

	// A flush forgets what it recorded.
	outcome = end(one, first[1])
	one.flush(ctx, []done{outcome})
	one.mu.Lock()
	left := len(one.ended)
	one.mu.Unlock()
	if left != 0 {
		t.Errorf("%d ended attempts still known after their flush", left)
	}
	if got := claim(two); len(got) != 1 {
		t.Errorf("after a recorded outcome the other worker claimed %d; want 1", len(got))
	}

	// A target with room left after the claim is not full.
	enqueue(t, db, event("msg_other"), clock.Now(), 8)
	if got := claim(two); len(got) != 1 || got[0].TargetID != 8 {
		t.Fatalf("the claim took %v; want target 8's one delivery", byTarget(got))
	}
	if two.full.Load() {
		t.Error("a claim that left target 8 with room says every target it reached is full")
	}
}

// TestRunRefillsACappedTargetAsAttemptsEnd: Run drains one target at its
// cap without ever passing it, its claims made as attempts end rather
// than as flushes record them: with flushes held back (an hour, or a
// flush's worth of outcomes: the whole backlog), a backlog of many times
// the cap still drains, every delivery attempted once, and never more
// than the cap of attempts run at once.
func TestRunRefillsACappedTargetAsAttemptsEnd(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	ctx := context.Background()
	migrated(t, db)
	const (
		limit = 3
		n     = 40
	)
	clock := clocktest.New(t0)
	for i := range n {
		enqueue(t, db, event(fmt.Sprintf("msg_%02d", i)), clock.Now(), 7)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	t.Cleanup(client.CloseIdleConnections)
	h := &gauge{Handler: poster{srv.URL, client}, ended: make(chan struct{}, n)}
	w := fairWorker(t, db, h, clock, Config{
		Concurrency: 8, TenantSlots: 8, TargetInFlight: limit,
		FlushEvery: time.Hour, FlushSize: n,
	})
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(runCtx) })
	guard := time.NewTimer(time.Minute)
	defer guard.Stop()
	for i := range n {
		select {
		case <-h.ended:
		case <-guard.C:
			t.Fatalf("%d of %d attempts made in a minute", i, n)
		}
	}
	stop()
	wg.Wait()
	if got := h.most(); got > limit {
		t.Errorf("%d attempts ran at once; the cap is %d", got, limit)
	}
	var attempts, left int
	if err := db.NewSelect().Table("deskkit_outbox_deliveries").
		ColumnExpr("sum(attempts), count(*) FILTER (WHERE status <> ?)", Succeeded).
		Scan(ctx, &attempts, &left); err != nil {
		t.Fatal(err)
	}
	if attempts != n || left != 0 {
		t.Errorf("%d attempts and %d deliveries not SUCCEEDED; want %d and 0", attempts, left, n)
	}
}

// gauge is a Handler that counts the attempts running at once, and
// sends on ended as each ends.
type gauge struct {
	Handler
	ended chan struct{}

	mu        sync.Mutex
	now, peak int
}

func (g *gauge) Open(ctx context.Context, batch []Delivery) (func(context.Context, Delivery) Outcome, error) {
	attempt, err := g.Handler.Open(ctx, batch)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, d Delivery) Outcome {
		g.mu.Lock()
		g.now++
		g.peak = max(g.peak, g.now)
		g.mu.Unlock()
		o := attempt(ctx, d)
		g.mu.Lock()
		g.now--
		g.mu.Unlock()
		g.ended <- struct{}{}
		return o
	}, nil
}

func (g *gauge) most() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak
}
