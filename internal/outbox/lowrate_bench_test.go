package outbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/deskkit/deskkit/internal/dbtest"
)

// BenchmarkSteadyRate measures what a delivery costs when events come one
// by one at a steady rate (issue 29, "cheap at low rates"), against what
// it costs in a drain of a backlog, with the same worker in the same run.
// A worker (Run, with a LISTEN beside it, at the default Config) first
// takes events published at rate a second, one event and one delivery per
// transaction, paced by a PostgreSQL procedure on a connection of its own
// (so that the publisher costs neither this process nor the worker's
// backends anything); then a backlog of drainN deliveries committed at
// once. For each phase the CPU time of this process (getrusage) and of the
// PostgreSQL backends of the worker's pool and listener (their
// /proc/<pid>/schedstat, the server being on this machine) is divided by
// the deliveries. It reports both, their ratio (steady/drain: issue 29's
// goal is at most 2 at 100 to 500 a second), the claims and the claims
// that found nothing per delivery, the deliveries per flush, the rate the
// publisher reached, and the p50 and p99 of the time from a publishing
// commit to the attempt's start (the commit is stamped just before it, in
// microseconds), and what the worker and this process cost a second
// doing nothing (idle: a hundredth of it falls on each delivery at 100
// events/s).
func BenchmarkSteadyRate(b *testing.B) {
	const drainN = 5000
	for _, c := range []struct {
		rate int
		secs float64
	}{{100, 5}, {500, 4}, {1000, 3}} {
		b.Run(fmt.Sprintf("rate=%d", c.rate), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s := newSteadyBench(b)
				// Warm up: the pool's connections opened, statements
				// prepared, before anything is counted.
				s.publish(b, "warm", 50, 500)
				s.wait(b, 50)

				// What the worker and this process cost doing nothing,
				// a second: at 100 events/s a hundredth of it falls on
				// each delivery.
				before := s.cpu(b)
				time.Sleep(2 * time.Second)
				idle := s.cpu(b).sub(before)

				n := int(float64(c.rate) * c.secs)
				s.h.reset()
				claims, opens, flushes := s.w.claimClock.claims.Load(), s.h.opens.Load(), s.h.flushes.Load()
				before = s.cpu(b)
				start := time.Now()
				s.publish(b, "steady", n, c.rate)
				published := time.Since(start)
				s.wait(b, 50+n)
				steady := s.cpu(b).sub(before)
				lat := s.h.latencies()
				claims = s.w.claimClock.claims.Load() - claims
				opens = s.h.opens.Load() - opens
				flushes = s.h.flushes.Load() - flushes

				before = s.cpu(b)
				s.backlog(b, drainN)
				s.wait(b, 50+n+drainN)
				drain := s.cpu(b).sub(before)
				s.stop()
				wantAllSucceeded(b, s.pub)
				if got := s.h.attempts.Load(); got != int64(50+n+drainN) {
					b.Fatalf("%d attempts for %d deliveries", got, 50+n+drainN)
				}

				perSteady := steady.total() / time.Duration(n)
				perDrain := drain.total() / drainN
				b.ReportMetric(float64(perSteady.Microseconds()), "steady-µs/delivery")
				b.ReportMetric(float64((steady.pg / time.Duration(n)).Microseconds()), "steady-pg-µs/delivery")
				b.ReportMetric(float64(perDrain.Microseconds()), "drain-µs/delivery")
				b.ReportMetric(float64(perSteady)/float64(perDrain), "steady/drain")
				b.ReportMetric(float64(claims)/float64(n), "claims/delivery")
				b.ReportMetric(float64(claims-opens)/float64(n), "empty-claims/delivery")
				b.ReportMetric(float64(n)/float64(max(flushes, 1)), "deliveries/flush")
				b.ReportMetric(float64(n)/published.Seconds(), "published/s")
				b.ReportMetric(float64(idle.total().Microseconds())/2, "idle-µs/s")
				b.ReportMetric(percentile(lat, 0.50), "p50-ms")
				b.ReportMetric(percentile(lat, 0.99), "p99-ms")
				b.StartTimer()
			}
		})
	}
}

