package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// A claim takes up to a batch of due deliveries of the worker's kind in
// one statement, fairly:
//
//   - Target by target. A target (a channel; a notice's user) gets at most
//     Config.TargetInFlight deliveries in flight at once, counted from the
//     leased rows of every worker on the database, so that a hanging
//     endpoint holds that many attempts, not every worker. A lease counts
//     for Config.InFlightFor after its claim (an attempt's longest time and
//     its record's), so that a worker that died holds its targets' caps no
//     longer than an attempt could have run. Each target's rows are taken
//     in due order.
//   - Tenants in turn, and each tenant's targets in turn: the claim takes
//     every tenant's first row before any tenant's second, and within a
//     tenant every target's first row before any target's second, so that
//     no tenant waits behind another's backlog and no target behind
//     another of its tenant's. Ties go to the row due first.
//   - A tenant holds at most Config.TenantSlots of this worker's attempt
//     slots, counting those its attempts already hold, so that another
//     tenant's event finds a slot free even while one tenant's endpoints
//     hang.
//
// On PostgreSQL the claim steps from target to target through
// deskkit_outbox_target_due_idx (one index probe per target with pending
// deliveries: a loose index scan), through at most targetSpan targets,
// starting after the last one the worker's previous claim reached and
// from the first again once a claim reached the end: claims go round the
// targets in turn, and each costs what its batch does, however many
// targets have pending deliveries. It reads each target's due rows with
// FOR UPDATE SKIP LOCKED, so that the workers of every replica share the
// queue without waiting for each other, and no more of a target's than its
// share of the batch (twice the batch over the targets reached), so that
// it locks few rows it will not take; it returns each row's event with
// it. Tenants and targets are in turn among the targets a claim reaches;
// a target beyond them waits for the next claims, at most a round of the
// targets, not behind a backlog. A target's rows are read in the index's
// order, due time alone: a tie-break on the id would sort every due row
// of the target. It runs inside the function deskkit_outbox_claim
// (functions.go), whose plan PostgreSQL keeps for the server session:
// planning it costs as much as running it.
//
// The cap holds across replicas on PostgreSQL: a claim takes a
// transaction-scoped advisory lock on each target it reaches
// (pg_try_advisory_xact_lock on a hash of the schema, the kind, the
// tenant and the target), and counts the target's leases only once it
// holds it, through deskkit_outbox_in_flight, a VOLATILE function whose
// query reads with a snapshot of its own, taken after the lock. It leaves
// out the leases of the claiming worker's own attempts that ended, whose
// outcomes wait for a flush (their ids, passed to the claim): those
// attempts no longer run, and counted they would hold the cap between an
// attempt's end and its flush, 5 ms and a commit, which left a lone busy
// target's slots idle most of the time (a one-webhook drain at 305
// deliveries/s against River's 1,643 doing the same POST). Other workers
// cannot know the attempts ended, and count them until they are recorded:
// the cap holds. A flush that commits while a claim runs clears leases
// that the count then leaves out either way, never twice. The
// claim's statement reads with the snapshot of its start, which misses
// the leases of a claim that committed between that start and the lock:
// with the count in the statement, three replicas claiming at once still
// put 6 and 9 deliveries in flight under a cap of 3. The lock is held to
// the claim's commit, so a second claim of the target counts the first
// one's leases. A claim that finds a target's lock taken (another claim
// is taking from it at that instant) skips the target, as SKIP LOCKED
// skips rows: replicas never wait for each other, and the target is
// taken at a later claim, the skipping one reporting it capped. Claims of
// different targets take different locks and run side by side; a claim
// holds at most targetSpan of them (its batch's size, at least 4), in
// PostgreSQL's shared lock table. A one-target drain pays one lock and
// one function call per claim, and no row is written by every claim (a
// counter per target would be).
//
// On PostgreSQL a claim commits without waiting for its WAL to reach the
// disk (synchronous_commit off for its own transaction, as the CTE lazy
// sets it): a claim is the one write whose loss is harmless. Other
// sessions see it committed at once, as ever; only a crash of PostgreSQL
// itself within a few hundred milliseconds of the claim (wal_writer_delay
// times three at most) forgets it, and the deliveries are then claimed
// again: an attempt made again, as at least once allows. Outcomes are
// recorded with synchronous commits. It saves one disk flush per claim.
//
// On SQLite the claim steps through the targets as it does on PostgreSQL:
// through deskkit_outbox_target_due_idx (a recursive CTE, one index seek
// per target: the next target of the tenant, else the next tenant's
// first), through at most targetSpan targets from the worker's cursor,
// going round them in turn. For each target it reaches it counts the
// leases (through deskkit_outbox_leased_idx, the leased rows of that
// target alone) and reads its due rows in due order up to the batch's
// size (a LIMIT on the same index, whose entries SQLite keeps in due
// order and then by id), so that a claim reads at most the batch's size
// times targetSpan index entries however long the queue; no statement
// reads the kind's due rows. The targets, caps, tenants' turns and slots
// are then those of the PostgreSQL claim, so it tells the cursor and
// whether it found a cap as that one does. It runs as two statements in
// one transaction: a read of what to take (claimSQLite), then the lease
// of those rows by id (leaseSQLite), since SQLite's UPDATE returns
// nothing when it changes no row, and a claim that takes nothing must
// still move the cursor. The transaction begins IMMEDIATE (as deskkit
// opens SQLite), taking the database's one write lock before it reads, so
// that no claim leases rows between another's read and lease: the cap
// holds for every worker on the file without locks of its own.
// Its reach is PostgreSQL's: a target beyond the span waits for the next
// claims, at most a round of the targets.

