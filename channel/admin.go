package channel

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/outbox"
)

// The statuses of a delivery.
const (
	// DeliveryPending: attempts are still to come (or one is in flight).
	DeliveryPending = "PENDING"
	// DeliverySucceeded: the channel took the event.
	DeliverySucceeded = "SUCCEEDED"
	// DeliveryFailed: the schedule's attempts all failed, an attempt
	// failed for good (an address the SSRF guard refuses), or the channel
	// was disabled or deleted.
	DeliveryFailed = "FAILED"
)

// Bounds of a page of deliveries, as in the trash's search.
const (
	DefaultPageSize = 10
	MaxPageSize     = 2000
	MaxPageNo       = 100000
)

// ErrChannelDisabled: a resend or recover asked for a disabled channel,
// which gets no deliveries until it is enabled again.
var ErrChannelDisabled = deskkit.NewError(deskkit.ErrConflict, "channel: disabled",
	"the channel is disabled; enable it first")

// Delivery is one event's delivery to one channel, as the deliveries API
// shows it.
type Delivery struct {
	ID        int64  `json:"id" minimum:"1" description:"The delivery's id."`
	ChannelID int64  `json:"channelId" minimum:"1" description:"The channel's id."`
	EventID   string `json:"eventId" description:"The event's id: the webhook-id header, the same on every attempt, for the receiver to drop duplicates."`
	EventType string `json:"eventType" description:"The event's type."`
	// Status is DeliveryPending, DeliverySucceeded or DeliveryFailed.
	Status string `json:"status" enum:"PENDING,SUCCEEDED,FAILED" description:"PENDING while attempts remain, SUCCEEDED once the channel took the event, FAILED for good."`
	// Attempts is how many attempts were made (or started).
	Attempts int `json:"attempts" minimum:"0" description:"How many attempts were made (or started)."`
	// NextAttemptDate is when the next attempt is due (while one is in
	// flight, when its lease ends); nil once the delivery is finished.
	NextAttemptDate *time.Time `json:"nextAttemptDate" description:"When the next attempt is due (while one is in flight, when its lease ends); null once finished."`
	// LastStatusCode is the HTTP status of the last attempt's reply; 0
	// without a reply (e-mail, a timeout, a refused connection).
	LastStatusCode int `json:"lastStatusCode" minimum:"0" description:"The HTTP status of the last attempt's reply; 0 without one."`
	// LastError says why the last attempt failed; "" after a success. It
	// is written in the reader's language, as Channel.DisabledReason is.
	LastError    string     `json:"lastError" description:"Why the last attempt failed; empty after a success."`
	CreatedDate  time.Time  `json:"createdDate" description:"When the event was published."`
	FinishedDate *time.Time `json:"finishedDate" description:"When the delivery succeeded or failed for good; null while pending."` // nil while pending
}

// DeliveryPage is one page of a channel's deliveries, newest first, and
// how many there are in all.
type DeliveryPage struct {
	_     struct{}   `additionalProperties:"false" description:"One page of a channel's deliveries, newest first, and how many match in all."`
	Total int64      `json:"total" minimum:"0" description:"How many deliveries match."`
	List  []Delivery `json:"list" description:"This page's deliveries."`
}

