package channel

import (
	"errors"
	"time"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/notify"
)

// DeliveryError is ErrDeliveryFailed (or, with Blocked, ErrAddressBlocked)
// for one message: what the far end answered, or why it could not be
// reached, in words for the client and in fields for a job that decides
// whether to try again.
//
// Its message says what the far end answered: its status, a redirect
// (never followed; where it points is named as a masked address is shown,
// its scheme and host followed by "/***", since a Location may carry a
// token as the address may), a robot's errcode and errmsg (DingTalk's
// 310000, a keyword, signature or timestamp refused, and 130101, over 20
// messages a minute, are spelled out), a timeout, a refused connection.
// What the channel's address and secret hold is masked in it as in an
// Attempt's error.
type DeliveryError struct {
	// Reason is what happened, fit to show the client: "the webhook
	// answered 410 Gone", "WeCom answered errcode 93000: invalid webhook
	// url", "timed out after 10s", "connection refused": a message, which
	// LocalizedMessage writes in the reader's language. What it quotes of
	// the far end is kept as it came, but cut short and without control
	// characters.
	Reason deskkit.Text
	// Status is the reply's HTTP status, 0 without a reply.
	Status int
	// Errcode and Errmsg are what a robot answered (0 and "" for others);
	// Errmsg is cut and cleaned as Reason is.
	Errcode int
	Errmsg  string
	// Retryable tells a job whether the same message may succeed later:
	// true after a timeout, a connection error, 408, 429, 5xx, a robot's
	// rate limit or "system busy", or a temporary refusal of the mail
	// server; false after a redirect, another 4xx, another errcode, a
	// blocked address, or a permanent refusal of the mail server.
	Retryable bool
	// RetryAfter is the wait a Retry-After header asked for (429, 503), 0
	// if none.
	RetryAfter time.Duration
	// Recipients lists, for an e-mail channel, the addresses the message
	// did not reach, in the channel's order; the others got it.
	Recipients []string
	// Blocked says that the SSRF guard refused the address: the error then
	// matches ErrAddressBlocked (class deskkit.ErrInvalid) rather than
	// ErrDeliveryFailed (class deskkit.ErrUnavailable).
	Blocked bool
	// Response is the start of the reply, as an attempt keeps it: at most
	// 4 KiB of valid UTF-8, with what the channel's address and secret
	// and the request's signatures hold masked as ***; "" without one.
	Response string
	// Err is the underlying error, if any: for logs, never for the client.
	Err error
}

// httpapi sends a DeliveryError's ClientMessage as the envelope's msg.
var _ deskkit.ClientMessager = (*DeliveryError)(nil)

// Error is for logs: the reason and the underlying error.
func (e *DeliveryError) Error() string {
	if e.Err != nil {
		return "channel: " + e.Reason.String() + ": " + e.Err.Error()
	}
	return "channel: " + e.Reason.String()
}

// Unwrap returns Err.
func (e *DeliveryError) Unwrap() error { return e.Err }

// ClientMessage is Reason in English.
func (e *DeliveryError) ClientMessage() string { return e.Reason.String() }

// LocalizedMessage is Reason in tag's language. What the far end said
// (a robot's errmsg, an HTTP status's name) is quoted as it came.
func (e *DeliveryError) LocalizedMessage(m *deskkit.Messages, tag language.Tag) string {
	return e.Reason.LocalizedMessage(m, tag)
}

// Is makes errors.Is(e, ErrAddressBlocked) hold when Blocked is set, and
// errors.Is(e, ErrDeliveryFailed) otherwise; each with its class.
func (e *DeliveryError) Is(target error) bool {
	if e.Blocked {
		return target == ErrAddressBlocked || target == deskkit.ErrInvalid
	}
	return target == ErrDeliveryFailed || target == deskkit.ErrUnavailable
}

// publicError turns the senders' *notify.Failure of a message to c into a
// *DeliveryError, so that no internal type reaches a caller, with what c's
// address and secret hold masked in its texts (see redact); other errors
// pass as they are.
func publicError(err error, c storedChannel) error {
	var f *notify.Failure
	if !errors.As(err, &f) {
		return err
	}
	return &DeliveryError{
		Reason: redactText(f.Reason, c), Status: f.Status, Errcode: f.Errcode, Errmsg: redact(f.Errmsg, c),
		Retryable: f.Retryable, RetryAfter: f.RetryAfter, Recipients: f.Recipients,
		Blocked: f.Blocked(), Err: f.Err,
	}
}

// redactText is t with what c's address and secret hold masked in its
// arguments (see redact), which are what it quotes, so that it is masked
// in every language it is written in.
func redactText(t deskkit.Text, c storedChannel) deskkit.Text {
	parts := redactions(c)
	return t.MapStrings(func(s string) string { return mask(s, parts) })
}

// redactText is redactText(t, o.storedChannel), with the redactions listed
// once per version of the channel.
func (o *opened) redactText(t deskkit.Text) deskkit.Text { return t.MapStrings(o.redact) }