// claimPostgres is the claim on PostgreSQL. Its arguments: ?0 kind, ?1
// now, ?2 TargetInFlight, ?3 the batch's size, ?4 TenantSlots, ?5 the
// tenants' slots held (a JSON object: tenant id to count), ?6 the lease's
// end, ?7 the lease's token, ?8 the lease end after which a lease counts
// as in flight (now + Lease - InFlightFor), ?9 and ?10 the target after
// which the steps start, ?11 one more than how many targets they step
// through: the last step only finds whether there are more, ?12 the
// deliveries whose attempts this worker ended and has not recorded yet
// (an array of ids), which do not count as in flight, ?13 the ceiling of
// a target's in-flight limit (?2 its floor), ?14 the default rate of a
// target without its own (deliveries a second, 0 for none), ?15 the rate
// horizon (ms): a rate-limited target gives a claim the deliveries that
// fall due by then.
const claimPostgres = `WITH RECURSIVE targets AS (
  (SELECT tenant_id, target_id, 1 AS i FROM deskkit_outbox_deliveries
   WHERE status = 'PENDING' AND kind = ?0 AND (tenant_id, target_id) > (?9, ?10)
   ORDER BY tenant_id, target_id LIMIT 1)
  UNION ALL
  SELECT n.tenant_id, n.target_id, t.i + 1 FROM targets t CROSS JOIN LATERAL (
    SELECT d.tenant_id, d.target_id FROM deskkit_outbox_deliveries d
    WHERE d.status = 'PENDING' AND d.kind = ?0 AND (d.tenant_id, d.target_id) > (t.tenant_id, t.target_id)
    ORDER BY d.tenant_id, d.target_id LIMIT 1) n
  WHERE t.i < ?11
),
flow AS (
  SELECT t.tenant_id, t.target_id, t.i,
    CASE WHEN g.in_flight_limit < 1 THEN 1
      ELSE GREATEST(CAST(?2 AS bigint), LEAST(CAST(?13 AS bigint), COALESCE(CAST(floor(g.in_flight_limit) AS bigint), ?2))) END AS lim,
    COALESCE(g.rate_per_s, CAST(?14 AS double precision)) AS rate,
    COALESCE(g.paused_until_ms, 0) > ?1 AS paused
  FROM targets t LEFT JOIN deskkit_outbox_targets g
    ON g.kind = ?0 AND g.tenant_id = t.tenant_id AND g.target_id = t.target_id
  WHERE t.i < ?11
),
locked AS MATERIALIZED (
  SELECT f.*, NOT f.paused AND pg_try_advisory_xact_lock(hashtextextended(
      current_schema() || '.deskkit_outbox.' || CAST(?0 AS text) || '.' || f.tenant_id || '.' || f.target_id, 0)) AS locked
  FROM flow f
),
paced AS MATERIALIZED (
  SELECT l.*, CASE WHEN l.locked AND l.rate > 0
      THEN GREATEST(CAST(?1 AS double precision), COALESCE(deskkit_outbox_rate_next(CAST(?0 AS text), l.tenant_id, l.target_id), 0)) END AS start
  FROM locked l
),
free AS MATERIALIZED (
  SELECT p.tenant_id, p.target_id, p.rate, p.start,
    CASE WHEN NOT p.locked THEN 0
      ELSE LEAST(p.lim - deskkit_outbox_in_flight(CAST(?0 AS text), p.tenant_id, p.target_id, ?8, CAST(?12 AS bigint[])),
        CASE WHEN p.rate > 0 THEN GREATEST(0, CAST(floor((?1 + ?15 - p.start) * p.rate / 1000) AS bigint) + 1) ELSE p.lim END)
      END AS free,
    GREATEST(1, (2 * ?3 + v.n - 1) / v.n) AS share
  FROM paced p, (SELECT count(*) AS n FROM targets WHERE i < ?11) v
),
room AS (SELECT tenant_id, target_id, free, LEAST(free, share) AS room, rate, start FROM free),
due AS (
  SELECT c.id, c.tenant_id, c.target_id, c.due_at_ms,
    row_number() OVER (PARTITION BY c.tenant_id, c.target_id ORDER BY c.due_at_ms, c.id) AS turn
  FROM room r CROSS JOIN LATERAL (
    SELECT d.id, d.tenant_id, d.target_id, d.due_at_ms FROM deskkit_outbox_deliveries d
    WHERE d.status = 'PENDING' AND d.kind = ?0 AND d.tenant_id = r.tenant_id AND d.target_id = r.target_id
      AND d.due_at_ms <= ?1
    ORDER BY d.due_at_ms LIMIT r.room
    FOR UPDATE SKIP LOCKED) c
  WHERE r.room > 0
),
ranked AS (
  SELECT id, tenant_id, due_at_ms,
    row_number() OVER (PARTITION BY tenant_id ORDER BY turn, due_at_ms, id) AS turn
  FROM due
),
pick AS (
  SELECT r.id FROM ranked r
  LEFT JOIN json_each_text(CAST(?5 AS json)) h ON h.key = CAST(r.tenant_id AS text)
  WHERE r.turn <= ?4 - COALESCE(CAST(h.value AS integer), 0)
  ORDER BY r.turn, r.due_at_ms, r.id LIMIT ?3
),
lazy AS (SELECT set_config('synchronous_commit', 'off', true) AS v),
claimed AS (
  UPDATE deskkit_outbox_deliveries d SET due_at_ms = ?6, lease_token = ?7, attempts = d.attempts + 1
  FROM pick, lazy WHERE d.id = pick.id
  RETURNING d.id, d.tenant_id, d.event_id, d.kind, d.target_id, d.payload, d.attempts, d.step
),
spaced AS (
  SELECT c.id, r.start + (d.turn - 1) * 1000 / r.rate AS not_before, r.rate, r.start, c.tenant_id, c.target_id
  FROM claimed c JOIN due d ON d.id = c.id
  JOIN room r ON r.tenant_id = c.tenant_id AND r.target_id = c.target_id
  WHERE r.rate > 0
),
moved AS (
  INSERT INTO deskkit_outbox_targets AS g (kind, tenant_id, target_id, in_flight_limit, rate_next_ms, changed_at_ms)
  SELECT ?0, tenant_id, target_id, ?2, max(start) + count(*) * 1000 / max(rate), ?1 FROM spaced GROUP BY tenant_id, target_id
  ON CONFLICT (kind, tenant_id, target_id) DO UPDATE SET rate_next_ms = excluded.rate_next_ms
)
SELECT c.*, s.not_before AS not_before_ms, s.rate, e.event_id IS NOT NULL AS has_event, e.event_type, e.occurred_at_ms, e.title, e.body, e.data, e.messages,
  last.tenant_id AS last_tenant_id, last.target_id AS last_target_id, last.found,
  EXISTS (SELECT 1 FROM room WHERE room <= 0) OR EXISTS (SELECT 1 FROM ranked r
    LEFT JOIN json_each_text(CAST(?5 AS json)) h ON h.key = CAST(r.tenant_id AS text)
    WHERE r.turn > ?4 - COALESCE(CAST(h.value AS integer), 0)) AS capped,
  NOT EXISTS (SELECT 1 FROM room r WHERE r.free > (SELECT count(*) FROM claimed c
    WHERE c.tenant_id = r.tenant_id AND c.target_id = r.target_id)) AS full
FROM (SELECT t.tenant_id, t.target_id, (SELECT max(i) FROM targets) AS found FROM targets t WHERE t.i < ?11 ORDER BY t.i DESC LIMIT 1) last
LEFT JOIN (claimed c
  LEFT JOIN deskkit_outbox_events e ON e.tenant_id = c.tenant_id AND e.event_id = c.event_id
  LEFT JOIN spaced s ON s.id = c.id) ON true`

