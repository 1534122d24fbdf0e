package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/outbox"
)

// Bounds of an Event.
const (
	MaxEventTypeBytes = 100
	MaxTitleRunes     = 200
	MaxTextRunes      = 3000
	// deliverParallel is how many channels Deliver sends to at once: enough
	// that one slow receiver does not hold up the others, few enough that a
	// tenant's fan-out stays polite.
	deliverParallel = 4
	// maxDeliverIDs bounds the ids of one Deliver: far above the channels
	// a tenant may have (Quota), low enough for one IN list.
	maxDeliverIDs = 1000
)

// Event is one notification for the channels of a tenant: deskkit.Event,
// under the name this package has always used. Publish queues one for
// every subscribed channel; Deliver sends one at once.
type Event = deskkit.Event

// Result is what became of one channel in Deliver.
type Result struct {
	ChannelID int64
	Type      Type   // "" when the channel was not found
	Name      string // "" when the channel was not found
	// Err is nil when the channel took the message; ErrNotFound when the
	// tenant has no such channel; otherwise a *DeliveryError (errors.Is
	// ErrDeliveryFailed or ErrAddressBlocked) whose Retryable field tells a
	// job whether to try again later.
	Err error
}

// NewEventID returns a new message id, "msg_" and 26 random characters.
func NewEventID() string { return notify.NewMessageID() }

// message checks ev and turns it into the senders' message.
func (r *ChannelRegistry) message(ev Event) (notify.Message, error) {
	if ev.ID == "" {
		ev.ID = NewEventID()
	}
	if !validEventType(ev.Type) {
		return notify.Message{}, deskkit.Invalid("type", "must be 1 to %d of a-z, 0-9, \".\", \"_\" and \"-\", such as task.trashed", MaxEventTypeBytes)
	}
	switch {
	case !ev.Heading.IsZero() && (ev.Title != "" || ev.Text != ""):
		// One way or the other: an English string beside its message
		// would be a second copy that could say otherwise.
		return notify.Message{}, deskkit.Invalid("title", "must be empty when the event has a Heading: the title and text are the Heading's and Body's")
	case ev.Heading.IsZero() && !ev.Body.IsZero():
		return notify.Message{}, deskkit.Invalid("body", "must be empty without a Heading")
	case !ev.Heading.IsZero():
		// The English is checked, and stored, as a Title and Text are.
		ev.Title, ev.Text = ev.Message(nil, language.English)
	}
	if err := deskkit.CheckName("title", ev.Title, MaxTitleRunes); err != nil {
		return notify.Message{}, err
	}
	ev.Text = strings.ReplaceAll(ev.Text, "\r\n", "\n")
	if err := checkBody("text", ev.Text, MaxTextRunes); err != nil {
		return notify.Message{}, err
	}
	data := json.RawMessage("{}")
	if ev.Data != nil {
		b, err := json.Marshal(ev.Data)
		if err != nil || len(b) == 0 || b[0] != '{' {
			return notify.Message{}, deskkit.Invalid("data", "must encode as a JSON object")
		}
		data = b
	}
	if ev.Time.IsZero() {
		ev.Time = r.cfg.Now()
	}
	// data is json.Marshal's, which writes valid JSON, and an object
	// (checked above): CheckMessage need not decode it again.
	msg := notify.Message{ID: ev.ID, Type: ev.Type, Time: ev.Time.UTC(), Title: ev.Title, Text: ev.Text}
	if err := notify.CheckMessage(msg); err != nil {
		return notify.Message{}, err
	}
	msg.Data = data
	return msg, nil
}

// checkBody is deskkit.CheckText for a body of several lines: line breaks
// and tabs are allowed, other control characters are not.
func checkBody(field, s string, maxRunes int) error {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\t' })
	if err := deskkit.CheckText(field, strings.Join(lines, " "), maxRunes); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(s); n > maxRunes {
		return deskkit.Invalid(field, "must be at most %d characters", maxRunes)
	}
	return nil
}

