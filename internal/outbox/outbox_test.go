package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// script is a handler whose outcomes the test sets per attempt number; it
// counts the attempts each delivery got and records the Recorded calls.
type script struct {
	mu       sync.Mutex
	outcomes map[int]Outcome // by attempt number; OK if missing
	attempts map[int64]int
	recorded []Outcome
	openErr  error
	block    chan struct{} // when set, attempts wait for it
	started  chan struct{} // when set, gets a value as each attempt starts
}

func newScript() *script {
	return &script{outcomes: map[int]Outcome{}, attempts: map[int64]int{}}
}

func (s *script) Open(ctx context.Context, batch []Delivery) (func(context.Context, Delivery) Outcome, error) {
	if s.openErr != nil {
		return nil, s.openErr
	}
	return func(ctx context.Context, d Delivery) Outcome {
		if s.started != nil {
			s.started <- struct{}{}
		}
		if s.block != nil {
			<-s.block
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.attempts[d.ID]++
		if o, ok := s.outcomes[d.Attempt]; ok {
			return o
		}
		return Outcome{OK: true, StatusCode: 204}
	}, nil
}

func (s *script) Recorded(ctx context.Context, tx bun.Tx, done []Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range done {
		s.recorded = append(s.recorded, r.Outcome)
	}
	return nil
}

func (s *script) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.attempts {
		n += c
	}
	return n
}

func migrated(t *testing.T, db *bun.DB) {
	t.Helper()
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	// A second run changes nothing.
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
}

