package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/deskkit/deskkit"
)

// DefaultSchedule is the delay before each attempt, the first counted from
// the enqueue and each other from the failure before it: eight attempts
// over about 27 hours, as Svix makes them.
var DefaultSchedule = []time.Duration{
	0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// Defaults of Config.
const (
	DefaultJitter      = 0.1
	DefaultConcurrency = 8
	DefaultPoll        = time.Second
	// DefaultTargetInFlight is how many deliveries of one target may be in
	// flight at once, across every worker.
	DefaultTargetInFlight = 4
	// DefaultFlushEvery and DefaultFlushSize bound how long an outcome
	// waits to be recorded, and how many are recorded together.
	DefaultFlushEvery = 5 * time.Millisecond
	DefaultFlushSize  = 100
	// MaxRetryAfter caps how far a far end's Retry-After pushes the next
	// attempt out.
	MaxRetryAfter = 24 * time.Hour
	// MaxResponseBytes is how much of a reply an attempt keeps: 4 KiB
	// (1 KiB before issue 32; attempts recorded before keep their 1 KiB).
	MaxResponseBytes = 4096
	// maxErrorBytes bounds an attempt's error text.
	maxErrorBytes = 1000
	// refillWait is how long a worker with a backlog and an idle slot
	// waits for a whole batch's room before it claims for the room there
	// is.
	refillWait = 2 * time.Millisecond
	// quickPoll is how soon a worker whose last claims found deliveries
	// looks again without a wake, while no listener holds a LISTEN; it
	// doubles with each look that finds none, up to Config.Poll.
	quickPoll = 5 * time.Millisecond
)

// Delivery is a claimed delivery, for one attempt.
type Delivery struct {
	ID       int64
	TenantID int64
	Kind     string
	TargetID int64
	Payload  string
	// Attempt is this attempt's number, from 1.
	Attempt int
	Event   Event
	// TargetState is what Config.TargetState read of the target as the
	// delivery was claimed; nil when it read NULL, or without
	// Config.TargetState.
	TargetState *string

	step  int
	token string
	// leaseEnd is when the claim's lease ends, by Config.Now.
	leaseEnd time.Time
	// notBefore is when the attempt may start (a rate-limited target's
	// pace), by Config.Now; zero for at once. slot is the target's
	// interval (1/rate): Run starts the attempt no later than that after
	// notBefore, or gives the delivery back.
	notBefore time.Time
	slot      time.Duration
}

// Outcome is what became of one attempt.
type Outcome struct {
	// OK is true when the far end took the event.
	OK bool
	// StatusCode is the HTTP status of the reply, 0 if none.
	StatusCode int
	// Error says, for users, why the attempt failed; the zero Text when
	// OK. It is recorded as its English (the attempt's and delivery's
	// error column, cut to maxErrorBytes) and as its key and arguments
	// (the _json column beside it), so that a reader in another language
	// reads it in theirs.
	Error deskkit.Text
	// Response is the start of the reply, cut to MaxResponseBytes of
	// valid UTF-8 by the worker; never a secret.
	Response string
	// Exchange is what the attempt sent and the reply's headers, as JSON
	// the kind's handler writes and reads (see Attempt.Exchange), recorded
	// with the attempt; "" for none. Never a secret or a signature.
	Exchange string
	// Body is the body the attempt sent, kept once per event and
	// Body.Key (see Bodies), not once per attempt; nil keeps none.
	Body *Body
	// Final ends the delivery FAILED now, without the schedule's further
	// attempts (a blocked address, a channel that is gone or disabled).
	Final bool
	// RetryAfter is the wait the far end asked for; the next attempt
	// waits at least that, at most MaxRetryAfter, and on a failure the
	// whole target is paused for it, at most MaxPause (see flow.go).
	RetryAfter time.Duration
	// Busy says the far end is overloaded or out of reach (429, 503, a
	// timeout, a refused or reset connection, a robot's "busy"): the
	// target's in-flight limit halves.
	Busy bool
	// Label is the attempt's deskkit.channel.type in metrics and spans
	// (a channel's type, "WEBHOOK"); the delivery's Kind if "". It must
	// come from a small fixed set.
	Label string
}

// Result is an attempt's outcome, recorded.
type Result struct {
	Delivery Delivery
	Outcome  Outcome
}

// Handler makes the attempts of one kind.
type Handler interface {
	// Open prepares one claimed batch (reads what the deliveries share,
	// once) and returns the function that makes one attempt. The function
	// is called concurrently, once per delivery of the batch; it must
	// return within the lease. An error from Open leaves the batch to be
	// claimed again when its leases end.
	Open(ctx context.Context, batch []Delivery) (func(ctx context.Context, d Delivery) Outcome, error)
	// Recorded runs in the transaction that records a flush of outcomes,
	// with those of them whose leases still held (in the order the
	// attempts ended), for what the kind keeps besides the outbox (a
	// channel's failure clock). An error rolls the flush back; each of its
	// outcomes is then recorded alone, and one whose record fails again
	// is dropped: its lease ends and the attempt is made again. It may run
	// more than once for one outcome, each time in a new transaction after
	// the last rolled back (a deadlock, a lost connection that the worker
	// tries again, or that second record alone): what it changes outside
	// tx must bear that.
	Recorded(ctx context.Context, tx bun.Tx, done []Result) error
}

// Config configures a Worker; zero fields take the defaults.
type Config struct {
	// Kind is the kind of deliveries the worker claims. Required.
	Kind string
	// Handler makes the attempts. Required.
	Handler Handler
	// Concurrency is how many attempts run at once; DefaultConcurrency if 0.
	Concurrency int
	// BatchSize is how many deliveries one claim takes at most;
	// 4 x Concurrency if 0. Run claims no more than its free slots plus
	// the deliveries it lets wait for one (a claimed row's lease runs
	// from the claim): min(BatchSize, Concurrency) of them at first,
	// doubling up to BatchSize while claims come back full and the
	// deliveries wait briefly (see depth.go).
	BatchSize int
	// TargetInFlight is the floor of a target's in-flight limit: how
	// many deliveries of one target may be in flight at once (claimed, and
	// not yet recorded), counted across every worker of the kind on the
	// database, at the least; DefaultTargetInFlight if 0. The limit moves
	// between it and TargetInFlightMax with the target's answers (see
	// flow.go). On PostgreSQL a worker's claims leave out its own attempts
	// that ended, their outcomes waiting for a flush: those free the
	// target's room for that worker as they end, and for the other
	// workers once recorded.
	TargetInFlight int
	// TargetInFlightMax is the ceiling of a target's in-flight limit; if
	// 0, the TenantSlots of every running worker of the kind on the
	// database added up (a tenant's share of every replica's slots). At
	// TargetInFlight or less, the limit stays at TargetInFlight.
	TargetInFlightMax int
	// TargetRate is how many deliveries a second a target gets at most
	// unless it has a rate of its own (SetTargetRate); 0 for no limit.
	TargetRate float64
	// InFlightFor is how long after its claim a lease counts toward its
	// target's TargetInFlight: the longest a claimed delivery waits for a
	// slot (one attempt's time) and its attempt can take, plus the time
	// to record it. A lease older than that is an attempt that
	// ended, or the lease of a worker that died, which would otherwise
	// hold its target's cap until the lease ends. Lease if 0 or more.
	InFlightFor time.Duration
	// TenantSlots is how many of this worker's Concurrency slots one
	// tenant's attempts may hold at once; half of them (rounded up) if 0,
	// all of them if at least Concurrency.
	TenantSlots int
	// FlushEvery is how long an outcome waits, at most, before it is
	// recorded with the outcomes that came with it; DefaultFlushEvery if
	// 0. FlushSize outcomes are recorded at once without waiting;
	// DefaultFlushSize if 0.
	FlushEvery time.Duration
	FlushSize  int
	// Lease is how long a claimed delivery stays the worker's, from its
	// claim: longer than two attempts can take plus the time to record
	// the outcome, since a delivery Run claims ahead waits for a slot
	// before its own attempt (one that waited until less than half its
	// lease is left is given back unattempted), and its outcome then
	// waits for its flush (FlushEvery, and the flush's tries on a lost
	// connection: about 2 to 4 s). A lease that ends first has the attempt
	// made again and its outcome dropped. Required.
	Lease time.Duration
	// Schedule is the delay before each attempt; DefaultSchedule if nil.
	Schedule []time.Duration
	// Jitter spreads each delay by +-Jitter of itself; DefaultJitter if 0,
	// none if negative.
	Jitter float64
	// Poll is how often the worker looks for due deliveries without being
	// woken; DefaultPoll if 0.
	Poll time.Duration
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// Rand returns a number in [0, 1) for the jitter and for where Run's
	// first claim starts; math/rand/v2 if nil.
	Rand func() float64
	// Logger gets what goes wrong; slog.Default if nil.
	Logger *slog.Logger
	// MeterProvider records deskkit.deliveries and
	// deskkit.delivery.duration, TracerProvider a span per attempt
	// (SpanName, "outbox.deliver" if ""); the global providers if nil.
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	SpanName       string
	// PlainStatements turns off the preparation of the calls of the
	// claim's and the flush's functions on PostgreSQL, for a pool behind
	// a pooler that keeps no session (PgBouncer in transaction mode):
	// both calls are then sent as plain statements. The functions keep
	// their plans in the server sessions either way (functions.go). A
	// Listen for such a worker must be given a direct connection's pool,
	// not this one.
	PlainStatements bool
	// TargetState, if set, is an SQL expression of type text that the
	// claim reads for each delivery it takes, on both databases: the
	// state of its target that the handler's Open needs (a channel's
	// version and switches), so that Open need not read it in a round
	// trip of its own after the claim's. It reads the delivery's row as c
	// (c.tenant_id, c.target_id), filters by the tenant itself and holds
	// no ?. A NULL it gives is a nil Delivery.TargetState, as without
	// TargetState: a handler that must tell a target that is gone from a
	// state not read gives a value of its own for it (the channel
	// registry's "gone"). On PostgreSQL it runs in the statement that
	// calls the claim's function, whose snapshot is taken before the
	// function's; on SQLite in a query after the claim, as the events are
	// read there. Delivery.TargetState holds it.
	TargetState string
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.BatchSize == 0 {
		c.BatchSize = 4 * c.Concurrency
	}
	if c.TargetInFlight == 0 {
		c.TargetInFlight = DefaultTargetInFlight
	}
	if c.InFlightFor <= 0 || c.InFlightFor > c.Lease {
		c.InFlightFor = c.Lease
	}
	if c.TenantSlots == 0 {
		c.TenantSlots = (c.Concurrency + 1) / 2
	}
	c.TenantSlots = min(c.TenantSlots, c.Concurrency)
	if c.FlushEvery == 0 {
		c.FlushEvery = DefaultFlushEvery
	}
	if c.FlushSize == 0 {
		c.FlushSize = DefaultFlushSize
	}
	if c.Schedule == nil {
		c.Schedule = DefaultSchedule
	}
	if c.Jitter == 0 {
		c.Jitter = DefaultJitter
	}
	if c.Jitter < 0 {
		c.Jitter = 0
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = mrand.Float64
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.SpanName == "" {
		c.SpanName = "outbox.deliver"
	}
	return c
}

// validate checks a Config that withDefaults has completed.
func (c Config) validate() error {
	if c.Kind == "" || c.Handler == nil {
		return errors.New("outbox: Config.Kind and Config.Handler are required")
	}
	if c.Lease <= 0 {
		return errors.New("outbox: Config.Lease must be positive")
	}
	if c.Concurrency < 0 || c.BatchSize < 0 || c.TargetInFlight < 0 || c.TargetInFlightMax < 0 || c.TenantSlots < 0 || c.FlushSize < 0 || c.FlushEvery < 0 {
		return errors.New("outbox: Config.Concurrency, BatchSize, TargetInFlight, TargetInFlightMax, TenantSlots, FlushEvery and FlushSize must not be negative")
	}
	if c.TargetRate < 0 || math.IsNaN(c.TargetRate) || math.IsInf(c.TargetRate, 0) {
		return errors.New("outbox: Config.TargetRate must be a finite number, 0 or more")
	}
	return CheckSchedule(c.Schedule)
}

// CheckSchedule checks a retry schedule: 1 to 50 delays, none negative.
func CheckSchedule(s []time.Duration) error {
	if len(s) == 0 || len(s) > 50 {
		return errors.New("the retry schedule must have 1 to 50 delays")
	}
	for i, d := range s {
		if d < 0 {
			return fmt.Errorf("the retry schedule's delay %d is negative", i+1)
		}
	}
	return nil
}

// Worker claims due deliveries of one kind and makes their attempts. It is
// safe for concurrent use: RunOnce makes its batch's attempts itself,
// beside Run's and other RunOnce calls', sharing with them only the
// Concurrency slots; Run calls take turns (a second waits until the first
// returns), since Run's claimed deliveries wait in one queue for its
// runners. One Worker per kind and process is enough, since it runs
// Config.Concurrency attempts at once.
type Worker struct {
	db   *bun.DB
	cfg  Config
	pg   bool
	wake chan struct{}
	// turn is held by the Run that runs: Run calls take turns.
	turn chan struct{}
	// freed gets a value (if it has none) whenever an attempt frees its
	// slot; attemptEnded whenever an attempt ends.
	freed        chan struct{}
	attemptEnded chan struct{}
	tel          attemptTelemetry
	// sleep waits between the tries of a flush; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error

	claimClock claimClock
	// claimStmt is the claim's prepared statement: on PostgreSQL its
	// function's call, nil until Run prepared it; on SQLite claimSQLite,
	// nil until the first claim prepared it.
	claimStmt atomic.Pointer[sql.Stmt]
	// claimCall is the statement that claims on PostgreSQL (claimCall).
	claimCall string
	// recordStmt is the flush's prepared call of its function on
	// PostgreSQL (prepareRecord); nil until prepared, and on SQLite.
	recordStmt atomic.Pointer[sql.Stmt]
	// capped is whether the last claim may have left due deliveries for
	// a cap (a target's in-flight, a tenant's slots): on SQLite a flush,
	// which ends leases, then wakes the worker, and on PostgreSQL Run
	// claims again as its attempts end. The claim tells it on both
	// databases.
	capped atomic.Bool
	// flushes counts the flusher's flushes: on SQLite a claim that found
	// a cap while a flush ended leases, and so told nobody (the flusher
	// read capped before the claim stored it), wakes its Run itself.
	flushes atomic.Int64
	// full is whether every target the last claim reached was at its cap
	// once it took its rows (PostgreSQL).
	full atomic.Bool
	// id names the worker in deskkit_outbox_workers while Run runs, and
	// slotsAlive is the tenant slots of the kind's live workers at the
	// last beat (0 before the first): the default ceiling (flow.go).
	id         string
	slotsAlive atomic.Int64
	// listening counts the Listen calls whose LISTEN is confirmed and
	// whose connection holds: while one does, a publish wakes the worker
	// and Run makes no quick polls.
	listening atomic.Int32
	// wakes counts the calls of Wake, for Run's linger.
	wakes atomic.Int64

	mu sync.Mutex
	// cursor is where the next claim's steps through the targets start
	// (PostgreSQL): the zero target once a claim reached the end.
	cursor target
	// queue holds Run's claimed deliveries waiting for a slot, in claim
	// order; runners is how many goroutines run Run's attempts (at most
	// Concurrency), each taking the queue's next delivery when its attempt
	// ends. claimed is how many deliveries the worker holds (queued, or in
	// an attempt of Run or RunOnce whose outcome has not been taken, or
	// room a claim under way took), held how many of them each tenant's
	// are. stopping is set once Run's context is done: runners start
	// nothing more.
	queue    []queued
	runners  int
	claimed  int
	held     map[int64]int
	stopping bool
	// ended holds the deliveries whose attempts ended and whose outcomes
	// are not recorded yet (waiting for their flush, or in it): their
	// leases still hold, but on PostgreSQL the worker's claims do not
	// count them toward their targets' caps (see claim.go).
	ended map[int64]struct{}
	// running is how many attempts run (Run's and RunOnce's), each
	// counted from when it left the queue (or RunOnce's claim).
	running int
	// paused holds the targets a Retry-After paused, as this worker got
	// the answers, until when (flow.go).
	paused map[target]time.Time
	// depth is how many claimed deliveries Run lets wait for a slot now
	// (its claims' size follows the backlog: depth.go); slow is set when
	// one waited longer than slowWait since the last claim.
	depth int
	slow  bool
	// attempts holds when each of Run's attempts under way started (the
	// monotonic clock), for gather.
	attempts map[int64]time.Time
}

// queued is a claimed delivery waiting for a slot, with the attempt of
// the batch it was claimed in.
type queued struct {
	d       Delivery
	attempt func(context.Context, Delivery) Outcome
}

// NewWorker returns a worker over db, whose outbox tables Migrate created.
func NewWorker(db *bun.DB, cfg Config) (*Worker, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	w := &Worker{
		db:           db,
		cfg:          c,
		pg:           isPostgres(db),
		wake:         make(chan struct{}, 1),
		turn:         make(chan struct{}, 1),
		freed:        make(chan struct{}, 1),
		attemptEnded: make(chan struct{}, 1),
		tel:          newAttemptTelemetry(c),
		sleep:        sleep,
		held:         map[int64]int{},
		ended:        map[int64]struct{}{},
		paused:       map[target]time.Time{},
		attempts:     map[int64]time.Time{},
		id:           newToken(),
		claimCall:    claimCall(c.TargetState),
	}
	w.capped.Store(true)
	return w, nil
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Schedule returns the worker's retry schedule.
func (w *Worker) Schedule() []time.Duration { return w.cfg.Schedule }

// Wake makes a running worker look for due deliveries now, instead of at
// its next poll. It never blocks.
func (w *Worker) Wake() {
	w.wakes.Add(1)
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run claims and delivers until ctx is done (once another Run on w has
// returned, if one runs: Run calls take turns), then claims nothing new,
// gives back the claimed deliveries whose attempts have not started (due
// at once, for any worker), waits for the attempts in flight (each bounded
// by the handler) and records their outcomes, and returns. It looks for
// due deliveries when woken (Wake, or on PostgreSQL a NOTIFY if Listen
// runs) and every Config.Poll. Woken, it lingers up to 2 ms (doubling
// to 10 ms while claims take one delivery each: nextLinger), or until a
// batch's worth of wakes came, so that one claim takes the events
// published meanwhile. A claim that took every due delivery there was
// waits for the next wake: claims wait for work rather than look again.
// Without a listener whose LISTEN holds, it also looks sooner after
// claims that found deliveries (5 ms, doubling with each look that finds
// none, up to Config.Poll), so that a publish in another process waits
// milliseconds, not a poll.
// While there is a backlog it claims ahead:
// deliveries wait in the worker for a slot beside the Concurrency
// attempts (their depth: min(BatchSize, Concurrency), growing with the
// backlog, depth.go), so that an attempt that ends starts the next at
// once, and a claim is made once that many have room (or refillWait
// after a slot went idle), so that claims are whole batches. On PostgreSQL, a claim that left due deliveries to the caps
// (a target's in-flight, a tenant's slots), or every target it reached
// at its cap, is followed by the next once the worker's attempts end
// (all of them, or refillWait after the first): an ended attempt's room
// is free at once, not at the flush that records it, and a lone busy
// target's claims are as large as its cap. A delivery waits in the
// worker for at most depth/Concurrency attempts' time (every slot's
// attempt ends within the handler's bound, and each takes the next
// waiting delivery), and is given back unattempted if that left it less
// than half its lease.
// Outcomes are recorded in flushes (see Recording in the package doc).
// Database errors are logged and retried at the next poll.
func (w *Worker) Run(ctx context.Context) {
	select {
	case w.turn <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-w.turn }()
	w.prepareClaim(ctx)
	w.prepareRecord(ctx)
	beat, stopBeat := context.WithCancel(ctx)
	var beating sync.WaitGroup
	beating.Go(func() { w.beating(beat) })
	defer func() {
		stopBeat()
		beating.Wait()
	}()
	if w.pg {
		from := w.phase(ctx)
		w.mu.Lock()
		w.cursor = from
		w.mu.Unlock()
	}
	f := w.startFlusher()
	var inflight sync.WaitGroup
	w.mu.Lock()
	w.stopping = false
	w.mu.Unlock()
	defer func() {
		w.giveBackQueue(ctx)
		inflight.Wait()
		f.stop()
	}()
	poll := time.NewTimer(0)
	quiet := w.cfg.Poll
	defer poll.Stop()
	refill := time.NewTimer(refillWait)
	refill.Stop()
	backlog, capped := false, false
	// woken is w.wakes at the last claim: the wakes after it are
	// publishes the next claim may find.
	woken := w.wakes.Load()
	linger := lingerFor
	for {
		if backlog {
			if !w.waitRoom(ctx, refill) {
				return
			}
		} else {
			// A nil channel never delivers: only a capped worker wakes
			// when an attempt ends.
			var ended <-chan struct{}
			if capped {
				ended = w.attemptEnded
			}
			select {
			case <-ctx.Done():
				return
			case <-poll.C:
			case <-w.wake:
				refill.Reset(linger)
				ok := w.linger(ctx, refill.C, woken)
				refill.Stop()
				if !ok {
					return
				}
			case <-ended:
				if !w.gather(ctx, refill) {
					return
				}
			}
		}
		fromStart, idle := !w.midRound(), w.idle()
		woken = w.wakes.Load()
		flushes := w.flushes.Load()
		batch, asked, err := w.claimAndStart(ctx, w.ahead(), &inflight, f.add)
		n := len(batch)
		w.follow(n, asked)
		linger = nextLinger(linger, n)
		if err != nil && ctx.Err() == nil {
			w.cfg.Logger.ErrorContext(ctx, "outbox: claim", slog.String("kind", w.cfg.Kind), slog.Any("error", err))
		}
		// A claim that found deliveries claims again as soon as there is
		// room: fewer than it asked for may be the caps (a target's
		// in-flight, a tenant's slots, a target's share of the claim),
		// which free as attempts end. Only a claim that found none,
		// having looked at every target, or one that took every due
		// delivery there was (tookAll: made from the first target to
		// the last by an idle worker, one delivery a target, no cap
		// reached), waits to be woken (by a publish, or on SQLite a
		// flush that ended leases) or for the poll: at a few hundred
		// events a second most claims take the one or two events that
		// woke them, and another at once would find nothing. One that
		// asked for none (no room) waits for room.
		// A claim looked at every target only if it started from the
		// first and reached the last: one that started mid-round and
		// found nothing in the targets after its cursor has not looked at
		// those before it, and the next claim starts from the first at
		// once (a drain's tail otherwise waited for the poll, a second,
		// with deliveries due: 2 s of a 9 s drain).
		looked := fromStart && !w.midRound()
		backlog = err == nil && (n > 0 || asked == 0 || !looked) &&
			!(looked && idle && w.tookAll(batch, asked))
		// On PostgreSQL, a claim that looked at every target and either
		// took fewer than it asked for, leaving due deliveries to the
		// caps, or left every target it reached at its cap, claims again
		// when the worker's attempts end (gather): its claims count only
		// the attempts that run (claim.go), so an attempt that ends
		// frees its target's room at once, without waiting for its
		// flush; a claim made sooner would find the caps as they were.
		// The poll still runs, for the leases other workers end.
		capped = w.pg && err == nil && asked > 0 && looked &&
			((n < asked && w.capped.Load()) || w.full.Load())
		if capped {
			backlog = false
		}
		// On SQLite a claim counts the leases of the worker's ended
		// attempts until their flush records them: one that found every
		// target it reached at its cap while the worker holds such
		// leases waits for the flush, which wakes it, rather than going
		// on round the targets. Each such claim took the database's one
		// write lock that the flush waits for: a drain of 20,000 made
		// 40,973 claims that found nothing.
		if !w.pg && err == nil && n == 0 && w.capped.Load() && !w.idle() {
			backlog = false
		}
		// A flush that ended while the claim ran read capped before the
		// claim stored it, and woke nobody: the wake it owed comes now.
		// (A claim made after a flush saw its leases end.)
		if !w.pg && !backlog && w.capped.Load() && w.flushes.Load() != flushes {
			w.Wake()
		}
		// Without a listener, a worker that found deliveries lately
		// looks again soon even without a wake, then less and less
		// often, up to Config.Poll, so that a publish in another process
		// waits milliseconds, not a poll. While a LISTEN holds (Listen),
		// each publishing commit wakes the worker and it makes no such
		// looks: at 100 events a second they were one claim in three,
		// each finding nothing. (A NOTIFY reaching the listener more than
		// 100 ms after its commit was once measured at 1,000 events a
		// second on two loaded cores; BenchmarkSteadyRate measures the
		// p99 from commit to attempt at that rate.) A capped worker
		// whose attempts run is woken as each ends, and a quick look
		// would find the caps as they were.
		if n > 0 && !(capped && w.attempting()) && w.listening.Load() == 0 {
			quiet = quickPoll
		}
		if !backlog {
			poll.Reset(min(quiet, w.cfg.Poll))
			quiet = min(2*quiet, w.cfg.Poll)
		}
	}
}

// midRound reports whether the last claim stopped before the last target
// with pending deliveries: the next claim looks at the targets after it.
func (w *Worker) midRound() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cursor != target{}
}

// waitRoom waits until a whole batch of Run's claims has room (see Run),
// or a slot is idle and refillWait has passed since the wait began. It
// reports false when ctx is done first.
func (w *Worker) waitRoom(ctx context.Context, refill *time.Timer) bool {
	want := w.ahead()
	refill.Reset(refillWait)
	defer refill.Stop()
	waited := false
	for {
		room, idle := w.room(want)
		if room >= want || (idle && waited) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-w.freed:
		case <-refill.C:
			waited = true
		}
	}
}

// gather waits, once an attempt ended while the worker was capped, for
// the others to end too (those that started within gatherFor: see
// endingSoon), or refillWait: a claim costs a round trip to the database
// whatever its size, and a lone busy target's claims are as large as the
// attempts that ended before them. It reports false when ctx is done
// first.
func (w *Worker) gather(ctx context.Context, refill *time.Timer) bool {
	refill.Reset(refillWait)
	defer refill.Stop()
	for {
		if !w.endingSoon(time.Now()) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-w.attemptEnded:
		case <-refill.C:
			return true
		}
	}
}

// endingSoon reports whether a delivery waits in the queue, or an attempt
// that started within gatherFor of now runs: one that has run longer
// (a receiver turned slow) is not waited for. A worker capped while one
// target's attempts took 200 ms each waited refillWait at each claim for
// them, and the other tenants' deliveries slowed by a third.
func (w *Worker) endingSoon(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) > 0 {
		return true
	}
	for _, t := range w.attempts {
		if now.Sub(t) < gatherFor {
			return true
		}
	}
	return false
}

// gatherFor is how long gather waits for an attempt to end, at most, from
// its start.
const gatherFor = 10 * refillWait

// attempting reports whether an attempt of the worker runs or waits in
// the queue.
func (w *Worker) attempting() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running > 0 || len(w.queue) > 0
}

