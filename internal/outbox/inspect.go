package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Body is a body an attempt sent, kept once per event and Key (a
// rendering: a robot's or an e-mail's message in one language), however
// many attempts and deliveries sent it.
type Body struct {
	// Key names the rendering within its event: the SHA-256 of Text, in
	// hex (at most 64 bytes).
	Key  string
	Text string
}

// keepBodies keeps, through tx, the bodies of the recorded results that
// carry one, each once per tenant, event and key: a body kept already
// (an earlier attempt's, another channel's) is left as it is.
func keepBodies(ctx context.Context, tx bun.IDB, results []Result, now time.Time) error {
	type row struct {
		tenant int64
		event  string
		key    string
	}
	seen := map[row]bool{}
	var (
		values string
		args   []any
	)
	for _, r := range results {
		b := r.Outcome.Body
		if b == nil || b.Key == "" {
			continue
		}
		k := row{r.Delivery.TenantID, r.Delivery.Event.ID, b.Key}
		if seen[k] {
			continue
		}
		seen[k] = true
		if values != "" {
			values += ", "
		}
		values += "(?, ?, ?, ?, ?)"
		args = append(args, k.tenant, k.event, k.key, b.Text, now.UnixMilli())
	}
	if values == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO deskkit_outbox_bodies (tenant_id, event_id, body_key, body, created_at_ms) VALUES "+
		values+" ON CONFLICT (tenant_id, event_id, body_key) DO NOTHING", args...)
	if err != nil {
		return fmt.Errorf("keep bodies: %w", err)
	}
	return nil
}

// Bodies returns the bodies of the tenant's event eventID kept under
// keys, by key; a key without a body (purged, or never kept) is absent.
func Bodies(ctx context.Context, db bun.IDB, tenantID int64, eventID string, keys []string) (map[string]string, error) {
	out := map[string]string{}
	if len(keys) == 0 {
		return out, nil
	}
	var rows []struct {
		Key  string `bun:"body_key"`
		Body string `bun:"body"`
	}
	err := db.NewSelect().Table("deskkit_outbox_bodies").Column("body_key", "body").
		Where("tenant_id = ? AND event_id = ? AND body_key IN (?)", tenantID, eventID, bun.List(keys)).
		Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("outbox: read bodies: %w", err)
	}
	for _, r := range rows {
		out[r.Key] = r.Body
	}
	return out, nil
}

// GetEvent returns the tenant's event id as it was enqueued, or
// ErrNotFound (purged).
func GetEvent(ctx context.Context, db bun.IDB, tenantID int64, id string) (Event, error) {
	var r eventRow
	err := db.NewSelect().Model(&r).Where("tenant_id = ? AND event_id = ?", tenantID, id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return Event{}, ErrNotFound
	}
	if err != nil {
		return Event{}, fmt.Errorf("outbox: read event: %w", err)
	}
	return r.event(), nil
}
