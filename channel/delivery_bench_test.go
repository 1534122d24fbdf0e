package channel

// Issue 13's delivery benchmarks, on PostgreSQL, to a webhook on loopback
// answering 204. They are internal tests because the send stage alone
// drives the worker's handler (Open and its attempt function) without the
// outbox's claim and record.

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/outbox"
)

// benchType is the event type the benchmarks publish.
const benchType = "bench.ping"

// benchReceiver is a webhook on loopback that answers 204, counts what it
// gets, keeps the first request's headers and body, and the arrival time
// of each webhook-id.
type benchReceiver struct {
	*httptest.Server
	n       atomic.Int64
	want    atomic.Int64
	done    chan struct{}
	mu      sync.Mutex
	header  http.Header
	body    []byte
	arrived map[string]time.Time
}

func startBenchReceiver(tb testing.TB) *benchReceiver {
	rc := &benchReceiver{done: make(chan struct{}, 1), arrived: map[string]time.Time{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		if rc.body == nil {
			rc.header, rc.body = r.Header.Clone(), b
		}
		if id := r.Header.Get("webhook-id"); id != "" {
			rc.arrived[id] = at
		}
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		if rc.n.Add(1) == rc.want.Load() {
			rc.done <- struct{}{}
		}
	}))
	tb.Cleanup(rc.Close)
	return rc
}

// expect resets the count and makes done fire at the n-th request.
func (rc *benchReceiver) expect(n int) {
	rc.n.Store(0)
	rc.want.Store(int64(n))
}

// wait waits for the expected count, failing tb after a minute.
func (rc *benchReceiver) wait(tb testing.TB) {
	select {
	case <-rc.done:
	case <-time.After(time.Minute):
		tb.Fatalf("the receiver got %d requests of %d", rc.n.Load(), rc.want.Load())
	}
}

// benchSetup is a registry on a fresh PostgreSQL schema with one webhook
// channel, in tenant 1, to a benchReceiver.
type benchSetup struct {
	db      *bun.DB
	r       *ChannelRegistry
	rc      *benchReceiver
	channel int64
}