// room is how many more deliveries the worker can claim, with ahead of
// them waiting for a slot, and whether a slot is idle (nothing waits for
// it).
func (w *Worker) room(ahead int) (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.roomLocked(ahead)
	return room, room > 0 && len(w.queue) == 0 && w.claimed < w.cfg.Concurrency
}

// roomLocked is room's count; w.mu is held.
func (w *Worker) roomLocked(ahead int) int {
	return w.cfg.Concurrency + ahead - w.claimed
}

// take queues batch's deliveries (claimBatch's), each with attempt, and
// starts runners for the idle slots; each runner's attempts hand their
// outcomes to record.
func (w *Worker) take(ctx, actx context.Context, batch []Delivery, attempt func(context.Context, Delivery) Outcome, inflight *sync.WaitGroup, record func(done)) {
	now := w.cfg.Now()
	var later []queued
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range batch {
		if d.notBefore.After(now) {
			later = append(later, queued{d, attempt})
			continue
		}
		w.queue = append(w.queue, queued{d, attempt})
	}
	w.startRunners(actx, inflight, record)
	if len(later) > 0 {
		slices.SortStableFunc(later, func(a, b queued) int { return a.d.notBefore.Compare(b.d.notBefore) })
		inflight.Go(func() { w.hold(ctx, actx, later, inflight, record) })
	}
}