func newWorker(t *testing.T, db *bun.DB, h Handler, clock *clocktest.Clock, schedule ...time.Duration) *Worker {
	t.Helper()
	if schedule == nil {
		schedule = []time.Duration{0, time.Second, time.Minute}
	}
	w, err := NewWorker(db, Config{
		Kind: "test", Handler: h, Lease: 30 * time.Second, Schedule: schedule,
		// The tests of fair claims set their own; the others run one
		// tenant's deliveries, on up to 8 targets.
		TenantSlots: DefaultConcurrency, TargetInFlight: DefaultConcurrency,
		Now: clock.Now, Rand: func() float64 { return 0.5 }, // no jitter
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func event(id string) Event {
	return Event{TenantID: 1, ID: id, Type: "task.trashed", Time: t0, Title: "A task", Data: json.RawMessage(`{"a":1}`)}
}

func enqueue(t *testing.T, db bun.IDB, ev Event, now time.Time, targets ...int64) bool {
	t.Helper()
	if targets == nil {
		targets = []int64{7}
	}
	q, args := idsQuery(targets)
	added, _, err := NewEnqueuer(dbOf(db), "test", q).Enqueue(context.Background(), db, ev, args, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	return added
}

// idsQuery is a targets query of ids, without payloads, on either database.
func idsQuery(ids []int64) (string, []any) {
	rows := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		rows[i] = "SELECT CAST(? AS bigint) AS id, CAST(NULL AS text) AS payload"
		args[i] = id
	}
	return strings.Join(rows, " UNION ALL "), args
}

// dbOf is the pool of db, a pool or one of its transactions.
func dbOf(db bun.IDB) *bun.DB {
	if d, ok := db.(*bun.DB); ok {
		return d
	}
	return db.NewSelect().DB()
}

func runOnce(t *testing.T, w *Worker) int {
	t.Helper()
	n, err := w.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func only(t *testing.T, db bun.IDB) Info {
	t.Helper()
	total, list, err := List(context.Background(), db, 1, "test", 7, Filter{}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if total != 1 || len(list) != 1 {
		t.Fatalf("List: %d deliveries, want 1", total)
	}
	return list[0]
}

func TestEnqueueIsTransactional(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		s := newScript()
		w := newWorker(t, db, s, clock)

		rollback := errors.New("rollback")
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			enqueue(t, tx, event("msg_rolledback"), clock.Now())
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if n := runOnce(t, w); n != 0 {
			t.Fatalf("claimed %d after a rollback", n)
		}
		err = db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if !enqueue(t, tx, event("msg_a"), clock.Now(), 7, 8) {
				t.Error("a new event was not added")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// The same id again adds nothing, not even a delivery to a new target.
		if enqueue(t, db, event("msg_a"), clock.Now(), 9) {
			t.Error("a second enqueue of one id added it again")
		}
		if n := runOnce(t, w); n != 2 {
			t.Fatalf("claimed %d, want 2", n)
		}
		if n := runOnce(t, w); n != 0 {
			t.Fatalf("claimed %d after all succeeded", n)
		}
		in := only(t, db)
		want := Info{ID: in.ID, TenantID: 1, Kind: "test", TargetID: 7, EventID: "msg_a", EventType: "task.trashed",
			Status: Succeeded, Attempts: 1, LastStatusCode: 204, Created: t0, Finished: t0}
		if diff := cmp.Diff(want, in, byEnglish); diff != "" {
			t.Errorf("delivery (-want +got):\n%s", diff)
		}
		// Another tenant sees nothing of it.
		if _, err := Get(ctx, db, 2, in.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get of another tenant: %v", err)
		}
	})
}

func TestRetryScheduleAndAttempts(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		s := newScript()
		// A NUL, which PostgreSQL's text cannot hold, is replaced.
		s.outcomes[1] = Outcome{StatusCode: 500, Error: deskkit.Plain("the webhook answered 500"), Response: "oo\x00ps"}
		s.outcomes[2] = Outcome{StatusCode: 500, Error: deskkit.Plain("the webhook answered 500")}
		w := newWorker(t, db, s, clock)
		enqueue(t, db, event("msg_r"), clock.Now())

		runOnce(t, w)
		in := only(t, db)
		if in.Status != Pending || !in.NextAttempt.Equal(t0.Add(time.Second)) || in.Attempts != 1 || in.LastStatusCode != 500 {
			t.Fatalf("after one failure: %+v", in)
		}
		clock.Advance(999 * time.Millisecond)
		if n := runOnce(t, w); n != 0 {
			t.Fatalf("claimed %d before it was due", n)
		}
		clock.Advance(time.Millisecond)
		runOnce(t, w)
		clock.Advance(time.Minute)
		runOnce(t, w)
		in = only(t, db)
		if in.Status != Succeeded || in.Attempts != 3 {
			t.Fatalf("after 500, 500, 200: %+v", in)
		}
		got, err := Attempts(ctx, db, 1, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []Attempt{
			{No: 1, Started: t0, StatusCode: 500, Error: deskkit.Plain("the webhook answered 500"), Response: "oo\uFFFDps"},
			{No: 2, Started: t0.Add(time.Second), StatusCode: 500, Error: deskkit.Plain("the webhook answered 500")},
			{No: 3, Started: t0.Add(time.Second + time.Minute), StatusCode: 204},
		}
		if diff := cmp.Diff(want, got, byEnglish); diff != "" {
			t.Errorf("attempts (-want +got):\n%s", diff)
		}
		if other, err := Attempts(ctx, db, 2, in.ID); err != nil || len(other) != 0 {
			t.Errorf("another tenant's attempts: %v %+v", err, other)
		}
	})
}

func TestFailureEnds(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		s := newScript()
		fail := Outcome{StatusCode: 503, Error: deskkit.Plain("down"), RetryAfter: time.Hour}
		s.outcomes[1], s.outcomes[2], s.outcomes[3] = fail, fail, fail
		w := newWorker(t, db, s, clock)
		enqueue(t, db, event("msg_f"), clock.Now())

		runOnce(t, w)
		// Retry-After is longer than the schedule's second delay: it wins.
		if in := only(t, db); !in.NextAttempt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("next attempt %v, want Retry-After's hour", in.NextAttempt)
		}
		clock.Advance(time.Hour)
		runOnce(t, w)
		clock.Advance(time.Hour)
		runOnce(t, w)
		in := only(t, db)
		if in.Status != Failed || in.Attempts != 3 || !in.NextAttempt.IsZero() || in.LastError.String() != "down" {
			t.Fatalf("after the schedule's last failure: %+v", in)
		}
		clock.Advance(48 * time.Hour)
		if n := runOnce(t, w); n != 0 {
			t.Fatalf("a FAILED delivery was claimed")
		}

		// A Final outcome ends it at once.
		s.outcomes[1] = Outcome{Error: deskkit.Plain("blocked"), Final: true}
		enqueue(t, db, event("msg_g"), clock.Now(), 8)
		runOnce(t, w)
		_, list, err := List(context.Background(), db, 1, "test", 8, Filter{Status: Failed}, 0, 10)
		if err != nil || len(list) != 1 || list[0].Attempts != 1 {
			t.Fatalf("final outcome: %v %+v", err, list)
		}
	})
}

func TestJitter(t *testing.T) {
	for _, tc := range []struct {
		rand float64
		want time.Duration
	}{{0, 90 * time.Second}, {0.5, 100 * time.Second}, {0.999999, 100*time.Second + 9999980*time.Microsecond}} {
		w := &Worker{cfg: Config{Jitter: 0.1, Rand: func() float64 { return tc.rand }}}
		got := w.jitter(100 * time.Second)
		if d := got - tc.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("jitter at %v: %v, want %v", tc.rand, got, tc.want)
		}
	}
}

