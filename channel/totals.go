package channel

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/outbox"
)

// DeliveryTotals is how many of a channel's deliveries created in a window
// are in each status now.
type DeliveryTotals struct {
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Pending   int `json:"pending"`
}

// DeliveryTotalsAll returns, for every channel of p's tenant, how many of
// its deliveries were created in the last hours hours (the same window as
// DeliveryCounts with hours: the current hour and the hours-1 before it),
// by status, keyed by channel id; a channel without deliveries in the
// window is absent. It is one grouped query for the whole tenant, for a
// list of channels with their traffic, where DeliveryCounts per channel
// would be one query per row.
//
// Only admins, and principals the Authorizer allows ActionViewDeliveries,
// may.
//
// Errors: ErrUnauthenticated; ErrForbidden; a *deskkit.InputError naming
// hours (1 to MaxStatsHours).
func (r *ChannelRegistry) DeliveryTotalsAll(ctx context.Context, p deskkit.Principal, hours int) (map[int64]DeliveryTotals, error) {
	tenantID, err := r.authorize(ctx, p, ActionViewDeliveries)
	if err != nil {
		return nil, err
	}
	if hours < 1 || hours > MaxStatsHours {
		return nil, deskkit.Invalid("hours", "must be an integer between 1 and %d", MaxStatsHours)
	}
	from := r.cfg.Now().UTC().Truncate(time.Hour).Add(-time.Duration(hours-1) * time.Hour)
	var counts map[int64]outbox.StatusCounts
	err = r.reads.Do(ctx, tenantID, func(db bun.IDB) (err error) {
		counts, err = outbox.Totals(ctx, db, tenantID, outboxKind, from, from.Add(time.Duration(hours)*time.Hour))
		if err != nil {
			return fmt.Errorf("channel: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[int64]DeliveryTotals, len(counts))
	for id, c := range counts {
		out[id] = DeliveryTotals{Succeeded: c.Succeeded, Failed: c.Failed, Pending: c.Pending}
	}
	return out, nil
}