// claimSQLite is the claim's read on SQLite, with claimPostgres's
// arguments: it returns the deliveries to take (one row each, in the
// order to start them; a row without one when it takes none), with on
// each row the last target it reached, how many it found and whether it
// found a cap, as claimPostgres does. leaseSQLite then leases the rows,
// in the same transaction. Its LIMITs are CASTs: SQLite plans a LIMIT of
// a bare parameter for its value, and prepares the statement again at
// every run whose binding of it changes (a third of the claim's time).
const claimSQLite = `WITH RECURSIVE targets(tenant_id, target_id, i) AS (
  SELECT * FROM (SELECT tenant_id, target_id, 1 FROM deskkit_outbox_deliveries
    WHERE status = 'PENDING' AND kind = ?0 AND (tenant_id, target_id) > (?9, ?10)
    ORDER BY tenant_id, target_id LIMIT 1)
  UNION ALL
  SELECT d.tenant_id, d.target_id, t.i + 1 FROM targets t
  JOIN deskkit_outbox_deliveries d ON d.id = COALESCE(
    (SELECT n.id FROM deskkit_outbox_deliveries n
     WHERE n.status = 'PENDING' AND n.kind = ?0 AND n.tenant_id = t.tenant_id AND n.target_id > t.target_id
     ORDER BY n.target_id LIMIT 1),
    (SELECT n.id FROM deskkit_outbox_deliveries n
     WHERE n.status = 'PENDING' AND n.kind = ?0 AND n.tenant_id > t.tenant_id
     ORDER BY n.tenant_id, n.target_id LIMIT 1))
  WHERE t.i < ?11
),
flow AS MATERIALIZED (
  SELECT t.tenant_id, t.target_id,
    CASE WHEN g.in_flight_limit < 1 THEN 1
      ELSE max(?2, min(?13, COALESCE(CAST(g.in_flight_limit AS INTEGER), ?2))) END AS lim,
    COALESCE(g.rate_per_s, ?14) AS rate,
    COALESCE(g.paused_until_ms, 0) > ?1 AS paused,
    CAST(max(?1, COALESCE(g.rate_next_ms, 0)) AS REAL) AS start
  FROM targets t LEFT JOIN deskkit_outbox_targets g
    ON g.kind = ?0 AND g.tenant_id = t.tenant_id AND g.target_id = t.target_id
  WHERE t.i < ?11
),
room AS MATERIALIZED (
  SELECT f.tenant_id, f.target_id, f.rate, f.start, CASE WHEN f.paused THEN 0 ELSE MIN(f.lim - (
      SELECT count(*) FROM deskkit_outbox_deliveries b
      WHERE b.lease_token IS NOT NULL AND b.kind = ?0 AND b.tenant_id = f.tenant_id AND b.target_id = f.target_id
        AND b.status = 'PENDING' AND +b.due_at_ms > ?8), ?3,
      CASE WHEN f.rate > 0 THEN max(0, CAST((?1 + ?15 - f.start) * f.rate / 1000 AS INTEGER) + 1) ELSE ?3 END) END AS room
  FROM flow f
),
due AS (
  SELECT d.id, d.tenant_id, d.target_id, d.due_at_ms, r.room, r.rate, r.start,
    row_number() OVER (PARTITION BY d.tenant_id, d.target_id ORDER BY d.due_at_ms, d.id) AS turn
  FROM room r JOIN deskkit_outbox_deliveries d ON d.id IN (
    SELECT x.id FROM deskkit_outbox_deliveries x
    WHERE x.status = 'PENDING' AND x.kind = ?0 AND x.tenant_id = r.tenant_id AND x.target_id = r.target_id
      AND x.due_at_ms <= ?1
    ORDER BY x.due_at_ms, x.id LIMIT CAST(?3 AS INTEGER))
  WHERE r.room > 0
),
ranked AS MATERIALIZED (
  SELECT id, tenant_id, target_id, due_at_ms, rate, start, turn AS target_turn,
    row_number() OVER (PARTITION BY tenant_id ORDER BY turn, due_at_ms, id) AS turn
  FROM due WHERE turn <= room
),
pick AS (
  SELECT r.id, r.turn, r.due_at_ms, r.tenant_id, r.target_id, r.rate, r.start, r.target_turn FROM ranked r
  LEFT JOIN json_each(?5) h ON h.key = CAST(r.tenant_id AS TEXT)
  WHERE r.turn <= ?4 - COALESCE(h.value, 0)
  ORDER BY r.turn, r.due_at_ms, r.id LIMIT CAST(?3 AS INTEGER)
)
SELECT p.id, p.tenant_id, p.target_id, CASE WHEN p.rate > 0 THEN p.rate END AS rate, p.start,
  CASE WHEN p.rate > 0 THEN p.start + (p.target_turn - 1) * 1000.0 / p.rate END AS not_before_ms,
  last.tenant_id AS last_tenant_id, last.target_id AS last_target_id, last.found,
  EXISTS (SELECT 1 FROM room WHERE room <= 0) OR EXISTS (SELECT 1 FROM ranked r
    LEFT JOIN json_each(?5) h ON h.key = CAST(r.tenant_id AS TEXT)
    WHERE r.turn > ?4 - COALESCE(h.value, 0)) AS capped
FROM (SELECT t.tenant_id, t.target_id, (SELECT max(i) FROM targets) AS found FROM targets t
  WHERE t.i < ?11 ORDER BY t.i DESC LIMIT 1) last
LEFT JOIN pick p ON true
ORDER BY p.turn, p.due_at_ms, p.id`