// startRunners starts runners for the idle slots the queue can fill;
// w.mu is held.
func (w *Worker) startRunners(actx context.Context, inflight *sync.WaitGroup, record func(done)) {
	for range min(w.cfg.Concurrency-w.runners, len(w.queue)) {
		w.runners++
		inflight.Go(func() { w.runner(actx, record) })
	}
}

// hold queues later's deliveries (a rate-limited target's, in start
// order) each at its start, holding claim room but no slot while they
// wait; once Run stops (ctx done) it gives back those still waiting.
func (w *Worker) hold(ctx, actx context.Context, later []queued, inflight *sync.WaitGroup, record func(done)) {
	for i, q := range later {
		wait := q.d.notBefore.Sub(w.cfg.Now())
		if wait > 0 && w.sleep(ctx, wait) != nil {
			w.giveBack(actx, later[i:])
			return
		}
		w.mu.Lock()
		if w.stopping {
			w.mu.Unlock()
			w.giveBack(actx, later[i:])
			return
		}
		w.queue = append(w.queue, q)
		w.startRunners(actx, inflight, record)
		w.mu.Unlock()
	}
}

// runner makes the queue's attempts, one after another, until the queue is
// empty or Run stops.
func (w *Worker) runner(actx context.Context, record func(done)) {
	for {
		w.mu.Lock()
		if w.stopping || len(w.queue) == 0 {
			w.runners--
			w.mu.Unlock()
			return
		}
		q := w.queue[0]
		w.queue[0] = queued{}
		w.queue = w.queue[1:]
		w.running++
		w.mu.Unlock()
		if late := w.cfg.Now().Sub(q.d.notBefore); q.d.slot > 0 && late > q.d.slot {
			// A rate-limited delivery that missed its slot (every slot
			// was busy, the machine slow) would start beside the next
			// slot's: it goes back, due at once, and a claim gives it a
			// new slot. So every start is within one interval of its
			// slot, and no second has more than rate + 2 starts.
			w.mu.Lock()
			w.running--
			w.mu.Unlock()
			w.giveBack(actx, []queued{q})
			continue
		}
		if w.waited(q.d) {
			// Its lease may end before its outcome is recorded: another
			// worker would make the attempt again. It goes back, due at
			// once.
			w.mu.Lock()
			w.running--
			w.mu.Unlock()
			w.giveBack(actx, []queued{q})
			continue
		}
		if until := w.pausedUntil(q.d); !until.IsZero() {
			// A Retry-After this worker got paused the target since the
			// claim: the delivery waits for the pause's end.
			if err := w.postpone(actx, q.d, until); err != nil {
				w.cfg.Logger.ErrorContext(actx, "outbox: postpone; it waits for its lease to end", slog.Any("error", err))
			}
			w.give(q.d)
			w.mu.Lock()
			w.running--
			w.mu.Unlock()
			continue
		}
		w.attempt(actx, q, record)
	}
}

