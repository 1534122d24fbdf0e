package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/language"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// The classes of a *Failure, which matches exactly one of them.
var (
	// ErrFailed: the far end did not take the message (class
	// deskkit.ErrUnavailable).
	ErrFailed = deskkit.NewError(deskkit.ErrUnavailable, "channel: delivery failed",
		"the channel did not accept the message")
	// ErrBlocked: the SSRF guard refused the address (class
	// deskkit.ErrInvalid).
	ErrBlocked = deskkit.NewError(deskkit.ErrInvalid, "channel: address blocked",
		"address points to a network that channels may not reach")
)

// Target is where a message goes: a channel as its kind's sender needs
// it, with its secret decrypted.
type Target struct {
	// Name is the channel's name: DingTalk gets it in the title and text,
	// so that a robot in keyword mode finds it; e-mail names it in the
	// footer, so that a recipient knows why the mail came.
	Name string
	// Address is the URL, or for e-mail a comma-separated list of
	// addresses: "a@x.com,b@y.com".
	Address string
	// Secret is the webhook's "whsec_" signing secret (HMAC; "" for a
	// webhook that signs with Key alone), or DingTalk's optional "SEC..."
	// one; "" for the others.
	Secret string
	// Previous is, during a webhook's rotation, the secret that Secret
	// replaced, and PreviousUntil when it stops signing: until then each
	// message carries both signatures, Secret's first, space-separated in
	// webhook-signature, as Standard Webhooks lays out. "" for none; a
	// time past PreviousUntil (by the Sender's clock) signs with Secret
	// alone.
	Previous      string
	PreviousUntil time.Time
	// Key is a webhook's ed25519 signing key ("whsk_", see
	// NewSigningKey), which signs beside Secret (or alone, when Secret is
	// "") with a "v1a," signature; "" for none. PreviousKey is, during a
	// rotation's overlap, the key it replaced, which signs until
	// PreviousUntil as Previous does.
	Key         string
	PreviousKey string
	// Headers are a webhook's custom HTTP headers, name and value, sent
	// with every request as given; nil for none. Their values may be
	// secrets: nothing logs them.
	Headers [][2]string
	// Only, for e-mail, limits the send to those addresses of Address
	// that it lists (a retry sends only to the addresses that failed);
	// nil sends to every address.
	Only []string
	// Parsed is what the target's kind parsed once for the many sends of
	// a batch (a webhook's URL and signer); nil until it did. Only that
	// kind reads it.
	Parsed any
}

// Reply is what the far end answered to one send.
type Reply struct {
	// Status is the reply's HTTP status; 0 for e-mail, or without a reply.
	Status int
	// Body is the start of the reply's body, as the HTTP client read it
	// (at most its MaxReplyBytes); nil for e-mail.
	Body []byte
	// Accepted lists, for e-mail, the addresses whose message the mail
	// server took, in the target's order.
	Accepted []string
	// Header is the reply's headers; nil for e-mail, or without a reply.
	Header http.Header
	// Request is what the send sent, nil when it sent nothing (a malformed
	// target): for HTTP kinds the request as it went, signature and all;
	// for e-mail its subject and text, with Method "SMTP". Whoever keeps
	// or shows it masks what it holds of the channel's secrets.
	Request *Request
}

// Request is a request a send made, as it went.
type Request struct {
	Method string // "POST"; "SMTP" for e-mail
	URL    *url.URL
	Header http.Header
	Body   []byte
}

// Message is one event to deliver. The same Message sent again (a retry)
// carries the same ID, so that a receiver can drop the duplicate.
type Message struct {
	// ID is "msg_" and a unique id without "." (see NewMessageID); it is
	// the webhook-id header.
	ID string
	// Type is the event type, e.g. "channel.test"; the webhook's "type".
	Type string
	// Time is when the event happened; the webhook's "timestamp".
	Time time.Time
	// Title is one line: the robots' heading, the e-mail subject.
	Title string
	// Text is markdown for the robots, plain text for e-mail.
	Text string
	// Data is the webhook's "data", a JSON object; nil sends {}.
	Data json.RawMessage
	// Lang is the language of Title and Text, in which the words a sender
	// adds (an e-mail's closing line) are written, by Messages; English
	// when zero.
	Lang     language.Tag
	Messages *deskkit.Messages
}

