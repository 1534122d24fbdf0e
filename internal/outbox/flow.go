package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// A target's flow: how many of its deliveries may be in flight, whether
// it is paused, how fast it may be sent to. The state is a row of
// deskkit_outbox_targets, shared by every worker of the kind on the
// database (its migration, 20261203000001_target_flow, says each column).
//
//   - The in-flight limit moves between Config.TargetInFlight (the floor)
//     and the ceiling (Config.TargetInFlightMax, else the TenantSlots of
//     every live worker of the kind added up: a tenant's share of the
//     workers of every replica). Each flush moves the limit of each target
//     it records outcomes of, in the flush's transaction, as TCP moves its
//     window (AIMD): a flush with a sign of overload (an Outcome marked
//     Busy: 429, 503, a timeout, a failed connection), or whose successes
//     took on average more than twice the target's usual time plus
//     latencySlack, halves it; otherwise each success adds 1/limit (one a
//     limit's worth of successes). The usual time is the lowest mean a
//     flush saw, drifting toward newer means over baseDrift, so that a
//     receiver that turned slow for good is not held at the floor for
//     ever. A new target starts at the floor. The limit is read by every
//     claim with the target's row; a flush that fails leaves it as it was.
//   - A failed attempt whose outcome says Retry-After pauses the target,
//     not only its delivery, until then (at most MaxPause ahead), and its
//     limit drops to one (probeLimit): claims take none of its deliveries
//     until the pause ends, then one until an attempt succeeds; the worker
//     that got the answer does not start the ones it already claimed (it
//     gives them back, due when the pause ends). Another replica's
//     claimed deliveries, already waiting for a slot, may still start:
//     at most a batch of them.
//   - A rate (Config.TargetRate, or the target's own, SetTargetRate) is
//     kept as a GCRA: the row holds when the next delivery may start; a
//     claim takes no more of the target's deliveries than fall due by
//     rateHorizon from now, gives them start times 1/rate apart from
//     that mark, and moves the mark past them, in the claim's statement
//     and under the target's advisory lock on PostgreSQL (so across
//     replicas); the worker holds each claimed delivery until its start,
//     and gives it back (due at once, for a new slot) if it could not
//     start within one interval of it (its slots were busy). The sends are
//     therefore spaced evenly, never in bursts: at most rate + 2 start in
//     any second. A target idle for a while starts again at now, with no
//     credit saved up.
const (
	// MaxPause is the longest a Retry-After pauses a target.
	MaxPause = time.Hour
	// latencySlack is how far above twice its usual time a flush's mean
	// success time must be to count as a sign of overload: loopback
	// receivers on a loaded machine vary by tens of milliseconds without
	// being overloaded.
	latencySlack = 50 * time.Millisecond
	// baseDrift is how long a target's usual time takes to follow a
	// lasting change of its receiver's times.
	baseDrift = 30 * time.Second
	// rateHorizon is how far ahead a claim takes a rate-limited target's
	// deliveries: they wait in the worker until their start, holding
	// room of its claims but no slot.
	rateHorizon = 100 * time.Millisecond
	// beatEvery is how often a running worker says it is alive, for the
	// ceiling; a worker unheard of for three beats no longer counts.
	beatEvery = 10 * time.Second
)

// TargetState is a target's flow as the outbox keeps it.
type TargetState struct {
	// InFlight is how many of the target's deliveries may be in flight
	// now (its limit, between the floor and ceiling that Limit clamps
	// it to).
	InFlight float64
	// PausedUntil is when a Retry-After's pause ends; zero if none.
	PausedUntil time.Time
	// Rate is the target's own rate (deliveries a second); 0 for the
	// worker's default.
	Rate float64
}

// Limit is s's in-flight limit as a claim reads it: whole, between floor
// and ceiling (a target without a row is at the floor), or 1 while it
// probes after a pause.
func (s TargetState) Limit(floor, ceiling int) int {
	if s.InFlight > 0 && s.InFlight < 1 {
		return 1
	}
	return max(floor, min(ceiling, int(s.InFlight)))
}

