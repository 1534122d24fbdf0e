package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// StatusCounts is how many deliveries are in each status.
type StatusCounts struct {
	Succeeded, Failed, Pending int
}

// Totals counts the deliveries of kind of every target of tenant created
// in [from, until), by target and status, in one statement (grouped by the
// target and the status, reading the tenant's rows of kind through
// deskkit_outbox_target_idx). Targets without deliveries are absent.
func Totals(ctx context.Context, db bun.IDB, tenantID int64, kind string, from, until time.Time) (map[int64]StatusCounts, error) {
	var rows []struct {
		Target int64  `bun:"target_id"`
		Status string `bun:"status"`
		N      int    `bun:"n"`
	}
	err := db.NewSelect().
		TableExpr("deskkit_outbox_deliveries AS d").
		ColumnExpr("d.target_id AS target_id").
		ColumnExpr("d.status AS status").
		ColumnExpr("COUNT(*) AS n").
		Where("d.tenant_id = ? AND d.kind = ?", tenantID, kind).
		Where("d.created_at_ms >= ? AND d.created_at_ms < ?", from.UnixMilli(), until.UnixMilli()).
		GroupExpr("d.target_id, d.status").
		Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("outbox: count deliveries by target: %w", err)
	}
	out := map[int64]StatusCounts{}
	for _, r := range rows {
		c := out[r.Target]
		switch r.Status {
		case Pending:
			c.Pending += r.N
		case Succeeded:
			c.Succeeded += r.N
		case Failed:
			c.Failed += r.N
		}
		out[r.Target] = c
	}
	return out, nil
}