// Attempt is one attempt of a delivery.
//
// Every attempt is logged: its start, duration, status, the client-safe
// reason of a failure, and the first 4 KiB of the reply (valid UTF-8; 1
// KiB for attempts recorded before deskkit kept 4; for
// e-mail, which addresses the server took), with what the channel's
// address and secret hold masked as "***" before it is stored, in the
// reply and in the reason (robots quote their URL in refusals, and
// servers their request's URI in a 404: "Cannot POST /hook?token=...").
// What is masked follows MaskAddress: for a webhook, the address, its
// path and query together, its query, its path, each query value and each
// path segment of 16 bytes or more; for a robot, each query value (its
// key or access_token); and the secret. Each is masked as the address
// writes it, percent-decoded and percent-encoded (either case of hex);
// parts shorter than 4 bytes are left. The same masking applies to the
// reasons of Test and Deliver. A principal who sees addresses masked also
// sees every URL in an attempt's error, a delivery's lastError and a
// disabled reason masked as a webhook's address is (https://HOST/***).
// The request's signatures (webhook-signature, a robot's sign) are masked
// in the reply and the reason too, should the far end echo them. What
// deskkit sent is kept for Inspect, with its signatures and credentials
// masked, and never written to a log line.
//
// A delivery's log keeps its newest MaxAttemptsKept (100) attempts:
// recording one more deletes the oldest past the bound, so that resends,
// which are never refused for a long log, cannot grow it without end.
// Only resends reach it, and what is lost is the oldest, least telling
// attempts. The delivery's Attempts still counts every attempt, so the
// first attempt listed then is not number 1.
type Attempt struct {
	_           struct{}  `additionalProperties:"false" description:"One attempt of a delivery."`
	AttemptNo   int       `json:"attemptNo" minimum:"1" description:"The attempt's number, from 1."`
	StartedDate time.Time `json:"startedDate" description:"When it started."`
	DurationMs  int64     `json:"durationMs" minimum:"0" description:"How long it took, in milliseconds."`
	// StatusCode is the reply's HTTP status; 0 without a reply.
	StatusCode int `json:"statusCode" minimum:"0" description:"The reply's HTTP status; 0 without a reply."`
	// Error says why the attempt failed; "" if it succeeded. It is
	// written in the reader's language, as Channel.DisabledReason is.
	Error string `json:"error" description:"Why it failed; empty if it succeeded."`
	// Response is the start of the reply: at most 4 KiB of valid UTF-8,
	// with what the channel's address and secret hold (a robot's key)
	// masked as "***"; for e-mail, which addresses the mail server took.
	Response string `json:"response" maxLength:"4096" description:"The start of the reply: at most 4 KiB of valid UTF-8 (1 KiB for attempts recorded before deskkit kept 4), with what the channel's address and secret hold masked as ***; for e-mail, which addresses the mail server took."`
}

// delivery is in as the API shows it, its error written by l (the
// reader's language): in full to a principal who sees addresses in full, or, for one
// who does not, with every URL in its error masked.
func delivery(l deskkit.Localizer, in outbox.Info, full bool) Delivery {
	d := Delivery{
		ID: in.ID, ChannelID: in.TargetID, EventID: in.EventID, EventType: in.EventType,
		Status: in.Status, Attempts: in.Attempts, LastStatusCode: in.LastStatusCode,
		LastError: l.Write(in.LastError), CreatedDate: in.Created.UTC(),
	}
	if !full {
		d.LastError = maskURLs(d.LastError)
	}
	if !in.NextAttempt.IsZero() {
		t := in.NextAttempt.UTC()
		d.NextAttemptDate = &t
	}
	if !in.Finished.IsZero() {
		t := in.Finished.UTC()
		d.FinishedDate = &t
	}
	return d
}

// Enable enables p's tenant's channel id again, clearing the reason and
// date of its disabling and its failure clock, and returns it. Enabling an
// enabled channel only clears its failure clock. Deliveries that ended FAILED while it
// was disabled stay so: Recover queues them again.
//
// Only admins, and principals the Authorizer allows ActionEnable, may.
//
// Errors: ErrUnauthenticated; ErrForbidden; a *deskkit.InputError naming
// id; ErrNotFound for an id that names no channel of the tenant.
func (r *ChannelRegistry) Enable(ctx context.Context, p deskkit.Principal, id int64) (Channel, error) {
	ctx, call := r.ops.Start(ctx, "channel.Enable", "")
	v, err := r.enableChannel(ctx, p, id)
	call.End(err)
	r.wrote(ctx, p, err)
	return v, err
}