func TestLeaseEndsForADeadWorker(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		s := newScript()
		w := newWorker(t, db, s, clock)
		enqueue(t, db, event("msg_l"), clock.Now())

		// A worker claims and dies before recording anything.
		dead, err := w.claim(ctx, 10, nil)
		if err != nil || len(dead) != 1 {
			t.Fatalf("claim: %v %d", err, len(dead))
		}
		if n := runOnce(t, w); n != 0 {
			t.Fatal("a leased delivery was claimed again before its lease ended")
		}
		clock.Advance(30 * time.Second)
		if n := runOnce(t, w); n != 1 {
			t.Fatal("the delivery was not claimed again after the lease ended")
		}
		// The dead worker's late outcome is dropped.
		if err := w.record(ctx, []done{{Result{dead[0], Outcome{StatusCode: 500, Error: deskkit.Plain("late")}}, t0, time.Second, nil, nil}}); err != nil {
			t.Fatal(err)
		}
		in := only(t, db)
		if in.Status != Succeeded || in.Attempts != 2 || in.LastError.String() != "" {
			t.Fatalf("after the lease moved on: %+v", in)
		}
		got, err := Attempts(ctx, db, 1, in.ID)
		if err != nil || len(got) != 1 || got[0].No != 2 {
			t.Fatalf("attempts: %v %+v", err, got)
		}
	})
}

func TestResendRecoverFailPending(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		s := newScript()
		s.outcomes[1] = Outcome{Error: deskkit.Plain("no"), Final: true}
		w := newWorker(t, db, s, clock)
		enqueue(t, db, event("msg_x"), clock.Now())
		runOnce(t, w)
		id := only(t, db).ID

		if _, err := Resend(ctx, db, 2, id, clock.Now(), 2); !errors.Is(err, ErrNotFound) {
			t.Fatalf("resend of another tenant: %v", err)
		}
		clock.Advance(time.Minute)
		in, err := Resend(ctx, db, 1, id, clock.Now(), 2)
		if err != nil || in.Status != Pending || !in.NextAttempt.Equal(clock.Now()) {
			t.Fatalf("resend: %v %+v", err, in)
		}
		// One more attempt, on the schedule's last step: failing, it ends.
		s.outcomes[2] = Outcome{StatusCode: 500, Error: deskkit.Plain("again")}
		runOnce(t, w)
		if in := only(t, db); in.Status != Failed || in.Attempts != 2 {
			t.Fatalf("after a failed resend: %+v", in)
		}

		n, err := Recover(ctx, db, 1, "test", 7, clock.Now(), clock.Now())
		if err != nil || n != 0 {
			t.Fatalf("recover since after its creation: %d %v", n, err)
		}
		n, err = Recover(ctx, db, 1, "test", 7, t0, clock.Now())
		if err != nil || n != 1 {
			t.Fatalf("recover: %d %v", n, err)
		}
		// The whole schedule again: a failure waits for the second step.
		s.outcomes[3] = Outcome{StatusCode: 500, Error: deskkit.Plain("still")}
		runOnce(t, w)
		in = only(t, db)
		if in.Status != Pending || !in.NextAttempt.Equal(clock.Now().Add(time.Second)) {
			t.Fatalf("after recover and a failure: %+v", in)
		}
		n, err = FailPending(ctx, db, 1, "test", 7, deskkit.Textf("channel disabled"), clock.Now())
		if err != nil || n != 1 {
			t.Fatalf("fail pending: %d %v", n, err)
		}
		if in := only(t, db); in.Status != Failed || in.LastError.String() != "channel disabled" {
			t.Fatalf("after FailPending: %+v", in)
		}
	})
}

