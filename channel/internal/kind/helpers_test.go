package kind_test

import (
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
	"github.com/deskkit/deskkit/channel/internal/kind"
	"github.com/deskkit/deskkit/channel/internal/webhook"
	"github.com/deskkit/deskkit/channel/internal/wecom"
	"github.com/deskkit/deskkit/internal/notify"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// request is what a far end received.
type request struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
}

// farEnd is a real HTTP server on loopback that records every request and
// answers with its handler.
type farEnd struct {
	URL string

	mu   sync.Mutex
	reqs []request
}

// startFarEnd starts a far end answering with h; h may block until
// done is closed (when the test ends) or the client goes away.
func startFarEnd(t *testing.T, h func(w http.ResponseWriter, r *http.Request, done <-chan struct{})) *farEnd {
	t.Helper()
	f := &farEnd{}
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("far end: reading the body: %v", err)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		h(w, r, done)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // runs first: unblocks handlers so Close can finish
	f.URL = srv.URL
	return f
}

// requests returns what the far end received so far.
func (f *farEnd) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// only returns the one request the far end received, failing the test if
// it received another number.
func (f *farEnd) only(t *testing.T) request {
	t.Helper()
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("far end received %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// answer is a handler that answers status and body.
func answer(status int, body string) func(http.ResponseWriter, *http.Request, <-chan struct{}) {
	return func(w http.ResponseWriter, _ *http.Request, _ <-chan struct{}) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// fixedNow is the clock of most tests.
var fixedNow = time.Date(2024, 5, 1, 8, 30, 15, 0, time.UTC)

// newSender returns a Sender whose client may reach loopback, with the
// fixed clock.
func newSender(t *testing.T) sender {
	t.Helper()
	return sender{&notify.Sender{
		HTTP: safehttp.New(safehttp.Config{AllowPrivateNetworks: true, Timeout: 5 * time.Second}),
		Now:  func() time.Time { return fixedNow },
	}}
}

// message returns the message most tests send.
func message() notify.Message {
	return notify.Message{
		ID:    "msg_01hx3v9k2m4n6p8r0s2t4v6w8y",
		Type:  "channel.test",
		Time:  time.Date(2024, 5, 1, 16, 30, 0, 0, time.FixedZone("CST", 8*3600)),
		Title: "Test message",
		Text:  "This is a **test** from <deskkit> & friends.",
		Data:  json.RawMessage(`{"channelId": 7}`),
	}
}

// closedURL returns an http URL on loopback where nothing listens: a
// connection to it is refused.
func closedURL(t *testing.T) string {
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

// mapResolver resolves names from a map, never through DNS.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var _ safehttp.Resolver = mapResolver(nil)

// ignoreErr compares Failures without their underlying error, which tests
// check with errors.Is, and their reasons by their English.
var ignoreErr = cmp.Options{cmpopts.IgnoreFields(notify.Failure{}, "Err"), cmp.Comparer(func(a, b deskkit.Text) bool { return a.String() == b.String() })}

// asFailure returns err as a *notify.Failure, failing the test if it is
// another error.
func asFailure(t *testing.T, err error) *notify.Failure {
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
	kindWebhook  kind.Kind = webhook.Kind{}
	kindWeCom    kind.Kind = wecom.Kind{}
	kindDingTalk kind.Kind = dingtalk.Kind{}
	kindEmail    kind.Kind = email.Kind{}
)

// dest is a target as the tests write it: the kind that sends to it, and
// the target's fields.
type dest struct {
	Kind                  kind.Kind
	Name, Address, Secret string
	Only                  []string
}

// sender sends to a dest as the registry sends to a channel: the message
// checked, then the kind's Send with the kind's Target.
type sender struct{ *notify.Sender }

func (s sender) Send(ctx context.Context, d dest, m notify.Message) error {
	_, err := s.SendReply(ctx, d, m)
	return err
}

func (s sender) SendReply(ctx context.Context, d dest, m notify.Message) (notify.Reply, error) {
	m, err := notify.Checked(m)
	if err != nil {
		return notify.Reply{}, err
	}
	t := d.Kind.Target(d.Name, d.Address, d.Secret)
	t.Only = d.Only
	return d.Kind.Send(ctx, s.Sender, t, m)
}
