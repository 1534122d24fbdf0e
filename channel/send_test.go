package channel_test

// Tests of what the registry sends: Test, its throttle, Deliver and Send,
// against real receivers on loopback and a real SMTP server, on SQLite and
// PostgreSQL.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/mailer"
	"github.com/deskkit/deskkit/internal/smtptest"
)

var sendSecret = []byte("send-test-secret-0123456789abcdef0123456789")

// receiver is a loopback webhook receiver and robot that records requests;
// status and body are what it answers.
type receiver struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
	status int
	body   string
	*httptest.Server
}

func startReceiver(t *testing.T) *receiver {
	rc := &receiver{status: http.StatusOK, body: `{"errcode":0,"errmsg":"ok"}`}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, r)
		rc.bodies = append(rc.bodies, b)
		status, body := rc.status, rc.body
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body) //nolint:errcheck // the client reads what it can
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) answer(status int, body string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.status, rc.body = status, body
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.reqs)
}

func (rc *receiver) last(t *testing.T) (*http.Request, []byte) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.reqs) == 0 {
		t.Fatal("the receiver got nothing")
	}
	return rc.reqs[len(rc.reqs)-1], rc.bodies[len(rc.bodies)-1]
}

// smtpMailer is a deskkit.Mailer over internal/mailer, as a host's would be.
type smtpMailer struct{ m *mailer.Mailer }

func (s smtpMailer) SendMail(ctx context.Context, m deskkit.Mail) error {
	return s.m.Send(ctx, mailer.Message{To: []string{m.To}, Subject: m.Subject, Text: m.Text, HTML: m.HTML})
}

type sendFixture struct {
	r     *channel.ChannelRegistry
	clock *clocktest.Clock
	recv  *receiver
	mail  *smtptest.Server
	ann   deskkit.Principal
	eve   deskkit.Principal
}

func newSendFixture(t *testing.T, db *bun.DB, cfg channel.Config) *sendFixture {
	t.Helper()
	if err := channel.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	f := &sendFixture{
		clock: clocktest.New(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)),
		recv:  startReceiver(t),
		mail:  smtptest.Start(t),
		ann:   deskkit.Principal{UserID: 1, TenantID: 10, Admin: true},
		eve:   deskkit.Principal{UserID: 2, TenantID: 20, Admin: true},
	}
	m, err := mailer.New(mailer.Config{Addr: f.mail.Addr, From: "deskkit <noreply@example.com>", TLS: mailer.TLSNone})
	if err != nil {
		t.Fatal(err)
	}
	cfg.AllowPrivateNetworks = true
	cfg.Now = f.clock.Now
	cfg.Logger = slog.New(slog.DiscardHandler)
	if f.r, err = channel.New(db, sendSecret, smtpMailer{m}, &cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *sendFixture) add(t *testing.T, p deskkit.Principal, typ, name, address string, secret *string) channel.Added {
	t.Helper()
	a, err := f.r.Add(context.Background(), p, channel.Input{Type: typ, Name: name, Address: address, Secret: secret})
	if err != nil {
		t.Fatalf("add %s %s: %v", typ, name, err)
	}
	return a
}

// verifyWebhook checks the last request's signature with the official
// library under secret, and returns its event.
func verifyWebhook(t *testing.T, rc *receiver, secret string) (http.Header, map[string]any) {
	t.Helper()
	r, body := rc.last(t)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	// The clock is fixed in 2026: the signature, not its age, is checked.
	if err := wh.VerifyIgnoringTimestamp(body, r.Header); err != nil {
		t.Fatalf("signature under %.12s...: %v", secret, err)
	}
	var ev map[string]any
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	return r.Header, ev
}