// leaseSQLite leases the deliveries claimSQLite picked: ?0 the lease's
// end, ?1 its token, ?2 the ids.
const leaseSQLite = `UPDATE deskkit_outbox_deliveries SET due_at_ms = ?0, lease_token = ?1, attempts = attempts + 1
WHERE id IN (?2)
RETURNING id, tenant_id, event_id, kind, target_id, payload, attempts, step`

// claimOnSQLite runs the claim on SQLite (claimSQLite, then leaseSQLite)
// in one transaction, which takes the database's write lock as it begins
// (deskkit opens SQLite with IMMEDIATE transactions): no other claim
// leases rows between its read and its lease. Its rows are claimPostgres's
// (one without a delivery when it takes none), in claimSQLite's order.
// claimSQLite is prepared at the worker's first claim, before the
// transaction takes its connection (in claimStmt, which SQLite's worker
// has no other use for), and on each connection of the pool once: parsing
// it took as long as running it.
func (w *Worker) claimOnSQLite(ctx context.Context, args []any) ([]claimedRow, error) {
	stmt := w.claimStmt.Load()
	if stmt == nil {
		s, err := w.db.DB.PrepareContext(ctx, numbered(claimSQLite))
		if err != nil {
			return nil, err
		}
		if !w.claimStmt.CompareAndSwap(nil, s) {
			s.Close()
		}
		stmt = w.claimStmt.Load()
	}
	var rows []claimedRow
	err := w.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.Tx.StmtContext(ctx, stmt).QueryContext(ctx, args...)
		if err != nil {
			return err
		}
		var picks []claimedRow
		if err := w.db.ScanRows(ctx, res, &picks); err != nil {
			return err
		}
		rows = picks
		if len(picks) == 0 || picks[0].ID == 0 {
			return nil
		}
		order := make(map[int64]int, len(picks))
		ids := make([]int64, len(picks))
		for i, p := range picks {
			order[p.ID], ids[i] = i, p.ID
		}
		var leased []claimedRow
		if err := tx.NewRaw(leaseSQLite, args[6], args[7], bun.List(ids)).Scan(ctx, &leased); err != nil {
			return err
		}
		slices.SortFunc(leased, func(a, b claimedRow) int { return order[a.ID] - order[b.ID] })
		for i := range leased {
			p := picks[0]
			leased[i].LastTenant, leased[i].LastTarget, leased[i].Found, leased[i].Capped = p.LastTenant, p.LastTarget, p.Found, p.Capped
			leased[i].NotBefore, leased[i].Rate = picks[order[leased[i].ID]].NotBefore, picks[order[leased[i].ID]].Rate
		}
		rows = leased
		return pace(ctx, tx, w.cfg, args[1].(int64), picks)
	})
	return rows, err
}

