package outbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/database"
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
	// MaxRetryAfter caps how far a far end's Retry-After pushes the next
	// attempt out.
	MaxRetryAfter = 24 * time.Hour
	// MaxResponseBytes is how much of a reply an attempt keeps.
	MaxResponseBytes = 1024
	// maxErrorBytes bounds an attempt's error text.
	maxErrorBytes = 1000
)

// Tries of recording one outcome when the connection is lost: up to
// recordTries, the pause before the second recordPause and doubled before
// each next up to recordMaxPause, each spread over its upper half (50 ms
// to 1 s: 1.8 to 3.6 s in all), and never past the lease's end.
const (
	recordTries    = 8
	recordPause    = 50 * time.Millisecond
	recordMaxPause = time.Second
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

	step  int
	token string
	// leaseEnd is when the claim's lease ends, by Config.Now.
	leaseEnd time.Time
}

// Outcome is what became of one attempt.
type Outcome struct {
	// OK is true when the far end took the event.
	OK bool
	// StatusCode is the HTTP status of the reply, 0 if none.
	StatusCode int
	// Error says, for users, why the attempt failed; "" when OK.
	Error string
	// Response is the start of the reply, cut to MaxResponseBytes of
	// valid UTF-8 by the worker; never a secret.
	Response string
	// Final ends the delivery FAILED now, without the schedule's further
	// attempts (a blocked address, a channel that is gone or disabled).
	Final bool
	// RetryAfter is the wait the far end asked for; the next attempt
	// waits at least that, at most MaxRetryAfter.
	RetryAfter time.Duration
	// Label is the attempt's deskkit.channel.type in metrics and spans
	// (a channel's type, "WEBHOOK"); the delivery's Kind if "". It must
	// come from a small fixed set.
	Label string
}

// Handler makes the attempts of one kind.
type Handler interface {
	// Open prepares one claimed batch (reads what the deliveries share,
	// once) and returns the function that makes one attempt. The function
	// is called concurrently, once per delivery of the batch; it must
	// return within the lease. An error from Open leaves the batch to be
	// claimed again when its leases end.
	Open(ctx context.Context, batch []Delivery) (func(ctx context.Context, d Delivery) Outcome, error)
	// Recorded runs in the transaction that records an attempt's outcome,
	// for what the kind keeps besides the outbox (a channel's failure
	// clock). An error rolls the record back; the lease then ends and the
	// attempt is made again. It may run more than once for one outcome,
	// each time in a new transaction after the last rolled back (a
	// deadlock, or a lost connection that the worker tries again): what
	// it changes outside tx must bear that.
	Recorded(ctx context.Context, tx bun.Tx, d Delivery, o Outcome) error
}

// Config configures a Worker; zero fields take the defaults.
type Config struct {
	// Kind is the kind of deliveries the worker claims. Required.
	Kind string
	// Handler makes the attempts. Required.
	Handler Handler
	// Concurrency is how many attempts run at once; DefaultConcurrency if 0.
	Concurrency int
	// BatchSize is how many deliveries one claim takes; Concurrency if 0.
	BatchSize int
	// Lease is how long a claimed delivery stays the worker's: longer than
	// an attempt can take. Required.
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
	// Rand returns a number in [0, 1) for the jitter; math/rand/v2 if nil.
	Rand func() float64
	// Logger gets what goes wrong; slog.Default if nil.
	Logger *slog.Logger
	// MeterProvider records deskkit.deliveries and
	// deskkit.delivery.duration, TracerProvider a span per attempt
	// (SpanName, "outbox.deliver" if ""); the global providers if nil.
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
	SpanName       string
}