func TestTestWebhookSecrets(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newSendFixture(t, db, channel.Config{})
		ctx := context.Background()
		addr := f.recv.URL + "/hook"
		added := f.add(t, f.ann, "WEBHOOK", "ops", addr, nil)

		// Named by id: signed with the stored secret.
		res, err := f.r.Test(ctx, f.ann, channel.Input{ID: added.ID, Type: "WEBHOOK", Name: "ops", Address: addr})
		if err != nil {
			t.Fatal(err)
		}
		h, ev := verifyWebhook(t, f.recv, added.Secret)
		if res.Secret != "" || h.Get("webhook-id") != res.MessageID || !strings.HasPrefix(res.MessageID, "msg_") {
			t.Errorf("result %+v, webhook-id %q", res, h.Get("webhook-id"))
		}
		data, _ := ev["data"].(map[string]any)
		if ev["type"] != channel.TestEventType || data["name"] != "ops" || data["channelType"] != "WEBHOOK" || data["id"] != float64(added.ID) {
			t.Errorf("event %v", ev)
		}
		if ev["timestamp"] != "2026-11-22T09:00:00Z" || h.Get("webhook-timestamp") != "1795338000" {
			t.Errorf("times: body %v, header %q", ev["timestamp"], h.Get("webhook-timestamp"))
		}

		// Named by type and name: the same secret.
		if res, err = f.r.Test(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "ops", Address: addr}); err != nil || res.Secret != "" {
			t.Fatalf("by name: %+v %v", res, err)
		}
		verifyWebhook(t, f.recv, added.Secret)

		// The stored secret signs nothing for another address: a throwaway
		// one does, by id or by name.
		for _, in := range []channel.Input{
			{ID: added.ID, Type: "WEBHOOK", Name: "ops", Address: addr + "?elsewhere"},
			{Type: "WEBHOOK", Name: "ops", Address: addr + "?elsewhere"},
		} {
			res, err := f.r.Test(ctx, f.ann, in)
			if err != nil || !strings.HasPrefix(res.Secret, "whsec_") {
				t.Fatalf("%+v: %+v %v", in, res, err)
			}
			verifyWebhook(t, f.recv, res.Secret)
		}

		// An unsaved channel: a throwaway secret, returned to check with.
		res, err = f.r.Test(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "new", Address: addr})
		if err != nil || !strings.HasPrefix(res.Secret, "whsec_") || res.Secret == added.Secret {
			t.Fatalf("unsaved: %+v %v", res, err)
		}
		verifyWebhook(t, f.recv, res.Secret)

		// Another tenant's id is unknown; the name of another tenant's
		// channel does not lend its secret.
		if _, err := f.r.Test(ctx, f.eve, channel.Input{ID: added.ID, Type: "WEBHOOK", Name: "ops", Address: addr}); !errors.Is(err, channel.ErrNotFound) {
			t.Errorf("eve testing ann's id: %v", err)
		}
		res, err = f.r.Test(ctx, f.eve, channel.Input{Type: "WEBHOOK", Name: "ops", Address: addr})
		if err != nil || res.Secret == "" {
			t.Errorf("eve testing a name ann has: %+v %v", res, err)
		}
		// An id of another type.
		var in *deskkit.InputError
		if _, err := f.r.Test(ctx, f.ann, channel.Input{ID: added.ID, Type: "EMAIL", Name: "ops", Address: "a@example.com"}); !errors.As(err, &in) || in.Field != "channelType" {
			t.Errorf("an id of another type: %v", err)
		}
	})
}