func validEventType(s string) bool {
	if s == "" || len(s) > MaxEventTypeBytes {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Deliver sends ev to channelIDs of tenant, or to every channel of the
// tenant when channelIDs is empty, and reports what became of each, in id
// order, at once and once: most hosts want Publish instead, which queues
// the event in the caller's transaction for every subscribed, enabled
// channel, and retries on a schedule with every attempt logged. Deliver
// ignores subscriptions and whether a channel is enabled, and logs
// nothing in the delivery log. Each channel gets one attempt, bounded by the registry's Timeout
// (all its addresses together, for an e-mail channel), 4 channels at a
// time; a
// failure is in its Result, and logged, never retried here: a host that
// wants retries runs Deliver (or Send, for one channel) from a job with
// the same ev.ID, and retries the Results whose DeliveryError is
// Retryable. The error is for the whole call: an invalid event or the
// database failing.
//
// Deliver is a library call for the host, which has decided that the
// tenant is the right audience; it takes no principal and no throttle.
// Unlike Publish, it sets no key of ev.Data, and checks none. An event
// with a Heading is written in the tenant's language
// (Config.TenantLanguage), as Publish's deliveries are.
func (r *ChannelRegistry) Deliver(ctx context.Context, tenantID int64, ev Event, channelIDs []int64) ([]Result, error) {
	ctx, call := r.ops.Start(ctx, "channel.Deliver", "")
	v, err := r.deliver(ctx, tenantID, ev, channelIDs)
	call.End(err)
	return v, err
}

func (r *ChannelRegistry) deliver(ctx context.Context, tenantID int64, ev Event, channelIDs []int64) ([]Result, error) {
	if err := deskkit.CheckID("tenantID", tenantID); err != nil {
		return nil, err
	}
	if len(channelIDs) > maxDeliverIDs {
		return nil, deskkit.Invalid("channelIDs", "must hold at most %d ids", maxDeliverIDs)
	}
	for _, id := range channelIDs {
		if err := deskkit.CheckID("channelIDs", id); err != nil {
			return nil, err
		}
	}
	msg, err := r.message(ev)
	if err != nil {
		return nil, err
	}
	if !ev.Heading.IsZero() {
		// Written in the tenant's language, as a delivery of Publish's.
		msg = r.render(ctx, msg, eventMessages{ev.Heading, ev.Body}, r.tenantLanguage(ctx, tenantID))
	}
	ids := slices.Clone(channelIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var chans []storedChannel
	if len(ids) == 0 {
		chans, err = r.storedAll(ctx, tenantID)
	} else {
		chans, err = r.storedByIDs(ctx, tenantID, ids)
	}
	if err != nil {
		return nil, err
	}
	found := make(map[int64]storedChannel, len(chans))
	for _, c := range chans {
		found[c.ID] = c
	}
	if len(ids) == 0 {
		for _, c := range chans {
			ids = append(ids, c.ID)
		}
	}

	results := make([]Result, len(ids))
	sem := make(chan struct{}, deliverParallel)
	var wg sync.WaitGroup
	for i, id := range ids {
		c, ok := found[id]
		if !ok {
			results[i] = Result{ChannelID: id, Err: ErrNotFound}
			continue
		}
		results[i] = Result{ChannelID: id, Type: c.Type, Name: c.Name}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i].Err = r.send(ctx, c, msg)
		})
	}
	wg.Wait()
	return results, nil
}

// Send sends ev to one channel of tenant: Deliver for a single channel,
// with its Result's error as the error (nil, ErrNotFound, a
// *DeliveryError, or an invalid event or database error).
func (r *ChannelRegistry) Send(ctx context.Context, tenantID, channelID int64, ev Event) error {
	ctx, call := r.ops.Start(ctx, "channel.Send", "")
	err := r.sendOne(ctx, tenantID, channelID, ev)
	call.End(err)
	return err
}

func (r *ChannelRegistry) sendOne(ctx context.Context, tenantID, channelID int64, ev Event) error {
	if err := deskkit.CheckID("channelID", channelID); err != nil {
		return err
	}
	res, err := r.Deliver(ctx, tenantID, ev, []int64{channelID})
	if err != nil {
		return err
	}
	return res[0].Err
}

// send delivers msg to one stored channel and logs a failure, never its
// address or secret (a robot's address carries its key).
func (r *ChannelRegistry) send(ctx context.Context, c storedChannel, msg notify.Message) error {
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	k := kindOf(c.Type)
	rep, err := r.sendOnce(ctx, k, c.target(k), msg)
	err = publicReply(err, c, rep)
	if err != nil {
		r.cfg.Logger.WarnContext(ctx, "channel delivery failed",
			slog.Int64("channel", c.ID), slog.String("type", string(c.Type)),
			slog.String("message", msg.ID), slog.String("reason", deliveryReason(err)))
	}
	return err
}

// deliveryReason is what a failure may say in a log line: a Failure's
// client message (what the far end answered), or the error.
func deliveryReason(err error) string {
	var f *DeliveryError
	if errors.As(err, &f) {
		return f.ClientMessage()
	}
	return err.Error()
}

// sendOnce is a send of msg, checked and with its data compacted, to t
// by kind k.
func (r *ChannelRegistry) sendOnce(ctx context.Context, k kind.Kind, t notify.Target, msg notify.Message) (notify.Reply, error) {
	msg, err := notify.Checked(msg)
	if err != nil {
		return notify.Reply{}, err
	}
	return k.Send(ctx, r.sender, t, msg)
}

// publicReply is publicError(err, c) with the request's signatures masked
// in its texts too, and the start of the reply (see shownReply) in its
// Response.
func publicReply(err error, c storedChannel, rep notify.Reply) error {
	err = publicError(err, c)
	var de *DeliveryError
	if errors.As(err, &de) {
		sigs := signatures(rep.Request)
		de.Reason = de.Reason.MapStrings(func(s string) string { return mask(s, sigs) })
		de.Errmsg = mask(de.Errmsg, sigs)
		de.Response = shownReply(c, rep)
	}
	return err
}

// shownReply is the start of rep's body as an attempt keeps it: at most
// outbox.MaxResponseBytes of valid UTF-8, with what c's address and
// secret hold and the request's signatures masked.
func shownReply(c storedChannel, rep notify.Reply) string {
	return outbox.Cut(mask(redact(string(rep.Body), c), signatures(rep.Request)), outbox.MaxResponseBytes)
}

// Purge deletes the test and resend throttles' closed windows, and clears
// the previous signing secrets of webhooks whose rotation's overlap has
// ended (see RotateSecret), and returns how many rows went or were
// cleared. Run does it every hour; a host that does not run Run may run it
// now and then.
func (r *ChannelRegistry) Purge(ctx context.Context) (int64, error) {
	ctx, call := r.ops.Start(ctx, "channel.Purge", "")
	v, err := r.purge(ctx)
	call.End(err)
	return v, err
}

func (r *ChannelRegistry) purge(ctx context.Context) (int64, error) {
	now := r.now()
	n, err := limiterPurge(ctx, r.db, now)
	if err != nil {
		return n, fmt.Errorf("channel: %w", err)
	}
	cleared, err := r.clearEndedOverlaps(ctx, now)
	return n + cleared, err
}
