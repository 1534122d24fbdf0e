package channel

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/webhook"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/outbox"
)

// Bounds of what an attempt keeps of its exchange besides the reply's
// body (outbox.MaxResponseBytes): headers, each value cut.
const (
	maxKeptHeaders     = 50
	maxHeaderValueKept = 512
	maxHeaderBytesKept = 4096 // names and values of one request's or reply's headers together
)

// DeliveryDetail is one delivery inspected: the delivery, its channel,
// the event as it was sent, and every attempt kept with what it sent and
// what came back.
type DeliveryDetail struct {
	_        struct{}        `additionalProperties:"false" description:"A delivery inspected: the delivery, its channel, the event as sent, and every attempt kept with its request and its answer."`
	Delivery Delivery        `json:"delivery" description:"The delivery, as the deliveries list shows it."`
	Channel  DeliveryChannel `json:"channel" description:"The delivery's channel; name empty when it was deleted."`
	Event    DeliveredEvent  `json:"event" description:"The event, as it was sent."`
	Attempts []AttemptDetail `json:"attempts" description:"The attempts kept (the newest 100), oldest first."`
}

// DeliveryChannel names a delivery's channel.
type DeliveryChannel struct {
	_    struct{} `additionalProperties:"false" description:"The delivery's channel."`
	ID   int64    `json:"id" minimum:"1" description:"The channel's id."`
	Type Type     `json:"channelType" description:"The channel's type; empty when it was deleted."`
	Name string   `json:"name" description:"The channel's name; empty when it was deleted."`
}

// DeliveredEvent is an event as a delivery sent it.
type DeliveredEvent struct {
	_    struct{}  `additionalProperties:"false" description:"The event as it was sent."`
	ID   string    `json:"id" description:"The event's id: the webhook-id header."`
	Type string    `json:"type" description:"The event's type."`
	Time time.Time `json:"time" description:"When the event happened: the payload's timestamp."`
	// Payload is the webhook's body, {type, timestamp, data}: what every
	// attempt of a webhook sent; nil once the event was purged.
	Payload json.RawMessage `json:"payload" description:"The event as a webhook receives it, {type, timestamp, data}, byte for byte; null once the event was purged from the log."`
	// Language is the language Title and Text are written in: the one
	// the newest attempt was written in, else the tenant's.
	Language string `json:"language" description:"The language of title and text (BCP 47): the one the newest attempt was written in, else the tenant's."`
	Title    string `json:"title" description:"The event's title as robots and e-mail got it (the e-mail's subject, after the product's name)."`
	Text     string `json:"text" description:"The event's text as robots and e-mail got it: markdown for robots, plain text for e-mail."`
}

// AttemptDetail is one attempt inspected: what it sent, and what came
// back.
type AttemptDetail struct {
	_           struct{}        `additionalProperties:"false" description:"One attempt: what it sent and what came back."`
	AttemptNo   int             `json:"attemptNo" minimum:"1" description:"The attempt's number, from 1."`
	StartedDate time.Time       `json:"startedDate" description:"When it started."`
	Request     SentRequest     `json:"request" description:"What the attempt sent; empty for an attempt that sent nothing (a deleted or disabled channel) or that was recorded before requests were kept."`
	Response    AttemptResponse `json:"response" description:"What came back."`
}

// SentRequest is what an attempt sent, with secrets and signatures
// masked.
type SentRequest struct {
	_ struct{} `additionalProperties:"false" description:"What an attempt sent."`
	// Method is POST for the HTTP kinds, SMTP for e-mail.
	Method string `json:"method" description:"POST for the HTTP kinds, SMTP for e-mail; empty when nothing was sent or kept."`
	// URL is the channel's address as MaskAddress masks it.
	URL string `json:"url" description:"Where it went, masked as addresses are masked to readers who may not see them (a webhook's as https://HOST/***, a robot's key as ***); for e-mail, the addresses."`
	// Headers are the request's headers: webhook-signature and any
	// credential show as ***; to a reader who may not see addresses, every
	// value but Content-Type, User-Agent, webhook-id and
	// webhook-timestamp does.
	Headers []MessageHeader `json:"headers" description:"The request's headers, in name order: webhook-signature and credentials always as ***, and to a reader who may not see addresses every value but Content-Type, User-Agent, webhook-id and webhook-timestamp."`
	// Body is the body as sent (a signature in it masked); "" when it
	// is no longer kept.
	Body string `json:"body" description:"The body as sent: a webhook's is the event's payload; a robot's JSON or an e-mail's subject and text, kept once per event and language. A signature in it shows as ***. Empty when nothing was kept."`
}