// attempt makes q's attempt and hands its outcome to record.
func (w *Worker) attempt(actx context.Context, q queued, record func(done)) {
	d := q.d
	if wait := d.notBefore.Sub(w.cfg.Now()); wait > 0 {
		// RunOnce's deliveries of a rate-limited target (Run's were held
		// until their start).
		_ = w.sleep(actx, wait)
	}
	ctx, span := w.tel.start(actx, w.cfg.SpanName, d)
	started, clock := w.cfg.Now(), time.Now()
	w.mu.Lock()
	w.attempts[d.ID] = clock
	w.mu.Unlock()
	o := q.attempt(ctx, d)
	if !o.OK && o.RetryAfter > 0 {
		w.pause(d, o.RetryAfter)
	}
	took := time.Since(clock)
	o.Response = Cut(o.Response, MaxResponseBytes)
	// From now on the attempt no longer runs: the worker's claims do not
	// count its lease toward the target's cap (flush forgets it once
	// recorded, so it is known before the flusher has it).
	w.mu.Lock()
	w.ended[d.ID] = struct{}{}
	delete(w.attempts, d.ID)
	w.mu.Unlock()
	// The delivery's room is freed once the flusher took the outcome: a
	// flusher that falls behind holds the claims back, rather than
	// outcomes piling up.
	en, js := storedError(o.Error)
	record(done{Result{d, o}, started, w.cfg.Now().Sub(started), en, js})
	w.give(d)
	// Its slot and its tenant's are free: a capped Run may claim.
	w.mu.Lock()
	w.running--
	w.mu.Unlock()
	select {
	case w.attemptEnded <- struct{}{}:
	default:
	}
	w.tel.end(ctx, span, d, o, w.status(d, o), took)
}