// claimedRow is a claimed delivery, with its event on PostgreSQL (SQLite
// reads the events after the claim).
type claimedRow struct {
	deliveryRow `bun:",extend"`

	// The last target the claim stepped to, and how many targets it
	// found, one more than it stepped to if there are more;
	// on the one row of a claim that took nothing, the delivery's columns
	// are zero.
	LastTenant int64 `bun:"last_tenant_id"`
	LastTarget int64 `bun:"last_target_id"`
	Found      int   `bun:"found"`
	// Whether a target the claim reached was at its cap, or a tenant's
	// due deliveries beyond its slots.
	Capped bool `bun:"capped"`
	// Whether every target the claim reached is at its cap once its rows
	// are taken (or was taken from by another claim at that instant).
	Full bool `bun:"full"`
	// NotBefore is when the attempt of a rate-limited target's delivery
	// may start (Unix ms); nil without a rate. Rate and Start are the
	// target's rate and first start, on SQLite's picks (see pace).
	NotBefore *float64 `bun:"not_before_ms"`
	Rate      *float64 `bun:"rate"`
	Start     float64  `bun:"start"`

	HasEvent   bool    `bun:"has_event"`
	EventType  string  `bun:"event_type"`
	OccurredAt int64   `bun:"occurred_at_ms"`
	Title      string  `bun:"title"`
	Body       string  `bun:"body"`
	Data       string  `bun:"data"`
	Messages   *string `bun:"messages"`

	// TargetState is Config.TargetState's value for the row.
	TargetState *string `bun:"target_state"`
}

