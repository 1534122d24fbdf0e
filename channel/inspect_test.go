package channel_test

// A delivery inspected (Inspect): the event as sent, byte for byte, and
// every attempt's request and answer, with no secret or signature in any
// answer, any stored row or any log line, also when the far end echoes
// them back in its reply's body and headers; on SQLite and PostgreSQL.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/clocktest"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/internal/mailer"
	"github.com/deskkit/deskkit/internal/smtptest"
)

// echoServer answers every request with its status and a body and
// headers that echo the request whole: its URI, headers and body.
type echoServer struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	sigs   []string // every webhook-signature it got
	leak   string   // a secret it writes in its answer's body and a header
	bodies [][]byte
}

func startEcho(t *testing.T) *echoServer {
	e := &echoServer{status: http.StatusInternalServerError}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.sigs = append(e.sigs, r.Header.Get("webhook-signature"))
		e.bodies = append(e.bodies, body)
		status, leak := e.status, e.leak
		e.mu.Unlock()
		w.Header().Set("X-Leak", leak)
		var echo strings.Builder
		echo.WriteString("Cannot POST " + r.RequestURI + "\n")
		for k, vs := range r.Header {
			for _, v := range vs {
				echo.WriteString(k + ": " + v + "\n")
				w.Header().Add("X-Echo-"+k, v)
			}
		}
		w.Header().Set("Webhook-Signature", r.Header.Get("webhook-signature"))
		echo.WriteString("secret: " + leak + "\n")
		echo.Write(body)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, echo.String())
	}))
	t.Cleanup(e.Close)
	return e
}

// viewer may see deliveries but not addresses.
type viewer struct{}

func (viewer) CanManageChannels(_ context.Context, _ deskkit.Principal, a channel.Action) (bool, error) {
	return a == channel.ActionViewDeliveries, nil
}