func newBenchSetup(b *testing.B) *benchSetup {
	b.Helper()
	ctx := context.Background()
	s := &benchSetup{db: dbtest.OpenPostgres(b), rc: startBenchReceiver(b)}
	if err := Migrate(ctx, s.db); err != nil {
		b.Fatal(err)
	}
	var err error
	s.r, err = New(s.db, storeSecret, nil, &Config{AllowPrivateNetworks: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.r.RegisterEventTypes(deskkit.EventType{Name: benchType, Description: "A benchmark's event.", Example: map[string]any{"n": 1}}); err != nil {
		b.Fatal(err)
	}
	a, err := s.r.Add(ctx, deskkit.Principal{UserID: 1, TenantID: 1, Admin: true},
		Input{Type: "WEBHOOK", Name: "bench", Address: s.rc.URL + "/hook"})
	if err != nil {
		b.Fatal(err)
	}
	s.channel = a.ID
	return s
}

func benchEvent(i int) deskkit.Event {
	return deskkit.Event{
		ID:    deskkit.NewEventID(),
		Type:  benchType,
		Title: "Task 'Fix login page' moved to the trash",
		Text:  "Ann moved task 'Fix login page' of project 7 to the trash.",
		Data:  map[string]any{"projectId": 7, "trashId": i, "targetType": "TASK", "targetId": i, "targetName": "Fix login page"},
	}
}

// publish publishes n events in transactions of 100 and returns them as
// the outbox keeps them.
func (s *benchSetup) publish(b *testing.B, n int) []outbox.Event {
	b.Helper()
	ctx := context.Background()
	out := make([]outbox.Event, 0, n)
	for len(out) < n {
		err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for i := len(out); i < min(n, len(out)+100); i++ {
				if err := s.r.Publish(ctx, tx, 1, benchEvent(i)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		var rows []struct {
			ID    string `bun:"event_id"`
			Type  string `bun:"event_type"`
			At    int64  `bun:"occurred_at_ms"`
			Title string `bun:"title"`
			Body  string `bun:"body"`
			Data  string `bun:"data"`
		}
		if err := s.db.NewSelect().Table("deskkit_outbox_events").
			Column("event_id", "event_type", "occurred_at_ms", "title", "body", "data").
			OrderExpr("created_at_ms, event_id").Offset(len(out)).Limit(100).Scan(ctx, &rows); err != nil {
			b.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, outbox.Event{TenantID: 1, ID: r.ID, Type: r.Type, Time: time.UnixMilli(r.At), Title: r.Title, Text: r.Body, Data: []byte(r.Data)})
		}
	}
	return out
}

// endToEnd publishes n events, then runs Run until the receiver has them
// all and Run has recorded them, and returns the time from Run's start.
func (s *benchSetup) endToEnd(b *testing.B, n int) time.Duration {
	b.Helper()
	s.publish(b, n)
	s.rc.expect(n)
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- s.r.Run(ctx) }()
	s.rc.wait(b)
	cancel() // Run records the attempts in flight before it returns
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	var pending int
	if err := s.db.NewSelect().Table("deskkit_outbox_deliveries").ColumnExpr("count(*)").
		Where("status <> 'SUCCEEDED'").Scan(context.Background(), &pending); err != nil || pending != 0 {
		b.Fatalf("%d deliveries not SUCCEEDED after the run (%v)", pending, err)
	}
	return took
}

// sendStage makes one attempt of each of events through the worker's
// handler, concurrency at once: the send stage alone, from claimed
// deliveries to HTTP, without the claim and the record. The events are
// opened first (Open, once per batch of concurrency, as the worker opens
// a claimed batch: it reads and decrypts the batch's channels, one query),
// and that is timed apart: it returns the attempts' time and the opens'.
func (s *benchSetup) sendStage(b *testing.B, events []outbox.Event, concurrency int) (send, open time.Duration) {
	b.Helper()
	ctx := context.Background()
	h := (*handler)(s.r)
	type opened struct {
		attempt func(context.Context, outbox.Delivery) outbox.Outcome
		ds      []outbox.Delivery
	}
	var batches []opened
	start := time.Now()
	for batch := range slices.Chunk(events, concurrency) {
		ds := make([]outbox.Delivery, len(batch))
		for i, ev := range batch {
			ds[i] = outbox.Delivery{ID: int64(i + 1), TenantID: 1, Kind: outboxKind, TargetID: s.channel, Attempt: 1, Event: ev}
		}
		attempt, err := h.Open(ctx, ds)
		if err != nil {
			b.Fatal(err)
		}
		batches = append(batches, opened{attempt, ds})
	}
	open = time.Since(start)
	s.rc.expect(len(events))
	slots := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	var failed atomic.Int64
	start = time.Now()
	for _, o := range batches {
		for _, d := range o.ds {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				if out := o.attempt(ctx, d); !out.OK {
					failed.Add(1)
				}
			})
		}
	}
	wg.Wait()
	send = time.Since(start)
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d attempts failed", n)
	}
	s.rc.wait(b)
	return send, open
}