func TestPurge(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		s := newScript()
		w := newWorker(t, db, s, clock)
		for i := range 5 {
			enqueue(t, db, event(fmt.Sprintf("msg_%d", i)), clock.Now(), int64(i))
		}
		runOnce(t, w) // all five succeed at t0
		clock.Advance(time.Hour)
		s.outcomes[1] = Outcome{StatusCode: 500, Error: deskkit.Plain("no")}
		enqueue(t, db, event("msg_pending"), clock.Now(), 9)
		runOnce(t, w) // pending, one attempt at t0+1h

		// A target with a rate of its own keeps its row however old.
		if err := SetTargetRate(ctx, db, "test", 1, 42, 5, 1, t0); err != nil {
			t.Fatal(err)
		}

		n, err := Purge(ctx, db, t0.Add(time.Minute), 2)
		if err != nil {
			t.Fatal(err)
		}
		// 5 attempts, 5 deliveries, 5 events and the flow of the 5
		// targets last recorded at t0, in batches of 2.
		if n != 20 {
			t.Errorf("purged %d rows, want 20", n)
		}
		var counts [4]int
		for i, table := range []string{"deskkit_outbox_attempts", "deskkit_outbox_deliveries", "deskkit_outbox_events", "deskkit_outbox_targets"} {
			if counts[i], err = db.NewSelect().Table(table).Count(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if counts != [4]int{1, 1, 1, 2} {
			t.Errorf("left %v, want the pending delivery, its attempt, its event, and the flow of its target and of the rate-limited one", counts)
		}
	})
}

// TestNobodyDiesEachOnce runs three workers on one queue at once: every
// delivery gets exactly one attempt.
func TestNobodyDiesEachOnce(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		const n = 300
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			for i := range n {
				enqueue(t, tx, event(fmt.Sprintf("msg_%d", i)), clock.Now(), 1, 2)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		s := newScript()
		var wg sync.WaitGroup
		var claimed atomic.Int64
		for range 3 {
			w := newWorker(t, db, s, clock)
			wg.Go(func() {
				for {
					k, err := w.RunOnce(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if k == 0 {
						return
					}
					claimed.Add(int64(k))
				}
			})
		}
		wg.Wait()
		if claimed.Load() != 2*n || s.total() != 2*n {
			t.Errorf("claimed %d, attempted %d; want %d each", claimed.Load(), s.total(), 2*n)
		}
		for id, c := range s.attempts {
			if c != 1 {
				t.Errorf("delivery %d attempted %d times", id, c)
			}
		}
	})
}

// TestRunShutdown: Run stops claiming when its context ends and waits for
// the attempt in flight, whose outcome is recorded.
func TestRunShutdown(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		s := newScript()
		s.block = make(chan struct{})
		s.started = make(chan struct{}, 1)
		w := newWorker(t, db, s, clock)
		enqueue(t, db, event("msg_s"), clock.Now())

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			w.Run(ctx)
			close(done)
		}()
		// The attempt starts; then shutdown; then the far end answers.
		<-s.started
		cancel()
		select {
		case <-done:
			t.Fatal("Run returned with an attempt in flight")
		default:
		}
		close(s.block)
		<-done
		if in := only(t, db); in.Status != Succeeded {
			t.Fatalf("the attempt in flight at shutdown was not recorded: %+v", in)
		}
	})
}

// TestRunsTakeTurns: a second Run on one worker waits until the first
// returns, then delivers what the first gave back at its shutdown: the
// two do not share the queue of claimed deliveries, where the first's
// shutdown would stop the second's attempts.
func TestRunsTakeTurns(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		for i := range 4 {
			enqueue(t, db, event(fmt.Sprintf("msg_%d", i)), clock.Now(), int64(1+i))
		}
		s := newScript()
		s.block = make(chan struct{})
		s.started = make(chan struct{}, 4)
		w := fairWorker(t, db, s, clock, Config{Concurrency: 2, BatchSize: 2, TenantSlots: 2, Poll: time.Hour})
		run := func(ctx context.Context) <-chan struct{} {
			done := make(chan struct{})
			go func() {
				w.Run(ctx)
				close(done)
			}()
			return done
		}
		ctxA, cancelA := context.WithCancel(context.Background())
		doneA := run(ctxA)
		<-s.started
		<-s.started
		ctxB, cancelB := context.WithCancel(context.Background())
		defer cancelB()
		doneB := run(ctxB)
		// The first stops: it gives back the two claimed ahead and
		// records its two attempts.
		cancelA()
		close(s.block)
		<-doneA
		succeeded := func() int {
			t.Helper()
			n, err := db.NewSelect().Table("deskkit_outbox_deliveries").Where("status = ?", Succeeded).Count(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		guard := time.Now()
		for succeeded() < 4 {
			if time.Since(guard) > 10*time.Second {
				t.Fatalf("%d of 4 deliveries succeeded after the first Run returned; the second Run does not deliver the rest", succeeded())
			}
			runtime.Gosched()
		}
		cancelB()
		<-doneB
		if got := s.total(); got != 4 {
			t.Errorf("%d attempts; want 4, one each", got)
		}
	})
}