func TestInspectShowsNoSecretOrSignature(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx := context.Background()
		if err := channel.Migrate(ctx, db); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		var logMu sync.Mutex
		clock := clocktest.New(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
		smtp := smtptest.Start(t)
		m, err := mailer.New(mailer.Config{Addr: smtp.Addr, From: "deskkit <noreply@example.com>", TLS: mailer.TLSNone})
		if err != nil {
			t.Fatal(err)
		}
		cfg := channel.Config{AllowPrivateNetworks: true, Now: clock.Now, RetrySchedule: shortSchedule, Authorizer: viewer{},
			Logger: slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		r, err := channel.New(db, sendSecret, smtpMailer{m}, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.RegisterEventTypes(hostTypes...); err != nil {
			t.Fatal(err)
		}
		admin := deskkit.Principal{UserID: 1, TenantID: 10, Admin: true}
		member := deskkit.Principal{UserID: 3, TenantID: 10}
		other := deskkit.Principal{UserID: 2, TenantID: 20, Admin: true}

		echo := startEcho(t)
		const token = "t0k3nABCDEFGHIJKLMNOP"
		hook, err := r.Add(ctx, admin, channel.Input{Type: "WEBHOOK", Name: "echo", Address: echo.URL + "/hook/" + token + "?key=s3cr3tv4lue"})
		if err != nil {
			t.Fatal(err)
		}
		rotated, err := r.RotateSecret(ctx, admin, hook.ID, channel.SecretRotation{Signing: channel.SigningBoth})
		if err != nil {
			t.Fatal(err)
		}
		echo.leak = rotated.Secret
		mail, err := r.Add(ctx, admin, channel.Input{Type: "EMAIL", Name: "ops mail", Address: "ops@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		ev := newEvent("task.trashed")
		if err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error { return r.Publish(ctx, tx, 10, ev) }); err != nil {
			t.Fatal(err)
		}
		// Two attempts: a 500, then a 200.
		if _, err := channel.RunOnce(ctx, r); err != nil {
			t.Fatal(err)
		}
		clock.Advance(2 * time.Minute)
		echo.mu.Lock()
		echo.status = http.StatusOK
		echo.mu.Unlock()
		if _, err := channel.RunOnce(ctx, r); err != nil {
			t.Fatal(err)
		}
		// A test of the stored channel, which fails, and one that succeeds.
		echo.mu.Lock()
		echo.status = http.StatusBadRequest
		echo.mu.Unlock()
		_, err = r.Test(ctx, admin, channel.Input{ID: hook.ID, Type: "WEBHOOK", Name: "echo", Address: hook.Address})
		var de *channel.DeliveryError
		if !errors.As(err, &de) || de.Status != http.StatusBadRequest || !strings.Contains(de.Response, "Cannot POST") {
			t.Fatalf("failed test: %v (%+v)", err, de)
		}
		echo.mu.Lock()
		echo.status = http.StatusOK
		echo.mu.Unlock()
		res, err := r.Test(ctx, admin, channel.Input{ID: hook.ID, Type: "WEBHOOK", Name: "echo", Address: hook.Address})
		if err != nil || res.StatusCode != http.StatusOK || !strings.Contains(res.Response, "Cannot POST") {
			t.Fatalf("test: %+v, %v", res, err)
		}

		hd := deliveryOf(t, r, admin, hook.ID, ev.ID)
		got, err := r.Inspect(ctx, admin, hd.ID)
		if err != nil {
			t.Fatal(err)
		}
		echo.mu.Lock()
		var sent []byte
		for _, b := range echo.bodies {
			if bytes.Contains(b, []byte(`"type":"task.trashed"`)) {
				sent = b
				break
			}
		}
		sigs := append([]string(nil), echo.sigs...)
		echo.mu.Unlock()
		if string(got.Event.Payload) != string(sent) {
			t.Errorf("payload %s, sent %s", got.Event.Payload, sent)
		}
		if got.Event.ID != ev.ID || got.Event.Type != "task.trashed" || got.Event.Title != "Task 7 was trashed" || got.Channel.Name != "echo" {
			t.Errorf("event %+v, channel %+v", got.Event, got.Channel)
		}
		if len(got.Attempts) != 2 {
			t.Fatalf("attempts: %+v", got.Attempts)
		}
		for i, a := range got.Attempts {
			if a.Request.Method != http.MethodPost || a.Request.URL != strings.Replace(echo.URL, "http://", "http://", 1)+"/***" ||
				a.Request.Body != string(sent) {
				t.Errorf("attempt %d's request: %+v", i+1, a.Request)
			}
			if header(a.Request.Headers, "Webhook-Signature") != "***" || header(a.Request.Headers, "Webhook-Id") != ev.ID ||
				header(a.Request.Headers, "Content-Type") != "application/json" {
				t.Errorf("attempt %d's request headers: %+v", i+1, a.Request.Headers)
			}
			if header(a.Response.Headers, "Webhook-Signature") != "***" || header(a.Response.Headers, "X-Echo-Webhook-Signature") != "*** *** ***" {
				t.Errorf("attempt %d's answer headers: %+v", i+1, a.Response.Headers)
			}
			if header(a.Response.Headers, "X-Leak") != "***" || !strings.Contains(a.Response.Body, "secret: ***\n") {
				t.Errorf("attempt %d's answer shows the secret: %+v", i+1, a.Response)
			}
			if !strings.Contains(a.Response.Body, "Cannot POST ***\n") || !strings.Contains(a.Response.Body, `"targetName":"Fix the login"`) {
				t.Errorf("attempt %d's answer body: %s", i+1, a.Response.Body)
			}
		}
		if got.Attempts[0].Response.StatusCode != 500 || got.Attempts[0].Response.Error == "" || got.Attempts[1].Response.StatusCode != 200 {
			t.Errorf("answers: %+v", got.Attempts)
		}

		// The member sees every request header but the plain ones masked.
		seen, err := r.Inspect(ctx, member, hd.ID)
		if err != nil {
			t.Fatal(err)
		}
		if h := seen.Attempts[0].Request.Headers; header(h, "Webhook-Id") != ev.ID || header(h, "Webhook-Timestamp") == "***" {
			t.Errorf("member's request headers: %+v", h)
		}
		// Another tenant's admin finds nothing.
		if _, err := r.Inspect(ctx, other, hd.ID); !errors.Is(err, channel.ErrNotFound) {
			t.Errorf("another tenant: %v", err)
		}

		// The e-mail's message is kept once, and shown as sent.
		md := deliveryOf(t, r, admin, mail.ID, ev.ID)
		mailed, err := r.Inspect(ctx, admin, md.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(mailed.Attempts) != 1 || mailed.Attempts[0].Request.Method != "SMTP" ||
			!strings.Contains(mailed.Attempts[0].Request.Body, "Subject: [deskkit] Task 7 was trashed") ||
			!strings.Contains(mailed.Attempts[0].Request.Body, "by Ann") {
			t.Errorf("e-mail attempt: %+v", mailed.Attempts)
		}
		var kept int
		if err := db.NewRaw("SELECT COUNT(*) FROM deskkit_outbox_bodies").Scan(ctx, &kept); err != nil || kept != 1 {
			t.Errorf("bodies kept: %d, %v", kept, err)
		}

		// No secret, signature or token anywhere.
		secrets := []string{token, "s3cr3tv4lue"}
		stored, err := r.Get(ctx, admin, hook.ID)
		if err != nil {
			t.Fatal(err)
		}
		_ = stored
		revealed, err := r.RevealSecret(ctx, admin, hook.ID)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, revealed.Secret, strings.TrimPrefix(revealed.Secret, "whsec_"), hook.Secret, strings.TrimPrefix(hook.Secret, "whsec_"))
		if revealed.Secret == "" {
			t.Fatal("no secret revealed")
		}
		for _, s := range sigs {
			for sig := range strings.FieldsSeq(s) {
				_, b64, _ := strings.Cut(sig, ",")
				secrets = append(secrets, sig, b64)
			}
		}
		var answers []string
		for _, p := range []deskkit.Principal{admin, member} {
			for _, id := range []int64{hd.ID, md.ID} {
				d, err := r.Inspect(ctx, p, id)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(d)
				answers = append(answers, string(b))
				as, err := r.Attempts(ctx, p, id)
				if err != nil {
					t.Fatal(err)
				}
				b, _ = json.Marshal(as)
				answers = append(answers, string(b))
			}
		}
		b, _ := json.Marshal(de)
		answers = append(answers, string(b), de.Error(), de.Response, res.Response)
		var rows []string
		if err := db.NewRaw("SELECT COALESCE(exchange, '') || ' ' || COALESCE(response, '') || ' ' || COALESCE(error, '') FROM deskkit_outbox_attempts").Scan(ctx, &rows); err != nil {
			t.Fatal(err)
		}
		var bodies []string
		if err := db.NewRaw("SELECT body FROM deskkit_outbox_bodies").Scan(ctx, &bodies); err != nil {
			t.Fatal(err)
		}
		logMu.Lock()
		logged := logs.String()
		logMu.Unlock()
		for what, text := range map[string]string{
			"answers": strings.Join(answers, "\n"), "stored attempts": strings.Join(rows, "\n"),
			"stored bodies": strings.Join(bodies, "\n"), "log": logged,
		} {
			wantNoLeak(t, what, text, secrets...)
		}
		if len(sigs) < 4 || !strings.Contains(sigs[0], "v1a,") {
			t.Errorf("signatures sent: %q", sigs)
		}
	})
}

func header(h []channel.MessageHeader, name string) string {
	for _, kv := range h {
		if kv.Name == name {
			return kv.Value
		}
	}
	return ""
}

// deliveryOf is the delivery of event eventID to channelID.
func deliveryOf(t *testing.T, r *channel.ChannelRegistry, p deskkit.Principal, channelID int64, eventID string) channel.Delivery {
	t.Helper()
	page, err := r.Deliveries(context.Background(), p, channelID, channel.DeliveryFilter{}, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range page.List {
		if d.EventID == eventID {
			return d
		}
	}
	t.Fatalf("no delivery of %s to %d: %+v", eventID, channelID, page)
	return channel.Delivery{}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Robots: each attempt's request shows the robot's address with its key
// masked and the message as sent, kept once per event and rendering
// however many attempts sent it, with DingTalk's sign masked everywhere.
func TestInspectRobots(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		f := newEvFixture(t, db, channel.Config{})
		ctx := context.Background()
		secret := "SECrobotsecret0123"
		ding := f.add(t, f.ann, "DINGTALK", "alerts", f.recv.URL+"/robot/send?access_token=d1ngt0ken", &secret)
		wecom := f.add(t, f.ann, "WECHAT", "wecom", f.recv.URL+"/cgi-bin/webhook/send?key=w3c0mkey", nil)
		ev := newEvent("task.trashed")
		f.recv.answer(http.StatusOK, `{"errcode":-1,"errmsg":"system busy"}`)
		f.publish(t, 10, ev)
		f.run(t)
		f.clock.Advance(2 * time.Minute)
		f.recv.answer(http.StatusOK, `{"errcode":0,"errmsg":"ok"}`)
		f.run(t)
		var signs []string
		f.recv.mu.Lock()
		for _, r := range f.recv.reqs {
			if s := r.URL.Query().Get("sign"); s != "" {
				signs = append(signs, s)
			}
		}
		f.recv.mu.Unlock()
		if len(signs) != 2 {
			t.Fatalf("DingTalk got %d signed messages, want 2", len(signs))
		}
		var answers []string
		for _, c := range []struct {
			id   int64
			url  string
			text string
		}{
			{ding.ID, f.recv.URL + "/robot/send?access_token=***", "Task 7 was trashed"},
			{wecom.ID, f.recv.URL + "/cgi-bin/webhook/send?key=***", "Task 7 was trashed"},
		} {
			d, err := f.r.Inspect(ctx, f.ann, deliveryOf(t, f.r, f.ann, c.id, ev.ID).ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Attempts) != 2 || d.Delivery.Status != channel.DeliverySucceeded {
				t.Fatalf("%d: %+v", c.id, d)
			}
			for _, a := range d.Attempts {
				if a.Request.URL != c.url || !strings.Contains(a.Request.Body, c.text) || a.Request.Body != d.Attempts[0].Request.Body {
					t.Errorf("%d: request %+v", c.id, a.Request)
				}
			}
			if d.Attempts[0].Response.Error == "" || d.Attempts[1].Response.Body != `{"errcode":0,"errmsg":"ok"}` {
				t.Errorf("%d: answers %+v", c.id, d.Attempts)
			}
			if d.Event.Title != "Task 7 was trashed" || d.Event.Text != "by Ann" || d.Event.Language != "en" {
				t.Errorf("%d: event %+v", c.id, d.Event)
			}
			b, _ := json.Marshal(d)
			answers = append(answers, string(b))
		}
		var kept int
		if err := db.NewRaw("SELECT COUNT(*) FROM deskkit_outbox_bodies").Scan(ctx, &kept); err != nil || kept != 2 {
			t.Errorf("bodies kept: %d, want one per robot (%v)", kept, err)
		}
		wantNoLeak(t, "answers", strings.Join(answers, "\n"), append(signs, "d1ngt0ken", "w3c0mkey", secret)...)
		wantNoLeak(t, "stored", storedTexts(t, db), append(signs, "d1ngt0ken", "w3c0mkey", secret)...)
		var exchanges []string
		if err := db.NewRaw("SELECT COALESCE(exchange, '') FROM deskkit_outbox_attempts").Scan(ctx, &exchanges); err != nil {
			t.Fatal(err)
		}
		wantNoLeak(t, "exchanges", strings.Join(exchanges, "\n"), append(signs, "d1ngt0ken", "w3c0mkey", secret)...)

		// Past the log's retention, the bodies go with their events.
		f.clock.Advance(channel.DefaultLogRetention + time.Hour)
		if err := channel.Housekeep(ctx, f.r); err != nil {
			t.Fatal(err)
		}
		if err := db.NewRaw("SELECT COUNT(*) FROM deskkit_outbox_bodies").Scan(ctx, &kept); err != nil || kept != 0 {
			t.Errorf("bodies kept after the retention: %d (%v)", kept, err)
		}
	})
}
