package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
)

// ErrNotFound is a delivery the tenant does not have.
var ErrNotFound = errors.New("outbox: no such delivery")

// Info is a delivery as users read it.
type Info struct {
	ID        int64
	TenantID  int64
	Kind      string
	TargetID  int64
	EventID   string
	EventType string
	Status    string
	Attempts  int
	// NextAttempt is when the next attempt is due (or, while one is in
	// flight, when its lease ends); zero when the delivery is finished.
	NextAttempt    time.Time
	LastStatusCode int
	// LastError says why the last attempt failed; the zero Text after a
	// success.
	LastError deskkit.Text
	Created   time.Time
	Finished  time.Time
}

// infoRow is a delivery joined with its event's type.
type infoRow struct {
	deliveryRow `bun:",extend"`
	EventType   string `bun:"event_type"`
}

func (r infoRow) info() Info {
	in := Info{
		ID:        r.ID,
		TenantID:  r.TenantID,
		Kind:      r.Kind,
		TargetID:  r.TargetID,
		EventID:   r.EventID,
		EventType: r.EventType,
		Status:    r.Status,
		Attempts:  r.Attempts,
		Created:   time.UnixMilli(r.CreatedAt),
	}
	if r.Status == Pending && r.DueAt != nil {
		in.NextAttempt = time.UnixMilli(*r.DueAt)
	}
	if r.LastStatusCode != nil {
		in.LastStatusCode = *r.LastStatusCode
	}
	in.LastError = ReadText(r.LastError, r.LastErrorJSON)
	if r.FinishedAt != nil {
		in.Finished = time.UnixMilli(*r.FinishedAt)
	}
	return in
}

const infoColumns = "d.id, d.tenant_id, d.kind, d.target_id, d.event_id, d.status, d.attempts, d.step, d.due_at_ms, d.last_status_code, d.last_error, d.last_error_json, d.created_at_ms, d.finished_at_ms, e.event_type"

func selectInfo(db bun.IDB) *bun.SelectQuery {
	return db.NewSelect().
		TableExpr("deskkit_outbox_deliveries AS d").
		Join("JOIN deskkit_outbox_events AS e ON e.tenant_id = d.tenant_id AND e.event_id = d.event_id").
		ColumnExpr(infoColumns)
}

// Filter narrows a target's deliveries: Status "" means any; Types, when
// not empty, keeps those of the events of these types; From and To, when
// not zero, keep those created at or after From and before To.
type Filter struct {
	Status   string
	Types    []string
	From, To time.Time
}

// List returns one page of a target's deliveries under f, newest first,
// and how many match in all. The time range reads
// deskkit_outbox_target_created_idx; the types are matched on the event
// each delivery joins (its primary key).
func List(ctx context.Context, db bun.IDB, tenantID int64, kind string, targetID int64, f Filter, offset, limit int) (int, []Info, error) {
	filter := func(q *bun.SelectQuery) *bun.SelectQuery {
		q = q.Where("d.tenant_id = ? AND d.kind = ? AND d.target_id = ?", tenantID, kind, targetID)
		if f.Status != "" {
			q = q.Where("d.status = ?", f.Status)
		}
		if !f.From.IsZero() {
			q = q.Where("d.created_at_ms >= ?", f.From.UnixMilli())
		}
		if !f.To.IsZero() {
			q = q.Where("d.created_at_ms < ?", f.To.UnixMilli())
		}
		if len(f.Types) > 0 {
			q = q.Where("EXISTS (SELECT 1 FROM deskkit_outbox_events AS t WHERE t.tenant_id = d.tenant_id AND t.event_id = d.event_id AND t.event_type IN (?))", bun.List(f.Types))
		}
		return q
	}
	total, err := filter(db.NewSelect().TableExpr("deskkit_outbox_deliveries AS d")).Count(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("outbox: count deliveries: %w", err)
	}
	var rows []infoRow
	if total > offset {
		if err := filter(selectInfo(db)).OrderExpr("d.created_at_ms DESC, d.id DESC").Offset(offset).Limit(limit).Scan(ctx, &rows); err != nil {
			return 0, nil, fmt.Errorf("outbox: list deliveries: %w", err)
		}
	}
	out := make([]Info, len(rows))
	for i, r := range rows {
		out[i] = r.info()
	}
	return total, out, nil
}