// AttemptResponse is what came back to an attempt.
type AttemptResponse struct {
	_ struct{} `additionalProperties:"false" description:"What came back to an attempt."`
	// StatusCode is the reply's HTTP status; 0 without a reply.
	StatusCode int `json:"statusCode" minimum:"0" description:"The reply's HTTP status; 0 without one (e-mail, a timeout, a refused connection)."`
	// Headers are the reply's headers, masked as its body is.
	Headers []MessageHeader `json:"headers" description:"The reply's headers, in name order, masked as the body is (an echoed webhook-signature and Set-Cookie as ***)."`
	// Body is the reply's start, as Attempt.Response.
	Body       string `json:"body" maxLength:"4096" description:"The start of the reply as stored: at most 4 KiB of valid UTF-8 (1 KiB for attempts before deskkit kept 4), with what the channel's address, secret and the request's signatures hold masked as ***; for e-mail, which addresses the mail server took."`
	DurationMs int64  `json:"durationMs" minimum:"0" description:"How long the attempt took, in milliseconds."`
	// Error is why it failed, in the reader's language; "" on success.
	Error string `json:"error" description:"Why it failed, in the reader's language; empty if it succeeded."`
}

// MessageHeader is one header of a request sent or a reply received.
type MessageHeader struct {
	_     struct{} `additionalProperties:"false" description:"A header."`
	Name  string   `json:"name" description:"Its name, in canonical form."`
	Value string   `json:"value" description:"Its value; *** where masked."`
}

// exchange is what an attempt keeps of its exchange beside the reply's
// body: outbox.Outcome.Exchange's JSON.
type exchange struct {
	Method string      `json:"m,omitempty"`
	URL    string      `json:"u,omitempty"`
	Header [][2]string `json:"h,omitempty"`
	Lang   string      `json:"l,omitempty"`
	// Event says that the body was the event's payload (a webhook's),
	// which the event keeps; else Body is the key of the body kept in the
	// outbox's bodies, "" for none.
	Event bool        `json:"e,omitempty"`
	Body  string      `json:"b,omitempty"`
	Reply [][2]string `json:"rh,omitempty"`
}

// credentialHeaders are shown as *** always, in a request or a reply.
var credentialHeaders = map[string]bool{
	"Webhook-Signature": true, "Authorization": true, "Proxy-Authorization": true,
	"Cookie": true, "Set-Cookie": true, "X-Api-Key": true,
}

// plainHeaders are shown whole to every reader who may see deliveries.
var plainHeaders = map[string]bool{
	"Content-Type": true, "User-Agent": true, "Webhook-Id": true, "Webhook-Timestamp": true,
}

// signatures are what a request carries that a reply must not show
// again: each signature of its webhook-signature (as "v1,..." and
// alone), and a robot's sign, in its body or its query.
func signatures(req *notify.Request) []string {
	if req == nil {
		return nil
	}
	var out []string
	add := func(s string) {
		if len(s) >= minRedacted {
			out = append(out, s)
		}
	}
	for _, v := range req.Header.Values("Webhook-Signature") {
		for sig := range strings.FieldsSeq(v) {
			add(sig)
			if _, after, ok := strings.Cut(sig, ","); ok {
				add(after)
			}
		}
	}
	if req.URL != nil {
		for _, v := range req.URL.Query()["sign"] {
			add(v)
			add(url.QueryEscape(v)) // as the query wrote it
		}
	}
	var body struct {
		Sign string `json:"sign"`
	}
	if len(req.Body) > 0 && req.Body[0] == '{' && json.Unmarshal(req.Body, &body) == nil {
		add(body.Sign)
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// keptHeaders are h as an attempt keeps them: in name order, at most
// maxKeptHeaders and maxHeaderBytesKept, credentials as ***, the others
// masked by parts and cut.
func keptHeaders(h http.Header, parts []string) [][2]string {
	size := 0
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	})
	var out [][2]string
	for _, k := range names {
		for _, v := range h[k] {
			if len(out) == maxKeptHeaders {
				return out
			}
			name := http.CanonicalHeaderKey(k)
			if credentialHeaders[name] {
				v = masked
			} else {
				v = outbox.Cut(mask(v, parts), maxHeaderValueKept)
			}
			if size += len(name) + len(v); size > maxHeaderBytesKept {
				return out
			}
			out = append(out, [2]string{name, v})
		}
	}
	return out
}

