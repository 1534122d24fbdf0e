package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"
)

// OneTarget is the targets query of an event with one delivery: its args
// are the target's id and the delivery's payload (a string, or nil for
// none).
const OneTarget = `SELECT CAST(? AS bigint) AS id, CAST(? AS text) AS payload`

// Enqueuer writes events and their deliveries of one kind, to the targets
// one query chooses in the same statement: the one way delivery rows are
// written. The targets query is a SELECT of two columns, id (the target's
// id) and payload (what the kind's handler needs besides the event, text
// or NULL), whose ? placeholders Enqueue's args fill, written for the
// dialect of the database it runs on (OneTarget is written for both); it
// must filter on the event's tenant where its targets belong to tenants,
// and it holds no ? but its placeholders.
//
// On PostgreSQL its statement can be prepared once per connection of the
// pool (Prepare), so that PostgreSQL does not parse and plan it again for
// every event: planning is most of the statement's own time, and a
// publisher in a host's transaction pays it in that transaction. Until
// Prepare succeeded, or in a transaction of another pool, Enqueue runs the
// same statement unprepared; the rows written are the same. Hosts whose
// connections go through a pooler that does not keep prepared statements
// (PgBouncer in transaction mode before 1.21) must not call Prepare.
//
// Prepare takes a connection of the pool, so it is called where none is
// held: never inside a transaction, where, with the pool used up by
// transactions doing the same (or with a pool of one), the wait for a
// second connection would never end. Once it has succeeded, a transaction
// that has not yet used the statement on its own connection prepares it
// there (database/sql's Tx.StmtContext), on the connection it already
// holds.
type Enqueuer struct {
	db      *bun.DB
	kind    string
	targets string

	stmt atomic.Pointer[sql.Stmt] // nil until Prepare succeeds
}

// NewEnqueuer returns the Enqueuer of deliveries of kind to the targets
// query chooses, over db. It prepares nothing: an Enqueuer never prepared
// runs its statement unprepared, so one can be made for a single enqueue.
func NewEnqueuer(db *bun.DB, kind, targets string) *Enqueuer {
	return &Enqueuer{db: db, kind: kind, targets: targets}
}