// probeLimit is the in-flight limit a Retry-After leaves its target at:
// under 1, which claims read as one delivery at a time, below the floor,
// so that the pause ends with a single attempt (a probe, as TCP restarts
// its window at one segment after a timeout); its first success puts the
// limit back at the floor and growing.
const probeLimit = 0.5

// targetRow is a row of deskkit_outbox_targets.
type targetRow struct {
	bun.BaseModel `bun:"table:deskkit_outbox_targets"`

	Kind        string   `bun:"kind,pk"`
	TenantID    int64    `bun:"tenant_id,pk"`
	TargetID    int64    `bun:"target_id,pk"`
	InFlight    float64  `bun:"in_flight_limit"`
	PausedUntil *int64   `bun:"paused_until_ms"`
	Rate        *float64 `bun:"rate_per_s"`
	ChangedAt   int64    `bun:"changed_at_ms"`
}

// TargetStates returns the flow of a tenant's targets of kind, by target
// id; a target without a row (no outcome recorded yet, no rate set) is
// missing, at the floor.
func TargetStates(ctx context.Context, db bun.IDB, kind string, tenant int64, targets []int64) (map[int64]TargetState, error) {
	out := make(map[int64]TargetState, len(targets))
	if len(targets) == 0 {
		return out, nil
	}
	var rows []targetRow
	err := db.NewSelect().Model(&rows).
		Where("kind = ? AND tenant_id = ? AND target_id IN (?)", kind, tenant, bun.List(targets)).
		Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("outbox: read targets: %w", err)
	}
	for _, r := range rows {
		s := TargetState{InFlight: r.InFlight}
		if r.PausedUntil != nil {
			s.PausedUntil = time.UnixMilli(*r.PausedUntil)
		}
		if r.Rate != nil {
			s.Rate = *r.Rate
		}
		out[r.TargetID] = s
	}
	return out, nil
}

// SetTargetRate sets a target's own rate, in deliveries a second, through
// db (the caller's transaction, where the target is written); 0 takes it
// back to the worker's default (Config.TargetRate). A new row starts at
// floor, the worker's Config.TargetInFlight.
func SetTargetRate(ctx context.Context, db bun.IDB, kind string, tenant, target int64, rate float64, floor int, now time.Time) error {
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return errors.New("outbox: a rate must be a finite number, 0 or more")
	}
	var r *float64
	if rate > 0 {
		r = &rate
	}
	row := targetRow{Kind: kind, TenantID: tenant, TargetID: target, InFlight: float64(floor), Rate: r, ChangedAt: now.UnixMilli()}
	_, err := db.NewInsert().Model(&row).
		On("CONFLICT (kind, tenant_id, target_id) DO UPDATE").
		Set("rate_per_s = EXCLUDED.rate_per_s").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("outbox: set a target's rate: %w", err)
	}
	return nil
}

// ForgetTargets deletes the flow of a tenant's targets of kind (the
// targets are gone).
func ForgetTargets(ctx context.Context, db bun.IDB, kind string, tenant int64, targets []int64) error {
	if len(targets) == 0 {
		return nil
	}
	_, err := db.NewDelete().Table("deskkit_outbox_targets").
		Where("kind = ? AND tenant_id = ? AND target_id IN (?)", kind, tenant, bun.List(targets)).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("outbox: forget targets: %w", err)
	}
	return nil
}

// flowSignal is what one flush says of one target.
type flowSignal struct {
	key   target
	label string
	oks   int
	// took is the successes' time, added up.
	took time.Duration
	busy bool
	// pause is the longest Retry-After of its failures.
	pause time.Duration
}

// flowSignals sums results by target, in the targets' order (so that
// flushes of several workers lock their rows in one order).
func flowSignals(results []done) []flowSignal {
	at := map[target]int{}
	var out []flowSignal
	for _, d := range results {
		k := target{d.Delivery.TenantID, d.Delivery.TargetID}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, flowSignal{key: k, label: cmp.Or(d.Outcome.Label, d.Delivery.Kind)})
		}
		s, o := &out[i], d.Outcome
		if o.OK {
			s.oks++
			s.took += d.took
		}
		s.busy = s.busy || o.Busy
		if !o.OK && o.RetryAfter > s.pause {
			s.pause = o.RetryAfter
		}
	}
	slices.SortFunc(out, func(a, b flowSignal) int {
		return cmp.Or(cmp.Compare(a.key.tenant, b.key.tenant), cmp.Compare(a.key.target, b.key.target))
	})
	return out
}

