package outbox

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

// seedBacklog writes n PENDING deliveries of kind "test", due at t0, and
// their events, on either database, and as many finished ones beside them
// when finished (the log a busy queue keeps). Delivery i goes to tenant
// 1 + i % tenants and target i % targets: with targets a multiple of
// tenants, each tenant has targets / tenants of them, each with n /
// targets deliveries.
func seedBacklog(tb testing.TB, db *bun.DB, n, tenants, targets int, finished bool) {
	tb.Helper()
	ctx := context.Background()
	logged := 0
	if finished {
		logged = n
	}
	const series = `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?1 + ?2) `
	for _, q := range []string{
		series + `INSERT INTO deskkit_outbox_events (tenant_id, event_id, event_type, occurred_at_ms, title, body, data, created_at_ms)
SELECT 1 + i % ?3, 'msg_' || i, 'task.trashed', ?0, 'A task', '', '{}', ?0 FROM s`,
		series + `INSERT INTO deskkit_outbox_deliveries (tenant_id, event_id, kind, target_id, status, attempts, step, due_at_ms, created_at_ms)
SELECT 1 + i % ?3, 'msg_' || i, 'test', i % ?4, 'PENDING', 0, 0, ?0, ?0 FROM s WHERE i <= ?1`,
		series + `INSERT INTO deskkit_outbox_deliveries (tenant_id, event_id, kind, target_id, status, attempts, step, created_at_ms, finished_at_ms)
SELECT 1 + i % ?3, 'msg_' || i, 'test', i % ?4, 'SUCCEEDED', 1, 0, ?0, ?0 FROM s WHERE i > ?1`,
	} {
		if _, err := db.ExecContext(ctx, q, t0.UnixMilli(), n, logged, tenants, targets); err != nil {
			tb.Fatal(err)
		}
	}
	if isPostgres(db) {
		for _, q := range []string{"ANALYZE deskkit_outbox_deliveries", "ANALYZE deskkit_outbox_events"} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// newBacklogClaimBench is claimBench over a fresh SQLite database with a
// backlog of n due deliveries seeded by seedBacklog.
func newBacklogClaimBench(b *testing.B, n, tenants, targets int) claimBench {
	b.Helper()
	db := dbtest.OpenSQLite(b)
	if err := Migrate(context.Background(), db); err != nil {
		b.Fatal(err)
	}
	seedBacklog(b, db, n, tenants, targets, true)
	clock := clocktest.New(t0.Add(time.Hour))
	w, err := NewWorker(db, Config{Kind: "test", Handler: newScript(), Lease: time.Minute, Concurrency: 16, TenantSlots: 16, Now: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	return claimBench{db, w}
}

// BenchmarkSQLiteClaimRatio measures, on SQLite, one claim of a batch of 16
// (the claim and the read of its events) from a backlog of 1,000 due
// deliveries and from one of 100,000 (with as many finished ones in the
// log), one claim of each in every iteration so that drift on a shared
// machine hits both alike, and reports each one's time per claim and
// their ratio (100k/1k): 1 for a claim whose cost follows its batch. Each
// claimed batch is put back out of the timer, so the backlog keeps its
// size. The backlogs are spread over 5 targets of one tenant (as
// BenchmarkClaim's), or over 4 tenants with a target per 10 deliveries.
func BenchmarkSQLiteClaimRatio(b *testing.B) {
	for _, shape := range []struct {
		name            string
		tenants, perTgt int
	}{{"targets=5", 1, 0}, {"targets=n/10", 4, 10}} {
		b.Run(shape.name, func(b *testing.B) {
			targets := func(n int) int {
				if shape.perTgt == 0 {
					return 5
				}
				return n / shape.perTgt
			}
			small := newBacklogClaimBench(b, 1000, shape.tenants, targets(1000))
			large := newBacklogClaimBench(b, 100000, shape.tenants, targets(100000))
			var ts, tl time.Duration
			for b.Loop() {
				ts += small.claim(b)
				tl += large.claim(b)
			}
			b.ReportMetric(float64(ts.Nanoseconds())/float64(b.N), "1k-ns/claim")
			b.ReportMetric(float64(tl.Nanoseconds())/float64(b.N), "100k-ns/claim")
			b.ReportMetric(float64(tl)/float64(ts), "100k/1k")
		})
	}
}

// drainOnce drains a backlog of n due deliveries (4 tenants, 5 targets
// each) through Run with a handler that succeeds at once, at the
// reference server's concurrency (16) and the other settings' defaults,
// on db, with a LISTEN beside it on PostgreSQL as channel.Run holds one.
// It returns the deliveries per second, from Run's start to its return
// after the last record.
func drainOnce(b *testing.B, db *bun.DB, n int) float64 {
	b.Helper()
	if err := Migrate(context.Background(), db); err != nil {
		b.Fatal(err)
	}
	seedBacklog(b, db, n, 4, 20, false)
	clock := clocktest.New(t0.Add(time.Hour))
	h := &countingHandler{script: newScript(), n: int64(n), done: make(chan struct{})}
	w, err := NewWorker(db, Config{Kind: "test", Handler: h, Lease: time.Minute, Concurrency: 16, Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	_, took := drainWith(b, db, w, h.done, h.seen.Load, n)
	wantAllSucceeded(b, db)
	if got := h.total(); got != n {
		b.Fatalf("%d attempts for %d deliveries", got, n)
	}
	return float64(n) / took.Seconds()
}

// BenchmarkSQLiteDrain drains 20,000 deliveries (see drainOnce) on SQLite
// and on PostgreSQL in each iteration, and reports each one's deliveries
// per second and their ratio (sqlite/pg), for which issue 29's goal is at
// least 0.5.
func BenchmarkSQLiteDrain(b *testing.B) {
	const n = 20000
	var lite, pg float64
	for b.Loop() {
		b.StopTimer()
		l, p := dbtest.OpenSQLite(b), dbtest.OpenPostgres(b)
		dl := drainOnce(b, l, n)
		l.Close()
		dp := drainOnce(b, p, n)
		p.Close()
		fmt.Fprintf(b.Output(), "sqlite %.0f/s, postgres %.0f/s: %.2f\n", dl, dp, dl/dp)
		lite, pg = lite+dl, pg+dp
		b.StartTimer()
	}
	b.ReportMetric(lite/float64(b.N), "sqlite-deliveries/s")
	b.ReportMetric(pg/float64(b.N), "pg-deliveries/s")
	b.ReportMetric(lite/pg, "sqlite/pg")
}
