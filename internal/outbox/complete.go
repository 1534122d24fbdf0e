package outbox

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/database"
)

// Tries of recording a flush when the connection is lost: up to
// recordTries, the pause before the second recordPause and doubled before
// each next up to recordMaxPause, each spread over its upper half (50 ms
// to 1 s: 1.8 to 3.6 s in all), and never past the flush's last lease.
const (
	recordTries    = 8
	recordPause    = 50 * time.Millisecond
	recordMaxPause = time.Second
)

// done is an attempt's result with what its record needs.
type done struct {
	Result
	started time.Time
	took    time.Duration
}

// flusher records the outcomes Run's attempts hand it in flushes: the
// first outcome of a flush waits Config.FlushEvery for others, or less if
// Config.FlushSize come first. An attempt that hands over an outcome while
// a full flush's worth waits blocks until the flush takes them.
type flusher struct {
	w  *Worker
	in chan done
	wg sync.WaitGroup
}

func (w *Worker) startFlusher() *flusher {
	f := &flusher{w: w, in: make(chan done, w.cfg.FlushSize)}
	f.wg.Go(f.run)
	return f
}

// add hands an outcome to the flusher.
func (f *flusher) add(d done) { f.in <- d }

// stop records what is left and returns once it is recorded; nothing may
// be added after it.
func (f *flusher) stop() {
	close(f.in)
	f.wg.Wait()
}

func (f *flusher) run() {
	// Records outlive the Run that made the attempts: each flush is
	// bounded by its leases.
	ctx := context.Background()
	timer := time.NewTimer(f.w.cfg.FlushEvery)
	timer.Stop()
	var batch []done
	wait := f.w.cfg.FlushEvery
	for {
		if len(batch) == 0 {
			d, ok := <-f.in
			if !ok {
				return
			}
			batch = append(batch, d)
			timer.Reset(wait)
		}
		select {
		case d, ok := <-f.in:
			if !ok {
				timer.Stop()
				f.w.flush(ctx, batch)
				return
			}
			if batch = append(batch, d); len(batch) < f.w.cfg.FlushSize {
				continue
			}
			timer.Stop()
		case <-timer.C:
		}
		wait = f.w.nextFlushWait(wait, len(batch))
		f.w.flush(ctx, batch)
		batch = nil
		// The flush ended leases: a target at its cap may have room now.
		// Not on PostgreSQL, where the worker's claims leave out its
		// ended attempts already, and it claims again as each ends.
		if !f.w.pg && f.w.capped.Load() {
			f.w.Wake()
		}
	}
}

// flush records batch's outcomes in one transaction (see record). A flush
// that fails for another reason than a lost connection (the handler
// refused an outcome, a constraint) records each outcome alone, so that
// one outcome's fault costs the others nothing.
func (w *Worker) flush(ctx context.Context, batch []done) {
	defer w.forgetEnded(batch)
	err := w.record(ctx, batch)
	if err != nil && len(batch) > 1 && !database.ConnLost(err) {
		for _, d := range batch {
			if err := w.record(ctx, []done{d}); err != nil {
				w.cfg.Logger.ErrorContext(ctx, "outbox: record attempt", slog.String("kind", w.cfg.Kind),
					slog.Int64("delivery", d.Delivery.ID), slog.Any("error", err))
			}
		}
		return
	}
	if err != nil {
		w.cfg.Logger.ErrorContext(ctx, "outbox: record attempts", slog.String("kind", w.cfg.Kind),
			slog.Int("outcomes", len(batch)), slog.Any("error", err))
	}
}

// record writes the outcomes of batch in one transaction: each attempt's
// row, each delivery's new state, and the handler's own record. A
// connection lost under it (the database restarted, a proxy or the network
// dropped the pool's connections while the attempts were in flight) does
// not lose the outcomes, which would have the attempts made again when
// their leases end: the transaction is tried again on a fresh connection,
// after a short pause, up to recordTries times and while a lease of the
// batch lasts. A try again is safe: the first rolled back, or, if its
// COMMIT was under way, committed and cleared the leases' tokens, which
// the next finds gone. Other errors (a constraint, the handler's own) are
// not tried again; an outcome whose lease was lost is dropped and logged.
func (w *Worker) record(ctx context.Context, batch []done) error {
	end := batch[0].Delivery.leaseEnd
	for _, d := range batch[1:] {
		if d.Delivery.leaseEnd.After(end) {
			end = d.Delivery.leaseEnd
		}
	}
	dropped, err := w.recordOn(ctx, w.db, batch)
	tries := 1
	for ; err != nil && tries < recordTries && database.ConnLost(err); tries++ {
		pause := min(recordPause<<(tries-1), recordMaxPause)
		pause = pause/2 + time.Duration(w.cfg.Rand()*float64(pause/2))
		if w.cfg.Now().Add(pause).After(end) || w.sleep(ctx, pause) != nil {
			break
		}
		dropped, err = w.retryRecord(ctx, end, batch)
	}
	if tries > 1 {
		w.cfg.Logger.WarnContext(ctx, "outbox: connection lost while recording attempts; tried again",
			slog.Int("outcomes", len(batch)), slog.Int("tries", tries), slog.Bool("recorded", err == nil))
	}
	if err == nil && len(dropped) > 0 {
		reason := "the lease ended before the outcome came; another worker makes the attempt again"
		if tries > 1 {
			reason = "the lease ended, or a try whose connection was lost had recorded the outcome"
		}
		for _, id := range dropped {
			w.cfg.Logger.WarnContext(ctx, "outbox: outcome dropped", slog.Int64("delivery", id), slog.String("reason", reason))
		}
	}
	return err
}

