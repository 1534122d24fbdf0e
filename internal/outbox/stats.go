package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// HourCounts is how many of a target's deliveries created in one hour are
// in each status now.
type HourCounts struct {
	Hour                       time.Time // the hour's start
	Pending, Succeeded, Failed int
}

// Hourly counts a target's deliveries created in each of hours hours from
// from (an hour's start), by status: one statement, grouped by the hour
// and the status, reading the target's rows through
// deskkit_outbox_target_created_idx (at most the retention's worth). The answer has
// one element per hour, oldest first, empty hours included.
func Hourly(ctx context.Context, db bun.IDB, tenantID int64, kind string, targetID int64, from time.Time, hours int) ([]HourCounts, error) {
	const hourMS = int64(time.Hour / time.Millisecond)
	start := from.UnixMilli()
	var rows []struct {
		Bucket int64  `bun:"bucket"`
		Status string `bun:"status"`
		N      int    `bun:"n"`
	}
	err := db.NewSelect().
		TableExpr("deskkit_outbox_deliveries AS d").
		ColumnExpr("(d.created_at_ms - ?) / ? AS bucket", start, hourMS).
		ColumnExpr("d.status AS status").
		ColumnExpr("COUNT(*) AS n").
		Where("d.tenant_id = ? AND d.kind = ? AND d.target_id = ?", tenantID, kind, targetID).
		Where("d.created_at_ms >= ? AND d.created_at_ms < ?", start, start+int64(hours)*hourMS).
		GroupExpr("bucket, d.status").
		Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("outbox: count deliveries by hour: %w", err)
	}
	out := make([]HourCounts, hours)
	for i := range out {
		out[i].Hour = from.Add(time.Duration(i) * time.Hour)
	}
	for _, r := range rows {
		if r.Bucket < 0 || r.Bucket >= int64(hours) {
			continue
		}
		h := &out[r.Bucket]
		switch r.Status {
		case Pending:
			h.Pending += r.N
		case Succeeded:
			h.Succeeded += r.N
		case Failed:
			h.Failed += r.N
		}
	}
	return out, nil
}