// TestRunDrainsABacklog: Run keeps claiming while due deliveries are
// left, also when attempts end one at a time and each claim asks for the
// one slot that came free; it does not wait for the poll (an hour here).
func TestRunDrainsABacklog(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		clock := clocktest.New(t0)
		const n = 6
		for i := range n {
			enqueue(t, db, event(fmt.Sprintf("msg_%d", i)), clock.Now())
		}
		s := newScript()
		s.block = make(chan struct{})
		s.started = make(chan struct{}, n)
		w, err := NewWorker(db, Config{Kind: "test", Handler: s, Concurrency: 2, TenantSlots: 2, TargetInFlight: 2,
			Lease: 30 * time.Second, Poll: time.Hour, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			w.Run(ctx)
			close(done)
		}()
		defer func() { cancel(); close(s.block); <-done }()
		started := func(k int) {
			t.Helper()
			select {
			case <-s.started:
			case <-time.After(10 * time.Second):
				t.Fatalf("attempt %d of %d did not start: the worker waits for its poll", k, n)
			}
		}
		started(1)
		started(2)
		// Both slots are taken; each attempt let through frees one, which
		// the next claim takes alone.
		for k := 3; k <= n; k++ {
			s.block <- struct{}{}
			started(k)
		}
	})
}

// TestListenWakes: on PostgreSQL, a commit that enqueues wakes the
// listening worker of its kind.
func TestListenWakes(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	migrated(t, db)
	clock := clocktest.New(t0)
	w := newWorker(t, db, newScript(), clock)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Listen(ctx, db, slog.New(slog.DiscardHandler), w)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	// Listen wakes every worker once it listens: wait for that first.
	select {
	case <-w.wake:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not start")
	}
	enqueue(t, db, event("msg_n"), clock.Now())
	select {
	case <-w.wake:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up after the commit")
	}
}

// TestDeliveryWithoutEvent: a delivery whose event row is gone (written by
// hand) ends FAILED instead of being claimed at every lease.
func TestDeliveryWithoutEvent(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		s := newScript()
		w := newWorker(t, db, s, clock)
		enqueue(t, db, event("msg_orphan"), clock.Now())
		if _, err := db.NewDelete().Table("deskkit_outbox_events").Where("event_id = ?", "msg_orphan").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		runOnce(t, w)
		var status, lastError string
		if err := db.NewSelect().Table("deskkit_outbox_deliveries").Column("status", "last_error").Scan(ctx, &status, &lastError); err != nil {
			t.Fatal(err)
		}
		if status != Failed || lastError != "its event is missing" || s.total() != 0 {
			t.Errorf("status %s, error %q, %d attempts", status, lastError, s.total())
		}
		clock.Advance(time.Hour)
		if n := runOnce(t, w); n != 0 {
			t.Errorf("claimed %d again", n)
		}
	})
}

// TestRelease: a claim given back (one that returned after a shutdown
// began) leaves its deliveries due at once, without the attempt it counted.
func TestRelease(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		clock := clocktest.New(t0)
		s := newScript()
		w := newWorker(t, db, s, clock)
		enqueue(t, db, event("msg_back"), clock.Now())
		batch, err := w.claim(ctx, 10, nil)
		if err != nil || len(batch) != 1 {
			t.Fatalf("claim: %v, %d", err, len(batch))
		}
		if err := w.release(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if in := only(t, db); in.Status != Pending || in.Attempts != 0 || !in.NextAttempt.Equal(t0) {
			t.Fatalf("after the release: %+v", in)
		}
		if n := runOnce(t, w); n != 1 || s.total() != 1 {
			t.Fatalf("claimed %d, attempted %d after the release; want 1 each", n, s.total())
		}
	})
}

func TestDollars(t *testing.T) {
	got := dollars("SELECT ? FROM t WHERE a = ? AND b = left(?, 2)")
	if want := "SELECT $1 FROM t WHERE a = $2 AND b = left($3, 2)"; got != want {
		t.Errorf("dollars = %q, want %q", got, want)
	}
}