// Get returns the tenant's delivery id, or ErrNotFound.
func Get(ctx context.Context, db bun.IDB, tenantID, id int64) (Info, error) {
	var r infoRow
	err := selectInfo(db).Where("d.tenant_id = ? AND d.id = ?", tenantID, id).Scan(ctx, &r)
	if errors.Is(err, sql.ErrNoRows) {
		return Info{}, ErrNotFound
	}
	if err != nil {
		return Info{}, fmt.Errorf("outbox: read delivery: %w", err)
	}
	return r.info(), nil
}

// Attempt is one attempt of a delivery.
type Attempt struct {
	No         int
	Started    time.Time
	Duration   time.Duration
	StatusCode int          // 0 if there was no reply
	Error      deskkit.Text // the zero Text if it succeeded
	Response   string       // the reply's first MaxResponseBytes
	// Exchange is the Outcome's Exchange: what the attempt sent and the
	// reply's headers, as the kind's handler wrote them; "" for attempts
	// recorded without one.
	Exchange string
}

// attemptRow is a row of deskkit_outbox_attempts.
type attemptRow struct {
	No         int     `bun:"attempt_no"`
	Started    int64   `bun:"started_at_ms"`
	DurationMS int64   `bun:"duration_ms"`
	StatusCode *int    `bun:"status_code"`
	Error      *string `bun:"error"`
	ErrorJSON  *string `bun:"error_json"`
	Response   *string `bun:"response"`
	Exchange   *string `bun:"exchange"`
}

// Attempts returns the attempts of the tenant's delivery deliveryID,
// oldest first; none for a delivery of another tenant.
func Attempts(ctx context.Context, db bun.IDB, tenantID, deliveryID int64) ([]Attempt, error) {
	var rows []attemptRow
	err := db.NewSelect().TableExpr("deskkit_outbox_attempts AS a").
		ColumnExpr("a.attempt_no, a.started_at_ms, a.duration_ms, a.status_code, a.error, a.error_json, a.response, a.exchange").
		Where("a.delivery_id = ?", deliveryID).
		Where("EXISTS (SELECT 1 FROM deskkit_outbox_deliveries AS d WHERE d.id = a.delivery_id AND d.tenant_id = ?)", tenantID).
		OrderExpr("a.attempt_no").Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("outbox: read attempts: %w", err)
	}
	out := make([]Attempt, len(rows))
	for i, r := range rows {
		out[i] = Attempt{No: r.No, Started: time.UnixMilli(r.Started), Duration: time.Duration(r.DurationMS) * time.Millisecond}
		if r.StatusCode != nil {
			out[i].StatusCode = *r.StatusCode
		}
		out[i].Error = ReadText(r.Error, r.ErrorJSON)
		if r.Response != nil {
			out[i].Response = *r.Response
		}
		if r.Exchange != nil {
			out[i].Exchange = *r.Exchange
		}
	}
	return out, nil
}

// ReadText is a message as recorded in a pair of columns, its English and
// its key and arguments as JSON (an outcome's error, see storedError; a
// channel's disabled reason): the message when the JSON holds one, else
// (a row written before messages were kept so, or an error too long to
// keep whole) its English, which is shown as it is in every language.
func ReadText(english, js *string) deskkit.Text {
	if js != nil {
		var t deskkit.Text
		if err := json.Unmarshal([]byte(*js), &t); err == nil && !t.IsZero() {
			return t
		}
	}
	if english == nil || *english == "" {
		return deskkit.Text{}
	}
	// "%s" translates to itself: the English, whatever the language.
	return deskkit.Textf("%s", *english)
}