// Enqueue writes ev, and one PENDING delivery of e's kind per row of the
// targets query (filled with args), due at now plus firstDelay, through
// db: the caller's transaction, so that rolled back nothing is sent, and
// committed the deliveries are made even if the process dies the next
// instant. It reports whether the event was new and how many deliveries it
// wrote: an event whose id the tenant already published adds nothing, not
// even deliveries to targets it did not have, so that publishing is
// idempotent.
//
// It does no network I/O and takes no connection but db's. On PostgreSQL
// it is one statement, which also NOTIFYs the kind's workers when it wrote
// a delivery (delivered at commit, once per transaction and kind): a
// publisher inside a host's transaction costs one round trip. On SQLite,
// in process, it is two.
func (e *Enqueuer) Enqueue(ctx context.Context, db bun.IDB, ev Event, args []any, now time.Time, firstDelay time.Duration) (isNew bool, n int, err error) {
	data := ev.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	var messages any // NULL
	if len(ev.Messages) > 0 {
		messages = string(ev.Messages)
	}
	nowMS, due := now.UnixMilli(), now.Add(firstDelay).UnixMilli()
	evArgs := []any{ev.TenantID, ev.ID, ev.Type, ev.Time.UnixMilli(), ev.Title, ev.Text, string(data), messages, nowMS}
	if isPostgres(db) {
		all := append(append(append(evArgs, e.kind, due, nowMS), args...), notifyChannel, e.kind)
		if ok, isNew, n, err := e.prepared(ctx, db, all); ok {
			return isNew, n, err
		}
		var res struct {
			New  int  `bun:"new"`
			N    int  `bun:"n"`
			Woke bool `bun:"woke"`
		}
		if err := db.NewRaw(enqueueSQL(e.targets), all...).Scan(ctx, &res); err != nil {
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
    (tenant_id, event_id, kind, target_id, payload, status, attempts, step, due_at_ms, created_at_ms)
SELECT ?, ?, ?, t.id, t.payload, 'PENDING', 0, 0, ?, ? FROM (`+e.targets+`) AS t`,
		append([]any{ev.TenantID, ev.ID, e.kind, due, nowMS}, args...)...)
	if err != nil {
		return false, 0, fmt.Errorf("outbox: insert deliveries: %w", err)
	}
	written, err := r.RowsAffected()
	if err != nil {
		return false, 0, fmt.Errorf("outbox: insert deliveries: %w", err)
	}
	return true, int(written), nil
}

// insertEvent writes an event unless the tenant has its id.
const insertEvent = `INSERT INTO deskkit_outbox_events
    (tenant_id, event_id, event_type, occurred_at_ms, title, body, data, messages, created_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`

// enqueueSQL is Enqueue's one statement on PostgreSQL: the event, one
// delivery per row targets selects (if the event is new), and a NOTIFY if
// it wrote a delivery. Its placeholders: the event's 9 (insertEvent),
// kind, due, now, targets' own, the NOTIFY channel and kind.
func enqueueSQL(targets string) string {
	return `WITH ev AS (` + insertEvent + ` RETURNING tenant_id, event_id),
d AS (INSERT INTO deskkit_outbox_deliveries
    (tenant_id, event_id, kind, target_id, payload, status, attempts, step, due_at_ms, created_at_ms)
  SELECT ev.tenant_id, ev.event_id, ?::text, t.id, t.payload, 'PENDING', 0, 0, ?::bigint, ?::bigint
  FROM ev, (` + targets + `) AS t
  RETURNING 1)
SELECT (SELECT count(*) FROM ev) AS new, (SELECT count(*) FROM d) AS n,
  (SELECT pg_notify(?, ?)::text FROM d LIMIT 1) IS NOT NULL AS woke`
}

// Prepare prepares Enqueue's statement on a connection of the pool, on
// PostgreSQL, unless that is done; on SQLite it does nothing. It waits for
// a connection: call it where the caller holds none, never inside a
// transaction. It holds no lock while it waits, so that an enqueue inside a
// transaction never waits behind it (the enqueue would hold a connection
// while Prepare waits for one): two that race prepare twice, and the loser
// closes its statement.
func (e *Enqueuer) Prepare(ctx context.Context) error {
	if e.stmt.Load() != nil || !isPostgres(e.db) {
		return nil
	}
	s, err := e.db.DB.PrepareContext(ctx, dollars(enqueueSQL(e.targets)))
	if err != nil {
		return fmt.Errorf("outbox: prepare enqueue: %w", err)
	}
	if !e.stmt.CompareAndSwap(nil, s) {
		s.Close()
	}
	return nil
}

// dollars numbers the ? placeholders of q as PostgreSQL's $1, $2...: the
// queries here hold no ? of their own.
func dollars(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// prepared runs the prepared statement in db with args, or reports false
// when db is not a transaction of e's pool or Prepare has not succeeded
// (the caller then runs the statement unprepared). It takes no connection
// but db's.
func (e *Enqueuer) prepared(ctx context.Context, db bun.IDB, args []any) (ok bool, isNew bool, n int, err error) {
	stmt := e.stmt.Load()
	if stmt == nil {
		return false, false, 0, nil
	}
	var t bun.Tx
	switch tt := db.(type) {
	case bun.Tx:
		t = tt
	case *bun.Tx:
		t = *tt
	default:
		return false, false, 0, nil
	}
	if t.NewSelect().DB() != e.db {
		// A transaction of another pool (a host's own): the statement is
		// prepared on this one's connections only.
		return false, false, 0, nil
	}
	var newN int
	if err := t.Tx.StmtContext(ctx, stmt).QueryRowContext(ctx, args...).Scan(&newN, &n, new(bool)); err != nil {
		return true, false, 0, fmt.Errorf("outbox: enqueue: %w", err)
	}
	return true, newN > 0, n, nil
}