// Sender is what the kinds send with: the SSRF-guarded HTTP client, the
// mailer, the clock and the application's name. It keeps no state between
// sends, so a job can send again for a retry, and it is safe for
// concurrent use.
type Sender struct {
	// HTTP sends the requests of the webhook and robot kinds; required
	// for them. It is the SSRF guard: nothing is sent around it.
	HTTP *safehttp.Client
	// Mail sends e-mail; nil makes e-mail targets fail with a Failure
	// saying that no mail server is configured.
	Mail deskkit.Mailer
	// Now is the clock for the webhook-timestamp header and DingTalk's
	// signed timestamp; time.Now if nil.
	Now func() time.Time
	// AppName names the sender in e-mail subjects and footers; "deskkit"
	// if "".
	AppName string
}

// Checked is m as a kind sends it: checked by CheckMessage and with its
// data compacted. A worker sending one event to many targets checks it
// once (the check decodes its data), and the webhook's body carries the
// data as it is. Its errors are *deskkit.InputError values.
func Checked(m Message) (Message, error) {
	if err := CheckMessage(m); err != nil {
		return m, err
	}
	if len(m.Data) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, m.Data); err != nil {
			return m, deskkit.Invalid("data", "must be a JSON object")
		}
		m.Data = b.Bytes()
	}
	return m, nil
}

// ReplyOf is the Reply of an HTTP reply, nil or not.
func ReplyOf(r *safehttp.Reply) Reply {
	if r == nil {
		return Reply{}
	}
	return Reply{Status: r.Status, Body: r.Body, Header: r.Header}
}

// Answered is ReplyOf(r), the answer to a POST of body with h to u.
func Answered(u *url.URL, h http.Header, body []byte, r *safehttp.Reply) Reply {
	rep := ReplyOf(r)
	rep.Request = &Request{Method: http.MethodPost, URL: u, Header: h, Body: body}
	return rep
}

// Clock is the time by s.Now.
func (s *Sender) Clock() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// App is s.AppName, or "deskkit".
func (s *Sender) App() string {
	if strings.TrimSpace(s.AppName) == "" {
		return "deskkit"
	}
	return s.AppName
}

// maxMessageIDBytes bounds Message.ID, which travels as a header.
const maxMessageIDBytes = 100

// CheckMessage checks what every kind needs of m: Send refuses what it
// refuses, naming the field, before sending anything.
func CheckMessage(m Message) error {
	switch {
	case !strings.HasPrefix(m.ID, "msg_") || len(m.ID) == len("msg_"):
		return deskkit.Invalid("id", `must be "msg_" followed by a unique id`)
	case len(m.ID) > maxMessageIDBytes:
		return deskkit.Invalid("id", "must be at most %d bytes", maxMessageIDBytes)
	case strings.ContainsFunc(m.ID, func(r rune) bool { return r == '.' || r <= ' ' || r >= 0x7f }):
		// "." separates the signed parts of a webhook signature.
		return deskkit.Invalid("id", `must be printable ASCII without "." or spaces`)
	case m.Type == "":
		return deskkit.Invalid("type", "is required")
	case m.Time.IsZero():
		return deskkit.Invalid("time", "is required")
	case strings.TrimSpace(m.Title) == "":
		return deskkit.Invalid("title", "is required")
	case !utf8.ValidString(m.Title) || !utf8.ValidString(m.Text) || !utf8.ValidString(m.Type):
		return deskkit.Invalid("message", "title, text and type must be valid UTF-8")
	case strings.ContainsFunc(m.Title, unicode.IsControl):
		// A line break would end the markdown heading and could add a
		// header field to an e-mail.
		return deskkit.Invalid("title", "must be one line without control characters")
	case strings.ContainsFunc(m.Type, unicode.IsControl):
		return deskkit.Invalid("type", "must not contain control characters")
	}
	if m.Data != nil {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(m.Data, &obj); err != nil || obj == nil {
			return deskkit.Invalid("data", "must be a JSON object")
		}
	}
	return nil
}

// ParseURL checks a webhook or robot address: an absolute http or https
// URL with a host.
func ParseURL(address string) (*url.URL, error) {
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return nil, deskkit.Invalid("address", "must be an absolute http or https URL")
	}
	if u.User != nil {
		return nil, deskkit.Invalid("address", "must not carry a user name or password")
	}
	return u, nil
}

// errNoHTTP is returned when a Sender without HTTP gets a target that
// needs it: a bug in building the Sender.
var errNoHTTP = errors.New("notify: Sender.HTTP is nil")

// CheckHTTP says whether s can send the requests of the kind named kind
// ("webhook"): an error, not a Failure, when s has no HTTP client.
func (s *Sender) CheckHTTP(kind string) error {
	if s.HTTP == nil {
		return fmt.Errorf("%w (needed for %s targets)", errNoHTTP, kind)
	}
	return nil
}