// TextJSON is t's key and arguments for a _json column (see ReadText);
// nil for the zero Text and for one whose English is longer than an
// error's column keeps.
func TextJSON(t deskkit.Text) *string {
	_, js := storedError(t)
	return js
}

// MaxAttemptsKept is how many attempts of one delivery the log keeps: the
// newest. Twice the longest schedule CheckSchedule allows, so that a
// delivery's schedule run twice (a Recover) is kept whole; only resends
// go past it.
const MaxAttemptsKept = 100

// trimAttempts deletes, through tx, the attempts of delivery id that fall
// out of the newest MaxAttemptsKept once attempt number attempt is
// recorded. It costs nothing (no statement) until a delivery has that
// many attempts.
func trimAttempts(ctx context.Context, tx bun.IDB, id int64, attempt int) error {
	if attempt <= MaxAttemptsKept {
		return nil
	}
	_, err := tx.NewDelete().Table("deskkit_outbox_attempts").
		Where("delivery_id = ? AND attempt_no <= ?", id, attempt-MaxAttemptsKept).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("trim attempts: %w", err)
	}
	return nil
}

// Resend makes the tenant's delivery id due now for one more attempt,
// whatever its status: a finished one gets the schedule's last step, so
// that it ends again if this attempt fails; a pending one keeps its place
// in the schedule. An attempt in flight is left alone. It returns the
// delivery, or ErrNotFound. lastStep is len(schedule)-1.
func Resend(ctx context.Context, db bun.IDB, tenantID, id int64, now time.Time, lastStep int) (Info, error) {
	ms := now.UnixMilli()
	_, err := db.NewUpdate().Table("deskkit_outbox_deliveries").
		Set("step = CASE WHEN status = 'PENDING' THEN step ELSE ? END", lastStep).
		Set("status = 'PENDING'").
		Set("due_at_ms = ?", ms).
		Set("finished_at_ms = NULL").
		Where("tenant_id = ? AND id = ? AND lease_token IS NULL", tenantID, id).
		Exec(ctx)
	if err != nil {
		return Info{}, fmt.Errorf("outbox: resend: %w", err)
	}
	if err := notify(ctx, db, id); err != nil {
		return Info{}, err
	}
	return Get(ctx, db, tenantID, id)
}

// Recover makes a target's FAILED deliveries created since then due now,
// each with the whole schedule again, and returns how many.
func Recover(ctx context.Context, db bun.IDB, tenantID int64, kind string, targetID int64, since, now time.Time) (int, error) {
	res, err := db.NewUpdate().Table("deskkit_outbox_deliveries").
		Set("status = 'PENDING'").
		Set("step = 0").
		Set("due_at_ms = ?", now.UnixMilli()).
		Set("finished_at_ms = NULL").
		Where("tenant_id = ? AND kind = ? AND target_id = ? AND status = 'FAILED' AND created_at_ms >= ?",
			tenantID, kind, targetID, since.UnixMilli()).
		Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("outbox: recover: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("outbox: recover: %w", err)
	}
	if n > 0 {
		if err := notifyKind(ctx, db, kind); err != nil {
			return 0, err
		}
	}
	return int(n), nil
}

// notify NOTIFYs the workers of delivery id's kind.
func notify(ctx context.Context, db bun.IDB, id int64) error {
	if !isPostgres(db) {
		return nil
	}
	if _, err := db.ExecContext(ctx, "SELECT pg_notify(?, kind) FROM deskkit_outbox_deliveries WHERE id = ?", notifyChannel, id); err != nil {
		return fmt.Errorf("outbox: notify: %w", err)
	}
	return nil
}