// claim takes up to n due deliveries under a new lease, as the comment
// above says, with held the slots each tenant's attempts hold now, and
// returns them with their events.
func (w *Worker) claim(ctx context.Context, n int, held map[int64]int) ([]Delivery, error) {
	claimed := w.cfg.Now()
	now := claimed.UnixMilli()
	token := newToken()
	heldJSON, err := heldObject(held)
	if err != nil {
		return nil, err
	}
	span := targetSpan(n)
	w.mu.Lock()
	from := w.cursor
	w.mu.Unlock()
	if from == (target{}) {
		// From the first target, whatever its ids.
		from = target{math.MinInt64, math.MinInt64}
	}
	args := []any{w.cfg.Kind, now, w.cfg.TargetInFlight, n, w.cfg.TenantSlots, heldJSON,
		now + w.cfg.Lease.Milliseconds(), token, now + (w.cfg.Lease - w.cfg.InFlightFor).Milliseconds(),
		from.tenant, from.target, span + 1, w.endedArray(),
		w.ceiling(), w.cfg.TargetRate, rateHorizon.Milliseconds()}
	var rows []claimedRow
	if !w.pg {
		if rows, err = w.claimOnSQLite(ctx, args); err != nil {
			return nil, err
		}
	} else if stmt := w.claimStmt.Load(); stmt != nil {
		res, err := stmt.QueryContext(ctx, args...)
		if err != nil {
			return nil, err
		}
		if err := w.db.ScanRows(ctx, res, &rows); err != nil {
			return nil, err
		}
	} else if err := w.db.NewRaw(w.claimCall, args...).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	// The next claim steps on from the last target this one reached, or
	// from the first once it reached the end.
	next := target{}
	if len(rows) > 0 && rows[0].Found > span {
		next = target{rows[0].LastTenant, rows[0].LastTarget}
	}
	w.mu.Lock()
	w.cursor = next
	w.mu.Unlock()
	w.capped.Store(len(rows) > 0 && rows[0].Capped)
	w.full.Store(len(rows) > 0 && rows[0].Full) // PostgreSQL's claim tells it; SQLite's leaves it false
	if len(rows) == 1 && rows[0].ID == 0 {
		rows = nil
	}
	if len(rows) == 0 {
		return nil, nil
	}
	if !w.pg {
		if err := readEvents(ctx, w.db, rows); err != nil {
			return nil, err
		}
		if err := readTargetStates(ctx, w.db, w.cfg.TargetState, rows); err != nil {
			return nil, err
		}
	}
	batch := make([]Delivery, 0, len(rows))
	var orphans []int64
	for _, r := range rows {
		if !r.HasEvent {
			// Housekeeping never deletes an event that has deliveries;
			// a row without one was written by hand. It ends FAILED, not
			// claimed again at every lease.
			w.cfg.Logger.ErrorContext(ctx, "outbox: delivery without its event", slog.Int64("delivery", r.ID))
			orphans = append(orphans, r.ID)
			continue
		}
		d := Delivery{
			ID:          r.ID,
			TenantID:    r.TenantID,
			Kind:        r.Kind,
			TargetID:    r.TargetID,
			Attempt:     r.Attempts,
			TargetState: r.TargetState,
			Event: eventRow{
				TenantID: r.TenantID, EventID: r.EventID, EventType: r.EventType, OccurredAt: r.OccurredAt,
				Title: r.Title, Body: r.Body, Data: r.Data, Messages: r.Messages,
			}.event(),
			step:     r.Step,
			token:    token,
			leaseEnd: claimed.Add(w.cfg.Lease),
		}
		if r.NotBefore != nil && r.Rate != nil && *r.Rate > 0 {
			d.notBefore = time.UnixMicro(int64(*r.NotBefore * 1000))
			d.slot = time.Duration(float64(time.Second) / *r.Rate)
		}
		if r.Payload != nil {
			d.Payload = *r.Payload
		}
		batch = append(batch, d)
	}
	if len(orphans) > 0 {
		_, err := w.db.NewUpdate().Table("deskkit_outbox_deliveries").
			Set("status = 'FAILED', due_at_ms = NULL, lease_token = NULL, payload = NULL").
			Set("last_error = ?, last_error_json = ?", eventMissing.String(), TextJSON(eventMissing)).
			Set("finished_at_ms = ?", now).
			Where("id IN (?) AND lease_token = ?", bun.List(orphans), token).
			Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("end deliveries without events: %w", err)
		}
	}
	return batch, nil
}