// flowUpsert moves the targets' limits (see the comment at the top),
// their usual times and pauses. Its {{max}} and {{min}} are the dialect's
// two-argument GREATEST and LEAST, and the worker's numbers are written
// in: {{floor}}, {{ceiling}}, {{slack}} (latencySlack, ms) and {{drift}}
// (baseDrift, ms); {{rows}} are the flush's signals, one row each
// (SQLite's VALUES; PostgreSQL's recordPostgres reads them from JSON).
const flowUpsert = `INSERT INTO deskkit_outbox_targets AS g
  (kind, tenant_id, target_id, in_flight_limit, base_ms, latency_ms, last_oks, last_busy, paused_until_ms, changed_at_ms)
{{rows}}
ON CONFLICT (kind, tenant_id, target_id) DO UPDATE SET
  in_flight_limit = CASE
    WHEN excluded.paused_until_ms IS NOT NULL THEN {{probe}}
    WHEN excluded.last_busy = 1 OR excluded.latency_ms > 2 * g.base_ms + {{slack}}
      THEN {{max}}({{floor}}, {{min}}({{ceiling}}, g.in_flight_limit) / 2)
    WHEN excluded.last_oks > 0
      THEN {{min}}({{ceiling}}, {{max}}({{floor}}, g.in_flight_limit) + excluded.last_oks / {{max}}({{floor}}, g.in_flight_limit))
    ELSE g.in_flight_limit END,
  base_ms = CASE
    WHEN excluded.latency_ms IS NULL THEN g.base_ms
    WHEN g.base_ms IS NULL OR excluded.latency_ms < g.base_ms THEN excluded.latency_ms
    ELSE g.base_ms + (excluded.latency_ms - g.base_ms) * {{min}}(1.0, (excluded.changed_at_ms - g.changed_at_ms) / {{drift}}) END,
  latency_ms = COALESCE(excluded.latency_ms, g.latency_ms),
  last_oks = excluded.last_oks,
  last_busy = excluded.last_busy,
  paused_until_ms = CASE WHEN excluded.paused_until_ms IS NULL THEN g.paused_until_ms
    ELSE {{max}}(COALESCE(g.paused_until_ms, 0), excluded.paused_until_ms) END,
  changed_at_ms = excluded.changed_at_ms
RETURNING tenant_id, target_id, in_flight_limit`

// flowSQL is flowUpsert written for the worker's database, with rows
// as its rows and floor and ceiling as its bounds (numbers, or a
// prepared statement's parameters).
func (w *Worker) flowSQL(rows, floor, ceiling string) string {
	greatest, least := "max", "min"
	if w.pg {
		greatest, least = "GREATEST", "LEAST"
	}
	return strings.NewReplacer("{{max}}", greatest, "{{min}}", least,
		"{{floor}}", floor, "{{ceiling}}", ceiling, "{{probe}}", strconv.FormatFloat(probeLimit, 'f', -1, 64),
		"{{slack}}", strconv.FormatInt(latencySlack.Milliseconds(), 10),
		"{{drift}}", strconv.FormatInt(baseDrift.Milliseconds(), 10)+".0",
		"{{rows}}", rows).Replace(flowUpsert)
}

// flowRecord is a flush's signal as flowUpsert writes it.
type flowRecord struct {
	TenantID int64    `json:"tenant_id"`
	TargetID int64    `json:"target_id"`
	Limit    float64  `json:"in_flight_limit"`
	Latency  *float64 `json:"latency_ms"`
	OKs      int      `json:"last_oks"`
	Busy     int      `json:"last_busy"`
	Pause    *int64   `json:"paused_until_ms"`
	At       int64    `json:"changed_at_ms"`
}