func TestTestRobotsAndMail(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newSendFixture(t, db, channel.Config{})
		ctx := context.Background()
		ding := f.recv.URL + "/robot/send?access_token=tok"
		stored := "SECstored0123"
		f.add(t, f.ann, "DINGTALK", "alerts", ding, &stored)

		signedWith := func() string {
			r, _ := f.recv.last(t)
			return r.URL.Query().Get("sign")
		}
		// The stored secret signs when none is given...
		if _, err := f.r.Test(ctx, f.ann, channel.Input{Type: "WORKPLACE_CHAT", Name: "alerts", Address: ding}); err != nil {
			t.Fatal(err)
		}
		r, body := f.recv.last(t)
		if r.URL.Query().Get("sign") == "" || !strings.Contains(string(body), "alerts") {
			t.Errorf("DingTalk got %s %s", r.URL, body)
		}
		first := signedWith()
		// ...and a given one wins.
		other := "SECother4567"
		if _, err := f.r.Test(ctx, f.ann, channel.Input{Type: "WORKPLACE_CHAT", Name: "alerts", Address: ding, Secret: &other}); err != nil {
			t.Fatal(err)
		}
		if signedWith() == first {
			t.Error("a given secret did not replace the stored one")
		}
		// The stored secret does not sign for another robot address.
		if _, err := f.r.Test(ctx, f.ann, channel.Input{Type: "WORKPLACE_CHAT", Name: "alerts", Address: ding + "x"}); err != nil {
			t.Fatal(err)
		}
		if r, _ := f.recv.last(t); r.URL.Query().Get("access_token") != "tokx" || r.URL.Query().Has("sign") {
			t.Errorf("a test to another address was signed: %s", r.URL)
		}
		// DingTalk's refusal is a delivery failure that says so.
		f.recv.answer(http.StatusOK, `{"errcode":310000,"errmsg":"keywords not in content"}`)
		_, err := f.r.Test(ctx, f.ann, channel.Input{Type: "WORKPLACE_CHAT", Name: "alerts", Address: ding})
		var de *channel.DeliveryError
		if !errors.Is(err, channel.ErrDeliveryFailed) || !errors.As(err, &de) || de.Errcode != 310000 || !strings.Contains(de.ClientMessage(), "310000") {
			t.Errorf("errcode 310000: %v", err)
		}

		// E-mail: one message per address.
		if _, err := f.r.Test(ctx, f.ann, channel.Input{Type: "EMAIL", Name: "team", Address: "a@example.com, b@example.com"}); err != nil {
			t.Fatal(err)
		}
		for _, to := range []string{"a@example.com", "b@example.com"} {
			ms := f.mail.To(to)
			if len(ms) != 1 || !strings.Contains(ms[0].Subject(), "team") {
				t.Errorf("mail to %s: %d messages", to, len(ms))
			}
		}
	})
}

func TestTestFailures(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newSendFixture(t, db, channel.Config{TestsPerMinute: -1})
		ctx := context.Background()
		hook := channel.Input{Type: "WEBHOOK", Name: "ops", Address: f.recv.URL + "/hook"}
		for _, c := range []struct {
			status    int
			retryable bool
		}{{http.StatusInternalServerError, true}, {http.StatusGone, false}, {http.StatusFound, false}, {http.StatusTooManyRequests, true}} {
			f.recv.answer(c.status, "{}")
			_, err := f.r.Test(ctx, f.ann, hook)
			var de *channel.DeliveryError
			if !errors.As(err, &de) || !errors.Is(err, channel.ErrDeliveryFailed) || de.Status != c.status || de.Retryable != c.retryable {
				t.Errorf("receiver answering %d: %v (%+v)", c.status, err, de)
			}
		}

		// A name that resolves to loopback, with private networks not
		// allowed: refused before connecting.
		before := f.recv.count()
		port := f.recv.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
		strict, err := channel.New(db, sendSecret, nil, &channel.Config{
			Resolver: loopbackResolver{}, Now: f.clock.Now, TestsPerMinute: -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		u := url.URL{Scheme: "http", Host: "hooks.example.com:" + strconv.Itoa(int(port)), Path: "/hook"}
		_, err = strict.Test(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "ops", Address: u.String()})
		var blocked *channel.DeliveryError
		if !errors.Is(err, channel.ErrAddressBlocked) || errors.Is(err, channel.ErrDeliveryFailed) ||
			!errors.As(err, &blocked) || !blocked.Blocked || blocked.Retryable || blocked.ClientMessage() == "" {
			t.Errorf("a name resolving to loopback: %#v, want a *DeliveryError with Blocked", err)
		}
		// A literal one is refused as input.
		if _, err := strict.Test(ctx, f.ann, channel.Input{Type: "WEBHOOK", Name: "ops", Address: "http://127.1/hook"}); !errors.Is(err, channel.ErrAddressBlocked) {
			t.Errorf("127.1: %v", err)
		}
		if f.recv.count() != before {
			t.Errorf("the guard let %d requests through", f.recv.count()-before)
		}
		// No mailer: EMAIL channels fail their tests, saying why.
		if _, err := strict.Test(ctx, f.ann, channel.Input{Type: "EMAIL", Name: "team", Address: "a@example.com"}); !errors.Is(err, channel.ErrDeliveryFailed) {
			t.Errorf("e-mail without a mailer: %v", err)
		}
	})
}

type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