// phase is where Run's first claim starts on PostgreSQL: at the first
// target of a tenant picked at random among those with pending
// deliveries, so that replicas started together do not step through the
// same targets in step, each skipping the rows the other locked. Later
// rounds start from the first target. RunOnce's claims, which tests
// drive, start from the first target. The pick is Config.Rand's, which
// tests fix.
func (w *Worker) phase(ctx context.Context) target {
	var lo, hi sql.NullInt64
	err := w.db.NewSelect().Table("deskkit_outbox_deliveries").
		ColumnExpr("min(tenant_id), max(tenant_id)").
		Where("status = 'PENDING' AND kind = ?", w.cfg.Kind).
		Scan(ctx, &lo, &hi)
	if err != nil || !lo.Valid || hi.Int64 <= lo.Int64 {
		return target{}
	}
	span := hi.Int64 - lo.Int64 + 1
	return target{lo.Int64 + min(int64(w.cfg.Rand()*float64(span)), span-1), math.MinInt64}
}

// prepareClaim prepares the claim's call of its function (w.claimCall) on
// PostgreSQL, unless that is done. It takes a connection of the pool: Run
// calls it before it claims, holding none. On failure the claims send the
// call unprepared, as they do with Config.PlainStatements; the function's
// plan is kept either way.
func (w *Worker) prepareClaim(ctx context.Context) {
	if !w.pg || w.cfg.PlainStatements || w.claimStmt.Load() != nil {
		return
	}
	s, err := w.db.DB.PrepareContext(ctx, numbered(w.claimCall))
	if err != nil {
		w.cfg.Logger.WarnContext(ctx, "outbox: prepare the claim's call; claims send it unprepared", slog.Any("error", err))
		return
	}
	if !w.claimStmt.CompareAndSwap(nil, s) {
		s.Close()
	}
}