// give frees the room of d, whose outcome the flusher took or which was
// given back.
func (w *Worker) give(d Delivery) {
	w.mu.Lock()
	w.claimed--
	if w.held[d.TenantID]--; w.held[d.TenantID] <= 0 {
		delete(w.held, d.TenantID)
	}
	w.mu.Unlock()
	w.signalFreed()
}

// endedArray writes the deliveries in w.ended as a PostgreSQL array of
// ids, for the claim: "{}" on SQLite, whose claim does not read it.
func (w *Worker) endedArray() string {
	if !w.pg {
		return "{}"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b := make([]byte, 0, 2+12*len(w.ended))
	b = append(b, '{')
	for id := range w.ended {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, '}'))
}

// forgetEnded takes batch's deliveries out of w.ended once their flush
// is over, recorded or not: a lease whose outcome was dropped counts
// toward its target's cap again until it ends, as another worker's does.
func (w *Worker) forgetEnded(batch []done) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range batch {
		delete(w.ended, d.Delivery.ID)
	}
}

// signalFreed tells a waiting Run that room came free.
func (w *Worker) signalFreed() {
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// giveBackQueue stops the runners from starting more attempts and gives
// the queued deliveries back: due at once, without the attempt their
// claim counted.
func (w *Worker) giveBackQueue(ctx context.Context) {
	w.mu.Lock()
	w.stopping = true
	queue := w.queue
	w.queue = nil
	w.mu.Unlock()
	w.giveBack(ctx, queue)
}

// giveBack gives queue's deliveries back: due at once, without the
// attempt their claim counted.
func (w *Worker) giveBack(ctx context.Context, queue []queued) {
	if len(queue) == 0 {
		return
	}
	batch := make([]Delivery, len(queue))
	for i, q := range queue {
		batch[i] = q.d
	}
	if err := w.release(context.WithoutCancel(ctx), batch); err != nil {
		w.cfg.Logger.ErrorContext(ctx, "outbox: give back queued deliveries; they wait for their lease to end", slog.Any("error", err))
	}
	for _, d := range batch {
		w.give(d)
	}
}

// RunOnce claims one batch of due deliveries, makes their attempts,
// records their outcomes in one flush and returns how many it claimed.
// Its batch is its own: it shares with Run and other RunOnce calls on the
// worker only the Concurrency slots (it claims no more than are free).
// Tests drive the worker with it and an injected clock; the verifier
// sends a notice with it where Run does not run.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	batch, attempt, _, err := w.claimBatch(ctx, 0)
	if attempt == nil {
		return len(batch), err
	}
	var (
		attempts sync.WaitGroup
		mu       sync.Mutex
		results  []done
	)
	// As Run's, attempts and their record outlive ctx's cancel.
	actx := context.WithoutCancel(ctx)
	w.mu.Lock()
	w.running += len(batch)
	w.mu.Unlock()
	for _, d := range batch {
		attempts.Go(func() {
			w.attempt(actx, queued{d, attempt}, func(d done) {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, d)
			})
		})
	}
	attempts.Wait()
	if len(results) > 0 {
		w.flush(actx, results)
	}
	return len(batch), nil
}