func TestTestThrottle(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newSendFixture(t, db, channel.Config{TestsPerMinute: 2})
		ctx := context.Background()
		hook := channel.Input{Type: "WEBHOOK", Name: "ops", Address: f.recv.URL + "/hook"}
		f.recv.answer(http.StatusInternalServerError, "{}") // failures count too
		for range 2 {
			if _, err := f.r.Test(ctx, f.ann, hook); !errors.Is(err, channel.ErrDeliveryFailed) {
				t.Fatalf("within the throttle: %v", err)
			}
		}
		sent := f.recv.count()
		f.clock.Advance(20 * time.Second)
		_, err := f.r.Test(ctx, f.ann, hook)
		var rl *deskkit.RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != 40*time.Second {
			t.Fatalf("the 3rd test: %v", err)
		}
		if f.recv.count() != sent {
			t.Error("a throttled test was sent")
		}
		// An e-mail test counts one per address: eve's test of three
		// addresses does not fit in two.
		if _, err := f.r.Test(ctx, f.eve, channel.Input{Type: "EMAIL", Name: "team", Address: "a@example.com,b@example.com,c@example.com"}); !errors.As(err, &rl) {
			t.Fatalf("an e-mail test of 3 addresses within 2: %v", err)
		}
		if n := len(f.mail.Messages()); n != 0 {
			t.Errorf("%d mails went out", n)
		}
		// Bad input is refused before the throttle counts it.
		if _, err := f.r.Test(ctx, f.eve, channel.Input{Type: "WEBHOOK", Name: "", Address: hook.Address}); !errors.Is(err, deskkit.ErrInvalid) {
			t.Fatalf("no name: %v", err)
		}
		// Per tenant: eve still has her two.
		f.recv.answer(http.StatusNoContent, "")
		for range 2 {
			if _, err := f.r.Test(ctx, f.eve, hook); err != nil {
				t.Fatalf("eve: %v", err)
			}
		}
		// A second registry on the same database (another replica) sees
		// the same count.
		other, err := channel.New(db, sendSecret, nil, &channel.Config{AllowPrivateNetworks: true, Now: f.clock.Now, TestsPerMinute: 2})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Test(ctx, f.ann, hook); !errors.As(err, &rl) {
			t.Fatalf("ann on another replica: %v", err)
		}
		f.clock.Advance(40 * time.Second)
		if _, err := other.Test(ctx, f.ann, hook); err != nil {
			t.Fatalf("after the minute: %v", err)
		}
		if n, err := f.r.Purge(ctx); err != nil || n != 0 {
			t.Errorf("purge with open windows: %d %v", n, err)
		}
		f.clock.Advance(2 * time.Minute)
		if n, err := f.r.Purge(ctx); err != nil || n != 2 {
			t.Errorf("purge after the windows: %d %v, want 2", n, err)
		}
	})
}