func (c Config) withDefaults() (Config, error) {
	if c.Kind == "" || c.Handler == nil {
		return c, errors.New("outbox: Config.Kind and Config.Handler are required")
	}
	if c.Lease <= 0 {
		return c, errors.New("outbox: Config.Lease must be positive")
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.BatchSize == 0 {
		c.BatchSize = c.Concurrency
	}
	if c.Concurrency < 0 || c.BatchSize < 0 {
		return c, errors.New("outbox: Config.Concurrency and Config.BatchSize must not be negative")
	}
	if c.Schedule == nil {
		c.Schedule = DefaultSchedule
	}
	if err := CheckSchedule(c.Schedule); err != nil {
		return c, err
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
	return c, nil
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
// safe for concurrent use; one Worker per kind and process is enough, since
// it runs Config.Concurrency attempts at once.
type Worker struct {
	db   *bun.DB
	cfg  Config
	pg   bool
	wake chan struct{}
	// slots bounds the attempts in flight.
	slots chan struct{}
	tel   attemptTelemetry
	// sleep waits between the tries of a record; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// NewWorker returns a worker over db, whose outbox tables Migrate created.
func NewWorker(db *bun.DB, cfg Config) (*Worker, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Worker{
		db:    db,
		cfg:   c,
		pg:    isPostgres(db),
		wake:  make(chan struct{}, 1),
		slots: make(chan struct{}, c.Concurrency),
		tel:   newAttemptTelemetry(c),
		sleep: sleep,
	}, nil
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
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run claims and delivers until ctx is done, then claims nothing new,
// waits for the attempts in flight (each bounded by the handler) and
// records their outcomes, and returns. It looks for due deliveries when
// woken (Wake, or on PostgreSQL a NOTIFY if Listen runs) and every
// Config.Poll. Database errors are logged and retried at the next poll.
func (w *Worker) Run(ctx context.Context) {
	var inflight sync.WaitGroup
	defer inflight.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-w.wake:
		}
		// Claim while each claim gets all it asked for: a backlog drains
		// without waiting for the poll. A claim asks for the slots free at
		// the time, often fewer than a batch while attempts are in flight;
		// only a claim that finds fewer due deliveries than that means the
		// backlog is gone.
		for ctx.Err() == nil {
			n, asked, err := w.claimAndStart(ctx, &inflight)
			if err != nil {
				if ctx.Err() == nil {
					w.cfg.Logger.ErrorContext(ctx, "outbox: claim", slog.String("kind", w.cfg.Kind), slog.Any("error", err))
				}
				break
			}
			if n < asked {
				break
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(w.cfg.Poll)
	}
}

// RunOnce claims one batch of due deliveries, makes their attempts,
// records their outcomes and returns how many it claimed. Tests drive the
// worker with it and an injected clock.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	var inflight sync.WaitGroup
	n, _, err := w.claimAndStart(ctx, &inflight)
	inflight.Wait()
	return n, err
}

// claimAndStart waits for free slots, claims up to that many due
// deliveries and starts their attempts. It returns how many it claimed and
// how many it asked for.
func (w *Worker) claimAndStart(ctx context.Context, inflight *sync.WaitGroup) (claimed, asked int, err error) {
	// Take one slot before claiming, so that a worker at its concurrency
	// claims nothing it could not start at once (a claimed row's lease
	// runs from the claim).
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	free := 1
	for free < w.cfg.BatchSize {
		select {
		case w.slots <- struct{}{}:
			free++
			continue
		default:
		}
		break
	}
	// A shutdown claims nothing new. A claim's statement is not cut by the
	// shutdown's cancel (cut after the rows were leased, it would leave
	// them unattempted until their lease ends); a claim that returns after
	// the cancel gives its rows back at once instead of attempting them.
	if err := ctx.Err(); err != nil {
		for range free {
			<-w.slots
		}
		return 0, free, err
	}
	batch, err := w.claim(context.WithoutCancel(ctx), free)
	if err == nil && len(batch) > 0 && ctx.Err() != nil {
		err = w.release(context.WithoutCancel(ctx), batch[0].token)
		for range free {
			<-w.slots
		}
		return 0, free, errors.Join(ctx.Err(), err)
	}
	for range free - len(batch) {
		<-w.slots
	}
	if err != nil || len(batch) == 0 {
		return 0, free, err
	}
	// Attempts and their records outlive a shutdown's cancel: they are
	// bounded by the handler's timeout, not cut half-way.
	actx := context.WithoutCancel(ctx)
	attempt, err := w.cfg.Handler.Open(actx, batch)
	if err != nil {
		for range batch {
			<-w.slots
		}
		return len(batch), free, fmt.Errorf("open batch: %w", err)
	}
	for _, d := range batch {
		inflight.Go(func() {
			defer func() { <-w.slots }()
			ctx, span := w.tel.start(actx, w.cfg.SpanName, d)
			started, clock := w.cfg.Now(), time.Now()
			o := attempt(ctx, d)
			took := time.Since(clock)
			if err := w.record(ctx, d, o, started, w.cfg.Now().Sub(started)); err != nil {
				w.cfg.Logger.ErrorContext(ctx, "outbox: record attempt", slog.String("kind", d.Kind),
					slog.Int64("delivery", d.ID), slog.Any("error", err))
			}
			w.tel.end(ctx, span, d, o, w.status(d, o), took)
		})
	}
	return len(batch), free, nil
}

// claim takes up to n due deliveries under a new lease and reads their
// events.
func (w *Worker) claim(ctx context.Context, n int) ([]Delivery, error) {
	claimed := w.cfg.Now()
	now := claimed.UnixMilli()
	token := newToken()
	lock := ""
	if w.pg {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var rows []deliveryRow
	err := w.db.NewRaw(`UPDATE deskkit_outbox_deliveries
SET due_at_ms = ?, lease_token = ?, attempts = attempts + 1
WHERE id IN (SELECT id FROM deskkit_outbox_deliveries
  WHERE status = 'PENDING' AND kind = ? AND due_at_ms <= ?
  ORDER BY due_at_ms LIMIT ?`+lock+`)
RETURNING id, tenant_id, event_id, kind, target_id, payload, attempts, step`,
		now+w.cfg.Lease.Milliseconds(), token, w.cfg.Kind, now, n).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	events, err := readEvents(ctx, w.db, rows)
	if err != nil {
		return nil, err
	}
	batch := make([]Delivery, 0, len(rows))
	var orphans []int64
	for _, r := range rows {
		ev, ok := events[eventKey{r.TenantID, r.EventID}]
		if !ok {
			// Housekeeping never deletes an event that has deliveries;
			// a row without one was written by hand. It ends FAILED, not
			// claimed again at every lease.
			w.cfg.Logger.ErrorContext(ctx, "outbox: delivery without its event", slog.Int64("delivery", r.ID))
			orphans = append(orphans, r.ID)
			continue
		}
		d := Delivery{
			ID:       r.ID,
			TenantID: r.TenantID,
			Kind:     r.Kind,
			TargetID: r.TargetID,
			Attempt:  r.Attempts,
			Event:    ev,
			step:     r.Step,
			token:    token,
			leaseEnd: claimed.Add(w.cfg.Lease),
		}
		if r.Payload != nil {
			d.Payload = *r.Payload
		}
		batch = append(batch, d)
	}
	if len(orphans) > 0 {
		_, err := w.db.NewUpdate().Table("deskkit_outbox_deliveries").
			Set("status = 'FAILED', due_at_ms = NULL, lease_token = NULL, payload = NULL").
			Set("last_error = ?", "its event is missing").
			Set("finished_at_ms = ?", now).
			Where("id IN (?) AND lease_token = ?", bun.List(orphans), token).
			Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("end deliveries without events: %w", err)
		}
	}
	return batch, nil
}

// release gives back the deliveries a claim leased under token, due at
// once and without the attempt the claim counted.
func (w *Worker) release(ctx context.Context, token string) error {
	_, err := w.db.NewUpdate().Table("deskkit_outbox_deliveries").
		Set("due_at_ms = ?", w.cfg.Now().UnixMilli()).
		Set("lease_token = NULL").
		Set("attempts = attempts - 1").
		Where("lease_token = ?", token).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("release a claim: %w", err)
	}
	return nil
}

type eventKey struct {
	tenantID int64
	id       string
}

// readEvents reads the events of rows, each once.
func readEvents(ctx context.Context, db bun.IDB, rows []deliveryRow) (map[eventKey]Event, error) {
	var (
		where strings.Builder
		args  []any
		seen  = map[eventKey]bool{}
	)
	for _, r := range rows {
		k := eventKey{r.TenantID, r.EventID}
		if seen[k] {
			continue
		}
		seen[k] = true
		if where.Len() > 0 {
			where.WriteString(" OR ")
		}
		where.WriteString("(tenant_id = ? AND event_id = ?)")
		args = append(args, r.TenantID, r.EventID)
	}
	var evs []eventRow
	if err := db.NewSelect().Model(&evs).Where(where.String(), args...).Scan(ctx); err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	out := make(map[eventKey]Event, len(evs))
	for _, e := range evs {
		out[eventKey{e.TenantID, e.EventID}] = e.event()
	}
	return out, nil
}

// errLeaseLost is an outcome that came after the lease ended: another
// worker owns the delivery now.
var errLeaseLost = errors.New("the lease ended before the outcome came; another worker makes the attempt again")

// record writes one attempt's outcome: the attempt's row, the delivery's
// new state, and the handler's own record, in one transaction. A
// connection lost under it (the database restarted, a proxy or the
// network dropped the pool's connections while the attempt was in flight)
// does not lose the outcome, which would have the attempt made again when
// the lease ends: the transaction is tried again on a fresh connection,
// after a short pause, up to recordTries times and while the lease lasts.
// A try again is safe: the first rolled back, or, if its COMMIT was under
// way, committed and cleared the lease's token, which the next finds gone.
// Other errors (a constraint, the handler's own, a lost lease) are not
// tried again.
func (w *Worker) record(ctx context.Context, d Delivery, o Outcome, started time.Time, took time.Duration) error {
	err := w.recordOn(ctx, w.db, d, o, started, took)
	tries := 1
	for ; err != nil && tries < recordTries && database.ConnLost(err); tries++ {
		pause := min(recordPause<<(tries-1), recordMaxPause)
		pause = pause/2 + time.Duration(w.cfg.Rand()*float64(pause/2))
		if w.cfg.Now().Add(pause).After(d.leaseEnd) || w.sleep(ctx, pause) != nil {
			break
		}
		err = w.retryRecord(ctx, d, func(ctx context.Context, db bun.IDB) error {
			return w.recordOn(ctx, db, d, o, started, took)
		})
	}
	if tries > 1 {
		w.cfg.Logger.WarnContext(ctx, "outbox: connection lost while recording an attempt; tried again",
			slog.Int64("delivery", d.ID), slog.Int("tries", tries), slog.Bool("recorded", err == nil))
	}
	if errors.Is(err, errLeaseLost) {
		reason := err.Error()
		if tries > 1 {
			reason = "the lease ended, or a try whose connection was lost had recorded the outcome"
		}
		w.cfg.Logger.WarnContext(ctx, "outbox: outcome dropped", slog.Int64("delivery", d.ID), slog.String("reason", reason))
		return nil
	}
	return err
}

// retryRecord runs write once more, on a connection that answers, within
// the lease's end.
func (w *Worker) retryRecord(ctx context.Context, d Delivery, write func(context.Context, bun.IDB) error) error {
	left := d.leaseEnd.Sub(w.cfg.Now())
	if left <= 0 {
		return errLeaseLost
	}
	ctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	conn, err := w.freshConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return write(ctx, conn)
}

// freshConn returns a connection of the pool that answers a ping. The
// connection a record lost is seldom the only one: a database restart
// loses every idle connection of the pool, and each would fail its next
// statement as the first did. Each fails its ping at once and is closed
// (pgdriver closes a connection that read EOF, and database/sql discards
// it), until one answers or the pool, out of idle ones, opens a new one;
// failing to open one is the try's error.
func (w *Worker) freshConn(ctx context.Context) (bun.Conn, error) {
	n := w.db.Stats().MaxOpenConnections
	if n <= 0 {
		n = 100
	}
	var err error
	for range n + 1 {
		var c bun.Conn
		if c, err = w.db.Conn(ctx); err != nil {
			return c, err
		}
		if err = c.PingContext(ctx); err == nil {
			return c, nil
		}
		c.Close()
		if !database.ConnLost(err) {
			break
		}
	}
	return bun.Conn{}, err
}

// recordOn writes one attempt's outcome through db: record's transaction.
func (w *Worker) recordOn(ctx context.Context, db bun.IDB, d Delivery, o Outcome, started time.Time, took time.Duration) error {
	o.Response = cut(o.Response, MaxResponseBytes)
	o.Error = cut(o.Error, maxErrorBytes)
	now := w.cfg.Now()
	status, step, due, finished := w.status(d, o), d.step, (*int64)(nil), (*int64)(nil)
	if status == Pending {
		step = d.step + 1
		delay := w.jitter(w.cfg.Schedule[step])
		if ra := min(o.RetryAfter, MaxRetryAfter); ra > delay {
			delay = ra
		}
		at := now.Add(delay).UnixMilli()
		due = &at
	}
	if status != Pending {
		at := now.UnixMilli()
		finished = &at
	}
	return deskkit.RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().Table("deskkit_outbox_deliveries")
		if status != Pending {
			// A finished delivery's payload (a notice's address) has
			// served its purpose; it is not kept for the log.
			q = q.Set("payload = NULL")
		}
		res, err := q.Set("status = ?", status).
			Set("step = ?", step).
			Set("due_at_ms = ?", due).
			Set("lease_token = NULL").
			Set("last_status_code = ?", nullInt(o.StatusCode)).
			Set("last_error = ?", nullString(o.Error)).
			Set("finished_at_ms = ?", finished).
			Where("id = ? AND lease_token = ?", d.ID, d.token).
			Exec(ctx)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return errLeaseLost
		}
		if _, err := tx.NewRaw(`INSERT INTO deskkit_outbox_attempts (delivery_id, attempt_no, started_at_ms, duration_ms, status_code, error, response)
VALUES (?, ?, ?, ?, ?, ?, ?)`, d.ID, d.Attempt, started.UnixMilli(), took.Milliseconds(),
			nullInt(o.StatusCode), nullString(o.Error), nullString(o.Response)).Exec(ctx); err != nil {
			return err
		}
		if err := trimAttempts(ctx, tx, d.ID, d.Attempt); err != nil {
			return err
		}
		return w.cfg.Handler.Recorded(ctx, tx, d, o)
	})
}

// jitter spreads d by +-Jitter.
func (w *Worker) jitter(d time.Duration) time.Duration {
	if w.cfg.Jitter == 0 || d == 0 {
		return d
	}
	f := 1 + w.cfg.Jitter*(2*w.cfg.Rand()-1)
	return time.Duration(float64(d) * f)
}

// cut returns s cut to at most n bytes of valid UTF-8, invalid bytes
// replaced.
func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
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
