package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
)

// The host's events: deskkit keeps the tenant's channels and speaks their
// protocols, the host decides what happened and tells them.

// eventTaskTrashed is the type of the event deleteTask announces.
const eventTaskTrashed = "task.trashed"

// deliveryBound bounds one background delivery, every channel of the
// tenant together. Each message has the registry's own 10 s, and Deliver
// sends to a few channels at a time, so a tenant with many slow receivers
// is cut off here rather than holding a goroutine, and a shutdown, for
// longer.
const deliveryBound = time.Minute

// maxEventTaskTitle is how much of a task's title goes into an event's
// title: the trash takes titles of up to 512 characters, an event's title
// up to channel.MaxTitleRunes.
const maxEventTaskTitle = 150

// newChannels builds deskkit's event channels over db, with o.Secret, the
// server secret the Verifier uses too: the key that encrypts channels'
// addresses and signing secrets is derived from it.
//
// The example has no mail server, so it passes no Mailer: EMAIL channels
// can be added, and their tests answer that no mail server is configured.
// A real host passes its deskkit.Mailer where nil stands below: the
// Verifier's *verify.SMTPMailer, for instance, so that one mail server
// serves both.
func newChannels(db *bun.DB, o appOptions) (*channel.ChannelRegistry, error) {
	return channel.New(db, o.Secret, nil, &channel.Config{
		AppName:              "Embed",
		Logger:               o.Logger,
		AllowPrivateNetworks: o.AllowPrivateNetworks,
	})
}

// taskTrashed is the data of a task.trashed event, what a webhook
// receiver gets as "data".
type taskTrashed struct {
	TaskID    int64 `json:"taskId"`
	ProjectID int64 `json:"projectId"`
	DeletedBy int64 `json:"deletedBy"`
}

// trashedEvent is the event of p moving t to the trash at now. Its ID is
// made here, once: a job that retried the delivery would send this ID
// again, so that receivers drop the duplicate.
func trashedEvent(t task, p deskkit.Principal, now time.Time) channel.Event {
	return channel.Event{
		ID:    channel.NewEventID(),
		Type:  eventTaskTrashed,
		Time:  now,
		Title: fmt.Sprintf("Task %q moved to the trash", shorten(t.Title, maxEventTaskTitle)),
		Text: fmt.Sprintf("User %d moved task %d of project %d to the trash; it can be restored from there until it is purged.",
			p.UserID, t.ID, t.ProjectID),
		Data: taskTrashed{TaskID: t.ID, ProjectID: t.ProjectID, DeletedBy: p.UserID},
	}
}

// shorten cuts s to at most n characters, the last of them "…".
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// notify delivers ev to every channel of the tenant in the background, so
// that the answer to the request does not wait for the receivers. Call it
// after the transaction that made the event true has committed, never
// inside it: a receiver must not hear of a delete that rolls back, and a
// slow receiver must not hold the transaction's locks.
//
// The delivery keeps ctx's values but not its cancellation (the client
// hanging up does not stop it), is bounded by deliveryBound, and is
// counted in h.deliveries so that drain can wait for it. Failures are
// logged, never the channel's address or secret, and not retried.
//
// That is the short version. An event sent this way is lost if the process
// stops between the commit and the send, or if a receiver is down. A
// production host writes an outbox row holding the event (its ID above
// all) in the delete's own transaction, and a job reads the row, calls
// Deliver (or Send, per channel) with the same Event.ID, retries later the
// Results whose *channel.DeliveryError has Retryable set, and deletes the
// row when nothing is left to retry.
func (h *host) notify(ctx context.Context, tenantID int64, ev channel.Event) {
	ctx = context.WithoutCancel(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		// A request that outlived the server's shutdown: nothing may be
		// added to what close waits for.
		h.logger.WarnContext(ctx, "embed: shutting down, event not delivered",
			slog.String("event", ev.ID), slog.String("type", ev.Type), slog.Int64("tenant", tenantID))
		return
	}
	h.deliveries.Go(func() {
		ctx, cancel := context.WithTimeout(ctx, deliveryBound)
		defer cancel()
		results, err := h.channels.Deliver(ctx, tenantID, ev, nil)
		if err != nil {
			h.logger.ErrorContext(ctx, "embed: event not delivered",
				slog.String("event", ev.ID), slog.String("type", ev.Type), slog.Int64("tenant", tenantID),
				slog.Any("error", err))
			return
		}
		// The registry logs each failure too; this line adds what a
		// retrying job would need: the event, and whether to try again.
		for _, res := range results {
			if res.Err == nil {
				continue
			}
			var de *channel.DeliveryError
			retryable := errors.As(res.Err, &de) && de.Retryable
			h.logger.WarnContext(ctx, "embed: event not delivered to a channel",
				slog.String("event", ev.ID), slog.String("type", ev.Type), slog.Int64("tenant", tenantID),
				slog.Int64("channel", res.ChannelID), slog.String("channelType", string(res.Type)),
				slog.Bool("retryable", retryable), slog.String("reason", reason(res.Err)))
		}
	})
}

// reason is what a log line may say of a failed delivery: what the far end
// answered, which names neither the address nor the secret.
func reason(err error) string {
	var de *channel.DeliveryError
	if errors.As(err, &de) {
		return de.ClientMessage()
	}
	return err.Error()
}

// drain waits for the deliveries in flight, each at most deliveryBound.
// Call it once the server takes no more requests (after
// http.Server.Shutdown), or in a test once its requests have been
// answered: a delivery started while drain waits may be missed.
func (h *host) drain() { h.deliveries.Wait() }

// close makes notify deliver nothing more and waits for the deliveries in
// flight: for the end of main, where a request that http.Server.Shutdown
// gave up on may still be running and must not start a delivery while
// close waits.
func (h *host) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.deliveries.Wait()
}
