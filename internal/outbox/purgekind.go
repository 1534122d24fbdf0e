package outbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// PurgeKind deletes the deliveries of one kind that finished before
// before, their attempts, and their events once no delivery refers to
// them, batchSize deliveries per transaction, and returns how many rows
// it deleted in all. It is for a kind whose rows must not outlive their
// use by Purge's retention (a notice's payload is an address), and leaves
// every other kind alone.
func PurgeKind(ctx context.Context, db *bun.DB, kind string, before time.Time, batchSize int) (int64, error) {
	var total int64
	for {
		var n int
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			var rows []deliveryRow
			if err := tx.NewSelect().Model(&rows).Column("id", "tenant_id", "event_id").
				Where("kind = ? AND finished_at_ms < ?", kind, before.UnixMilli()).
				OrderExpr("id").Limit(batchSize).Scan(ctx); err != nil {
				return err
			}
			n = len(rows)
			if n == 0 {
				return nil
			}
			ids := make([]int64, n)
			var events strings.Builder
			var args []any
			for i, r := range rows {
				ids[i] = r.ID
				if i > 0 {
					events.WriteString(" OR ")
				}
				events.WriteString("(e.tenant_id = ? AND e.event_id = ?)")
				args = append(args, r.TenantID, r.EventID)
			}
			for _, q := range []*bun.DeleteQuery{
				tx.NewDelete().Table("deskkit_outbox_attempts").Where("delivery_id IN (?)", bun.List(ids)),
				tx.NewDelete().Table("deskkit_outbox_deliveries").Where("id IN (?)", bun.List(ids)),
				tx.NewDelete().TableExpr("deskkit_outbox_events AS e").Where("("+events.String()+")", args...).
					Where("NOT EXISTS (SELECT 1 FROM deskkit_outbox_deliveries d WHERE d.tenant_id = e.tenant_id AND d.event_id = e.event_id)"),
			} {
				res, err := q.Exec(ctx)
				if err != nil {
					return err
				}
				k, err := res.RowsAffected()
				if err != nil {
					return err
				}
				total += k
			}
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("outbox: purge %s: %w", kind, err)
		}
		if n < batchSize {
			return total, nil
		}
	}
}