// TestEnqueue: what an enqueue writes, on either database, from a targets
// query of many ids and from OneTarget with a payload; that an id the
// tenant already published adds nothing, in that tenant only; and that a
// rollback leaves nothing.
func TestEnqueue(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		migrated(t, db)
		type row struct {
			TenantID int64   `bun:"tenant_id"`
			EventID  string  `bun:"event_id"`
			Kind     string  `bun:"kind"`
			TargetID int64   `bun:"target_id"`
			Payload  *string `bun:"payload"`
			Status   string  `bun:"status"`
			DueAt    int64   `bun:"due_at_ms"`
		}
		rows := func(t *testing.T) []row {
			t.Helper()
			var got []row
			if err := db.NewSelect().Table("deskkit_outbox_deliveries").
				Column("tenant_id", "event_id", "kind", "target_id", "payload", "status", "due_at_ms").
				OrderExpr("tenant_id, event_id, target_id").Scan(ctx, &got); err != nil {
				t.Fatal(err)
			}
			return got
		}
		events := func(t *testing.T) int {
			t.Helper()
			n, err := db.NewSelect().Table("deskkit_outbox_events").Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		inTx := func(t *testing.T, e *Enqueuer, ev Event, args []any, want error) (bool, int) {
			t.Helper()
			var isNew bool
			var n int
			err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
				var err error
				if isNew, n, err = e.Enqueue(ctx, tx, ev, args, t0, time.Minute); err != nil {
					t.Fatal(err)
				}
				return want
			})
			if !errors.Is(err, want) {
				t.Fatal(err)
			}
			return isNew, n
		}
		ids, idArgs := idsQuery([]int64{7, 8})
		many := NewEnqueuer(db, "test", ids)
		notices := NewEnqueuer(db, "notice", OneTarget)

		rollback := errors.New("rollback")
		inTx(t, many, event("msg_rolledback"), idArgs, rollback)
		inTx(t, notices, event("msg_rolledback_notice"), []any{int64(5), `{"address":"a@example.com"}`}, rollback)
		if got, n := rows(t), events(t); len(got) != 0 || n != 0 {
			t.Fatalf("after rollbacks: %d events, deliveries %+v", n, got)
		}

		for _, c := range []struct {
			e     *Enqueuer
			ev    Event
			args  []any
			isNew bool
			n     int
		}{
			{many, event("msg_a"), idArgs, true, 2},
			{notices, event("msg_n"), []any{int64(5), `{"address":"a@example.com"}`}, true, 1},
			{NewEnqueuer(db, "test", OneTarget), event("msg_none"), []any{int64(6), nil}, true, 1},
			// The same id again adds nothing, not even a delivery to
			// another target or of another kind.
			{many, event("msg_a"), idArgs, false, 0},
			{notices, event("msg_a"), []any{int64(9), "x"}, false, 0},
			// In another tenant the id is new.
			{many, Event{TenantID: 2, ID: "msg_a", Type: "task.trashed", Time: t0}, idArgs, true, 2},
			// Targets that select nothing: the event, no delivery.
			{NewEnqueuer(db, "test", OneTarget+" WHERE 1 = 0"), event("msg_nobody"), []any{int64(7), nil}, true, 0},
		} {
			if isNew, n := inTx(t, c.e, c.ev, c.args, nil); isNew != c.isNew || n != c.n {
				t.Errorf("enqueue %s (%s): new %v, %d deliveries; want %v, %d", c.ev.ID, c.e.kind, isNew, n, c.isNew, c.n)
			}
		}
		due := t0.Add(time.Minute).UnixMilli()
		address := `{"address":"a@example.com"}`
		want := []row{
			{1, "msg_a", "test", 7, nil, Pending, due},
			{1, "msg_a", "test", 8, nil, Pending, due},
			{1, "msg_n", "notice", 5, &address, Pending, due},
			{1, "msg_none", "test", 6, nil, Pending, due},
			{2, "msg_a", "test", 7, nil, Pending, due},
			{2, "msg_a", "test", 8, nil, Pending, due},
		}
		if diff := cmp.Diff(want, rows(t)); diff != "" {
			t.Errorf("deliveries (-want +got):\n%s", diff)
		}
		if n := events(t); n != 5 {
			t.Errorf("%d events, want 5", n)
		}
		// The event as stored, as a worker reads it.
		var ev eventRow
		if err := db.NewSelect().Model(&ev).Where("tenant_id = 1 AND event_id = 'msg_a'").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(event("msg_a"), ev.event(), cmp.Comparer(time.Time.Equal)); diff != "" {
			t.Errorf("event (-want +got):\n%s", diff)
		}
	})
}