// claimAndStart claims a batch (claimBatch) and queues it for Run's
// runners, each attempt handing its outcome to record. It returns what
// it claimed and how many it asked for.
func (w *Worker) claimAndStart(ctx context.Context, ahead int, inflight *sync.WaitGroup, record func(done)) (claimed []Delivery, asked int, err error) {
	batch, attempt, asked, err := w.claimBatch(ctx, ahead)
	if attempt == nil {
		return batch, asked, err
	}
	w.take(ctx, context.WithoutCancel(ctx), batch, attempt, inflight, record)
	return batch, asked, nil
}

// claimBatch claims up to as many due deliveries as the worker has room
// for, with ahead of them waiting for a slot (at most a batch), and opens
// the batch: with attempt not nil, the deliveries returned are the
// worker's (counted as claimed and held by their tenants) until each is
// given (give). The room is taken before the claim, so that claims made
// at once (Run's and RunOnce's) share the slots rather than each counting
// them all. It returns how many it asked for; a batch that Open refused
// comes back with the error and no attempt, left to its leases.
func (w *Worker) claimBatch(ctx context.Context, ahead int) (batch []Delivery, attempt func(context.Context, Delivery) Outcome, asked int, err error) {
	w.mu.Lock()
	held := make(map[int64]int, len(w.held))
	for t, n := range w.held {
		if n > w.cfg.TenantSlots-w.cfg.BatchSize {
			// Only a tenant that could reach its share in this claim
			// limits it.
			held[t] = n
		}
	}
	asked = min(w.roomLocked(ahead), w.cfg.BatchSize)
	// A shutdown claims nothing new.
	if err = ctx.Err(); err != nil || asked <= 0 {
		w.mu.Unlock()
		return nil, nil, max(asked, 0), err
	}
	w.claimed += asked
	w.mu.Unlock()
	// A claim's statement is not cut by the shutdown's cancel (cut after
	// the rows were leased, it would leave them unattempted until their
	// lease ends); a claim that returns after the cancel gives its rows
	// back at once instead of attempting them.
	started := time.Now()
	batch, err = w.claim(context.WithoutCancel(ctx), asked, held)
	w.claimClock.since(started)
	if err == nil && len(batch) > 0 && ctx.Err() != nil {
		err = errors.Join(ctx.Err(), w.release(context.WithoutCancel(ctx), batch))
		batch = nil
	}
	if err == nil && len(batch) > 0 {
		// Attempts and their records outlive a shutdown's cancel: they
		// are bounded by the handler's timeout, not cut half-way.
		if attempt, err = w.cfg.Handler.Open(context.WithoutCancel(ctx), batch); err != nil {
			attempt, err = nil, fmt.Errorf("open batch: %w", err)
		}
	}
	kept := 0
	if attempt != nil {
		kept = len(batch)
	}
	w.mu.Lock()
	w.claimed -= asked - kept
	for _, d := range batch[:kept] {
		w.held[d.TenantID]++
	}
	w.mu.Unlock()
	if kept < asked {
		w.signalFreed()
	}
	return batch, attempt, asked, err
}

// jitter spreads d by +-Jitter.
func (w *Worker) jitter(d time.Duration) time.Duration {
	if w.cfg.Jitter == 0 || d == 0 {
		return d
	}
	f := 1 + w.cfg.Jitter*(2*w.cfg.Rand()-1)
	return time.Duration(float64(d) * f)
}

// Cut returns s cut to at most n bytes of valid UTF-8, invalid bytes and
// NUL replaced: what an attempt's stored texts hold.
func Cut(s string, n int) string {
	// PostgreSQL's text holds no NUL: a reply with one would fail its
	// flush, and every flush of its outcome after it.
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func nullInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// newToken returns a lease token: 128 random bits in hex.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// claimClock counts a worker's claims and their time (from the call to
// the rows read), for benchmarks to say how much of a drain is spent
// waiting for claims.
type claimClock struct{ claims, nanos atomic.Int64 }

func (c *claimClock) since(t time.Time) {
	c.claims.Add(1)
	c.nanos.Add(int64(time.Since(t)))
}
