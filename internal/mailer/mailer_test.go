package mailer

import (
	"context"
	"errors"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/internal/smtptest"
)

func newMailer(t *testing.T, cfg Config) *Mailer {
	t.Helper()
	if cfg.From == "" {
		cfg.From = "Deskkit <noreply@deskkit.test>"
	}
	if cfg.HelloName == "" {
		cfg.HelloName = "client.deskkit.test"
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// parsed is a received message, decoded, with the header fields the
// tests look at.
type parsed struct {
	From, To, Subject string
	Header            map[string]string // the extra fields asked for
	MediaType         string
	Parts             []smtptest.Part
}

// parse decodes m as a mail reader would, keeping the header fields named
// in extra.
func parse(t *testing.T, m smtptest.Message, extra ...string) parsed {
	t.Helper()
	p, err := m.Parse()
	if err != nil {
		t.Fatalf("%v\n%s", err, m.Data)
	}
	out := parsed{From: p.Header.Get("From"), To: p.Header.Get("To"), Subject: p.Subject, MediaType: p.MediaType, Parts: p.Parts}
	for _, name := range extra {
		if out.Header == nil {
			out.Header = map[string]string{}
		}
		out.Header[name] = p.Header.Get(name)
	}
	return out
}

// received returns the one message srv accepted.
func received(t *testing.T, srv *smtptest.Server) smtptest.Message {
	t.Helper()
	got := srv.Messages()
	if len(got) != 1 {
		t.Fatalf("server received %d messages, want 1", len(got))
	}
	return got[0]
}

func TestMailerSendPlain(t *testing.T) {
	srv := smtptest.Start(t)
	m := newMailer(t, Config{Addr: srv.Addr, TLS: TLSNone})

	err := m.Send(context.Background(), Message{
		To:      []string{"ann@example.com"},
		Subject: "Your code",
		Text:    "Your code is 123456.\nIt expires in 10 minutes.",
		Headers: map[string]string{"Auto-Submitted": "auto-generated"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := received(t, srv)
	envelope := got
	envelope.Data = nil
	wantEnvelope := smtptest.Message{Helo: "client.deskkit.test", TLS: false, From: "noreply@deskkit.test", To: []string{"ann@example.com"}}
	if diff := cmp.Diff(wantEnvelope, envelope); diff != "" {
		t.Errorf("envelope (-want +got):\n%s", diff)
	}
	want := parsed{
		From:      `"Deskkit" <noreply@deskkit.test>`,
		To:        "<ann@example.com>",
		Subject:   "Your code",
		Header:    map[string]string{"Auto-Submitted": "auto-generated"},
		MediaType: "text/plain",
		Parts:     []smtptest.Part{{ContentType: "text/plain; charset=UTF-8", Body: "Your code is 123456.\nIt expires in 10 minutes."}},
	}
	if diff := cmp.Diff(want, parse(t, got, "Auto-Submitted")); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestMailerSendMultipart(t *testing.T) {
	srv := smtptest.Start(t)
	m := newMailer(t, Config{Addr: srv.Addr, TLS: TLSNone, From: "Bestätigung <noreply@deskkit.test>"})

	err := m.Send(context.Background(), Message{
		To:      []string{"ann@example.com", "bob@example.com"},
		Subject: "Bestätigung 验证码",
		Text:    "Ihr Code: 654321 — 验证码",
		HTML:    "<p>Ihr Code: <b>654321</b> — 验证码</p>",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := received(t, srv)
	if diff := cmp.Diff([]string{"ann@example.com", "bob@example.com"}, got.To); diff != "" {
		t.Errorf("RCPT TO (-want +got):\n%s", diff)
	}
	p := parse(t, got)
	from, err := mail.ParseAddress(p.From)
	if err != nil {
		t.Fatalf("From %q: %v", p.From, err)
	}
	if diff := cmp.Diff(&mail.Address{Name: "Bestätigung", Address: "noreply@deskkit.test"}, from); diff != "" {
		t.Errorf("From (-want +got):\n%s", diff)
	}
	p.From = ""
	want := parsed{
		To:        "<ann@example.com>, <bob@example.com>",
		Subject:   "Bestätigung 验证码",
		MediaType: "multipart/alternative",
		Parts: []smtptest.Part{
			{ContentType: "text/plain; charset=UTF-8", Body: "Ihr Code: 654321 — 验证码"},
			{ContentType: "text/html; charset=UTF-8", Body: "<p>Ihr Code: <b>654321</b> — 验证码</p>"},
		},
	}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestMailerTLS(t *testing.T) {
	serverTLS, clientTLS := smtptest.CA(t)
	users := map[string]string{"ann": "s3cret"}
	tests := []struct {
		name       string
		server     smtptest.Config
		rejectRcpt bool
		cfg        Config
		wantErr    string // "" for success
		wantUser   string
	}{
		{
			name:   "starttls",
			server: smtptest.Config{StartTLS: serverTLS},
			cfg:    Config{TLS: TLSStartTLS, TLSConfig: clientTLS},
		},
		{
			name:   "starttls is the default",
			server: smtptest.Config{StartTLS: serverTLS},
			cfg:    Config{TLSConfig: clientTLS},
		},
		{
			name:   "implicit TLS",
			server: smtptest.Config{ImplicitTLS: serverTLS},
			cfg:    Config{TLS: TLSImplicit, TLSConfig: clientTLS},
		},
		{
			name:     "starttls with AUTH PLAIN",
			server:   smtptest.Config{StartTLS: serverTLS, Users: users},
			cfg:      Config{TLS: TLSStartTLS, TLSConfig: clientTLS, Username: "ann", Password: "s3cret"},
			wantUser: "ann",
		},
		{
			name:     "implicit TLS with AUTH PLAIN",
			server:   smtptest.Config{ImplicitTLS: serverTLS, Users: users},
			cfg:      Config{TLS: TLSImplicit, TLSConfig: clientTLS, Username: "ann", Password: "s3cret"},
			wantUser: "ann",
		},
		{
			name:     "AUTH PLAIN without TLS on loopback",
			server:   smtptest.Config{Users: users, InsecureAuth: true},
			cfg:      Config{TLS: TLSNone, Username: "ann", Password: "s3cret"},
			wantUser: "ann",
		},
		{
			name:    "refused credentials",
			server:  smtptest.Config{StartTLS: serverTLS, Users: users},
			cfg:     Config{TLS: TLSStartTLS, TLSConfig: clientTLS, Username: "ann", Password: "wrong"},
			wantErr: "SMTP AUTH failed",
		},
		{
			name:    "starttls against a server without STARTTLS",
			server:  smtptest.Config{},
			cfg:     Config{TLS: TLSStartTLS, TLSConfig: clientTLS},
			wantErr: "does not support STARTTLS",
		},
		{
			name:    "starttls with an untrusted certificate",
			server:  smtptest.Config{StartTLS: serverTLS},
			cfg:     Config{TLS: TLSStartTLS},
			wantErr: "certificate",
		},
		{
			name:    "implicit TLS with an untrusted certificate",
			server:  smtptest.Config{ImplicitTLS: serverTLS},
			cfg:     Config{TLS: TLSImplicit},
			wantErr: "certificate",
		},
		{
			name:       "recipient refused",
			rejectRcpt: true,
			cfg:        Config{TLS: TLSNone},
			wantErr:    "550",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := smtptest.StartConfig(t, &tt.server)
			if tt.rejectRcpt {
				srv.Reject(550, "No such user")
			}
			tt.cfg.Addr = srv.Addr
			m := newMailer(t, tt.cfg)
			err := m.Send(context.Background(), Message{To: []string{"ann@example.com"}, Subject: "Hi", Text: "code 111222"})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Send error = %v, want one containing %q", err, tt.wantErr)
				}
				if got := srv.Messages(); len(got) != 0 {
					t.Errorf("server received %d messages, want none", len(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := received(t, srv)
			wantTLS := tt.cfg.TLS != TLSNone
			if got.TLS != wantTLS || got.User != tt.wantUser {
				t.Errorf("server saw TLS %v, user %q; want TLS %v, user %q", got.TLS, got.User, wantTLS, tt.wantUser)
			}
			want := []smtptest.Part{{ContentType: "text/plain; charset=UTF-8", Body: "code 111222"}}
			if diff := cmp.Diff(want, parse(t, got).Parts); diff != "" {
				t.Errorf("parts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMailerContext(t *testing.T) {
	msg := Message{To: []string{"ann@example.com"}, Text: "hi"}
	// silent returns a mailer whose server never greets it. Its Timeout is
	// long: only ctx may end these sends.
	silent := func(t *testing.T) (*Mailer, <-chan struct{}) {
		addr, accepted := smtptest.StartSilent(t)
		return newMailer(t, Config{Addr: addr, TLS: TLSNone, Timeout: time.Minute}), accepted
	}

	t.Run("deadline", func(t *testing.T) {
		m, _ := silent(t)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := m.Send(ctx, msg)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Send error = %v, want context.DeadlineExceeded", err)
		}
		if elapsed := time.Since(start); elapsed > 20*time.Second {
			t.Errorf("Send took %v after a 50ms deadline", elapsed)
		}
	})
	t.Run("cancelled while waiting for the greeting", func(t *testing.T) {
		// A listener of its own: the connection announced is this Send's.
		m, accepted := silent(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-accepted
			cancel()
		}()
		err := m.Send(ctx, msg)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Send error = %v, want context.Canceled", err)
		}
	})
	t.Run("cancelled before", func(t *testing.T) {
		m, _ := silent(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := m.Send(ctx, msg); !errors.Is(err, context.Canceled) {
			t.Fatalf("Send error = %v, want context.Canceled", err)
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		addr, _ := smtptest.StartSilent(t)
		m := newMailer(t, Config{Addr: addr, TLS: TLSNone, Timeout: 50 * time.Millisecond})
		err := m.Send(context.Background(), msg)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "within 50ms") {
			t.Fatalf("Send error = %v, want the Timeout's", err)
		}
	})
}

func TestMailerNewValidates(t *testing.T) {
	valid := Config{Addr: "mail.example.com:587", From: "noreply@example.com"}
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string // "" for valid
	}{
		{"valid", func(*Config) {}, ""},
		{"password over starttls", func(c *Config) { c.Username, c.Password = "ann", "pw" }, ""},
		{"password over implicit TLS", func(c *Config) { c.TLS, c.Username, c.Password = TLSImplicit, "ann", "pw" }, ""},
		{"password in clear to loopback", func(c *Config) { c.Addr, c.TLS, c.Username = "127.0.0.1:25", TLSNone, "ann" }, ""},
		{"password in clear to localhost", func(c *Config) { c.Addr, c.TLS, c.Username = "localhost:25", TLSNone, "ann" }, ""},
		{"password in clear to ::1", func(c *Config) { c.Addr, c.TLS, c.Username = "[::1]:25", TLSNone, "ann" }, ""},
		{"password in clear to a remote host", func(c *Config) { c.Addr, c.TLS, c.Username = "mail.example.com:25", TLSNone, "ann" }, "refusing to send a password in clear text"},
		{"no Addr", func(c *Config) { c.Addr = "" }, "Addr"},
		{"Addr without port", func(c *Config) { c.Addr = "mail.example.com" }, "Addr"},
		{"Addr with a bad port", func(c *Config) { c.Addr = "mail.example.com:0" }, "port"},
		{"no From", func(c *Config) { c.From = "" }, "From is required"},
		{"bad From", func(c *Config) { c.From = "not an address" }, "From"},
		{"bad TLS", func(c *Config) { c.TLS = "ssl" }, "TLS"},
		{"negative Timeout", func(c *Config) { c.Timeout = -time.Second }, "Timeout"},
		{"Password without Username", func(c *Config) { c.Password = "pw" }, "Username"},
		{"bad HelloName", func(c *Config) { c.HelloName = "a\r\nRSET" }, "HelloName"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			tt.change(&cfg)
			_, err := New(cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestMailerSendValidatesMessage(t *testing.T) {
	// Nothing listens here: each message must fail before any dial.
	m := newMailer(t, Config{Addr: "127.0.0.1:1", TLS: TLSNone})
	tests := []struct {
		name    string
		msg     Message
		wantErr string
	}{
		{"no recipient", Message{Text: "x"}, "no recipient"},
		{"bad recipient", Message{To: []string{"nobody"}}, `recipient "nobody"`},
		{"bad header name", Message{To: []string{"a@example.com"}, Headers: map[string]string{"X-A: b\r\nBcc": "c"}}, "not a header field name"},
		{"reserved header", Message{To: []string{"a@example.com"}, Headers: map[string]string{"bcc": "eve@example.com"}}, "written by the mailer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := m.Send(context.Background(), tt.msg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Send error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestMailerParseTLSMode(t *testing.T) {
	tests := []struct {
		in      string
		want    TLSMode
		wantErr bool
	}{
		{"none", TLSNone, false},
		{"starttls", TLSStartTLS, false},
		{"tls", TLSImplicit, false},
		{" STARTTLS ", TLSStartTLS, false},
		{"", "", true},
		{"ssl", "", true},
	}
	for _, tt := range tests {
		got, err := ParseTLSMode(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseTLSMode(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