// kept is what an attempt to c that sent rep.Request keeps of it: the
// exchange's JSON, and the body to keep once per rendering (nil for a
// webhook's, which is the event's). parts are what must be masked in the
// reply: c's redactions and the request's signatures.
func (c *opened) kept(rep notify.Reply, msg notify.Message, parts []string) (string, *outbox.Body) {
	req := rep.Request
	if req == nil {
		return "", nil
	}
	x := exchange{Method: req.Method, URL: c.kind.Mask(c.Address), Header: keptHeaders(req.Header, parts),
		Reply: keptHeaders(rep.Header, parts)}
	if msg.Lang != (language.Tag{}) {
		x.Lang = msg.Lang.String()
	}
	var body *outbox.Body
	if c.Type == Webhook {
		x.Event = true
	} else if len(req.Body) > 0 {
		text := mask(strings.ToValidUTF8(string(req.Body), "\uFFFD"), parts)
		sum := sha256.Sum256([]byte(text))
		body = &outbox.Body{Key: hex.EncodeToString(sum[:]), Text: text}
		x.Body = body.Key
	}
	b, err := json.Marshal(x)
	if err != nil {
		return "", body
	}
	return string(b), body
}

// Inspect returns p's tenant's delivery id inspected: the delivery, its
// channel, the event as it was sent (a webhook's payload byte for byte,
// and the title and text robots and e-mail got, in the language of the
// newest attempt), and every attempt kept with its request (method, the
// address masked, headers with signatures and credentials masked, the
// body as sent) and its answer (status, headers, the body as stored,
// duration, the error in the reader's language). What was sent is kept
// once per rendering, not per attempt: a webhook's body is the event's,
// and a robot's or an e-mail's message is kept once per event and
// language (see the outbox's deskkit_outbox_bodies). No secret or
// signature is ever stored or shown: a far end that echoes them in its
// reply's body or headers has them masked before they are stored.
//
// Only admins, and principals the Authorizer allows ActionViewDeliveries,
// may. A principal who may not see addresses (ActionViewAddresses) sees
// every URL in errors masked and every request header but Content-Type,
// User-Agent, webhook-id and webhook-timestamp as ***.
//
// Errors: those of Attempts.
func (r *ChannelRegistry) Inspect(ctx context.Context, p deskkit.Principal, deliveryID int64) (DeliveryDetail, error) {
	ctx, call := r.ops.Start(ctx, "channel.Inspect", "")
	v, err := r.inspect(ctx, p, deliveryID)
	call.End(err)
	return v, err
}

