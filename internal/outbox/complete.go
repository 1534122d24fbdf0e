package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
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
	// errText and errJSON are the outcome's error as storedError writes
	// it, made once by the attempt, not by each try of its flush.
	errText, errJSON *string
}

// storedError is an outcome's error as a flush records it: its English,
// cut to maxErrorBytes, for the error column (which a reader of an older
// deskkit, or of the database, reads as before), and its key and
// arguments as JSON (deskkit.Text's MarshalJSON) for the _json column,
// which readers write in their own language. An error whose English had to
// be cut (it no longer says what its Text does) is recorded as the English
// alone.
func storedError(t deskkit.Text) (english, js *string) {
	if t.IsZero() {
		return nil, nil
	}
	full := t.String()
	en := Cut(full, maxErrorBytes)
	if en != full {
		return &en, nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		return &en, nil
	}
	j := string(b)
	return &en, &j
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
		f.w.flushes.Add(1)
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
// the deliveries' new states (each only while its lease token matches),
// the attempts' rows of those, the targets' flow (flowUpsert), and the
// handler's. On PostgreSQL the first three are one statement
// (recordPostgres, in the function deskkit_outbox_record, whose plan
// PostgreSQL keeps for the session: functions.go): a flush of one or two
// outcomes, the usual flush at a steady 100 events a second, cost about
// 0.9 ms of PostgreSQL's CPU written out as VALUES (most of it planning a
// text seen once), which is as much as the rest of the delivery. It
// returns the deliveries whose leases had ended (their outcomes are
// dropped). The flow counts every attempt of the batch, a dropped
// outcome's too: its receiver answered.
func (w *Worker) recordOn(ctx context.Context, db bun.IDB, batch []done) ([]int64, error) {
	now := w.cfg.Now()
	rows := make([]recordRow, len(batch))
	for i, d := range batch {
		o := d.Outcome
		r := recordRow{ID: d.Delivery.ID, Token: d.Delivery.token, Status: w.status(d.Delivery, o), Step: d.Delivery.step,
			Code: nullInt(o.StatusCode), Err: d.errText, ErrJSON: d.errJSON, Attempt: d.Delivery.Attempt,
			Started: d.started.UnixMilli(), Took: d.took.Milliseconds(), Response: nullString(o.Response),
			Exchange: nullString(o.Exchange)}
		if r.Status == Pending {
			r.Step++
			delay := w.jitter(w.cfg.Schedule[r.Step])
			if ra := min(o.RetryAfter, MaxRetryAfter); ra > delay {
				delay = ra
			}
			at := now.Add(delay).UnixMilli()
			r.Due = &at
		} else {
			at := now.UnixMilli()
			r.Finished = &at
		}
		rows[i] = r
	}
	signals := flowSignals(batch)
	var (
		dropped []int64
		limits  []float64
	)
	err := deskkit.RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error {
		var (
			ids []int64
			err error
		)
		if w.pg {
			ids, limits, err = w.recordPG(ctx, tx, rows, signals, now)
		} else {
			ids, limits, err = w.recordSQLite(ctx, tx, rows, signals, now)
		}
		if err != nil {
			return err
		}
		ok := make(map[int64]bool, len(ids))
		for _, id := range ids {
			ok[id] = true
		}
		dropped = dropped[:0]
		results := make([]Result, 0, len(ids))
		for _, d := range batch {
			if !ok[d.Delivery.ID] {
				// A matching token is gone: the lease ended, and another
				// worker owns the delivery now.
				dropped = append(dropped, d.Delivery.ID)
				continue
			}
			if err := trimAttempts(ctx, tx, d.Delivery.ID, d.Delivery.Attempt); err != nil {
				return err
			}
			results = append(results, d.Result)
		}
		if len(results) == 0 {
			return nil
		}
		if err := keepBodies(ctx, tx, results, now); err != nil {
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

// recordRow is an outcome as a flush writes it: the delivery's new
// state and its attempt's row.
type recordRow struct {
	ID       int64   `json:"id"`
	Token    string  `json:"token"`
	Status   string  `json:"status"`
	Step     int     `json:"step"`
	Due      *int64  `json:"due"`
	Code     *int    `json:"code"`
	Err      *string `json:"err"`
	ErrJSON  *string `json:"errj"`
	Finished *int64  `json:"fin"`
	Attempt  int     `json:"att"`
	Started  int64   `json:"started"`
	Took     int64   `json:"took"`
	Response *string `json:"resp"`
	Exchange *string `json:"exch"`
}

// recordStates is the UPDATE of a flush's deliveries from v (recordRow's
// columns), each only while its lease token matches, returning the ids
// it updated.
const recordStates = `UPDATE deskkit_outbox_deliveries SET
  payload = CASE WHEN v.status = 'PENDING' THEN deskkit_outbox_deliveries.payload END,
  status = v.status, step = v.step, due_at_ms = v.due, lease_token = NULL,
  last_status_code = v.code, last_error = v.err, last_error_json = v.errj, finished_at_ms = v.fin
FROM v WHERE deskkit_outbox_deliveries.id = v.id AND deskkit_outbox_deliveries.lease_token = v.token
RETURNING deskkit_outbox_deliveries.id`

// recordAttempts is the INSERT of the attempts' rows from v, of the
// deliveries in recorded.
const recordAttempts = `INSERT INTO deskkit_outbox_attempts (delivery_id, attempt_no, started_at_ms, duration_ms, status_code, error, error_json, response, exchange)
SELECT v.id, v.att, v.started, v.took, v.code, v.err, v.errj, v.resp, v.exch FROM v WHERE v.id IN (SELECT id FROM recorded)`

// recordPostgres writes a flush on PostgreSQL in one statement of
// data-modifying WITH queries, whose text does not change with the flush
// (the outcomes and signals come as JSON), so that it is planned once per
// server session, as the body of deskkit_outbox_record: ?0 the outcomes
// (recordRow), ?1 the signals (flowRecord), ?2 the kind, ?3 and ?4 the
// in-flight floor and ceiling.
// Its rows are the ids recorded, then the targets' new limits.
func (w *Worker) recordPostgres() string {
	return `WITH v AS (
  SELECT * FROM json_to_recordset(CAST(?0 AS json)) AS v (id bigint, token varchar(40), status varchar(16), step integer,
    due bigint, code integer, err text, errj text, fin bigint, att integer, started bigint, took bigint, resp text, exch text)
), s AS (
  SELECT * FROM json_to_recordset(CAST(?1 AS json)) AS s (tenant_id bigint, target_id bigint, in_flight_limit double precision,
    latency_ms double precision, last_oks integer, last_busy integer, paused_until_ms bigint, changed_at_ms bigint)
), recorded AS (` + recordStates + `
), attempts AS (` + recordAttempts + `
), flow AS (` + w.flowSQL(`SELECT CAST(?2 AS VARCHAR(32)), tenant_id, target_id, in_flight_limit, latency_ms, latency_ms, last_oks, last_busy, paused_until_ms, changed_at_ms FROM s`,
		"CAST(?3 AS INTEGER)", "CAST(?4 AS INTEGER)") + `
)
SELECT id, NULL::bigint AS tenant_id, NULL::bigint AS target_id, NULL::double precision AS in_flight_limit FROM recorded
UNION ALL SELECT NULL, tenant_id, target_id, in_flight_limit FROM flow`
}

// prepareRecord prepares the flush's call of its function (recordCall),
// unless that is done. Like prepareClaim, it takes a connection of the
// pool: Run calls it holding none. On failure, and with
// Config.PlainStatements, flushes send the call unprepared.
func (w *Worker) prepareRecord(ctx context.Context) {
	if !w.pg || w.cfg.PlainStatements || w.recordStmt.Load() != nil {
		return
	}
	s, err := w.db.DB.PrepareContext(ctx, numbered(recordCall))
	if err != nil {
		w.cfg.Logger.WarnContext(ctx, "outbox: prepare the flush's call; flushes send it unprepared", slog.Any("error", err))
		return
	}
	if !w.recordStmt.CompareAndSwap(nil, s) {
		s.Close()
	}
}

// recordPG writes a flush's states, attempts and flow in tx with
// recordPostgres, and returns the deliveries it recorded and the
// targets' new limits in the signals' order.
func (w *Worker) recordPG(ctx context.Context, tx bun.Tx, rows []recordRow, signals []flowSignal, now time.Time) ([]int64, []float64, error) {
	outcomes, err := json.Marshal(rows)
	if err != nil {
		return nil, nil, err
	}
	flows, err := json.Marshal(w.flowRecords(signals, now))
	if err != nil {
		return nil, nil, err
	}
	args := []any{string(outcomes), string(flows), w.cfg.Kind, w.cfg.TargetInFlight, w.ceiling()}
	var res *sql.Rows
	if stmt := w.recordStmt.Load(); stmt != nil {
		res, err = tx.Tx.StmtContext(ctx, stmt).QueryContext(ctx, args...)
	} else {
		res, err = tx.QueryContext(ctx, tx.NewRaw(recordCall, args...).String())
	}
	if err != nil {
		return nil, nil, err
	}
	defer res.Close()
	var (
		ids   []int64
		limit []flowRow
	)
	for res.Next() {
		var (
			id, tenant, target sql.NullInt64
			l                  sql.NullFloat64
		)
		if err := res.Scan(&id, &tenant, &target, &l); err != nil {
			return nil, nil, err
		}
		if id.Valid {
			ids = append(ids, id.Int64)
		} else {
			limit = append(limit, flowRow{tenant.Int64, target.Int64, l.Float64})
		}
	}
	if err := res.Err(); err != nil {
		return nil, nil, err
	}
	return ids, flowLimits(signals, limit), nil
}

// recordSQLite writes a flush's states, attempts and flow in three
// statements (SQLite runs in the process: a statement costs no round
// trip, and its text is planned quickly), and returns what recordPG
// does.
func (w *Worker) recordSQLite(ctx context.Context, tx bun.Tx, rows []recordRow, signals []flowSignal, now time.Time) ([]int64, []float64, error) {
	var (
		values strings.Builder
		args   = make([]any, 0, 14*len(rows))
	)
	values.WriteString("WITH v (id, token, status, step, due, code, err, errj, fin, att, started, took, resp, exch) AS (VALUES ")
	for i, r := range rows {
		if i > 0 {
			values.WriteString(", ")
		}
		values.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, r.ID, r.Token, r.Status, r.Step, r.Due, r.Code, r.Err, r.ErrJSON, r.Finished, r.Attempt, r.Started, r.Took, r.Response, r.Exchange)
	}
	values.WriteString(")\n")
	var ids []int64
	if err := tx.NewRaw(values.String()+recordStates, args...).Scan(ctx, &ids); err != nil {
		return nil, nil, err
	}
	if len(ids) > 0 {
		q := values.String() + ", recorded AS (SELECT id FROM deskkit_outbox_deliveries WHERE id IN (?))\n" + recordAttempts
		if _, err := tx.NewRaw(q, append(args, bun.List(ids))...).Exec(ctx); err != nil {
			return nil, nil, err
		}
	}
	limits, err := w.recordFlow(ctx, tx, signals, now)
	return ids, limits, err
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