// retryRecord records batch once more, on a connection that answers,
// before end.
func (w *Worker) retryRecord(ctx context.Context, end time.Time, batch []done) ([]int64, error) {
	left := end.Sub(w.cfg.Now())
	if left <= 0 {
		return nil, errors.New("every lease of the flush ended")
	}
	ctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	conn, err := w.freshConn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return w.recordOn(ctx, conn, batch)
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

// recordOn writes the outcomes of batch through db in one transaction:
// one statement for the deliveries' new states (each only while its lease
// token matches), one for the attempts' rows, and the handler's. It
// returns the deliveries whose leases had ended (their outcomes are
// dropped).
func (w *Worker) recordOn(ctx context.Context, db bun.IDB, batch []done) ([]int64, error) {
	now := w.cfg.Now()
	var (
		states strings.Builder
		args   = make([]any, 0, 8*len(batch))
	)
	for i, d := range batch {
		o := d.Outcome
		status, step, due, finished := w.status(d.Delivery, o), d.Delivery.step, (*int64)(nil), (*int64)(nil)
		if status == Pending {
			step++
			delay := w.jitter(w.cfg.Schedule[step])
			if ra := min(o.RetryAfter, MaxRetryAfter); ra > delay {
				delay = ra
			}
			at := now.Add(delay).UnixMilli()
			due = &at
		} else {
			at := now.UnixMilli()
			finished = &at
		}
		if i > 0 {
			states.WriteString(", ")
		}
		states.WriteString("(CAST(? AS BIGINT), CAST(? AS VARCHAR(40)), CAST(? AS VARCHAR(16)), CAST(? AS INTEGER), CAST(? AS BIGINT), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS BIGINT))")
		args = append(args, d.Delivery.ID, d.Delivery.token, status, step, due,
			nullInt(o.StatusCode), nullString(o.Error), finished)
	}
	var (
		dropped []int64
		signals []flowSignal
		limits  []float64
	)
	err := deskkit.RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error {
		var ids []int64
		if err := tx.NewRaw(`WITH v (id, token, status, step, due, code, err, fin) AS (VALUES `+states.String()+`)
UPDATE deskkit_outbox_deliveries SET
  payload = CASE WHEN v.status = 'PENDING' THEN deskkit_outbox_deliveries.payload END,
  status = v.status, step = v.step, due_at_ms = v.due, lease_token = NULL,
  last_status_code = v.code, last_error = v.err, finished_at_ms = v.fin
FROM v WHERE deskkit_outbox_deliveries.id = v.id AND deskkit_outbox_deliveries.lease_token = v.token
RETURNING deskkit_outbox_deliveries.id`, args...).Scan(ctx, &ids); err != nil {
			return err
		}
		ok := make(map[int64]bool, len(ids))
		for _, id := range ids {
			ok[id] = true
		}
		dropped = dropped[:0]
		var (
			rows    strings.Builder
			rowArgs = make([]any, 0, 7*len(ids))
			results = make([]Result, 0, len(ids))
			kept    = make([]done, 0, len(ids))
		)
		for _, d := range batch {
			if !ok[d.Delivery.ID] {
				// A matching token is gone: the lease ended, and another
				// worker owns the delivery now.
				dropped = append(dropped, d.Delivery.ID)
				continue
			}
			if rows.Len() > 0 {
				rows.WriteString(", ")
			}
			rows.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			rowArgs = append(rowArgs, d.Delivery.ID, d.Delivery.Attempt, d.started.UnixMilli(), d.took.Milliseconds(),
				nullInt(d.Outcome.StatusCode), nullString(d.Outcome.Error), nullString(d.Outcome.Response))
			results = append(results, d.Result)
			kept = append(kept, d)
		}
		if len(results) == 0 {
			return nil
		}
		if _, err := tx.NewRaw(`INSERT INTO deskkit_outbox_attempts (delivery_id, attempt_no, started_at_ms, duration_ms, status_code, error, response)
VALUES `+rows.String(), rowArgs...).Exec(ctx); err != nil {
			return err
		}
		for _, r := range results {
			if err := trimAttempts(ctx, tx, r.Delivery.ID, r.Delivery.Attempt); err != nil {
				return err
			}
		}
		signals = flowSignals(kept)
		var err error
		if limits, err = w.recordFlow(ctx, tx, signals, now); err != nil {
			return err
		}
		return w.cfg.Handler.Recorded(ctx, tx, results)
	})
	if err == nil {
		for i, s := range signals {
			w.tel.limit(ctx, s.label, limits[i])
		}
	}
	return dropped, err
}

// trickleFlush is the longest an outcome waits for others while outcomes
// trickle in (see nextFlushWait).
const trickleFlush = 25 * time.Millisecond

// trickleOutcomes is how many outcomes a flush holds, at least, for the
// next to wait only Config.FlushEvery.
const trickleOutcomes = 4

// nextFlushWait is how long the next flush's first outcome waits for
// others, after a flush of n outcomes that waited wait: twice as long,
// up to trickleFlush, while flushes record fewer than trickleOutcomes
// outcomes (at 100 events a second a flush of one costs about 1 ms of
// CPU, as much as the attempt), and Config.FlushEvery again as soon as
// that many come together or a claim was capped: on SQLite a flush is
// what frees a capped target's room (it wakes the worker), and on either
// database other workers count a lease until its outcome is recorded.
// An outcome's record (its delivery's status in the API) is then at most
// 25 ms behind its attempt.
func (w *Worker) nextFlushWait(wait time.Duration, n int) time.Duration {
	if n >= trickleOutcomes || w.capped.Load() {
		return w.cfg.FlushEvery
	}
	return min(2*wait, max(trickleFlush, w.cfg.FlushEvery))
}