// steadyBench is BenchmarkSteadyRate's worker, its pools and its handler.
type steadyBench struct {
	pub  *bun.DB // the publisher's pool: its backends are not counted
	app  string  // the application_name of the worker's connections
	w    *Worker
	h    *steadyHandler
	stop func()
}

func newSteadyBench(b *testing.B) *steadyBench {
	b.Helper()
	ctx := context.Background()
	pub := dbtest.OpenPostgres(b)
	if err := Migrate(ctx, pub); err != nil {
		b.Fatal(err)
	}
	if _, err := pub.ExecContext(ctx, publishProc); err != nil {
		b.Fatal(err)
	}
	var schema string
	if err := pub.NewRaw("SELECT current_schema()").Scan(ctx, &schema); err != nil {
		b.Fatal(err)
	}
	r := make([]byte, 6)
	_, _ = rand.Read(r)
	app := "deskkit_steady_" + hex.EncodeToString(r)
	db := dbtest.OpenSchema(dbtest.RequirePostgres(b), schema, pgdriver.WithApplicationName(app))
	b.Cleanup(func() { db.Close() })
	h := &steadyHandler{seenAt: make(chan struct{}, 1)}
	w, err := NewWorker(db, Config{Kind: "test", Handler: h, Lease: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { Listen(runCtx, db, slog.New(slog.DiscardHandler), w) })
	wg.Go(func() { w.Run(runCtx) })
	s := &steadyBench{pub: pub, app: app, w: w, h: h}
	s.stop = func() {
		cancel()
		wg.Wait()
	}
	b.Cleanup(s.stop)
	return s
}

// publishProc publishes n events of kind "test" at rate a second, each in
// its own transaction with one delivery (to target i % 5 of tenant 1) and
// the NOTIFY Enqueue sends, its title the commit's time in microseconds
// (stamped just before the commit). It paces itself on the clock, so a
// late commit does not lower the rate.
const publishProc = `CREATE PROCEDURE bench_publish(prefix text, n int, rate int) LANGUAGE plpgsql AS $$
DECLARE
  start timestamptz := clock_timestamp();
  ms bigint;
BEGIN
  FOR i IN 1..n LOOP
    PERFORM pg_sleep(greatest(0, extract(epoch FROM start + make_interval(secs => (i - 1)::float8 / rate) - clock_timestamp())));
    ms := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    INSERT INTO deskkit_outbox_events (tenant_id, event_id, event_type, occurred_at_ms, title, body, data, created_at_ms)
      VALUES (1, prefix || i, 'task.trashed', ms, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint::text, '', '{}', ms);
    INSERT INTO deskkit_outbox_deliveries (tenant_id, event_id, kind, target_id, status, attempts, step, due_at_ms, created_at_ms)
      VALUES (1, prefix || i, 'test', i % 5, 'PENDING', 0, 0, ms, ms);
    PERFORM pg_notify('` + notifyChannel + `', 'test');
    COMMIT;
  END LOOP;
END $$`

// publish runs bench_publish on the publisher's pool and returns when the
// last event is committed.
func (s *steadyBench) publish(b *testing.B, prefix string, n, rate int) {
	b.Helper()
	if _, err := s.pub.ExecContext(context.Background(), "CALL bench_publish(?, ?, ?)", prefix, n, rate); err != nil {
		b.Fatal(err)
	}
}

// backlog commits n deliveries (to targets 0 to 4 of tenant 1) at once,
// and their NOTIFY, on the publisher's pool.
func (s *steadyBench) backlog(b *testing.B, n int) {
	b.Helper()
	ctx := context.Background()
	now := time.Now().UnixMilli()
	err := s.pub.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, q := range []string{
			`INSERT INTO deskkit_outbox_events (tenant_id, event_id, event_type, occurred_at_ms, title, body, data, created_at_ms)
SELECT 1, 'drain' || i, 'task.trashed', ?0, '', '', '{}', ?0 FROM generate_series(1, ?1) AS i`,
			`INSERT INTO deskkit_outbox_deliveries (tenant_id, event_id, kind, target_id, status, attempts, step, due_at_ms, created_at_ms)
SELECT 1, 'drain' || i, 'test', i % 5, 'PENDING', 0, 0, ?0, ?0 FROM generate_series(1, ?1) AS i`,
			`SELECT pg_notify('` + notifyChannel + `', 'test')`,
		} {
			if _, err := tx.ExecContext(ctx, q, now, n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// wait waits until n outcomes in all have been recorded, for at most a
// minute.
func (s *steadyBench) wait(b *testing.B, n int) {
	b.Helper()
	timeout := time.After(time.Minute)
	for s.h.seen.Load() < int64(n) {
		select {
		case <-s.h.seenAt:
		case <-timeout:
			b.Fatalf("%d of %d outcomes recorded in a minute", s.h.seen.Load(), n)
		}
	}
}

// cpuTime is CPU time spent by this process and by the worker's backends.
type cpuTime struct {
	self time.Duration
	pg   time.Duration
	pids map[int]time.Duration
}

func (c cpuTime) total() time.Duration { return c.self + c.pg }

// sub is the CPU time spent from before to c; a backend that started
// since counts from zero.
func (c cpuTime) sub(before cpuTime) cpuTime {
	d := cpuTime{self: c.self - before.self}
	for pid, t := range c.pids {
		d.pg += t - before.pids[pid]
	}
	return d
}

// cpu samples the CPU time of this process and of the backends whose
// application_name is s.app (read through the publisher's pool, so that
// the query is not counted).
func (s *steadyBench) cpu(b *testing.B) cpuTime {
	b.Helper()
	var pids []int
	if err := s.pub.NewRaw("SELECT pid FROM pg_stat_activity WHERE application_name = ?", s.app).Scan(context.Background(), &pids); err != nil {
		b.Fatal(err)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	c := cpuTime{
		self: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		pids: map[int]time.Duration{},
	}
	for _, pid := range pids {
		// schedstat's first field is the time on a CPU, in nanoseconds.
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			continue // a backend that just ended
		}
		f := strings.Fields(string(raw))
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/schedstat: %q", pid, raw)
		}
		c.pids[pid] = time.Duration(ns)
		c.pg += time.Duration(ns)
	}
	return c
}

// steadyHandler succeeds at once, keeps the time from each stamped
// event's commit to its attempt, and counts batches, flushes and outcomes.
type steadyHandler struct {
	opens, attempts, flushes, seen atomic.Int64
	seenAt                         chan struct{} // gets a value after each flush

	mu  sync.Mutex
	lat []int64 // the attempt's time minus the event's title, in µs
}

func (h *steadyHandler) Open(ctx context.Context, batch []Delivery) (func(context.Context, Delivery) Outcome, error) {
	h.opens.Add(1)
	return func(ctx context.Context, d Delivery) Outcome {
		h.attempts.Add(1)
		if d.Event.Title != "" {
			now := time.Now().UnixMicro()
			stamp, _ := strconv.ParseInt(d.Event.Title, 10, 64)
			h.mu.Lock()
			h.lat = append(h.lat, now-stamp)
			h.mu.Unlock()
		}
		return Outcome{OK: true, StatusCode: 204}
	}, nil
}

func (h *steadyHandler) Recorded(ctx context.Context, tx bun.Tx, done []Result) error {
	h.flushes.Add(1)
	h.seen.Add(int64(len(done)))
	select {
	case h.seenAt <- struct{}{}:
	default:
	}
	return nil
}

// reset forgets the latencies kept so far.
func (h *steadyHandler) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lat = nil
}

// latencies returns the latencies kept, in milliseconds, sorted.
func (h *steadyHandler) latencies() []float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]float64, 0, len(h.lat))
	for _, l := range h.lat {
		out = append(out, float64(l)/1000)
	}
	slices.Sort(out)
	return out
}

// percentile returns the p-th quantile of sorted, 0 if empty.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}