// TestEnqueueNotifies: on PostgreSQL an enqueue NOTIFYs its kind, at
// commit, only when it wrote a delivery (not for an event without
// targets, a repeated id or a rollback), prepared or not. Each enqueue is
// followed by a marker notification from another session: notifications
// arrive in commit order, so the marker shows what came before it without
// waiting for what does not come.
func TestEnqueueNotifies(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	migrated(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln := pgdriver.NewListener(db)
	defer ln.Close()
	if err := ln.Listen(ctx, notifyChannel); err != nil {
		t.Fatal(err)
	}
	// The NOTIFY channel is the database's: other tests' schemas share it,
	// so this test's kind and markers are its own.
	kind := fmt.Sprintf("test_notify_%d", time.Now().UnixNano())
	// Targets: 7, if the argument is 7.
	const targets = `SELECT t.id, NULL AS payload FROM (VALUES (7::bigint)) AS t (id) WHERE t.id = ?`
	prepared := NewEnqueuer(db, kind, targets)
	if err := prepared.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	marker := 0
	// next is the first of this test's notifications to arrive.
	next := func() string {
		t.Helper()
		for {
			_, payload, err := ln.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(payload, kind) {
				return payload
			}
		}
	}
	for name, e := range map[string]*Enqueuer{"unprepared": NewEnqueuer(db, kind, targets), "prepared": prepared} {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				id       string
				targets  []any
				rollback bool
				notified bool
			}{
				{"msg_" + name + "_nobody", []any{int64(0)}, false, false},
				{"msg_" + name, []any{int64(7)}, false, true},
				{"msg_" + name, []any{int64(7)}, false, false},
				{"msg_" + name + "_rolledback", []any{int64(7)}, true, false},
			} {
				err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
					if _, _, err := e.Enqueue(ctx, tx, event(c.id), c.targets, t0, 0); err != nil {
						return err
					}
					if c.rollback {
						return errRollback
					}
					return nil
				})
				if err != nil && !errors.Is(err, errRollback) {
					t.Fatal(err)
				}
				marker++
				m := fmt.Sprintf("%s_marker_%d", kind, marker)
				if err := pgdriver.Notify(ctx, db, notifyChannel, m); err != nil {
					t.Fatal(err)
				}
				if c.notified {
					if got := next(); got != kind {
						t.Errorf("%s: first notification %q, want %q", c.id, got, kind)
					}
				}
				if got := next(); got != m {
					t.Errorf("%s: notification %q before the marker %q", c.id, got, m)
				}
			}
		})
	}
}

var errRollback = errors.New("rollback")

// TestEnqueuePrepared: on PostgreSQL, Enqueue in a transaction of its
// pool runs the prepared statement once Prepare has prepared it, and the
// statement unprepared before, or in a transaction of another pool; all
// write the same rows.
func TestEnqueuePrepared(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	migrated(t, db)
	other := dbtest.OpenPostgres(t)
	const targets = `SELECT t.id, NULL AS payload FROM (VALUES (7::bigint), (8::bigint)) AS t (id) WHERE t.id >= ?`
	var plain plainCount
	db.AddQueryHook(&plain)
	prepared := NewEnqueuer(db, "test", targets)
	if err := prepared.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		e         *Enqueuer
		wantPlain int64 // statements bun ran: the unprepared ones
	}{
		"own pool":             {prepared, 0},
		"own pool, unprepared": {NewEnqueuer(db, "test", targets), 2},
		"another pool":         {NewEnqueuer(other, "test", targets), 2},
	} {
		t.Run(name, func(t *testing.T) {
			plain.n.Store(0)
			ctx := context.Background()
			id := "msg_" + strings.ReplaceAll(name, " ", "_")
			for i := range 2 { // the second time, the id adds nothing
				err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
					isNew, n, err := tc.e.Enqueue(ctx, tx, event(id), []any{int64(8)}, t0, 0)
					if wantNew, wantN := i == 0, 1-i; err == nil && (isNew != wantNew || n != wantN) {
						t.Errorf("enqueue %d: new %v, %d deliveries; want %v, %d", i, isNew, n, wantNew, wantN)
					}
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			var targetIDs []int64
			if err := db.NewSelect().Table("deskkit_outbox_deliveries").Column("target_id").Where("event_id = ?", id).Scan(ctx, &targetIDs); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(targetIDs, []int64{8}) {
				t.Errorf("deliveries to %v, want [8]", targetIDs)
			}
			if n := plain.n.Load(); n != tc.wantPlain {
				t.Errorf("the unprepared statement ran %d times, want %d", n, tc.wantPlain)
			}
		})
	}
}