// FailPending ends a target's PENDING deliveries FAILED with reason (a
// channel that was disabled) as their last error, and returns how many. Attempts in flight
// keep their leases; their outcomes are still recorded, since the far end
// may have taken them.
func FailPending(ctx context.Context, db bun.IDB, tenantID int64, kind string, targetID int64, reason deskkit.Text, now time.Time) (int, error) {
	ms := now.UnixMilli()
	res, err := db.NewUpdate().Table("deskkit_outbox_deliveries").
		Set("status = 'FAILED'").
		Set("due_at_ms = NULL").
		Set("last_error = ?, last_error_json = ?", reason.String(), TextJSON(reason)).
		Set("finished_at_ms = ?", ms).
		Where("tenant_id = ? AND kind = ? AND target_id = ? AND status = 'PENDING' AND lease_token IS NULL", tenantID, kind, targetID).
		Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("outbox: fail pending: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("outbox: fail pending: %w", err)
	}
	return int(n), nil
}

// Purge deletes what is older than before: attempts started before it,
// finished deliveries that finished before it, events created before it
// that no delivery refers to any more, the bodies kept of events gone, and the flow of targets without a
// rate of their own that no flush touched since (their limits start again
// at the floor; a notice's user, a deleted host's target), each in batches of batchSize
// rows per statement so that no statement holds many locks. It returns how
// many rows it deleted in all.
func Purge(ctx context.Context, db bun.IDB, before time.Time, batchSize int) (int64, error) {
	ms := before.UnixMilli()
	steps := []string{
		`DELETE FROM deskkit_outbox_attempts WHERE (delivery_id, attempt_no) IN
  (SELECT delivery_id, attempt_no FROM deskkit_outbox_attempts WHERE started_at_ms < ? LIMIT ?)`,
		`DELETE FROM deskkit_outbox_deliveries WHERE id IN
  (SELECT id FROM deskkit_outbox_deliveries WHERE finished_at_ms < ? LIMIT ?)`,
		`DELETE FROM deskkit_outbox_events WHERE (tenant_id, event_id) IN
  (SELECT e.tenant_id, e.event_id FROM deskkit_outbox_events e WHERE e.created_at_ms < ?
     AND NOT EXISTS (SELECT 1 FROM deskkit_outbox_deliveries d WHERE d.tenant_id = e.tenant_id AND d.event_id = e.event_id)
   LIMIT ?)`,
		`DELETE FROM deskkit_outbox_bodies WHERE (tenant_id, event_id, body_key) IN
  (SELECT b.tenant_id, b.event_id, b.body_key FROM deskkit_outbox_bodies b WHERE b.created_at_ms < ?
     AND NOT EXISTS (SELECT 1 FROM deskkit_outbox_events e WHERE e.tenant_id = b.tenant_id AND e.event_id = b.event_id)
   LIMIT ?)`,
		`DELETE FROM deskkit_outbox_targets WHERE (kind, tenant_id, target_id) IN
  (SELECT kind, tenant_id, target_id FROM deskkit_outbox_targets WHERE changed_at_ms < ? AND rate_per_s IS NULL LIMIT ?)`,
	}
	var total int64
	for _, q := range steps {
		for {
			res, err := db.ExecContext(ctx, q, ms, batchSize)
			if err != nil {
				return total, fmt.Errorf("outbox: purge: %w", err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return total, fmt.Errorf("outbox: purge: %w", err)
			}
			total += n
			if n < int64(batchSize) {
				break
			}
		}
	}
	return total, nil
}

// SetPayload replaces delivery id's payload, for the kind's next attempt
// (an e-mail channel's addresses that the last attempt did not reach). A
// handler calls it from Recorded, in the transaction of the record.
func SetPayload(ctx context.Context, db bun.IDB, id int64, payload string) error {
	if _, err := db.NewUpdate().Table("deskkit_outbox_deliveries").
		Set("payload = ?", nullString(payload)).
		Where("id = ?", id).
		Exec(ctx); err != nil {
		return fmt.Errorf("outbox: set payload: %w", err)
	}
	return nil
}

// StoredText is t as a pair of columns keeps it (see ReadText): its
// English, cut to an error's bound, and its key and arguments as JSON
// (nil when cut); both nil for the zero Text.
func StoredText(t deskkit.Text) (english, js *string) { return storedError(t) }
