package channel

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/outbox"
)

// EventChannelFailing is the type of the event the registry publishes
// when a channel's attempts have all failed for Config.FailingAfter: once
// per failure episode, which a success, a disable or an enable ends.
const EventChannelFailing = "channel.failing"

// ChannelFailingData is the data of a channel.failing event.
type ChannelFailingData struct {
	TenantID  int64  `json:"tenantId,omitempty"` // set by Publish
	ChannelID int64  `json:"channelId"`
	Name      string `json:"name"`
	// FailingSince is when the first of the failed attempts was made,
	// UTC; FailingSeconds how long before the event that was.
	FailingSince   time.Time `json:"failingSince"`
	FailingSeconds int64     `json:"failingSeconds"`
	// Attempts is how many attempts failed in a row.
	Attempts int `json:"attempts"`
	// LastStatusCode is the last failed attempt's HTTP status (0 without
	// a reply), LastError its error, in English.
	LastStatusCode int    `json:"lastStatusCode"`
	LastError      string `json:"lastError"`
}

var failingEventType = deskkit.EventType{
	Name:    EventChannelFailing,
	Service: deskkit.ServiceChannel,
	About: deskkit.Textf("Deliveries to an event channel have kept failing for a while, an hour unless the operator set another time. " +
		"It is still enabled and retried, and is disabled if it keeps failing. The tenant's other channels get this event once each time it starts failing."),
	Example: ChannelFailingData{
		TenantID: 1, ChannelID: 7, Name: "Ops webhook",
		FailingSince: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC), FailingSeconds: 3720, Attempts: 4,
		LastStatusCode: 503, LastError: "the webhook answered 503 Service Unavailable",
	},
}

// failingTexts are the heading and body of channel.failing.
func failingTexts(name string, failing time.Duration, attempts int, lastError deskkit.Text) (title, text deskkit.Text) {
	title = deskkit.Textf("Channel %q is failing", clipRunes(name, 100))
	text = deskkit.Textf("Its deliveries have all failed for %s (%d attempts); the last: %s. deskkit keeps retrying, and disables the channel if it keeps failing.",
		deskkit.DurationText(failing), attempts, lastError)
	return title, text
}

// UserResolver names the users who disabled channels by hand, for
// Channel.DisabledByName; the host implements it over its user directory
// (the same shape as trash.UserResolver, so that one adapter may serve
// both).
//
// ResolveUsers returns how those of ids that are users of the tenant are
// shown; ids it leaves out are shown without a name. List and Get call it
// outside any transaction, with the registry's database as db. An error
// is logged, and the names are left empty: a list of channels does not
// fail for want of names.
type UserResolver interface {
	ResolveUsers(ctx context.Context, db bun.IDB, tenantID int64, ids []int64) (map[int64]deskkit.UserInfo, error)
}

// healthOf is a row's state.
func healthOf(row channelRow) Health {
	switch {
	case !row.Enabled:
		return HealthDisabled
	case row.FailingSince != nil:
		return HealthFailing
	}
	return HealthHealthy
}

// setHealth fills s's health fields from row; l writes the last error.
func setHealth(l deskkit.Localizer, s *storedChannel, row channelRow) {
	s.Health = healthOf(row)
	s.FailedAttempts = row.FailedAttempts
	if row.FailingSince != nil {
		t := time.UnixMilli(*row.FailingSince).UTC()
		s.FailingSince = &t
		if row.LastFailureStatus != nil {
			s.LastStatusCode = *row.LastFailureStatus
		}
		s.LastError = l.Write(outbox.ReadText(row.LastFailureError, row.LastFailureErrorJSON))
	}
	if !row.Enabled {
		s.DisabledBy = row.DisabledBy
	}
}

// withHealth adds to chans, the tenant's channels, their attempts of the
// last 24 hours (one query for all of them) and the names of the users
// who disabled them (one call of Config.Users).
func (r *ChannelRegistry) withHealth(ctx context.Context, db bun.IDB, tenantID int64, chans []Channel) error {
	ids := make([]int64, len(chans))
	var users []int64
	for i, c := range chans {
		ids[i] = c.ID
		if c.DisabledBy != nil && !slices.Contains(users, *c.DisabledBy) {
			users = append(users, *c.DisabledBy)
		}
	}
	counts, err := outbox.AttemptTotals(ctx, db, tenantID, outboxKind, ids, r.cfg.Now().Add(-24*time.Hour))
	if err != nil {
		return fmt.Errorf("channel: %w", err)
	}
	var names map[int64]deskkit.UserInfo
	if len(users) > 0 && r.cfg.Users != nil {
		if names, err = r.cfg.Users.ResolveUsers(ctx, db, tenantID, users); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.cfg.Logger.WarnContext(ctx, "channel: resolve the users who disabled channels", slog.Any("error", err))
		}
	}
	for i := range chans {
		c := &chans[i]
		n := counts[c.ID]
		c.Attempts24h, c.AttemptsSucceeded24h = n.Attempts, n.Succeeded
		if n.Attempts > 0 {
			share := float64(n.Succeeded) / float64(n.Attempts)
			c.SuccessShare24h = &share
		}
		if c.DisabledBy != nil {
			c.DisabledByName = names[*c.DisabledBy].Name
		}
	}
	return nil
}

// actor is the user userID of the tenant as an event's actor (a disable,
// a reveal, a rotation), named by Config.Users when it knows the user; it
// is asked before any transaction, and a failure of it leaves the actor
// unnamed (logged).
func (r *ChannelRegistry) actor(ctx context.Context, tenantID, userID int64) *deskkit.Actor {
	a := &deskkit.Actor{ID: userID}
	if r.cfg.Users == nil {
		return a
	}
	names, err := r.cfg.Users.ResolveUsers(ctx, r.db, tenantID, []int64{userID})
	if err != nil {
		r.cfg.Logger.WarnContext(ctx, "channel: resolve an event's actor", slog.Any("error", err))
		return a
	}
	a.Name = names[userID].Name
	return a
}

// raiseFailing publishes channel.failing for the tenant's channel id,
// through tx, the flush's transaction that counted its failure, if no
// other flush did for the running episode: the mark is set by a
// conditional update of the channel's row, which the flush already
// locked, so that replicas raise it once between them.
func (r *ChannelRegistry) raiseFailing(ctx context.Context, tx bun.IDB, tenantID, id int64, name string, since time.Time, attempts, status int, lastError deskkit.Text) error {
	now := r.cfg.Now()
	var marked []int64
	err := tx.NewRaw(`UPDATE deskkit_channels SET failing_event_ms = ?
WHERE tenant_id = ? AND id = ? AND enabled AND failing_since_ms IS NOT NULL AND failing_event_ms IS NULL
RETURNING id`, now.UnixMilli(), tenantID, id).Scan(ctx, &marked)
	if err != nil || len(marked) == 0 {
		return err
	}
	failing := now.Sub(since)
	title, text := failingTexts(name, failing, attempts, lastError)
	return r.publish(ctx, tx, tenantID, deskkit.Event{
		ID:      deskkit.NewEventID(),
		Type:    EventChannelFailing,
		Time:    now,
		Heading: title,
		Body:    text,
		Data: ChannelFailingData{
			ChannelID: id, Name: name, FailingSince: since.UTC(), FailingSeconds: int64(failing / time.Second),
			Attempts: attempts, LastStatusCode: status, LastError: lastError.String(),
		},
	}, id)
}
