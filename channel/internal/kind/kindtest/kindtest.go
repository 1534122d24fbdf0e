// Package kindtest helps test a kind of channel: a real HTTP server on
// loopback that records what it receives (the far end), a Sender whose
// guard lets it reach loopback, with a fixed clock, and a send as the
// registry makes it.
package kindtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel/internal/dingtalk"
	"github.com/deskkit/deskkit/channel/internal/email"
	"github.com/deskkit/deskkit/channel/internal/feishu"
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/channel/internal/slack"
	"github.com/deskkit/deskkit/channel/internal/webhook"
	"github.com/deskkit/deskkit/channel/internal/wecom"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// Request is what a far end received.
type Request struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
}

// FarEnd is a real HTTP server on loopback that records every Request and
// answers with its handler.
type FarEnd struct {
	URL string

	mu   sync.Mutex
	reqs []Request
}

// StartFarEnd starts a far end answering with h; h may block until
// done is closed (when the test ends) or the client goes away. h may read
// the request's body, which the far end has recorded already.
func StartFarEnd(t *testing.T, h func(w http.ResponseWriter, r *http.Request, done <-chan struct{})) *FarEnd {
	t.Helper()
	f := &FarEnd{}
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("far end: reading the body: %v", err)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body)) // for h to read as a far end does
		h(w, r, done)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // runs first: unblocks handlers so Close can finish
	f.URL = srv.URL
	return f
}

// Requests returns what the far end received so far.
func (f *FarEnd) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.reqs...)
}

// Only returns the one Request the far end received, failing the test if
// it received another number.
func (f *FarEnd) Only(t *testing.T) Request {
	t.Helper()
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("far end received %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// Answer is a handler that answers status and body.
func Answer(status int, body string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
	return func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// FixedNow is the clock of most tests.
var FixedNow = time.Date(2024, 5, 1, 8, 30, 15, 0, time.UTC)

// NewSender returns a Sender whose client may reach loopback, with the
// fixed clock.
func NewSender(t *testing.T) Sender {
	t.Helper()
	return Sender{&notify.Sender{
		HTTP: safehttp.New(safehttp.Config{AllowPrivateNetworks: true, Timeout: 5 * time.Second}),
		Now:  func() time.Time { return FixedNow },
	}}
}

// Message returns the Message most tests send.
func Message() notify.Message {
	return notify.Message{
		ID:    "msg_01hx3v9k2m4n6p8r0s2t4v6w8y",
		Type:  "channel.test",
		Time:  time.Date(2024, 5, 1, 16, 30, 0, 0, time.FixedZone("CST", 8*3600)),
		Title: "Test message",
		Text:  "This is a **test** from <deskkit> & friends.",
		Data:  json.RawMessage(`{"channelId": 7}`),
	}
}

// ClosedURL returns an http URL on loopback where nothing listens: a
// connection to it is refused.
func ClosedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// MapResolver resolves names from a map, never through DNS.
type MapResolver map[string][]netip.Addr

func (m MapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var _ safehttp.Resolver = MapResolver(nil)

// IgnoreErr compares Failures without their underlying error, which tests
// check with errors.Is, and their reasons by their English.
var IgnoreErr = cmp.Options{cmpopts.IgnoreFields(notify.Failure{}, "Err"), cmp.Comparer(func(a, b deskkit.Text) bool { return a.String() == b.String() })}

// AsFailure returns err as a *notify.Failure, failing the test if it is
// another error.
func AsFailure(t *testing.T, err error) *notify.Failure {
	t.Helper()
	if err == nil {
		return nil
	}
	f, ok := err.(*notify.Failure)
	if !ok {
		t.Fatalf("Send returned %T %v, want *notify.Failure", err, err)
	}
	return f
}

// The kinds, as the tests name them.
var (
	KindWebhook  kind.Kind = webhook.Kind{}
	KindWeCom    kind.Kind = wecom.Kind{}
	KindDingTalk kind.Kind = dingtalk.Kind{}
	KindEmail    kind.Kind = email.Kind{}
	KindFeishu   kind.Kind = feishu.Kind{}
	KindSlack    kind.Kind = slack.Kind{}
)

// Dest is a target as the tests write it: the kind that sends to it, and
// the target's fields.
type Dest struct {
	Kind                  kind.Kind
	Name, Address, Secret string
	Only                  []string
	// Headers are the channel's custom headers (notify.Target.Headers).
	Headers [][2]string
}

// Sender sends to a Dest as the registry sends to a channel: the Message
// checked, then the kind's Send with the kind's Target.
type Sender struct{ *notify.Sender }

// Send is SendReply without the reply.
func (s Sender) Send(ctx context.Context, d Dest, m notify.Message) error {
	_, err := s.SendReply(ctx, d, m)
	return err
}

// SendReply sends m to d once and returns what the far end answered.
func (s Sender) SendReply(ctx context.Context, d Dest, m notify.Message) (notify.Reply, error) {
	m, err := notify.Checked(m)
	if err != nil {
		return notify.Reply{}, err
	}
	t := d.Kind.Target(d.Name, d.Address, d.Secret)
	t.Only, t.Headers = d.Only, d.Headers
	return d.Kind.Send(ctx, s.Sender, t, m)
}

// MailerFunc is a deskkit.Mailer that calls itself.
type MailerFunc func(ctx context.Context, m deskkit.Mail) error

// SendMail calls f.
func (f MailerFunc) SendMail(ctx context.Context, m deskkit.Mail) error { return f(ctx, m) }

// Decode parses a request body as JSON, for comparison.
func Decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body %q is not JSON: %v", b, err)
	}
	return v
}

// RobotView is what a robot's test compares of a request.
type RobotView struct {
	Method, Path, RawQuery, ContentType string
	Body                                any
}

// ViewOf is r as a robot's test compares it.
func ViewOf(t *testing.T, r Request) RobotView {
	return RobotView{Method: r.Method, Path: r.Path, RawQuery: r.RawQuery, ContentType: r.Header.Get("Content-Type"), Body: Decode(t, r.Body)}
}
