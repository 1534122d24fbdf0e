package outbox

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// sqlitePlan is EXPLAIN QUERY PLAN of q with args on db, one line a step:
// with the args bound as parameters of q's numbered text when bound (as
// the claim's prepared statement runs), else written into q by bun.
func sqlitePlan(t *testing.T, db *bun.DB, bound bool, q string, args ...any) []string {
	t.Helper()
	var steps []struct {
		ID, Parent, Notused int
		Detail              string
	}
	ctx := context.Background()
	if bound {
		rows, err := db.DB.QueryContext(ctx, "EXPLAIN QUERY PLAN "+numbered(q), args...)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.ScanRows(ctx, rows, &steps); err != nil {
			t.Fatal(err)
		}
	} else if err := db.NewRaw("EXPLAIN QUERY PLAN "+q, args...).Scan(ctx, &steps); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Detail
	}
	return out
}

// TestSQLiteClaimUsesTheIndexes: on SQLite the claim reaches the
// deliveries table only by index seeks (the targets and their due rows
// through deskkit_outbox_target_due_idx, the leases through
// deskkit_outbox_leased_idx, rows by id), never by a scan of the table or
// of an index, so that its cost follows its batch, not the backlog; with
// and without the statistics ANALYZE keeps, planned with its parameters
// bound as its prepared statement is. The lease reads rows by id.
func TestSQLiteClaimUsesTheIndexes(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	migrated(t, db)
	seedBacklog(t, db, 2000, 4, 40, true)
	args := []any{"test", t0.UnixMilli(), 4, 16, 8, `{"1":2}`, t0.UnixMilli() + 1000, "token", t0.UnixMilli(),
		int64(math.MinInt64), int64(math.MinInt64), targetSpan(16) + 1, "{}", 8, 0.0, rateHorizon.Milliseconds()}
	// A step on the deliveries table (under any of the claim's names for
	// it) that is not a search by index.
	scan := regexp.MustCompile(`^SCAN (deskkit_outbox_deliveries|[bdnx])\b|^SEARCH (deskkit_outbox_deliveries|[bdnx]) USING (INDEX|COVERING INDEX) \S+$`)
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			if _, err := db.ExecContext(context.Background(), "ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		plan := sqlitePlan(t, db, true, claimSQLite, args...)
		text := strings.Join(plan, "\n")
		for _, step := range plan {
			if scan.MatchString(step) {
				t.Errorf("analyzed %v: the claim scans the deliveries: %q in\n%s", analyzed, step, text)
			}
		}
		for _, want := range []string{
			// The first target after the cursor.
			"SEARCH deskkit_outbox_deliveries USING COVERING INDEX deskkit_outbox_target_due_idx (kind=? AND (tenant_id,target_id)>(?,?))",
			// The next target of the tenant, and the next tenant's first.
			"SEARCH n USING COVERING INDEX deskkit_outbox_target_due_idx (kind=? AND tenant_id=? AND target_id>?)",
			"SEARCH n USING COVERING INDEX deskkit_outbox_target_due_idx (kind=? AND tenant_id>?)",
			// A reached target's leases, and its due rows.
			"SEARCH b USING INDEX deskkit_outbox_leased_idx (kind=? AND tenant_id=? AND target_id=?)",
			"SEARCH x USING COVERING INDEX deskkit_outbox_target_due_idx (kind=? AND tenant_id=? AND target_id=? AND due_at_ms<?)",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("analyzed %v: the claim's plan lacks %q:\n%s", analyzed, want, text)
			}
		}
		lease := strings.Join(sqlitePlan(t, db, false, leaseSQLite, t0.UnixMilli(), "token", bun.List([]int64{1, 2, 3})), "\n")
		if !strings.Contains(lease, "USING INTEGER PRIMARY KEY (rowid=?)") {
			t.Errorf("analyzed %v: the lease does not find rows by id:\n%s", analyzed, lease)
		}
	}
}

// batchLog is a script that keeps each batch it opens, as claimed.
type batchLog struct {
	*script
	mu      sync.Mutex
	batches [][]Delivery
}

func (l *batchLog) Open(ctx context.Context, batch []Delivery) (func(context.Context, Delivery) Outcome, error) {
	l.mu.Lock()
	l.batches = append(l.batches, append([]Delivery(nil), batch...))
	l.mu.Unlock()
	return l.script.Open(ctx, batch)
}

