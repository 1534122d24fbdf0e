package channel

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/outbox"
)

// MaxStatsHours bounds DeliveryCounts: a week of hours.
const MaxStatsHours = 7 * 24

// HourlyDeliveries is how many of a channel's deliveries created in one
// hour are in each status now.
type HourlyDeliveries struct {
	// Hour is the hour's start, UTC.
	Hour      time.Time `json:"hour"`
	Succeeded int       `json:"succeeded"`
	Failed    int       `json:"failed"`
	Pending   int       `json:"pending"`
}

// DeliveryCounts returns, for p's tenant's channel, how many deliveries
// were created in each of the last hours hours, by status: hours elements,
// oldest first, the last being the current hour (up to the registry's
// clock), empty hours included. It is one grouped query, for a chart of a
// channel's traffic (the reference server's console draws the last 24),
// where a page of Deliveries would cut a busy day short. Deliveries older
// than Config.LogRetention are purged, and so not counted.
//
// Only admins, and principals the Authorizer allows ActionViewDeliveries,
// may.
//
// Errors: ErrUnauthenticated; ErrForbidden; a *deskkit.InputError naming
// channelId or hours (1 to MaxStatsHours); ErrNotFound for a channel the
// tenant does not have.
func (r *ChannelRegistry) DeliveryCounts(ctx context.Context, p deskkit.Principal, channelID int64, hours int) ([]HourlyDeliveries, error) {
	tenantID, err := r.authorize(ctx, p, ActionViewDeliveries)
	if err != nil {
		return nil, err
	}
	if err := deskkit.CheckID("channelId", channelID); err != nil {
		return nil, err
	}
	if hours < 1 || hours > MaxStatsHours {
		return nil, deskkit.Invalid("hours", "must be an integer between 1 and %d", MaxStatsHours)
	}
	from := r.cfg.Now().UTC().Truncate(time.Hour).Add(-time.Duration(hours-1) * time.Hour)
	var counts []outbox.HourCounts
	err = r.reads.Do(ctx, tenantID, func(db bun.IDB) (err error) {
		if err := r.exists(ctx, db, tenantID, channelID); err != nil {
			return err
		}
		if counts, err = outbox.Hourly(ctx, db, tenantID, outboxKind, channelID, from, hours); err != nil {
			return fmt.Errorf("channel: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]HourlyDeliveries, len(counts))
	for i, c := range counts {
		out[i] = HourlyDeliveries{Hour: c.Hour.UTC(), Succeeded: c.Succeeded, Failed: c.Failed, Pending: c.Pending}
	}
	return out, nil
}