func TestDeliver(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newSendFixture(t, db, channel.Config{})
		ctx := context.Background()
		hook := f.add(t, f.ann, "WEBHOOK", "ops", f.recv.URL+"/hook", nil)
		wecom := f.add(t, f.ann, "WECHAT", "chat", f.recv.URL+"/cgi-bin/webhook/send?key=k", nil)
		mail := f.add(t, f.ann, "EMAIL", "team", "a@example.com", nil)
		theirs := f.add(t, f.eve, "WEBHOOK", "theirs", f.recv.URL+"/hook", nil)

		ev := channel.Event{ID: channel.NewEventID(), Type: "task.trashed", Title: "Task T1 was trashed", Text: "by ann:\r\n- T1\n\t- its sprint", Data: map[string]any{"taskId": 7}}
		res, err := f.r.Deliver(ctx, 10, ev, []int64{mail.ID, hook.ID, theirs.ID, wecom.ID, hook.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 4 {
			t.Fatalf("results: %+v", res)
		}
		for _, r := range res {
			switch r.ChannelID {
			case theirs.ID:
				if !errors.Is(r.Err, channel.ErrNotFound) || r.Type != "" {
					t.Errorf("another tenant's channel: %+v", r)
				}
			default:
				if r.Err != nil || r.Name == "" {
					t.Errorf("channel %d: %+v", r.ChannelID, r)
				}
			}
		}
		for i := 1; i < len(res); i++ {
			if res[i-1].ChannelID >= res[i].ChannelID {
				t.Errorf("results out of id order: %+v", res)
			}
		}
		if ms := f.mail.To("a@example.com"); len(ms) != 1 {
			t.Errorf("%d mails", len(ms))
		} else if parts, err := ms[0].Parts(); err != nil || !strings.Contains(parts["text/plain"], "by ann:\n- T1\n\t- its sprint") {
			t.Errorf("the mail's lines: %q %v", parts["text/plain"], err)
		}
		// The webhook got the event under its id and secret.
		var hookReq *http.Request
		var hookBody []byte
		f.recv.mu.Lock()
		for i, r := range f.recv.reqs {
			if r.URL.Path == "/hook" {
				hookReq, hookBody = r, f.recv.bodies[i]
			}
		}
		f.recv.mu.Unlock()
		wh, _ := standardwebhooks.NewWebhook(hook.Secret)
		if hookReq == nil || wh.VerifyIgnoringTimestamp(hookBody, hookReq.Header) != nil || hookReq.Header.Get("webhook-id") != ev.ID ||
			!strings.Contains(string(hookBody), `"data":{"taskId":7}`) {
			t.Errorf("webhook request %v %s", hookReq, hookBody)
		}

		// No ids: every channel of the tenant; a failure stays in its
		// result and is retryable or not.
		f.recv.answer(http.StatusServiceUnavailable, "{}")
		res, err = f.r.Deliver(ctx, 10, ev, nil)
		if err != nil || len(res) != 3 {
			t.Fatalf("to all: %+v %v", res, err)
		}
		var de *channel.DeliveryError
		if !errors.As(res[0].Err, &de) || !de.Retryable || res[2].Err != nil {
			t.Errorf("to all with the receiver down: %+v", res)
		}
		if err := f.r.Send(ctx, 10, mail.ID, ev); err != nil {
			t.Errorf("Send to the e-mail channel: %v", err)
		}
		if err := f.r.Send(ctx, 10, theirs.ID, ev); !errors.Is(err, channel.ErrNotFound) {
			t.Errorf("Send to another tenant's channel: %v", err)
		}

		// Bad events are refused whole, naming the field.
		for _, c := range []struct {
			field string
			ev    channel.Event
		}{
			{"type", channel.Event{Type: "Task Trashed", Title: "x"}},
			{"title", channel.Event{Type: "task.trashed"}},
			{"id", channel.Event{ID: "msg.1", Type: "task.trashed", Title: "x"}},
			{"id", channel.Event{ID: "abc", Type: "task.trashed", Title: "x"}},
			{"data", channel.Event{Type: "task.trashed", Title: "x", Data: []int{1}}},
			{"text", channel.Event{Type: "task.trashed", Title: "x", Text: "a\x00b"}},
			{"text", channel.Event{Type: "task.trashed", Title: "x", Text: strings.Repeat("\n", channel.MaxTextRunes+1)}},
		} {
			var in *deskkit.InputError
			if _, err := f.r.Deliver(ctx, 10, c.ev, nil); !errors.As(err, &in) || in.Field != c.field {
				t.Errorf("event without a good %s (%+v): %v", c.field, c.ev, err)
			}
		}
	})
}

// TestTestTimeout: a test has Config.Timeout in all, whatever the
// senders' own bounds: two addresses on a mail server that never answers,
// each with an hour to spare, still end within it.
func TestTestTimeout(t *testing.T) {
	db := dbtest.OpenSQLite(t)
	if err := channel.Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	addr, _ := smtptest.StartSilent(t)
	m, err := mailer.New(mailer.Config{Addr: addr, From: "deskkit <noreply@example.com>", TLS: mailer.TLSNone, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r, err := channel.New(db, sendSecret, smtpMailer{m}, &channel.Config{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Test(context.Background(), deskkit.Principal{UserID: 1, TenantID: 1, Admin: true},
			channel.Input{Type: "EMAIL", Name: "team", Address: "a@example.com,b@example.com"})
		done <- err
	}()
	select {
	case err := <-done:
		var de *channel.DeliveryError
		if !errors.As(err, &de) || !errors.Is(err, context.DeadlineExceeded) || !de.Retryable {
			t.Errorf("a test past its timeout: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the test did not end within 10s of a 200ms timeout")
	}
}