// flowRecords is what flowUpsert writes of signals.
func (w *Worker) flowRecords(signals []flowSignal, now time.Time) []flowRecord {
	out := make([]flowRecord, len(signals))
	for i, s := range signals {
		r := flowRecord{TenantID: s.key.tenant, TargetID: s.key.target, Limit: float64(w.cfg.TargetInFlight), OKs: s.oks, At: now.UnixMilli()}
		if s.oks > 0 {
			ms := float64(s.took.Microseconds()) / 1000 / float64(s.oks)
			r.Latency = &ms
		}
		if s.pause > 0 {
			at := now.Add(min(s.pause, MaxPause)).UnixMilli()
			r.Pause, r.Limit = &at, probeLimit
		}
		if s.busy {
			r.Busy = 1
		}
		out[i] = r
	}
	return out
}

// flowRow is a target's limit as flowUpsert returns it.
type flowRow struct {
	TenantID int64   `bun:"tenant_id"`
	TargetID int64   `bun:"target_id"`
	Limit    float64 `bun:"in_flight_limit"`
}

// recordFlow writes the flush's signals in tx (SQLite's flush: on
// PostgreSQL the flush's one statement does), and returns the targets'
// new limits in the signals' order.
func (w *Worker) recordFlow(ctx context.Context, tx bun.Tx, signals []flowSignal, now time.Time) ([]float64, error) {
	if len(signals) == 0 {
		return nil, nil
	}
	var (
		values strings.Builder
		args   = make([]any, 0, 10*len(signals))
	)
	values.WriteString("VALUES ")
	for i, r := range w.flowRecords(signals, now) {
		if i > 0 {
			values.WriteString(", ")
		}
		values.WriteString("(CAST(? AS VARCHAR(32)), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS DOUBLE PRECISION), CAST(? AS DOUBLE PRECISION), CAST(? AS DOUBLE PRECISION), CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS BIGINT), CAST(? AS BIGINT))")
		args = append(args, w.cfg.Kind, r.TenantID, r.TargetID, r.Limit, r.Latency, r.Latency, r.OKs, r.Busy, r.Pause, r.At)
	}
	q := w.flowSQL(values.String(), strconv.Itoa(w.cfg.TargetInFlight), strconv.Itoa(w.ceiling()))
	var rows []flowRow
	if err := tx.NewRaw(q, args...).Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("record the targets' flow: %w", err)
	}
	return flowLimits(signals, rows), nil
}

// flowLimits returns rows' limits in the signals' order.
func flowLimits(signals []flowSignal, rows []flowRow) []float64 {
	by := make(map[target]float64, len(rows))
	for _, r := range rows {
		by[target{r.TenantID, r.TargetID}] = r.Limit
	}
	limits := make([]float64, len(signals))
	for i, s := range signals {
		limits[i] = by[s.key]
	}
	return limits
}

// pace moves, on SQLite, the rate mark of each rate-limited target that
// picks (claimSQLite's rows) took deliveries of past them, in the claim's
// transaction: PostgreSQL's claim does it in its statement.
func pace(ctx context.Context, tx bun.Tx, cfg Config, now int64, picks []claimedRow) error {
	type mark struct {
		start, rate float64
		n           int
	}
	var (
		order []target
		marks = map[target]*mark{}
	)
	for _, p := range picks {
		if p.Rate == nil || p.ID == 0 {
			continue
		}
		k := target{p.TenantID, p.TargetID}
		m := marks[k]
		if m == nil {
			m = &mark{start: p.Start, rate: *p.Rate}
			marks[k] = m
			order = append(order, k)
		}
		m.n++
	}
	for _, k := range order {
		m := marks[k]
		_, err := tx.NewRaw(`INSERT INTO deskkit_outbox_targets (kind, tenant_id, target_id, in_flight_limit, rate_next_ms, changed_at_ms)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (kind, tenant_id, target_id) DO UPDATE SET rate_next_ms = excluded.rate_next_ms`,
			cfg.Kind, k.tenant, k.target, float64(cfg.TargetInFlight), m.start+float64(m.n)*1000/m.rate, now).Exec(ctx)
		if err != nil {
			return fmt.Errorf("pace a rate-limited target: %w", err)
		}
	}
	return nil
}

// Limits returns the floor and the ceiling of the targets' in-flight
// limits, as the worker's claims use them now.
func (w *Worker) Limits() (floor, ceiling int) { return w.cfg.TargetInFlight, w.ceiling() }