// TestClaimsDrainManyTargetsInRounds: a backlog over more targets than a
// claim reaches (20 targets of two tenants, a claim's span 8), three
// deliveries each, with one in flight per target: the claims go round the
// targets, each round taking every target's next delivery (its first
// before any target's second, and so on) in three claims, and drain the
// backlog completely, each delivery attempted once, in its target's due
// order.
func TestClaimsDrainManyTargetsInRounds(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		const targets, each = 20, 3
		for k := range each {
			for i := range targets {
				tenant := int64(1 + i/10)
				enqueue(t, db, tenantEvent(tenant, fmt.Sprintf("msg_%02d_%d", i, k)), clock.Now(), int64(100+i))
			}
			clock.Advance(time.Second)
		}
		log := &batchLog{script: newScript()}
		w := fairWorker(t, db, log, clock, Config{Concurrency: 8, TenantSlots: 8, TargetInFlight: 1})
		if span := targetSpan(8); span >= targets {
			t.Fatalf("the span (%d) reaches every target", span)
		}
		claims := 0
		for runOnce(t, w) > 0 {
			if claims++; claims > 20 {
				t.Fatal("the backlog is not drained in 20 claims")
			}
		}
		// Each delivery's round: the k-th of its target.
		var got []int
		seen := map[string]int{}
		for _, b := range log.batches {
			for _, d := range b {
				var i, k int
				if _, err := fmt.Sscanf(d.Event.ID, "msg_%02d_%d", &i, &k); err != nil {
					t.Fatal(err)
				}
				if k != seen[d.Event.ID[:6]] {
					t.Errorf("target %d's delivery %d claimed as its %d-th", 100+i, k, seen[d.Event.ID[:6]])
				}
				seen[d.Event.ID[:6]]++
				got = append(got, k)
			}
		}
		want := make([]int, 0, targets*each)
		for k := range each {
			for range targets {
				want = append(want, k)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the round of each claimed delivery, in claim order (-want +got):\n%s", diff)
		}
		var sizes []int
		for _, b := range log.batches {
			sizes = append(sizes, len(b))
		}
		if diff := cmp.Diff([]int{8, 8, 4, 8, 8, 4, 8, 8, 4}, sizes); diff != "" {
			t.Errorf("claims (-want +got):\n%s", diff)
		}
		if len(log.attempts) != targets*each {
			t.Errorf("%d deliveries attempted; want %d", len(log.attempts), targets*each)
		}
		for id, n := range log.attempts {
			if n != 1 {
				t.Errorf("delivery %d attempted %d times", id, n)
			}
		}
		var left int
		if err := db.NewSelect().Table("deskkit_outbox_deliveries").ColumnExpr("count(*)").
			Where("status <> ?", Succeeded).Scan(ctx, &left); err != nil || left != 0 {
			t.Errorf("%d deliveries did not succeed (%v)", left, err)
		}
	})
}

// TestClaimsGoRoundTheTargetsOnEachDB is TestClaimsGoRoundTheTargets on
// both databases: claims that reach only targets whose deliveries are not
// due take none of them and leave the worker mid round; the due delivery
// beyond two spans of them is claimed by the third claim, which ends the
// round.
func TestClaimsGoRoundTheTargetsOnEachDB(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		span := targetSpan(8)
		future := clock.Now().Add(time.Hour)
		for i := range span*5/2 + 1 {
			enqueue(t, db, event(fmt.Sprintf("msg_later_%d", i)), future, int64(100+i))
		}
		enqueue(t, db, event("msg_now"), clock.Now(), 9999)
		w := fairWorker(t, db, newScript(), clock, Config{Concurrency: 8, TenantSlots: 8})
		for claim := 1; claim <= 3; claim++ {
			batch, err := w.claim(ctx, 8, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range batch {
				got = append(got, d.Event.ID)
			}
			want, mid := []string(nil), true
			if claim == 3 {
				want, mid = []string{"msg_now"}, false
			}
			if diff := cmp.Diff(want, got); diff != "" || w.midRound() != mid {
				t.Errorf("claim %d: mid round %v, want %v; took (-want +got):\n%s", claim, w.midRound(), mid, diff)
			}
		}
		// The next round starts from the first target again: once they
		// are due, it takes the first span's deliveries.
		clock.Advance(time.Hour)
		batch, err := w.claim(ctx, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{}
		for i := range span {
			want[fmt.Sprintf("tenant 1 target %d", 100+i)] = 1
		}
		if diff := cmp.Diff(want, byTarget(batch)); diff != "" {
			t.Errorf("the next round's first claim (-want +got):\n%s", diff)
		}
	})
}