func (r *ChannelRegistry) enableChannel(ctx context.Context, p deskkit.Principal, id int64) (Channel, error) {
	tenantID, err := r.authorize(ctx, p, ActionEnable)
	if err != nil {
		return Channel{}, err
	}
	if err := deskkit.CheckID("id", id); err != nil {
		return Channel{}, err
	}
	res, err := r.db.NewUpdate().Table("deskkit_channels").
		Set("enabled = TRUE").
		Set("disabled_reason = NULL").
		Set("disabled_reason_json = NULL").
		Set("disabled_at_ms = NULL").
		Set("failing_since_ms = NULL").
		Set("failed_attempts = 0").
		Set("disabled_by = NULL").
		Set("failing_event_ms = NULL").
		Set("last_failure_status = NULL, last_failure_error = NULL, last_failure_error_json = NULL").
		Set("updated_at_ms = ?", r.now()).
		Set("version = version + 1"). // the worker's cache sees the change
		Where("tenant_id = ? AND id = ?", tenantID, id).
		Exec(ctx)
	if err != nil {
		return Channel{}, fmt.Errorf("channel: enable: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return Channel{}, fmt.Errorf("channel: enable: %w", err)
	} else if n == 0 {
		return Channel{}, ErrNotFound
	}
	return r.shown(ctx, p, tenantID, id)
}

// Disable disables p's tenant's channel id by hand and returns it: it gets
// no new deliveries until enabled, its pending deliveries end FAILED
// ("channel disabled"; attempts in flight finish), its reason is
// "disabled by user N", and channel.disabled, with the user as actor, goes
// to the tenant's other enabled channels, so that the other admins learn
// of it. Disabling a disabled channel changes nothing and publishes
// nothing.
//
// Only admins, and principals the Authorizer allows ActionDisable, may.
//
// Errors: those of Enable.
func (r *ChannelRegistry) Disable(ctx context.Context, p deskkit.Principal, id int64) (Channel, error) {
	ctx, call := r.ops.Start(ctx, "channel.Disable", "")
	v, err := r.disableChannel(ctx, p, id)
	call.End(err)
	r.wrote(ctx, p, err)
	return v, err
}

func (r *ChannelRegistry) disableChannel(ctx context.Context, p deskkit.Principal, id int64) (Channel, error) {
	tenantID, err := r.authorize(ctx, p, ActionDisable)
	if err != nil {
		return Channel{}, err
	}
	if err := deskkit.CheckID("id", id); err != nil {
		return Channel{}, err
	}
	actor := r.actor(ctx, tenantID, p.UserID)
	err = deskkit.RunInTx(ctx, r.db, nil, func(ctx context.Context, tx bun.Tx) error {
		if err := r.exists(ctx, tx, tenantID, id); err != nil {
			return err
		}
		_, err := r.disable(ctx, tx, tenantID, id, disableCause{cause: causeUser, userID: p.UserID}, actor)
		return err
	})
	if err != nil {
		return Channel{}, writeError("disable", err)
	}
	return r.shown(ctx, p, tenantID, id)
}

// exists returns ErrNotFound unless the tenant has channel id.
func (r *ChannelRegistry) exists(ctx context.Context, db bun.IDB, tenantID, id int64) error {
	_, err := r.enabled(ctx, db, tenantID, id)
	return err
}

// enabled reports whether the tenant's channel id is enabled, or
// ErrNotFound.
func (r *ChannelRegistry) enabled(ctx context.Context, db bun.IDB, tenantID, id int64) (bool, error) {
	var on bool
	err := db.NewSelect().Table("deskkit_channels").Column("enabled").
		Where("tenant_id = ? AND id = ?", tenantID, id).Scan(ctx, &on)
	if errors.Is(err, sql.ErrNoRows) {
		return false, ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("channel: read: %w", err)
	}
	return on, nil
}

// shown returns the tenant's channel id as p may see it: its address in
// full, or masked (see List).
func (r *ChannelRegistry) shown(ctx context.Context, p deskkit.Principal, tenantID, id int64) (Channel, error) {
	s, err := r.stored(ctx, tenantID, id)
	if err != nil {
		return Channel{}, err
	}
	full, err := r.may(ctx, p, ActionViewAddresses)
	if err != nil {
		return Channel{}, err
	}
	chans := []Channel{listed(s, full)}
	if err := r.withFlow(ctx, r.db, tenantID, chans); err != nil {
		return Channel{}, err
	}
	if err := r.withHealth(ctx, r.db, tenantID, chans); err != nil {
		return Channel{}, err
	}
	return chans[0], nil
}

// DeliveryFilter picks which of a channel's deliveries Deliveries
// returns. The zero value picks them all.
type DeliveryFilter struct {
	// Status is DeliveryPending, DeliverySucceeded or DeliveryFailed; ""
	// for every status.
	Status string
	// Types, when not empty, keeps the deliveries of events of these types
	// (exact types, not prefixes: at most MaxFilterTypes, each as an event
	// type is written, lower case letters, digits, '.', '_' and '-').
	// Types no longer registered are allowed: their deliveries are kept.
	Types []string
	// From and To, when not zero, keep the deliveries created at or after
	// From and before To (From alone: since then; To alone: until then).
	// From after To, or equal to it, is refused.
	From, To time.Time
}

// MaxFilterTypes is how many event types one DeliveryFilter may name.
const MaxFilterTypes = 20

// check validates f, naming the field of the API that carries it: status,
// eventType, from or to.
func (f DeliveryFilter) check() error {
	switch f.Status {
	case "", DeliveryPending, DeliverySucceeded, DeliveryFailed:
	default:
		return deskkit.Invalid("status", "must be PENDING, SUCCEEDED or FAILED, or absent for every delivery")
	}
	if len(f.Types) > MaxFilterTypes {
		return deskkit.Invalid("eventType", "must name at most %d event types", MaxFilterTypes)
	}
	for _, t := range f.Types {
		if !validEventType(t) {
			return deskkit.Invalid("eventType", "has %q, which is no event type: an event type is 1 to %d lower case letters, digits, '.', '_' and '-'", t, MaxEventTypeBytes)
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return deskkit.Invalid("from", "must be before to (from %s, to %s)", f.From.UTC().Format(time.RFC3339), f.To.UTC().Format(time.RFC3339))
	}
	for _, b := range []struct {
		name string
		t    time.Time
	}{{"from", f.From}, {"to", f.To}} {
		if !b.t.IsZero() && (b.t.UTC().Year() < 1 || b.t.UTC().Year() > 9999) {
			return deskkit.Invalid(b.name, "must be a date between the years 1 and 9999 in UTC")
		}
	}
	return nil
}

// Deliveries returns one page of p's tenant's channel's deliveries that f
// picks, newest first. pageNo counts from 1 (0 means 1, at most
// MaxPageNo); pageSize is 1 to MaxPageSize (0 means DefaultPageSize).
//
// Only admins, and principals the Authorizer allows ActionViewDeliveries,
// may.
//
// Errors: ErrUnauthenticated; ErrForbidden; a *deskkit.InputError naming
// channelId, status, eventType, from, to, pageNo or pageSize; ErrNotFound
// for a channel the tenant does not have.
func (r *ChannelRegistry) Deliveries(ctx context.Context, p deskkit.Principal, channelID int64, f DeliveryFilter, pageNo, pageSize int) (DeliveryPage, error) {
	ctx, call := r.ops.Start(ctx, "channel.Deliveries", "")
	v, err := r.deliveries(ctx, p, channelID, f, pageNo, pageSize)
	call.End(err)
	return v, err
}

func (r *ChannelRegistry) deliveries(ctx context.Context, p deskkit.Principal, channelID int64, f DeliveryFilter, pageNo, pageSize int) (DeliveryPage, error) {
	tenantID, err := r.authorize(ctx, p, ActionViewDeliveries)
	if err != nil {
		return DeliveryPage{}, err
	}
	if err := deskkit.CheckID("channelId", channelID); err != nil {
		return DeliveryPage{}, err
	}
	if err := f.check(); err != nil {
		return DeliveryPage{}, err
	}
	switch {
	case pageNo == 0:
		pageNo = 1
	case pageNo < 1 || pageNo > MaxPageNo:
		return DeliveryPage{}, deskkit.Invalid("pageNo", "must be an integer between 1 and %d", MaxPageNo)
	}
	switch {
	case pageSize == 0:
		pageSize = DefaultPageSize
	case pageSize < 1 || pageSize > MaxPageSize:
		return DeliveryPage{}, deskkit.Invalid("pageSize", "must be an integer between 1 and %d", MaxPageSize)
	}
	var total int
	var infos []outbox.Info
	err = r.reads.Do(ctx, tenantID, func(db bun.IDB) (err error) {
		if err := r.exists(ctx, db, tenantID, channelID); err != nil {
			return err
		}
		total, infos, err = outbox.List(ctx, db, tenantID, outboxKind, channelID,
			outbox.Filter{Status: f.Status, Types: slices.Compact(slices.Sorted(slices.Values(f.Types))), From: f.From, To: f.To},
			(pageNo-1)*pageSize, pageSize)
		if err != nil {
			return fmt.Errorf("channel: %w", err)
		}
		return nil
	})
	if err != nil {
		return DeliveryPage{}, err
	}
	full, err := r.may(ctx, p, ActionViewAddresses)
	if err != nil {
		return DeliveryPage{}, err
	}
	page := DeliveryPage{Total: int64(total), List: make([]Delivery, len(infos))}
	for i, in := range infos {
		page.List[i] = delivery(r.reader(ctx), in, full)
	}
	return page, nil
}

// delivery returns the tenant's channel delivery id, or ErrNotFound.
func (r *ChannelRegistry) delivery(ctx context.Context, db bun.IDB, tenantID, id int64) (outbox.Info, error) {
	in, err := outbox.Get(ctx, db, tenantID, id)
	switch {
	case errors.Is(err, outbox.ErrNotFound):
		return outbox.Info{}, ErrNotFound
	case err != nil:
		return outbox.Info{}, fmt.Errorf("channel: %w", err)
	case in.Kind != outboxKind:
		return outbox.Info{}, ErrNotFound
	}
	return in, nil
}

// Attempts returns the attempts of p's tenant's delivery id, oldest first.
//
// Only admins, and principals the Authorizer allows ActionViewDeliveries,
// may.
//
// Errors: ErrUnauthenticated; ErrForbidden; a *deskkit.InputError naming
// id; ErrNotFound for a delivery the tenant does not have.
func (r *ChannelRegistry) Attempts(ctx context.Context, p deskkit.Principal, deliveryID int64) ([]Attempt, error) {
	ctx, call := r.ops.Start(ctx, "channel.Attempts", "")
	v, err := r.attempts(ctx, p, deliveryID)
	call.End(err)
	return v, err
}

func (r *ChannelRegistry) attempts(ctx context.Context, p deskkit.Principal, deliveryID int64) ([]Attempt, error) {
	tenantID, err := r.authorize(ctx, p, ActionViewDeliveries)
	if err != nil {
		return nil, err
	}
	if err := deskkit.CheckID("id", deliveryID); err != nil {
		return nil, err
	}
	var in outbox.Info
	var list []outbox.Attempt
	err = r.reads.Do(ctx, tenantID, func(db bun.IDB) (err error) {
		if in, err = r.delivery(ctx, db, tenantID, deliveryID); err != nil {
			return err
		}
		if list, err = outbox.Attempts(ctx, db, tenantID, deliveryID); err != nil {
			return fmt.Errorf("channel: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	now, err := r.answerMasks(ctx, tenantID, in.TargetID)
	if err != nil {
		return nil, err
	}
	full, err := r.may(ctx, p, ActionViewAddresses)
	if err != nil {
		return nil, err
	}
	out := make([]Attempt, len(list))
	l := r.reader(ctx)
	for i, a := range list {
		out[i] = Attempt{AttemptNo: a.No, StartedDate: a.Started.UTC(), DurationMs: a.Duration.Milliseconds(),
			StatusCode: a.StatusCode, Error: l.Write(a.Error), Response: mask(a.Response, now)}
		if !full {
			out[i].Error = maskURLs(out[i].Error)
		}
	}
	return out, nil
}

// answerMasks are what the tenant's channel id holds now (its secrets,
// signing keys, address and headers, as redact spells them), which an
// attempt's stored reply is masked of again when answered: a reply is
// masked as it is recorded of what the channel held when the attempt was
// claimed, and a far end that echoes a secret rotated in while the
// attempt ran would otherwise show the new one. None for a channel
// deleted since.
func (r *ChannelRegistry) answerMasks(ctx context.Context, tenantID, channelID int64) ([]string, error) {
	s, err := r.stored(ctx, tenantID, channelID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return redactions(s), nil
}

// Resend makes one more attempt of p's tenant's delivery id due now,
// whatever its status, and returns the delivery: a finished delivery
// becomes PENDING with this one attempt (it ends again if it fails); a
// pending one keeps its place in the schedule; one whose attempt is in
// flight is left to it. The worker is woken. Resends and recovers are
// throttled per tenant (Config.ResendsPerMinute, together), and a
// delivery's log keeps its newest MaxAttemptsKept attempts.
//
// Only admins, and principals the Authorizer allows ActionResend, may.
//
// Errors: ErrUnauthenticated; ErrForbidden; a *deskkit.InputError naming
// id; ErrNotFound for a delivery the tenant does not have, or whose
// channel was deleted; ErrChannelDisabled; a *deskkit.RateLimitError
// (ErrRateLimited) past the throttle, with the wait until its window ends.
func (r *ChannelRegistry) Resend(ctx context.Context, p deskkit.Principal, deliveryID int64) (Delivery, error) {
	ctx, call := r.ops.Start(ctx, "channel.Resend", "")
	v, err := r.resend(ctx, p, deliveryID)
	call.End(err)
	r.wrote(ctx, p, err)
	return v, err
}

func (r *ChannelRegistry) resend(ctx context.Context, p deskkit.Principal, deliveryID int64) (Delivery, error) {
	tenantID, err := r.authorize(ctx, p, ActionResend)
	if err != nil {
		return Delivery{}, err
	}
	if err := deskkit.CheckID("id", deliveryID); err != nil {
		return Delivery{}, err
	}
	full, err := r.may(ctx, p, ActionViewAddresses)
	if err != nil {
		return Delivery{}, err
	}
	in, err := r.delivery(ctx, r.db, tenantID, deliveryID)
	if err != nil {
		return Delivery{}, err
	}
	var out outbox.Info
	err = deskkit.RunInTx(ctx, r.db, nil, func(ctx context.Context, tx bun.Tx) error {
		on, err := r.enabled(ctx, tx, tenantID, in.TargetID)
		if err != nil {
			return err
		}
		if !on {
			return ErrChannelDisabled
		}
		if err := r.takeResend(ctx, tx, tenantID); err != nil {
			return err
		}
		out, err = outbox.Resend(ctx, tx, tenantID, deliveryID, r.cfg.Now(), len(r.cfg.RetrySchedule)-1)
		return err
	})
	if err != nil {
		return Delivery{}, adminError("resend", err)
	}
	r.worker.Wake()
	return delivery(r.reader(ctx), out, full), nil
}

// Recover queues again, each with the whole schedule, p's tenant's
// channel's FAILED deliveries created at or after since, and returns how
// many. The worker is woken. A recover counts one against the tenant's
// resend throttle (Config.ResendsPerMinute), however many it queues.
//
// Only admins, and principals the Authorizer allows ActionRecover, may.
//
// Errors: ErrUnauthenticated; ErrForbidden; a *deskkit.InputError naming
// channelId or since (required); ErrNotFound for a channel the tenant does
// not have; ErrChannelDisabled; a *deskkit.RateLimitError (ErrRateLimited)
// past the throttle.
func (r *ChannelRegistry) Recover(ctx context.Context, p deskkit.Principal, channelID int64, since time.Time) (int, error) {
	ctx, call := r.ops.Start(ctx, "channel.Recover", "")
	v, err := r.recoverFailed(ctx, p, channelID, since)
	call.End(err)
	r.wrote(ctx, p, err)
	return v, err
}

func (r *ChannelRegistry) recoverFailed(ctx context.Context, p deskkit.Principal, channelID int64, since time.Time) (int, error) {
	tenantID, err := r.authorize(ctx, p, ActionRecover)
	if err != nil {
		return 0, err
	}
	if err := deskkit.CheckID("channelId", channelID); err != nil {
		return 0, err
	}
	if since.IsZero() {
		return 0, deskkit.Invalid("since", "is required: the deliveries created since then are recovered")
	}
	var n int
	err = deskkit.RunInTx(ctx, r.db, nil, func(ctx context.Context, tx bun.Tx) error {
		on, err := r.enabled(ctx, tx, tenantID, channelID)
		if err != nil {
			return err
		}
		if !on {
			return ErrChannelDisabled
		}
		if err := r.takeResend(ctx, tx, tenantID); err != nil {
			return err
		}
		n, err = outbox.Recover(ctx, tx, tenantID, outboxKind, channelID, since, r.cfg.Now())
		return err
	})
	if err != nil {
		return 0, adminError("recover", err)
	}
	if n > 0 {
		r.worker.Wake()
	}
	return n, nil
}

// adminError passes the registry's errors and wraps the others.
func adminError(op string, err error) error {
	var rl *deskkit.RateLimitError
	if errors.As(err, &rl) {
		return rl
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrChannelDisabled) {
		return err
	}
	return fmt.Errorf("channel: %s: %w", op, err)
}
