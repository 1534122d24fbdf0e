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
// in [from, until), by target and status, in one statement: grouped by the
// target alone, which deskkit_outbox_target_idx yields in order (no sort),
// with a sum per status. Targets without deliveries are absent.
func Totals(ctx context.Context, db bun.IDB, tenantID int64, kind string, from, until time.Time) (map[int64]StatusCounts, error) {
	var rows []struct {
		Target    int64 `bun:"target_id"`
		Succeeded int   `bun:"succeeded"`
		Failed    int   `bun:"failed"`
		Pending   int   `bun:"pending"`
	}
	err := db.NewSelect().
		TableExpr("deskkit_outbox_deliveries AS d").
		ColumnExpr("d.target_id AS target_id").
		ColumnExpr("SUM(CASE WHEN d.status = ? THEN 1 ELSE 0 END) AS succeeded", Succeeded).
		ColumnExpr("SUM(CASE WHEN d.status = ? THEN 1 ELSE 0 END) AS failed", Failed).
		ColumnExpr("SUM(CASE WHEN d.status = ? THEN 1 ELSE 0 END) AS pending", Pending).
		Where("d.tenant_id = ? AND d.kind = ?", tenantID, kind).
		Where("d.created_at_ms >= ? AND d.created_at_ms < ?", from.UnixMilli(), until.UnixMilli()).
		GroupExpr("d.target_id").
		Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("outbox: count deliveries by target: %w", err)
	}
	out := make(map[int64]StatusCounts, len(rows))
	for _, r := range rows {
		out[r.Target] = StatusCounts{Succeeded: r.Succeeded, Failed: r.Failed, Pending: r.Pending}
	}
	return out, nil
}