// TestEnqueuePoolOfOne: an enqueue in a transaction never asks the pool
// for a second connection, which a pool of one would never give: before
// Prepare it runs the statement unprepared, after it the prepared
// statement on the transaction's own connection.
func TestEnqueuePoolOfOne(t *testing.T) {
	db := dbtest.OpenPostgres(t)
	migrated(t, db)
	db.SetMaxOpenConns(1)
	e := NewEnqueuer(db, "test", OneTarget)
	// A wait for a second connection ends here, as a request's would.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	publish := func(id string) {
		t.Helper()
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			_, _, err := e.Enqueue(ctx, tx, event(id), []any{int64(7), nil}, t0, 0)
			return err
		})
		if err != nil {
			t.Fatalf("publish %s on a pool of one: %v", id, err)
		}
	}
	publish("msg_before_prepare")
	// A Prepare waiting for the pool's one connection, held by a
	// publishing transaction, must not hold up that transaction's enqueue.
	prepared := make(chan error, 1)
	err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		go func() { prepared <- e.Prepare(ctx) }()
		for db.Stats().WaitCount == 0 { // Prepare waits for the connection
			runtime.Gosched()
		}
		_, _, err := e.Enqueue(ctx, tx, event("msg_while_preparing"), []any{int64(7), nil}, t0, 0)
		return err
	})
	if err != nil {
		t.Fatalf("publish while Prepare waits for the connection: %v", err)
	}
	if err := <-prepared; err != nil {
		t.Fatal(err)
	}
	if e.stmt.Load() == nil {
		t.Fatal("Prepare returned without a statement")
	}
	publish("msg_after_prepare")
	var ids []string
	if err := db.NewSelect().Table("deskkit_outbox_deliveries").Column("event_id").Where("target_id = 7").OrderExpr("event_id").Scan(ctx, &ids); err != nil {
		t.Fatal(err)
	}
	if want := []string{"msg_after_prepare", "msg_before_prepare", "msg_while_preparing"}; !slices.Equal(ids, want) {
		t.Errorf("deliveries of %v, want %v", ids, want)
	}
}

// plainCount counts the enqueue statements bun runs (the prepared one
// bypasses bun).
type plainCount struct{ n atomic.Int64 }

func (c *plainCount) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (c *plainCount) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if strings.HasPrefix(e.Query, "WITH ev AS") {
		c.n.Add(1)
	}
}

// byEnglish compares messages by their English.
var byEnglish = cmp.Comparer(func(a, b deskkit.Text) bool { return a.String() == b.String() })

// An outcome's error is recorded as its English and as its message (key
// and arguments), read back as the message, in one flush on either
// database; an error too long to keep whole is recorded as its English,
// cut.
func TestErrorRecordedAsMessage(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		migrated(t, db)
		ctx := context.Background()
		clock := clocktest.New(t0)
		s := newScript()
		s.outcomes[1] = Outcome{StatusCode: 503, Error: deskkit.Textf("%s answered %s", deskkit.Textf("the webhook"), "503 Service Unavailable")}
		long := strings.Repeat("x", maxErrorBytes+10)
		s.outcomes[2] = Outcome{StatusCode: 500, Error: deskkit.Textf("the webhook answered %s", long)}
		w := newWorker(t, db, s, clock)
		enqueue(t, db, event("msg_m"), clock.Now())

		runOnce(t, w)
		in := only(t, db)
		if in.LastError.Key() != "%s answered %s" || in.LastError.String() != "the webhook answered 503 Service Unavailable" {
			t.Fatalf("last error %q (key %q)", in.LastError, in.LastError.Key())
		}
		var english string
		if err := db.NewRaw("SELECT last_error FROM deskkit_outbox_deliveries WHERE id = ?", in.ID).Scan(ctx, &english); err != nil || english != in.LastError.String() {
			t.Errorf("the English column holds %q (%v)", english, err)
		}
		clock.Advance(time.Minute)
		runOnce(t, w)
		a, err := Attempts(ctx, db, 1, in.ID)
		if err != nil || len(a) != 2 {
			t.Fatalf("attempts %+v, %v", a, err)
		}
		if a[0].Error.Key() != "%s answered %s" {
			t.Errorf("the first attempt's error %q", a[0].Error.Key())
		}
		// The webhook kind's catalogue has "the webhook"; the channel
		// registry loads it, which this package does not import.
		msgs, err := deskkit.NewMessages(os.DirFS("../../channel/internal/webhook"))
		if err != nil {
			t.Fatal(err)
		}
		zh := msgs.Match("zh")
		if want := Cut("the webhook answered "+long, maxErrorBytes); a[1].Error.String() != want || a[1].Error.LocalizedMessage(msgs, zh) != want {
			t.Errorf("the long error is kept as %q", a[1].Error)
		}
		if got := in.LastError.LocalizedMessage(msgs, zh); got != "Webhook 返回 503 Service Unavailable" {
			t.Errorf("the last error in Chinese: %q", got)
		}
	})
}