// ceiling is the highest a target's in-flight limit goes: the
// configured one, else the tenant slots of the live workers of the kind
// (the last beat's count; this worker's own until its first), never under
// the floor.
func (w *Worker) ceiling() int {
	c := w.cfg.TargetInFlightMax
	if c == 0 {
		c = int(w.slotsAlive.Load())
		if c == 0 {
			c = w.cfg.TenantSlots
		}
	}
	return max(c, w.cfg.TargetInFlight)
}

// beat says in deskkit_outbox_workers that the worker runs, and counts
// the tenant slots of the kind's workers heard of in the last three
// beats, for the ceiling.
func (w *Worker) beat(ctx context.Context) error {
	now := w.cfg.Now().UnixMilli()
	_, err := w.db.NewRaw(`INSERT INTO deskkit_outbox_workers (kind, worker_id, tenant_slots, seen_at_ms) VALUES (?, ?, ?, ?)
ON CONFLICT (kind, worker_id) DO UPDATE SET tenant_slots = excluded.tenant_slots, seen_at_ms = excluded.seen_at_ms`,
		w.cfg.Kind, w.id, w.cfg.TenantSlots, now).Exec(ctx)
	if err != nil {
		return fmt.Errorf("outbox: worker beat: %w", err)
	}
	var slots int64
	err = w.db.NewRaw(`SELECT COALESCE(SUM(tenant_slots), 0) FROM deskkit_outbox_workers WHERE kind = ? AND seen_at_ms > ?`,
		w.cfg.Kind, now-3*beatEvery.Milliseconds()).Scan(ctx, &slots)
	if err != nil {
		return fmt.Errorf("outbox: count workers: %w", err)
	}
	w.slotsAlive.Store(slots)
	// Workers not heard of for a day are gone: their rows go too.
	_, err = w.db.NewDelete().Table("deskkit_outbox_workers").
		Where("kind = ? AND seen_at_ms < ?", w.cfg.Kind, now-(24*time.Hour).Milliseconds()).Exec(ctx)
	return err
}

// beating beats every beatEvery until ctx is done, then takes the
// worker's row away: its slots no longer count.
func (w *Worker) beating(ctx context.Context) {
	t := time.NewTicker(beatEvery)
	defer t.Stop()
	for {
		if err := w.beat(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Logger.WarnContext(ctx, "outbox: worker beat", slog.Any("error", err))
		}
		select {
		case <-ctx.Done():
			_, err := w.db.NewDelete().Table("deskkit_outbox_workers").
				Where("kind = ? AND worker_id = ?", w.cfg.Kind, w.id).Exec(context.WithoutCancel(ctx))
			if err != nil {
				w.cfg.Logger.WarnContext(ctx, "outbox: worker gone", slog.Any("error", err))
			}
			return
		case <-t.C:
		}
	}
}

// pausedUntil reports when the pause of d's target ends, as this worker
// knows it from the outcomes it got; zero if it knows of none.
func (w *Worker) pausedUntil(d Delivery) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	until := w.paused[target{d.TenantID, d.TargetID}]
	if !until.After(w.cfg.Now()) {
		delete(w.paused, target{d.TenantID, d.TargetID})
		return time.Time{}
	}
	return until
}

// pause notes that d's target is paused for wait (a Retry-After), at most
// MaxPause.
func (w *Worker) pause(d Delivery, wait time.Duration) {
	until := w.cfg.Now().Add(min(wait, MaxPause))
	w.mu.Lock()
	defer w.mu.Unlock()
	k := target{d.TenantID, d.TargetID}
	if until.After(w.paused[k]) {
		w.paused[k] = until
	}
}

// postpone gives d back, under its claim's lease, due at until and
// without the attempt its claim counted: its target is paused.
func (w *Worker) postpone(ctx context.Context, d Delivery, until time.Time) error {
	_, err := w.db.NewUpdate().Table("deskkit_outbox_deliveries").
		Set("due_at_ms = ?", until.UnixMilli()).
		Set("lease_token = NULL").
		Set("attempts = attempts - 1").
		Where("id = ? AND lease_token = ?", d.ID, d.token).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("postpone a delivery of a paused target: %w", err)
	}
	return nil
}
