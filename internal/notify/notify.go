package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
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

// Kind is the protocol a Target speaks.
type Kind string

// The kinds of target.
const (
	// KindWebhook: a Standard Webhooks POST signed with Target.Secret.
	KindWebhook Kind = "webhook"
	// KindWeCom: a WeCom (WeChat Work) group robot.
	KindWeCom Kind = "wecom"
	// KindDingTalk: a DingTalk custom robot, signed when Target.Secret is set.
	KindDingTalk Kind = "dingtalk"
	// KindEmail: one e-mail to each address of Target.Address.
	KindEmail Kind = "email"
)

// Target is where a message goes: a channel as the sender needs it, with
// its secret decrypted.
type Target struct {
	Kind Kind
	// Name is the channel's name: DingTalk gets it in the title and text,
	// so that a robot in keyword mode finds it; e-mail names it in the
	// footer, so that a recipient knows why the mail came.
	Name string
	// Address is the URL, or for KindEmail a comma-separated list of
	// addresses: "a@x.com,b@y.com".
	Address string
	// Secret is the webhook's "whsec_" signing secret, or DingTalk's
	// optional "SEC..." one; "" for the others.
	Secret string
	// Only, for KindEmail, limits the send to those addresses of Address
	// that it lists (a retry sends only to the addresses that failed);
	// nil sends to every address.
	Only []string

	// What Prepared parsed once, for the many sends of a batch: a
	// webhook's URL (never changed by a send) and its signer, holding
	// the decoded key.
	url    *url.URL
	signer *standardwebhooks.Webhook
}

// Prepared returns t with a webhook's address and secret parsed, so that
// the sends of a batch to one channel parse them once; other kinds are
// returned as they are. Its errors are those a send would return.
func (t Target) Prepared() (Target, error) {
	if t.Kind != KindWebhook {
		return t, nil
	}
	u, err := parseURL(t.Address)
	if err != nil {
		return t, err
	}
	signer, err := newSigner(t.Secret)
	if err != nil {
		return t, err
	}
	t.url, t.signer = u, signer
	return t, nil
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

// Sender turns messages into each kind's protocol and tells from the far
// end's answer whether it took them. It keeps no state between sends, so
// a job can call Send again for a retry, and it is safe for concurrent
// use.
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

// Send delivers m to t once: retries are the caller's (a job calls Send
// again with the same m). It returns nil when the far end took the
// message; a *Failure (errors.Is ErrFailed or ErrBlocked) saying what it
// answered or why it could not be reached; or a *deskkit.InputError when
// t or m is malformed, which is the caller's bug (channels are checked
// when stored), so nothing is sent.
func (s *Sender) Send(ctx context.Context, t Target, m Message) error {
	_, err := s.SendReply(ctx, t, m)
	return err
}

// SendReply is Send that also returns what the far end answered, on
// success and on failure: the reply's status and the start of its body,
// or for e-mail the addresses that took the message. The Reply is zero
// when nothing was answered.
func (s *Sender) SendReply(ctx context.Context, t Target, m Message) (Reply, error) {
	m, err := Checked(m)
	if err != nil {
		return Reply{}, err
	}
	return s.SendChecked(ctx, t, m)
}

// Checked is m as SendChecked takes it, with its data compacted, or the
// error of CheckMessage.
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

// SendChecked is SendReply for a message that CheckMessage has accepted
// and whose data is compact JSON (as json.Marshal writes it): a worker
// sending one event to many targets checks it once (the check decodes its
// data), and the webhook's body carries the data as it is.
func (s *Sender) SendChecked(ctx context.Context, t Target, m Message) (Reply, error) {
	switch t.Kind {
	case KindWebhook:
		return s.sendWebhook(ctx, t, m)
	case KindWeCom:
		return s.sendWeCom(ctx, t, m)
	case KindDingTalk:
		return s.sendDingTalk(ctx, t, m)
	case KindEmail:
		return s.sendEmail(ctx, t, m)
	}
	return Reply{}, deskkit.Invalid("kind", "must be one of webhook, wecom, dingtalk, email, not %q", t.Kind)
}

// reply is the Reply of an HTTP reply, nil or not.
func reply(r *safehttp.Reply) Reply {
	if r == nil {
		return Reply{}
	}
	return Reply{Status: r.Status, Body: r.Body}
}

func (s *Sender) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Sender) appName() string {
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

// parseURL checks a webhook or robot address: an absolute http or https
// URL with a host.
func parseURL(address string) (*url.URL, error) {
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

func (s *Sender) checkHTTP(t Target) error {
	if s.HTTP == nil {
		return fmt.Errorf("%w (needed for %s targets)", errNoHTTP, t.Kind)
	}
	return nil
}
