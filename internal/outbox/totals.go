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
// target alone, which deskkit_outbox_target_created_idx yields in order (no sort),
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

// AttemptCounts is how many attempts were made and how many of them
// succeeded.
type AttemptCounts struct {
	Attempts, Succeeded int
}

// AttemptTotals counts the attempts started since since of the
// deliveries of kind to those of targets that are the tenant's, by
// target, in one statement: an attempt succeeded when it recorded no
// error. Targets without attempts in the window are absent.
func AttemptTotals(ctx context.Context, db bun.IDB, tenantID int64, kind string, targets []int64, since time.Time) (map[int64]AttemptCounts, error) {
	out := map[int64]AttemptCounts{}
	if len(targets) == 0 {
		return out, nil
	}
	var rows []struct {
		Target    int64 `bun:"target_id"`
		Attempts  int   `bun:"attempts"`
		Succeeded int   `bun:"succeeded"`
	}
	err := db.NewSelect().
		TableExpr("deskkit_outbox_attempts AS a").
		Join("JOIN deskkit_outbox_deliveries AS d ON d.id = a.delivery_id").
		ColumnExpr("d.target_id AS target_id").
		ColumnExpr("COUNT(*) AS attempts").
		ColumnExpr("SUM(CASE WHEN a.error IS NULL THEN 1 ELSE 0 END) AS succeeded").
		Where("d.tenant_id = ? AND d.kind = ? AND d.target_id IN (?)", tenantID, kind, bun.List(targets)).
		Where("a.started_at_ms >= ?", since.UnixMilli()).
		GroupExpr("d.target_id").
		Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("outbox: count attempts by target: %w", err)
	}
	for _, r := range rows {
		out[r.Target] = AttemptCounts{Attempts: r.Attempts, Succeeded: r.Succeeded}
	}
	return out, nil
}