func (r *ChannelRegistry) inspect(ctx context.Context, p deskkit.Principal, deliveryID int64) (DeliveryDetail, error) {
	tenantID, err := r.authorize(ctx, p, ActionViewDeliveries)
	if err != nil {
		return DeliveryDetail{}, err
	}
	if err := deskkit.CheckID("id", deliveryID); err != nil {
		return DeliveryDetail{}, err
	}
	in, err := r.delivery(ctx, r.db, tenantID, deliveryID)
	if err != nil {
		return DeliveryDetail{}, err
	}
	full, err := r.may(ctx, p, ActionViewAddresses)
	if err != nil {
		return DeliveryDetail{}, err
	}
	l := r.reader(ctx)
	out := DeliveryDetail{Delivery: delivery(l, in, full), Channel: DeliveryChannel{ID: in.TargetID},
		Event: DeliveredEvent{ID: in.EventID, Type: in.EventType}}
	var now []string // what the channel holds now, masked again: see answerMasks
	if s, err := r.stored(ctx, tenantID, in.TargetID); err == nil {
		out.Channel.Type, out.Channel.Name = s.Type, s.Name
		now = redactions(s)
	} else if !errors.Is(err, ErrNotFound) {
		return DeliveryDetail{}, err
	}
	list, err := outbox.Attempts(ctx, r.db, tenantID, deliveryID)
	if err != nil {
		return DeliveryDetail{}, fmt.Errorf("channel: %w", err)
	}
	xs := make([]exchange, len(list))
	var keys []string
	lang := ""
	for i, a := range list {
		if a.Exchange != "" && json.Unmarshal([]byte(a.Exchange), &xs[i]) != nil {
			xs[i] = exchange{}
		}
		if xs[i].Body != "" {
			keys = append(keys, xs[i].Body)
		}
		if xs[i].Lang != "" {
			lang = xs[i].Lang
		}
	}
	bodies, err := outbox.Bodies(ctx, r.db, tenantID, in.EventID, keys)
	if err != nil {
		return DeliveryDetail{}, fmt.Errorf("channel: %w", err)
	}
	ev, err := outbox.GetEvent(ctx, r.db, tenantID, in.EventID)
	switch {
	case errors.Is(err, outbox.ErrNotFound):
	case err != nil:
		return DeliveryDetail{}, fmt.Errorf("channel: %w", err)
	default:
		out.Event.Time = ev.Time.UTC()
		if b, err := webhook.Body(ev.Type, ev.Time, compact(ev.Data)); err == nil {
			out.Event.Payload = b
		}
		tag := r.tenantLanguage(ctx, tenantID)
		if t, err := language.Parse(lang); lang != "" && err == nil {
			tag = t
		}
		m := notify.Message{ID: ev.ID, Type: ev.Type, Time: ev.Time.UTC(), Title: ev.Title, Text: ev.Text}
		if len(ev.Messages) > 0 {
			m = r.renderStored(ctx, m, ev.Messages, tag)
		}
		out.Event.Title, out.Event.Text = m.Title, m.Text
		if m.Lang != (language.Tag{}) {
			out.Event.Language = m.Lang.String()
		} else {
			out.Event.Language = language.English.String()
		}
	}
	out.Attempts = make([]AttemptDetail, len(list))
	for i, a := range list {
		x := xs[i]
		d := AttemptDetail{AttemptNo: a.No, StartedDate: a.Started.UTC(),
			Request: SentRequest{Method: x.Method, URL: x.URL, Headers: shownHeaders(x.Header, full, true)},
			Response: AttemptResponse{StatusCode: a.StatusCode, Headers: shownHeaders(x.Reply, full, false), Body: mask(a.Response, now),
				DurationMs: a.Duration.Milliseconds(), Error: l.Write(a.Error)}}
		switch {
		case x.Event && out.Event.Payload != nil:
			d.Request.Body = string(out.Event.Payload)
		case x.Body != "":
			d.Request.Body = bodies[x.Body]
		}
		for j, h := range d.Response.Headers {
			d.Response.Headers[j].Value = mask(h.Value, now)
		}
		if !full {
			d.Response.Error = maskURLs(d.Response.Error)
		}
		out.Attempts[i] = d
	}
	return out, nil
}

// compact is data compacted, as a send writes it; data when it does not
// compact.
func compact(data json.RawMessage) json.RawMessage {
	if len(data) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		return data
	}
	return b.Bytes()
}

// shownHeaders are kept headers as a reader sees them: whole to one who
// sees addresses (credentials were masked when kept), else, for a
// request's, every value but plainHeaders' as ***.
func shownHeaders(h [][2]string, full, request bool) []MessageHeader {
	out := make([]MessageHeader, len(h))
	for i, kv := range h {
		v := kv[1]
		if request && !full && !plainHeaders[kv[0]] {
			v = masked
		}
		out[i] = MessageHeader{Name: kv[0], Value: v}
	}
	return out
}