// plainClient posts body with header to the receiver n times, concurrency
// at once, with a plain net/http client keeping that many connections
// alive.
func (s *benchSetup) plainClient(b *testing.B, n, concurrency int, header http.Header, body []byte) time.Duration {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	s.rc.expect(n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Int64
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				req, _ := http.NewRequest(http.MethodPost, s.rc.URL+"/hook", bytes.NewReader(body))
				req.Header = header.Clone()
				res, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusNoContent {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	if k := failed.Load(); k > 0 {
		b.Fatalf("%d posts failed", k)
	}
	s.rc.wait(b)
	return took
}

// BenchmarkDelivery measures, on PostgreSQL, with the registry's default
// concurrency (8) and a webhook on loopback answering 204, in every
// iteration one after the other (so that a shared machine's drift hits
// them alike):
//
//   - e2e: Run delivering a backlog of n published events, from Run's
//     start to the last outcome recorded (claim, read, sign, post,
//     record);
//   - send: the send stage alone, the handler's attempts for the same
//     events, without the claim, the record and the handler's Open (the
//     batch's channels read and decrypted), which is reported apart, per
//     batch of 8;
//   - plain: a plain net/http client posting the first delivered request
//     (its body and headers) n times, with the same concurrency and as
//     many connections kept alive.
//
// It reports each in deliveries per second and the ratios send/plain
// (issue 13's goal: at least 0.8) and e2e/plain. Run it with
// -benchtime=1x -count=5 and take the median. examples/bench measures the
// worker against River and a plain client, with replicas, on many tenants.
func BenchmarkDelivery(b *testing.B) {
	const n, concurrency = 2000, DefaultConcurrency
	s := newBenchSetup(b)
	var e2e, send, opens, plain []float64
	for b.Loop() {
		e2e = append(e2e, n/s.endToEnd(b, n).Seconds())
		events := s.publish(b, n) // stays PENDING: Run is not running
		st, ot := s.sendStage(b, events, concurrency)
		send = append(send, n/st.Seconds())
		opens = append(opens, float64(ot.Microseconds())/float64((n+concurrency-1)/concurrency))
		s.rc.mu.Lock()
		header, body := s.rc.header, s.rc.body
		s.rc.mu.Unlock()
		plain = append(plain, n/s.plainClient(b, n, concurrency, header, body).Seconds())
		if _, err := s.db.NewDelete().Table("deskkit_outbox_deliveries").Where("status = 'PENDING'").Exec(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	mean := func(xs []float64) float64 {
		t := 0.0
		for _, x := range xs {
			t += x
		}
		return t / float64(len(xs))
	}
	b.ReportMetric(mean(e2e), "e2e-deliveries/s")
	b.ReportMetric(mean(send), "send-deliveries/s")
	b.ReportMetric(mean(opens), "open-µs/batch")
	b.ReportMetric(mean(plain), "plain-posts/s")
	b.ReportMetric(mean(send)/mean(plain), "send/plain")
	b.ReportMetric(mean(e2e)/mean(plain), "e2e/plain")
}

// BenchmarkCommitToAttempt measures the latency from an event's commit to
// its first attempt's arrival at the receiver, on PostgreSQL with Run
// running and an idle queue: events are published one per committed
// transaction at 100 per second for 10 seconds, and the receiver
// timestamps each webhook-id's arrival (the commit's time is taken when
// COMMIT has returned, so a latency is the least it can be by up to one
// round trip). Sub-benchmark "same" publishes through the registry that
// runs Run (woken in-process and by NOTIFY); "replica" through a second
// registry on the same database that does not run it, as another replica
// would, so that only the NOTIFY wakes the worker. It reports p50 and p99
// in milliseconds (issue 13's goal: p50 under 50 ms). Run it with
// -benchtime=1x.
func BenchmarkCommitToAttempt(b *testing.B) {
	for _, replica := range []bool{false, true} {
		name := "same"
		if replica {
			name = "replica"
		}
		b.Run(name, func(b *testing.B) { benchCommitToAttempt(b, replica) })
	}
}

func benchCommitToAttempt(b *testing.B, replica bool) {
	const rate, seconds = 100, 10
	s := newBenchSetup(b)
	pub := s.r
	if replica {
		var err error
		pub, err = New(s.db, storeSecret, nil, &Config{AllowPrivateNetworks: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		if err := pub.RegisterEventTypes(deskkit.EventType{Name: benchType, Description: "A benchmark's event.", Example: map[string]any{"n": 1}}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	var lat []time.Duration
	for b.Loop() {
		s.rc.mu.Lock()
		clear(s.rc.arrived)
		s.rc.mu.Unlock()
		s.rc.expect(rate * seconds)
		committed := make(map[string]time.Time, rate*seconds)
		tick := time.NewTicker(time.Second / rate)
		for i := range rate * seconds {
			<-tick.C
			ev := benchEvent(i)
			err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				return pub.Publish(ctx, tx, 1, ev)
			})
			if err != nil {
				b.Fatal(err)
			}
			committed[ev.ID] = time.Now()
		}
		tick.Stop()
		s.rc.wait(b)
		s.rc.mu.Lock()
		for id, at := range committed {
			arr, ok := s.rc.arrived[id]
			if !ok {
				s.rc.mu.Unlock()
				b.Fatalf("event %s never arrived", id)
			}
			lat = append(lat, arr.Sub(at))
		}
		s.rc.mu.Unlock()
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.Logf("%d events, p50 %.1f ms, p99 %.1f ms", len(lat), q(0.5), q(0.99))
}
