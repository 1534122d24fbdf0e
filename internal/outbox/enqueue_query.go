package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// EnqueueQuery is Enqueue with the targets, all of one kind, chosen by a
// query in the same statement rather than read first: targets is a SELECT
// of one column named id, the target ids, whose placeholders args fill. It writes
// the event and one PENDING delivery per id the query returns, and
// reports whether the event was new (an id the tenant already published
// adds nothing) and how many deliveries it wrote.
//
// On PostgreSQL it is one statement, NOTIFY included (only when it wrote
// a delivery): a publisher inside a host's transaction costs one round
// trip. On SQLite, in process, it is two.
//
// prepared, if not nil, is the statement for targets prepared (see
// Prepared); a publish inside a transaction of its pool runs it.
func EnqueueQuery(ctx context.Context, db bun.IDB, prepared *Prepared, ev Event, kind, targets string, args []any, now time.Time, firstDelay time.Duration) (bool, int, error) {
	data := ev.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	nowMS, due := now.UnixMilli(), now.Add(firstDelay).UnixMilli()
	evArgs := []any{ev.TenantID, ev.ID, ev.Type, ev.Time.UnixMilli(), ev.Title, ev.Text, string(data), nowMS}
	if isPostgres(db) {
		all := append(append(append(evArgs, kind, due, nowMS), args...), notifyChannel, kind)
		if prepared != nil {
			if ok, isNew, n, err := prepared.enqueue(ctx, db, all); ok {
				return isNew, n, err
			}
		}
		var res struct {
			New  int  `bun:"new"`
			N    int  `bun:"n"`
			Woke bool `bun:"woke"`
		}
		if err := db.NewRaw(enqueueSQL(targets), all...).Scan(ctx, &res); err != nil {
			return false, 0, fmt.Errorf("outbox: enqueue: %w", err)
		}
		return res.New > 0, res.N, nil
	}
	r, err := db.ExecContext(ctx, insertEvent, evArgs...)
	if err != nil {
		return false, 0, fmt.Errorf("outbox: insert event: %w", err)
	}
	if n, err := r.RowsAffected(); err != nil {
		return false, 0, fmt.Errorf("outbox: insert event: %w", err)
	} else if n == 0 {
		return false, 0, nil
	}
	r, err = db.ExecContext(ctx, `INSERT INTO deskkit_outbox_deliveries
    (tenant_id, event_id, kind, target_id, status, attempts, step, due_at_ms, created_at_ms)
SELECT ?, ?, ?, t.id, 'PENDING', 0, 0, ?, ? FROM (`+targets+`) AS t`,
		append([]any{ev.TenantID, ev.ID, kind, due, nowMS}, args...)...)
	if err != nil {
		return false, 0, fmt.Errorf("outbox: insert deliveries: %w", err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return false, 0, fmt.Errorf("outbox: insert deliveries: %w", err)
	}
	return true, int(n), nil
}

// insertEvent writes an event unless the tenant has its id.
const insertEvent = `INSERT INTO deskkit_outbox_events
    (tenant_id, event_id, event_type, occurred_at_ms, title, body, data, created_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`

// enqueueSQL is EnqueueQuery's one statement on PostgreSQL: the event,
// one delivery per id targets selects (if the event is new), and a NOTIFY
// if it wrote a delivery. Its placeholders: the event's 8 (insertEvent),
// kind, due, now, targets' own, the NOTIFY channel and kind.
func enqueueSQL(targets string) string {
	return `WITH ev AS (` + insertEvent + ` RETURNING tenant_id, event_id),
d AS (INSERT INTO deskkit_outbox_deliveries
    (tenant_id, event_id, kind, target_id, status, attempts, step, due_at_ms, created_at_ms)
  SELECT ev.tenant_id, ev.event_id, ?::text, t.id, 'PENDING', 0, 0, ?::bigint, ?::bigint
  FROM ev, (` + targets + `) AS t
  RETURNING 1)
SELECT (SELECT count(*) FROM ev) AS new, (SELECT count(*) FROM d) AS n,
  (SELECT pg_notify(?, ?)::text FROM d LIMIT 1) IS NOT NULL AS woke`
}