// TestClaimTellsCappedOnEachDB: the claim tells whether it reached a
// target at its cap, or a tenant with due deliveries beyond its slots as
// held, on both databases; a claim that found neither says so.
func TestClaimTellsCappedOnEachDB(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		for i := range 3 {
			enqueue(t, db, tenantEvent(1, fmt.Sprintf("msg_a%d", i)), clock.Now(), 7)
			enqueue(t, db, tenantEvent(2, fmt.Sprintf("msg_b%d", i)), clock.Now(), 8, 9)
		}
		w := fairWorker(t, db, newScript(), clock, Config{Concurrency: 8, TenantSlots: 3, TargetInFlight: 2})
		for i, c := range []struct {
			held    map[int64]int
			claimed map[string]int
			capped  bool
		}{
			// Tenant 2 holds two of its three slots: one more of its
			// deliveries, and it has more.
			{map[int64]int{2: 2}, map[string]int{"tenant 1 target 7": 2, "tenant 2 target 8": 1}, true},
			// Target 7 is at its cap of 2 (its leases); tenant 2, none of
			// its slots held now, takes three: target 8's second (one
			// lease left under its cap) and target 9's first two.
			{nil, map[string]int{"tenant 2 target 8": 1, "tenant 2 target 9": 2}, true},
		} {
			batch, err := w.claim(ctx, 8, c.held)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.claimed, byTarget(batch)); diff != "" || w.capped.Load() != c.capped {
				t.Errorf("claim %d: capped %v, want %v; took (-want +got):\n%s", i+1, w.capped.Load(), c.capped, diff)
			}
		}
		// Every lease recorded: nothing is in flight, tenant 1's last
		// delivery and target 8's and 9's last are due, and nothing caps
		// the claim.
		if _, err := db.NewUpdate().Table("deskkit_outbox_deliveries").
			Set("status = 'SUCCEEDED', due_at_ms = NULL, lease_token = NULL").
			Where("lease_token IS NOT NULL").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		batch, err := w.claim(ctx, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]int{"tenant 1 target 7": 1, "tenant 2 target 8": 1, "tenant 2 target 9": 1}, byTarget(batch)); diff != "" || w.capped.Load() {
			t.Errorf("claim with nothing in flight: capped %v; took (-want +got):\n%s", w.capped.Load(), diff)
		}
	})
}

// TestClaimTellsTenantCapped: a claim that leaves a tenant's due
// deliveries beyond its slots says it is capped though the tenant held
// none of them before it (it was told only of tenants that held some),
// so that Run waits for an attempt to end rather than claiming again at
// once for nothing: a lone tenant's drain made every other claim empty.
func TestClaimTellsTenantCapped(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		for i := range 2 {
			enqueue(t, db, tenantEvent(3, fmt.Sprintf("msg_c%d", i)), clock.Now(), 10, 11)
		}
		w := fairWorker(t, db, newScript(), clock, Config{Concurrency: 8, TenantSlots: 3, TargetInFlight: 2})
		batch, err := w.claim(ctx, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) != 3 || !w.capped.Load() {
			t.Errorf("took %d, capped %v; want the tenant's 3 slots' worth and capped", len(batch), w.capped.Load())
		}
	})
}

// TestSQLiteClaimOnOneConnection: on a pool of one connection the SQLite
// claim prepares its statement before its transaction takes the
// connection, and runs it in the transaction on that connection: claims,
// the first and the later ones, never wait for a second connection.
func TestSQLiteClaimOnOneConnection(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	migrated(t, db)
	db.SetMaxOpenConns(1)
	clock := clocktest.New(t0)
	enqueue(t, db, event("msg_1"), clock.Now(), 7, 8)
	w := fairWorker(t, db, newScript(), clock, Config{Concurrency: 8, TenantSlots: 8, TargetInFlight: 1})
	for i, want := range []map[string]int{
		{"tenant 1 target 7": 1, "tenant 1 target 8": 1},
		{},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		batch, err := w.claim(ctx, 8, nil)
		cancel()
		if err != nil {
			t.Fatalf("claim %d: %v", i+1, err)
		}
		if diff := cmp.Diff(want, byTarget(batch)); diff != "" {
			t.Errorf("claim %d (-want +got):\n%s", i+1, diff)
		}
	}
	if w.claimStmt.Load() == nil {
		t.Error("the SQLite claim was not prepared")
	}
}