// numbered writes q's ?0, ?1... placeholders as PostgreSQL's $1, $2...:
// the claim holds no ? of its own.
func numbered(q string) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		n, _ := strconv.Atoi(q[i+1 : j])
		b.WriteString("$" + strconv.Itoa(n+1))
		i = j - 1
	}
	return b.String()
}

// target is a (tenant, target) pair: where the next claim's steps start,
// and whose flow a flush moves (flow.go).
type target struct{ tenant, target int64 }

// targetSpan is how many targets a claim of n steps through, on either
// database: as many as its rows (at least 4), each with room for two of
// them (twice the batch over the targets reached), so that it finds them
// while some targets are at their cap or their tenant at its slots, and
// each claim's cost follows the batch, not the number of targets with
// pending deliveries. Claims go round the targets in turn. Stepping
// through twice as many targets, each with room for one, made a claim of
// 8 cost about 0.4 ms of PostgreSQL's time, against 0.6 ms for 6.5 rows
// now: a claim's cost is mostly its steps.
func targetSpan(n int) int { return max(n, 4) }

// heldObject writes held as the JSON object the claim reads: tenant ids
// (as strings) to counts.
func heldObject(held map[int64]int) (string, error) {
	m := make(map[string]int, len(held))
	for t, n := range held {
		if n > 0 {
			m[strconv.FormatInt(t, 10)] = n
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("held slots: %w", err)
	}
	return string(b), nil
}

// release gives back claimed deliveries, each under its claim's lease:
// due at once and without the attempt the claim counted.
func (w *Worker) release(ctx context.Context, batch []Delivery) error {
	keys := make([]any, len(batch))
	for i, d := range batch {
		keys[i] = bun.Tuple([]any{d.ID, d.token})
	}
	_, err := w.db.NewUpdate().Table("deskkit_outbox_deliveries").
		Set("due_at_ms = ?", w.cfg.Now().UnixMilli()).
		Set("lease_token = NULL").
		Set("attempts = attempts - 1").
		Where("(id, lease_token) IN (?)", bun.List(keys)).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("release claimed deliveries: %w", err)
	}
	return nil
}

type eventKey struct {
	tenantID int64
	id       string
}

// readEvents fills in the events of rows, each read once, in one query.
func readEvents(ctx context.Context, db bun.IDB, rows []claimedRow) error {
	var (
		keys []any
		seen = map[eventKey]bool{}
	)
	for _, r := range rows {
		k := eventKey{r.TenantID, r.EventID}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, bun.Tuple([]any{r.TenantID, r.EventID}))
		}
	}
	var evs []eventRow
	if err := db.NewSelect().Model(&evs).Where("(tenant_id, event_id) IN (?)", bun.List(keys)).Scan(ctx); err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	byKey := make(map[eventKey]eventRow, len(evs))
	for _, e := range evs {
		byKey[eventKey{e.TenantID, e.EventID}] = e
	}
	for i := range rows {
		e, ok := byKey[eventKey{rows[i].TenantID, rows[i].EventID}]
		if !ok {
			continue
		}
		r := &rows[i]
		r.HasEvent, r.EventType, r.OccurredAt, r.Title, r.Body, r.Data, r.Messages = true, e.EventType, e.OccurredAt, e.Title, e.Body, e.Data, e.Messages
	}
	return nil
}

// readTargetStates sets the TargetState of rows, claimed on SQLite, to
// what the expression state (Config.TargetState) reads of each; nothing
// without one.
func readTargetStates(ctx context.Context, db bun.IDB, state string, rows []claimedRow) error {
	if state == "" {
		return nil
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	var states []struct {
		ID    int64   `bun:"id"`
		State *string `bun:"target_state"`
	}
	err := db.NewSelect().TableExpr("deskkit_outbox_deliveries AS c").
		ColumnExpr("c.id").ColumnExpr(state+" AS target_state").
		Where("c.id IN (?)", bun.List(ids)).Scan(ctx, &states)
	if err != nil {
		return fmt.Errorf("read the targets' states: %w", err)
	}
	byID := make(map[int64]*string, len(states))
	for _, s := range states {
		byID[s.ID] = s.State
	}
	for i := range rows {
		rows[i].TargetState = byID[rows[i].ID]
	}
	return nil
}

// eventMissing is the error of a delivery whose event is gone.
var eventMissing = deskkit.Textf("its event is missing")
